//! Terrain edits against references: masks rebuilt from scratch, dense before/after diffs,
//! undo/redo bit for bit, bad input leaving everything unchanged.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra::TerrainConfig;
use voxterra::core::nalgebra::Point3;
use voxterra::core::{MaterialTable, PhysicsChunkKey, Region, Voxel, VoxelPos, VoxelRead, materials as m};
use voxterra::terrain_broadphase::BitBroadphase;
use voxterra::worldgen::GenParams;
use voxterra::{
    Brush, BrushOp, BrushShape, ConfigError, EditError, HistoryStats, PrepareBudget, QueryError, Readiness,
    Terrain, TerrainContactCache, TerrainContactPoint,
};

fn world() -> Terrain {
    Terrain::generate(&GenParams::new(5, [64, 48, 64]), TerrainConfig::default()).unwrap()
}

/// Everything edits may touch in these tests.
fn area() -> Region {
    Region::from_min_size(VoxelPos::new(-16, -16, -16), [96, 80, 96]).unwrap()
}

fn voxels(t: &Terrain) -> Vec<Voxel> {
    let mut v = vec![Voxel::AIR; area().len().unwrap()];
    t.store().read_box(&area(), &mut v).unwrap();
    v
}

/// A chunk's collision data built from scratch: its physics mesh (with edge flags) and kD tree;
/// `None` for a chunk with no surface.
fn fresh_chunk(
    t: &Terrain,
    key: PhysicsChunkKey,
) -> Option<(voxterra::mesher::PhysicsMesh, voxterra::kdtree::KdTree)> {
    let mesher = voxterra::mesher::Mesher::new(t.materials());
    let mut mesh = voxterra::mesher::PhysicsMesh::default();
    let mut ws = voxterra::mesher::MeshWorkspace::new();
    mesher.mesh_physics(t.store(), &key.region().unwrap(), &mut ws, &mut mesh).unwrap();
    if mesh.triangles().is_empty() {
        return None;
    }
    let tree = voxterra::kdtree::KdTree::build(&mesh).unwrap();
    Some((mesh, tree))
}

fn fresh_masks(t: &Terrain) -> Vec<(PhysicsChunkKey, voxterra::terrain_broadphase::ChunkState)> {
    let mut bp = BitBroadphase::new(t.materials(), 1.0).unwrap();
    if let Some(b) = t.store().bounds() {
        bp.rebuild_region(t.store(), &b);
    }
    bp.chunks()
}

fn arb_brush() -> impl Strategy<Value = Brush> {
    let p = proptest::array::uniform3(4.0f32..60.0).prop_map(Point3::from);
    let shape = prop_oneof![
        (p.clone(), 0.6f32..6.0).prop_map(|(center, radius)| BrushShape::Sphere { center, radius }),
        (p.clone(), proptest::array::uniform3(0.5f32..8.0)).prop_map(|(min, e)| BrushShape::Box {
            min,
            max: min + voxterra::core::nalgebra::Vector3::from(e)
        }),
        (p.clone(), p, 0.6f32..3.0).prop_map(|(a, b, radius)| BrushShape::Capsule { a, b, radius }),
    ];
    let op = prop_oneof![
        Just(BrushOp::Add(m::ROCK)),
        Just(BrushOp::Add(m::WATER)),
        Just(BrushOp::Subtract),
        Just(BrushOp::Paint(m::SNOW)),
        Just(BrushOp::Smooth),
    ];
    (shape, op).prop_map(|(shape, op)| Brush { shape, op })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// After every edit the masks equal masks built from scratch, every changed voxel lies in the
    /// reported dirty region, and the rebuilt chunks are exactly those around it. Undoing every
    /// edit restores the voxels bit for bit; redoing them all gives the final voxels again.
    #[test]
    fn edits_masks_and_history_are_exact(brushes in proptest::collection::vec(arb_brush(), 1..6)) {
        let mut t = world();
        let original = voxels(&t);
        let mut states = vec![original.clone()];
        for b in &brushes {
            let before = voxels(&t);
            let report = t.apply_brush(b).unwrap();
            t.validate().unwrap();
            let after = voxels(&t);
            for (i, p) in area().iter().enumerate() {
                if before[i] != after[i] {
                    prop_assert!(report.dirty.is_some_and(|d| d.contains(p)), "{p:?} changed outside {:?}", report.dirty);
                }
            }
            let expect = report.dirty.map_or(0, |d| PhysicsChunkKey::range(&d.expanded(1)).unwrap().count() as usize);
            prop_assert_eq!(report.masks_rebuilt, expect);
            prop_assert_eq!(t.masks().chunks(), fresh_masks(&t));
            if report.dirty.is_some() {
                states.push(after);
            }
        }
        let HistoryStats { undo: undos, redo: _, .. } = t.history();
        prop_assert_eq!(undos, states.len() - 1);
        for k in (0..undos).rev() {
            t.undo().unwrap();
            t.validate().unwrap();
            prop_assert!(voxels(&t) == states[k], "undo to state {} differs", k);
        }
        prop_assert!(matches!(t.undo(), Err(EditError::NoHistory(_))));
        prop_assert_eq!(t.masks().chunks(), fresh_masks(&t));
        for (k, state) in states.iter().enumerate().skip(1) {
            t.redo().unwrap();
            t.validate().unwrap();
            prop_assert!(voxels(&t) == *state, "redo to state {} differs", k);
        }
        prop_assert_eq!(t.masks().chunks(), fresh_masks(&t));
    }
}

#[test]
fn brushes_do_what_they_say() {
    let mut t = Terrain::new(MaterialTable::default(), TerrainConfig::with_voxel_size(0.5)).unwrap();
    // World units: a sphere of radius 2 (4 voxels) at (5, 5, 5) (voxel 10, 10, 10).
    let ball = BrushShape::Sphere { center: Point3::new(5.0, 5.0, 5.0), radius: 2.0 };
    let r = t.apply_brush(&Brush { shape: ball, op: BrushOp::Add(m::ROCK) }).unwrap();
    assert!(r.dirty.is_some() && r.masks_rebuilt > 0);
    assert_eq!(t.voxel(VoxelPos::new(10, 10, 10)), Voxel::full(m::ROCK));
    assert!(t.voxel(VoxelPos::new(10, 10, 16)).is_air());
    // The surface sits at the radius: the voxel whose center is on it is half full.
    let edge = t.voxel(VoxelPos::new(13, 10, 10));
    assert!((edge.occupancy() - 0.5).abs() < 0.51, "{edge:?}");
    // Paint keeps occupancy; subtract carves; smoothing keeps matter inside.
    t.apply_brush(&Brush { shape: ball, op: BrushOp::Paint(m::SNOW) }).unwrap();
    assert_eq!(t.voxel(VoxelPos::new(10, 10, 10)), Voxel::full(m::SNOW));
    t.apply_brush(&Brush {
        shape: BrushShape::Sphere { center: Point3::new(5.0, 5.0, 5.0), radius: 1.0 },
        op: BrushOp::Subtract,
    })
    .unwrap();
    assert!(t.voxel(VoxelPos::new(10, 10, 10)).is_air());
    assert!(!t.voxel(VoxelPos::new(10, 10, 13)).is_air());
    // A no-op edit changes nothing and records nothing.
    let HistoryStats { undo: undos, redo: _, .. } = t.history();
    let r = t
        .apply_brush(&Brush {
            shape: BrushShape::Sphere { center: Point3::new(40.0, 40.0, 40.0), radius: 1.0 },
            op: BrushOp::Subtract,
        })
        .unwrap();
    assert_eq!((r.dirty, r.masks_rebuilt), (None, 0));
    assert_eq!(t.history().undo, undos);
}

