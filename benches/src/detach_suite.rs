//! Suite `detach`: finding the pieces an edit cut loose ([`Terrain::find_detached`]) against a
//! brute-force flood fill of the edit's box grown by the budget's reach (the cube root of the
//! budget), which labels every solid piece in it and calls a piece attached when it reaches the
//! floor or the box's side. Then what taking a piece out costs (its mesh, collision shape and
//! mass) for pieces of about 1k, 10k and 100k voxels, and a carve's time with detection on against
//! the same carve with it off.

use crate::harness::{Budget, Metric, Report, compare_prechecked};
use crate::world::Rng;
use std::time::Instant;
use voxterra::detach::{DEFAULT_DETACH_BUDGET, DetachedPiece};
use voxterra::parry3d::math::Vector;
use voxterra::parry3d::shape::SharedShape;
use voxterra::{Brush, BrushOp, BrushShape, DetachConfig, Terrain, TerrainConfig};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{MaterialTable, Ray, Region, Voxel, VoxelPos, materials};
use voxterra_worldgen::GenParams;

const PEER: &str = "flood fill of the grown box";

/// The detached pieces' voxel counts by brute force over `dirty` grown by `reach`.
fn flood_box(t: &Terrain, dirty: &Region, reach: u32) -> Vec<usize> {
    let b = dirty.expanded(reach);
    let floor = t.anchor_layer(voxterra::detach::Anchor::LowestSolid).unwrap_or(i32::MIN);
    let size = b.size().map(|s| s as usize);
    let at = |p: VoxelPos| {
        let d = p - b.min();
        d.x as usize + size[0] * (d.z as usize + size[2] * d.y as usize)
    };
    let holding: Vec<bool> = b.iter().map(|p| t.is_holding(p)).collect();
    let mut seen = vec![false; holding.len()];
    let near = dirty.expanded(1);
    let mut out = Vec::new();
    for start in near.iter() {
        if !b.contains(start) || !holding[at(start)] || seen[at(start)] {
            continue;
        }
        seen[at(start)] = true;
        let (mut stack, mut count, mut anchored) = (vec![start], 0usize, false);
        while let Some(p) = stack.pop() {
            count += 1;
            let (lo, hi) = (b.min(), b.max());
            anchored |= p.y <= floor || (0..3).any(|a| p[a] == lo[a] || p[a] == hi[a] - 1);
            for d in [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]] {
                let q = p + Vector3::from(d);
                if b.contains(q) && holding[at(q)] && !seen[at(q)] {
                    seen[at(q)] = true;
                    stack.push(q);
                }
            }
        }
        if !anchored {
            out.push(count);
        }
    }
    out
}

fn ours(t: &Terrain, dirty: &Region) -> Vec<usize> {
    t.find_detached(dirty, &voxterra::DetachConfig::default()).iter().map(|r| r.voxels.len()).collect()
}

/// A radius-4 sphere carved where a ray down at a random column meets the ground.
fn surface_carve(t: &mut Terrain, rng: &mut Rng, size: [u32; 3]) -> Option<Region> {
    let (x, z) = (rng.range(8.0, size[0] as f32 - 8.0), rng.range(8.0, size[2] as f32 - 8.0));
    let hit = t.cast_ray(&Ray::new(Point3::new(x, size[1] as f32 + 4.0, z), -Vector3::y()), 1e4).ok()??;
    let hole = BrushShape::Sphere { center: hit.point, radius: 4.0 };
    let r = t.apply_brush(&Brush { shape: hole, op: BrushOp::Subtract }).ok()?;
    r.dirty
}

