//! Levels of detail against full resolution: each level's surface stays near the full-resolution
//! surface, never appears where every voxel is air, keeps fewer triangles the coarser it gets, and
//! its nodes mesh seamlessly against each other.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use voxterra::TerrainConfig;
use voxterra::core::nalgebra::Point3;
use voxterra::core::{Region, VoxelRead};
use voxterra::lod::{LodError, LodNode, NODE_CELLS};
use voxterra::mesher::{MeshWorkspace, Mesher, RenderMesh};
use voxterra::parry3d::math::Vector;
use voxterra::parry3d::query::PointQuery;
use voxterra::parry3d::shape::TriMesh;
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain};

const SIZE: [u32; 3] = [256, 96, 256];

fn world(seed: u64) -> Terrain {
    Terrain::generate(&GenParams::new(seed, SIZE), TerrainConfig::default()).unwrap()
}

/// Every node of `level` over the world (one node of margin below and around: surfaces facing
/// down out of the stored box belong to the nodes under it), merged into one mesh.
fn level_mesh(t: &Terrain, level: u32) -> RenderMesh {
    let mesher = Mesher::new(t.materials());
    let mut ws = MeshWorkspace::new();
    let span = (NODE_CELLS << level) as i32;
    let mut all = RenderMesh::default();
    for y in -1..=(SIZE[1] as i32 / span) {
        for z in -1..=(SIZE[2] as i32 / span) {
            for x in -1..=(SIZE[0] as i32 / span) {
                let m = t.lod_mesh(&mesher, LodNode { level, x, y, z }, &mut ws).unwrap();
                append(&mut all, &m);
            }
        }
    }
    all
}

/// `m`'s triangles as their corners' position bits, sorted: meshes compare exactly whatever their
/// vertex order.
fn sorted_triangles(m: &RenderMesh) -> Vec<[[u32; 3]; 3]> {
    let mut v: Vec<[[u32; 3]; 3]> = m
        .indices
        .iter()
        .map(|t| t.map(|i| m.positions[i as usize].coords.map(|v| v.to_bits()).into()))
        .collect();
    v.sort_unstable();
    v
}

/// Adds `m`'s triangles to `all`.
fn append(all: &mut RenderMesh, m: &RenderMesh) {
    let base = all.positions.len() as u32;
    all.positions.extend(&m.positions);
    all.normals.extend(&m.normals);
    all.materials.extend(&m.materials);
    all.indices.extend(m.indices.iter().map(|t| t.map(|i| i + base)));
}

fn trimesh(m: &RenderMesh) -> TriMesh {
    TriMesh::new(m.positions.iter().map(|p| Vector::new(p.x, p.y, p.z)).collect(), m.indices.clone()).unwrap()
}

/// The largest and mean distance from `points` to `surface`.
fn distances(points: &[Point3<f32>], surface: &TriMesh) -> (f32, f32) {
    let mut max = 0.0f32;
    let mut sum = 0.0f64;
    for p in points {
        let q = Vector::new(p.x, p.y, p.z);
        let d = (surface.project_local_point(q, false).point - q).length();
        max = max.max(d);
        sum += d as f64;
    }
    (max, (sum / points.len().max(1) as f64) as f32)
}

/// Counts of non-air voxels over the world's box, summed so any box's count is eight lookups.
struct SolidCount {
    min: Point3<i32>,
    size: [usize; 3],
    sums: Vec<u32>,
}

impl SolidCount {
    fn new(t: &Terrain, region: &Region) -> Self {
        let size = region.size().map(|s| s as usize);
        let (sx, sy, sz) = (size[0] + 1, size[1] + 1, size[2] + 1);
        let mut sums = vec![0u32; sx * sy * sz];
        let at = |x: usize, y: usize, z: usize| x + sx * (z + sz * y);
        let mut voxels = vec![voxterra::core::Voxel::AIR; region.len().unwrap()];
        t.store().read_box(region, &mut voxels).unwrap();
        for y in 0..size[1] {
            for z in 0..size[2] {
                for x in 0..size[0] {
                    let v = u32::from(!voxels[x + size[0] * (z + size[2] * y)].is_air());
                    sums[at(x + 1, y + 1, z + 1)] =
                        v + sums[at(x, y + 1, z + 1)] + sums[at(x + 1, y, z + 1)] + sums[at(x + 1, y + 1, z)]
                            - sums[at(x, y, z + 1)]
                            - sums[at(x, y + 1, z)]
                            - sums[at(x + 1, y, z)]
                            + sums[at(x, y, z)];
                }
            }
        }
        SolidCount { min: region.min(), size, sums }
    }

