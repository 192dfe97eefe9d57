//! Criterion benches of the voxel store's read and write paths (detail behind `compare store`).

#![allow(clippy::unwrap_used)] // bench setup: a failed unwrap is a broken bench
#![allow(missing_docs)] // criterion_main! generates an undocumented main

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use voxterra_benches::world::{Rng, bench_world};
use voxterra_core::nalgebra::Vector3;
use voxterra_core::{Region, Voxel, VoxelRead};

fn store(c: &mut Criterion) {
    let w = bench_world(true);
    let world = w.params.region().unwrap();
    let [sx, sy, sz] = world.size();
    let mut rng = Rng::new(3);
    let points: Vec<_> =
        (0..4096).map(|_| world.min() + Vector3::new(rng.coord(sx), rng.coord(sy), rng.coord(sz))).collect();
    // Check the answer before timing.
    let expect: u64 = points.iter().map(|p| w.dense.voxel(*p).to_bits() as u64).sum();
    assert_eq!(points.iter().map(|p| w.store.get(*p).to_bits() as u64).sum::<u64>(), expect);

    let mut g = c.benchmark_group("store");
    g.throughput(Throughput::Elements(points.len() as u64));
    g.bench_function("get 4096 random", |b| {
        b.iter(|| points.iter().map(|p| w.store.get(*p).to_bits() as u64).sum::<u64>())
    });

    let region = Region::from_min_size(world.min(), [128, 128, 128]).unwrap();
    let sum_rows = |r: &dyn VoxelRead| {
        let mut s = 0u64;
        r.visit_rows(&region, &mut |_, row| s += row.iter().map(|v| v.to_bits() as u64).sum::<u64>());
        s
    };
    assert_eq!(
        w.store.rows(&region).map(|(_, r)| r.iter().map(|v| v.to_bits() as u64).sum::<u64>()).sum::<u64>(),
        sum_rows(&w.dense)
    );
    g.throughput(Throughput::Elements(region.volume() as u64));
    g.bench_function("rows 128^3", |b| {
        b.iter(|| {
            w.store.rows(&region).map(|(_, r)| r.iter().map(|v| v.to_bits() as u64).sum::<u64>()).sum::<u64>()
        })
    });
    let boxr = Region::from_min_size(world.min() + Vector3::new(17, 9, 5), [40, 40, 40]).unwrap();
    let mut buf = vec![Voxel::AIR; 64_000];
    let mut want = vec![Voxel::AIR; 64_000];
    w.store.read_box(&boxr, &mut buf).unwrap();
    w.dense.read_box(&boxr, &mut want).unwrap();
    assert_eq!(buf, want);
    g.throughput(Throughput::Elements(64_000));
    g.bench_function("read_box 40^3", |b| b.iter(|| w.store.read_box(black_box(&boxr), &mut buf).unwrap()));

    let mut store = w.store.clone();
    let content = {
        let mut v = vec![Voxel::AIR; 32 * 32 * 32];
        store
            .read_box(
                &Region::from_min_size(world.min() + Vector3::new(64, 20, 64), [32, 32, 32]).unwrap(),
                &mut v,
            )
            .unwrap();
        v
    };
    let dest = Region::from_min_size(world.min() + Vector3::new(5, 30, 7), [32, 32, 32]).unwrap();
    let air = vec![Voxel::AIR; content.len()];
    let mut back = vec![Voxel::AIR; content.len()];
    store.write_box(&dest, &content).unwrap();
    store.read_box(&dest, &mut back).unwrap();
    assert_eq!(back, content);
    store.write_box(&dest, &air).unwrap();
    store.read_box(&dest, &mut back).unwrap();
    assert_eq!(back, air);
    g.throughput(Throughput::Elements(2 * 32 * 32 * 32));
    g.bench_function("write_box 32^3 (content, then air)", |b| {
        b.iter(|| {
            store.write_box(&dest, &content).unwrap();
            store.write_box(&dest, &air).unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, store);
criterion_main!(benches);
