//! The terrain collider against voxterra's own calls (manifolds, contacts, casts, rays, in either
//! order of the pair), warm-start data carried by feature ids, and whole simulations: bodies on
//! live-edited terrain never fall through, sleeping bodies wake when the ground under them goes,
//! a box sliding over chunk seams on flat ground never sees a ghost normal, and two runs agree
//! bit for bit.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use rapier3d::parry::query::{ContactManifold, PersistentQueryDispatcher, QueryDispatcher, ShapeCastOptions};
use rapier3d::prelude::*;
use voxterra::TerrainConfig;
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use voxterra::core::{Ray as VRay, Region, Voxel, VoxelPos, materials};
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain};
use voxterra_rapier::{RapierTerrain, SharedTerrain, TerrainShape, dispatcher};

fn terrain() -> Terrain {
    Terrain::generate(&GenParams::new(3, [64, 48, 64]), TerrainConfig::default()).unwrap()
}

fn ground_at(t: &Terrain, x: f32, z: f32) -> f32 {
    let down = VRay::new(Point3::new(x, 80.0, z), -Vector3::y());
    t.cast_ray(&down, 200.0).unwrap().unwrap().point.y
}

fn shapes() -> Vec<SharedShape> {
    vec![
        SharedShape::ball(0.6),
        SharedShape::cuboid(0.7, 0.4, 0.5),
        SharedShape::capsule_y(0.5, 0.4),
        SharedShape::convex_hull(&[
            Vector::new(-0.8, 0.0, 0.0),
            Vector::new(0.7, 0.1, 0.2),
            Vector::new(0.0, 0.6, 0.0),
            Vector::new(0.1, -0.5, 0.3),
            Vector::new(0.0, 0.2, 0.7),
            Vector::new(0.3, 0.0, -0.6),
        ])
        .unwrap(),
    ]
}

/// A rapier world over a terrain collider: the sets, the pipeline's state, and a step that
/// prepares the terrain first, as a game's frame loop does.
struct Sim {
    ground: RapierTerrain,
    bodies: RigidBodySet,
    colliders: ColliderSet,
    narrow_phase: NarrowPhase,
    broad_phase: DefaultBroadPhase,
    islands: IslandManager,
    soft_bodies: SoftBodySet,
    pipeline: PhysicsPipeline,
    joints: (ImpulseJointSet, MultibodyJointSet, CCDSolver),
    params: IntegrationParameters,
}

impl Sim {
    fn new(shared: &SharedTerrain, ground_friction: f32) -> Self {
        let mut colliders = ColliderSet::new();
        let ground =
            RapierTerrain::insert_with(shared.clone(), &mut colliders, |b| b.friction(ground_friction));
        Sim {
            ground,
            bodies: RigidBodySet::new(),
            colliders,
            narrow_phase: NarrowPhase::with_query_dispatcher(dispatcher()),
            broad_phase: DefaultBroadPhase::new(),
            islands: IslandManager::new(),
            soft_bodies: SoftBodySet::new(),
            pipeline: PhysicsPipeline::new(),
            joints: (ImpulseJointSet::new(), MultibodyJointSet::new(), CCDSolver::new()),
            params: IntegrationParameters::default(),
        }
    }

    fn add(
        &mut self,
        body: RigidBodyBuilder,
        collider: ColliderBuilder,
    ) -> (RigidBodyHandle, ColliderHandle) {
        let h = self.bodies.insert(body);
        (h, self.colliders.insert_with_parent(collider, h, &mut self.bodies))
    }

    fn apply_brush(&mut self, brush: &Brush) {
        self.ground.apply_brush(brush, &mut self.bodies, &mut self.colliders).unwrap();
    }

    fn step(&mut self) {
        self.ground
            .prepare(&self.bodies, &self.colliders, &self.params)
            .expect("a terrain held whole pages nothing");
        let (joints, multibody, ccd) = &mut self.joints;
        self.pipeline.step(
            Vector::new(0.0, -9.81, 0.0),
            &self.params,
            &mut self.islands,
            &mut self.broad_phase,
            &mut self.narrow_phase,
            &mut self.bodies,
            &mut self.colliders,
            joints,
            multibody,
            &mut self.soft_bodies,
            ccd,
            &(),
            &(),
        );
    }
}