#[test]
fn bad_edits_are_refused_and_change_nothing() {
    let mut t = world();
    let before = voxels(&t);
    let masks = t.masks().chunks();
    let nan = BrushShape::Sphere { center: Point3::new(f32::NAN, 0.0, 0.0), radius: 1.0 };
    let neg = BrushShape::Sphere { center: Point3::new(1.0, 1.0, 1.0), radius: -1.0 };
    let inv = BrushShape::Box { min: Point3::new(5.0, 0.0, 0.0), max: Point3::new(3.0, 1.0, 1.0) };
    let inf =
        BrushShape::Capsule { a: Point3::origin(), b: Point3::new(f32::INFINITY, 0.0, 0.0), radius: 1.0 };
    for shape in [nan, neg, inv, inf] {
        let r = t.apply_brush(&Brush { shape, op: BrushOp::Add(m::ROCK) });
        assert!(matches!(r, Err(EditError::InvalidBrush(_))), "{r:?}");
    }
    let huge = BrushShape::Sphere { center: Point3::origin(), radius: 1e6 };
    assert!(matches!(
        t.apply_brush(&Brush { shape: huge, op: BrushOp::Subtract }),
        Err(EditError::EditTooLarge { .. })
    ));
    let beyond = BrushShape::Sphere { center: Point3::new(3e9, 0.0, 0.0), radius: 1.0 };
    assert!(matches!(
        t.apply_brush(&Brush { shape: beyond, op: BrushOp::Subtract }),
        Err(EditError::InvalidBrush(_))
    ));
    let ok = BrushShape::Sphere { center: Point3::new(10.0, 10.0, 10.0), radius: 2.0 };
    let unknown = voxterra::core::Material::new(40).unwrap();
    assert!(matches!(
        t.apply_brush(&Brush { shape: ok, op: BrushOp::Add(unknown) }),
        Err(EditError::BadMaterial(40))
    ));
    assert!(matches!(
        t.apply_brush(&Brush { shape: ok, op: BrushOp::Paint(voxterra::core::Material::AIR) }),
        Err(EditError::BadMaterial(0))
    ));
    assert!(matches!(
        Terrain::new(MaterialTable::default(), TerrainConfig::with_voxel_size(0.0)),
        Err(ConfigError::InvalidVoxelSize(_))
    ));
    assert!(matches!(
        Terrain::new(MaterialTable::default(), TerrainConfig::with_voxel_size(f32::NAN)),
        Err(ConfigError::InvalidVoxelSize(_))
    ));
    assert!(matches!(t.redo(), Err(EditError::NoHistory(_))));
    assert!(voxels(&t) == before);
    assert_eq!(t.masks().chunks(), masks);
    assert_eq!((t.history().undo, t.history().redo), (0, 0));
}

#[test]
fn the_history_keeps_the_newest_edits_within_its_budget() {
    let mut t = world();
    t.reconfigure(TerrainConfig { history_bytes: 4096, ..t.config() }).unwrap();
    for i in 0..20 {
        let c = Point3::new(10.0 + i as f32 * 2.0, 20.0, 30.0);
        t.apply_brush(&Brush { shape: BrushShape::Sphere { center: c, radius: 3.0 }, op: BrushOp::Subtract })
            .unwrap();
        assert!(t.history().bytes <= 4096);
    }
    let HistoryStats { undo: undos, redo: _, .. } = t.history();
    assert!(undos > 0 && undos < 20, "{undos}");
    for _ in 0..undos {
        t.undo().unwrap();
        t.validate().unwrap();
    }
    assert!(matches!(t.undo(), Err(EditError::NoHistory(_))));
}

/// Shrinking the history's budget drops the oldest undo snapshots first and keeps what can be
/// redone; the voxel size cannot change.
#[test]
fn reconfiguring_keeps_the_redo_stack_and_the_voxel_size() {
    let mut t = world();
    for i in 0..8 {
        let c = Point3::new(10.0 + i as f32 * 5.0, 20.0, 30.0);
        t.apply_brush(&Brush { shape: BrushShape::Sphere { center: c, radius: 3.0 }, op: BrushOp::Subtract })
            .unwrap();
    }
    t.undo().unwrap();
    t.validate().unwrap();
    t.undo().unwrap();
    t.validate().unwrap();
    assert_eq!((t.history().undo, t.history().redo), (6, 2));
    let half = t.history().bytes / 2;
    t.reconfigure(TerrainConfig { history_bytes: half, ..t.config() }).unwrap();
    let HistoryStats { undo: undos, redo: redos, .. } = t.history();
    assert!(undos < 6 && redos == 2 && t.history().bytes <= half, "{undos} undo, {redos} redo");
    t.redo().unwrap();
    t.validate().unwrap();
    t.redo().unwrap();
    t.validate().unwrap();
    assert!(matches!(
        t.reconfigure(TerrainConfig::with_voxel_size(0.5)),
        Err(ConfigError::VoxelSizeFixed { current: 1.0, asked: 0.5 })
    ));
    assert_eq!(t.config().history_bytes, half);
}

#[test]
fn edits_are_the_same_on_one_thread_and_two() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut t = world();
            for i in 0..6 {
                let c = Point3::new(8.0 + i as f32 * 7.0, 24.0, 20.0 + i as f32 * 3.0);
                let op = if i % 2 == 0 { BrushOp::Subtract } else { BrushOp::Add(m::BASALT) };
                t.apply_brush(&Brush { shape: BrushShape::Sphere { center: c, radius: 5.0 }, op }).unwrap();
            }
            (voxels(&t), t.masks().chunks())
        })
    };
    assert!(run(1) == run(2));
}

mod contacts {
    use super::*;
    use voxterra::convert::FromParry;
    use voxterra::mesher::{MeshWorkspace, Mesher, PhysicsMesh};
    use voxterra::narrowphase::{ContactWorkspace, Correction, Manifold, TriangleSet};
    use voxterra::parry3d::math::{Pose, Vector};
    use voxterra::parry3d::shape::SharedShape;
    use voxterra::{TerrainManifold, core::Aabb};

    /// The reference: every chunk the masks name, meshed and indexed from scratch, collected in
    /// one query (internal contacts are decided across chunks).
    fn reference(
        t: &Terrain,
        shape: &SharedShape,
        pose: &Pose,
        prediction: f32,
    ) -> Vec<(PhysicsChunkKey, Manifold)> {
        let keys = t.solid_chunks(&Aabb::from_parry(&shape.compute_aabb(pose)).loosened(prediction));
        let fresh: Vec<_> = keys.iter().map(|&k| fresh_chunk(t, k)).collect();
        let mut ws = ContactWorkspace::new();
        ws.begin();
        for (i, c) in fresh.iter().enumerate() {
            let Some((mesh, tree)) = c else { continue };
            let view = tree.with(mesh);
            let set = TriangleSet::new(mesh, &view).with_edge_flags(mesh.edge_flags()).one_sided();
            ws.collect(&*shape.0, pose, set, prediction, i as u32).unwrap();
        }
        let mut out = Vec::new();
        ws.finish(|i, m| out.push((keys[i as usize], *m)));
        out
    }

    /// Ours, without the contacts made for shapes inside the solid (those come from the nearest
    /// surface point, not from the chunks' triangles).
    fn ours(
        t: &Terrain,
        shape: &SharedShape,
        pose: &Pose,
        prediction: f32,
    ) -> Vec<(PhysicsChunkKey, Manifold)> {
        let mut out: Vec<TerrainManifold> = Vec::new();
        t.contacts(&*shape.0, pose, prediction, &mut out).unwrap();
        out.into_iter()
            .filter(|m| m.manifold.points()[0].correction != Correction::Interior)
            .map(|m| (m.chunk, m.manifold))
            .collect()
    }

