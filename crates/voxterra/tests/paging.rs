//! A paged terrain against the same world held whole: whatever boxes are paged in and out, under
//! a budget that forces eviction, the resident chunks hold the world's voxels, the masks and rays
//! inside a paged box answer as the whole terrain's do, and edits made through a durable paged
//! terrain (undo and redo included, chunks emptied, evicted and paged back) reopen as the same
//! edits made on the whole world.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use std::sync::Arc;
use std::time::Duration;
use voxterra::chunk_db::{Durability, RedbChunkDb};
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{
    Aabb, MaterialTable, Ray, Region, StoreChunkKey, Voxel, VoxelPos, VoxelRead, materials,
};
use voxterra::paging::GeneratorSource;
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, DurableTerrain, Terrain, TerrainConfig};

fn chunk(t: &Terrain, k: StoreChunkKey) -> Vec<Voxel> {
    let mut v = vec![Voxel::AIR; 32 * 32 * 32];
    t.store().read_box(&k.region().unwrap(), &mut v).unwrap();
    v
}

/// Every chunk either terrain holds, equal in both.
fn assert_same_voxels(a: &Terrain, b: &Terrain) {
    let mut keys = a.store().chunk_keys();
    keys.extend(b.store().chunk_keys());
    keys.sort_unstable();
    keys.dedup();
    for k in keys {
        assert!(chunk(a, k) == chunk(b, k), "chunk {k:?} differs");
    }
}

fn params(seed: u64, far: bool) -> GenParams {
    let mut p = GenParams::new(seed, [192, 56, 160]);
    if far {
        p.origin = VoxelPos::new(100_000, -40, -70_000);
    }
    p
}

