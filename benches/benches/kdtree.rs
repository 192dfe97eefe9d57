//! Criterion benches of the kD tree: build and queries on a terrain grid.

#![allow(clippy::unwrap_used)] // bench setup: a failed unwrap is a broken bench
#![allow(missing_docs)] // criterion_main! generates an undocumented main

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, BruteForceTriangles, Culling, Ray, TriangleIndex, TriangleMesh};
use voxterra_kdtree::KdTree;

/// A bumpy `n` × `n` quad grid.
fn grid(n: u32) -> TriangleMesh {
    voxterra_test_support::grid_mesh(n, 1.0, |x, z| ((x as u32 * 7 + z as u32 * 3) % 11) as f32 * 0.2)
}

fn kdtree(c: &mut Criterion) {
    let mesh = grid(100);
    let tree = KdTree::build(&mesh).unwrap();
    let view = tree.with(&mesh);
    let ray = Ray::new(Point3::new(37.3, 10.0, 61.7), Vector3::new(0.0, -1.0, 0.0));
    // Check every timed query's answer once against the brute force over all triangles.
    let brute = BruteForceTriangles(&mesh);
    let hit = view.cast_ray(&ray, 100.0, Culling::None);
    assert!(hit.is_some());
    assert_eq!(hit, brute.cast_ray(&ray, 100.0, Culling::None));
    let in_box = |index: &dyn TriangleIndex, b: &Aabb| {
        let mut v = vec![];
        index.triangles_in_aabb(b, &mut |t| v.push(t));
        v.sort_unstable();
        v
    };
    let mut g = c.benchmark_group("kdtree");
    g.throughput(Throughput::Elements(mesh.triangles.len() as u64));
    g.bench_function("build 20k triangles", |b| b.iter(|| KdTree::build(&mesh).unwrap()));
    g.throughput(Throughput::Elements(1));
    g.bench_function("closest hit, down", |b| b.iter(|| view.cast_ray(&ray, 100.0, Culling::None)));
    let aabb = Aabb::new(Point3::new(40.2, -1.0, 40.3), Point3::new(42.7, 3.0, 42.8));
    assert!(!in_box(&view, &aabb).is_empty());
    assert_eq!(in_box(&view, &aabb), in_box(&brute, &aabb));
    g.bench_function("aabb query 2.5^3", |b| {
        b.iter(|| {
            let mut k = 0;
            view.triangles_in_aabb(&aabb, &mut |_| k += 1);
            k
        })
    });
    // 1024 rays on an 80k-triangle grid (past the size where `cast_rays` batches), one by one
    // and batched.
    let big = grid(200);
    let big_tree = KdTree::build(&big).unwrap();
    let big_view = big_tree.with(&big);
    let rays: Vec<Ray> = (0..1024u32)
        .map(|i| {
            let (x, z) = ((i * 7919) % 19_900, (i * 104_729) % 19_900);
            let o = Point3::new(x as f32 / 100.0, 5.0, z as f32 / 100.0);
            Ray::new(o, Vector3::new(0.3, -1.0, 0.2).normalize())
        })
        .collect();
    let mut hits = vec![None; rays.len()];
    big_view.cast_rays(&rays, f32::MAX, Culling::None, &mut hits);
    let big_brute = BruteForceTriangles(&big);
    for (i, r) in rays.iter().enumerate() {
        let one = big_view.cast_ray(r, f32::MAX, Culling::None);
        assert_eq!(one, hits[i], "batched and single casts agree");
        if i % 16 == 0 {
            assert_eq!(
                one,
                big_brute.cast_ray(r, f32::MAX, Culling::None),
                "ray {i} against the brute force"
            );
        }
    }
    g.throughput(Throughput::Elements(rays.len() as u64));
    g.bench_function("closest hit, 1024 oblique rays, one by one", |b| {
        b.iter(|| rays.iter().filter(|r| big_view.cast_ray(r, f32::MAX, Culling::None).is_some()).count())
    });
    g.bench_function("closest hit, 1024 oblique rays, batched", |b| {
        b.iter(|| {
            big_view.cast_rays(&rays, f32::MAX, Culling::None, &mut hits);
            hits.iter().filter(|h| h.is_some()).count()
        })
    });
    // 1024 character-sized boxes on the 80k grid (past the size where box queries defer their
    // leaves' tests).
    let boxes: Vec<Aabb> = (0..1024u32)
        .map(|i| {
            let (x, z) = ((i * 7919) % 19_700, (i * 104_729) % 19_700);
            let lo = Point3::new(x as f32 / 100.0, -1.0, z as f32 / 100.0);
            Aabb::new(lo, lo + Vector3::new(2.5, 2.5, 2.5))
        })
        .collect();
    for bx in boxes.iter().step_by(16) {
        assert_eq!(in_box(&big_view, bx), in_box(&big_brute, bx));
    }
    g.bench_function("aabb queries 2.5^3, 1024 on 80k triangles", |b| {
        b.iter(|| {
            let mut k = 0;
            for bx in &boxes {
                big_view.triangles_in_aabb(bx, &mut |_| k += 1);
            }
            k
        })
    });
    g.finish();
}

criterion_group!(benches, kdtree);
criterion_main!(benches);
