//! What a physics terrain exists to get right, each scene run side by side on voxterra's collider
//! and on a parry `TriMesh` per physics chunk of the same meshes (what a rapier user builds
//! today), asserting voxterra does at least as well: no body ends under the surface when hills
//! rise or craters open under resting bodies, or when CCD bodies land at up to 100 m/s; rapier's
//! character controller is grounded where the TriMesh's is and never stuck below its slope limit;
//! balls rolling down slopes and bowls stay in contact, on no more contact points.
//!
//! The scenes run at other voxel sizes and far from the origin, with shapes of every kind. Each
//! prints its figures beside the TriMesh's (`-- --nocapture --test-threads 1`).

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

mod common;

use common::{Sim, height_field};
use rapier3d::control::KinematicCharacterController;
use rapier3d::prelude::*;
use voxterra::convert::FromParry;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{MaterialTable, Region, Voxel, VoxelPos, materials};
use voxterra::{Brush, BrushOp, BrushShape, Terrain};
use voxterra::{DetachConfig, TerrainConfig};
use voxterra_rapier::{CharacterController, spawn_piece};

/// Bodies of every kind, about `s` across.
fn body_shape(i: usize, s: f32) -> ColliderBuilder {
    match i % 4 {
        0 => ColliderBuilder::ball(s * 0.5),
        1 => ColliderBuilder::cuboid(s * 0.5, s * 0.35, s * 0.5),
        2 => ColliderBuilder::capsule_y(s * 0.4, s * 0.3),
        _ => ColliderBuilder::convex_hull(&[
            Vector::new(-s * 0.5, 0.0, 0.05),
            Vector::new(s * 0.5, 0.05, 0.1),
            Vector::new(0.0, s * 0.5, 0.0),
            Vector::new(0.05, -s * 0.35, 0.15),
            Vector::new(0.0, 0.1, s * 0.5),
            Vector::new(0.15, 0.0, -s * 0.5),
        ])
        .unwrap(),
    }
}

/// A slab of rock 20 voxels thick, 48 across, from the voxel `origin`.
fn slab(voxel_size: f32, origin: [i32; 3]) -> Terrain {
    let mut t = Terrain::new(MaterialTable::default(), TerrainConfig::with_voxel_size(voxel_size)).unwrap();
    let r = Region::from_min_size(VoxelPos::new(origin[0], origin[1], origin[2]), [48, 20, 48]).unwrap();
    t.fill(&r, Voxel::full(materials::ROCK)).unwrap();
    t
}

/// Sixteen bodies come to rest on a slab, then a sphere of `op` is applied under each in turn
/// (a hill rising through it, or a crater opening under it). Returns the bodies under the surface
/// at the end, on voxterra and on the TriMesh.
fn edits_under_resting_bodies(voxel_size: f32, origin: [i32; 3], op: BrushOp) -> [Vec<usize>; 2] {
    let top = (origin[1] + 20) as f32 * voxel_size;
    Sim::both(&slab(voxel_size, origin)).map(|mut sim| {
        let bodies: Vec<RigidBodyHandle> = (0..16)
            .map(|i| {
                let x = (origin[0] as f32 + 8.0 + (i % 4) as f32 * 9.0) * voxel_size;
                let z = (origin[2] as f32 + 8.0 + (i / 4) as f32 * 9.0) * voxel_size;
                let body = RigidBodyBuilder::dynamic().translation(Vector::new(x, top + 0.6 * voxel_size, z));
                sim.add(body, body_shape(i, voxel_size * (0.6 + 0.25 * (i % 3) as f32)))
            })
            .collect();
        for _ in 0..90 {
            sim.step();
        }
        for (k, &h) in bodies.iter().enumerate() {
            let radius = voxel_size * (1.5 + (k % 3) as f32);
            let p = sim.world.bodies[h].translation();
            // A hill's top rises 0.6 radius above the slab right under the body, through it.
            let depth = if matches!(op, BrushOp::Add(_)) { 0.4 * radius } else { 0.0 };
            let center = Point3::new(p.x, top - depth, p.z);
            sim.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius }, op });
            for _ in 0..3 {
                sim.step();
            }
        }
        for _ in 0..180 {
            sim.step();
        }
        (0..bodies.len()).filter(|&i| sim.sunk(bodies[i])).collect()
    })
}

