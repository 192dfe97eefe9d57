//! Runs the dynamic-tree benchmark scene for voxterra alone, for profiling:
//! `cargo run --release -p voxterra-benches --example dynamic_tree_frames -- N SHARE FRAMES`.
//! `WARM=k`: k untimed frames first (the suite's warm-up is 60); `SLOW=k`: print the k slowest
//! frames with their index; `DUMP=1`: print every frame's time in order; `REPLAYS=k`: play the
//! scene k times from scratch and take each frame's median, as the suite does; `SWEEP=MB`: read
//! that many MB before each timed frame (the suite reads 4).

#![allow(clippy::unwrap_used)] // a profiling harness: failures should stop it

use std::time::Instant;
use voxterra_benches::dynamic_tree_suite::{Ours, Scene, sweep};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Broadphase, Ray};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(10_000, |s| s.parse().unwrap());
    let share: f64 = args.get(2).map_or(0.1, |s| s.parse().unwrap());
    let frames: usize = args.get(3).map_or(300, |s| s.parse().unwrap());
    let warm: usize = std::env::var("WARM").map_or(0, |v| v.parse().unwrap());
    // As the suite: a cache sweep of this many MB before each timed frame.
    let sweep_mb: usize = std::env::var("SWEEP").map_or(0, |v| v.parse().unwrap());
    let junk = vec![1u64; sweep_mb << 17];
    let play = || {
        let mut scene = Scene::new(n, share, 1);
        let mut ours = Ours::new(&scene);
        for _ in 0..warm {
            scene.step();
            ours.frame(&scene, false);
        }
        let t = Instant::now();
        let mut pairs = 0;
        let mut times = Vec::with_capacity(frames);
        for _ in 0..frames {
            scene.step();
            sweep(&junk);
            let f = Instant::now();
            pairs += ours.frame(&scene, false);
            times.push(f.elapsed().as_secs_f64() * 1e3);
        }
        (scene, ours, times, pairs, t.elapsed())
    };
    let (scene, mut ours, mut times, pairs, el) = play();
    // As the suite: each frame's time the median over the replays, so a frame slowed by the
    // machine rather than by its work drops out.
    let replays: usize = std::env::var("REPLAYS").map_or(1, |v| v.parse().unwrap());
    if replays > 1 {
        let mut all = vec![times.clone()];
        all.extend((1..replays).map(|_| play().2));
        for (f, t) in times.iter_mut().enumerate() {
            let mut v: Vec<f64> = all.iter().map(|r| r[f]).collect();
            v.sort_by(f64::total_cmp);
            *t = v[v.len() / 2];
        }
    }
    if std::env::var("QUERIES").is_ok() {
        // The suite's query mix on the moved tree: 2 m boxes, their centers, 20 m rays.
        let mut rng = voxterra_benches::world::Rng::new(9);
        let mut unit = || (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        let side = scene.side;
        let mut pick = || Point3::new(unit() * side, unit() * side, unit() * side);
        let boxes: Vec<Aabb> = (0..4096)
            .map(|_| {
                let c = pick();
                Aabb::new(c - Vector3::repeat(1.0), c + Vector3::repeat(1.0))
            })
            .collect();
        let rays: Vec<Ray> =
            boxes.iter().map(|b| Ray::new(b.center(), Vector3::new(0.48, -0.6, 0.64))).collect();
        let (mut found, t) = (0u64, Instant::now());
        for _ in 0..50 {
            for b in &boxes {
                ours.tree.query_aabb(b, &mut |_| {
                    found += 1;
                    true
                });
                ours.tree.query_point(&b.center(), &mut |_| {
                    found += 1;
                    true
                });
            }
            for r in &rays {
                ours.tree.cast_ray(r, 20.0, &mut |_, _, limit| {
                    found += 1;
                    limit
                });
            }
        }
        println!(
            "queries: {found} found, {:.1} ns per box + point + ray",
            t.elapsed().as_nanos() as f64 / (50.0 * 4096.0)
        );
        return;
    }
    let reps: usize = std::env::var("REBUILDS").map_or(1, |v| v.parse().unwrap());
    let r = Instant::now();
    for _ in 0..reps {
        ours.tree.rebuild();
    }
    println!("a full rebuild and compaction: {:.3} ms", r.elapsed().as_secs_f64() * 1e3 / reps as f64);
    let slow: usize = std::env::var("SLOW").map_or(0, |v| v.parse().unwrap());
    if slow > 0 {
        let mut by: Vec<(usize, f64)> = times.iter().copied().enumerate().collect();
        by.sort_by(|a, b| b.1.total_cmp(&a.1));
        println!("slowest frames (index, ms): {:?}", &by[..slow.min(by.len())]);
    }
    if std::env::var("DUMP").is_ok() {
        println!("frame ms: {times:?}");
    }
    times.sort_by(f64::total_cmp);
    let mean = times.iter().sum::<f64>() / frames as f64;
    let p99 = times[(frames * 99 / 100).min(frames - 1)];
    println!(
        "{n} boxes, {share} moving: {:.3} ms/frame (frame mean {mean:.3}, median {:.3}, p99 {p99:.3} = {:.2}× mean, max {:.3}), {} pairs/frame, area ratio {:.3}, {:?}",
        el.as_secs_f64() * 1e3 / frames as f64,
        times[frames / 2],
        p99 / mean,
        times[frames - 1],
        pairs / frames as u64,
        ours.tree.area_ratio(),
        ours.tree.stats()
    );
}
