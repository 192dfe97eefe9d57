//! The collision world against brute force: pairs from an O(n²) loop over the bodies' boxes,
//! terrain contacts from the masks' voxel-by-voxel reference, events replayed into sets, ray casts
//! from every body's own cast and the terrain's, manifolds from the terrain's and parry's own
//! calls; readiness after every step; bad input refused with the world unchanged.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use std::collections::BTreeSet;
use voxterra::TerrainConfig;
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use voxterra::core::{Aabb, Ray};
use voxterra::parry3d::math::{Pose, Vector};
use voxterra::parry3d::query;
use voxterra::parry3d::shape::SharedShape;
use voxterra::terrain_broadphase::{ContactKind, reference};
use voxterra::worldgen::GenParams;
use voxterra::{
    BodyDesc, BodyHandle, Brush, BrushOp, BrushShape, HitTarget, Terrain, World, WorldContacts, WorldError,
    WorldEvent,
};

fn terrain() -> Terrain {
    Terrain::generate(&GenParams::new(5, [64, 48, 64]), TerrainConfig::default()).unwrap()
}

fn shape(kind: u8, size: f32) -> SharedShape {
    match kind % 4 {
        0 => SharedShape::ball(size),
        1 => SharedShape::cuboid(size, size * 0.6, size * 0.8),
        2 => SharedShape::capsule_y(size * 0.7, size * 0.5),
        _ => SharedShape::convex_hull(&[
            Vector::new(-size, 0.0, 0.0),
            Vector::new(size, 0.1, 0.2),
            Vector::new(0.0, size, 0.0),
            Vector::new(0.1, -size * 0.7, 0.3),
            Vector::new(0.0, 0.2, size),
            Vector::new(0.3, 0.0, -size),
        ])
        .unwrap(),
    }
}

fn pose(p: [f32; 3], angle: f32) -> Pose {
    Isometry3::from_parts(p.into(), UnitQuaternion::from_euler_angles(angle, angle * 0.5, 0.0)).to_parry()
}

type BodySpec = (u8, f32, [f32; 3], f32);

fn arb_body() -> impl Strategy<Value = BodySpec> {
    (0u8..4, 0.4f32..2.5, proptest::array::uniform3(2.0f32..62.0), 0.0f32..3.0).prop_map(
        |(k, s, mut p, a)| {
            p[1] = p[1] * 0.5 + 4.0;
            (k, s, p, a)
        },
    )
}

fn insert(world: &mut World, (k, s, p, a): BodySpec, i: usize) -> BodyHandle {
    world
        .insert(BodyDesc { shape: shape(k, s), pose: pose(p, a), velocity: None, user_data: i as u64 })
        .unwrap()
}

/// Every pair of live bodies whose step boxes overlap.
fn brute_pairs(world: &World) -> BTreeSet<(BodyHandle, BodyHandle)> {
    let hs: Vec<BodyHandle> = world.handles().collect();
    let mut out = BTreeSet::new();
    for (i, &a) in hs.iter().enumerate() {
        for &b in &hs[i + 1..] {
            let (ba, bb) = (world.body(a).unwrap().aabb().unwrap(), world.body(b).unwrap().aabb().unwrap());
            if ba.intersects(&bb) {
                out.insert((a, b));
            }
        }
    }
    out
}

/// The contacts the masks' voxel-by-voxel reference gives for a swept box.
fn brute_terrain(world: &World, swept: &Aabb) -> Vec<(voxterra::core::PhysicsChunkKey, ContactKind)> {
    let t = world.terrain();
    let mut out = Vec::new();
    for (k, touch) in
        reference::query(t.store(), t.materials(), t.voxel_size(), &swept.loosened(t.voxel_size()))
    {
        if touch.solid {
            out.push((k, ContactKind::Solid));
        }
        if touch.water {
            out.push((k, ContactKind::Water));
        }
    }
    out
}

/// Replays events into the live sets they describe.
#[derive(Default)]
struct Replay {
    pairs: BTreeSet<(BodyHandle, BodyHandle)>,
    terrain: BTreeSet<(BodyHandle, (i32, i32, i32), ContactKind)>,
}