fn world_box(p: &GenParams, scale: f32, at: [f32; 2], half: f32) -> Aabb {
    let o = p.origin.map(|v| v as f32) * scale;
    let (x, z) = (o.x + at[0] * p.size[0] as f32 * scale, o.z + at[1] * p.size[2] as f32 * scale);
    Aabb::new(
        Point3::new(x - half, o.y, z - half),
        Point3::new(x + half, o.y + p.size[1] as f32 * scale, z + half),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    #[test]
    fn paged_in_it_holds_and_answers_what_the_whole_world_does(
        seed in 0u64..1000,
        far in any::<bool>(),
        voxel_size in prop::sample::select(vec![0.5f32, 1.0, 2.0]),
        boxes in prop::collection::vec(((0.0f32..1.0, 0.0f32..1.0), 4.0f32..40.0), 1..6),
    ) {
        let p = params(seed, far);
        let config = TerrainConfig { resident_bytes: 64 << 10, ..TerrainConfig::with_voxel_size(voxel_size) };
        let whole = Terrain::generate(&p, config).unwrap();
        let mut paged =
            Terrain::paged(Arc::new(GeneratorSource(p)), MaterialTable::default(), config).unwrap();
        for ((u, v), half) in boxes {
            let b = world_box(&p, voxel_size, [u, v], half * voxel_size);
            let report = paged.page_in(&[b]).unwrap();
            prop_assert!(report.ready);
            // Past the budget, only chunks this box needs stay.
            if paged.page_stats().unwrap().bytes > config.resident_bytes {
                let near = b.loosened((voxterra::paging::PAGE_MARGIN + 33) as f32 * voxel_size);
                for k in paged.store().chunk_keys() {
                    let c = k.region().unwrap();
                    let (lo, hi) = (c.min().map(|v| v as f32 * voxel_size), c.max().map(|v| v as f32 * voxel_size));
                    prop_assert!(near.intersects(&Aabb::new(lo, hi)), "chunk {:?} stayed past the budget", k);
                }
            }
            for k in paged.store().chunk_keys() {
                prop_assert!(chunk(&paged, k) == chunk(&whole, k), "chunk {:?} differs", k);
            }
            paged.validate().unwrap();
            // Inside the box: the masks and vertical rays of the whole world.
            let inner = b.loosened(-2.0 * voxel_size);
            prop_assert!(paged.prepare(&[b], voxterra::PrepareBudget::UNLIMITED).ready);
            prop_assert_eq!(paged.solid_chunks(&inner), whole.solid_chunks(&inner));
            let voxels = |p: Point3<f32>| p.map(|v| (v / voxel_size).floor() as i32);
            let region = Region::new(voxels(inner.mins), voxels(inner.maxs)).unwrap();
            // Every physics chunk whose neighbourhood was paged in has the whole world's masks.
            let m = voxterra::paging::PAGE_MARGIN;
            let paged_region = Region::new(voxels(b.mins) - Vector3::repeat(m), voxels(b.maxs) + Vector3::repeat(m)).unwrap();
            for k in voxterra::core::PhysicsChunkKey::range(&region).unwrap().iter() {
                let around = k.region().unwrap().expanded(1);
                if paged_region.intersection(&around) == Some(around) {
                    prop_assert_eq!(paged.masks().chunk(k), whole.masks().chunk(k), "masks of {:?}", k);
                }
            }
            for i in 0..16 {
                let f = |s: f32| (s * 0.618 * (i as f32 + 1.0)).fract();
                let x = inner.mins.x + f(1.0) * (inner.maxs.x - inner.mins.x);
                let z = inner.mins.z + f(1.7) * (inner.maxs.z - inner.mins.z);
                let ray = Ray::new(Point3::new(x, inner.maxs.y, z), Vector3::new(0.1, -1.0, 0.05));
                let max_t = inner.maxs.y - inner.mins.y;
                let (a, w) = (paged.cast_ray(&ray, max_t).unwrap(), whole.cast_ray(&ray, max_t).unwrap());
                prop_assert_eq!(a.map(|h| (h.t, h.material)), w.map(|h| (h.t, h.material)));
            }
        }
    }

    #[test]
    fn durable_paged_edits_reopen_as_the_same_edits_on_the_whole_world(
        seed in 0u64..1000,
        deferred in any::<bool>(),
        steps in prop::collection::vec((0u8..7, 0.0f32..1.0, 8.0f32..50.0, 0.0f32..1.0, 1.0f32..9.0), 1..14),
    ) {
        let p = params(seed, false);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.redb");
        // A budget of a few columns: every far move evicts what the last one loaded.
        let config = TerrainConfig { resident_bytes: 64 << 10, ..TerrainConfig::default() };
        let durability = if deferred { Durability::Deferred } else { Durability::Immediate };
        let mut d = DurableTerrain::create_generated(&p, RedbChunkDb::create(&path).unwrap(), config, durability).unwrap();
        let mut whole = Terrain::generate(&p, config).unwrap();
        for (what, u, y, v, r) in steps {
            let center = Point3::new(u * p.size[0] as f32, y, v * p.size[2] as f32);
            let brush = |op| Brush { shape: BrushShape::Sphere { center, radius: r }, op };
            match what {
                0 => prop_assert_eq!(d.undo().is_ok(), whole.undo().is_ok()),
                1 => prop_assert_eq!(d.redo().is_ok(), whole.redo().is_ok()),
                2 => {
                    // Empties whole chunks (stored as Air, or the generator would bring them back).
                    let b = Brush { shape: BrushShape::Box { min: center - Vector3::repeat(20.0), max: center + Vector3::repeat(20.0) }, op: BrushOp::Subtract };
                    d.apply_brush(&b).unwrap();
                    whole.apply_brush(&b).unwrap();
                }
                3 => {
                    // Elsewhere: evicts.
                    d.page_in(&[world_box(&p, 1.0, [1.0 - u, 1.0 - v], 30.0)]).unwrap();
                }
                4 | 5 => {
                    d.apply_brush(&brush(BrushOp::Subtract)).unwrap();
                    whole.apply_brush(&brush(BrushOp::Subtract)).unwrap();
                }
                _ => {
                    d.apply_brush(&brush(BrushOp::Add(materials::ROCK))).unwrap();
                    whole.apply_brush(&brush(BrushOp::Add(materials::ROCK))).unwrap();
                }
            }
            for k in d.terrain().store().chunk_keys() {
                prop_assert!(chunk(d.terrain(), k) == chunk(&whole, k), "chunk {:?} differs", k);
            }
            d.terrain().validate().unwrap();
        }
        d.flush().unwrap();
        drop(d);
        let all = world_box(&p, 1.0, [0.5, 0.5], 200.0);
        let mut reopened = DurableTerrain::open_paged(RedbChunkDb::open(&path).unwrap(), config, durability).unwrap();
        reopened.page_in(&[all]).unwrap();
        assert_same_voxels(reopened.terrain(), &whole);
        drop(reopened);
        let held = DurableTerrain::open(RedbChunkDb::open(&path).unwrap(), config, durability).unwrap();
        assert_same_voxels(held.terrain(), &whole);
    }
}

#[test]
fn pages_ahead_from_the_background_until_ready() {
    let p = params(7, true);
    let config = TerrainConfig { resident_bytes: 64 << 10, ..TerrainConfig::default() };
    let whole = Terrain::generate(&p, config).unwrap();
    let mut paged = Terrain::paged(Arc::new(GeneratorSource(p)), MaterialTable::default(), config).unwrap();
    for at in [[0.2, 0.3], [0.8, 0.7], [0.5, 0.1]] {
        let b = world_box(&p, 1.0, at, 40.0);
        let mut calls = 0;
        loop {
            let r = paged.page(&[b], Duration::from_millis(4)).unwrap();
            calls += 1;
            if r.ready {
                break;
            }
            assert!(calls < 10_000, "never ready");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(
            paged.prepare(&[b], voxterra::PrepareBudget::NONE).ready || !paged.solid_chunks(&b).is_empty()
        );
        for k in paged.store().chunk_keys() {
            assert!(chunk(&paged, k) == chunk(&whole, k), "chunk {k:?} differs");
        }
    }
    assert!(paged.page_stats().unwrap().evicted_total > 0, "the budget made room");
}

#[test]
fn a_world_steps_on_a_paged_terrain_as_on_the_whole_one() {
    use voxterra::parry3d::shape::SharedShape;
    use voxterra::{BodyDesc, World};
    let p = params(3, false);
    let config = TerrainConfig::default();
    let mut whole = World::new(Terrain::generate(&p, config).unwrap());
    let paged = Terrain::paged(Arc::new(GeneratorSource(p)), MaterialTable::default(), config).unwrap();
    let mut paged = World::new(paged);
    let top = |t: &Terrain, x: f32, z: f32| {
        let ray = Ray::new(Point3::new(x, 200.0, z), Vector3::new(0.0, -1.0, 0.0));
        t.cast_ray(&ray, 400.0).unwrap().map_or(0.0, |h| h.point.y)
    };
    for (i, (x, z)) in [(40.0, 40.0), (150.0, 120.0), (100.0, 20.0)].into_iter().enumerate() {
        let y = top(whole.terrain(), x, z) + 0.4;
        let desc = BodyDesc {
            shape: SharedShape::ball(0.5),
            pose: voxterra::parry3d::math::Pose::translation(x, y, z),
            velocity: Some(voxterra::parry3d::math::Vector::new(0.0, -1.0, 0.0)),
            user_data: i as u64,
        };
        whole.insert(desc.clone()).unwrap();
        paged.insert(desc).unwrap();
    }
    whole.step(1.0 / 60.0).unwrap();
    paged.step(1.0 / 60.0).unwrap();
    for (a, b) in whole.handles().zip(paged.handles()) {
        let (a, b) = (whole.body(a).unwrap(), paged.body(b).unwrap());
        assert!(!a.terrain_contacts().is_empty(), "the ball rests on the ground");
        assert_eq!(a.terrain_contacts(), b.terrain_contacts());
    }
    assert!(paged.terrain().page_stats().unwrap().resident < whole.terrain().store().chunk_count());
}

#[test]
fn a_box_over_too_many_chunks_is_refused() {
    let p = GenParams::new(1, [8192, 256, 8192]);
    let mut t =
        Terrain::paged(Arc::new(GeneratorSource(p)), MaterialTable::default(), TerrainConfig::default())
            .unwrap();
    let all = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(8192.0, 256.0, 8192.0));
    assert!(matches!(t.page_in(&[all]), Err(voxterra::PageError::TooMany { .. })));
    assert_eq!(t.page_stats().unwrap().resident, 0);
    let _ = Region::voxel(VoxelPos::origin());
}

/// Draws `view` around `eye` on a paged terrain: pages in each waiting node's reads, nearest
/// first, until none waits; the meshes it handed out, by key.
fn draw_paged(
    view: &mut voxterra::lod::LodView,
    t: &mut Terrain,
    mesher: &voxterra::mesher::Mesher,
    eye: Point3<f32>,
    meshes: &mut std::collections::BTreeMap<voxterra::lod::LodMeshKey, voxterra::mesher::RenderMesh>,
) {
    loop {
        let update = view.update(t, mesher, &[eye]).unwrap();
        for k in &update.dropped {
            meshes.remove(k);
        }
        meshes.extend(update.meshes);
        view.validate().unwrap();
        let Some(&next) = view.waiting().first() else { return };
        let reads = next.reads(t).unwrap().expect("a waiting node reads voxels");
        t.page_in(&[t.scale().region_to_world(&reads, 0.0)]).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]

    /// Levels of detail over a paged world under a budget smaller than one node's voxels, drawn
    /// node by node as their chunks come in and leave, then again after the viewer moves: the
    /// same meshes a view over the whole world hands out.
    #[test]
    fn a_paged_view_draws_what_a_view_of_the_whole_world_draws(
        seed in 0u64..1000,
        far in any::<bool>(),
        eyes in proptest::collection::vec((0.0f32..1.0, 0.0f32..1.0, 0.0f32..1.0), 2),
    ) {
        use voxterra::lod::{LodConfig, LodView};
        let p = params(seed, far);
        let config = TerrainConfig { resident_bytes: 64 << 10, ..TerrainConfig::default() };
        let whole = Terrain::generate(&p, config).unwrap();
        let mut paged = Terrain::paged(Arc::new(GeneratorSource(p)), MaterialTable::default(), config).unwrap();
        let mesher = voxterra::mesher::Mesher::new(whole.materials());
        // No hysteresis: after a move the view selects what a fresh one does.
        let lod = LodConfig { distances: vec![12.0, 24.0, 48.0], hysteresis: 0.0 };
        let mut view = LodView::new(lod.clone()).unwrap();
        let mut drawn = std::collections::BTreeMap::new();
        for (x, y, z) in eyes {
            let eye = p.origin.map(|v| v as f32)
                + Vector3::new(x * p.size[0] as f32, y * p.size[1] as f32 * 1.5, z * p.size[2] as f32);
            draw_paged(&mut view, &mut paged, &mesher, eye, &mut drawn);
            let fresh = LodView::new(lod.clone()).unwrap().update(&whole, &mesher, &[eye]).unwrap();
            let fresh: std::collections::BTreeMap<_, _> = fresh.meshes.into_iter().collect();
            prop_assert_eq!(drawn.keys().collect::<Vec<_>>(), fresh.keys().collect::<Vec<_>>());
            prop_assert!(drawn == fresh, "the paged view's meshes differ from the whole world's");
        }
        let stats = paged.page_stats().unwrap();
        prop_assert!(stats.evicted_total > 0, "the budget made chunks leave");
    }
}