/// Manifolds, contacts and intersection tests through the dispatcher equal the terrain's own
/// contacts, with the terrain as the first shape and as the second, the terrain collider moved.
#[test]
fn dispatcher_answers_equal_the_terrains() {
    let shared = SharedTerrain::new(terrain());
    let ts = TerrainShape::new(shared.clone());
    let d = dispatcher();
    let frame = Pose::new(Vector::new(3.0, -2.0, 1.0), Vector::new(0.0, 0.3, 0.0));
    let mut checked = 0;
    for (i, s) in shapes().iter().enumerate() {
        for k in 0..12 {
            let (x, z) = (6.0 + k as f32 * 4.5, 10.0 + i as f32 * 11.0);
            let t = shared.read();
            let local = Isometry3::from_parts(
                Vector3::new(x, ground_at(&t, x, z) + 0.3 - 0.1 * (k % 3) as f32, z).into(),
                UnitQuaternion::from_euler_angles(0.2 * k as f32, 0.1, 0.0),
            )
            .to_parry();
            drop(t);
            let world = frame * local;
            // Terrain first: the shape's pose in the terrain's frame is `pos12`.
            let pos12 = frame.inv_mul(&world);
            // Terrain second: it is the inverse of `pos21`.
            let pos21 = world.inv_mul(&frame);
            for (flipped, pose) in [(false, pos12), (true, pos21.inverse())] {
                // The dispatcher's manifolds reach a quarter past the prediction (see the test of
                // kept manifolds).
                let mut want = Vec::new();
                shared.write().contacts(&**s, &pose, 0.05 * 1.25, &mut want).unwrap();
                let mut got: Vec<ContactManifold<(), ()>> = Vec::new();
                if flipped {
                    d.contact_manifolds(&pos21, &**s, &ts, 0.05, &mut got, &mut None).unwrap();
                } else {
                    d.contact_manifolds(&pos12, &ts, &**s, 0.05, &mut got, &mut None).unwrap();
                }
                let n_terrain = |m: &ContactManifold<(), ()>| if flipped { m.local_n2 } else { m.local_n1 };
                let p_terrain = |c: &rapier3d::parry::query::TrackedContact<()>| {
                    if flipped { (c.local_p2, c.local_p1) } else { (c.local_p1, c.local_p2) }
                };
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert_eq!(g.points.len(), w.manifold.points().len());
                    assert!((n_terrain(g) - w.manifold.normal.to_parry()).length() < 1e-6);
                    for (pg, pw) in g.points.iter().zip(w.manifold.points()) {
                        let (on_terrain, on_shape) = p_terrain(pg);
                        assert_eq!(on_terrain, pw.on_triangle.to_parry());
                        assert!((pose * on_shape - pw.on_shape.to_parry()).length() < 1e-5);
                        assert_eq!(pg.dist, pw.dist);
                    }
                }
                checked += want.len();
                let mut want = Vec::new();
                shared.write().contacts(&**s, &pose, 0.05, &mut want).unwrap();
                let deepest = want.iter().map(|m| m.manifold.min_dist()).fold(f32::INFINITY, f32::min);
                let (c, hit) = if flipped {
                    (
                        d.contact(&pos21, &**s, &ts, 0.05).unwrap().map(|c| (c.dist, c.point2)),
                        d.intersection_test(&pos21, &**s, &ts).unwrap().intersecting,
                    )
                } else {
                    (
                        d.contact(&pos12, &ts, &**s, 0.05).unwrap().map(|c| (c.dist, c.point1)),
                        d.intersection_test(&pos12, &ts, &**s).unwrap().intersecting,
                    )
                };
                assert_eq!(c.map(|c| c.0), (!want.is_empty()).then_some(deepest));
                assert!(c.is_none_or(|c| {
                    want.iter().flat_map(|m| m.manifold.points()).any(|p| p.on_triangle.to_parry() == c.1)
                }));
                assert_eq!(hit, deepest <= 0.0, "intersection test");
            }
        }
    }
    assert!(checked > 30, "{checked} manifolds compared");
    // Pairs without the terrain go on to parry.
    let ball = SharedShape::ball(1.0);
    assert!(d.intersection_test(&Pose::translation(1.5, 0.0, 0.0), &*ball, &*ball).unwrap().intersecting);
}

