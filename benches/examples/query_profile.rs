//! Repeats character-sized broadphase queries in one area: a target for a profiler.
use voxterra_benches::world::bench_world;
use voxterra_bit_broadphase::BitBroadphase;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, MaterialTable};

fn main() {
    let w = bench_world(true);
    let mut bp = BitBroadphase::new(&MaterialTable::default(), 1.0).unwrap_or_else(|e| panic!("{e}"));
    bp.rebuild_region(&w.store, &w.params.region().unwrap_or_else(|e| panic!("{e}")));
    let mut sum = 0u64;
    let t = std::time::Instant::now();
    for i in 0..20_000_000u64 {
        let x = 100.25 + (i % 64) as f32 * 0.5;
        let z = 80.25 + (i / 64 % 64) as f32 * 0.5;
        let b = Aabb::new(Point3::new(x, 40.25, z), Point3::new(x + 1.0, 42.25, z + 1.0));
        bp.query(&b, |_, t| sum += t.solid as u64);
    }
    println!("{sum} {:.1} ns/query", t.elapsed().as_nanos() as f64 / 2e7);
}
