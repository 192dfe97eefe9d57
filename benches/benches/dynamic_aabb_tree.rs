//! Criterion benches of the dynamic AABB tree: one frame of the bouncing-boxes scene (moves and
//! pairs), an AABB query, and creating the scene's boxes one by one and as one batch.

#![allow(clippy::unwrap_used)] // bench setup: a failed unwrap is a broken bench
#![allow(missing_docs)] // criterion_main! generates an undocumented main

use criterion::{Criterion, criterion_group, criterion_main};
use voxterra_benches::dynamic_tree_suite::{Obvhs, Ours, Scene};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, Broadphase};
use voxterra_dynamic_aabb_tree::{DynamicAabbTree, ProxyKind};

fn dynamic_tree(c: &mut Criterion) {
    let mut g = c.benchmark_group("dynamic_aabb_tree");
    for share in [1.0, 0.1] {
        let mut scene = Scene::new(10_000, share, 3);
        let mut ours = Ours::new(&scene);
        // Check the answer once: one frame's pairs, counted as obvhs counts them (the suite's
        // check), on a scene of its own so the timed one starts where it would.
        let mut check = Scene::new(10_000, share, 3);
        let (mut a, mut b) = (Ours::new(&check), Obvhs::new(&check));
        for _ in 0..3 {
            check.step();
            assert_eq!(a.frame(&check, false), b.frame(&check));
        }
        g.bench_function(format!("frame_10k_{}pct", (share * 100.0) as u32), |b| {
            b.iter(|| {
                scene.step();
                ours.frame(&scene, false)
            })
        });
    }
    let scene = Scene::new(10_000, 1.0, 4);
    let ours = Ours::new(&scene);
    let probe = Aabb::new(Point3::new(10.0, 10.0, 10.0), Point3::new(12.0, 12.0, 12.0));
    let mut found = vec![];
    ours.tree.query_aabb(&probe, &mut |id| {
        found.push(id.0 as usize);
        true
    });
    found.sort_unstable();
    let brute: Vec<usize> = (0..scene.pos.len()).filter(|&i| scene.aabb(i).intersects(&probe)).collect();
    assert_eq!(found, brute);
    g.bench_function("aabb_query_10k", |b| {
        b.iter(|| {
            let mut n = 0;
            ours.tree.query_aabb(&probe, &mut |_| {
                n += 1;
                true
            });
            n
        })
    });
    let boxes: Vec<(Aabb, u64)> = (0..scene.pos.len()).map(|i| (scene.aabb(i), i as u64)).collect();
    // Both ways of creating give the same proxies.
    let (mut one, mut many) = (DynamicAabbTree::new(), DynamicAabbTree::new());
    let ids: Vec<_> =
        boxes.iter().map(|&(b, d)| one.create_proxy_of_kind(b, d, ProxyKind::Dynamic).unwrap()).collect();
    assert_eq!(many.create_proxies(&boxes, ProxyKind::Dynamic).unwrap(), ids);
    assert_eq!(one.stats().proxies, many.stats().proxies);
    g.bench_function("create_10k_one_by_one", |b| {
        b.iter(|| {
            let mut tree = DynamicAabbTree::new();
            for &(aabb, data) in &boxes {
                tree.create_proxy_of_kind(aabb, data, ProxyKind::Dynamic).unwrap();
            }
            tree
        })
    });
    g.bench_function("create_many_10k", |b| {
        b.iter(|| {
            let mut tree = DynamicAabbTree::new();
            tree.create_proxies(&boxes, ProxyKind::Dynamic).unwrap();
            tree
        })
    });
    g.finish();
}

criterion_group!(benches, dynamic_tree);
criterion_main!(benches);