    fn probes() -> Vec<(SharedShape, Pose)> {
        let mut v = Vec::new();
        for i in 0..24 {
            let (x, z) = (6.0 + (i * 7 % 50) as f32, 6.0 + (i * 13 % 50) as f32);
            let shape = match i % 3 {
                0 => SharedShape::ball(1.2),
                1 => SharedShape::cuboid(1.0, 1.5, 0.8),
                _ => SharedShape::capsule_y(1.0, 0.7),
            };
            for y in [8.0f32, 16.0, 24.0, 32.0] {
                v.push((shape.clone(), Pose::translation(x, y, z)));
            }
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]

        /// Contacts through the cache equal contacts on chunks built from scratch, before and
        /// after random edits (the cache drops what edits touch), under a tiny budget too.
        #[test]
        fn cached_contacts_equal_fresh_ones(brushes in proptest::collection::vec(arb_brush(), 1..5), tiny: bool) {
            let mut t = world();
            if tiny {
                t.reconfigure(TerrainConfig { cache_bytes: 1, ..t.config() }).unwrap();
            }
            let probes = probes();
            let mut any = 0;
            for (s, p) in &probes {
                let got = ours(&t, s, p, 0.05);
                any += got.len();
                prop_assert_eq!(got, reference(&t, s, p, 0.05));
            }
            prop_assert!(any > 0, "the probes touch the terrain");
            for b in &brushes {
                let r = t.apply_brush(b).unwrap();
                t.validate().unwrap();
                if let Some(d) = r.dirty {
                    // Whatever was cached around the edit is gone.
                    prop_assert!(r.cache_dropped <= PhysicsChunkKey::range(&d.expanded(2)).unwrap().count() as usize);
                }
                for (s, p) in &probes {
                    prop_assert_eq!(ours(&t, s, p, 0.05), reference(&t, s, p, 0.05));
                }
            }
            if tiny {
                prop_assert!(t.cache_stats().evictions > 0);
            }
        }
    }

