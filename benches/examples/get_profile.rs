//! Random single-voxel reads of the default world in a loop: a target for a profiler.
use voxterra_benches::world::{Rng, bench_world};
use voxterra_core::nalgebra::Vector3;

fn main() {
    let w = bench_world(false);
    let world = w.params.region().unwrap_or_else(|e| panic!("{e}"));
    let [sx, sy, sz] = world.size();
    let mut rng = Rng(7);
    let pts: Vec<_> = (0..1_000_000)
        .map(|_| world.min() + Vector3::new(rng.below(sx), rng.below(sy), rng.below(sz)))
        .collect();
    let t = std::time::Instant::now();
    let mut sum = 0u64;
    for _ in 0..30 {
        sum += pts.iter().map(|p| w.store.get(*p).to_bits() as u64).sum::<u64>();
    }
    println!("{sum} {:.1} ns/get", t.elapsed().as_nanos() as f64 / 3e7);
}