/// Data attached to contacts survives the next call when their features persist (warm start).
#[test]
fn contact_data_follows_feature_ids() {
    let shared = SharedTerrain::new(terrain());
    let ts = TerrainShape::new(shared.clone());
    let y = ground_at(&shared.read(), 30.0, 30.0);
    let cube = SharedShape::cuboid(0.5, 0.5, 0.5);
    let d = dispatcher();
    let mut manifolds: Vec<ContactManifold<(), f32>> = Vec::new();
    let pose = Pose::translation(30.0, y + 0.45, 30.0);
    d.contact_manifolds(&pose, &ts, &*cube, 0.05, &mut manifolds, &mut None).unwrap();
    let n: usize = manifolds.iter().map(|m| m.points.len()).sum();
    assert!(n >= 3, "a box resting on the ground has its corners: {n}");
    for m in &mut manifolds {
        for (i, p) in m.points.iter_mut().enumerate() {
            p.data = 1.0 + i as f32;
        }
    }
    let nudged = Pose::translation(30.0, y + 0.449, 30.0);
    d.contact_manifolds(&nudged, &ts, &*cube, 0.05, &mut manifolds, &mut None).unwrap();
    let carried = manifolds.iter().flat_map(|m| &m.points).filter(|p| p.data > 0.0).count();
    assert!(carried >= 3, "{carried} of the contacts kept their data");
}

/// The deepest contact of manifolds, with the terrain first or second.
fn deepest<C>(ms: &[ContactManifold<(), C>]) -> f32 {
    ms.iter().flat_map(|m| &m.points).map(|c| c.dist).fold(f32::INFINITY, f32::min)
}

/// Contact points in a form that compares exactly.
fn points<C>(ms: &[ContactManifold<(), C>]) -> Vec<[u32; 7]> {
    let bits = |v: Vector| [v.x.to_bits(), v.y.to_bits(), v.z.to_bits()];
    let mut out = Vec::new();
    for m in ms {
        for c in &m.points {
            let (a, b) = (bits(c.local_p1), bits(c.local_p2));
            out.push([a[0], a[1], a[2], b[0], b[1], b[2], c.dist.to_bits()]);
        }
    }
    out
}

/// A pair that moves less than a quarter of the prediction between calls keeps its points: its
/// deepest contact stays the fresh query's, within what the curvature of the terrain under a
/// moved point allows. Moved further, or after an edit under the shape, the pair's manifolds are
/// the fresh query's exactly.
#[test]
fn kept_manifolds_agree_with_fresh_ones_and_edits_renew_them() {
    let shared = SharedTerrain::new(terrain());
    let ts = TerrainShape::new(shared.clone());
    let d = dispatcher();
    let prediction = 0.08;
    let (mut compared, mut moved_not_queried) = (0, 0);
    for (i, s) in shapes().iter().enumerate() {
        for k in 0..10 {
            let (x, z) = (7.0 + k as f32 * 5.0, 9.0 + i as f32 * 12.0);
            let y = ground_at(&shared.read(), x, z);
            let place = |y0: f32, dy: f32, dx: f32, turn: f32| {
                Isometry3::from_parts(
                    Vector3::new(x + dx, y0 + dy, z).into(),
                    UnitQuaternion::from_euler_angles(0.3 * k as f32, turn, 0.1),
                )
                .to_parry()
            };
            // Lowered onto the ground, as a body rests: its deepest contact a few millimetres
            // from touching.
            let mut y0 = y + 1.5;
            let mut dist = f32::INFINITY;
            for _ in 0..4 {
                let mut ms: Vec<ContactManifold<(), ()>> = Vec::new();
                d.contact_manifolds(&place(y0, 0.0, 0.0, 0.0), &ts, &**s, 2.0, &mut ms, &mut None).unwrap();
                dist = deepest(&ms);
                if !(-1.0..=2.0).contains(&dist) {
                    break;
                }
                y0 -= dist - 0.004 * (k % 3) as f32;
            }
            if !(-0.01..=0.02).contains(&dist) {
                // Under an overhang or on a cliff: not a place to rest.
                continue;
            }
            let at = |dy: f32, dx: f32, turn: f32| place(y0, dy, dx, turn);
            let a = at(0.0, 0.0, 0.0);
            for flipped in [false, true] {
                let call = |pose: &Pose, ms: &mut Vec<ContactManifold<(), ()>>, ws: &mut Option<_>| {
                    if flipped {
                        d.contact_manifolds(&pose.inverse(), &**s, &ts, prediction, ms, ws).unwrap();
                    } else {
                        d.contact_manifolds(pose, &ts, &**s, prediction, ms, ws).unwrap();
                    }
                };
                let fresh = |pose: &Pose| {
                    let mut ms = Vec::new();
                    call(pose, &mut ms, &mut None);
                    ms
                };
                // Moved a little (translation and turn within a quarter of the prediction): kept.
                let (mut ms, mut ws) = (Vec::new(), None);
                call(&a, &mut ms, &mut ws);
                let reach = {
                    let b = s.compute_local_bounding_sphere();
                    b.center.length() + b.radius
                };
                let b = at(-0.006, 0.008, 0.004 / reach);
                call(&b, &mut ms, &mut ws);
                let (kept, renewed) = (deepest(&ms), deepest(&fresh(&b)));
                // Kept points moved with the shape differ from the fresh query's in their last bits.
                moved_not_queried += usize::from(points(&ms) != points(&fresh(&b)));
                if renewed <= prediction {
                    assert!(
                        (kept - renewed).abs() < 5e-4,
                        "shape {i} at {k}: kept {kept} against fresh {renewed}"
                    );
                    compared += 1;
                }
                // Moved past the prediction: the fresh query.
                let c = at(0.03, 0.0, 0.0);
                call(&c, &mut ms, &mut ws);
                assert_eq!(points(&ms), points(&fresh(&c)));
                // An edit under the shape, which does not move: the fresh query.
                let mut t = shared.write();
                let hill = BrushShape::Sphere { center: Point3::new(x, y - 1.0, z), radius: 1.6 };
                let r = t.apply_brush(&Brush { shape: hill, op: BrushOp::Add(materials::ROCK) }).unwrap();
                assert!(r.dirty.is_some(), "the hill changes voxels");
                drop(t);
                call(&c, &mut ms, &mut ws);
                assert_eq!(points(&ms), points(&fresh(&c)));
                shared.write().undo().unwrap();
            }
        }
    }
    assert!(compared > 30, "{compared} kept manifolds compared");
    assert!(moved_not_queried > 15, "{moved_not_queried} pairs kept their points");
}

