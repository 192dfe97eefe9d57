//! Meshes every surface chunk of a 256×128×256 world from dense padded boxes in a loop, for
//! `perf record`: the mesher's hot path without the store.

#![allow(clippy::unwrap_used)] // a profiling driver: a failed unwrap is a broken setup

use voxterra_core::nalgebra::Point3;
use voxterra_core::{DenseVoxels, MaterialTable, Region, VoxelRead};
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh, RenderMesh, ShapeMode};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::{WorldParams, generate};

fn main() {
    let sharp = std::env::args().any(|a| a == "--sharp");
    let params = WorldParams::new(1, [256, 128, 256]);
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {}).unwrap();
    let table = MaterialTable::default();
    let mode = if sharp { ShapeMode::Sharp } else { ShapeMode::Smooth };
    let mesher = Mesher::new(&table).with_shape_mode(mode);
    let mut chunks = Vec::new();
    for y in 0..4 {
        for z in 0..8 {
            for x in 0..8 {
                let r = Region::chunk(Point3::new(x, y, z), 5).unwrap();
                let p = Mesher::padded_region(&r).unwrap();
                if store.uniform(&p).is_none() {
                    let mut d = DenseVoxels::new(p, 1 << 20).unwrap();
                    store.read_box(&p, d.as_mut_slice()).unwrap();
                    chunks.push((r, d));
                }
            }
        }
    }
    let physics = std::env::args().any(|a| a == "--physics");
    let (mut ws, mut out, mut phys) = (MeshWorkspace::new(), RenderMesh::default(), PhysicsMesh::default());
    let t = std::time::Instant::now();
    let mut tris = 0;
    for _ in 0..40 {
        for (r, d) in &chunks {
            tris += if physics {
                mesher.mesh(d, r, &mut ws, &mut phys).unwrap().triangles
            } else {
                mesher.mesh(d, r, &mut ws, &mut out).unwrap().triangles
            };
        }
    }
    let per = t.elapsed().as_secs_f64() * 1e6 / (40 * chunks.len()) as f64;
    println!("{} chunks, {tris} triangles, {per:.1} µs a chunk", chunks.len());
}