    /// Non-air voxels in the box `lo..hi` (clamped to the counted region).
    fn count(&self, lo: Point3<i32>, hi: Point3<i32>) -> u32 {
        let c = |v: i32, a: usize| (v - self.min[a]).clamp(0, self.size[a] as i32) as usize;
        let (x0, y0, z0) = (c(lo.x, 0), c(lo.y, 1), c(lo.z, 2));
        let (x1, y1, z1) = (c(hi.x, 0), c(hi.y, 1), c(hi.z, 2));
        let (sx, sz) = (self.size[0] + 1, self.size[2] + 1);
        let at = |x: usize, y: usize, z: usize| self.sums[x + sx * (z + sz * y)] as i64;
        (at(x1, y1, z1) - at(x0, y1, z1) - at(x1, y0, z1) - at(x1, y1, z0)
            + at(x0, y0, z1)
            + at(x0, y1, z0)
            + at(x1, y0, z0)
            - at(x0, y0, z0)) as u32
    }
}

/// A level against the full surface: every vertex within one of the level's cells of it, mean
/// distances both ways within a quarter cell (the full surface's farthest points from the level
/// are unbounded: features thinner than a cell average away), at most 1/3.5 of the triangles of
/// the level below, and matter under every vertex (some full-resolution voxel within a cell of it
/// is not air).
fn check_level(
    name: &str,
    lod: &RenderMesh,
    full: &RenderMesh,
    full_tri: &TriMesh,
    solid: &SolidCount,
    level: u32,
    below: usize,
) {
    assert!(!lod.indices.is_empty(), "{name} level {level} has a surface");
    let cell = (1u32 << level) as f32;
    let (to_full_max, to_full_mean) = distances(&lod.positions, full_tri);
    let (_, from_full_mean) = distances(&full.positions, &trimesh(lod));
    println!(
        "{name} level {level}: {} triangles ({:.2} of the level below); LOD → full max {to_full_max:.2} mean {to_full_mean:.3}, full → LOD mean {from_full_mean:.3}",
        lod.indices.len(),
        lod.indices.len() as f64 / below as f64,
    );
    assert!(to_full_max <= cell, "{name} level {level}: {to_full_max}");
    assert!(to_full_mean <= cell / 4.0 && from_full_mean <= cell / 4.0, "{name} level {level}");
    assert!(lod.indices.len() * 7 <= below * 2, "{name} level {level}: at most 1/3.5 of the level below");
    let reach = 1i32 << level;
    for p in &lod.positions {
        let c = p.map(|v| v.floor() as i32);
        assert!(
            solid.count(c.map(|v| v - reach), c.map(|v| v + reach + 1)) > 0,
            "{name} level {level} vertex {p:?}"
        );
    }
}

#[test]
fn each_level_stays_near_the_full_surface_and_never_shows_in_air() {
    for seed in [1, 7] {
        let mut t = world(seed);
        // An edit, so the mips under it are the edited ones.
        let crater = BrushShape::Sphere { center: Point3::new(128.0, 40.0, 128.0), radius: 14.0 };
        t.apply_brush(&Brush { shape: crater, op: BrushOp::Subtract }).unwrap();
        let full = level_mesh(&t, 0);
        let full_tri = trimesh(&full);
        let counted =
            Region::from_min_size(Point3::new(-64, -64, -64), [SIZE[0] + 128, SIZE[1] + 128, SIZE[2] + 128])
                .unwrap();
        let solid = SolidCount::new(&t, &counted);
        let mut below = full.indices.len();
        for level in 1..=5 {
            let lod = level_mesh(&t, level);
            check_level(&format!("seed {seed} mips"), &lod, &full, &full_tri, &solid, level, below);
            below = lod.indices.len();
        }
    }
}

