//! Rays against f64 ray–triangle intersection over every triangle: the first hit is the nearest
//! one the exact test finds (within rounding at shared edges), nothing is hit where nothing is,
//! `max_t` is a closed bound (a ray whose `max_t` is its own hit's `t` hits it again), and the
//! answer is the same, bit for bit, from a warm and a cold cache.

use crate::Tally;
use crate::scene::{Scene, cold_terrain, spacing, tolerance};
use voxterra::core::Ray;
use voxterra::core::nalgebra::Vector3;
use voxterra::{Terrain, TerrainRayHit};
use voxterra_test_support::Rng;
use voxterra_test_support::reference::{P, V, ray_triangle};

/// One ray: from near the surface (above it, under it, or far off) in a random direction, axis
/// aligned a third of the time.
fn random_ray(scene: &Scene, rng: &mut Rng) -> Ray {
    let vs = f64::from(scene.voxel_size);
    let (p, n) = scene.surface_point(rng);
    let off = V::new(
        f64::from(rng.range(-1.0, 1.0)),
        f64::from(rng.range(-1.0, 1.0)),
        f64::from(rng.range(-1.0, 1.0)),
    );
    let origin = p + n * f64::from(rng.range(-2.0, 6.0)) * vs + off * vs;
    let dir = match rng.below(3) {
        0 => {
            let axis = rng.below(3) as usize;
            let mut d = Vector3::zeros();
            d[axis] = if rng.below(2) == 0 { 1.0 } else { -1.0 };
            d
        }
        1 => {
            // Toward the surface point: rays that hit.
            let d = (p - origin).map(|v| v as f32);
            d.try_normalize(1e-6).unwrap_or_else(Vector3::y)
        }
        _ => Vector3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0))
            .try_normalize(1e-3)
            .unwrap_or_else(Vector3::x),
    };
    Ray::new(origin.map(|v| v as f32), dir)
}

