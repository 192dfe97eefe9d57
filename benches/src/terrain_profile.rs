//! The terrain suite's cases for voxterra alone, in loops: targets for `perf record` (see
//! `examples/terrain_profile.rs`).

use crate::narrowphase_suite::shapes;
use crate::terrain_suite::{brush_box, ours_frame, place_bodies, ray_mix, sphere, surface_points};
use crate::world::bench_world;
use voxterra::core::MaterialTable;
use voxterra::{PrepareBudget, Terrain, TerrainConfig};

/// The suite's contacts case for voxterra alone: 1 000 bodies resting on the default world (all
/// chunks prepared), `rounds` frames; returns the points. A profiling target.
pub fn profile_contacts(rounds: usize) -> usize {
    let world = bench_world(false);
    let wr = world.params.region().expect("valid world");
    let mut t = Terrain::from_store(world.store.clone(), MaterialTable::default(), TerrainConfig::default())
        .expect("a valid terrain");
    let all = shapes();
    let bodies = place_bodies(&mut t, &all, &wr, 1000);
    let mut out = Vec::new();
    (0..rounds).map(|_| ours_frame(&mut t, &all, &bodies, &mut out).0).sum()
}

/// The suite's edit case for voxterra alone: `rounds` radius-4 carves and refills at 16 surface
/// points, each followed by `prepare` over the brush; returns the chunks built and the time per
/// edit. A profiling target.
pub fn profile_edits(rounds: usize) -> (usize, std::time::Duration) {
    profile_edits_with(rounds, true)
}

/// [`profile_edits`], with `rebuild` false the edits alone (voxels, masks, history, delta log,
/// the cache's invalidation): the chunks built count stays 0.
pub fn profile_edits_with(rounds: usize, rebuild: bool) -> (usize, std::time::Duration) {
    let world = bench_world(false);
    let wr = world.params.region().expect("valid world");
    let mut t = Terrain::from_store(world.store.clone(), MaterialTable::default(), TerrainConfig::default())
        .expect("a valid terrain");
    let points = surface_points(&mut t, &wr, 16);
    for p in &points {
        t.prepare(&[brush_box(*p)], PrepareBudget::UNLIMITED);
    }
    let start = std::time::Instant::now();
    let built = (0..rounds)
        .map(|i| {
            let p = points[(i / 2) % points.len()];
            t.apply_brush(&sphere(p, i % 2 == 0)).expect("an edit");
            if rebuild { t.prepare(&[brush_box(p)], PrepareBudget::UNLIMITED).built } else { 0 }
        })
        .sum();
    (built, start.elapsed() / rounds.max(1) as u32)
}

/// The suite's ray mix for voxterra alone, `n` rays cast `rounds` times (on one thread, or on the rayon
/// pool with `parallel`) after a first round that builds the cache; returns the hits and the time per
/// ray of the timed rounds.
/// A profiling target.
pub fn profile_rays(n: usize, rounds: usize, parallel: bool) -> (usize, std::time::Duration) {
    let world = bench_world(false);
    let t = Terrain::from_store(world.store.clone(), MaterialTable::default(), TerrainConfig::default())
        .expect("a valid terrain");
    let rays = ray_mix(&world.dense, n);
    let mut hits = Vec::new();
    let mut cast = || {
        if parallel {
            t.cast_rays(&rays, 4096.0, &mut hits).expect("valid rays");
            hits.iter().filter(|h| h.is_some()).count()
        } else {
            rays.iter().filter(|r| t.cast_ray(r, 4096.0).expect("a valid ray").is_some()).count()
        }
    };
    cast();
    let start = std::time::Instant::now();
    let hits = (0..rounds).map(|_| cast()).sum();
    (hits, start.elapsed() / (rounds * n).max(1) as u32)
}
