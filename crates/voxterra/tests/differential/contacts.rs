//! Contacts against the exact f64 answer: a shape touching the terrain gets a contact; a ball's
//! (and a capsule's, a box's, a hull's) distance in the open equals the exact distance to the
//! nearest triangle; no depth exceeds the deepest exact per-triangle penetration; the answer is
//! the same whatever the caches hold.

use crate::Tally;
use crate::scene::{Exact, KINDS, Kind, Probe, Scene, cold_terrain, random_probe, tolerance};
use voxterra::parry3d::math::{Pose, Vector};
use voxterra::{Terrain, TerrainContactCache, TerrainManifold};
use voxterra_test_support::Rng;
use voxterra_test_support::reference::{P, Tri, V, closest_on_triangle, normal, segment_crosses_triangle};

/// What one contact query answered, in f64.
struct Answer {
    /// The deepest point's signed distance, `None` without contacts.
    min_dist: Option<f64>,
    manifolds: Vec<TerrainManifold>,
}

fn answer(t: &Terrain, probe: &Probe, prediction: f32) -> Answer {
    let mut out = Vec::new();
    t.contacts(&*probe.shape, &probe.pose, prediction, &mut out).expect("a valid query");
    let min_dist = out.iter().map(|m| f64::from(m.manifold.min_dist())).reduce(f64::min);
    Answer { min_dist, manifolds: out }
}

/// The points of `manifolds`, briefly.
fn compact(manifolds: &[TerrainManifold]) -> String {
    let mut s = String::new();
    for m in manifolds {
        for p in m.manifold.points() {
            s += &format!(
                "[{:?} t{} {:?} {:?} d {:.4} n ({:.3}, {:.3}, {:.3})] ",
                m.chunk.to_array(),
                p.id.triangle,
                p.id.feature,
                p.correction,
                p.dist,
                p.normal.x,
                p.normal.y,
                p.normal.z
            );
        }
    }
    s
}

/// How far the shape reaches from its core along `-n` (so a pose `extent + gap` along `n` from a
/// surface point leaves that gap under it).
fn extent_along(exact: &Exact, n: &V) -> f64 {
    match exact {
        Exact::Ball(_, r) => *r,
        Exact::Capsule(a, b, r) => {
            let c = (a.coords + b.coords) / 2.0;
            (a.coords - c).dot(n).abs() + r
        }
        Exact::Polytope(p) => {
            let c = exact.core();
            p.support(&-n) + c.coords.dot(n)
        }
    }
}

/// A ball's exact penetration of one one-sided triangle: with its centre behind the triangle's
/// plane, the radius plus the centre's distance to the triangle (its depth under the face when
/// over it; `slack` admits a centre just past the face's rim as over it); in front, the overlap.
fn ball_penetration(c: &P, r: f64, t: &Tri, slack: f64) -> f64 {
    let (q, _) = closest_on_triangle(c, t);
    let Some(n) = normal(t) else { return f64::NEG_INFINITY };
    let h = (c - t[0]).dot(&n);
    let foot = c - n * h;
    let over = (closest_on_triangle(&foot, t).0 - foot).norm() <= slack;
    match (h < 0.0, over) {
        (true, true) => r - h,
        (true, false) => r + (c - q).norm(),
        _ => r - (c - q).norm(),
    }
}

/// One probe: a shape of `kind` placed over a random surface point with a gap from −0.6 of its
/// size (penetrating) through 0 (touching) to a few tenths of a voxel (apart).
pub fn probe(scene: &Scene, rng: &mut Rng, kind: Kind, cold: &Terrain, tally: &mut Tally) {
    let vs = f64::from(scene.voxel_size);
    let (p, n) = scene.surface_point(rng);
    let start = random_probe(rng, kind, scene.voxel_size, &p);
    let extent = extent_along(&start.exact(), &n);
    let gap = match rng.below(4) {
        0 => f64::from(rng.range(-0.6, 0.0)) * extent,
        1 => f64::from(rng.range(-0.02, 0.02)) * vs,
        2 => f64::from(rng.range(0.0, 0.3)) * vs,
        _ => f64::from(rng.range(-0.1, 0.1)) * vs,
    };
    let c = p + n * (extent + gap);
    let pose = Pose::from_parts(Vector::new(c.x as f32, c.y as f32, c.z as f32), start.pose.rotation);
    let probe = start.at(pose);
    let prediction = [0.0, 0.002, 0.02, 0.1][rng.below(4) as usize] * scene.voxel_size;
    check(scene, &probe, prediction, cold, tally);
}