    /// With every chunk cached, after each random edit every entry still held equals a fresh
    /// build: edits drop exactly what they make stale.
    #[test]
    fn edits_leave_no_stale_cache_entry() {
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(8));
        runner
            .run(&proptest::collection::vec(arb_brush(), 1..4), |brushes| {
                let mut t = world();
                t.prepare(
                    &[Aabb::new(Point3::new(-8.0, -8.0, -8.0), Point3::new(72.0, 56.0, 72.0))],
                    PrepareBudget::UNLIMITED,
                );
                let mesher = Mesher::new(t.materials());
                for b in &brushes {
                    t.apply_brush(b).unwrap();
                    t.validate().unwrap();
                    for key in t.cached_chunks() {
                        let held = t.cached_chunk(key).unwrap();
                        let mut fresh = PhysicsMesh::default();
                        mesher
                            .mesh_physics(
                                t.store(),
                                &key.region().unwrap(),
                                &mut MeshWorkspace::new(),
                                &mut fresh,
                            )
                            .unwrap();
                        match held {
                            None => prop_assert!(
                                fresh.triangles().is_empty(),
                                "chunk {key:?} went stale (now has a surface)"
                            ),
                            Some(c) => {
                                fresh.shrink_to_fit();
                                prop_assert!(c.mesh == fresh, "chunk {key:?} went stale");
                            }
                        }
                    }
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn prepared_regions_build_nothing_on_query() {
        let mut t = world();
        let area = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(64.0, 48.0, 64.0));
        assert!(!t.prepare(&[area], PrepareBudget::NONE).ready);
        let built = t.prepare(&[area], PrepareBudget::UNLIMITED).built;
        assert!(built > 0 && t.prepare(&[area], PrepareBudget::NONE).ready);
        let before = t.cache_stats();
        for (s, p) in probes() {
            ours(&t, &s, &p, 0.05);
        }
        let after = t.cache_stats();
        assert_eq!((after.builds, after.misses), (before.builds, before.misses));
        assert!(after.hits > before.hits);
        // An edit drops the chunks around it; readiness reports it.
        let r = t
            .apply_brush(&Brush {
                shape: BrushShape::Sphere { center: Point3::new(30.0, 20.0, 30.0), radius: 4.0 },
                op: BrushOp::Subtract,
            })
            .unwrap();
        if r.dirty.is_some() {
            assert!(r.cache_dropped > 0);
        }
    }

    /// An edit no surface cell reads keeps every chunk's data: painting rock deep in flat ground or
    /// writing water high in the air drops nothing; painting where the ground meets the air drops
    /// the chunks around. The data kept still equals a fresh build.
    #[test]
    fn edits_no_surface_cell_reads_keep_the_cache() {
        let mut store = voxterra::store::VoxelStore::new();
        let ground = Region::from_min_size(VoxelPos::new(0, 0, 0), [64, 32, 64]).unwrap();
        store.write_box(&ground, &vec![Voxel::full(m::DIRT); ground.len().unwrap()]).unwrap();
        let mut t = Terrain::from_store(store, MaterialTable::default(), TerrainConfig::default()).unwrap();
        let all = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(64.0, 48.0, 64.0));
        assert!(t.prepare(&[all], PrepareBudget::UNLIMITED).built > 0);
        let sphere = |y: f32, op| Brush {
            shape: BrushShape::Sphere { center: Point3::new(32.0, y, 32.0), radius: 5.0 },
            op,
        };
        let deep = t.apply_brush(&sphere(12.0, BrushOp::Paint(m::ROCK))).unwrap();
        assert!(deep.dirty.is_some());
        assert_eq!(deep.cache_dropped, 0, "a paint deep in the ground");
        let high = t.apply_brush(&sphere(44.0, BrushOp::Add(m::WATER))).unwrap();
        assert!(high.dirty.is_some());
        assert_eq!(high.cache_dropped, 0, "water in the air");
        let surface = t.apply_brush(&sphere(32.0, BrushOp::Paint(m::ROCK))).unwrap();
        assert!(surface.cache_dropped > 0, "a paint at the surface");
        for key in t.cached_chunks() {
            let held = t.cached_chunk(key).unwrap();
            assert_eq!(
                held.as_ref().map(|c| &c.mesh),
                fresh_chunk(&t, key).as_ref().map(|f| &f.0),
                "chunk {key:?}"
            );
        }
    }

    /// Many boxes prepared at once: each box is ready, each chunk built once, queries inside build
    /// nothing.
    #[test]
    fn prepared_boxes_are_ready_and_build_each_chunk_once() {
        let t = world();
        let boxes: Vec<Aabb> =
            probes().iter().map(|(s, p)| Aabb::from_parry(&s.compute_aabb(p)).loosened(0.05)).collect();
        let built = t.prepare(&boxes, PrepareBudget::UNLIMITED).built;
        assert!(boxes.iter().all(|b| t.prepare(&[*b], PrepareBudget::NONE).ready));
        assert_eq!(built as u64, t.cache_stats().builds, "each chunk once");
        assert_eq!(t.prepare(&boxes, PrepareBudget::UNLIMITED).built, 0);
        for (s, p) in probes() {
            let before = t.cache_stats().builds;
            let mut out = Vec::new();
            t.contacts(&*s.0, &p, 0.05, &mut out).unwrap();
            // Only a shape deep in the solid looks for the surface past its box.
            let interior =
                out.iter().flat_map(|m| m.manifold.points()).any(|p| p.correction == Correction::Interior);
            assert!(t.cache_stats().builds == before || interior, "a prepared box built chunks");
        }
    }

    /// Every query answers the same from a cold cache, a prepared one, a cache too small to keep
    /// anything, and from four threads at once on one cold terrain while its cache fills:
    /// contacts, casts, sweeps and point projections alike; the budget holds throughout.
    #[test]
    fn queries_answer_the_same_on_any_cache_and_from_many_threads() {
        use rayon::prelude::*;
        use voxterra::narrowphase::CastOptions;
        use voxterra::parry3d::query::sweep_toi::Sweep;
        #[derive(PartialEq, Debug)]
        struct Answers {
            contacts: Vec<TerrainManifold>,
            cast: Option<f32>,
            sweep: Option<f32>,
            projection: Option<(f32, bool)>,
        }
        let probes = probes();
        let ask = |t: &Terrain, (s, p): &(SharedShape, Pose)| {
            let mut contacts = Vec::new();
            t.contacts(&*s.0, p, 0.05, &mut contacts).unwrap();
            let down = Vector::new(0.1, -1.0, 0.05);
            let cast = t.cast_shape(&*s.0, p, down, 30.0, CastOptions::default()).unwrap().map(|h| h.1.toi);
            let end = Pose::from_parts(p.translation + down * 30.0, p.rotation);
            let sweep = t.sweep_shape(&*s.0, &Sweep::from_poses(p, &end, Vector::ZERO), 1.0, 0.01).unwrap();
            let at = voxterra::core::nalgebra::Point3::from_parry(p.translation);
            let projection = t.project_point(&at, 50.0).unwrap().map(|pr| (pr.distance, pr.inside));
            Answers { contacts, cast, sweep: sweep.map(|h| h.1.fraction), projection }
        };
        let cold = world();
        let want: Vec<Answers> = probes.iter().map(|q| ask(&cold, q)).collect();
        assert!(want.iter().filter(|a| !a.contacts.is_empty()).count() > 10);
        let prepared = world();
        prepared.prepare(
            &[Aabb::new(Point3::new(-16.0, -16.0, -16.0), Point3::new(80.0, 64.0, 80.0))],
            PrepareBudget::UNLIMITED,
        );
        let built = prepared.cache_stats().builds;
        assert!(probes.iter().map(|q| ask(&prepared, q)).collect::<Vec<_>>() == want);
        assert_eq!(prepared.cache_stats().builds, built, "a prepared terrain builds nothing");
        let mut tiny = world();
        tiny.reconfigure(TerrainConfig { cache_bytes: 1, ..tiny.config() }).unwrap();
        assert!(probes.iter().map(|q| ask(&tiny, q)).collect::<Vec<_>>() == want);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        let shared = world();
        let got: Vec<Answers> = pool.install(|| probes.par_iter().map(|q| ask(&shared, q)).collect());
        assert!(got == want, "four threads filling one cache");
        let mut small = world();
        let budget = cold.cache_stats().bytes / 3;
        small.reconfigure(TerrainConfig { cache_bytes: budget, ..small.config() }).unwrap();
        let got: Vec<Answers> = pool.install(|| probes.par_iter().map(|q| ask(&small, q)).collect());
        assert!(got == want, "four threads filling and evicting one cache");
        assert!(small.cache_stats().bytes <= budget);
    }

    #[test]
    fn prepare_within_a_budget_builds_nearest_first() {
        let t = world();
        let bodies = [
            Aabb::new(Point3::new(10.0, 10.0, 10.0), Point3::new(12.0, 40.0, 12.0)),
            Aabb::new(Point3::new(40.0, 10.0, 50.0), Point3::new(42.0, 40.0, 52.0)),
        ];
        let Readiness { built: first, ready } =
            t.prepare(&bodies, PrepareBudget::new(3, std::time::Duration::from_secs(60)));
        assert_eq!(first, 3);
        assert!(!ready);
        let Readiness { built: rest, ready } =
            t.prepare(&bodies, PrepareBudget::new(usize::MAX, std::time::Duration::from_secs(60)));
        assert!(rest > 0 && ready);
        assert!(bodies.iter().all(|b| t.prepare(&[*b], PrepareBudget::NONE).ready));
        assert_eq!(
            t.prepare(&bodies, PrepareBudget::new(usize::MAX, std::time::Duration::ZERO)),
            Readiness { built: 0, ready: true }
        );
        // No time at all: nothing is built.
        let cold = world();
        assert_eq!(cold.prepare(&bodies, PrepareBudget::new(usize::MAX, std::time::Duration::ZERO)).built, 0);
    }

    #[test]
    fn contacts_are_in_world_units() {
        let one = world();
        let half = Terrain::from_store(
            one.store().clone(),
            one.materials().clone(),
            TerrainConfig::with_voxel_size(0.5),
        )
        .unwrap();
        for (s, p) in probes().into_iter().take(24) {
            let a = ours(&one, &s, &p, 0.05);
            // The same shape, twice as small, at half the coordinates, on half-size voxels.
            let small = s.scale_dyn(Vector::splat(0.5), 16).unwrap();
            let mut q = p;
            q.translation *= 0.5;
            let mut out = Vec::new();
            half.contacts(&*small, &q, 0.025, &mut out).unwrap();
            out.retain(|m| m.manifold.points()[0].correction != Correction::Interior);
            assert_eq!(out.len(), a.len());
            for ((_, m1), m2) in a.iter().zip(&out) {
                assert!((m1.min_dist() * 0.5 - m2.manifold.min_dist()).abs() < 1e-4);
            }
        }
        let mut out = Vec::new();
        let ball = SharedShape::ball(1.0);
        let nan = Pose::translation(f32::NAN, 0.0, 0.0);
        assert!(matches!(one.contacts(&*ball.0, &nan, 0.0, &mut out), Err(QueryError::InvalidPose)));
        assert!(matches!(
            one.contacts(&*ball.0, &Pose::translation(1.0, 1.0, 1.0), -1.0, &mut out),
            Err(QueryError::InvalidParameter { what: "prediction", .. })
        ));
        let mesh =
            voxterra::parry3d::shape::TriMesh::new(vec![Vector::ZERO, Vector::X, Vector::Z], vec![[0, 1, 2]])
                .unwrap();
        assert!(matches!(
            one.contacts(&mesh, &Pose::translation(30.0, 30.0, 30.0), 0.0, &mut out),
            Err(QueryError::Narrowphase(voxterra::narrowphase::NarrowphaseError::UnsupportedShape(_)))
        ));
    }

    /// The points behind the manifolds give the manifolds back when reduced, each manifold
    /// point is one of them, and there are more of them where manifolds kept four of many.
    #[test]
    fn contact_points_reduce_to_the_manifolds() {
        let t = world();
        let (mut more, mut interior) = (0, 0);
        for (s, p) in probes() {
            for prediction in [0.0, 0.05, 0.4] {
                let mut want = Vec::new();
                t.contacts(&*s.0, &p, prediction, &mut want).unwrap();
                let (mut got, mut points) = (
                    Vec::new(),
                    vec![voxterra::TerrainContactPoint {
                        chunk: PhysicsChunkKey::new(9, 9, 9),
                        point: want.first().map_or_else(fake_point, |m| m.manifold.points()[0]),
                    }],
                );
                t.contacts_kept(
                    &*s.0,
                    &p,
                    prediction,
                    &mut TerrainContactCache::new(),
                    &mut got,
                    &mut points,
                )
                .unwrap();
                assert_eq!(got, want);
                let mut again = Vec::new();
                TerrainContactPoint::reduce(&points, &mut again);
                assert_eq!(again, want);
                for m in &want {
                    for c in m.manifold.points() {
                        assert!(points.iter().any(|q| q.chunk == m.chunk && q.point == *c));
                    }
                }
                let kept: usize = want.iter().map(|m| m.manifold.points().len()).sum();
                more += usize::from(points.len() > kept);
                interior += usize::from(points.iter().any(|q| q.point.correction == Correction::Interior));
            }
        }
        assert!(more > 5 && interior > 0, "{more} queries reduced points away, {interior} inside the solid");
    }

    fn fake_point() -> voxterra::narrowphase::ContactPoint {
        voxterra::narrowphase::ContactPoint {
            on_shape: Point3::origin(),
            on_triangle: Point3::origin(),
            normal: voxterra::core::nalgebra::Vector3::y_axis(),
            dist: 0.0,
            id: voxterra::narrowphase::FeatureId {
                triangle: 0,
                feature: voxterra::narrowphase::TriangleFeature::Face,
                part: 0,
                sub: 0,
            },
            correction: Correction::None,
        }
    }

    #[test]
    fn a_body_just_above_a_chunk_floor_touches_the_chunk_below() {
        // Ground whose surface lies a third of a voxel above y = 8, a physics chunk boundary:
        // its triangles belong to the chunks below, whose boxes end at 8.
        let mut t = Terrain::new(MaterialTable::default(), TerrainConfig::default()).unwrap();
        t.fill(&Region::new(VoxelPos::new(0, 0, 0), VoxelPos::new(16, 8, 16)).unwrap(), Voxel::full(m::ROCK))
            .unwrap();
        let top = Voxel::with_occupancy(m::ROCK, 0.4);
        t.fill(&Region::new(VoxelPos::new(0, 8, 0), VoxelPos::new(16, 9, 16)).unwrap(), top).unwrap();
        let down = voxterra::core::nalgebra::Vector3::new(0.0, -1.0, 0.0);
        let ray = voxterra::core::Ray::new(Point3::new(6.3, 20.0, 5.7), down);
        let ground = t.cast_ray(&ray, 100.0).unwrap().expect("the ground").point.y;
        assert!(ground > 8.05 && ground < 9.0, "{ground}");
        let ball = SharedShape::ball(0.5);
        let pose = Pose::translation(6.3, ground + 0.49, 5.7);
        let mut out = Vec::new();
        t.contacts(&*ball.0, &pose, 0.0, &mut out).unwrap();
        let deepest = out.iter().map(|m| m.manifold.min_dist()).fold(f32::INFINITY, f32::min);
        assert!((deepest + 0.01).abs() < 2e-3, "{deepest} in {out:?}");
        assert!(t.intersects(&*ball.0, &pose).unwrap());
    }
}

mod rays {
    use super::*;
    use voxterra::core::{BruteForceTriangles, Culling, Ray, TriangleIndex};
    use voxterra::mesher::{MeshWorkspace, Mesher, PhysicsMesh};

