//! Closest-hit rays on the `kdtree` suite's 200k-triangle terrain cast one by one
//! (`cast_ray`), batched (`cast_rays`) and by parry, in blocks of the suite's rays: each round
//! times one block on each side in a shuffled order (a fixed order lets one side find the block's
//! paths still in cache from the side before it), and prints the medians over the rounds.
//!
//! `cargo run --release -p voxterra-benches --example kdtree_rays` (`BLOCK=n`: rays a block,
//! default 10 000; `ROUNDS=n`, default 30; `SWEEP=MB`: write that many MB before each timed block,
//! so every side starts with the caches cold, as rays cast between a game's other work do)
use voxterra_benches::kdtree_suite::{rays, terrain_grid};
use voxterra_benches::parry_adapter::ParryTriangles;
use voxterra_benches::world::Rng;
use voxterra_core::{Culling, RayHit, TriangleIndex, TriangleMesh};
use voxterra_kdtree::KdTree;
use voxterra_worldgen::TerrainModel;

/// A permutation of `0..n` for round `r` (a fixed pseudo-random shuffle).
fn order(r: u32, n: u32) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n).collect();
    let mut x = (r as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    for i in (1..v.len()).rev() {
        x ^= x >> 29;
        x = x.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

/// Touches a line in every 64 bytes of `junk`.
fn sweep(junk: &mut [u64]) {
    for (i, j) in junk.iter_mut().enumerate().step_by(8) {
        *j = j.wrapping_add(i as u64);
    }
    std::hint::black_box(&junk);
}

fn main() {
    let mb: usize = std::env::var("SWEEP").ok().and_then(|v| v.parse().ok()).unwrap_or(0);
    let block_len: usize = std::env::var("BLOCK").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let rounds: u32 = std::env::var("ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(30);
    let mut junk = vec![0u64; mb << 17];
    let terrain = TerrainModel::new(1, 128);
    let (positions, triangles) = terrain_grid(&terrain, 317, 40, 40);
    let mesh = TriangleMesh { positions, triangles };
    let tree = KdTree::build(&mesh).unwrap_or_else(|e| panic!("{e}"));
    let parry = ParryTriangles::build(&mesh);
    let view = tree.with(&mesh);
    let mut rng = Rng::new(5);
    let mut out = vec![None::<RayHit>; block_len];
    for (name, oblique) in [("down", false), ("oblique", true)] {
        let set = rays(&mut rng, tree.bounds(), 100_000, oblique);
        let mut times = vec![Vec::new(); 3];
        for round in 0..rounds {
            let start = (round as usize * 7919) % (set.len() - block_len);
            let block = &set[start..][..block_len];
            let mut counts = [0usize; 3];
            for v in order(round, 3) {
                sweep(&mut junk);
                let t = std::time::Instant::now();
                counts[v as usize] = match v {
                    0 => block.iter().filter(|r| view.cast_ray(r, f32::MAX, Culling::None).is_some()).count(),
                    1 => {
                        view.cast_rays(block, f32::MAX, Culling::None, &mut out);
                        out.iter().filter(|h| h.is_some()).count()
                    }
                    _ => {
                        block.iter().filter(|r| parry.cast_ray(r, f32::MAX, Culling::None).is_some()).count()
                    }
                };
                times[v as usize].push(t.elapsed().as_nanos() as f64 / block.len() as f64);
            }
            assert_eq!(counts[0], counts[1]);
        }
        for t in &mut times {
            t.sort_by(f64::total_cmp);
        }
        let med: Vec<f64> = times.iter().map(|t| t[t.len() / 2]).collect();
        println!(
            "{name:8} single {:.0} ns ({:.2}x)  batch {:.0} ns ({:.2}x)  parry {:.0}",
            med[0],
            med[2] / med[0],
            med[1],
            med[2] / med[1],
            med[2]
        );
    }
}
