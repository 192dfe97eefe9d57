//! Worldgen gives identical voxels whatever the thread count, and makes the features it promises.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use voxterra_core::{Region, Voxel, VoxelRead, materials as m};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::{GenError, GenParams, generate};

fn world_with_threads(params: &GenParams, threads: usize) -> Vec<Voxel> {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
    let mut store = VoxelStore::new();
    pool.install(|| generate(params, &mut store, |_, _| {})).unwrap();
    store.validate().unwrap();
    let region = params.region().unwrap();
    let mut out = vec![Voxel::AIR; region.len().unwrap()];
    store.read_box(&region, &mut out).unwrap();
    out
}

#[test]
fn same_voxels_with_one_and_two_threads() {
    // Not chunk-aligned, off the origin, several tiles: every seam of the tiling is exercised.
    let mut params = GenParams::new(42, [150, 80, 110]);
    params.origin = voxterra_core::VoxelPos::new(-77, -20, 13);
    let one = world_with_threads(&params, 1);
    let two = world_with_threads(&params, 2);
    assert!(one == two, "worlds differ between 1 and 2 threads");
    assert!(one.iter().any(|v| !v.is_air()));
}

#[test]
fn the_default_content_has_its_features() {
    let params = GenParams::new(1, [384, 128, 384]);
    let mut store = VoxelStore::new();
    let stats = generate(&params, &mut store, |_, _| {}).unwrap();
    let mut counts = [0u64; 64];
    let mut fractional = 0u64;
    let mut caves = 0u64;
    let region = params.region().unwrap();
    for (p, row) in store.rows(&region) {
        for (i, v) in row.iter().enumerate() {
            counts[v.material().id() as usize] += 1;
            fractional += (!v.is_air() && !v.has_default_occupancy()) as u64;
            // Air under solid rock in the same column: a cave.
            if v.is_air()
                && p.y > 4
                && store.get(voxterra_core::VoxelPos::new(p.x + i as i32, p.y + 8, p.z))
                    == Voxel::full(m::ROCK)
            {
                caves += 1;
            }
        }
    }
    assert_eq!(counts.iter().sum::<u64>(), stats.voxels);
    assert_eq!(stats.voxels - counts[0], stats.non_empty_voxels);
    for (name, mat) in [
        ("grass", m::GRASS),
        ("dirt", m::DIRT),
        ("rock", m::ROCK),
        ("sand", m::SAND),
        ("water", m::WATER),
        ("basalt", m::BASALT),
        ("snow", m::SNOW),
    ] {
        assert!(counts[mat.id() as usize] > 100, "{name}: only {} voxels", counts[mat.id() as usize]);
    }
    assert!(fractional > 10_000, "surfaces are smooth: {fractional} fractional voxels");
    assert!(caves > 1_000, "caves: {caves} voxels");
}

#[test]
fn bad_sizes_are_typed_errors() {
    let mut store = VoxelStore::new();
    assert!(matches!(
        generate(&GenParams::new(1, [0, 10, 10]), &mut store, |_, _| {}),
        Err(GenError::EmptySize(_))
    ));
    assert!(matches!(
        generate(&GenParams::new(1, [1 << 20, 1 << 10, 1 << 20]), &mut store, |_, _| {}),
        Err(GenError::TooLarge { .. })
    ));
    // Few voxels, millions of chunks: refused before any is made.
    assert!(matches!(
        generate(&GenParams::new(1, [99_999_999, 1, 1]), &mut store, |_, _| {}),
        Err(GenError::TooManyChunks { chunks: 3_125_000, .. })
    ));
    let mut p = GenParams::new(1, [64, 64, 64]);
    p.origin = voxterra_core::VoxelPos::new(i32::MAX - 10, 0, 0);
    assert!(matches!(generate(&p, &mut store, |_, _| {}), Err(GenError::Placement { .. })));
    // A destination that refuses writes: the error comes back typed.
    let mut small =
        voxterra_core::DenseVoxels::new(Region::from_min_size(Default::default(), [8, 8, 8]).unwrap(), 1000)
            .unwrap();
    assert!(matches!(
        generate(&GenParams::new(1, [64, 64, 64]), &mut small, |_, _| {}),
        Err(GenError::Write(_))
    ));
    assert_eq!(store.chunk_count(), 0);
}

/// The thinnest and narrowest worlds are made, never a panic: one voxel tall is one layer of
/// ground; one voxel wide or deep is a slice of the usual terrain.
#[test]
fn tiny_and_thin_sizes_make_worlds() {
    for size in [[1, 1, 1], [1, 2, 1], [3, 1, 200], [200, 1, 3], [1, 64, 1], [2, 3, 2], [40_000, 1, 1]] {
        let mut store = VoxelStore::new();
        generate(&GenParams::new(7, size), &mut store, |_, _| {}).unwrap();
        let region = GenParams::new(7, size).region().unwrap();
        let mut v = vec![voxterra_core::Voxel::AIR; region.len().unwrap()];
        store.read_box(&region, &mut v).unwrap();
        assert!(v.iter().any(|v| !v.is_air()), "{size:?} has ground");
        if size[1] == 1 {
            assert!(v.iter().all(|v| !v.is_air()), "{size:?}: one layer of ground");
        }
    }
}