#[test]
fn hills_rising_under_resting_bodies_push_them_up() {
    for (voxel_size, origin) in [(0.5, [3331, -21, -777]), (1.0, [0, 0, 0])] {
        let [ours, trimesh] = edits_under_resting_bodies(voxel_size, origin, BrushOp::Add(materials::ROCK));
        println!("hills, voxel size {voxel_size}: under {} of 16, trimesh {}", ours.len(), trimesh.len());
        assert!(ours.is_empty(), "voxel size {voxel_size} at {origin:?}: bodies {ours:?} under the hills");
        assert!(ours.len() <= trimesh.len());
    }
    common::no_refusals();
}

#[test]
fn bodies_fall_into_craters_and_rest_on_their_floor() {
    for (voxel_size, origin) in [(0.5, [0, 0, 0]), (1.0, [-2048, 517, 96])] {
        let [ours, trimesh] = edits_under_resting_bodies(voxel_size, origin, BrushOp::Subtract);
        println!("craters, voxel size {voxel_size}: under {} of 16, trimesh {}", ours.len(), trimesh.len());
        assert!(ours.is_empty(), "voxel size {voxel_size} at {origin:?}: bodies {ours:?} under the craters");
        assert!(ours.len() <= trimesh.len());
    }
    common::no_refusals();
}

/// 48 CCD bodies (balls of radius 0.25 and 0.08, a thin plate, a capsule) shot down at `speed`
/// at angles onto a height field `t` of `size` voxels from `origin`; the bodies that were ever
/// under the surface under them (while over the terrain), on voxterra and on the TriMesh.
fn ccd_drops(t: &Terrain, origin: [i32; 3], size: [i32; 3], speed: f32) -> [Vec<usize>; 2] {
    let vs = t.voxel_size();
    let lo = Vector::from(origin.map(|v| v as f32 * vs));
    let hi = lo + Vector::from(size.map(|v| v as f32 * vs));
    let shapes: [fn() -> ColliderBuilder; 4] = [
        || ColliderBuilder::ball(0.25),
        || ColliderBuilder::ball(0.08),
        || ColliderBuilder::cuboid(0.3, 0.05, 0.3),
        || ColliderBuilder::capsule_y(0.3, 0.1),
    ];
    Sim::both(t).map(|mut sim| {
        let bodies: Vec<RigidBodyHandle> = (0..48)
            .map(|i| {
                let x = lo.x + (hi.x - lo.x) * 0.3 + (i % 8) as f32 * 1.7 + (0.13 * i as f32) % 1.0;
                let z = lo.z + (hi.z - lo.z) * 0.3 + (i / 8) as f32 * 2.1 + 0.29;
                let y = hi.y + 8.0 + (i as f32 * 0.37) % 1.0;
                let dir = Vector::new(0.2 * ((i % 5) as f32 - 2.0), -1.0, 0.15 * ((i % 3) as f32 - 1.0));
                let body = RigidBodyBuilder::dynamic()
                    .translation(Vector::new(x, y, z))
                    .linvel(dir.normalize() * speed)
                    .angvel(Vector::new(0.0, 0.0, 3.0 * ((i % 7) as f32 - 3.0)))
                    .ccd_enabled(true);
                sim.add(body, shapes[i % shapes.len()]())
            })
            .collect();
        let mut under = std::collections::BTreeSet::new();
        for _ in 0..90 {
            sim.step();
            for (i, &h) in bodies.iter().enumerate() {
                let p = sim.world.bodies[h].translation();
                let over = p.x > lo.x + 0.5 && p.z > lo.z + 0.5 && p.x < hi.x - 0.5 && p.z < hi.z - 0.5;
                if over && p.y < sim.ground_at(p.x, p.z, hi.y + 1.0) - 0.3 {
                    under.insert(i);
                }
            }
        }
        under.into_iter().collect()
    })
}

/// CCD drops onto a height field at 40, 70 and 100 m/s: none ends under the surface.
fn no_drop_passes(
    name: &str,
    voxel_size: f32,
    origin: [i32; 3],
    size: [i32; 3],
    height: impl Fn(f32, f32) -> f32,
) {
    let t = height_field(voxel_size, origin, size, height);
    for speed in [40.0, 70.0, 100.0] {
        let [ours, trimesh] = ccd_drops(&t, origin, size, speed);
        println!("ccd {name} {speed} m/s: under {} of 48, trimesh {}", ours.len(), trimesh.len());
        assert!(ours.is_empty(), "{name} at {speed} m/s: bodies {ours:?} under the surface");
        assert!(ours.len() <= trimesh.len());
    }
}