    /// Every chunk of the area with a surface, built from scratch.
    fn all_chunks(t: &Terrain) -> Vec<(PhysicsChunkKey, PhysicsMesh)> {
        let mesher = Mesher::new(t.materials());
        let mut out = Vec::new();
        for key in PhysicsChunkKey::range(&area()).unwrap().iter() {
            let mut mesh = PhysicsMesh::default();
            mesher
                .mesh_physics(t.store(), &key.region().unwrap(), &mut MeshWorkspace::new(), &mut mesh)
                .unwrap();
            if !mesh.triangles().is_empty() {
                out.push((key, mesh));
            }
        }
        out
    }

    /// The brute force: the closest hit over every chunk's triangles, ties to the lowest (chunk
    /// (y, z, x), triangle).
    fn brute(
        chunks: &[(PhysicsChunkKey, PhysicsMesh)],
        ray: &Ray,
        max_t: f32,
    ) -> Option<(f32, PhysicsChunkKey, u32)> {
        let mut best: Option<(f32, PhysicsChunkKey, u32)> = None;
        for (key, mesh) in chunks {
            if let Some(h) = BruteForceTriangles(mesh).cast_ray(ray, max_t, Culling::None) {
                let k = |c: PhysicsChunkKey, tr: u32| (c.y, c.z, c.x, tr);
                if best.is_none_or(|(t, c, tr)| h.t < t || (h.t == t && k(*key, h.triangle) < k(c, tr))) {
                    best = Some((h.t, *key, h.triangle));
                }
            }
        }
        best
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3))]

        #[test]
        fn rays_equal_the_brute_force(edits in proptest::collection::vec(arb_brush(), 0..3)) {
            let mut t = world();
            for b in &edits {
                t.apply_brush(b).unwrap();
                t.validate().unwrap();
            }
            let chunks = all_chunks(&t);
            let mut hits = 0;
            for i in 0..300 {
                let f = |k: u32| ((i * 7919 + k * 104_729) % 1000) as f32 / 1000.0;
                let (origin, dir) = match i % 3 {
                    // Down from above.
                    0 => (Point3::new(2.0 + f(1) * 60.0, 70.0, 2.0 + f(2) * 60.0), voxterra::core::nalgebra::Vector3::new(0.0, -1.0, 0.0)),
                    // Oblique, from outside the world.
                    1 => (Point3::new(-10.0, 60.0, f(3) * 64.0), voxterra::core::nalgebra::Vector3::new(1.0, -0.4 - f(4), 0.3 * f(5) - 0.1)),
                    // From inside the terrain (caves and rock), any direction.
                    _ => (Point3::new(4.0 + f(6) * 56.0, 4.0 + f(7) * 30.0, 4.0 + f(8) * 56.0),
                          voxterra::core::nalgebra::Vector3::new(f(9) - 0.5, f(10) - 0.5, f(11) - 0.5)),
                };
                let ray = Ray::new(origin, dir);
                let max_t = if i % 5 == 0 { 20.0 } else { 500.0 };
                let ours = t.cast_ray(&ray, max_t).unwrap().map(|h| (h.t, h.chunk, h.triangle));
                let want = brute(&chunks, &ray, max_t);
                prop_assert_eq!(ours, want, "ray {} {:?}", i, ray);
                hits += usize::from(ours.is_some());
            }
            prop_assert!(hits > 100, "{hits} hits");
        }
    }

    /// Far from the origin (a million voxels out, where f32 steps are 1/8 voxel), rays through
    /// built chunks equal the brute force over the same chunk meshes: the walk's bounds tests
    /// skip no chunk a hit lies in.
    #[test]
    fn rays_far_from_the_origin_equal_the_brute_force() {
        let near = world();
        let offset = VoxelPos::new(1 << 20, 0, -(1 << 20));
        let mut store = voxterra::store::VoxelStore::new();
        let r = area();
        let moved = Region::from_min_size(r.min() + offset.coords, r.size()).unwrap();
        store.write_box(&moved, &voxels(&near)).unwrap();
        let t = Terrain::from_store(store, MaterialTable::default(), TerrainConfig::default()).unwrap();
        let mesher = Mesher::new(t.materials());
        let chunks: Vec<(PhysicsChunkKey, PhysicsMesh)> = PhysicsChunkKey::range(&moved)
            .unwrap()
            .iter()
            .filter_map(|key| {
                let mut mesh = PhysicsMesh::default();
                mesher
                    .mesh_physics(t.store(), &key.region().unwrap(), &mut MeshWorkspace::new(), &mut mesh)
                    .unwrap();
                (!mesh.triangles().is_empty()).then_some((key, mesh))
            })
            .collect();
        let o = offset.map(|v| v as f32).coords;
        let mut hits = 0;
        // Twice: the first pass builds the chunks, the second finds them held.
        for _ in 0..2 {
            for ray in some_rays() {
                let ray = Ray::new(ray.origin + o, ray.dir);
                let ours = t.cast_ray(&ray, 500.0).unwrap().map(|h| (h.t, h.chunk, h.triangle));
                assert_eq!(ours, brute(&chunks, &ray, 500.0), "{ray:?}");
                hits += usize::from(ours.is_some());
            }
        }
        assert!(hits > 400, "{hits} hits");
    }

    fn some_rays() -> Vec<Ray> {
        (0..400)
            .map(|i: u32| {
                let f = |k: u32| ((i * 7919 + k * 104_729) % 1000) as f32 / 1000.0;
                Ray::new(
                    Point3::new(f(1) * 64.0, 40.0 + f(2) * 30.0, f(3) * 64.0),
                    voxterra::core::nalgebra::Vector3::new(f(4) - 0.5, -1.0 - f(5), f(6) - 0.5),
                )
            })
            .collect()
    }

    /// Batched rays equal single ones, on 1 thread and on 2; under a one-byte cache budget (each
    /// query builds what the cache cannot keep); on a prepared cache (the rays build nothing);
    /// and from many threads at once on one cold terrain while its cache fills.
    #[test]
    fn rays_equal_single_ones_on_any_thread_count_and_any_cache() {
        use rayon::prelude::*;
        // Scattered rays, then a camera's coherent ones (one origin, within a few degrees: cast
        // in packets), 150 of them so the last packet is partly filled.
        let mut rays = some_rays();
        let eye = Point3::new(-4.0, 60.0, -4.0);
        rays.extend((0..150).map(|i| {
            let (x, y) = ((i % 30) as f32 / 30.0, (i / 30) as f32 / 5.0);
            Ray::new(
                eye,
                voxterra::core::nalgebra::Vector3::new(0.7 + 0.1 * x, -0.8 - 0.05 * y, 0.7 + 0.05 * y),
            )
        }));
        let single = world();
        let want: Vec<_> = rays.iter().map(|r| single.cast_ray(r, 200.0).unwrap()).collect();
        assert!(want.iter().filter(|h| h.is_some()).count() > 200);
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let t = world();
            let mut hits = Vec::new();
            pool.install(|| t.cast_rays(&rays, 200.0, &mut hits)).unwrap();
            assert!(hits == want, "{threads} threads");
        }
        let mut tiny = world();
        tiny.reconfigure(TerrainConfig { cache_bytes: 1, ..tiny.config() }).unwrap();
        let got: Vec<_> = rays.iter().map(|r| tiny.cast_ray(r, 200.0).unwrap()).collect();
        assert!(got == want);
        let mut hits = Vec::new();
        tiny.cast_rays(&rays, 200.0, &mut hits).unwrap();
        assert!(hits == want);
        assert!(tiny.cache_stats().entries <= 1, "only the entry just built outlives the budget");
        let prepared = world();
        let whole =
            voxterra::core::Aabb::new(Point3::new(-16.0, -16.0, -16.0), Point3::new(80.0, 64.0, 80.0));
        assert!(prepared.prepare(&[whole], PrepareBudget::UNLIMITED).built > 0);
        let before = prepared.cache_stats().builds;
        let got: Vec<_> = rays.iter().map(|r| prepared.cast_ray(r, 200.0).unwrap()).collect();
        assert!(got == want);
        assert_eq!(prepared.cache_stats().builds, before, "a prepared region builds nothing");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(4).build().unwrap();
        let cold = world();
        let got: Vec<_> =
            pool.install(|| rays.par_iter().map(|r| cold.cast_ray(r, 200.0).unwrap()).collect());
        assert!(got == want, "queries from 4 threads filling one cache");
        // The byte budget holds while 4 threads fill and evict it; eviction changes no answer.
        let mut small = world();
        let budget = cold.cache_stats().bytes / 4;
        small.reconfigure(TerrainConfig { cache_bytes: budget, ..small.config() }).unwrap();
        let got: Vec<_> =
            pool.install(|| rays.par_iter().map(|r| small.cast_ray(r, 200.0).unwrap()).collect());
        assert!(got == want);
        let stats = small.cache_stats();
        assert!(stats.bytes <= budget && stats.evictions > 0, "{stats:?} against {budget}");
    }

    /// The nearest terrain point equals the brute force over every chunk's triangles, and says
    /// which side of the surface the point is on.
    #[test]
    fn point_projection_equals_the_brute_force() {
        use voxterra::convert::{FromParry, ToParry};
        use voxterra::parry3d::query::PointQuery;
        use voxterra::parry3d::shape::Triangle;
        let t = world();
        let chunks = all_chunks(&t);
        let (mut inside, mut outside) = (0, 0);
        for i in 0..200u32 {
            let f = |k: u32| ((i * 7919 + k * 104_729) % 1000) as f32 / 1000.0;
            let p = Point3::new(4.0 + f(1) * 56.0, 4.0 + f(2) * 40.0, 4.0 + f(3) * 56.0);
            let max = if i % 7 == 0 { 1.5 } else { 100.0 };
            let got = t.project_point(&p, max).unwrap();
            let mut best = f32::INFINITY;
            for (_, mesh) in &chunks {
                for k in 0..mesh.triangles().len() {
                    let [a, b, c] = voxterra::core::TriangleSource::triangle(mesh, k);
                    let tri = Triangle::new(a.to_parry(), b.to_parry(), c.to_parry());
                    best = best.min(
                        (Point3::from_parry(tri.project_local_point(p.to_parry(), false).point) - p).norm(),
                    );
                }
            }
            match got {
                Some(g) => {
                    assert!((g.distance - best).abs() < 1e-4, "point {i}: {} vs {best}", g.distance);
                    assert!(((g.point - p).norm() - g.distance).abs() < 1e-4);
                    let v = t.voxel(voxterra::core::VoxelPos::new(
                        p.x.floor() as i32,
                        p.y.floor() as i32,
                        p.z.floor() as i32,
                    ));
                    let solid = t.materials().is_solid(v) && v.occupancy() > 0.5;
                    if g.distance > 1.5 {
                        // Well away from the surface the voxel under the point agrees.
                        assert_eq!(g.inside, solid, "point {i} at {p:?}: {g:?}");
                    }
                    if g.inside { inside += 1 } else { outside += 1 }
                }
                None => assert!(best > max, "point {i}: nothing within {max} but the brute force has {best}"),
            }
        }
        assert!(inside > 10 && outside > 10, "{inside} inside, {outside} outside");
        assert!(matches!(
            t.project_point(&Point3::new(f32::NAN, 0.0, 0.0), 1.0),
            Err(QueryError::InvalidParameter { what: "point", .. })
        ));
        assert!(matches!(
            t.project_point(&Point3::origin(), -1.0),
            Err(QueryError::InvalidParameter { what: "max_dist", .. })
        ));
    }

    #[test]
    fn rays_are_in_world_units_and_bad_rays_are_errors() {
        let one = world();
        let half = Terrain::from_store(
            one.store().clone(),
            one.materials().clone(),
            TerrainConfig::with_voxel_size(0.5),
        )
        .unwrap();
        let down = voxterra::core::nalgebra::Vector3::new(0.0, -1.0, 0.0);
        let a = one.cast_ray(&Ray::new(Point3::new(30.5, 70.0, 20.5), down), 100.0).unwrap().unwrap();
        let b = half.cast_ray(&Ray::new(Point3::new(15.25, 35.0, 10.25), down), 50.0).unwrap().unwrap();
        assert!((a.t * 0.5 - b.t).abs() < 1e-4 && (a.point * 0.5 - b.point).norm() < 1e-4);
        assert!(a.normal.y > 0.0 && !a.material.is_air());
        assert!(matches!(
            one.cast_ray(&Ray::new(Point3::origin(), voxterra::core::nalgebra::Vector3::zeros()), 10.0),
            Err(QueryError::InvalidRay { .. })
        ));
        assert!(matches!(
            one.cast_ray(&Ray::new(Point3::new(f32::NAN, 0.0, 0.0), down), 10.0),
            Err(QueryError::InvalidRay { .. })
        ));
        assert!(matches!(
            one.cast_ray(&Ray::new(Point3::origin(), down), f32::NAN),
            Err(QueryError::InvalidParameter { what: "max_t", .. })
        ));
        // Pointing away from the world, or an unbounded ray that misses: no hit, and it ends.
        assert_eq!(
            one.cast_ray(&Ray::new(Point3::new(30.0, 70.0, 30.0), -down), f32::INFINITY).unwrap(),
            None
        );
        assert_eq!(one.cast_ray(&Ray::new(Point3::new(-50.0, 70.0, 30.0), -down), f32::MAX).unwrap(), None);
    }

    #[test]
    fn rays_find_voxels_written_past_the_first_extent() {
        let mut t = Terrain::new(MaterialTable::default(), TerrainConfig::default()).unwrap();
        let down = voxterra::core::nalgebra::Vector3::new(0.0, -1.0, 0.0);
        let from = |x: f32| Ray::new(Point3::new(x, 40.0, 4.5), down);
        assert_eq!(t.extent(), None);
        assert_eq!(t.cast_ray(&from(4.5), 100.0).unwrap(), None);
        let rock = Voxel::full(m::ROCK);
        t.fill(&Region::new(VoxelPos::new(0, 0, 0), VoxelPos::new(8, 8, 8)).unwrap(), rock).unwrap();
        assert!(t.cast_ray(&from(4.5), 100.0).unwrap().is_some());
        assert_eq!(t.cast_ray(&from(300.5), 100.0).unwrap(), None);
        t.fill(&Region::new(VoxelPos::new(296, 0, 0), VoxelPos::new(304, 20, 8)).unwrap(), rock).unwrap();
        let hit = t.cast_ray(&from(300.5), 100.0).unwrap().expect("the new box is hit");
        assert!((hit.point.y - 20.0).abs() < 1.0, "{hit:?}");
        assert!(t.extent().unwrap().contains(VoxelPos::new(303, 19, 7)));
    }
}