#[test]
fn nodes_of_a_level_mesh_as_one_box() {
    // Two nodes side by side at level 2 give the triangles of meshing their union in one go.
    let t = world(3);
    let mesher = Mesher::new(t.materials());
    let mut ws = MeshWorkspace::new();
    let view = t.store().level(2).unwrap();
    let a = LodNode { level: 2, x: 0, y: 0, z: 0 };
    let b = LodNode { level: 2, x: 1, y: 0, z: 0 };
    let (ma, mb) = (t.lod_mesh(&mesher, a, &mut ws).unwrap(), t.lod_mesh(&mesher, b, &mut ws).unwrap());
    let union = Region::new(a.region_at_level().unwrap().min(), b.region_at_level().unwrap().max()).unwrap();
    let mut whole = RenderMesh::default();
    mesher.mesh(&view, &union, &mut ws, &mut whole).unwrap();
    assert!(!whole.indices.is_empty());
    assert_eq!(ma.indices.len() + mb.indices.len(), whole.indices.len());
    // The level's positions are in units of 4 voxels in the whole box's mesh.
    let mut split = RenderMesh::default();
    append(&mut split, &ma);
    append(&mut split, &mb);
    for p in &mut whole.positions {
        p.coords *= 4.0;
    }
    assert_eq!(sorted_triangles(&split), sorted_triangles(&whole));
}

#[test]
fn bad_levels_and_far_nodes_are_errors() {
    let t = world(1);
    let mesher = Mesher::new(t.materials());
    let mut ws = MeshWorkspace::new();
    let past = LodNode { level: voxterra::store::MAX_LEVEL + 1, x: 0, y: 0, z: 0 };
    assert!(matches!(t.lod_mesh(&mesher, past, &mut ws), Err(LodError::Level { .. })));
    let far = LodNode { level: 0, x: i32::MAX, y: 0, z: 0 };
    assert!(matches!(t.lod_mesh(&mesher, far, &mut ws), Err(LodError::Core(_))));
    // A node of sky meshes to nothing.
    let sky = LodNode::containing(3, Point3::new(0, 100_000, 0));
    assert!(t.lod_mesh(&mesher, sky, &mut ws).unwrap().indices.is_empty());
}

mod clustered {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;
    use voxterra::core::VoxelPos;
    use voxterra::mesher::{ClusterNode, ClusterPart, LevelMap};

    /// Blocks of 64 voxels, each drawn at its own level: an octree of clusters, any two levels side
    /// by side.
    const BLOCK: i32 = 64;

    fn block_region(b: [i32; 3]) -> Region {
        Region::from_min_size(Point3::new(b[0] * BLOCK, b[1] * BLOCK, b[2] * BLOCK), [BLOCK as u32; 3])
            .unwrap()
    }

    fn block_of(p: VoxelPos) -> [i32; 3] {
        [p.x.div_euclid(BLOCK), p.y.div_euclid(BLOCK), p.z.div_euclid(BLOCK)]
    }

    /// The blocks over the world, one of margin around it.
    fn blocks(size: [u32; 3]) -> Vec<[i32; 3]> {
        let mut out = Vec::new();
        for y in -1..=(size[1] as i32 / BLOCK) {
            for z in -1..=(size[2] as i32 / BLOCK) {
                for x in -1..=(size[0] as i32 / BLOCK) {
                    out.push([x, y, z]);
                }
            }
        }
        out
    }

    /// Every block meshed at its level, all in one mesh.
    fn mesh_all(t: &Terrain, size: [u32; 3], levels: &dyn Fn(VoxelPos) -> u32) -> RenderMesh {
        let mesher = Mesher::new(t.materials());
        let mut ws = MeshWorkspace::new();
        let mut all = RenderMesh::default();
        let mut m = RenderMesh::default();
        for b in blocks(size) {
            let region = block_region(b);
            let level = levels.level_at(region.min());
            mesher
                .mesh_clustered(
                    t.store(),
                    ClusterNode { region, level },
                    &levels,
                    ClusterPart::Whole,
                    &mut ws,
                    &mut m,
                )
                .unwrap();
            append(&mut all, &m);
        }
        all
    }

    /// Directed edges, vertices named by their position's bits, that no edge the other way
    /// matches: 0 for a closed surface.
    fn open_edges(m: &RenderMesh) -> usize {
        let key = |i: u32| m.positions[i as usize].coords.map(|v| v.to_bits());
        let mut count: HashMap<([u32; 3], [u32; 3]), i64> = HashMap::new();
        for t in &m.indices {
            for e in 0..3 {
                let (a, b) = (key(t[e]), key(t[(e + 1) % 3]));
                let (a, b) = (<[u32; 3]>::from(a), <[u32; 3]>::from(b));
                if a == b {
                    continue;
                }
                if a < b {
                    *count.entry((a, b)).or_default() += 1;
                } else {
                    *count.entry((b, a)).or_default() -= 1;
                }
            }
        }
        count.values().filter(|&&c| c != 0).count()
    }

