//! The `kdtree` suite's oblique rays cast once each on its 200k-triangle terrain, nothing else:
//! a target for `valgrind --tool=callgrind --cache-sim=yes` (instruction and cache-miss counts
//! of `cast_one` do not depend on the machine's noise). `N`: rays (default 20 000); `DOWN=1`:
//! the down rays instead; `ANY=1`: any-hit casts instead of closest-hit ones.
use voxterra_benches::kdtree_suite::{rays, terrain_grid};
use voxterra_benches::world::Rng;
use voxterra_core::{Culling, TriangleIndex, TriangleMesh};
use voxterra_kdtree::KdTree;
use voxterra_worldgen::TerrainModel;

fn main() {
    let n: usize = std::env::var("N").ok().and_then(|v| v.parse().ok()).unwrap_or(20_000);
    let terrain = TerrainModel::new(1, 128);
    let (positions, triangles) = terrain_grid(&terrain, 317, 40, 40);
    let mesh = TriangleMesh { positions, triangles };
    let tree = KdTree::build(&mesh).unwrap_or_else(|e| panic!("{e}"));
    let view = tree.with(&mesh);
    // As the suite: the down rays are drawn first from the same generator.
    let mut rng = Rng::new(5);
    let down = rays(&mut rng, tree.bounds(), 100_000, false);
    let oblique = rays(&mut rng, tree.bounds(), 100_000, true);
    let set = if std::env::var("DOWN").is_ok() { down } else { oblique };
    let any = std::env::var_os("ANY").is_some();
    let hits = set[..n.min(set.len())]
        .iter()
        .filter(|r| {
            if any {
                view.ray_hits_any(r, f32::MAX, Culling::None)
            } else {
                view.cast_ray(r, f32::MAX, Culling::None).is_some()
            }
        })
        .count();
    println!("{hits} hits, {:?}", tree.stats());
}