impl Replay {
    fn apply(&mut self, world: &mut World) {
        for e in world.drain_events() {
            match e {
                WorldEvent::PairStarted(a, b) => assert!(self.pairs.insert((a, b)), "started twice"),
                WorldEvent::PairStopped(a, b) => assert!(self.pairs.remove(&(a, b)), "stopped unknown"),
                WorldEvent::TerrainStarted { body, chunk, kind } => {
                    assert!(self.terrain.insert((body, (chunk.x, chunk.y, chunk.z), kind)))
                }
                WorldEvent::TerrainStopped { body, chunk, kind } => {
                    assert!(self.terrain.remove(&(body, (chunk.x, chunk.y, chunk.z), kind)))
                }
            }
        }
    }
}

fn live_terrain(world: &World) -> BTreeSet<(BodyHandle, (i32, i32, i32), ContactKind)> {
    world
        .handles()
        .flat_map(|h| {
            world
                .body(h)
                .unwrap()
                .terrain_contacts()
                .iter()
                .map(move |c| (h, (c.chunk.x, c.chunk.y, c.chunk.z), c.kind))
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Random bodies moved, inserted and removed over several steps: after each, the pairs equal
    /// the O(n²) loop, terrain contacts equal the voxel reference over the swept box, the events
    /// replay into exactly those sets, and every solid contact's chunk is built.
    #[test]
    fn pairs_contacts_and_events_equal_brute_force(
        bodies in proptest::collection::vec(arb_body(), 2..24),
        moves in proptest::collection::vec((any::<prop::sample::Index>(), proptest::array::uniform3(-3.0f32..3.0)), 1..40),
        steps in 2usize..5,
    ) {
        let mut world = World::new(terrain());
        let mut handles: Vec<BodyHandle> = bodies.iter().enumerate().map(|(i, b)| insert(&mut world, *b, i)).collect();
        let mut replay = Replay::default();
        world.step(1.0 / 60.0).unwrap();
        replay.apply(&mut world);
        for step in 0..steps {
            let mut prev = std::collections::BTreeMap::new();
            for (ix, d) in moves.iter().skip(step).step_by(steps) {
                let h = handles[ix.index(handles.len())];
                let b = world.body(h).unwrap();
                prev.entry(h).or_insert(b.aabb().unwrap());
                let mut p = *b.pose();
                p.translation += Vector::from_array(*d);
                world.set_pose(h, p).unwrap();
            }
            if step == 1 {
                // One removal and one insertion in the same step.
                let gone = handles.remove(0);
                world.remove(gone).unwrap();
                prev.remove(&gone);
                prop_assert!(matches!(world.body(gone), Err(WorldError::UnknownBody(_))));
                handles.push(insert(&mut world, bodies[0], 99));
            }
            world.step(1.0 / 60.0).unwrap();
            replay.apply(&mut world);
            let pairs: BTreeSet<_> = world.pairs().collect();
            prop_assert_eq!(&pairs, &brute_pairs(&world));
            prop_assert_eq!(&replay.pairs, &pairs);
            for (h, old) in prev {
                let b = world.body(h).unwrap();
                let swept = old.merged(&b.aabb().unwrap());
                let got: Vec<_> = b.terrain_contacts().iter().map(|c| (c.chunk, c.kind)).collect();
                prop_assert_eq!(got, brute_terrain(&world, &swept));
            }
            prop_assert_eq!(&replay.terrain, &live_terrain(&world));
            for h in world.handles() {
                for c in world.body(h).unwrap().terrain_contacts() {
                    if c.kind == ContactKind::Solid {
                        prop_assert!(world.terrain().cached_chunk(c.chunk).is_some(), "solid contact not ready");
                    }
                }
            }
        }
    }
}

/// Bodies resting on and sunk into the ground: a world's manifolds equal each body's own
/// `Terrain::contacts` and parry's manifold for each pair, on 1 and 2 threads alike.
#[test]
fn contacts_equal_terrain_and_parry_on_any_thread_count() {
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut world = World::new(terrain());
            let mut handles = Vec::new();
            for i in 0..40 {
                let x = 4.0 + (i % 8) as f32 * 7.0;
                let z = 4.0 + (i / 8) as f32 * 11.0;
                let down = Ray::new(Point3::new(x, 60.0, z), -Vector3::y());
                let ground = world.terrain_mut().cast_ray(&down, 100.0).unwrap().unwrap().point.y;
                let s = shape(i as u8, 0.8 + (i % 3) as f32 * 0.4);
                let lift = s.compute_local_aabb().mins.y;
                // Half of them sit 2 cm into the ground, the rest in pairs overlapping each other.
                let p = [x, ground - lift - 0.02 + (i % 2) as f32 * 0.5, z];
                handles.push(insert(&mut world, (i as u8, 0.8 + (i % 3) as f32 * 0.4, p, 0.0), i));
                if i % 5 == 0 {
                    handles.push(insert(&mut world, (0, 0.7, [x + 0.8, p[1] + 0.3, z], 0.0), 100 + i));
                }
            }
            world.step(1.0 / 60.0).unwrap();
            let mut out = WorldContacts::default();
            world.contacts(&mut out).unwrap();
            (world, out)
        })
    };
    let (mut world, one) = run(1);
    let (_, two) = run(2);
    assert_eq!(format!("{:?}", one.terrain), format!("{:?}", two.terrain));
    assert_eq!(format!("{:?}", one.bodies), format!("{:?}", two.bodies));
    assert!(one.terrain.len() >= 20, "resting bodies touch the ground: {}", one.terrain.len());
    assert!(!one.bodies.is_empty(), "overlapping bodies touch each other");

    let prediction = world.config().prediction;
    let handles: Vec<BodyHandle> = world.handles().collect();
    let mut expected = Vec::new();
    for &h in &handles {
        let (s, p) = {
            let b = world.body(h).unwrap();
            (b.shared_shape().clone(), *b.pose())
        };
        let mut m = Vec::new();
        world.terrain_mut().contacts(&*s, &p, prediction, &mut m).unwrap();
        expected.extend(m.into_iter().map(|m| (h, m)));
    }
    assert_eq!(format!("{:?}", one.terrain), format!("{expected:?}"));

    for m in &one.bodies {
        let (a, b) = (world.body(m.a).unwrap(), world.body(m.b).unwrap());
        let c = query::contact(a.pose(), a.shape(), b.pose(), b.shape(), prediction).unwrap().unwrap();
        let deepest = m.points.iter().map(|p| p.2).fold(f32::INFINITY, f32::min);
        assert!((deepest - c.dist).abs() < 1e-3, "pair depth {deepest} vs parry {}", c.dist);
        assert!(m.normal.dot(&Vector3::from_parry(c.normal1)) > 0.99);
    }
    // Every pair within the prediction distance has a manifold.
    let with: BTreeSet<_> = one.bodies.iter().map(|m| (m.a, m.b)).collect();
    for (a, b) in world.pairs().collect::<Vec<_>>() {
        let (ba, bb) = (world.body(a).unwrap(), world.body(b).unwrap());
        let touching =
            query::contact(ba.pose(), ba.shape(), bb.pose(), bb.shape(), prediction).unwrap().is_some();
        assert_eq!(touching, with.contains(&(a, b)));
    }
}