    #[test]
    fn level_zero_is_the_mesher() {
        let t = Terrain::generate(&GenParams::new(2, [128, 64, 128]), TerrainConfig::default()).unwrap();
        let zero = |_: VoxelPos| 0;
        let ours = mesh_all(&t, [128, 64, 128], &zero);
        let mesher = Mesher::new(t.materials());
        let mut ws = MeshWorkspace::new();
        let mut theirs = RenderMesh::default();
        let all = Region::from_min_size(
            Point3::new(-BLOCK, -BLOCK, -BLOCK),
            [128 + 2 * BLOCK as u32, 64 + 2 * BLOCK as u32, 128 + 2 * BLOCK as u32],
        )
        .unwrap();
        mesher.mesh(t.store(), &all, &mut ws, &mut theirs).unwrap();
        assert!(!theirs.indices.is_empty());
        assert_eq!(sorted_triangles(&ours), sorted_triangles(&theirs));
    }

    /// Clustered levels against the full surface, as the mips' levels are held: every vertex
    /// within a cell of its level, mean distances within a quarter cell, a quarter or fewer of the
    /// triangles a level, matter under every vertex.
    #[test]
    fn each_clustered_level_stays_near_the_full_surface() {
        let size = [256, 96, 256];
        let t = Terrain::generate(&GenParams::new(1, size), TerrainConfig::default()).unwrap();
        let full = mesh_all(&t, size, &|_| 0);
        let full_tri = trimesh(&full);
        let counted =
            Region::from_min_size(Point3::new(-64, -64, -64), [size[0] + 128, size[1] + 128, size[2] + 128])
                .unwrap();
        let solid = SolidCount::new(&t, &counted);
        let mut below = full.indices.len();
        for level in 1..=5u32 {
            let lod = mesh_all(&t, size, &|_| level);
            check_level("clustered", &lod, &full, &full_tri, &solid, level, below);
            below = lod.indices.len();
        }
    }

    /// A node's interior and border together are its whole mesh.
    #[test]
    fn interior_and_border_make_the_whole() {
        let size = [128, 64, 128];
        let t = Terrain::generate(&GenParams::new(4, size), TerrainConfig::default()).unwrap();
        let mesher = Mesher::new(t.materials());
        let mut ws = MeshWorkspace::new();
        let levels = |p: VoxelPos| {
            let b = block_of(p);
            ((b[0] * 3 + b[1] * 5 + b[2] * 7).rem_euclid(4)) as u32
        };
        let mut checked = 0;
        for b in blocks(size) {
            let region = block_region(b);
            let level = levels.level_at(region.min());
            let mut parts = Vec::new();
            for part in [ClusterPart::Whole, ClusterPart::Interior, ClusterPart::Border] {
                let mut m = RenderMesh::default();
                mesher
                    .mesh_clustered(t.store(), ClusterNode { region, level }, &levels, part, &mut ws, &mut m)
                    .unwrap();
                parts.push(sorted_triangles(&m));
            }
            let mut split = [parts[1].clone(), parts[2].clone()].concat();
            split.sort_unstable();
            assert_eq!(parts[0], split, "block {b:?}");
            checked += usize::from(!parts[1].is_empty() && !parts[2].is_empty());
        }
        assert!(checked > 4, "{checked} blocks with both parts");
    }

