//! Encodes every chunk of the default world in a loop: a target for a profiler.
use voxterra_benches::world::bench_world;
use voxterra_codec::RleEncoder;
use voxterra_core::{Region, VoxelRead};

fn main() {
    let w = bench_world(false);
    let regions: Vec<Region> =
        w.store.chunk_keys().iter().map(|k| Region::chunk(*k, 5).unwrap_or_else(|e| panic!("{e}"))).collect();
    let mut out = Vec::with_capacity(1 << 17);
    let mut total = 0;
    for _ in 0..40 {
        for r in &regions {
            out.clear();
            let mut e = RleEncoder::new(&mut out);
            w.store.visit_rows(r, &mut |_, row| e.push_slice(row));
            e.finish();
            total += out.len();
        }
    }
    println!("{total}");
}
