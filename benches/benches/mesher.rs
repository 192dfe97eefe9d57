//! Criterion benches of the mesher: a 32³ terrain chunk in smooth and sharp mode, and an 8³ physics
//! chunk.

#![allow(clippy::unwrap_used)] // bench setup: a failed unwrap is a broken bench
#![allow(missing_docs)] // criterion_main! generates an undocumented main

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use voxterra_core::{DenseVoxels, MaterialTable, PhysicsChunkKey, StoreChunkKey, VoxelRead};
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh, RenderMesh, ShapeMode};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::{GenParams, generate};

fn mesher(c: &mut Criterion) {
    let params = GenParams::new(1, [64, 128, 64]);
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {}).unwrap();
    let table = MaterialTable::default();
    // The chunk column's surface chunk: the one with the most triangles.
    let smooth = Mesher::new(&table).with_shape_mode(ShapeMode::Smooth);
    let sharp = Mesher::new(&table).with_shape_mode(ShapeMode::Sharp);
    let (mut ws, mut out) = (MeshWorkspace::new(), RenderMesh::default());
    let chunk = (0..4)
        .map(|y| StoreChunkKey::new(0, y, 0).region().unwrap())
        .max_by_key(|r| smooth.mesh(&store, r, &mut ws, &mut out).unwrap().triangles)
        .unwrap();
    let tris = smooth.mesh(&store, &chunk, &mut ws, &mut out).unwrap().triangles;
    assert!(tris > 0);
    // Check the answers once: the store's path gives the mesh of a dense copy of the padded box
    // (the reference reader), and sharp mode keeps smooth mode's triangles (only vertices move).
    let padded = Mesher::padded_region(&chunk).unwrap();
    let mut dense = DenseVoxels::new(padded, 1 << 20).unwrap();
    store.read_box(&padded, dense.as_mut_slice()).unwrap();
    let mut from_dense = RenderMesh::default();
    smooth.mesh(&dense, &chunk, &mut ws, &mut from_dense).unwrap();
    assert_eq!(from_dense, out);
    let mut sharp_out = RenderMesh::default();
    assert_eq!(sharp.mesh(&store, &chunk, &mut ws, &mut sharp_out).unwrap().triangles, tris);
    let mut g = c.benchmark_group("mesher");
    g.throughput(Throughput::Elements(tris as u64));
    g.bench_function("32³ chunk, smooth", |b| {
        b.iter(|| smooth.mesh(&store, &chunk, &mut ws, &mut out).unwrap())
    });
    g.bench_function("32³ chunk, sharp", |b| {
        b.iter(|| sharp.mesh(&store, &chunk, &mut ws, &mut out).unwrap())
    });
    let mut phys = PhysicsMesh::default();
    let small = (0..16)
        .map(|y| PhysicsChunkKey::new(0, y, 0).region().unwrap())
        .max_by_key(|r| smooth.mesh(&store, r, &mut ws, &mut phys).unwrap().triangles)
        .unwrap();
    let tris = smooth.mesh(&store, &small, &mut ws, &mut phys).unwrap().triangles;
    // The physics mesh has the render mesh's triangles.
    assert_eq!(smooth.mesh(&store, &small, &mut ws, &mut out).unwrap().triangles, tris);
    assert!(tris > 0);
    g.throughput(Throughput::Elements(tris as u64));
    g.bench_function("8³ physics chunk", |b| {
        b.iter(|| smooth.mesh(&store, &small, &mut ws, &mut phys).unwrap())
    });
    g.finish();
}

criterion_group!(benches, mesher);
criterion_main!(benches);