    /// A node meshed in one pass equals its two parts, and its border re-made from summaries after
    /// its neighbours change level equals a fresh border, bit for bit.
    #[test]
    fn borders_stitched_from_summaries_equal_fresh_ones() {
        let size = [128, 64, 128];
        let t = Terrain::generate(&GenParams::new(8, size), TerrainConfig::default()).unwrap();
        let mesher = Mesher::new(t.materials());
        let mut ws = MeshWorkspace::new();
        let before = |p: VoxelPos| {
            let b = block_of(p);
            ((b[0] * 3 + b[1] * 5 + b[2] * 7).rem_euclid(3)) as u32
        };
        // The same blocks, their neighbours now at other levels (each block keeps its own).
        let after = |p: VoxelPos| {
            let b = block_of(p);
            ((b[0] * 2 + b[1] + b[2] * 5).rem_euclid(4)) as u32
        };
        let all = blocks(size);
        // Summaries of every block at the new levels (as a view keeps them).
        let mut summaries = HashMap::new();
        for &b in &all {
            let node = ClusterNode { region: block_region(b), level: after(block_region(b).min()) };
            let (mut i, mut o) = (RenderMesh::default(), RenderMesh::default());
            let summary = mesher.mesh_cluster_node(t.store(), node, &after, &mut ws, &mut i, &mut o).unwrap();
            // One pass gives the two parts.
            for (part, got) in [(ClusterPart::Interior, &i), (ClusterPart::Border, &o)] {
                let mut want = RenderMesh::default();
                mesher.mesh_clustered(t.store(), node, &after, part, &mut ws, &mut want).unwrap();
                assert!(want == *got, "block {b:?} {part:?}");
            }
            summaries.insert(b, summary);
        }
        let mut stitched = 0;
        for &b in &all {
            // A summary made at the old levels is still this block's: its own clusters and signs
            // do not depend on its neighbours' levels.
            let level = after(block_region(b).min());
            let node = ClusterNode { region: block_region(b), level };
            let old = {
                let (mut i, mut o) = (RenderMesh::default(), RenderMesh::default());
                let lv = |p: VoxelPos| if block_region(b).contains(p) { level } else { before(p) };
                mesher.mesh_cluster_node(t.store(), node, &lv, &mut ws, &mut i, &mut o).unwrap()
            };
            let others = |k: (u32, [i32; 3])| {
                let cell = Point3::from(k.1).map(|v| v << k.0);
                summaries.get(&block_of(cell)).and_then(|s| s.vertex(k))
            };
            let mut got = RenderMesh::default();
            mesher.stitch_border(&old, &after, &others, &mut got);
            let mut want = RenderMesh::default();
            mesher.mesh_clustered(t.store(), node, &after, ClusterPart::Border, &mut ws, &mut want).unwrap();
            assert!(want == got, "block {b:?}");
            stitched += usize::from(!got.indices.is_empty());
        }
        assert!(stitched > 4, "{stitched} borders stitched");
    }

