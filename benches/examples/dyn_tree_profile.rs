//! Runs the dynamic-tree benchmark scene for voxterra alone, for profiling:
//! `cargo run --release -p voxterra-benches --example dyn_tree_profile -- N SHARE FRAMES`.

#![allow(clippy::unwrap_used)] // a profiling harness: failures should stop it

use std::time::Instant;
use voxterra_benches::dynamic_tree_suite::{Ours, Scene};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(10_000, |s| s.parse().unwrap());
    let share: f64 = args.get(2).map_or(0.1, |s| s.parse().unwrap());
    let frames: usize = args.get(3).map_or(300, |s| s.parse().unwrap());
    let mut scene = Scene::new(n, share, 1);
    let mut ours = Ours::new(&scene);
    let t = Instant::now();
    let mut pairs = 0;
    for _ in 0..frames {
        scene.step();
        pairs += ours.frame(&scene, false);
    }
    let el = t.elapsed();
    println!(
        "{n} boxes, {share} moving: {:.3} ms/frame, {} pairs/frame, area ratio {:.3}, {:?}",
        el.as_secs_f64() * 1e3 / frames as f64,
        pairs / frames as u64,
        ours.tree.area_ratio(),
        ours.tree.stats()
    );
}