/// Rays over bodies and terrain equal the nearest of every body's own cast and the terrain's.
#[test]
fn ray_casts_equal_brute_force() {
    let mut world = World::new(terrain());
    let mut rng = 12345u64;
    let mut next = move || {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (rng >> 40) as f32 / (1u64 << 24) as f32
    };
    for i in 0..60 {
        let p = [4.0 + next() * 56.0, 10.0 + next() * 30.0, 4.0 + next() * 56.0];
        insert(&mut world, ((i % 4) as u8, 0.5 + next() * 2.0, p, next() * 3.0), i);
    }
    world.step(0.0).unwrap();
    let rays: Vec<Ray> = (0..400)
        .map(|_| {
            let o = Point3::new(next() * 64.0, 20.0 + next() * 40.0, next() * 64.0);
            let d = Vector3::new(next() - 0.5, -next(), next() - 0.5);
            Ray::new(o, if d.norm() < 1e-3 { -Vector3::y() } else { d })
        })
        .collect();
    let mut batch = Vec::new();
    world.cast_rays(&rays, 80.0, &mut batch).unwrap();
    let handles: Vec<BodyHandle> = world.handles().collect();
    let mut hit_bodies = 0;
    for (ray, got) in rays.iter().zip(&batch) {
        let single = world.cast_ray(ray, 80.0).unwrap();
        assert_eq!(&single, got);
        let terrain = world.terrain_mut().cast_ray(ray, 80.0).unwrap();
        let pray = ray.to_parry();
        let mut best: Option<(f32, BodyHandle)> = None;
        for &h in &handles {
            let b = world.body(h).unwrap();
            if let Some(t) = b.shape().cast_ray(b.pose(), &pray, 80.0, true)
                && best.is_none_or(|(bt, _)| t < bt)
            {
                best = Some((t, h));
            }
        }
        let expected = match (best, terrain) {
            (Some((t, h)), tr) if tr.is_none_or(|tr| t < tr.t) => Some((t, HitTarget::Body(h))),
            (_, Some(tr)) => Some((
                tr.t,
                HitTarget::Terrain { chunk: tr.chunk, triangle: tr.triangle, material: tr.material },
            )),
            _ => None,
        };
        let got = got.map(|h| (h.t, h.target));
        match (got, expected) {
            (Some((gt, gh)), Some((et, eh))) => {
                assert!((gt - et).abs() <= 1e-4 * et.max(1.0), "t {gt} vs {et}");
                assert_eq!(gh, eh);
                hit_bodies += matches!(gh, HitTarget::Body(_)) as usize;
            }
            (g, e) => assert_eq!(g, e),
        }
    }
    assert!(hit_bodies > 10, "the rays meet bodies too: {hit_bodies}");
}

