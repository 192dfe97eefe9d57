//! Box and ray queries on each side's tree, checked to agree before they are timed.

use crate::dynamic_tree_suite::sides::{Obvhs, Ours, Parry, Scene, oaabb, paabb};
use crate::harness::{Budget, Report, compare_prechecked};
use crate::world::Rng;
use std::hint::black_box;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Broadphase, Ray};
use voxterra_narrowphase::convert::ToParry;

/// Query cases on the 100%-moving scene of `n` boxes after some frames.
/// The suite's queries in a cube of side `side`: 4096 boxes of side 2 m at random places, their
/// centers as points, and 4096 rays from random places in random directions.
pub(super) struct QuerySet {
    /// The query boxes.
    pub boxes: Vec<Aabb>,
    /// The boxes' centers.
    pub points: Vec<Point3<f32>>,
    /// The rays (unit directions).
    pub rays: Vec<Ray>,
}

impl QuerySet {
    /// The suite's set for a cube of side `side` (fixed seed).
    pub(super) fn new(side: f32) -> Self {
        let mut rng = Rng::new(9);
        let mut unit = || (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        let boxes: Vec<Aabb> = (0..4096)
            .map(|_| {
                let c = Point3::new(unit() * side, unit() * side, unit() * side);
                Aabb::new(c - Vector3::repeat(1.0), c + Vector3::repeat(1.0))
            })
            .collect();
        let points = boxes.iter().map(|b| b.center()).collect();
        let rays = (0..4096)
            .map(|_| {
                let o = Point3::new(unit() * side, unit() * side, unit() * side);
                let d = Vector3::new(unit() - 0.5, unit() - 0.5, unit() - 0.5);
                Ray::new(o, if d.norm() > 1e-3 { d.normalize() } else { Vector3::x() })
            })
            .collect();
        QuerySet { boxes, points, rays }
    }
}

/// `r` as obvhs's ray over `[0, max_t]`.
pub(super) fn oray(r: &Ray, max_t: f32) -> obvhs::ray::Ray {
    obvhs::ray::Ray::new(
        glam::Vec3A::from(r.origin.to_parry()),
        glam::Vec3A::from(r.dir.to_parry()),
        0.0,
        max_t,
    )
}

pub(crate) fn queries(report: &mut Report, budget: Budget, n: usize) {
    let mut scene = Scene::new(n, 1.0, 77);
    let mut ours = Ours::new(&scene);
    let mut parry = Parry::new(&scene);
    let mut obvhs = Obvhs::new(&scene);
    for _ in 0..60 {
        scene.step();
        ours.frame(&scene, false);
        parry.frame(&scene);
        obvhs.frame(&scene);
    }
    let QuerySet { boxes, points, rays } = QuerySet::new(scene.side);
    let tight = &scene;
    let ours_aabb = || {
        let mut s = 0u64;
        for b in &boxes {
            ours.tree.query_aabb(b, &mut |id| {
                s += u64::from(id.0) + 1;
                true
            });
        }
        s
    };
    let parry_aabb = || {
        let mut s = 0u64;
        for b in &boxes {
            let pb = paabb(b);
            for leaf in parry.bvh.intersect_aabb(&pb) {
                if tight.aabb(leaf as usize).intersects(b) {
                    s += u64::from(leaf) + 1;
                }
            }
        }
        s
    };
    let obvhs_aabb = || {
        let mut s = 0u64;
        for b in &boxes {
            obvhs.bvh.aabb_traverse(oaabb(b), |bvh, node| {
                let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize];
                if tight.aabb(prim as usize).intersects(b) {
                    s += u64::from(prim) + 1;
                }
                true
            });
        }
        s
    };
    let k = boxes.len() as u64;
    report.cases.push(crate::harness::compare(
        budget,
        "AABB query",
        "query",
        k,
        "parry Bvh",
        "≥ 1.5×",
        ours_aabb,
        parry_aabb,
    ));
    report.cases.push(crate::harness::compare(
        budget,
        "AABB query",
        "query",
        k,
        "obvhs Bvh2",
        "≥ 1.5×",
        ours_aabb,
        obvhs_aabb,
    ));
    let contains = |b: &Aabb, p: &Point3<f32>| (0..3).all(|i| b.mins[i] <= p[i] && p[i] <= b.maxs[i]);
    let ours_point = || {
        let mut s = 0u64;
        for p in &points {
            ours.tree.query_point(p, &mut |id| {
                s += u64::from(id.0) + 1;
                true
            });
        }
        s
    };
    // parry's side gets its own copies of the points and rays (glam), made before timing.
    let parry_points: Vec<parry3d::math::Vector> = points.iter().map(|p| p.to_parry()).collect();
    let parry_point = || {
        let mut s = 0u64;
        for (p, pp) in points.iter().zip(&parry_points) {
            for leaf in parry.bvh.leaves(|node| node.aabb().contains_local_point(*pp)) {
                if contains(&tight.aabb(leaf as usize), p) {
                    s += u64::from(leaf) + 1;
                }
            }
        }
        s
    };
    let obvhs_point = || {
        let mut s = 0u64;
        for p in &points {
            obvhs.bvh.point_traverse(glam::Vec3A::from(p.to_parry()), |bvh, node| {
                let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize];
                if contains(&tight.aabb(prim as usize), p) {
                    s += u64::from(prim) + 1;
                }
                true
            });
        }
        s
    };
    report.cases.push(crate::harness::compare(
        budget,
        "point query",
        "query",
        k,
        "parry Bvh",
        "≥ 1.5×",
        ours_point,
        parry_point,
    ));
    report.cases.push(crate::harness::compare(
        budget,
        "point query",
        "query",
        k,
        "obvhs Bvh2",
        "≥ 1.5×",
        ours_point,
        obvhs_point,
    ));
    // Closest box entry along each ray, within 20 m; checksum: hits and the sum of entry
    // distances in millimeters (the three ray-box routines may differ in the last bits).
    let max_t = 20.0f32;
    let ours_ray = || {
        let (mut hits, mut mm) = (0u64, 0u64);
        for r in &rays {
            let mut best = f32::INFINITY;
            ours.tree.cast_ray(r, max_t, &mut |id, ray, limit| match tight
                .aabb(id.0 as usize)
                .clip_ray(ray, limit)
            {
                Some((t, _)) => {
                    best = best.min(t);
                    t
                }
                None => limit,
            });
            if best.is_finite() {
                hits += 1;
                mm += (best * 1000.0).round() as u64;
            }
        }
        (hits, mm)
    };
    let parry_rays: Vec<parry3d::query::Ray> = rays.iter().map(|r| r.to_parry()).collect();
    let parry_ray = || {
        let (mut hits, mut mm) = (0u64, 0u64);
        for (r, pr) in rays.iter().zip(&parry_rays) {
            let found = parry.bvh.cast_ray(pr, max_t, |leaf, best| {
                tight.aabb(leaf as usize).clip_ray(r, best).map(|(t, _)| t)
            });
            if let Some((_, t)) = found {
                hits += 1;
                mm += (t * 1000.0).round() as u64;
            }
        }
        (hits, mm)
    };
    let obvhs_ray = || {
        let (mut hits, mut mm) = (0u64, 0u64);
        for r in &rays {
            let or = oray(r, max_t);
            let mut hit = obvhs::ray::RayHit::none();
            let found = obvhs.bvh.ray_traverse(or, &mut hit, |ray, prim_index| {
                let prim = obvhs.bvh.primitive_indices[prim_index];
                tight.aabb(prim as usize).clip_ray(r, ray.tmax).map_or(f32::INFINITY, |(t, _)| t)
            });
            if found {
                hits += 1;
                mm += (hit.t * 1000.0).round() as u64;
            }
        }
        (hits, mm)
    };
    let agree = |a: (u64, u64), b: (u64, u64)| a.0 == b.0 && a.1.abs_diff(b.1) <= a.0;
    let (o, p, ob) = (ours_ray(), parry_ray(), obvhs_ray());
    assert!(agree(o, p) && agree(o, ob), "closest-hit rays disagree: ours {o:?}, parry {p:?}, obvhs {ob:?}");
    report.cases.push(compare_prechecked(
        budget,
        "closest ray",
        "ray",
        k,
        "parry Bvh",
        "≥ 1.5×",
        ours_ray,
        parry_ray,
    ));
    report.cases.push(compare_prechecked(
        budget,
        "closest ray",
        "ray",
        k,
        "obvhs Bvh2",
        "≥ 1.5×",
        ours_ray,
        obvhs_ray,
    ));
    black_box(&scene);
}

/// Only the query cases, on `n` boxes (for probes).
pub fn run_queries(quick: bool, n: usize) -> Report {
    let mut report = Report { suite: "dynamic-aabb-tree queries".into(), ..Report::default() };
    queries(&mut report, Budget::new(quick), n);
    report
}
