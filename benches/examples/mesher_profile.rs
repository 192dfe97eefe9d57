//! Meshes every surface chunk of a 256×128×256 world from dense padded boxes in a loop, for
//! `perf record`: the mesher's hot path without the store.

#![allow(clippy::unwrap_used)] // a profiling driver: a failed unwrap is a broken setup

use voxterra_core::{DenseVoxels, MaterialTable, StoreChunkKey, VoxelRead};
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh, RenderMesh, ShapeMode};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::{GenParams, generate};

fn main() {
    let sharp = std::env::args().any(|a| a == "--sharp");
    let params = GenParams::new(1, [256, 128, 256]);
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {}).unwrap();
    let table = MaterialTable::default();
    let mode = if sharp { ShapeMode::Sharp } else { ShapeMode::Smooth };
    let mesher = Mesher::new(&table).with_shape_mode(mode);
    let mut chunks = Vec::new();
    for y in 0..4 {
        for z in 0..8 {
            for x in 0..8 {
                let r = StoreChunkKey::new(x, y, z).region().unwrap();
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
    // A hash of every output bit of one pass: a rewrite of the hot path must keep it.
    let mut sum = 0xcbf2_9ce4_8422_2325u64;
    let mut mix = |v: u64| sum = (sum ^ v).wrapping_mul(0x0100_0000_01b3);
    for (r, d) in &chunks {
        mesher.mesh(d, r, &mut ws, &mut out).unwrap();
        for ((p, n), m) in out.positions.iter().zip(&out.normals).zip(&out.materials) {
            for v in [p.x, p.y, p.z, n.x, n.y, n.z] {
                mix(v.to_bits() as u64);
            }
            mix(m.id() as u64);
        }
        for t in &out.indices {
            mix((t[0] as u64) << 40 | (t[1] as u64) << 20 | t[2] as u64);
        }
    }
    println!("output hash {sum:016x}");
    // The fastest of 5 rounds of 8 passes: the machines are noisy, and the minimum is the steadiest.
    let mut tris = 0;
    let mut best = f64::MAX;
    // ROUNDS=1 PASSES=1 for valgrind.
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (rounds, passes) = (env("ROUNDS", 5), env("PASSES", 8));
    for _ in 0..rounds {
        let t = std::time::Instant::now();
        for _ in 0..passes {
            for (r, d) in &chunks {
                tris += if physics {
                    mesher.mesh(d, r, &mut ws, &mut phys).unwrap().triangles
                } else {
                    mesher.mesh(d, r, &mut ws, &mut out).unwrap().triangles
                };
            }
        }
        best = best.min(t.elapsed().as_secs_f64() * 1e6 / (passes * chunks.len()) as f64);
    }
    let per = best;
    println!("{} chunks, {tris} triangles, {per:.1} µs a chunk", chunks.len());
}
