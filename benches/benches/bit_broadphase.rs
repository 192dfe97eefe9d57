//! Criterion benches of the bit broadphase: queries and rebuilds.

#![allow(clippy::unwrap_used)] // bench setup: a failed unwrap is a broken bench
#![allow(missing_docs)] // criterion_main! generates an undocumented main

use criterion::{Criterion, criterion_group, criterion_main};
use voxterra_benches::world::bench_world;
use voxterra_bit_broadphase::{BitBroadphase, reference};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, MaterialTable, PhysicsChunkKey, Region};

fn bit_broadphase(c: &mut Criterion) {
    let w = bench_world(true);
    let world = w.params.region().unwrap();
    let mut bp = BitBroadphase::new(&MaterialTable::default(), 1.0).unwrap();
    bp.rebuild_region(&w.store, &world);
    let probe = Aabb::new(Point3::new(100.25, 40.25, 100.25), Point3::new(101.25, 42.25, 101.25));
    // Check both timed answers once: the query against the brute-force reference, and the
    // rebuild's chunk count against the chunks the edit's one-voxel expansion touches.
    let mut got = vec![];
    bp.query(&probe, |k, t| got.push((k, t)));
    got.sort_by_key(|(k, _)| *k);
    assert!(!got.is_empty());
    assert_eq!(got, reference::query(&w.store, &MaterialTable::default(), 1.0, &probe));
    let mut g = c.benchmark_group("bit_broadphase");
    g.bench_function("character query", |b| {
        b.iter(|| {
            let mut k = 0;
            bp.query(&probe, |_, t| k += t.solid as u32);
            k
        })
    });
    let edit = Region::from_min_size(Point3::new(90, 30, 90), [8, 8, 8]).unwrap();
    let touched = PhysicsChunkKey::range(&edit.expanded(1)).unwrap().count() as usize;
    let before = bp.chunks();
    assert_eq!(bp.rebuild_region(&w.store, &edit), touched);
    assert_eq!(bp.chunks(), before, "nothing changed, so the rebuild changes nothing");
    g.bench_function("rebuild after an 8^3 edit", |b| b.iter(|| bp.rebuild_region(&w.store, &edit)));
    g.finish();
}

criterion_group!(benches, bit_broadphase);
criterion_main!(benches);