/// Runs the suite (`quick`: a smaller world, fewer repetitions).
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let size = if quick { [256, 128, 256] } else { [512, 128, 512] };
    let mut t = Terrain::generate(&GenParams::new(1, size), TerrainConfig::default()).expect("world");
    let reach = (DEFAULT_DETACH_BUDGET as f64).cbrt().ceil() as u32;
    let mut report = Report {
        suite: "detach".into(),
        setup: format!(
            "default world {size:?}, seed 1; budget {DEFAULT_DETACH_BUDGET} voxels; peer: {PEER} by {reach} voxels"
        ),
        cases: Vec::new(),
        metrics: Vec::new(),
    };
    let mut rng = Rng::new(7);
    let edits: Vec<Region> =
        (0..if quick { 8 } else { 32 }).filter_map(|_| surface_carve(&mut t, &mut rng, size)).collect();
    for d in &edits {
        assert_eq!(ours(&t, d), flood_box(&t, d, reach), "edit {d:?}");
    }
    report.cases.push(compare_prechecked(
        budget,
        "search after a radius-4 sphere carve (typical)",
        "edit",
        edits.len() as u64,
        PEER,
        "≥ 10× the flood fill",
        || edits.iter().map(|d| ours(&t, d).len()).sum::<usize>(),
        || edits.iter().map(|d| flood_box(&t, d, reach).len()).sum::<usize>(),
    ));

    // Worst within the budget: a floating block of just under the budget, cut into.
    let d = floating_block(&mut t, size);
    let found = ours(&t, &d);
    assert_eq!(found.len(), 1, "the block floats");
    report.cases.push(compare_prechecked(
        budget,
        "search after a carve into a floating block (worst within the budget)",
        "edit",
        1,
        PEER,
        "(report)",
        || ours(&t, &d).len(),
        || flood_box(&t, &d, reach).len(),
    ));
    report.metrics.push(Metric {
        name: "floating block: voxels searched".into(),
        voxterra: found[0] as f64,
        peer: d.expanded(reach).volume() as f64,
        peer_name: "voxels in the grown box".into(),
        goal: "(report)".into(),
    });

    // A carve's time with detection on (search, and any piece taken out) against detection off,
    // on two copies of the world carved alike.
    let detaching = TerrainConfig { detach: Some(DetachConfig::default()), ..TerrainConfig::default() };
    let mut on = Terrain::from_store(t.store().clone(), MaterialTable::default(), detaching).expect("copy");
    let n = if quick { 8 } else { 32 };
    let (off_ms, on_ms) = (carve_times(&mut t, size, n), carve_times(&mut on, size, n));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    report.metrics.push(Metric {
        name: "radius-4 carve, detection on: ms (mean)".into(),
        voxterra: mean(&on_ms),
        peer: mean(&off_ms),
        peer_name: "detection off (ms)".into(),
        goal: format!("(report: overhead {:.0}%)", (mean(&on_ms) / mean(&off_ms).max(1e-12) - 1.0) * 100.0),
    });

    for (shape, voxels) in [
        ("rock", 1_000),
        ("arch", 1_000),
        ("rock", 10_000),
        ("arch", 10_000),
        ("rock", 100_000),
        ("arch", 100_000),
    ] {
        let reps = if quick { 1 } else { 5 };
        let (piece, build_ms, off_ms) = piece_case(shape, voxels, reps);
        let points: Vec<Vector> = piece.mesh.positions.iter().map(|p| Vector::new(p.x, p.y, p.z)).collect();
        let hull = SharedShape::convex_hull(&points).map_or(f32::NAN, |h| h.mass_properties(1.0).mass());
        report.metrics.push(Metric {
            name: format!(
                "{shape} of {} voxels cut loose: taking it out ms ({} triangles, {} convex parts, hull {:.2}× its volume)",
                piece.solid_voxels,
                piece.mesh.indices.len(),
                piece.shape_parts,
                hull / piece.volume
            ),
            voxterra: build_ms,
            peer: off_ms,
            peer_name: "the cut without detection (ms)".into(),
            goal: "(report)".into(),
        });
    }
    report
}

/// Milliseconds of `n` radius-4 carves at the columns seed 11 draws.
fn carve_times(t: &mut Terrain, size: [u32; 3], n: usize) -> Vec<f64> {
    let mut rng = Rng::new(11);
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        if surface_carve(t, &mut rng, size).is_some() {
            out.push(start.elapsed().as_secs_f64() * 1e3);
        }
    }
    out
}