/// Checks one ray against the exact hits, the cold terrain and its own `max_t`.
pub fn check(scene: &Scene, ray: &Ray, max_t: f32, cold: &Terrain, tally: &mut Tally) {
    let mut fails: Vec<(&'static str, String)> = Vec::new();
    let warm = scene.terrain.cast_ray(ray, max_t).expect("a valid ray");
    let cold_hit = cold.cast_ray(ray, max_t).expect("a valid ray");
    if warm != cold_hit {
        fails.push(("cache", format!("warm {warm:?}, cold {cold_hit:?}")));
    }
    fails.extend(judge(scene, ray, max_t, warm));
    if let Some(h) = warm {
        // A closed interval: `max_t` at the hit's own `t` finds it again.
        let again = scene.terrain.cast_ray(ray, h.t).expect("a valid ray");
        if again != Some(h) {
            fails.push(("max_t at the hit", format!("max_t {} gives {again:?}, not {h:?}", h.t)));
        }
    }
    tally.record(
        "ray",
        fails.into_iter().map(|(rule, f)| {
            (
                rule,
                format!("{} | ray {:?} dir {:?} max_t {max_t} | {f}", scene.describe(), ray.origin, ray.dir),
            )
        }),
    );
}

/// The disagreements of a ray's answer `hit` with the exact first crossing.
pub fn judge(
    scene: &Scene,
    ray: &Ray,
    max_t: f32,
    hit: Option<TerrainRayHit>,
) -> Vec<(&'static str, String)> {
    let mut fails: Vec<(&'static str, String)> = Vec::new();
    let origin = P::new(f64::from(ray.origin.x), f64::from(ray.origin.y), f64::from(ray.origin.z));
    let dir = V::new(f64::from(ray.dir.x), f64::from(ray.dir.y), f64::from(ray.dir.z));
    let len = dir.norm();
    let magnitude = origin.coords.amax() + f64::from(max_t.min(1e4)) * len;
    // Lengths along the ray (world units), and how far inside an edge (relative to the triangle)
    // a crossing must be to count as certain.
    let tol_t = tolerance(0.0, magnitude) / len;
    let edge = |size: f64| 8.0 * spacing(magnitude) / size + 1e-6;
    let max_t64 = f64::from(max_t);
    let mut certain = f64::INFINITY;
    for t in &scene.tris {
        let Some((s, margin)) = ray_triangle(&origin, &dir, t) else { continue };
        let size = (t[1] - t[0]).norm().max((t[2] - t[0]).norm()).max((t[2] - t[1]).norm());
        if margin >= edge(size) && s >= tol_t && s <= max_t64 - tol_t {
            certain = certain.min(s);
        }
    }
    match hit {
        Some(h) => {
            let t = f64::from(h.t);
            if t > certain + tol_t {
                fails.push((
                    "late hit",
                    format!("t {t} past the exact first hit {certain} (tolerance {tol_t:.2e})"),
                ));
            }
            if !(t >= -tol_t && t <= max_t64 + tol_t) {
                fails.push(("outside [0, max_t]", format!("t {t}, max_t {max_t}")));
            }
            // The triangle hit is one the exact test crosses there (within rounding of an edge).
            match scene.triangle_index(h.chunk, h.triangle) {
                Some(i) => {
                    let tri = &scene.tris[i];
                    let size = (tri[1] - tri[0]).norm().max((tri[2] - tri[0]).norm());
                    match ray_triangle(&origin, &dir, tri) {
                        Some((s, margin)) if margin >= -edge(size) && (s - t).abs() <= tol_t => {}
                        other => {
                            fails.push(("phantom hit", format!("{h:?} but the exact crossing is {other:?}")))
                        }
                    }
                }
                None => fails.push(("phantom hit", format!("{h:?}: no such triangle"))),
            }
        }
        None => {
            if certain.is_finite() {
                fails.push(("missed", format!("no hit, the exact first hit is at {certain}")));
            }
        }
    }
    fails
}

/// The rays capability over one scene: `probes` rays, each with a long `max_t`, one just past the
/// exact hit and one exactly at the hit a first cast found.
pub fn run(scene: &Scene, rng: &mut Rng, probes: usize, tally: &mut Tally) {
    let cold = cold_terrain(scene);
    for _ in 0..probes {
        let ray = random_ray(scene, rng);
        let max_t = match rng.below(3) {
            0 => 1e4,
            1 => rng.range(0.0, 8.0) * scene.voxel_size,
            _ => scene.terrain.cast_ray(&ray, 1e4).expect("a valid ray").map_or(1e4, |h| h.t),
        };
        check(scene, &ray, max_t, &cold, tally);
    }
    fan(scene, &random_ray(scene, rng), rng, &cold, tally);
}

/// A camera's coherent rays around `ray` (one origin, within a few degrees: `cast_rays` takes
/// them in packets): each the same, bit for bit, as the ray cast alone, and judged exact.
fn fan(scene: &Scene, ray: &Ray, rng: &mut Rng, cold: &Terrain, tally: &mut Tally) {
    let (u, v) = {
        let a = if ray.dir.x.abs() < 0.9 { Vector3::x() } else { Vector3::y() };
        let u = ray.dir.cross(&a).normalize();
        (u, ray.dir.cross(&u))
    };
    let spread = rng.range(0.001, 0.05);
    let rays: Vec<Ray> = (0..100)
        .map(|i| {
            let (x, y) = ((i % 10) as f32 - 4.5, (i / 10) as f32 - 4.5);
            Ray::new(ray.origin, ray.dir + u * (x * spread / 4.5) + v * (y * spread / 4.5))
        })
        .collect();
    let max_t = if rng.below(2) == 0 { 1e4 } else { rng.range(0.0, 8.0) * scene.voxel_size };
    let mut hits = Vec::new();
    cold.cast_rays(&rays, max_t, &mut hits).expect("valid rays");
    for (r, h) in rays.iter().zip(hits) {
        let single = scene.terrain.cast_ray(r, max_t).expect("a valid ray");
        let mut fails = judge(scene, r, max_t, h);
        if h != single {
            fails.push(("packet", format!("in a packet {h:?}, alone {single:?}")));
        }
        tally.record(
            "ray",
            fails.into_iter().map(|(rule, f)| {
                (
                    rule,
                    format!(
                        "{} | fan ray {:?} dir {:?} max_t {max_t} | {f}",
                        scene.describe(),
                        r.origin,
                        r.dir
                    ),
                )
            }),
        );
    }
}
