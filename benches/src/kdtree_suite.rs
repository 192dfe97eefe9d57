//! Suite `kdtree`: the loose kD tree against parry3d 0.31's `TriMesh` (BVH) on the same triangles:
//! a 200k-triangle terrain grid and physics-chunk-sized meshes (a few hundred triangles).

use crate::harness::{Budget, Metric, Report, compare, compare_prechecked};
use crate::parry_adapter::ParryTriangles;
use crate::world::Rng;
use std::hint::black_box;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{
    Aabb, Culling, Positions, Ray, TriangleIndex, TriangleIndices, TriangleMesh, TriangleSource,
};
use voxterra_kdtree::KdTree;
use voxterra_worldgen::TerrainModel;

const PEER: &str = "parry";

/// A compact chunk mesh: positions and u16 indices (what the mesher's physics meshes will be).
pub struct ChunkMesh {
    positions: Vec<Point3<f32>>,
    triangles: Vec<[u16; 3]>,
}

impl TriangleSource for ChunkMesh {
    fn positions(&self) -> Positions<'_> {
        Positions::F32(&self.positions)
    }
    fn indices(&self) -> TriangleIndices<'_> {
        TriangleIndices::U16(&self.triangles)
    }
}

/// A heightfield grid of `n × n` quads over the default world's terrain, starting at `(x0, z0)`.
pub fn terrain_grid(terrain: &TerrainModel, n: u32, x0: i32, z0: i32) -> (Vec<Point3<f32>>, Vec<[u32; 3]>) {
    let mut p = Vec::with_capacity(((n + 1) * (n + 1)) as usize);
    for z in 0..=n {
        for x in 0..=n {
            let (wx, wz) = (x0 + x as i32, z0 + z as i32);
            p.push(Point3::new(wx as f32, terrain.column(wx, wz).height, wz as f32));
        }
    }
    let mut t = Vec::with_capacity((2 * n * n) as usize);
    for z in 0..n {
        for x in 0..n {
            let i = z * (n + 1) + x;
            t.push([i, i + n + 1, i + 1]);
            t.push([i + 1, i + n + 1, i + n + 2]);
        }
    }
    (p, t)
}

/// Rays from above aimed at random ground points: straight down, or oblique (45°).
pub fn rays(rng: &mut Rng, bounds: &Aabb, n: usize, oblique: bool) -> Vec<Ray> {
    let e = bounds.extents();
    (0..n)
        .map(|_| {
            let fx = rng.coord(1 << 20) as f32 / (1 << 20) as f32;
            let fz = rng.coord(1 << 20) as f32 / (1 << 20) as f32;
            let target = Point3::new(bounds.mins.x + fx * e.x, bounds.mins.y, bounds.mins.z + fz * e.z);
            let dir = if oblique {
                let a = rng.coord(360) as f32 * std::f32::consts::PI / 180.0;
                Vector3::new(a.cos(), -1.0, a.sin()).normalize()
            } else {
                Vector3::new(0.0, -1.0, 0.0)
            };
            Ray::new(target - dir * (e.y + 10.0), dir)
        })
        .collect()
}

/// `count` chunk-sized meshes (12 × 12 quads: 288 triangles, u16 indices) tiling the terrain.
pub fn chunk_meshes(terrain: &TerrainModel, count: i32) -> Vec<ChunkMesh> {
    (0..count)
        .map(|i| {
            let (p, t) = terrain_grid(terrain, 12, (i % 40) * 12, (i / 40) * 12);
            ChunkMesh { positions: p, triangles: t.iter().map(|t| t.map(|v| v as u16)).collect() }
        })
        .collect()
}

/// Boxes of `size` at random surface points.
pub fn boxes(rng: &mut Rng, mesh: &impl TriangleSource, n: usize, size: f32) -> Vec<Aabb> {
    let p = mesh.positions();
    (0..n)
        .map(|_| {
            let c = p.get(rng.coord(p.len() as u32) as usize);
            let h = Vector3::repeat(size * 0.5);
            Aabb::new(c - h + Vector3::new(0.3, 0.2, 0.1), c + h + Vector3::new(0.3, 0.2, 0.1))
        })
        .collect()
}