    #[test]
    fn chunk_clusters_missing_or_trimmed_are_errors() {
        use voxterra::mesher::{ChunkClusters, MeshError};
        let t = Terrain::generate(&GenParams::new(4, [128, 64, 128]), TerrainConfig::default()).unwrap();
        let mesher = Mesher::new(t.materials());
        let mut ws = MeshWorkspace::new();
        let node = ClusterNode { region: block_region([0, 0, 0]), level: 2 };
        let at2 = |_: VoxelPos| 2;
        let mut tables: HashMap<[i32; 3], ChunkClusters> = voxterra::mesher::cluster_chunks(&node, &at2)
            .unwrap()
            .into_iter()
            .map(|c| (c, mesher.chunk_clusters(t.store(), c, &mut ws).unwrap()))
            .collect();
        let (mut a, mut b) = (RenderMesh::default(), RenderMesh::default());
        assert!(mesher.mesh_cluster_node_from(&|c| tables.get(&c), node, &at2, &mut a, &mut b).is_ok());
        assert!(!a.indices.is_empty());
        // A chunk far above the world reads as one that is all outside.
        assert_eq!(mesher.chunk_clusters(t.store(), [0, 40, 0], &mut ws).unwrap(), ChunkClusters::outside());
        // Level 0 is never served from chunk clusters.
        let fine = ClusterNode { region: block_region([0, 0, 0]), level: 0 };
        let e = mesher.mesh_cluster_node_from(&|c| tables.get(&c), fine, &|_| 0, &mut a, &mut b);
        assert!(matches!(e, Err(MeshError::MissingClusters { level: 0, .. })), "{:?}", e.err());
        // A chunk whose level 2 was dropped, and a chunk missing.
        // One the node's own polygons read (inside the node, the surface crossing it).
        let surface = *tables
            .iter()
            .filter(|(c, _)| c.iter().all(|&v| (0..2).contains(&v)))
            .find(|(_, t)| t.uniform_side().is_none())
            .unwrap()
            .0;
        tables.get_mut(&surface).unwrap().keep_from(3);
        assert!(!tables[&surface].holds(2) && tables[&surface].holds(3));
        let e = mesher.mesh_cluster_node_from(&|c| tables.get(&c), node, &at2, &mut a, &mut b);
        assert!(matches!(e, Err(MeshError::MissingClusters { .. })), "{:?}", e.err());
        tables.remove(&surface);
        let e = mesher.mesh_cluster_node_from(&|c| tables.get(&c), node, &at2, &mut a, &mut b);
        assert!(
            matches!(e, Err(MeshError::MissingClusters { chunk, .. }) if chunk == surface),
            "{:?}",
            e.err()
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4))]

        /// Nodes meshed from chunk clusters equal nodes meshed from voxels, meshes and summaries
        /// bit for bit, beside neighbours at any level, on random worlds after a random crater.
        #[test]
        fn nodes_from_chunk_clusters_equal_nodes_from_voxels(seed in 1u64..1000, picks in proptest::collection::vec(0u32..=5, 48), crater in proptest::array::uniform3(0.0f32..128.0)) {
            let size = [128, 64, 128];
            let mut t = Terrain::generate(&GenParams::new(seed, size), TerrainConfig::default()).unwrap();
            let hole = BrushShape::Sphere { center: Point3::new(crater[0], crater[1] * 0.5, crater[2]), radius: 9.0 };
            t.apply_brush(&Brush { shape: hole, op: BrushOp::Subtract }).unwrap();
            let mesher = Mesher::new(t.materials());
            let mut ws = MeshWorkspace::new();
            let all = blocks(size);
            let levels = |p: VoxelPos| {
                let b = block_of(p);
                all.iter().position(|&q| q == b).map_or(5, |i| picks[i % picks.len()])
            };
            let mut tables = HashMap::new();
            let mut checked = 0;
            for &b in &all {
                let node = ClusterNode { region: block_region(b), level: levels(block_region(b).min()) };
                let (mut i, mut o) = (RenderMesh::default(), RenderMesh::default());
                let want = mesher.mesh_cluster_node(t.store(), node, &levels, &mut ws, &mut i, &mut o).unwrap();
                let (mut gi, mut go) = (RenderMesh::default(), RenderMesh::default());
                let from = |c: [i32; 3]| tables.get(&c);
                if node.level == 0 {
                    let r = mesher.mesh_cluster_node_from(&from, node, &levels, &mut gi, &mut go);
                    let refused = matches!(r, Err(voxterra::mesher::MeshError::MissingClusters { level: 0, .. }));
                    prop_assert!(refused, "a level-0 node from clusters: {:?}", r);
                    continue;
                }
                for c in voxterra::mesher::cluster_chunks(&node, &levels).unwrap() {
                    tables.entry(c).or_insert_with(|| mesher.chunk_clusters(t.store(), c, &mut ws).unwrap());
                }
                let from = |c: [i32; 3]| tables.get(&c);
                let got = mesher.mesh_cluster_node_from(&from, node, &levels, &mut gi, &mut go).unwrap();
                prop_assert!(gi == i, "block {:?} interior", b);
                prop_assert!(go == o, "block {:?} border", b);
                prop_assert!(got == want, "block {:?} summary", b);
                checked += usize::from(!i.indices.is_empty());
            }
            prop_assert!(checked > 0);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(6))]

        /// Blocks at random levels (0 to 5, any two side by side) leave no open edge, on random
        /// worlds and after a random crater.
        #[test]
        fn mixed_levels_are_watertight(seed in 1u64..1000, picks in proptest::collection::vec(0u32..=5, 48), crater in proptest::array::uniform3(0.0f32..128.0)) {
            let size = [128, 64, 128];
            let mut t = Terrain::generate(&GenParams::new(seed, size), TerrainConfig::default()).unwrap();
            let hole = BrushShape::Sphere { center: Point3::new(crater[0], crater[1] * 0.5, crater[2]), radius: 9.0 };
            t.apply_brush(&Brush { shape: hole, op: BrushOp::Subtract }).unwrap();
            let all = blocks(size);
            let levels = |p: VoxelPos| {
                let b = block_of(p);
                all.iter().position(|&q| q == b).map_or(5, |i| picks[i % picks.len()])
            };
            let m = mesh_all(&t, size, &levels);
            prop_assert!(!m.indices.is_empty());
            prop_assert_eq!(open_edges(&m), 0);
        }
    }
}

mod view {
    use super::*;
    use std::collections::BTreeMap;
    use voxterra::lod::{LodConfig, LodMeshKey, LodUpdate, LodView};
    use voxterra::mesher::{ClusterNode, ClusterPart};