/// rapier's query pipeline: ray casts, shape casts and point projections against the terrain
/// collider equal the terrain's own answers.
#[test]
fn query_pipeline_rays_and_shape_casts() {
    let shared = SharedTerrain::new(terrain());
    let mut sim = Sim::new(&shared, 0.5);
    // One empty step fills the broad phase's tree.
    sim.step();
    let ground = &sim.ground;
    let q = sim.broad_phase.as_query_pipeline(
        sim.narrow_phase.query_dispatcher(),
        &sim.bodies,
        &sim.colliders,
        QueryFilter::default(),
    );
    let mut hits = 0;
    for i in 0..100 {
        let f = |k: u32| ((i * 7919 + k * 104_729) % 1000) as f32 / 1000.0;
        let origin = Point3::new(f(1) * 64.0, 50.0, f(2) * 64.0);
        let dir = Vector3::new(f(3) - 0.5, -1.0, f(4) - 0.5);
        let want = shared.read().cast_ray(&VRay::new(origin, dir), 100.0).unwrap();
        let got = q.cast_ray_and_get_normal(&VRay::new(origin, dir).to_parry(), 100.0, true);
        match (got, want) {
            (Some((h, g)), Some(w)) => {
                assert_eq!(h, ground.collider());
                assert!((g.time_of_impact - w.t).abs() < 1e-5);
                assert!((g.normal - w.normal.to_parry()).length() < 1e-5);
                hits += 1;
            }
            (None, None) => {}
            (g, w) => panic!("ray {i}: {g:?} vs {w:?}"),
        }
        // A ball cast down.
        let ball = Ball::new(0.5);
        let pose = Pose::translation(origin.x, origin.y, origin.z);
        let want = shared.read().cast_shape(&ball, &pose, dir.to_parry(), 100.0, Default::default()).unwrap();
        let got =
            q.cast_shape(&pose, dir.to_parry(), &ball, ShapeCastOptions::with_max_time_of_impact(100.0));
        assert_eq!(got.map(|g| g.1.time_of_impact), want.map(|w| w.1.toi), "cast {i}");
        if let Some((_, g)) = got {
            let w = want.unwrap().1;
            let on_triangle = w.on_triangle.to_parry();
            assert!((g.witness1 - on_triangle).length() < 1e-3, "{:?} vs {on_triangle:?}", g.witness1);
        }
    }
    assert!(hits > 80);
    // A point above the ground projects down onto it, outside; one in the rock is inside.
    let y = ground_at(&shared.read(), 20.0, 20.0);
    let above = q.project_point(Vector::new(20.0, y + 2.0, 20.0), 100.0, true).unwrap();
    assert!(!above.1.is_inside && (above.1.point.y - y).abs() < 0.6);
    let below = q.project_point(Vector::new(20.0, y - 3.0, 20.0), 100.0, true).unwrap();
    assert!(below.1.is_inside);
}