mod casts {
    use super::*;
    use voxterra::core::Aabb;
    use voxterra::narrowphase::{CastOptions, TriangleSet};
    use voxterra::parry3d::math::{Pose, Vector};
    use voxterra::parry3d::shape::SharedShape;

    /// The reference: the earliest cast over every chunk of the area, built from scratch.
    fn brute(t: &Terrain, shape: &SharedShape, pose: &Pose, vel: Vector, max: f32) -> Option<f32> {
        let mut best: Option<f32> = None;
        for key in PhysicsChunkKey::range(&area()).unwrap().iter() {
            let Some((mesh, tree)) = fresh_chunk(t, key) else { continue };
            let view = tree.with(&mesh);
            let set = TriangleSet::new(&mesh, &view).with_edge_flags(mesh.edge_flags());
            if let Some(h) =
                voxterra::narrowphase::cast_shape(&*shape.0, pose, vel, max, set, CastOptions::default())
                    .unwrap()
            {
                best = Some(best.map_or(h.toi, |b: f32| b.min(h.toi)));
            }
        }
        best
    }

    #[test]
    fn casts_intersections_and_overlaps() {
        let t = world();
        let shapes =
            [SharedShape::ball(1.0), SharedShape::cuboid(0.8, 1.2, 0.6), SharedShape::capsule_y(0.8, 0.6)];
        let mut hits = 0;
        for i in 0..18 {
            let s = &shapes[i % 3];
            let pose = Pose::translation(8.0 + (i * 7 % 48) as f32, 44.0, 8.0 + (i * 11 % 48) as f32);
            let vel = Vector::new(0.2 * (i % 3) as f32 - 0.2, -1.0, 0.1);
            let ours =
                t.cast_shape(&*s.0, &pose, vel, 60.0, CastOptions::default()).unwrap().map(|(_, h)| h.toi);
            let want = brute(&t, s, &pose, vel, 60.0);
            assert_eq!(ours, want, "cast {i}");
            if let Some(toi) = ours {
                hits += 1;
                // Just before the impact: no intersection; a little after: intersecting.
                let mut at = pose;
                at.translation += vel * (toi - 0.05);
                assert!(!t.intersects(&*s.0, &at).unwrap(), "cast {i} before impact");
                at.translation += vel * 0.3;
                assert!(t.intersects(&*s.0, &at).unwrap(), "cast {i} after impact");
            }
        }
        assert!(hits > 10);
        // Overlap from the masks: high in the sky nothing, deep in the ground solid.
        assert_eq!(
            t.overlap(&Aabb::new(Point3::new(10.0, 70.0, 10.0), Point3::new(12.0, 72.0, 12.0))),
            (false, false)
        );
        assert!(t.overlap(&Aabb::new(Point3::new(10.0, 1.0, 10.0), Point3::new(12.0, 3.0, 12.0))).0);
        let nan = Pose::translation(f32::NAN, 0.0, 0.0);
        assert!(matches!(
            t.cast_shape(&*shapes[0].0, &nan, Vector::Y, 1.0, CastOptions::default()),
            Err(QueryError::InvalidPose)
        ));
        assert!(matches!(
            t.cast_shape(&*shapes[0].0, &Pose::IDENTITY, Vector::Y, -1.0, CastOptions::default()),
            Err(QueryError::InvalidParameter { what: "max_toi", .. })
        ));
    }

