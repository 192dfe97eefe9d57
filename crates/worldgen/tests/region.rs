//! Generating one box equals generating the world and reading that box.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Region, Voxel, VoxelRead};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::{GenParams, generate, generate_region};

fn world(origin: [i32; 3]) -> (GenParams, VoxelStore) {
    let mut params = GenParams::new(11, [80, 72, 70]);
    params.origin = Point3::from(origin);
    let mut store = VoxelStore::new();
    generate(&params, &mut store, |_, _| {}).unwrap();
    (params, store)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn a_box_is_what_the_world_holds_there(
        origin in prop::sample::select(vec![[0, 0, 0], [-45, 7, 1000], [33, -64, -31]]),
        min in proptest::array::uniform3(-20i32..90),
        size in proptest::array::uniform3(1u32..48),
    ) {
        let (params, store) = world(origin);
        let o = params.origin;
        let region = Region::from_min_size(Point3::new(o.x + min[0], o.y + min[1], o.z + min[2]), size).unwrap();
        let mut expected = vec![Voxel::AIR; region.len().unwrap()];
        store.read_box(&region, &mut expected).unwrap();
        let mut got = vec![Voxel::full(voxterra_core::materials::ROCK); region.len().unwrap()];
        generate_region(&params, &region, &mut got).unwrap();
        prop_assert!(got == expected, "region {region:?} differs");
    }
}

#[test]
fn store_chunks_of_a_column_match() {
    let (params, store) = world([0, 0, 0]);
    for key in store.chunk_keys() {
        let region = key.region().unwrap();
        let mut expected = vec![Voxel::AIR; region.len().unwrap()];
        store.read_box(&region, &mut expected).unwrap();
        let mut got = vec![Voxel::AIR; expected.len()];
        generate_region(&params, &region, &mut got).unwrap();
        assert!(got == expected, "chunk {key:?}");
    }
}
