//! A wide BVH per physics chunk against the kD tree each chunk keeps: obvhs 0.4's CWBVH (8-wide,
//! 80-byte compressed nodes) built on a chunk's triangles and cast with the project's watertight
//! ray–triangle test, against the chunk's own kD tree cast, on the default world's chunks. Rays
//! come from outside each chunk's box toward a point inside it, as the terrain's rays reach the
//! chunks they cast. Reports the time a cast, the hits that differ, the bytes a triangle and the
//! build times: the measurement that decides whether a wide BVH may replace the kD tree.
//! `cargo run --release -p voxterra-benches --example chunk_bvh_probe -- [CHUNKS] [RAYS_A_CHUNK]`

use obvhs::cwbvh::CwBvh;
use obvhs::cwbvh::builder::build_cwbvh_from_tris;
use obvhs::ray::RayHit as WideHit;
use obvhs::triangle::Triangle;
use obvhs::{BvhBuildParams, ray::Ray as WideRay};
use std::time::{Duration, Instant};
use voxterra::cache::ChunkCollision;
use voxterra::{PrepareBudget, Terrain, TerrainConfig};
use voxterra_benches::world::Rng;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Culling, Ray, TriangleIndex, TriangleSource, ray_triangle};
use voxterra_worldgen::GenParams;

fn vec3a(p: &Point3<f32>) -> glam::Vec3A {
    glam::Vec3A::new(p.x, p.y, p.z)
}

/// The chunk's triangles' closest hit through the wide BVH, ties to the lowest triangle (as the
/// kD tree breaks them).
fn wide_cast(bvh: &CwBvh, c: &ChunkCollision, ray: &Ray) -> Option<(f32, u32)> {
    let wide = WideRay::new(vec3a(&ray.origin), glam::Vec3A::new(ray.dir.x, ray.dir.y, ray.dir.z), 0.0, 1e4);
    let mut hit = WideHit::none();
    let mut best: Option<(f32, u32)> = None;
    bvh.ray_traverse(wide, &mut hit, |r, id| {
        let t = bvh.primitive_indices[id];
        let tri = c.mesh.triangle(t as usize);
        match ray_triangle(ray, &tri, r.tmax, Culling::None) {
            Some((th, _, _)) => {
                if best.is_none_or(|(bt, bi)| th < bt || (th == bt && t < bi)) {
                    best = Some((th, t));
                }
                // A tie stays open: the traversal keeps looking at the same distance.
                th.next_up()
            }
            None => f32::INFINITY,
        }
    });
    best
}

