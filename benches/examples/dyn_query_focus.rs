//! One query kind of one side on the dynamic-tree suite's 100k-box scene, repeated, for perf,
//! callgrind and A/B runs of copied binaries:
//! `cargo run --release -p voxterra-benches --example dyn_query_focus -- ours|obvhs point|ray|box [REPS]`.
//! `POLLUTE=1`: before each timed pass, an untimed pass of obvhs rays evicts our tree from L2, as
//! the suite's interleaving does. `REBUILD=1`: ours is rebuilt (and compacted) first. Prints the
//! mean time a query over the timed passes.
use std::hint::black_box;
use voxterra_benches::dynamic_tree_suite::{Obvhs, Ours, QuerySet, Scene, oray};
use voxterra_core::Broadphase;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let reps: usize = a.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let n = 100_000;
    let mut scene = Scene::new(n, 1.0, 77);
    let mut ours = Ours::new(&scene);
    let mut obvhs = Obvhs::new(&scene);
    for _ in 0..60 {
        scene.step();
        ours.frame(&scene, false);
        obvhs.frame(&scene);
    }
    if std::env::var("REBUILD").is_ok() {
        ours.tree.rebuild();
    }
    // The suite's query set (the boxes' centres as points).
    let QuerySet { boxes, points, rays } = QuerySet::new(scene.side);
    let pollute = std::env::var("POLLUTE").is_ok();
    let mut el = std::time::Duration::ZERO;
    let mut s = 0u64;
    for _ in 0..reps {
        if pollute {
            for r in &rays {
                let mut hit = obvhs::ray::RayHit::none();
                black_box(obvhs.bvh.ray_traverse(oray(r, 20.0), &mut hit, |_, _| f32::INFINITY));
            }
        }
        let t = std::time::Instant::now();
        match (a[1].as_str(), a[2].as_str()) {
            ("ours", "point") => {
                for p in &points {
                    ours.tree.query_point(p, &mut |id| {
                        s += u64::from(id.0) + 1;
                        true
                    });
                }
            }
            ("ours", "box") => {
                for b in &boxes {
                    ours.tree.query_aabb(b, &mut |id| {
                        s += u64::from(id.0) + 1;
                        true
                    });
                }
            }
            ("ours", "ray") => {
                for r in &rays {
                    ours.tree.cast_ray(r, 20.0, &mut |id, ray, limit| match scene
                        .aabb(id.0 as usize)
                        .clip_ray(ray, limit)
                    {
                        Some((t, _)) => {
                            s += 1;
                            t
                        }
                        None => limit,
                    });
                }
            }
            ("obvhs", "point") => {
                for p in &points {
                    obvhs.bvh.point_traverse(glam::Vec3A::new(p.x, p.y, p.z), |bvh, node| {
                        // As the suite: the tight box decides, as ours does inside `query_point`.
                        let prim = bvh.primitive_indices[bvh.nodes[node as usize].first_index as usize];
                        let b = scene.aabb(prim as usize);
                        if (0..3).all(|i| b.mins[i] <= p[i] && p[i] <= b.maxs[i]) {
                            s += u64::from(prim) + 1;
                        }
                        true
                    });
                }
            }
            ("obvhs", "ray") => {
                for r in &rays {
                    let mut hit = obvhs::ray::RayHit::none();
                    let bvh = &obvhs.bvh;
                    if bvh.ray_traverse(oray(r, 20.0), &mut hit, |ray, prim_index| {
                        let prim = bvh.primitive_indices[prim_index];
                        scene.aabb(prim as usize).clip_ray(r, ray.tmax).map_or(f32::INFINITY, |(t, _)| t)
                    }) {
                        s += 1;
                    }
                }
            }
            _ => panic!("usage"),
        }
        el += t.elapsed();
    }
    println!("{} ns/query  (check {})", el.as_nanos() as f64 / (reps * 4096) as f64, black_box(s));
}
