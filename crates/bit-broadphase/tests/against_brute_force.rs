//! The bit broadphase against the brute-force reference on random worlds and boxes.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use proptest::prelude::*;
use std::collections::BTreeSet;
use voxterra_bit_broadphase::{BitBroadphase, BodyContacts, ContactEvent, ContactKind, Touch, reference};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{
    Aabb, DenseVoxels, MaterialTable, PhysicsChunkKey, Region, Voxel, VoxelWrite, materials as m,
};

/// A random world in [-24, 24)³: a rock slab and a water pool thick enough for some chunks' whole
/// 10³ neighborhood (tagged chunks), random blobs of air, water and partly-full sand, air above.
fn world(seed: u64) -> DenseVoxels {
    let region = Region::from_min_size(Point3::new(-24, -24, -24), [48, 48, 48]).unwrap();
    let mut d = DenseVoxels::new(region, 1 << 20).unwrap();
    d.fill(&Region::from_min_size(Point3::new(-24, -24, -24), [48, 18, 48]).unwrap(), Voxel::full(m::ROCK))
        .unwrap();
    d.fill(&Region::from_min_size(Point3::new(0, -10, -20), [20, 12, 20]).unwrap(), Voxel::full(m::WATER))
        .unwrap();
    let mut s = seed;
    for _ in 0..30 {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let c = [(s >> 10) % 44, (s >> 20) % 44, (s >> 30) % 44].map(|v| v as i32 - 22);
        let r = (s >> 40) % 4;
        let v = match s >> 50 & 3 {
            0 => Voxel::AIR,
            1 => Voxel::full(m::WATER),
            _ => Voxel::new(m::SAND, (s >> 56) as u8),
        };
        let lo = c.map(|x| (x - r as i32).max(-24));
        let size = [0, 1, 2].map(|i| ((c[i] + r as i32 + 1).min(24) - lo[i]) as u32);
        d.fill(&Region::from_min_size(lo.into(), size).unwrap(), v).unwrap();
    }
    d
}

fn build(d: &DenseVoxels, voxel_size: f32) -> BitBroadphase {
    let mut bp = BitBroadphase::new(&MaterialTable::default(), voxel_size).unwrap();
    bp.rebuild_region(d, &d.region().clone());
    bp
}

fn query(bp: &BitBroadphase, b: &Aabb) -> Vec<(PhysicsChunkKey, Touch)> {
    let mut v = vec![];
    bp.query(b, |k, t| v.push((k, t)));
    v.sort_unstable_by_key(|(k, _)| *k);
    v
}