    /// What a renderer holds: the meshes handed out so far.
    fn apply(held: &mut BTreeMap<LodMeshKey, RenderMesh>, u: LodUpdate) {
        for k in u.dropped {
            assert!(held.remove(&k).is_some(), "{k:?} dropped but never handed out");
        }
        for (k, m) in u.meshes {
            held.insert(k, m);
        }
    }

    fn small() -> LodConfig {
        LodConfig { distances: vec![24.0, 48.0, 96.0], hysteresis: 0.25 }
    }

    /// The held meshes are the view's nodes, each equal to a fresh mesh of it.
    fn check_fresh(t: &Terrain, view: &LodView, held: &BTreeMap<LodMeshKey, RenderMesh>) {
        let mesher = Mesher::new(t.materials());
        let mut ws = MeshWorkspace::new();
        let nodes: Vec<LodNode> = view.nodes().collect();
        let keys: Vec<LodMeshKey> = held.keys().copied().collect();
        let want: Vec<LodMeshKey> = nodes
            .iter()
            .flat_map(|&n| {
                [ClusterPart::Interior, ClusterPart::Border].map(|part| LodMeshKey { node: n, part })
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        assert_eq!(keys, want);
        let levels = |p: voxterra::core::VoxelPos| view.level_at(p);
        for (k, m) in held {
            let mut fresh = RenderMesh::default();
            let node = ClusterNode { region: k.node.region().unwrap(), level: k.node.level };
            mesher.mesh_clustered(t.store(), node, &levels, k.part, &mut ws, &mut fresh).unwrap();
            assert!(fresh == *m, "{k:?} is not what a fresh mesh of it is");
        }
    }

    fn joined(held: &BTreeMap<LodMeshKey, RenderMesh>) -> RenderMesh {
        let mut all = RenderMesh::default();
        for m in held.values() {
            append(&mut all, m);
        }
        all
    }

    #[test]
    fn moves_and_edits_hand_out_what_a_fresh_view_draws() {
        let mut t = Terrain::generate(&GenParams::new(5, [128, 64, 128]), TerrainConfig::default()).unwrap();
        let mesher = Mesher::new(t.materials());
        let mut view = LodView::new(small()).unwrap();
        let mut held = BTreeMap::new();
        let path = [[10.0, 40.0, 10.0], [60.0, 40.0, 20.0], [120.0, 30.0, 100.0], [64.0, 50.0, 64.0]];
        let mut levels_seen = std::collections::BTreeSet::new();
        for (i, p) in path.iter().enumerate() {
            if i == 2 {
                let crater = BrushShape::Sphere { center: Point3::new(64.0, 30.0, 64.0), radius: 10.0 };
                let r = t.apply_brush(&Brush { shape: crater, op: BrushOp::Subtract }).unwrap();
                view.mark_edited(&r.dirty.unwrap());
            }
            let u = view.update(&t, &mesher, &[Point3::new(p[0], p[1], p[2])]).unwrap();
            view.validate().unwrap();
            apply(&mut held, u);
            levels_seen.extend(view.nodes().map(|n| n.level));
            check_fresh(&t, &view, &held);
            super::clustered_open_edges_are_zero(&joined(&held));
        }
        assert!(levels_seen.len() >= 3, "levels drawn: {levels_seen:?}");
        // With no hysteresis the selection depends on the viewers alone.
        let cfg = LodConfig { hysteresis: 0.0, ..small() };
        let (mut a, mut b) = (LodView::new(cfg.clone()).unwrap(), LodView::new(cfg).unwrap());
        a.update(&t, &mesher, &[Point3::new(10.0, 40.0, 10.0)]).unwrap();
        a.validate().unwrap();
        a.update(&t, &mesher, &[Point3::new(100.0, 40.0, 90.0)]).unwrap();
        a.validate().unwrap();
        b.update(&t, &mesher, &[Point3::new(100.0, 40.0, 90.0)]).unwrap();
        b.validate().unwrap();
        assert_eq!(a.nodes().collect::<Vec<_>>(), b.nodes().collect::<Vec<_>>());
    }

    /// Nodes past the stored voxels are never split, however near the viewer: a small world
    /// viewed from its middle gets no fine nodes outside it.
    #[test]
    fn nodes_past_the_world_stay_whole() {
        let t = Terrain::generate(&GenParams::new(3, [64, 64, 64]), TerrainConfig::default()).unwrap();
        let mesher = Mesher::new(t.materials());
        let mut view = LodView::new(LodConfig::default()).unwrap();
        view.update(&t, &mesher, &[Point3::new(32.0, 32.0, 32.0)]).unwrap();
        view.validate().unwrap();
        let stored = t.extent().unwrap().expanded(2);
        let mut outside = 0;
        for n in view.nodes() {
            if n.region().unwrap().intersection(&stored).is_some() {
                continue;
            }
            outside += 1;
            // Its parent was split, so the parent holds stored voxels.
            let parent = LodNode {
                level: n.level + 1,
                x: n.x.div_euclid(2),
                y: n.y.div_euclid(2),
                z: n.z.div_euclid(2),
            };
            assert!(
                parent.region().unwrap().intersection(&stored).is_some(),
                "{n:?} past the world was split"
            );
        }
        assert!(outside > 0, "the view reaches past the world");
    }

    #[test]
    fn a_viewer_pacing_across_a_boundary_changes_nothing() {
        let t = Terrain::generate(&GenParams::new(6, [128, 64, 128]), TerrainConfig::default()).unwrap();
        let mesher = Mesher::new(t.materials());
        let mut view = LodView::new(small()).unwrap();
        // Find a step that changes the selection, then pace across it.
        let at = |x: f32| [Point3::new(x, 40.0, 20.0)];
        view.update(&t, &mesher, &at(0.0)).unwrap();
        view.validate().unwrap();
        let mut x = 0.0;
        let before: Vec<_> = view.nodes().collect();
        while view.nodes().collect::<Vec<_>>() == before {
            x += 1.0;
            view.update(&t, &mesher, &at(x)).unwrap();
            view.validate().unwrap();
            assert!(x < 200.0);
        }
        for step in 0..6 {
            let back = if step % 2 == 0 { x - 1.5 } else { x };
            let u = view.update(&t, &mesher, &at(back)).unwrap();
            view.validate().unwrap();
            assert!(u.meshes.is_empty() && u.dropped.is_empty(), "step {step} at {back}");
        }
    }

    #[test]
    fn one_and_two_threads_hand_out_the_same() {
        let t = Terrain::generate(&GenParams::new(7, [128, 64, 128]), TerrainConfig::default()).unwrap();
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| {
                let mesher = Mesher::new(t.materials());
                let mut view = LodView::new(small()).unwrap();
                let mut out = Vec::new();
                for p in [[5.0, 40.0, 5.0], [90.0, 40.0, 70.0]] {
                    out.push(view.update(&t, &mesher, &[Point3::new(p[0], p[1], p[2])]).unwrap());
                }
                out
            })
        };
        assert!(run(1) == run(2));
    }

