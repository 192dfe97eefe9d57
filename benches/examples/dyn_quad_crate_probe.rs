//! EXPERIMENT (branch `wip/quad-tree`): the crate's 4-wide tree (a read-only snapshot of the
//! moving proxies) against the binary tree and obvhs, on the dynamic-tree suite's query scene.
//! `cargo run --release -p voxterra-benches --example dyn_quad_crate_probe -- point|ray|pairs [REPS]`
//! The three sides run interleaved in a shuffled order each rep (the suite's cache regime);
//! medians. `N=` sets the box count (default 100 000). `pairs`: the pair update with `STRIDE=k`
//! (every k-th mover moves) and `SHARE=s` (a share of the boxes are movers, the rest static).
use std::hint::black_box;
use voxterra_benches::dynamic_tree_suite::{Obvhs, Ours, QuerySet, Scene, oray};
use voxterra_core::Broadphase;
use voxterra_core::nalgebra::Point3;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let mode = a.get(1).map_or("point", |s| s.as_str()).to_string();
    let reps: usize = a.get(2).and_then(|s| s.parse().ok()).unwrap_or(30);
    let n: usize = std::env::var("N").ok().and_then(|s| s.parse().ok()).unwrap_or(100_000);
    // `SHARE=s`: the share of boxes that move (the rest are static proxies), as the suite's cells.
    let share: f64 = std::env::var("SHARE").ok().and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let mut scene = Scene::new(n, share, 77);
    let mut ours = Ours::new(&scene);
    let mut obvhs = Obvhs::new(&scene);
    for _ in 0..60 {
        scene.step();
        ours.frame(&scene, false);
        if mode != "pairs" && mode != "quality" {
            obvhs.frame(&scene);
        }
    }
    if mode == "quality" {
        let ([(bs, bh, bt), (is, ih, it)], binary) = ours.tree.quad_quality();
        println!(
            "bulk: SAH {bs:.2}, height {bh}, {bt:.1} ms; inserted: SAH {is:.2}, height {ih}, {it:.1} ms; binary tree SAH {binary:.2}"
        );
        return;
    }
    let mut quad = ours.tree.quad_snapshot();
    if mode == "pairs" {
        // The 100%-moving pair update: the binary tree's (every proxy moved within its fat box,
        // so no tree change) against the snapshot's traversal.
        // `STRIDE=k`: every k-th proxy moves (default all).
        let stride: usize = std::env::var("STRIDE").ok().and_then(|s| s.parse().ok()).unwrap_or(1);
        let ids: Vec<voxterra_core::ProxyId> =
            (0..n as u32).step_by(stride).map(voxterra_core::ProxyId).collect();
        let (mut tb, mut tq) = (Vec::new(), Vec::new());
        let (mut kb, mut kq) = (Vec::new(), Vec::new());
        for _ in 0..reps {
            for id in &ids {
                let b = scene.aabb(id.0 as usize);
                ours.tree.move_proxy(*id, b, voxterra_core::nalgebra::Vector3::zeros()).expect("move");
            }
            // Pending tree work (rebuilds, compaction) before the clock: the update then times
            // the flags and the traversal (and any background rebuild step) only.
            ours.tree.flush();
            kb.clear();
            let t = std::time::Instant::now();
            ours.tree.update_pairs(&mut |x, y| kb.push(u64::from(x.0) << 32 | u64::from(y.0)));
            tb.push(t.elapsed().as_secs_f64() * 1e3);
            let t = std::time::Instant::now();
            ours.tree.quad_pairs_of(&mut quad, &ids, &mut kq);
            tq.push(t.elapsed().as_secs_f64() * 1e3);
        }
        assert_eq!(kb, kq, "pairs differ");
        tb.sort_by(f64::total_cmp);
        tq.sort_by(f64::total_cmp);
        println!(
            "pairs ({}): binary {:.2} ms, quad {:.2} ms (medians)",
            kb.len(),
            tb[tb.len() / 2],
            tq[tq.len() / 2]
        );
        return;
    }
    let QuerySet { points, rays, .. } = QuerySet::new(scene.side);
    let contains =
        |b: &voxterra_core::Aabb, p: &Point3<f32>| (0..3).all(|i| b.mins[i] <= p[i] && p[i] <= b.maxs[i]);
    let max_t = 20.0f32;
    let mut run = |side: usize| -> u64 {
        let mut s = 0u64;
        match (mode.as_str(), side) {
            ("point", 0) => {
                for p in &points {
                    ours.tree.query_point(p, &mut |id| {
                        s += u64::from(id.0) + 1;
                        true
                    });
                }
            }
            ("point", 1) => {
                for p in &points {
                    ours.tree.quad_query_point(&quad, p, &mut |id| {
                        s += u64::from(id.0) + 1;
                        true
                    });
                }
            }
            ("point", _) => {
                for p in &points {
                    obvhs.bvh.point_traverse(glam::Vec3A::new(p.x, p.y, p.z), |bvh, node| {
                        let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize];
                        if contains(&scene.aabb(prim as usize), p) {
                            s += u64::from(prim) + 1;
                        }
                        true
                    });
                }
            }
            ("ray", 0 | 1) => {
                for r in &rays {
                    let mut best = f32::INFINITY;
                    let mut f = |id: voxterra_core::ProxyId, ray: &voxterra_core::Ray, limit: f32| match scene
                        .aabb(id.0 as usize)
                        .clip_ray(ray, limit)
                    {
                        Some((t, _)) => {
                            best = best.min(t);
                            t
                        }
                        None => limit,
                    };
                    if side == 0 {
                        ours.tree.cast_ray(r, max_t, &mut f);
                    } else {
                        ours.tree.quad_cast_ray(&quad, r, max_t, &mut f);
                    }
                    if best.is_finite() {
                        s += 1 + (best * 1000.0).round() as u64;
                    }
                }
            }
            ("ray", _) => {
                for r in &rays {
                    let mut hit = obvhs::ray::RayHit::none();
                    let bvh = &obvhs.bvh;
                    if bvh.ray_traverse(oray(r, max_t), &mut hit, |ray, prim_index| {
                        let prim = bvh.primitive_indices[prim_index];
                        scene.aabb(prim as usize).clip_ray(r, ray.tmax).map_or(f32::INFINITY, |(t, _)| t)
                    }) {
                        s += 1 + (hit.t * 1000.0).round() as u64;
                    }
                }
            }
            _ => panic!("usage: point|ray [REPS]"),
        }
        s
    };
    let names = ["binary", "quad", "obvhs"];
    let checks: Vec<u64> = (0..3).map(&mut run).collect();
    println!("checks {checks:?} (binary and quad must agree; obvhs within rounding for rays)");
    let mut times = vec![Vec::new(); 3];
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for _ in 0..reps {
        let mut order = [0usize, 1, 2];
        for i in (1..3).rev() {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
            order.swap(i, (seed >> 33) as usize % (i + 1));
        }
        for &k in &order {
            let t = std::time::Instant::now();
            black_box(run(k));
            times[k].push(t.elapsed().as_nanos() as f64 / 4096.0);
        }
    }
    for (k, t) in times.iter_mut().enumerate() {
        t.sort_by(f64::total_cmp);
        println!("{mode} {:7} median {:7.1} ns/query", names[k], t[t.len() / 2]);
    }
}
