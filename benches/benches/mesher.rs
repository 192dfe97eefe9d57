//! Criterion benches of the mesher: a 32³ terrain chunk in smooth and sharp mode, and an 8³ physics
//! chunk.

#![allow(clippy::unwrap_used)] // bench setup: a failed unwrap is a broken bench
#![allow(missing_docs)] // criterion_main! generates an undocumented main

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{MaterialTable, Region};
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh, RenderMesh, ShapeMode};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::{WorldParams, generate};

fn mesher(c: &mut Criterion) {
    let params = WorldParams::new(1, [64, 128, 64]);
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {}).unwrap();
    let table = MaterialTable::default();
    // The chunk column's surface chunk: the one with the most triangles.
    let smooth = Mesher::new(&table).with_shape_mode(ShapeMode::Smooth);
    let sharp = Mesher::new(&table).with_shape_mode(ShapeMode::Sharp);
    let (mut ws, mut out) = (MeshWorkspace::new(), RenderMesh::default());
    let chunk = (0..4)
        .map(|y| Region::chunk(Point3::new(0, y, 0), 5).unwrap())
        .max_by_key(|r| smooth.mesh(&store, r, &mut ws, &mut out).unwrap().triangles)
        .unwrap();
    let tris = smooth.mesh(&store, &chunk, &mut ws, &mut out).unwrap().triangles;
    assert!(tris > 0);
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
        .map(|y| Region::chunk(Point3::new(0, y, 0), 3).unwrap())
        .max_by_key(|r| smooth.mesh(&store, r, &mut ws, &mut phys).unwrap().triangles)
        .unwrap();
    let tris = smooth.mesh(&store, &small, &mut ws, &mut phys).unwrap().triangles;
    g.throughput(Throughput::Elements(tris as u64));
    g.bench_function("8³ physics chunk", |b| {
        b.iter(|| smooth.mesh(&store, &small, &mut ws, &mut phys).unwrap())
    });
    g.finish();
}

criterion_group!(benches, mesher);
criterion_main!(benches);