#[test]
fn ccd_bodies_never_pass_the_surface() {
    let diagonal = std::f32::consts::FRAC_1_SQRT_2;
    no_drop_passes("flat", 0.5, [0, 0, 0], [64, 24, 64], |_, _| 12.0);
    no_drop_passes("slope", 0.5, [-900, 40, 1200], [64, 56, 64], |x, z| 50.0 - 0.4 * (x + z) * diagonal);
    no_drop_passes("thin", 0.25, [0, 0, 0], [128, 16, 128], |_, _| 2.3);
    common::no_refusals();
}

/// What a character walking a route saw.
#[derive(Debug, Default)]
struct Walk {
    steps: usize,
    grounded: usize,
    /// Steps that moved less than a tenth of the asked horizontal distance.
    stuck: usize,
    /// Highest the character's feet rose above the start.
    climb: f32,
    /// Waypoints reached.
    reached: usize,
}

/// A capsule character (radius 0.3, half-height 0.45, rapier's default settings) walking through
/// `route` (world x, z) at 4 m/s under gravity, as a game drives it: falling while not grounded,
/// no vertical speed while grounded; `edit` runs once the character passed `edit_after`
/// waypoints. voxterra's side walks with [`CharacterController`], the TriMesh's with rapier's own
/// controller; `plain` walks voxterra's with rapier's too.
fn walk(sim: &mut Sim, start: Vector, route: &[(f32, f32)], max_steps: usize, plain: bool) -> Walk {
    let shape = SharedShape::capsule_y(0.45, 0.3);
    let body = RigidBodyBuilder::kinematic_position_based().translation(start);
    let character = sim.world.insert(body, ColliderBuilder::new(shape.clone())).0;
    let ours = matches!(sim.ground, common::Ground::Voxterra(_)) && !plain;
    let controller = CharacterController::new(KinematicCharacterController::default());
    let dt = sim.world.integration_parameters.dt;
    let (mut pose, mut fall, mut out) = (Pose::from_translation(start), 0.0, Walk::default());
    while out.reached < route.len() && out.steps < max_steps {
        let (x, z) = route[out.reached];
        let to = Vector::new(x - pose.translation.x, 0.0, z - pose.translation.z);
        if to.length() < 0.2 {
            out.reached += 1;
            continue;
        }
        let ahead = to.normalize() * 4.0 * dt;
        let desired = ahead - Vector::Y * fall * dt;
        let moved = {
            let queries =
                sim.world.query_pipeline_with_filter(QueryFilter::default().exclude_rigid_body(character));
            if ours {
                controller.move_shape(dt, &queries, &*shape, &pose, desired, |_| {})
            } else {
                controller.controller.move_shape(dt, &queries, &*shape, &pose, desired, |_| {})
            }
        };
        pose.translation += moved.translation;
        sim.world.bodies[character].set_next_kinematic_translation(pose.translation);
        fall = if moved.grounded { 0.0 } else { fall + 9.81 * dt };
        out.steps += 1;
        out.grounded += usize::from(moved.grounded);
        let horizontal = Vector::new(moved.translation.x, 0.0, moved.translation.z).length();
        out.stuck += usize::from(horizontal < 0.1 * ahead.length());
        out.climb = out.climb.max(pose.translation.y - start.y);
        sim.step();
    }
    out
}

/// Flat ground 8 voxels high, a ramp at 35° rising along +x to 24 voxels, and past z = 44 voxels
/// a 55° slope; voxel size 0.5 from the voxel `origin`.
fn ramps(origin: [i32; 3]) -> Terrain {
    let (ramp, steep) = (35f32.to_radians().tan(), 55f32.to_radians().tan());
    height_field(0.5, origin, [96, 48, 64], move |x, z| {
        let ramp = (8.0 + (x - 24.0).max(0.0) * ramp).min(24.0);
        ramp.max((8.0 + (z - 44.0).max(0.0) * steep).min(40.0))
    })
}