/// A rock (a ball) or an arch (a box open below) of about `voxels` solid voxels floating over a
/// slab on a 2×2 stalk; the stalk cut on a terrain detaching and on one not, `reps` times. The
/// piece, the median extra time of the detaching cut over the plain one minus the search (taking
/// the piece out: removing it with the undo snapshot, delta and masks over its box, and building its
/// voxels, mesh, shape and mass), and the plain cut's median time.
fn piece_case(shape: &str, voxels: usize, reps: usize) -> (DetachedPiece, f64, f64) {
    let mut t = Terrain::new(MaterialTable::default(), TerrainConfig::default()).expect("terrain");
    let rock = Voxel::full(materials::ROCK);
    let fill = |t: &mut Terrain, min: [i32; 3], size: [u32; 3], v: Voxel| {
        t.fill(&Region::from_min_size(Point3::from(min), size).expect("box"), v).expect("fill");
    };
    let (bottom, top) = match shape {
        "rock" => {
            let r = (3.0 * voxels as f32 / (4.0 * std::f32::consts::PI)).cbrt();
            let c = Point3::new(64.0, 12.0 + r, 64.0);
            t.apply_brush(&Brush {
                shape: BrushShape::Sphere { center: c, radius: r },
                op: BrushOp::Add(materials::ROCK),
            })
            .expect("rock");
            (12, (c.y - r * 0.5) as i32)
        }
        _ => {
            // L = 4s, H = 3s, D = 2s, walls s thick: 16 s³ voxels.
            let s = ((voxels as f32 / 16.0).cbrt().round() as i32).max(1);
            let (x0, y0, z0) = (64 - 2 * s, 12, 64 - s);
            fill(&mut t, [x0, y0, z0], [4 * s as u32, 3 * s as u32, 2 * s as u32], rock);
            fill(&mut t, [x0 + s, y0, z0], [2 * s as u32, 2 * s as u32, 2 * s as u32], Voxel::AIR);
            (12, y0 + 2 * s + 1)
        }
    };
    fill(&mut t, [0, 0, 0], [128, 4, 128], rock);
    fill(&mut t, [63, 4, 63], [2, (top - 4) as u32, 2], rock);
    let cut = Region::from_min_size(Point3::new(63, bottom - 4, 63), [2, 1, 2]).expect("cut");
    let copy = |config: TerrainConfig| {
        Terrain::from_store(t.store().clone(), MaterialTable::default(), config).expect("copy")
    };
    let detaching = TerrainConfig { detach: Some(DetachConfig::default()), ..TerrainConfig::default() };
    let (mut extra, mut plain, mut piece) = (Vec::new(), Vec::new(), None);
    for _ in 0..reps {
        let (mut off, mut on) = (copy(TerrainConfig::default()), copy(detaching));
        let start = Instant::now();
        let report = off.fill(&cut, Voxel::AIR).expect("cut");
        let off_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        std::hint::black_box(
            off.find_detached(&report.dirty.expect("cut"), &voxterra::DetachConfig::default()),
        );
        let search_ms = start.elapsed().as_secs_f64() * 1e3;
        let start = Instant::now();
        let r = on.fill(&cut, Voxel::AIR).expect("cut");
        let on_ms = start.elapsed().as_secs_f64() * 1e3;
        assert_eq!(r.detached, 1, "the {shape} falls");
        piece = on.take_detached().pop();
        extra.push(on_ms - off_ms - search_ms);
        plain.push(off_ms);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    (piece.expect("a piece"), median(&mut extra), median(&mut plain))
}

/// Adds a block of just under the budget's voxels floating over a world of `size` and cuts a
/// notch into its top; returns the notch's dirty box.
fn floating_block(t: &mut Terrain, size: [u32; 3]) -> Region {
    let side = ((DEFAULT_DETACH_BUDGET as f64 * 0.9).cbrt()) as f32;
    let base = Point3::new(size[0] as f32 * 0.5, size[1] as f32 + 40.0, size[2] as f32 * 0.5);
    let block = Brush {
        shape: BrushShape::Box { min: base, max: base + Vector3::repeat(side) },
        op: BrushOp::Add(materials::ROCK),
    };
    t.apply_brush(&block).expect("the block");
    let notch = Brush {
        shape: BrushShape::Sphere { center: base + Vector3::new(side * 0.5, side, side * 0.5), radius: 4.0 },
        op: BrushOp::Subtract,
    };
    t.apply_brush(&notch).expect("the notch").dirty.expect("voxels changed")
}

/// The floating block's search for voxterra alone, `rounds` times: the block's voxels found and
/// the time a search (a target for `perf record`).
pub fn profile_floating_block(rounds: usize) -> (usize, std::time::Duration) {
    let size = [512, 128, 512];
    let mut t = Terrain::generate(&GenParams::new(1, size), TerrainConfig::default()).expect("world");
    let d = floating_block(&mut t, size);
    let start = Instant::now();
    let mut found = 0;
    for _ in 0..rounds.max(1) {
        found = ours(&t, &d).iter().sum();
    }
    (found, start.elapsed() / rounds.max(1) as u32)
}

/// The typical case's searches (after 32 radius-4 carves) for voxterra alone, `rounds` times:
/// the pieces found and the time a search.
pub fn profile_carves(rounds: usize) -> (usize, std::time::Duration) {
    let size = [512, 128, 512];
    let mut t = Terrain::generate(&GenParams::new(1, size), TerrainConfig::default()).expect("world");
    let mut rng = Rng::new(7);
    let edits: Vec<Region> = (0..32).filter_map(|_| surface_carve(&mut t, &mut rng, size)).collect();
    let start = Instant::now();
    let mut found = 0;
    for _ in 0..rounds.max(1) {
        found = edits.iter().map(|d| ours(&t, d).len()).sum();
    }
    (found, start.elapsed() / (rounds.max(1) * edits.len().max(1)) as u32)
}