fn arb_box() -> impl Strategy<Value = Aabb> {
    // Corners on the voxel grid half the time (boundary cases), anywhere otherwise; sizes from zero
    // to larger than the world.
    let coord = prop_oneof![
        (-30i32..30).prop_map(|v| v as f32),
        (-30.0f32..30.0),
        (-30i32..30).prop_map(|v| v as f32 * 0.5)
    ];
    let size = prop_oneof![Just(0.0f32), 0.0f32..3.0, 0.0f32..70.0, (0i32..16).prop_map(|v| v as f32)];
    (proptest::array::uniform3(coord), proptest::array::uniform3(size))
        .prop_map(|(c, s)| Aabb::new(Point3::from(c), Point3::new(c[0] + s[0], c[1] + s[1], c[2] + s[2])))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn queries_match_brute_force(seed: u64, boxes in proptest::collection::vec(arb_box(), 24), vs in prop_oneof![Just(1.0f32), Just(0.5), Just(2.0)]) {
        let d = world(seed);
        let bp = build(&d, vs);
        let table = MaterialTable::default();
        for b in &boxes {
            prop_assert_eq!(query(&bp, b), reference::query(&d, &table, vs, b), "box {:?}", b);
        }
    }

    #[test]
    fn single_chunk_rebuilds_answer_like_region_rebuilds(seed: u64, boxes in proptest::collection::vec(arb_box(), 8)) {
        // Built chunk by chunk, the dense window goes stale and queries take the hash path;
        // `optimize` brings the window back. Both must answer like the reference.
        let d = world(seed);
        let table = MaterialTable::default();
        let mut bp = BitBroadphase::new(&table, 1.0).unwrap();
        for key in PhysicsChunkKey::range(&d.region().expanded(1)).unwrap().iter() {
            bp.rebuild_chunk(&d, key);
        }
        for b in &boxes {
            prop_assert_eq!(query(&bp, b), reference::query(&d, &table, 1.0, b));
        }
        let around = PhysicsChunkKey::range(&d.region().expanded(24)).unwrap();
        let by_hash: Vec<_> = around.iter().map(|k| bp.chunk(k)).collect();
        prop_assert!(by_hash.iter().any(|c| c.is_some()));
        bp.optimize();
        prop_assert!(bp.stats().window_bytes > 0);
        for b in &boxes {
            prop_assert_eq!(query(&bp, b), reference::query(&d, &table, 1.0, b));
        }
        // Chunk lookups through the window answer like the hash map, inside it and out.
        let by_window: Vec<_> = around.iter().map(|k| bp.chunk(k)).collect();
        prop_assert_eq!(by_window, by_hash);
    }

    #[test]
    fn grouped_rebuild_equals_one_by_one(seed: u64, skip in 0usize..5) {
        let d = world(seed);
        let keys: Vec<PhysicsChunkKey> = PhysicsChunkKey::range(&d.region().expanded(1)).unwrap().iter().collect();
        let mut one = BitBroadphase::new(&MaterialTable::default(), 1.0).unwrap();
        let mut grouped = BitBroadphase::new(&MaterialTable::default(), 1.0).unwrap();
        // Some keys left out, so groups of every size occur.
        let some: Vec<PhysicsChunkKey> = keys.iter().copied().enumerate().filter(|(i, _)| skip == 0 || i % 5 != skip).map(|(_, k)| k).collect();
        for &key in &some {
            one.rebuild_chunk(&d, key);
        }
        grouped.rebuild_chunks_here(&d, some);
        prop_assert_eq!(one.chunks(), grouped.chunks());
    }

    #[test]
    fn parallel_rebuild_equals_serial(seed: u64) {
        let d = world(seed);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let parallel = pool.install(|| build(&d, 1.0));
        let mut serial = BitBroadphase::new(&MaterialTable::default(), 1.0).unwrap();
        for key in PhysicsChunkKey::range(&d.region().expanded(1)).unwrap().iter() {
            serial.rebuild_chunk(&d, key);
        }
        prop_assert_eq!(parallel.chunks(), serial.chunks());
    }

    #[test]
    fn edits_rebuild_exactly_what_changed(seed: u64, at in proptest::array::uniform3(-22i32..20), size in proptest::array::uniform3(1u32..6), solid: bool) {
        let mut d = world(seed);
        let mut bp = build(&d, 1.0);
        let edit = Region::from_min_size(at.into(), size).unwrap();
        let v = if solid { Voxel::full(m::BASALT) } else { Voxel::AIR };
        if let Some(dirty) = d.fill(&edit, v).unwrap() {
            bp.rebuild_region(&d, &dirty);
        }
        prop_assert_eq!(bp.chunks(), build(&d, 1.0).chunks());
    }

    #[test]
    fn contacts_follow_the_swept_box(seed: u64, path in proptest::collection::vec(arb_box(), 1..8)) {
        let d = world(seed);
        let bp = build(&d, 1.0);
        let mut body = BodyContacts::new();
        let mut held: BTreeSet<(i32, i32, i32, ContactKind)> = BTreeSet::new();
        let mut prev = path[0];
        for b in &path {
            bp.update_contacts(&mut body, &prev, b, |e| match e {
                ContactEvent::Added(c) => assert!(held.insert((c.chunk.y, c.chunk.z, c.chunk.x, c.kind)), "added twice"),
                ContactEvent::Removed(c) => assert!(held.remove(&(c.chunk.y, c.chunk.z, c.chunk.x, c.kind)), "removed a missing contact"),
            });
            let swept = prev.merged(b);
            let mut want = BTreeSet::new();
            for (k, t) in reference::query(&d, &MaterialTable::default(), 1.0, &swept) {
                if t.solid { want.insert((k.y, k.z, k.x, ContactKind::Solid)); }
                if t.water { want.insert((k.y, k.z, k.x, ContactKind::Water)); }
            }
            prop_assert_eq!(&held, &want);
            prop_assert_eq!(body.contacts().len(), want.len());
            prev = *b;
        }
    }

    #[test]
    fn far_boxes_never_touch_solid(seed: u64, b in arb_box()) {
        let d = world(seed);
        let bp = build(&d, 1.0);
        // L-infinity distance from the box to the nearest solid voxel cube.
        let table = MaterialTable::default();
        let mut nearest = f32::INFINITY;
        for p in d.region().iter() {
            if table.is_solid(voxterra_core::VoxelRead::voxel(&d, p)) {
                let dist = (0..3).map(|i| {
                    let (lo, hi) = (p[i] as f32, p[i] as f32 + 1.0);
                    (lo - b.maxs[i]).max(b.mins[i] - hi).max(0.0)
                }).fold(0.0f32, f32::max);
                nearest = nearest.min(dist);
            }
        }
        if nearest > 1.0 {
            bp.query(&b, |k, t| assert!(!t.solid, "box {b:?} is {nearest} voxels from solid but touches solid in {k:?}"));
        }
    }
}

#[test]
fn degenerate_and_huge_boxes() {
    let d = world(7);
    let bp = build(&d, 1.0);
    let table = MaterialTable::default();
    let nan = Aabb::new(Point3::new(f32::NAN, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
    let inverted = Aabb::new(Point3::new(5.0, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
    for b in [nan, inverted] {
        bp.query(&b, |_, _| panic!("{b:?} touched something"));
    }
    let all = Aabb::new(Point3::new(-1e9, -1e9, -1e9), Point3::new(1e9, 1e9, 1e9));
    let inf = Aabb::new(
        Point3::new(f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY),
        Point3::new(f32::INFINITY, f32::INFINITY, f32::INFINITY),
    );
    let region_box = Aabb::new(Point3::new(-30.0, -30.0, -30.0), Point3::new(30.0, 30.0, 30.0));
    let want = reference::query(&d, &table, 1.0, &region_box);
    assert_eq!(query(&bp, &all), want);
    assert_eq!(query(&bp, &inf), want);
    assert_eq!(want.len(), bp.chunk_count(), "a box over everything touches every held chunk");
    // A point on a chunk corner touches the voxels of all 8 chunks around it.
    let corner = Aabb::new(Point3::new(-8.0, -16.0, 0.0), Point3::new(-8.0, -16.0, 0.0));
    assert_eq!(query(&bp, &corner), reference::query(&d, &table, 1.0, &corner));
    assert!(matches!(
        BitBroadphase::new(&table, 0.0),
        Err(voxterra_bit_broadphase::BroadphaseError::VoxelSize(_))
    ));
    assert!(matches!(
        BitBroadphase::new(&table, f32::NAN),
        Err(voxterra_bit_broadphase::BroadphaseError::VoxelSize(_))
    ));
    let stats = bp.stats();
    assert_eq!(stats.chunks, stats.mask_chunks + stats.solid_chunks + stats.water_chunks);
    assert!(stats.solid_chunks > 0 && stats.water_chunks > 0 && stats.mask_chunks > 0, "{stats:?}");
}