/// A crater dug under a resting body: the next step reports its solid contacts stopping, and the
/// body no longer touches anything; the body far away sees nothing.
#[test]
fn an_edit_under_a_body_stops_its_contacts() {
    let mut world = World::new(terrain());
    let down = Ray::new(Point3::new(32.0, 60.0, 32.0), -Vector3::y());
    let ground = world.cast_ray(&down, 100.0).unwrap().unwrap().point.y;
    let near = insert(&mut world, (0, 1.0, [32.0, ground + 0.99, 32.0], 0.0), 0);
    let far_ray = Ray::new(Point3::new(8.0, 60.0, 8.0), -Vector3::y());
    let far_ground = world.cast_ray(&far_ray, 100.0).unwrap().unwrap().point.y;
    let far = insert(&mut world, (0, 1.0, [8.0, far_ground + 0.99, 8.0], 0.0), 1);
    world.step(1.0 / 60.0).unwrap();
    world.drain_events().for_each(drop);
    let mut out = WorldContacts::default();
    world.contacts(&mut out).unwrap();
    assert!(out.terrain.iter().any(|(h, _)| *h == near));

    let crater = Brush {
        shape: BrushShape::Sphere { center: Point3::new(32.0, ground, 32.0), radius: 6.0 },
        op: BrushOp::Subtract,
    };
    world.apply_brush(&crater).unwrap();
    let report = world.step(1.0 / 60.0).unwrap();
    assert_eq!(report.terrain_updated, 1, "only the body near the crater re-reads the masks");
    let events: Vec<WorldEvent> = world.drain_events().collect();
    assert!(events.iter().any(
        |e| matches!(e, WorldEvent::TerrainStopped { body, kind: ContactKind::Solid, .. } if *body == near)
    ));
    assert!(events.iter().all(|e| !matches!(e, WorldEvent::TerrainStopped { body, .. } | WorldEvent::TerrainStarted { body, .. } if *body == far)));
    world.contacts(&mut out).unwrap();
    assert!(out.terrain.iter().all(|(h, _)| *h != near), "the body hangs over the crater");
    assert!(out.terrain.iter().any(|(h, _)| *h == far));

    // Undo fills it back: the contacts start again.
    world.undo().unwrap();
    world.step(1.0 / 60.0).unwrap();
    assert!(
        world.drain_events().any(|e| matches!(e, WorldEvent::TerrainStarted { body, .. } if body == near))
    );
}

/// Shape casts meet the nearest of the bodies and the terrain.
#[test]
fn shape_casts_meet_the_nearest_target() {
    let mut world = World::new(terrain());
    let down = Ray::new(Point3::new(20.0, 60.0, 20.0), -Vector3::y());
    let ground = world.cast_ray(&down, 100.0).unwrap().unwrap().point.y;
    let crate_box = insert(&mut world, (1, 1.0, [20.0, ground + 5.0, 20.0], 0.0), 0);
    world.step(0.0).unwrap();
    let ball = SharedShape::ball(0.5);
    let start = Pose::translation(20.0, ground + 15.0, 20.0);
    let hit = world.cast_shape(&*ball, &start, -Vector::Y, 40.0, None).unwrap().unwrap();
    assert_eq!(hit.target, HitTarget::Body(crate_box));
    let top = ground + 5.0 + 0.6;
    assert!((hit.toi - (ground + 15.0 - 0.5 - top)).abs() < 1e-3, "toi {}", hit.toi);
    let past = world.cast_shape(&*ball, &start, -Vector::Y, 40.0, Some(crate_box)).unwrap().unwrap();
    // The terrain hit names the ground's material, as the ray straight down does.
    let under = world.terrain().cast_ray(&down, 100.0).unwrap().unwrap().material;
    let HitTarget::Terrain { material, .. } = past.target else { panic!("{past:?} should hit the terrain") };
    assert!(!material.is_air() && material == under, "{material:?} against the ray's {under:?}");
    assert!((past.toi - (ground + 15.0 - 0.5 - ground)).abs() < 0.1, "toi {}", past.toi);
}

