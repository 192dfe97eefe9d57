//! Intersection tests, shape casts and sweeps against exact f64 distances: `intersects` says true
//! exactly when the shape overlaps the surface or sits inside the solid; a cast or a sweep stops
//! where the shape first comes within its target distance (found by conservative advancement
//! over sampled f64 distances), never later and never where it is still apart; the same answers
//! from a warm and a cold cache.

use crate::Tally;
use crate::scene::{Exact, KINDS, Kind, Probe, Scene, cold_terrain, random_probe, tolerance};
use voxterra::narrowphase::CastOptions;
use voxterra::parry3d::math::{Pose, Rotation, Vector};
use voxterra::parry3d::query::sweep_toi::Sweep;
use voxterra_test_support::Rng;
use voxterra_test_support::reference::{Tri, V};

/// The exact two-sided distance from `probe` to the triangles `near` (0 when touching).
fn distance(probe: &Probe, near: &[Tri]) -> f64 {
    let exact = probe.exact();
    near.iter().map(|t| exact.distance(t)).fold(f64::INFINITY, f64::min)
}

/// The exact two-sided signed distance: apart, the distance; overlapping, less the deepest
/// overlap with one triangle (a ball's or capsule's radius past its core's distance, a
/// polytope's least separating-axis overlap). Changes by at most the motion of the shape.
fn signed(probe: &Probe, near: &[Tri]) -> f64 {
    use voxterra_test_support::reference::{point_triangle_distance, segment_triangle_distance};
    match probe.exact() {
        Exact::Ball(c, r) => {
            near.iter().map(|t| point_triangle_distance(&c, t) - r).fold(f64::INFINITY, f64::min)
        }
        Exact::Capsule(a, b, r) => {
            near.iter().map(|t| segment_triangle_distance(&a, &b, t) - r).fold(f64::INFINITY, f64::min)
        }
        Exact::Polytope(poly) => {
            let overlap = near.iter().map(|t| poly.sat(t)).fold(f64::NEG_INFINITY, f64::max);
            if overlap >= 0.0 {
                -overlap
            } else {
                near.iter().map(|t| poly.distance(t)).fold(f64::INFINITY, f64::min)
            }
        }
    }
}

/// A shape of `kind` placed `gap` (world units, along the surface normal) off a random surface
/// point, its core in the open: the start of a cast or a sweep toward the surface.
fn placed(scene: &Scene, rng: &mut Rng, kind: Kind, gap: f64) -> Option<(Probe, V)> {
    let (p, n) = scene.surface_point(rng);
    let start = random_probe(rng, kind, scene.voxel_size, &p);
    // Along the normal, past the shape's reach: then `gap` more.
    let c = p + n * (start.reach + gap);
    let pose = Pose::from_parts(Vector::new(c.x as f32, c.y as f32, c.z as f32), start.pose.rotation);
    let probe = start.at(pose);
    let near = scene.near(&probe.center(), probe.reach + 1.0);
    (!scene.inside(&probe.exact().core()) && distance(&probe, &near) > 0.0).then_some((probe, n))
}

/// The first time in `[0, end]` at which `d(t)` comes within `target`, where `d` changes by at
/// most `speed` a unit of time: conservative advancement, `None` when it never does.
fn first_within(d: impl Fn(f64) -> f64, target: f64, speed: f64, end: f64, eps: f64) -> Option<f64> {
    let mut t = 0.0;
    for _ in 0..100_000 {
        let gap = d(t) - target;
        if gap <= eps {
            return Some(t);
        }
        t += gap / speed;
        if t > end {
            return None;
        }
    }
    Some(t)
}

/// `intersects` against the exact answer, for shapes placed as the contacts capability places
/// them.
pub fn run_intersects(scene: &Scene, rng: &mut Rng, probes: usize, tally: &mut Tally) {
    let cold = cold_terrain(scene);
    for _ in 0..probes {
        for kind in KINDS {
            let (p, n) = scene.surface_point(rng);
            let start = random_probe(rng, kind, scene.voxel_size, &p);
            let gap = f64::from(rng.range(-0.5, 0.3)) * f64::from(scene.voxel_size);
            let c = p + n * (start.reach * f64::from(rng.range(0.0, 1.0)) + gap);
            let probe = start
                .at(Pose::from_parts(Vector::new(c.x as f32, c.y as f32, c.z as f32), start.pose.rotation));
            let near = scene.near(&probe.center(), probe.reach + 1.0);
            let d = distance(&probe, &near);
            let exact = probe.exact();
            let overlap = match &exact {
                crate::scene::Exact::Polytope(poly) => {
                    near.iter().map(|t| poly.sat(t)).fold(f64::NEG_INFINITY, f64::max)
                }
                _ => -d,
            };
            let inside = d > 0.0 && scene.inside(&exact.core());
            let tol = tolerance(probe.reach, probe.magnitude());
            let got = scene.terrain.intersects(&*probe.shape, &probe.pose).expect("a valid query");
            let got_cold = cold.intersects(&*probe.shape, &probe.pose).expect("a valid query");
            let mut fails = Vec::new();
            if got != got_cold {
                fails.push(("cache", format!("warm {got}, cold {got_cold}")));
            }
            if (overlap > tol || inside) && !got {
                fails.push((
                    "missed",
                    format!("overlapping by {overlap:.5} (inside {inside}), intersects false"),
                ));
            }
            if d > tol && !inside && got {
                fails.push(("phantom", format!("apart by {d:.5}, intersects true")));
            }
            tally.record(
                kind.name(),
                fails
                    .into_iter()
                    .map(|(r, f)| (r, format!("{} | {} | {f}", scene.describe(), describe(&probe)))),
            );
        }
    }
}

