//! Detached regions against a brute-force flood fill of the whole stored box.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra::TerrainConfig;
use voxterra::core::nalgebra::Point3;
use voxterra::core::{Region, VoxelPos, materials};
use voxterra::detach::DetachedRegion;
use voxterra::worldgen::WorldParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain};

/// Every face-connected piece of holding voxels in the terrain's stored box, by brute force: its
/// voxels (sorted by y, z, x) and whether it reaches the floor.
fn pieces(t: &Terrain) -> Vec<(Vec<VoxelPos>, bool)> {
    let e = t.extent().unwrap();
    let size = e.size().map(|s| s as usize);
    let at = |p: VoxelPos| -> usize {
        let d = p - e.min();
        d.x as usize + size[0] * (d.z as usize + size[2] * d.y as usize)
    };
    let holding: Vec<bool> = e.iter().map(|p| t.is_holding(p)).collect();
    let mut label = vec![u32::MAX; holding.len()];
    let mut out = Vec::new();
    for start in e.iter() {
        if !holding[at(start)] || label[at(start)] != u32::MAX {
            continue;
        }
        let id = out.len() as u32;
        let mut stack = vec![start];
        label[at(start)] = id;
        let mut voxels = Vec::new();
        while let Some(p) = stack.pop() {
            voxels.push(p);
            for d in [[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]] {
                let q = p + voxterra::core::nalgebra::Vector3::from(d);
                if e.contains(q) && holding[at(q)] && label[at(q)] == u32::MAX {
                    label[at(q)] = id;
                    stack.push(q);
                }
            }
        }
        voxels.sort_unstable_by_key(|p| (p.y, p.z, p.x));
        let floor = voxels.iter().any(|p| p.y <= e.min().y);
        out.push((voxels, floor));
    }
    out
}

/// What the search should find around `dirty`: the pieces with a voxel in it (grown by one) that
/// reach no floor and are within the budget, in the order of their first seed.
fn expected(t: &Terrain, dirty: &Region, budget: usize) -> Vec<Vec<VoxelPos>> {
    let all = pieces(t);
    let near = dirty.expanded(1);
    let mut order: Vec<(VoxelPos, Vec<VoxelPos>)> = all
        .into_iter()
        .filter(|(v, floor)| !floor && v.len() <= budget)
        .filter_map(|(v, _)| {
            // The first seed of a piece is its first voxel in the grown box, in (y, z, x) order.
            let first = v.iter().filter(|p| near.contains(**p)).min_by_key(|p| (p.y, p.z, p.x)).copied()?;
            Some((first, v))
        })
        .collect();
    order.sort_unstable_by_key(|(f, _)| (f.y, f.z, f.x));
    order.into_iter().map(|(_, v)| v).collect()
}

fn found(t: &Terrain, dirty: &Region, budget: usize) -> Vec<Vec<VoxelPos>> {
    t.find_detached(dirty, budget).into_iter().map(|r: DetachedRegion| r.voxels).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// Floating rocks added over a random world, then a random carve: the pieces found around the
    /// carve are the brute force's, with a budget large enough and one too small (then attached).
    #[test]
    fn detection_equals_a_brute_force_flood_fill(
        seed in 1u64..500,
        rocks in proptest::collection::vec((proptest::array::uniform3(4.0f32..60.0), 1.5f32..5.0), 1..4),
        carve in (proptest::array::uniform3(0.0f32..64.0), 2.0f32..8.0),
    ) {
        let mut t = Terrain::generate(&WorldParams::new(seed, [64, 48, 64]), TerrainConfig::default()).unwrap();
        for (c, r) in &rocks {
            let rock = BrushShape::Sphere { center: Point3::new(c[0], 30.0 + c[1] * 0.3, c[2]), radius: *r };
            t.apply_brush(&Brush { shape: rock, op: BrushOp::Add(materials::ROCK) }).unwrap();
        }
        let hole = BrushShape::Sphere { center: Point3::new(carve.0[0], carve.0[1] * 0.7, carve.0[2]), radius: carve.1 };
        let report = t.apply_brush(&Brush { shape: hole, op: BrushOp::Subtract }).unwrap();
        let dirty = report.dirty.unwrap_or_else(|| Region::from_min_size(Point3::new(0, 30, 0), [64, 18, 64]).unwrap());
        for budget in [1 << 20, 40] {
            prop_assert_eq!(found(&t, &dirty, budget), expected(&t, &dirty, budget), "budget {}", budget);
        }
        // Around the rocks themselves: floating pieces are found there.
        let sky = Region::from_min_size(Point3::new(0, 30, 0), [64, 18, 64]).unwrap();
        prop_assert_eq!(found(&t, &sky, 1 << 20), expected(&t, &sky, 1 << 20));
    }
}

#[test]
fn an_arch_cut_through_falls_and_its_piers_stay() {
    let mut t = Terrain::new(voxterra::core::MaterialTable::default(), TerrainConfig::default()).unwrap();
    let rock = |min: [f32; 3], max: [f32; 3]| Brush {
        shape: BrushShape::Box { min: Point3::from(min), max: Point3::from(max) },
        op: BrushOp::Add(materials::ROCK),
    };
    // Ground, two piers and a lintel over them.
    t.apply_brush(&rock([0.0, 0.0, 0.0], [40.0, 4.0, 16.0])).unwrap();
    t.apply_brush(&rock([4.0, 4.0, 4.0], [10.0, 20.0, 12.0])).unwrap();
    t.apply_brush(&rock([30.0, 4.0, 4.0], [36.0, 20.0, 12.0])).unwrap();
    t.apply_brush(&rock([4.0, 20.0, 4.0], [36.0, 26.0, 12.0])).unwrap();
    assert!(t.find_detached(&t.extent().unwrap(), 1 << 20).is_empty(), "the arch stands");
    // Cut the lintel beside each pier: the middle falls, the piers stand.
    let mut dirty = None::<Region>;
    for x in [12.0, 26.0] {
        let cut = Brush {
            shape: BrushShape::Box { min: Point3::new(x, 18.0, 0.0), max: Point3::new(x + 2.0, 30.0, 16.0) },
            op: BrushOp::Subtract,
        };
        let d = t.apply_brush(&cut).unwrap().dirty.unwrap();
        dirty = Some(dirty.map_or(d, |r| r.union(&d)));
    }
    let pieces = t.find_detached(&dirty.unwrap(), 1 << 20);
    assert_eq!(pieces.len(), 1, "{pieces:?}");
    let p = &pieces[0];
    assert!(p.bounds.min().x >= 13 && p.bounds.max().x <= 27, "{:?}", p.bounds);
    assert!(p.voxels.iter().all(|v| v.y >= 20));
    // With a budget under the piece's size it counts as attached.
    assert!(t.find_detached(&dirty.unwrap(), p.voxels.len() - 1).is_empty());
}