/// A scene: bodies dropped on the terrain, rapier stepping at 60 Hz, craters dug under them and a
/// hill raised elsewhere while they rest. Returns the final poses' bits and the bodies found
/// under the surface (fallen through).
/// Also returns how many are at rest (asleep or nearly still).
fn simulate(bodies_n: usize, frames: usize) -> (Vec<[u32; 7]>, usize, usize) {
    let shared = SharedTerrain::new(terrain());
    let mut sim = Sim::new(&shared, 0.5);
    let kinds = shapes();
    let mut handles = Vec::new();
    for i in 0..bodies_n {
        let (x, z) = (8.0 + (i % 8) as f32 * 6.5, 8.0 + (i / 8 % 8) as f32 * 6.5);
        let y = ground_at(&shared.read(), x, z) + 3.0 + (i / 64) as f32 * 2.5;
        let body = RigidBodyBuilder::dynamic().translation(Vector::new(x, y, z)).rotation(Vector::new(
            0.3 * i as f32,
            0.0,
            0.1,
        ));
        handles.push(sim.add(body, ColliderBuilder::new(kinds[i % kinds.len()].clone())).0);
    }
    for frame in 0..frames {
        if frame > 0 && frame % 30 == 0 {
            let target = sim.bodies[handles[(frame / 30 * 7) % handles.len()]].translation();
            let crater = Brush {
                shape: BrushShape::Sphere {
                    center: Point3::new(target.x, target.y - 1.0, target.z),
                    radius: 3.0,
                },
                op: BrushOp::Subtract,
            };
            sim.apply_brush(&crater);
            // A hill raised where no body is: rock grown around a body would swallow it.
            let spot =
                (0..64).map(|k| (4.0 + (k * 37 % 56) as f32, 4.0 + (k * 23 % 56) as f32)).find(|&(x, z)| {
                    handles.iter().all(|&h| {
                        let p = sim.bodies[h].translation();
                        (p.x - x).hypot(p.z - z) > 5.0
                    })
                });
            if let Some((x, z)) = spot {
                let center = Point3::new(x, ground_at(&shared.read(), x, z), z);
                sim.apply_brush(&Brush {
                    shape: BrushShape::Sphere { center, radius: 2.0 },
                    op: BrushOp::Add(materials::ROCK),
                });
            }
        }
        sim.step();
    }
    let (bodies, colliders) = (&sim.bodies, &sim.colliders);
    let t = shared.read();
    let mut fallen = 0;
    let mut asleep = 0;
    let mut poses = Vec::new();
    for &h in &handles {
        let b = &bodies[h];
        let p = b.translation();
        // Fallen through: no surface above-and-below order — the ground right above the body.
        let up = VRay::new(Point3::from_parry(p), Vector3::y());
        let below_ground = t.cast_ray(&up, 100.0).unwrap().is_some_and(|hit| {
            hit.normal.y < 0.0
                && t.project_point(&Point3::from_parry(p), 100.0)
                    .unwrap()
                    .is_some_and(|pr| pr.inside && pr.distance > 0.3)
        });
        if below_ground || p.y < -5.0 {
            eprintln!(
                "fell through: {h:?} at {p:?}, shape {:?}",
                colliders[b.colliders()[0]].shape().shape_type()
            );
        }
        fallen += usize::from(below_ground || p.y < -5.0);
        asleep += usize::from(b.is_sleeping() || b.linvel().length() < 0.1);
        let r = b.rotation();
        poses.push([p.x, p.y, p.z, r.x, r.y, r.z, r.w].map(f32::to_bits));
    }
    (poses, fallen, asleep)
}

/// Bodies on edited terrain: none falls through, most come to rest, and a second run is identical.
#[test]
fn bodies_on_edited_terrain_never_fall_through_and_runs_agree() {
    let (a, fallen, asleep) = simulate(48, 300);
    assert_eq!(fallen, 0);
    assert!(asleep > 10, "{asleep} at rest");
    let (b, _, _) = simulate(48, 300);
    assert!(a == b, "two runs differ");
}