    /// Sweeps (continuous collision, rotation included) equal the earliest sweep over every
    /// chunk's fresh mesh, and do not depend on the voxel size: the same world at half the size
    /// swept by the same motion at half the size stops at the same fraction.
    #[test]
    fn sweeps_match_every_chunk_and_scale_with_the_voxel_size() {
        use voxterra::parry3d::math::Rotation;
        use voxterra::parry3d::query::sweep_toi::Sweep;
        let t = world();
        let half = Terrain::from_store(
            t.store().clone(),
            t.materials().clone(),
            TerrainConfig::with_voxel_size(0.5),
        )
        .unwrap();
        let shapes =
            [SharedShape::ball(0.7), SharedShape::cuboid(1.2, 0.1, 0.8), SharedShape::capsule_y(0.9, 0.3)];
        let mut hits = 0;
        for i in 0..18 {
            let s = &shapes[i % 3];
            let (x, z) = (8.0 + (i * 7 % 48) as f32, 8.0 + (i * 11 % 48) as f32);
            let turn = Rotation::from_rotation_x(0.3 * i as f32) * Rotation::from_rotation_z(0.2);
            let start = Pose::from_parts(Vector::new(x, 44.0, z), turn);
            let end =
                Pose::from_parts(Vector::new(x + 3.0, -2.0, z - 1.0), Rotation::from_rotation_y(1.1) * turn);
            let sweep = Sweep::from_poses(&start, &end, Vector::ZERO);
            let ours = t.sweep_shape(&*s.0, &sweep, 1.0, 0.01).unwrap().map(|(_, h)| h.fraction);
            let mut want: Option<f32> = None;
            for key in PhysicsChunkKey::range(&area()).unwrap().iter() {
                let Some((mesh, tree)) = fresh_chunk(&t, key) else { continue };
                let view = tree.with(&mesh);
                let set = TriangleSet::new(&mesh, &view).one_sided();
                if let Some(h) = voxterra::narrowphase::sweep_shape(&*s.0, &sweep, 1.0, 0.01, set).unwrap() {
                    want = Some(want.map_or(h.fraction, |w| w.min(h.fraction)));
                }
            }
            // Each chunk's search stops at the best fraction so far: the root finder's last step
            // may differ by a hair.
            let same =
                |a: Option<f32>, b: Option<f32>| a.zip(b).map_or(a == b, |(a, b)| (a - b).abs() < 1e-4);
            assert!(same(ours, want), "sweep {i}: {ours:?}, chunk by chunk {want:?}");
            hits += usize::from(ours.is_some());
            let scaled = Sweep { c1: sweep.c1 * 0.5, c2: sweep.c2 * 0.5, ..sweep };
            let small = s.0.scale_dyn(Vector::splat(0.5), 16).unwrap();
            let at_half = half.sweep_shape(&*small, &scaled, 1.0, 0.005).unwrap();
            let at_half = at_half.map(|(_, h)| h.fraction);
            assert!(same(ours, at_half), "sweep {i}: {ours:?} at voxel size 1, {at_half:?} at 0.5");
        }
        assert!(hits > 12);
        let nan =
            Sweep { c2: Vector::new(0.0, f32::NAN, 0.0), ..Sweep::constant(&Pose::IDENTITY, Vector::ZERO) };
        assert!(matches!(t.sweep_shape(&*shapes[0].0, &nan, 1.0, 0.01), Err(QueryError::InvalidPose)));
        let still = Sweep::constant(&Pose::IDENTITY, Vector::ZERO);
        assert!(matches!(
            t.sweep_shape(&*shapes[0].0, &still, 1.0, -1.0),
            Err(QueryError::InvalidParameter { what: "linear slop", .. })
        ));
    }
}

mod render {
    use super::*;
    use std::collections::BTreeMap;
    use voxterra::mesher::{Mesher, RenderMesh};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]

        /// A render-mesh map kept current only by `take_render_updates` equals a fresh render
        /// of the whole world after any edits (and undo).
        #[test]
        fn render_updates_keep_meshes_current(brushes in proptest::collection::vec(arb_brush(), 1..5)) {
            let mut t = world();
            let mesher = Mesher::new(t.materials());
            let mut map: BTreeMap<voxterra::core::StoreChunkKey, RenderMesh> = t
                .render_meshes_of(&mesher, &t.render_chunks())
                .unwrap()
                .into_iter()
                .collect();
            prop_assert!(t.take_render_updates(&mesher).unwrap().is_empty());
            // A slot carved through the ground ending exactly at a chunk border (x = 32): the
            // chunk beyond's border cells read it as padding, where the surface crosses.
            t.fill(&Region::from_min_size(VoxelPos::new(26, 0, 10), [6, 48, 6]).unwrap(), Voxel::AIR).unwrap();
            for b in &brushes {
                t.apply_brush(b).unwrap();
                t.validate().unwrap();
            }
            t.undo().ok();
            for (k, m) in t.take_render_updates(&mesher).unwrap() {
                map.insert(k, m);
            }
            let fresh: BTreeMap<voxterra::core::StoreChunkKey, RenderMesh> = t
                .render_meshes_of(&mesher, &t.render_chunks())
                .unwrap()
                .into_iter()
                .collect();
            for (k, m) in &fresh {
                // A chunk never meshed counts as empty.
                let held = map.get(k).cloned().unwrap_or_default();
                prop_assert!(held == *m, "chunk {k:?} is stale: held {} triangles, fresh {}",
                    held.indices.len() / 3, m.indices.len() / 3);
            }
            for (k, m) in &map {
                if !fresh.contains_key(k) {
                    prop_assert!(m.indices.is_empty(), "chunk {k:?} kept a surface that is gone");
                }
            }
        }
    }
}