    #[test]
    fn bad_configs_and_viewers_are_errors() {
        let t = Terrain::generate(&GenParams::new(1, [64, 48, 64]), TerrainConfig::default()).unwrap();
        let mesher = Mesher::new(t.materials());
        assert!(matches!(
            LodView::new(LodConfig { distances: vec![1.0; 9], hysteresis: 0.0 }),
            Err(LodError::Level { .. })
        ));
        assert!(matches!(
            LodView::new(LodConfig { distances: vec![f32::NAN], hysteresis: 0.0 }),
            Err(LodError::Config)
        ));
        assert!(matches!(
            LodView::new(LodConfig { distances: vec![1.0], hysteresis: -1.0 }),
            Err(LodError::Config)
        ));
        let mut view = LodView::new(LodConfig::default()).unwrap();
        assert!(matches!(
            view.update(&t, &mesher, &[Point3::new(f32::NAN, 0.0, 0.0)]),
            Err(LodError::Viewer)
        ));
    }
}

/// Asserts a mesh is closed: every edge, vertices named by position, is matched by the same edge
/// the other way.
fn clustered_open_edges_are_zero(m: &RenderMesh) {
    let key = |i: u32| -> [u32; 3] { m.positions[i as usize].coords.map(|v| v.to_bits()).into() };
    let mut count: std::collections::HashMap<([u32; 3], [u32; 3]), i64> = std::collections::HashMap::new();
    for t in &m.indices {
        for e in 0..3 {
            let (a, b) = (key(t[e]), key(t[(e + 1) % 3]));
            if a < b {
                *count.entry((a, b)).or_default() += 1;
            } else if b < a {
                *count.entry((b, a)).or_default() -= 1;
            }
        }
    }
    let open = count.values().filter(|&&c| c != 0).count();
    assert_eq!(open, 0, "{open} open edges");
}