/// A sleeping body wakes and falls when the ground under it is dug away. The ground is flat: on
/// the generated world's curved ground rapier 0.36 keeps a box rocking (awake) on a TriMesh of
/// the same surface too.
#[test]
fn a_crater_wakes_the_body_resting_over_it() {
    let mut t = Terrain::new(voxterra::core::MaterialTable::default(), TerrainConfig::default()).unwrap();
    let floor = Region::new(VoxelPos::new(0, 0, 0), VoxelPos::new(64, 12, 64)).unwrap();
    t.fill(&floor, Voxel::new(materials::ROCK, 255)).unwrap();
    let shared = SharedTerrain::new(t);
    let mut sim = Sim::new(&shared, 0.5);
    let y = ground_at(&shared.read(), 30.0, 30.0);
    let (h, _) = sim.add(
        RigidBodyBuilder::dynamic().translation(Vector::new(30.0, y + 0.5, 30.0)),
        ColliderBuilder::cuboid(0.5, 0.5, 0.5),
    );
    (0..240).for_each(|_| sim.step());
    assert!(sim.bodies[h].is_sleeping(), "the box settles and sleeps");
    let rest = sim.bodies[h].translation().y;
    sim.apply_brush(&Brush {
        shape: BrushShape::Sphere { center: Point3::new(30.0, y, 30.0), radius: 4.0 },
        op: BrushOp::Subtract,
    });
    (0..120).for_each(|_| sim.step());
    let now = sim.bodies[h].translation().y;
    assert!(now < rest - 2.0, "it fell into the crater: {now} vs {rest}");
}

/// A box slid across flat ground over many chunk seams: every contact normal is the floor's.
#[test]
fn a_box_sliding_over_chunk_seams_sees_no_ghost_normal() {
    let mut t = Terrain::new(voxterra::core::MaterialTable::default(), TerrainConfig::default()).unwrap();
    let floor = Region::new(VoxelPos::new(0, 0, 0), VoxelPos::new(96, 8, 24)).unwrap();
    t.fill(&floor, Voxel::new(materials::ROCK, 255)).unwrap();
    let shared = SharedTerrain::new(t);
    let y = ground_at(&shared.read(), 10.0, 10.0);
    let mut sim = Sim::new(&shared, 0.0);
    let (h, co) = sim.add(
        RigidBodyBuilder::dynamic()
            .translation(Vector::new(4.0, y + 0.5, 12.0))
            .linvel(Vector::new(12.0, 0.0, 0.0)),
        ColliderBuilder::cuboid(0.5, 0.5, 0.5).friction(0.0),
    );
    let mut normals = 0;
    for _ in 0..300 {
        sim.step();
        let (ground, bodies) = (&sim.ground, &sim.bodies);
        if let Some(pair) = sim.narrow_phase.contact_pair(ground.collider(), co) {
            // Both what the dispatcher made and what the solver sees (rapier merges manifolds of
            // one normal into clusters).
            for m in pair.manifolds().iter().chain(pair.solver_manifolds()) {
                if !m.points.is_empty() || !m.data.solver_contacts.is_empty() {
                    let n = if pair.collider1 == ground.collider() { m.data.normal } else { -m.data.normal };
                    assert!(n.y > 0.9998, "ghost normal {n:?} at x = {}", bodies[h].translation().x);
                    normals += 1;
                }
            }
        }
        if bodies[h].translation().x > 88.0 {
            break;
        }
    }
    assert!(
        sim.bodies[h].translation().x > 60.0,
        "the box slid across seams: x = {}",
        sim.bodies[h].translation().x
    );
    assert!(normals > 50);
}

/// A shape the terrain cannot collide (a triangle mesh) gets no contacts with it, and the
/// dispatcher counts the refusal rather than dropping it silently.
#[test]
fn refused_queries_are_counted() {
    let shared = SharedTerrain::new(terrain());
    let mut sim = Sim::new(&shared, 0.5);
    let y = ground_at(&shared.read(), 32.0, 32.0);
    let tri = TriMesh::new(
        vec![Vector::new(-1.0, 0.0, -1.0), Vector::new(1.0, 0.0, -1.0), Vector::new(0.0, 0.0, 1.0)],
        vec![[0, 2, 1]],
    )
    .unwrap();
    let body = RigidBodyBuilder::dynamic().translation(Vector::new(32.0, y + 0.01, 32.0));
    let (_, co) = sim.add(body, ColliderBuilder::new(SharedShape::new(tri)));
    let before = voxterra_rapier::refused_queries();
    for _ in 0..3 {
        sim.step();
    }
    assert!(voxterra_rapier::refused_queries() > before, "the refusal was not counted");
    assert!(sim.narrow_phase.contact_pairs_with(co).all(|p| !p.has_any_active_contact()));
}
