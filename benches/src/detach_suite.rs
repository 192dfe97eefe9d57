//! Suite `detach`: finding the pieces an edit cut loose ([`Terrain::find_detached`]) against a
//! brute-force flood fill of the edit's box grown by the budget's reach (the cube root of the
//! budget), which labels every solid piece in it and calls a piece attached when it reaches the
//! floor or the box's side.

use crate::harness::{Budget, Metric, Report, compare_prechecked};
use crate::world::Rng;
use std::time::Instant;
use voxterra::detach::DEFAULT_DETACH_BUDGET;
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Ray, Region, VoxelPos, materials};
use voxterra_worldgen::WorldParams;

const PEER: &str = "flood fill of the grown box";

/// The detached pieces' voxel counts by brute force over `dirty` grown by `reach`.
fn flood_box(t: &Terrain, dirty: &Region, reach: u32) -> Vec<usize> {
    let b = dirty.expanded(reach);
    let floor = t.extent().map_or(i32::MIN, |e| e.min().y);
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
    t.find_detached(dirty, DEFAULT_DETACH_BUDGET).iter().map(|r| r.voxels.len()).collect()
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
    let mut t = Terrain::generate(&WorldParams::new(1, size), TerrainConfig::default()).expect("world");
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
    let d = t.apply_brush(&notch).expect("the notch").dirty.expect("voxels changed");
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

    // The edit's time with the search after it, against the edit alone.
    let mut rng = Rng::new(11);
    let (mut edit, mut search) = (0.0f64, 0.0f64);
    let n = if quick { 8 } else { 32 };
    for _ in 0..n {
        let start = Instant::now();
        let Some(d) = surface_carve(&mut t, &mut rng, size) else { continue };
        edit += start.elapsed().as_secs_f64();
        let start = Instant::now();
        std::hint::black_box(ours(&t, &d));
        search += start.elapsed().as_secs_f64();
    }
    report.metrics.push(Metric {
        name: "radius-4 carve: edit ms, search ms (mean)".into(),
        voxterra: edit * 1e3 / n as f64,
        peer: search * 1e3 / n as f64,
        peer_name: "(search ms)".into(),
        goal: format!("(report: overhead {:.0}%)", search / edit.max(1e-12) * 100.0),
    });
    report
}