#[test]
fn the_character_walks_ramps_and_seams_grounded_as_on_the_trimesh() {
    let origin = [1200, -64, -2000];
    let at = |x: f32, z: f32| (origin[0] as f32 * 0.5 + x, origin[2] as f32 * 0.5 + z);
    // Up the ramp, along the plateau, down again, diagonally up and back across seams.
    let route = [
        at(20.0, 5.0),
        at(22.0, 8.0),
        at(4.0, 8.0),
        at(4.0, 12.0),
        at(22.0, 15.0),
        at(12.0, 18.0),
        at(3.0, 3.0),
    ];
    let (x, z) = at(3.0, 5.0);
    let start = Vector::new(x, origin[1] as f32 * 0.5 + 5.5, z);
    let t = ramps(origin);
    let [ours, trimesh] = Sim::both(&t).map(|mut sim| {
        // Raise gentle ground across the way back down the ramp before the walk: fresh chunks.
        let (hx, hz) = at(10.0, 8.0);
        let hill = Point3::new(hx, origin[1] as f32 * 0.5 + 4.0 - 3.6, hz);
        sim.apply_brush(&Brush {
            shape: BrushShape::Sphere { center: hill, radius: 4.0 },
            op: BrushOp::Add(materials::ROCK),
        });
        walk(&mut sim, start, &route, 4000, false)
    });
    println!("character route: {ours:?}, trimesh {trimesh:?}");
    assert_eq!(ours.reached, route.len(), "voxterra: {ours:?}");
    assert_eq!(trimesh.reached, route.len(), "trimesh: {trimesh:?}");
    assert_eq!(ours.stuck, 0, "voxterra: {ours:?}");
    // Grounded on every step the TriMesh's is, to within the steps the routes drift apart.
    assert!(ours.grounded + ours.steps / 100 >= trimesh.grounded, "{ours:?} vs trimesh {trimesh:?}");
    assert!(ours.grounded * 100 >= ours.steps * 95, "{ours:?}");
    // rapier's own controller on the terrain is never grounded: what the wrapper is for.
    let plain = walk(&mut Sim::voxterra(ramps(origin)), start, &route[..1], 600, true);
    println!("character route, rapier's own controller on the terrain: {plain:?}");
    assert_eq!(plain.grounded, 0, "{plain:?}");
    common::no_refusals();
}

#[test]
fn the_character_slides_off_slopes_past_its_limit() {
    // Straight at the 55° slope: it may not climb it; it stops at its foot as on the TriMesh.
    let t = ramps([0, 0, 0]);
    let [ours, trimesh] =
        Sim::both(&t).map(|mut sim| walk(&mut sim, Vector::new(5.0, 5.5, 16.0), &[(5.0, 30.0)], 300, false));
    println!("character at a 55° slope: {ours:?}, trimesh {trimesh:?}");
    assert!(ours.climb < 1.0 && ours.climb <= trimesh.climb + 0.1, "{ours:?} vs trimesh {trimesh:?}");
    assert!(ours.grounded + 3 >= trimesh.grounded, "{ours:?} vs trimesh {trimesh:?}");
    common::no_refusals();
}

/// A body dropped at `start` on `t`, over `frames` frames after the first 30: frames it touched
/// nothing, the largest and the mean speed along the surface normal under it, the largest gap
/// between it and the surface (for a ball), and the most contact points in a frame.
#[derive(Debug, Default)]
struct Roll {
    airborne: usize,
    normal_speed: f32,
    mean_normal_speed: f32,
    gap: f32,
    points: usize,
}

fn roll(t: &Terrain, start: Vector, frames: usize, collider: ColliderBuilder) -> [Roll; 2] {
    Sim::both(t).map(|mut sim| {
        let h = sim.add(RigidBodyBuilder::dynamic().translation(start), collider.clone());
        let mut out = Roll::default();
        for f in 0..frames {
            sim.step();
            let b = &sim.world.bodies[h];
            let co = b.colliders()[0];
            let pairs = || sim.world.narrow_phase.contact_pairs_with(co);
            let points = pairs().map(|c| c.manifolds().iter().map(|m| m.points.len()).sum::<usize>()).sum();
            out.points = out.points.max(points);
            if f < 30 {
                continue;
            }
            let p = Point3::from_parry(b.translation());
            let radius = sim.world.colliders[co].shape().compute_local_bounding_sphere().radius;
            let (gap, n) = sim.terrain(|t| {
                let pr = t.project_point(&p, 100.0).unwrap().unwrap();
                (pr.distance - radius, pr.normal)
            });
            out.airborne += usize::from(!pairs().any(|c| c.has_any_active_contact()));
            out.gap = out.gap.max(gap);
            let normal_speed = Vector3::from_parry(b.linvel()).dot(&n).abs();
            out.normal_speed = out.normal_speed.max(normal_speed);
            out.mean_normal_speed += normal_speed / (frames - 30) as f32;
        }
        out
    })
}