/// Checks the two indices agree on every ray (hit or miss, and `t` within 1e-3 relative); returns the
/// number of rays where they differ (grazing rays on shared edges may, with different routines).
fn ray_disagreements(a: &impl TriangleIndex, b: &impl TriangleIndex, rays: &[Ray]) -> usize {
    rays.iter()
        .filter(|r| {
            let (x, y) = (a.cast_ray(r, f32::MAX, Culling::None), b.cast_ray(r, f32::MAX, Culling::None));
            match (x, y) {
                (Some(x), Some(y)) => (x.t - y.t).abs() > 1e-3 * (1.0 + x.t.abs()),
                (None, None) => false,
                _ => true,
            }
        })
        .count()
}

fn count_rays(index: &impl TriangleIndex, rays: &[Ray], any: bool) -> usize {
    rays.iter()
        .filter(|r| {
            if any {
                index.ray_hits_any(r, f32::MAX, Culling::None)
            } else {
                index.cast_ray(r, f32::MAX, Culling::None).is_some()
            }
        })
        .count()
}

fn count_aabb(index: &impl TriangleIndex, boxes: &[Aabb]) -> usize {
    let mut n = 0;
    for b in boxes {
        index.triangles_in_aabb(b, &mut |_| n += 1);
    }
    n
}

