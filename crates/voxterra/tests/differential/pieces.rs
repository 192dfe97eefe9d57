//! Detached pieces against a flood fill: random ground with structures stamped on it (floating
//! islands, bridges, thin necks under knobs, blocks touching others only along an edge or at a
//! corner), far from the origin or near it, at voxel sizes 0.5, 1 and 2; random carves with
//! detachment on. Each carve must take out exactly the pieces a flood fill of the whole window
//! finds loose beside what the carve emptied (not reaching the lowest solid layer, within the
//! budget), and leave every other solid voxel where it was.

use crate::Tally;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{Region, Voxel, VoxelPos};
use voxterra::store::VoxelStore;
use voxterra::{Brush, BrushOp, BrushShape, DetachConfig, Terrain, TerrainConfig};
use voxterra_test_support::Rng;
use voxterra_test_support::ground::{GroundOptions, random_ground, table};

const FACES: [[i32; 3]; 6] = [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]];

/// Every face-connected piece of holding voxels in `area`, and whether it reaches the lowest layer
/// any holding voxel of `area` is in.
fn flood(t: &Terrain, area: &Region) -> Vec<(Vec<VoxelPos>, bool)> {
    let holding: Vec<bool> = area.iter().map(|p| t.is_holding(p)).collect();
    let lowest = area.iter().zip(&holding).filter(|(_, h)| **h).map(|(p, _)| p.y).min();
    let mut label = vec![false; holding.len()];
    let mut out = Vec::new();
    for start in area.iter() {
        let i = area.index_of(start);
        if !holding[i] || label[i] {
            continue;
        }
        label[i] = true;
        let (mut stack, mut voxels) = (vec![start], Vec::new());
        while let Some(p) = stack.pop() {
            voxels.push(p);
            for f in FACES {
                let q = p + Vector3::from(f);
                if area.contains(q) && holding[area.index_of(q)] && !label[area.index_of(q)] {
                    label[area.index_of(q)] = true;
                    stack.push(q);
                }
            }
        }
        let anchored = voxels.iter().any(|p| Some(p.y) <= lowest);
        out.push((voxels, anchored));
    }
    out
}

/// Random ground with structures for detachment stamped on it, as a store.
pub(crate) fn world(seed: u64, rng: &mut Rng) -> (VoxelStore, Region, voxterra::core::Material) {
    let ground = random_ground(seed, GroundOptions { size: [48, 40, 48], far: 50_000 });
    let mut store = VoxelStore::new();
    store.write_box(&ground.region, &ground.voxels).expect("the window fits");
    let o = ground.region.min();
    let full = Voxel::full(ground.material);
    // Within the window: the flood fill reads the window (and a margin) only.
    let mut stamp = |lo: [i32; 3], size: [u32; 3]| {
        if let Some(r) = Region::from_min_size(o + Vector3::from(lo), size)
            .ok()
            .and_then(|r| r.intersection(&ground.region))
        {
            let _ = store.fill(&r, full);
        }
    };
    for _ in 0..2 + rng.below(5) {
        let (x, z) = (4 + rng.coord(36), 4 + rng.coord(36));
        match rng.below(5) {
            // A floating island.
            0 => stamp([x, 26 + rng.coord(8), z], [2 + rng.below(4) as u32, 2 + rng.below(3) as u32, 3]),
            // A bridge: two posts from the bottom and a slab across them.
            1 => {
                let (h, span) = (18 + rng.coord(14), 4 + rng.coord(8));
                stamp([x, 0, z], [1, h as u32, 1]);
                stamp([x + span, 0, z], [1, h as u32, 1]);
                stamp([x, h, z], [span as u32 + 1, 1, 2]);
            }
            // A thin neck under a knob.
            2 => {
                let h = 16 + rng.coord(14);
                stamp([x, 0, z], [1, h as u32, 1]);
                stamp([x - 1, h, z - 1], [3, 3, 3]);
            }
            // A block touching another only along an edge.
            3 => {
                let y = 20 + rng.coord(12);
                stamp([x, y, z], [3, 3, 3]);
                stamp([x + 3, y + 3, z], [3, 3, 3]);
            }
            // ... or at a corner.
            _ => {
                let y = 20 + rng.coord(12);
                stamp([x, y, z], [2, 2, 2]);
                stamp([x + 2, y + 2, z + 2], [2, 2, 2]);
            }
        }
    }
    (store, ground.region, ground.material)
}