/// `cast_shape` against conservative advancement over exact distances.
pub fn run_casts(scene: &Scene, rng: &mut Rng, probes: usize, tally: &mut Tally) {
    let cold = cold_terrain(scene);
    let vs = f64::from(scene.voxel_size);
    for _ in 0..probes {
        for kind in KINDS {
            let gap = f64::from(rng.range(0.05, 3.0)) * vs;
            let Some((probe, n)) = placed(scene, rng, kind, gap) else {
                tally.skip();
                continue;
            };
            // Toward the surface, tilted up to about 60°; a fifth of the casts skim along it.
            let side = V::new(
                f64::from(rng.range(-1.0, 1.0)),
                f64::from(rng.range(-1.0, 1.0)),
                f64::from(rng.range(-1.0, 1.0)),
            );
            let dir = if rng.below(5) == 0 { side.normalize() } else { (-n + side * 0.8).normalize() };
            let speed = f64::from(rng.range(0.5, 4.0)) * vs;
            let velocity =
                Vector::new((dir.x * speed) as f32, (dir.y * speed) as f32, (dir.z * speed) as f32);
            let max_toi = rng.range(0.5, 3.0);
            let target = [0.0, 0.01, 0.05][rng.below(3) as usize] * scene.voxel_size;
            let options = CastOptions { target_distance: target, stop_at_penetration: true };
            let got = scene
                .terrain
                .cast_shape(&*probe.shape, &probe.pose, velocity, max_toi, options)
                .expect("a valid cast");
            let got_cold = cold
                .cast_shape(&*probe.shape, &probe.pose, velocity, max_toi, options)
                .expect("a valid cast");
            let v64 = V::new(f64::from(velocity.x), f64::from(velocity.y), f64::from(velocity.z));
            let path = v64.norm() * f64::from(max_toi);
            let mid = probe.center() + v64 * f64::from(max_toi) / 2.0;
            let near = scene.near(&mid, probe.reach + path / 2.0 + 1.0);
            let at = |t: f64| {
                let c = probe.center() + v64 * t;
                probe.at(Pose::from_parts(
                    Vector::new(c.x as f32, c.y as f32, c.z as f32),
                    probe.pose.rotation,
                ))
            };
            // Positions round to f32: distances along the path are exact to that.
            let tol = tolerance(probe.reach, probe.magnitude() + path);
            let d = |t: f64| signed(&at(t), &near);
            if d(0.0) <= f64::from(target) + 2.0 * tol {
                // Starting within the target distance: not a cast's first touch.
                tally.skip();
                continue;
            }
            let mut fails = Vec::new();
            if got.map(|h| (h.0, h.1.toi.to_bits())) != got_cold.map(|h| (h.0, h.1.toi.to_bits())) {
                fails.push(("cache", format!("warm {got:?}, cold {got_cold:?}")));
            }
            check_stop(
                &mut fails,
                got.map(|h| f64::from(h.1.toi)),
                &d,
                f64::from(target),
                tol,
                v64.norm(),
                f64::from(max_toi),
            );
            tally.record(
                kind.name(),
                fails.into_iter().map(|(r, f)| {
                    (
                        r,
                        format!(
                            "{} | {} velocity {velocity:?} max_toi {max_toi} target {target} | {f}",
                            scene.describe(),
                            describe(&probe)
                        ),
                    )
                }),
            );
        }
    }
}