mod deltas {
    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(8))]

        /// A client that replays the server's deltas (all at once, or in two installments, with
        /// undo and redo among the edits) ends with the server's voxels and masks.
        #[test]
        fn replicas_converge(brushes in proptest::collection::vec(arb_brush(), 1..6), split in 0usize..6) {
            let mut server = world();
            let mut client = world();
            for (i, b) in brushes.iter().enumerate() {
                server.apply_brush(b).unwrap();
                if i == 1 {
                    server.undo().ok();
                    server.redo().ok();
                }
            }
            let all = server.edits_since(0);
            let k = split.min(all.len());
            for d in &all[..k] {
                client.apply_delta(d).unwrap();
            }
            for d in server.edits_since(k as u64) {
                client.apply_delta(&d).unwrap();
            }
            prop_assert!(voxels(&client) == voxels(&server));
            prop_assert_eq!(client.masks().chunks(), server.masks().chunks());
        }
    }

    /// Hills raised in four separate places, each a delta.
    fn four_edits(server: &mut Terrain) -> Vec<Vec<u8>> {
        let from = server.sequence();
        for (i, x) in [10.0f32, 24.0, 38.0, 52.0].into_iter().enumerate() {
            let op = BrushOp::Add(if i % 2 == 0 { m::ROCK } else { m::BRICK });
            let shape = BrushShape::Sphere { center: Point3::new(x, 30.0, 30.0), radius: 4.0 };
            server.apply_brush(&Brush { shape, op }).unwrap();
        }
        server.edits_since(from)
    }

    fn refused(t: &mut Terrain, delta: &[u8]) -> voxterra::DeltaError {
        let before = (voxels(t), t.sequence());
        match t.apply_delta(delta) {
            Err(e) => {
                assert!((voxels(t), t.sequence()) == before, "a refused delta changed the replica");
                e
            }
            other => panic!("expected a refused delta, got {other:?}"),
        }
    }

    /// A replica applies only the delta that follows its state: skipped, reordered and repeated
    /// deltas are refused with their variant and change nothing; in order, all apply.
    #[test]
    fn out_of_order_deltas_are_refused() {
        use voxterra::DeltaError::{Gap, Stale};
        let mut server = world();
        let all = four_edits(&mut server);
        assert_eq!(all.len(), 4);
        let mut client = world();
        // Skipped: the second before the first.
        assert!(matches!(refused(&mut client, &all[1]), Gap { delta: 1, expected: 0 }));
        // Reordered: newest first.
        for (k, d) in all.iter().enumerate().rev().take(3) {
            let k = k as u64;
            assert!(matches!(refused(&mut client, d), Gap { delta, expected: 0 } if delta == k));
        }
        client.apply_delta(&all[0]).unwrap();
        // Repeated.
        assert!(matches!(refused(&mut client, &all[0]), Stale { delta: 0, expected: 1 }));
        assert!(matches!(refused(&mut client, &all[3]), Gap { delta: 3, expected: 1 }));
        for d in &all[1..] {
            client.apply_delta(d).unwrap();
        }
        assert_eq!(client.sequence(), 4);
        assert!(voxels(&client) == voxels(&server));
        // Replayed backwards, every delta is refused and the replica stays the server's copy.
        for d in all.iter().rev() {
            assert!(matches!(refused(&mut client, d), Stale { .. }));
        }
        assert!(voxels(&client) == voxels(&server));
    }

    /// A replica made from the source's world at some sequence (here its final voxels, told they
    /// are the state after no edit) applies every delta in order, including those whose voxels it
    /// holds already: each still takes its number, so the replica can relay all of them.
    #[test]
    fn deltas_already_in_place_still_advance_the_sequence() {
        let mut server = world();
        let all = four_edits(&mut server);
        let mut replica =
            Terrain::from_store(server.store().clone(), server.materials().clone(), TerrainConfig::default())
                .unwrap();
        replica.set_sequence(0);
        for d in &all {
            let (report, _) = replica.apply_delta(d).unwrap();
            assert!(report.dirty.is_none(), "the edits are disjoint: the final voxels hold each already");
        }
        assert_eq!(replica.sequence(), server.sequence());
        assert!(voxels(&replica) == voxels(&server));
        let relayed = replica.edits_since(0);
        assert_eq!(relayed.len(), all.len());
        let mut client = world();
        for d in &relayed {
            client.apply_delta(d).unwrap();
        }
        client.validate().unwrap();
        replica.validate().unwrap();
        assert!(voxels(&client) == voxels(&server));
    }

    #[test]
    fn corrupt_deltas_are_refused_and_change_nothing() {
        let mut server = voxterra::fuzz::delta_target();
        let from = server.sequence();
        server
            .apply_brush(&Brush {
                shape: BrushShape::Sphere { center: Point3::new(20.0, 4.0, 20.0), radius: 3.0 },
                op: BrushOp::Subtract,
            })
            .unwrap();
        let delta = server.edits_since(from).pop().unwrap();
        // Every single-byte flip and every truncation: a typed error, nothing changed (the
        // fuzz body checks the terrain).
        for i in 0..delta.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut bad = delta.clone();
                bad[i] ^= flip;
                let mut t = voxterra::fuzz::delta_target();
                assert!(
                    matches!(t.apply_delta(&bad), Err(voxterra::DeltaError::Format(_))),
                    "flip {flip:#x} at {i} accepted"
                );
                voxterra::fuzz::check_apply_delta(&bad);
            }
        }
        for len in 0..delta.len() {
            voxterra::fuzz::check_apply_delta(&delta[..len]);
            assert!(matches!(
                voxterra::fuzz::delta_target().apply_delta(&delta[..len]),
                Err(voxterra::DeltaError::Format(_))
            ));
        }
        // The intact delta applies, and matches the server.
        let mut client = voxterra::fuzz::delta_target();
        let (report, seq) = client.apply_delta(&delta).unwrap();
        assert_eq!(seq, from);
        assert!(report.dirty.is_some());
    }

    #[test]
    fn the_fuzz_corpus_replays() {
        voxterra_test_support::replay_corpus("apply_delta", voxterra::fuzz::check_apply_delta);
    }
}

#[test]
fn the_revision_moves_on_exactly_when_voxels_change() {
    let mut t = world();
    let other = world();
    assert_ne!(t.revision(), other.revision(), "two terrains never share a revision");
    let r0 = t.revision();
    let carve = |c: [f32; 3]| Brush {
        shape: BrushShape::Sphere { center: Point3::new(c[0], c[1], c[2]), radius: 3.0 },
        op: BrushOp::Subtract,
    };
    // Carving air changes no voxel: the revision stays.
    t.apply_brush(&carve([32.0, 200.0, 32.0])).unwrap();
    assert_eq!(t.revision(), r0);
    // A carve into the ground, its undo and its redo each change voxels.
    t.apply_brush(&carve([32.0, 20.0, 32.0])).unwrap();
    let r1 = t.revision();
    assert_ne!(r1, r0);
    t.undo().unwrap();
    t.validate().unwrap();
    let r2 = t.revision();
    assert!(r2 != r1 && r2 != r0, "an undo restoring old voxels is still a new revision");
    t.redo().unwrap();
    t.validate().unwrap();
    assert!(t.revision() != r2 && t.revision() != r1);
}