/// Bad input: a NaN pose or velocity, a dead handle, a NaN step; the world is unchanged.
#[test]
fn bad_input_is_refused() {
    let mut world = World::new(terrain());
    let h = insert(&mut world, (0, 1.0, [10.0, 30.0, 10.0], 0.0), 0);
    world.step(0.0).unwrap();
    let nan = Pose::translation(f32::NAN, 0.0, 0.0);
    assert!(matches!(world.set_pose(h, nan), Err(WorldError::InvalidPose)));
    let fast = Some(Vector::new(0.0, f32::INFINITY, 0.0));
    assert!(matches!(world.set_velocity(h, fast), Err(WorldError::InvalidVelocity)));
    let desc = BodyDesc { shape: SharedShape::ball(1.0), pose: nan, velocity: None, user_data: 0 };
    assert!(matches!(world.insert(desc), Err(WorldError::InvalidPose)));
    let desc = BodyDesc { shape: SharedShape::ball(1.0), pose: Pose::IDENTITY, velocity: fast, user_data: 0 };
    assert!(matches!(world.insert(desc), Err(WorldError::InvalidVelocity)));
    assert!(matches!(world.step(f32::NAN), Err(WorldError::InvalidStep(_))));
    assert_eq!(world.body(h).unwrap().pose().translation, Vector::new(10.0, 30.0, 10.0));
    assert_eq!(world.len(), 1);
    world.remove(h).unwrap();
    assert!(matches!(world.remove(h), Err(WorldError::UnknownBody(_))));
    assert!(matches!(world.set_pose(h, Pose::IDENTITY), Err(WorldError::UnknownBody(_))));
    // A new body reuses the slot under a new handle.
    let h2 = insert(&mut world, (0, 1.0, [10.0, 30.0, 10.0], 0.0), 1);
    assert_eq!(h2.index(), h.index());
    assert_ne!(h2, h);
    assert!(matches!(world.body(h), Err(WorldError::UnknownBody(_))));
}

/// A compound body touching another with two parts gets one manifold per part, each with its own
/// normal (never one manifold under the first part's normal).
#[test]
fn a_compound_touching_with_two_parts_gets_two_manifolds() {
    let mut world = World::new(terrain());
    let tongs = SharedShape::compound(vec![
        (Pose::translation(-1.0, 0.0, 0.0), SharedShape::ball(0.6)),
        (Pose::translation(1.0, 0.0, 0.0), SharedShape::ball(0.6)),
    ]);
    let at = |x: f32, y: f32| Pose::translation(30.0 + x, 90.0 + y, 30.0);
    let a =
        world.insert(BodyDesc { shape: tongs, pose: at(0.0, 0.0), velocity: None, user_data: 0 }).unwrap();
    let ball = SharedShape::ball(0.6);
    let b = world.insert(BodyDesc { shape: ball, pose: at(0.0, 0.6), velocity: None, user_data: 1 }).unwrap();
    world.step(0.0).unwrap();
    let mut out = WorldContacts::default();
    world.contacts(&mut out).unwrap();
    assert!(out.terrain.is_empty());
    assert_eq!(out.bodies.len(), 2, "{:?}", out.bodies);
    let mut parts: Vec<u32> = out.bodies.iter().map(|m| m.part_a).collect();
    parts.sort_unstable();
    assert_eq!(parts, [0, 1]);
    for m in &out.bodies {
        assert_eq!((m.a, m.b), (a, b));
        // From each ball of the tongs toward the ball between them: up and inward.
        let side = if m.part_a == 0 { 1.0 } else { -1.0 };
        let want = Vector3::new(side, 0.6, 0.0).normalize();
        assert!(m.normal.dot(&want) > 0.999, "part {}: {:?}", m.part_a, m.normal);
        assert!(m.points.iter().all(|p| p.2 < 0.0));
    }
}