/// Checks one query against the exact answer and against the cold terrain and a kept cache.
pub fn check(scene: &Scene, probe: &Probe, prediction: f32, cold: &Terrain, tally: &mut Tally) {
    let exact = probe.exact();
    let warm = answer(&scene.terrain, probe, prediction);
    let mut fails: Vec<(&'static str, String)> = Vec::new();
    // The same answer from a cold cache and from a kept contact cache, bit for bit.
    let cold_answer = answer(cold, probe, prediction);
    if cold_answer.manifolds != warm.manifolds {
        fails.push((
            "cache",
            format!("cold cache differs: {:?} against warm {:?}", cold_answer.manifolds, warm.manifolds),
        ));
    }
    let mut cache = TerrainContactCache::new();
    let (mut kept, mut points) = (Vec::new(), Vec::new());
    scene
        .terrain
        .contacts_kept(&*probe.shape, &probe.pose, prediction, &mut cache, &mut kept, &mut points)
        .expect("a valid query");
    if kept != warm.manifolds {
        fails.push(("kept cache", format!("kept contacts differ: {kept:?} against {:?}", warm.manifolds)));
    }
    match judge(scene, probe, prediction, warm.min_dist) {
        Some(more) => fails.extend(more),
        None => {
            tally.skip();
            return;
        }
    }
    tally.record(
        probe.kind.name(),
        fails.iter().map(|(rule, f)| {
            (
                *rule,
                format!(
                    "{} | {:?} at {:?} rot {:?} prediction {prediction} | {f} | {} | points {}",
                    scene.describe(),
                    probe.kind,
                    probe.pose.translation,
                    probe.pose.rotation,
                    exact.describe(),
                    compact(&warm.manifolds)
                ),
            )
        }),
    );
}

/// The disagreements of a contact query's answer (`rep`: its deepest point's signed distance,
/// `None` without contacts) with the exact one; `None` when no triangle is near enough to say.
pub fn judge(
    scene: &Scene,
    probe: &Probe,
    prediction: f32,
    rep: Option<f64>,
) -> Option<Vec<(&'static str, String)>> {
    let exact = probe.exact();
    let pred = f64::from(prediction);
    let tol = tolerance(probe.reach, probe.magnitude());
    let mut fails: Vec<(&'static str, String)> = Vec::new();
    let core = exact.core();
    let near = scene.near(&core, probe.reach + pred + 3.0 * f64::from(scene.voxel_size));
    let sd = scene.signed_distance(&core, &near)?;
    let dist = near.iter().map(|t| exact.distance(t)).fold(f64::INFINITY, f64::min);
    let touching = dist <= 0.0;
    match &exact {
        Exact::Ball(c, r) => {
            let ex = sd - r;
            if ex < -tol && rep.is_none() {
                fails.push(("touching without contact", format!("touching (exact {ex:.5}), no contact")));
            }
            if sd > 0.0 {
                if ex <= pred - tol {
                    match rep {
                        Some(d) if (d - ex).abs() <= tol => {}
                        _ => fails.push((
                            "distance",
                            format!("distance {rep:?} against exact {ex:.5} (tolerance {tol:.5})"),
                        )),
                    }
                } else if ex > pred + tol && rep.is_some() {
                    fails.push((
                        "beyond prediction",
                        format!("contact {rep:?} beyond the prediction, exact {ex:.5}"),
                    ));
                }
            } else if rep.is_none_or(|d| d > ex + tol) {
                fails.push((
                    "inside not deep enough",
                    format!("centre inside (exact {ex:.5}), reported {rep:?}"),
                ));
            }
            let slack = 4.0 * crate::scene::spacing(probe.magnitude()) + 1e-4 * f64::from(scene.voxel_size);
            let deepest =
                near.iter().map(|t| ball_penetration(c, *r, t, slack)).fold(f64::NEG_INFINITY, f64::max);
            if let Some(d) = rep
                && -d > deepest + tol
            {
                fails.push((
                    "too deep",
                    format!("depth {:.5} past the deepest per-triangle penetration {deepest:.5}", -d),
                ));
            }
        }
        Exact::Capsule(a, b, r) => {
            let crossing = near.iter().any(|t| segment_crosses_triangle(a, b, t).is_some());
            let core_dist = near
                .iter()
                .map(|t| voxterra_test_support::reference::segment_triangle_distance(a, b, t))
                .fold(f64::INFINITY, f64::min);
            let ex = core_dist - r;
            if crossing || sd < 0.0 {
                if rep.is_none_or(|d| d > tol) {
                    fails.push(("core inside, no contact", format!("core in the solid, reported {rep:?}")));
                }
            } else {
                if ex < -tol && rep.is_none() {
                    fails.push(("touching without contact", format!("touching (exact {ex:.5}), no contact")));
                }
                if ex <= pred - tol {
                    match rep {
                        Some(d) if (d - ex).abs() <= tol => {}
                        _ => fails.push((
                            "distance",
                            format!("distance {rep:?} against exact {ex:.5} (tolerance {tol:.5})"),
                        )),
                    }
                } else if ex > pred + tol && rep.is_some() {
                    fails.push((
                        "beyond prediction",
                        format!("contact {rep:?} beyond the prediction, exact {ex:.5}"),
                    ));
                }
            }
        }
        Exact::Polytope(poly) => {
            // The deepest two-sided overlap with one triangle: no way out of the surface is
            // shorter.
            let overlap = near.iter().map(|t| poly.sat(t)).fold(f64::NEG_INFINITY, f64::max);
            if touching {
                if overlap > tol && rep.is_none_or(|d| d > tol) {
                    fails.push((
                        "touching without contact",
                        format!("overlapping by {overlap:.5}, reported {rep:?}"),
                    ));
                }
                // Depth: at most the deepest of each overlapped triangle's two-sided depth and,
                // for a triangle whose column the shape reaches into, its depth along the
                // triangle's normal.
                let deepest = near
                    .iter()
                    .map(|t| {
                        let n = normal(t).unwrap_or(V::y());
                        let two_sided = poly.sat(t);
                        let column = if poly.over(t) {
                            n.dot(&t[0].coords) + poly.support(&-n)
                        } else {
                            f64::NEG_INFINITY
                        };
                        if two_sided >= 0.0 { two_sided.max(column) } else { column }
                    })
                    .fold(f64::NEG_INFINITY, f64::max);
                if let Some(d) = rep
                    && -d > deepest + tol
                {
                    fails.push((
                        "too deep",
                        format!("depth {:.5} past the deepest per-triangle penetration {deepest:.5}", -d),
                    ));
                }
            } else if sd < 0.0 {
                if rep.is_none_or(|d| d > 0.0) {
                    fails.push(("inside, no contact", format!("inside the solid, reported {rep:?}")));
                }
            } else if dist <= pred - tol {
                match rep {
                    Some(d) if (d - dist).abs() <= tol => {}
                    _ => fails.push((
                        "distance",
                        format!("distance {rep:?} against exact {dist:.5} (tolerance {tol:.5})"),
                    )),
                }
            } else if dist > pred + tol && rep.is_some() {
                fails.push((
                    "beyond prediction",
                    format!("contact {rep:?} beyond the prediction, exact {dist:.5}"),
                ));
            }
        }
    }
    Some(fails)
}

/// The contacts capability over one scene: `probes` probes of each kind.
pub fn run(scene: &Scene, rng: &mut Rng, probes: usize, tally: &mut Tally) {
    let cold = cold_terrain(scene);
    for _ in 0..probes {
        for kind in KINDS {
            probe(scene, rng, kind, &cold, tally);
        }
    }
}