/// One world of `seed`, `carves` carves.
pub fn run(seed: u64, carves: usize, tally: &mut Tally) {
    let mut rng = Rng::new(seed ^ 0x00de_7ac4);
    let voxel_size = [0.5f32, 1.0, 2.0][rng.below(3) as usize];
    let (store, window, material) = world(seed, &mut rng);
    let budget = if rng.below(3) == 0 { 20 + rng.below(2000) as usize } else { 1 << 20 };
    let detach = DetachConfig { budget, ..DetachConfig::default() };
    let config = TerrainConfig { detach: Some(detach), ..TerrainConfig::with_voxel_size(voxel_size) };
    let mut t = Terrain::from_store(store, table(), config).expect("a terrain");
    for k in 0..carves {
        let mut fails: Vec<(&'static str, String)> = Vec::new();
        let p = window.min().cast::<f32>()
            + Vector3::new(rng.range(0.0, 48.0), rng.range(8.0, 40.0), rng.range(0.0, 48.0));
        let radius = rng.range(1.0, 4.0) * voxel_size;
        let op = if rng.below(5) == 0 { BrushOp::Add(material) } else { BrushOp::Subtract };
        let brush =
            Brush { shape: BrushShape::Sphere { center: Point3::from(p.coords * voxel_size), radius }, op };
        let mut plain =
            Terrain::from_store(t.store().clone(), table(), TerrainConfig::with_voxel_size(voxel_size))
                .expect("a terrain");
        // Everything stored, and what this brush may add, with a margin.
        let area = t.extent().unwrap_or(window).expanded(3 + (radius / voxel_size).ceil() as u32);
        let before: Vec<bool> = area.iter().map(|q| plain.is_holding(q)).collect();
        let _ = plain.apply_brush(&brush);
        let Ok(report) = t.apply_brush(&brush) else { continue };
        let pieces = t.take_detached();
        // What the carve emptied, and the loose pieces beside it.
        let lost: Vec<VoxelPos> =
            area.iter().zip(&before).filter(|(q, h)| **h && !plain.is_holding(*q)).map(|(q, _)| q).collect();
        let beside = |v: &Vec<VoxelPos>| v.iter().any(|p| lost.iter().any(|q| (p - q).abs().sum() == 1));
        let want: Vec<Vec<VoxelPos>> = flood(&plain, &area)
            .into_iter()
            .filter(|(v, anchored)| !anchored && v.len() <= budget && beside(v))
            .map(|(v, _)| v)
            .collect();
        if report.detached + report.debris != want.len() {
            fails.push((
                "pieces",
                format!(
                    "carve {k}: took {} + {} debris, the flood fill {}",
                    report.detached,
                    report.debris,
                    want.len()
                ),
            ));
        }
        let mut got: Vec<usize> = pieces.iter().map(|p| p.solid_voxels).collect();
        let mut big: Vec<usize> =
            want.iter().map(Vec::len).filter(|&n| n >= detach.min_piece_voxels).collect();
        got.sort_unstable();
        big.sort_unstable();
        if got != big {
            fails.push(("sizes", format!("carve {k}: {got:?} against {big:?}")));
        }
        // Loose voxels are gone; every other holding voxel is where it was.
        let mut loose = std::collections::HashSet::new();
        loose.extend(want.iter().flatten().copied());
        for q in area.iter() {
            let stays = plain.is_holding(q) && !loose.contains(&q);
            if loose.contains(&q) && t.is_holding(q) {
                fails.push(("stayed", format!("carve {k}: {q:?} loose but still there")));
                break;
            }
            if stays && t.voxel(q) != plain.voxel(q) {
                fails.push(("taken", format!("carve {k}: {q:?} anchored but taken")));
                break;
            }
        }
        let described = fails.into_iter().map(|(rule, f)| {
            (
                rule,
                format!(
                    "{f} | seed {seed}, voxel size {voxel_size}, budget {budget}, window {:?}",
                    window.min()
                ),
            )
        });
        tally.record("carve", described);
    }
}