#[test]
fn balls_roll_down_slopes_and_bowls_in_contact() {
    // A 1:2 slope whose fall line runs at 30° to the chunk grid, at voxel size 1 far from the
    // origin, and a bowl at voxel size 0.5.
    let (c, s) = (30f32.to_radians().cos(), 30f32.to_radians().sin());
    let origin = [640, -48, 2048];
    let slope = height_field(1.0, origin, [64, 48, 64], |x, z| 42.0 - 0.5 * (x * c + z * s));
    let on_slope = |x: f32, z: f32, up: f32| {
        let y = origin[1] as f32 + 42.0 - 0.5 * (x * c + z * s) + up;
        Vector::new(origin[0] as f32 + x, y, origin[2] as f32 + z)
    };
    let bowl = height_field(0.5, [0, 0, 0], [96, 48, 96], |x, z| {
        8.0 + 0.015 * ((x - 48.0).powi(2) + (z - 48.0).powi(2))
    });
    let cases = [
        ("slope ball", &slope, on_slope(6.0, 6.0, 0.4), 300, ColliderBuilder::ball(0.3)),
        ("slope box", &slope, on_slope(8.0, 8.0, 0.6), 300, ColliderBuilder::cuboid(0.3, 0.3, 0.3)),
        (
            "bowl ball",
            &bowl,
            Vector::new(8.0, 0.5 * (8.0 + 0.015 * 1024.0) + 0.4, 24.0),
            400,
            ColliderBuilder::ball(0.3),
        ),
        (
            "bowl box",
            &bowl,
            Vector::new(8.0, 0.5 * (8.0 + 0.015 * 1024.0) + 0.6, 24.0),
            400,
            ColliderBuilder::cuboid(0.3, 0.3, 0.3),
        ),
    ];
    for (name, t, start, frames, collider) in cases {
        let [ours, trimesh] = roll(t, start, frames, collider);
        // The two runs drift apart: ties are within two frames, 5 mm, and for a ball (which rolls
        // smoothly) 10% of the speeds along the normal, at the peak and on average. A box sliding
        // over the mesh's facets jolts at random on both: for it, the frames in the air and the
        // points count.
        let ball = name.ends_with("ball");
        let bounce = ours.normal_speed <= trimesh.normal_speed * 1.1 + 0.05
            && ours.mean_normal_speed <= trimesh.mean_normal_speed * 1.1 + 0.005;
        let fine = ours.airborne <= trimesh.airborne + 2
            && ours.gap <= trimesh.gap + 0.005
            && (!ball || bounce)
            && ours.points <= trimesh.points;
        println!("{name}: {ours:?}, trimesh {trimesh:?}");
        assert!(fine, "{name}: {ours:?} vs trimesh {trimesh:?}");
    }
    common::no_refusals();
}

/// Ground 4 voxels thick, two piers and a lintel over them, from the voxel `o`, on a terrain that
/// detaches what edits cut loose.
fn arch(voxel_size: f32, o: [i32; 3]) -> Terrain {
    let config =
        TerrainConfig { detach: Some(DetachConfig::default()), ..TerrainConfig::with_voxel_size(voxel_size) };
    let mut t = Terrain::new(MaterialTable::default(), config).unwrap();
    for (min, size) in [
        ([0, 0, 0], [48, 4, 24]),
        ([6, 4, 8], [6, 16, 8]),
        ([36, 4, 8], [6, 16, 8]),
        ([6, 20, 8], [36, 6, 8]),
    ] {
        let r =
            Region::from_min_size(VoxelPos::new(min[0] + o[0], min[1] + o[1], min[2] + o[2]), size).unwrap();
        t.fill(&r, Voxel::full(materials::ROCK)).unwrap();
    }
    t
}