/// A stop at `got` (cast time or sweep fraction) against the exact motion, `d` the exact
/// distance along it changing by at most `speed` a unit: the shape is within `target` there, and
/// it came no nearer than `target` less the tolerance before it (a late stop lets it sink in;
/// measured in distance, as a time is ill-conditioned where the motion grazes the surface).
#[allow(clippy::too_many_arguments)]
fn check_stop(
    fails: &mut Vec<(&'static str, String)>,
    got: Option<f64>,
    d: &dyn Fn(f64) -> f64,
    target: f64,
    tol: f64,
    speed: f64,
    end: f64,
) {
    let eps = tol * 0.05;
    match got {
        Some(t) => {
            let at = d(t);
            if at > target + tol {
                fails.push(("early stop", format!("stops at {t} still {at:.5} apart (target {target})")));
            }
            if let Some(f) = first_within(d, target - tol, speed, t, eps)
                && f < t
            {
                fails.push((
                    "late stop",
                    format!("stops at {t}, but at {f} it is already {:.5} apart (target {target})", d(f)),
                ));
            }
        }
        None => {
            if let Some(f) = first_within(d, target - tol, speed, end, eps) {
                fails.push(("missed", format!("no stop, at {f} it is {:.5} apart (target {target})", d(f))));
            }
        }
    }
}

/// `sweep_shape` (rotation included, one-sided) against conservative advancement over exact
/// distances, for shapes in the open moving into the surface.
pub fn run_sweeps(scene: &Scene, rng: &mut Rng, probes: usize, tally: &mut Tally) {
    let cold = cold_terrain(scene);
    let vs = f64::from(scene.voxel_size);
    for _ in 0..probes {
        for kind in KINDS {
            let gap = f64::from(rng.range(0.05, 2.0)) * vs;
            let Some((probe, n)) = placed(scene, rng, kind, gap) else {
                tally.skip();
                continue;
            };
            let side = V::new(
                f64::from(rng.range(-0.5, 0.5)),
                f64::from(rng.range(-0.5, 0.5)),
                f64::from(rng.range(-0.5, 0.5)),
            );
            let motion = (-n + side) * (gap + f64::from(rng.range(0.2, 2.0)) * vs);
            let spin = Rotation::from_scaled_axis(Vector::new(
                rng.range(-0.8, 0.8),
                rng.range(-0.8, 0.8),
                rng.range(-0.8, 0.8),
            ));
            let start = probe.pose;
            let end = Pose::from_parts(
                start.translation + Vector::new(motion.x as f32, motion.y as f32, motion.z as f32),
                spin * start.rotation,
            );
            let sweep = Sweep::from_poses(&start, &end, Vector::ZERO);
            let slop = [0.002, 0.01][rng.below(2) as usize] * scene.voxel_size;
            let got = scene.terrain.sweep_shape(&*probe.shape, &sweep, 1.0, slop).expect("a valid sweep");
            let got_cold = cold.sweep_shape(&*probe.shape, &sweep, 1.0, slop).expect("a valid sweep");
            let path = motion.norm();
            let mid = probe.center() + motion / 2.0;
            let mut near = scene.near(&mid, probe.reach + path / 2.0 + 1.0);
            // Rapier's early-outs for one-sided meshes, which the sweep keeps: a triangle the
            // shape's centroid starts behind, or ends in front of by more than a core of a quarter
            // of its smallest extent having come nearer by less than that, is not swept against
            // (a body grazing past, or resting on, the surface; contacts hold it).
            let com = probe.shape.mass_properties(1.0).local_com;
            let (c1, c2) = (start.transform_point(com), end.transform_point(com));
            let (c1, c2) = (
                V::new(c1.x.into(), c1.y.into(), c1.z.into()),
                V::new(c2.x.into(), c2.y.into(), c2.z.into()),
            );
            let core = f64::from((0.5 * probe.shape.ccd_thickness()).max(slop));
            near.retain(|t| {
                let Some(n) = voxterra_test_support::reference::normal(t) else { return false };
                let (o1, o2) = (n.dot(&(c1 - t[0].coords)), n.dot(&(c2 - t[0].coords)));
                !(o1 < 0.0 || (o1 - o2 < core && o2 > core))
            });
            let at = |f: f64| probe.at(sweep.transform_at(f as f32));
            let tol = tolerance(probe.reach, probe.magnitude() + path);
            let d = |f: f64| signed(&at(f), &near);
            // A point of the shape moves at most the center's path plus its reach times the
            // rotation's rate (the quaternions' chord, twice over for the normalized blend).
            let (q1, q2) = (sweep.q1, sweep.q2);
            let q1 = if q1.dot(q2) < 0.0 { -q1 } else { q1 };
            let chord = f64::from((q1 - q2).length());
            let speed = path + 4.0 * probe.reach * chord + 1e-9;
            // Where rapier's sweep stops (Box2D's time of impact): a shape with a radius around its
            // core (a ball, a capsule) overlapping by the slop, so its contacts exist on arrival;
            // a polytope the slop apart; within a quarter of the slop either way.
            let target = match probe.kind {
                Kind::Ball | Kind::Capsule => -f64::from(slop),
                _ => f64::from(slop),
            };
            let tol = tol + 0.25 * f64::from(slop);
            if d(0.0) <= target.max(0.0) + 2.0 * tol {
                tally.skip();
                continue;
            }
            let mut fails = Vec::new();
            if got.map(|h| (h.0, h.1.fraction.to_bits())) != got_cold.map(|h| (h.0, h.1.fraction.to_bits())) {
                fails.push(("cache", format!("warm {got:?}, cold {got_cold:?}")));
            }
            check_stop(&mut fails, got.map(|h| f64::from(h.1.fraction)), &d, target, tol, speed, 1.0);
            tally.record(
                kind.name(),
                fails.into_iter().map(|(r, f)| {
                    (r, format!("{} | {} to {end:?} slop {slop} | {f}", scene.describe(), describe(&probe)))
                }),
            );
        }
    }
}

/// A probe for reports: its kind, pose and exact shape.
fn describe(probe: &Probe) -> String {
    format!(
        "{:?} at {:?} rot {:?} | {}",
        probe.kind,
        probe.pose.translation,
        probe.pose.rotation,
        probe.exact().describe()
    )
}