fn main() {
    let mut args = std::env::args().skip(1);
    let chunks: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3000);
    let per: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let t = Terrain::generate(&GenParams::new(1, [512, 128, 512]), TerrainConfig::default()).expect("world");
    let whole = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(512.0, 128.0, 512.0));
    t.prepare(&[whole], PrepareBudget::UNLIMITED);
    let keys = t.cached_chunks();
    let with_mesh: Vec<_> = keys.iter().filter_map(|&k| t.cached_chunk(k).flatten()).collect();
    let step = (with_mesh.len() / chunks.max(1)).max(1);
    let sample: Vec<_> = with_mesh.iter().step_by(step).take(chunks).cloned().collect();
    let mut rng = Rng::new(11);
    let (mut kd_build, mut wide_build) = (Duration::ZERO, Duration::ZERO);
    let (mut kd_bytes, mut wide_bytes, mut triangles) = (0usize, 0usize, 0usize);
    let mut cases = Vec::with_capacity(sample.len());
    for c in &sample {
        let tris: Vec<Triangle> = (0..c.mesh.triangle_count())
            .map(|i| {
                let p = c.mesh.triangle(i);
                Triangle { v0: vec3a(&p[0]), v1: vec3a(&p[1]), v2: vec3a(&p[2]) }
            })
            .collect();
        let start = Instant::now();
        let mut core = Duration::ZERO;
        let bvh = build_cwbvh_from_tris(&tris, build_params(), &mut core);
        wide_build += start.elapsed();
        let start = Instant::now();
        let again = voxterra_kdtree::KdTree::build(&c.mesh).expect("a tree");
        kd_build += start.elapsed();
        kd_bytes += again.stats().bytes;
        wide_bytes +=
            bvh.nodes.len() * std::mem::size_of_val(&bvh.nodes[0]) + bvh.primitive_indices.len() * 4;
        triangles += tris.len();
        let b = *c.tree.bounds();
        let (center, reach) = (b.center(), (b.maxs - b.mins).norm());
        let rays: Vec<Ray> = (0..per)
            .filter_map(|_| {
                let d = Vector3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
                let origin = center + d.try_normalize(1e-3)? * reach;
                let inside = Point3::new(
                    rng.range(b.mins.x, b.maxs.x),
                    rng.range(b.mins.y, b.maxs.y),
                    rng.range(b.mins.z, b.maxs.z),
                );
                Ray::try_new(origin, inside - origin).ok()
            })
            .collect();
        cases.push((c.clone(), bvh, rays));
    }
    // The same answers first.
    let (mut casts, mut differ, mut hits) = (0usize, 0usize, 0usize);
    for (c, bvh, rays) in &cases {
        for r in rays {
            let kd = c.tree.with(&c.mesh).cast_ray(r, 1e4, Culling::None).map(|h| (h.t, h.triangle));
            let wide = wide_cast(bvh, c, r);
            casts += 1;
            hits += usize::from(kd.is_some());
            if kd != wide && differ < 3 {
                println!("differs: kD {kd:?}, CWBVH {wide:?}");
            }
            differ += usize::from(kd != wide);
        }
    }
    // Interleaved rounds, medians.
    let (mut kd_ns, mut wide_ns) = (Vec::new(), Vec::new());
    for _ in 0..7 {
        let start = Instant::now();
        let mut sink = 0.0f32;
        for (c, _, rays) in &cases {
            for r in rays {
                sink += c.tree.with(&c.mesh).cast_ray(r, 1e4, Culling::None).map_or(0.0, |h| h.t);
            }
        }
        kd_ns.push(start.elapsed().as_nanos() as f64 / casts as f64);
        std::hint::black_box(sink);
        let start = Instant::now();
        let mut sink = 0.0f32;
        for (c, bvh, rays) in &cases {
            for r in rays {
                sink += wide_cast(bvh, c, r).map_or(0.0, |h| h.0);
            }
        }
        wide_ns.push(start.elapsed().as_nanos() as f64 / casts as f64);
        std::hint::black_box(sink);
    }
    kd_ns.sort_by(f64::total_cmp);
    wide_ns.sort_by(f64::total_cmp);
    let (kd, wide) = (kd_ns[3], wide_ns[3]);
    println!(
        "{} chunks, {triangles} triangles, {casts} casts ({hits} hit), {differ} answers differ",
        cases.len()
    );
    println!("cast a chunk: kD {kd:.1} ns, CWBVH {wide:.1} ns: the wide BVH {:.2}x as fast", kd / wide);
    println!(
        "bytes a triangle (index only): kD {:.2}, CWBVH {:.2}",
        kd_bytes as f64 / triangles as f64,
        wide_bytes as f64 / triangles as f64
    );
    println!(
        "build a chunk: kD {:.1} us, CWBVH {:.1} us",
        kd_build.as_secs_f64() * 1e6 / cases.len() as f64,
        wide_build.as_secs_f64() * 1e6 / cases.len() as f64
    );
}

/// obvhs's build preset, by `PRESET` (fastest, fast, medium: the default).
fn build_params() -> BvhBuildParams {
    match std::env::var("PRESET").as_deref() {
        Ok("fastest") => BvhBuildParams::fastest_build(),
        Ok("fast") => BvhBuildParams::fast_build(),
        _ => BvhBuildParams::medium_build(),
    }
}