/// Steps until `body` comes to rest by rapier's sleep rule (at most `max` steps); the lowest its
/// collider's box reached.
fn fall(sim: &mut Sim, body: RigidBodyHandle, max: usize) -> (usize, f32) {
    let mut lowest = f32::INFINITY;
    for step in 0..max {
        sim.step();
        let b = &sim.world.bodies[body];
        lowest = lowest.min(sim.world.colliders[b.colliders()[0]].compute_aabb().mins.y);
        // At rest by rapier's rule (slow enough for long enough): asleep, unless an island
        // partner keeps it awake (a ball rolling on it without rolling resistance).
        let a = b.activation();
        if b.is_sleeping() || a.time_since_can_sleep >= a.time_until_sleep {
            return (step, lowest);
        }
    }
    (max, lowest)
}

/// Cutting both piers of an arch at their feet detaches the arch: it falls onto the ground with the
/// ball that rested on it, never passes through it, comes to rest where the same piece dropped on
/// the TriMesh of the cut terrain rests, and would sleep (the ball may go on rolling on it: rapier
/// has no rolling resistance, so its island may stay awake).
#[test]
fn an_arch_cut_loose_falls_rests_on_the_ground_and_sleeps() {
    for (vs, o) in [(0.5f32, [2000, -30, -3000]), (1.0, [0, 0, 0])] {
        let mut sim = Sim::voxterra(arch(vs, o));
        let at = |x: f32, y: f32, z: f32| {
            Vector::new((o[0] as f32 + x) * vs, (o[1] as f32 + y) * vs, (o[2] as f32 + z) * vs)
        };
        let ball = sim.add(
            RigidBodyBuilder::dynamic().translation(at(24.0, 27.6, 12.0)),
            ColliderBuilder::ball(1.5 * vs),
        );
        for _ in 0..60 {
            sim.step();
        }
        let ball_before = sim.world.bodies[ball].translation().y;
        let common::Ground::Voxterra(ground) = &sim.ground else { unreachable!() };
        let cut = Brush {
            shape: BrushShape::Box {
                min: Point3::from(at(0.0, 4.0, 0.0)),
                max: Point3::from(at(48.0, 8.0, 24.0)),
            },
            op: BrushOp::Subtract,
        };
        let edit = ground.apply_brush(&cut, &mut sim.world.bodies, &mut sim.world.colliders).unwrap();
        assert_eq!(edit.pieces.len(), 1, "{:?}", edit.report);
        let piece = edit.pieces[0].clone();
        assert!(!sim.world.bodies[ball].is_sleeping(), "the ball on the arch is woken");
        let start = sim.world.bodies[piece.body].translation();
        assert!((Point3::from_parry(start) - piece.piece.mass.center).norm() < 1e-3 * (1.0 + start.length()));
        let after_cut = sim.terrain(|t| {
            Terrain::from_store(t.store().clone(), t.materials().clone(), TerrainConfig::with_voxel_size(vs))
                .unwrap()
        });
        let (steps, lowest) = fall(&mut sim, piece.body, 1500);
        let end = sim.world.bodies[piece.body].translation();
        let ground_top = at(0.0, 4.0, 0.0).y;
        println!(
            "voxel size {vs}: the arch ({} parts) fell {:.2} in {steps} steps, lowest {:.3} over ground at {ground_top}",
            piece.piece.shape_parts,
            start.y - end.y,
            lowest
        );
        assert!(start.y - end.y > 3.0 * vs, "it falls the 4 voxels to the ground");
        assert!(lowest > ground_top - 0.25 * vs, "never through the ground: {lowest} under {ground_top}");
        assert!(steps < 1500, "it comes to rest (and would sleep)");
        assert!(
            ball_before - sim.world.bodies[ball].translation().y > 3.0 * vs,
            "the ball comes down with it"
        );
        assert!(!sim.sunk(ball));

        // The reference: the same piece dropped on the TriMesh colliders of the cut terrain.
        let mut tri = Sim::trimesh(after_cut);
        let table = MaterialTable::default();
        let same = spawn_piece(
            piece.piece.clone(),
            &table,
            Pose::IDENTITY,
            &mut tri.world.bodies,
            &mut tri.world.colliders,
        );
        let (tri_steps, _) = fall(&mut tri, same.body, 1500);
        let tri_end = tri.world.bodies[same.body].translation();
        println!("  rests at {:.3} (TriMesh: {:.3}, asleep after {tri_steps} steps)", end.y, tri_end.y);
        assert!((end.y - tri_end.y).abs() < 0.25 * vs, "{} vs {} on the TriMesh", end.y, tri_end.y);
    }
}