/// Runs the suite.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let terrain = TerrainModel::new(1, 128);
    let side = if quick { 100 } else { 317 }; // 317² quads: 200 978 triangles
    let (positions, triangles) = terrain_grid(&terrain, side, 40, 40);
    let big = TriangleMesh { positions, triangles };
    let tris = big.triangle_count();
    let mut report = Report {
        suite: "kdtree".into(),
        setup: format!(
            "terrain grid of {tris} triangles (default world heights) and 288-triangle chunk meshes (u16); peer: parry3d 0.31 TriMesh"
        ),
        ..Report::default()
    };

    // Build.
    let tree = KdTree::build(&big).expect("valid mesh");
    tree.validate(&big).expect("a valid tree");
    let parry = ParryTriangles::build(&big);
    report.cases.push(compare(
        Budget { reps: budget.reps.min(7) },
        "build, 200k terrain",
        "triangle",
        tris as u64,
        PEER,
        ">= 4x TriMesh::new",
        || black_box(KdTree::build(&big)).is_ok(),
        || black_box(ParryTriangles::build(&big)).mesh.num_triangles() > 0,
    ));
    let chunks = chunk_meshes(&terrain, if quick { 40 } else { 400 });
    let chunk_tris: usize = chunks.iter().map(|c| c.triangle_count()).sum();
    report.cases.push(compare(
        budget,
        "build, 288-triangle chunks",
        "triangle",
        chunk_tris as u64,
        PEER,
        ">= 4x TriMesh::new",
        || chunks.iter().filter(|c| black_box(KdTree::build(*c)).is_ok()).count(),
        || chunks.iter().filter(|c| black_box(ParryTriangles::build(*c)).mesh.num_triangles() > 0).count(),
    ));

    // Memory.
    let s = tree.stats();
    let mesh_u32 = big.positions.len() * 12 + tris * 12;
    report.metrics.push(Metric {
        name: "tree bytes/triangle".into(),
        voxterra: s.bytes as f64 / tris as f64,
        peer: parry.bytes() as f64 / tris as f64,
        peer_name: format!("{PEER} (mesh+BVH)"),
        goal: format!(
            "<= 12; depth {}, {} nodes, {:.2} triangles/leaf",
            s.depth, s.nodes, s.triangles_per_leaf
        ),
    });
    report.metrics.push(Metric {
        name: "mesh+tree bytes/tri, 200k u32".into(),
        voxterra: (mesh_u32 + s.bytes) as f64 / tris as f64,
        peer: parry.bytes() as f64 / tris as f64,
        peer_name: format!("{PEER} (mesh+BVH)"),
        goal: "<= 24.5 (Roblox); u32 indices alone cost 12".into(),
    });
    let c0 = &chunks[0];
    let (ct, cp) = (KdTree::build(c0).expect("valid"), ParryTriangles::build(c0));
    let c_mesh = c0.positions.len() * 12 + c0.triangles.len() * 6;
    report.metrics.push(Metric {
        name: "mesh+tree bytes/tri, chunk u16".into(),
        voxterra: (c_mesh + ct.stats().bytes) as f64 / c0.triangle_count() as f64,
        peer: cp.bytes() as f64 / c0.triangle_count() as f64,
        peer_name: format!("{PEER} (mesh+BVH)"),
        goal: "<= 24.5 (Roblox's shipped figure)".into(),
    });

    // Rays on the big terrain.
    let mut rng = Rng::new(5);
    let n = if quick { 20_000 } else { 100_000 };
    let view = tree.with(&big);
    for (name, oblique) in [("down", false), ("oblique", true)] {
        let set = rays(&mut rng, tree.bounds(), n, oblique);
        let bad = ray_disagreements(&view, &parry, &set);
        assert!(bad * 1000 <= set.len(), "{bad} of {} {name} rays disagree with parry", set.len());
        report.cases.push(compare_prechecked(
            budget,
            &format!("closest hit, {name}"),
            "ray",
            n as u64,
            PEER,
            ">= 2x parry",
            || count_rays(&view, &set, false),
            || count_rays(&parry, &set, false),
        ));
        report.cases.push(compare_prechecked(
            budget,
            &format!("any hit, {name}"),
            "ray",
            n as u64,
            PEER,
            "faster than closest",
            || count_rays(&view, &set, true),
            || count_rays(&parry, &set, true),
        ));
        // The same rays through the batched call, against parry's casts one by one (it has no
        // batched form). Its results are checked against our single-ray casts first.
        let mut hits = vec![None; set.len()];
        view.cast_rays(&set, f32::MAX, Culling::None, &mut hits);
        assert!(
            hits.iter().zip(&set).all(|(h, r)| *h == view.cast_ray(r, f32::MAX, Culling::None)),
            "batched {name} rays differ from single casts"
        );
        report.cases.push(compare_prechecked(
            budget,
            &format!("closest hit, {name}, batched"),
            "ray",
            n as u64,
            PEER,
            ">= 2x parry (ours 16 in flight)",
            || {
                view.cast_rays(&set, f32::MAX, Culling::None, &mut hits);
                hits.iter().filter(|h| h.is_some()).count()
            },
            || count_rays(&parry, &set, false),
        ));
        report.metrics.push(Metric {
            name: format!("rays disagreeing, {name}"),
            voxterra: bad as f64,
            peer: set.len() as f64,
            peer_name: "(rays)".into(),
            goal: "hit/miss and t within 1e-3 (grazing edges may differ)".into(),
        });
    }

    // AABB queries: character-sized boxes on the big terrain, and on chunk meshes.
    let bx = boxes(&mut rng, &big, n / 4, 2.5);
    report.cases.push(compare(
        budget,
        "AABB query, 200k terrain",
        "query",
        bx.len() as u64,
        PEER,
        ">= 1.5x bvh().intersect_aabb",
        || count_aabb(&view, &bx),
        || count_aabb(&parry, &bx),
    ));
    let chunk_idx: Vec<(KdTree, ParryTriangles)> =
        chunks.iter().map(|c| (KdTree::build(c).expect("valid"), ParryTriangles::build(c))).collect();
    let chunk_boxes: Vec<Vec<Aabb>> = chunks.iter().map(|c| boxes(&mut rng, c, 16, 2.5)).collect();
    let queries = chunk_boxes.iter().map(Vec::len).sum::<usize>() as u64;
    report.cases.push(compare(
        budget,
        "AABB query, chunk meshes",
        "query",
        queries,
        PEER,
        ">= 1.5x bvh().intersect_aabb",
        || {
            chunks
                .iter()
                .zip(&chunk_idx)
                .zip(&chunk_boxes)
                .map(|((c, (t, _)), b)| count_aabb(&t.with(c), b))
                .sum::<usize>()
        },
        || chunk_idx.iter().zip(&chunk_boxes).map(|((_, p), b)| count_aabb(p, b)).sum::<usize>(),
    ));
    report
}
