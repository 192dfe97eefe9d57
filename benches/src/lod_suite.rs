//! Suite `lod`: levels of detail against the `transvoxel` crate (Lengyel's transition cells, the
//! method godot_voxel uses) sampling the same voxels at the same level, and meshoptimizer's
//! simplifier (the `meshopt` crate) on the full-resolution mesh at each level's triangle count.
//!
//! Ours is the clustered mesher (`Mesher::mesh_clustered`: octree clusters, crack-free between any
//! levels), and beside it the mips' own surface (`Terrain::lod_mesh`, same-level tiling only).
//! transvoxel samples each node's `33³` grid points at the voxel there (density `occupancy − ½` for
//! solid materials), the signs our clusters' grid uses.

use crate::harness::{Budget, Metric, Report, compare_prechecked};
use crate::lod_quality;
use parry3d::math::Vector;
use parry3d::query::PointQuery;
use parry3d::shape::TriMesh;
use std::sync::Arc;
use std::time::Instant;
use transvoxel::prelude::*;
use voxterra::lod::{LodConfig, LodNode, LodView, NODE_CELLS};
use voxterra::{Terrain, TerrainConfig};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Ray, Region, VoxelPos, VoxelRead};
use voxterra_mesher::{
    ChunkClusterMap, ChunkClusters, ClusterNode, ClusterPart, MeshWorkspace, Mesher, RenderMesh,
    cluster_chunks,
};

use voxterra_worldgen::GenParams;

const TRANSVOXEL: &str = "transvoxel 2.0";
const MESHOPT: &str = "meshopt 0.7 simplify";

/// transvoxel's extraction of `node`, `sides` at double resolution: its triangle count.
fn transvoxel_node(t: &Terrain, node: LodNode, sides: TransitionSides) -> usize {
    let solid = t.materials().solid_mask();
    let store = t.store();
    let field = |x: f32, y: f32, z: f32| -> f32 {
        let v = store.voxel(Point3::new(x.floor() as i32, y.floor() as i32, z.floor() as i32));
        if solid >> v.material().id() & 1 != 0 { v.occupancy() - 0.5 } else { -0.5 }
    };
    let r = node.region().expect("node in range");
    let base = r.min().map(|v| v as f32);
    let block = Block::new([base.x, base.y, base.z], r.size()[0] as f32, NODE_CELLS as usize);
    let builder = GenericMeshBuilder::new();
    let mesh = extract_from_field(&field, FieldCaching::CacheCentralBlockOnly, block, sides, 0.0f32, builder)
        .build();
    mesh.num_tris()
}

/// The ground voxel under the world's center.
fn ground_point(t: &Terrain, size: [u32; 3]) -> Point3<i32> {
    let (x, z) = (size[0] as f32 * 0.5, size[2] as f32 * 0.5);
    let hit = t
        .cast_ray(
            &Ray::new(Point3::new(x, size[1] as f32 + 10.0, z), -voxterra_core::nalgebra::Vector3::y()),
            1e4,
        )
        .expect("valid ray");
    let y = hit.map_or(size[1] as f32 * 0.5, |h| h.point.y);
    Point3::new(x as i32, y as i32, z as i32)
}

/// The node of `level` at the ground under the world's center.
fn node_at_ground(t: &Terrain, size: [u32; 3], level: u32) -> LodNode {
    LodNode::containing(level, ground_point(t, size))
}

/// The clustered mesh of `node` with every neighbor at `levels`.
fn clustered(
    t: &Terrain,
    mesher: &Mesher,
    node: LodNode,
    levels: &dyn Fn(VoxelPos) -> u32,
    part: ClusterPart,
    ws: &mut MeshWorkspace,
) -> RenderMesh {
    let mut m = RenderMesh::default();
    let n = ClusterNode { region: node.region().expect("in range"), level: node.level };
    mesher.mesh_clustered(t.store(), n, &levels, part, ws, &mut m).expect("node meshes");
    m
}

fn trimesh(m: &RenderMesh) -> TriMesh {
    TriMesh::new(m.positions.iter().map(|p| Vector::new(p.x, p.y, p.z)).collect(), m.indices.clone())
        .expect("a mesh with triangles")
}

/// Mean and largest distance from each of `points` to `surface`.
fn distances(points: &[Point3<f32>], surface: &TriMesh) -> (f64, f64) {
    let (mut sum, mut max) = (0.0f64, 0.0f64);
    for p in points {
        let q = Vector::new(p.x, p.y, p.z);
        let d = (surface.project_local_point(q, false).point - q).length() as f64;
        sum += d;
        max = max.max(d);
    }
    (sum / points.len().max(1) as f64, max)
}

/// The symmetric sampled distance between `a` and `b` (vertices of each to the other's surface):
/// the mean of the two means, and the larger maximum.
fn symmetric(a: &RenderMesh, b_points: &[Point3<f32>], b: &TriMesh, a_tri: &TriMesh) -> (f64, f64) {
    let (m1, x1) = distances(&a.positions, b);
    let (m2, x2) = distances(b_points, a_tri);
    ((m1 + m2) * 0.5, x1.max(x2))
}

/// Every node of `level` over `region` (a node of margin below and around), clustered, merged;
/// and each node with its triangle count.
fn level_mesh(
    t: &Terrain,
    mesher: &Mesher,
    region: &Region,
    level: u32,
) -> (RenderMesh, Vec<(LodNode, usize)>) {
    let mut ws = MeshWorkspace::new();
    let span = (NODE_CELLS << level) as i32;
    let (lo, hi) = (region.min(), region.max());
    let mut all = RenderMesh::default();
    let mut nodes = Vec::new();
    for y in lo.y.div_euclid(span) - 1..=(hi.y - 1).div_euclid(span) + 1 {
        for z in lo.z.div_euclid(span) - 1..=(hi.z - 1).div_euclid(span) + 1 {
            for x in lo.x.div_euclid(span) - 1..=(hi.x - 1).div_euclid(span) + 1 {
                let node = LodNode { level, x, y, z };
                let m = clustered(t, mesher, node, &|_| level, ClusterPart::Whole, &mut ws);
                nodes.push((node, m.indices.len()));
                let base = all.positions.len() as u32;
                all.positions.extend(&m.positions);
                all.indices.extend(m.indices.iter().map(|tri| tri.map(|i| i + base)));
            }
        }
    }
    (all, nodes)
}

/// Every storage chunk's clusters that `node` (all at `level`) reads, as a view holds them (the
/// chunks the surface misses sharing one entry a side).
fn chunk_tables(
    t: &Terrain,
    mesher: &Mesher,
    node: LodNode,
    level: u32,
    ws: &mut MeshWorkspace,
) -> ChunkClusterMap {
    let n = ClusterNode { region: node.region().expect("in range"), level };
    let mut map = ChunkClusterMap::new();
    let mut uniform: [Option<Arc<ChunkClusters>>; 2] = [None, None];
    cluster_chunks(&n, &|_| level).expect("aligned").into_iter().for_each(|c| {
        let table = mesher.chunk_clusters(t.store(), c, ws).expect("chunk clusters");
        let table = match table.uniform_side() {
            Some(side) => uniform[usize::from(side)].get_or_insert_with(|| Arc::new(table)).clone(),
            None => Arc::new(table),
        };
        map.insert(c, table);
    });
    map
}

/// `node` (every neighbor at its level) meshed from held chunk clusters: its triangles.
fn from_tables(mesher: &Mesher, node: LodNode, tables: &ChunkClusterMap) -> usize {
    let n = ClusterNode { region: node.region().expect("in range"), level: node.level };
    let (mut a, mut b) = (RenderMesh::default(), RenderMesh::default());
    let level = node.level;
    mesher.mesh_cluster_node_from(&tables.reader(None), n, &|_| level, &mut a, &mut b).expect("node meshes");
    a.indices.len() + b.indices.len()
}

/// The chunk clusters of the suite's level-`level` node made `rounds` times: the chunks with a
/// surface and the time per such chunk. A profiling target.
pub fn profile_chunk_clusters(level: u32, rounds: usize) -> (usize, std::time::Duration) {
    let size = [512, 128, 512];
    let t = Terrain::generate(&GenParams::new(1, size), TerrainConfig::default()).expect("world");
    let mesher = Mesher::new(t.materials());
    let node = node_at_ground(&t, size, level);
    let mut ws = MeshWorkspace::new();
    let tables = chunk_tables(&t, &mesher, node, level, &mut ws);
    let surface: Vec<[i32; 3]> =
        tables.iter().filter(|(_, c)| c.uniform_side().is_none()).map(|(k, _)| k).collect();
    let start = std::time::Instant::now();
    for _ in 0..rounds {
        for &c in &surface {
            std::hint::black_box(mesher.chunk_clusters(t.store(), c, &mut ws).expect("chunk clusters"));
        }
    }
    (surface.len(), start.elapsed() / (rounds * surface.len()).max(1) as u32)
}

/// The suite's clustered node at `level` for voxterra alone, made `rounds` times (from held chunk
/// clusters with `held`, else from the voxels): its triangles and the time per node. A profiling
/// target.
pub fn profile_node(level: u32, rounds: usize, held: bool) -> (usize, std::time::Duration) {
    let size = [512, 128, 512];
    let t = Terrain::generate(&GenParams::new(1, size), TerrainConfig::default()).expect("world");
    let mesher = Mesher::new(t.materials());
    let node = node_at_ground(&t, size, level);
    let mut ws = MeshWorkspace::new();
    let tables = if held { chunk_tables(&t, &mesher, node, level, &mut ws) } else { ChunkClusterMap::new() };
    let start = std::time::Instant::now();
    let tris = (0..rounds)
        .map(|_| {
            if held {
                from_tables(&mesher, node, &tables)
            } else {
                clustered(&t, &mesher, node, &|_| level, ClusterPart::Whole, &mut ws).indices.len()
            }
        })
        .sum::<usize>();
    (tris / rounds.max(1), start.elapsed() / rounds.max(1) as u32)
}

/// Runs the suite (`quick`: a smaller world, fewer repetitions, no whole 2048² view).
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let size = if quick { [256, 96, 256] } else { [512, 128, 512] };
    let t = Terrain::generate(&GenParams::new(1, size), TerrainConfig::default()).expect("world");
    let mesher = Mesher::new(t.materials());
    let mut report = Report {
        suite: "lod".into(),
        setup: format!(
            "default world {size:?}, seed 1; peers: {TRANSVOXEL} sampling the same voxels per node, {MESHOPT} on the full-resolution mesh"
        ),
        cases: Vec::new(),
        metrics: Vec::new(),
    };
    let mut ws = MeshWorkspace::new();

    // Producing one node at levels 1-4.
    for level in 1..=4u32 {
        let node = node_at_ground(&t, size, level);
        let ours = clustered(&t, &mesher, node, &|_| level, ClusterPart::Whole, &mut ws).indices.len();
        let theirs = transvoxel_node(&t, node, TransitionSide::none());
        assert!(ours > 0 && theirs > 0, "level {level}: a node with surface");
        report.cases.push(compare_prechecked(
            budget,
            &format!("node at level {level}, clustered from the voxels"),
            "node",
            1,
            TRANSVOXEL,
            "(cold: no chunk clusters held)",
            || clustered(&t, &mesher, node, &|_| level, ClusterPart::Whole, &mut ws).indices.len(),
            || transvoxel_node(&t, node, TransitionSide::none()),
        ));
        // As a view makes it: from the chunk clusters it holds (the same mesh, bit for bit).
        let mut tables = chunk_tables(&t, &mesher, node, level, &mut ws);
        assert_eq!(from_tables(&mesher, node, &tables), ours, "level {level}: held clusters, same mesh");
        report.cases.push(compare_prechecked(
            budget,
            &format!("node at level {level}, clustered from held chunk clusters"),
            "node",
            1,
            TRANSVOXEL,
            "≥ 3× transvoxel",
            || from_tables(&mesher, node, &tables),
            || transvoxel_node(&t, node, TransitionSide::none()),
        ));
        // An edit in the node (a sphere of radius 4 at its ground point): the view re-makes the
        // clusters of the chunks within reach of the edit, then the node; transvoxel re-extracts
        // the node.
        let touched: Vec<[i32; 3]> = {
            let g = ground_point(&t, size);
            let edit = Region::new(g.map(|v| v - 4), g.map(|v| v + 5)).expect("a box").expanded(2);
            let (lo, hi) = (edit.min().map(|v| v >> 5), edit.max().map(|v| (v - 1) >> 5));
            let mut out = Vec::new();
            for y in lo.y..=hi.y {
                for z in lo.z..=hi.z {
                    for x in lo.x..=hi.x {
                        out.push([x, y, z]);
                    }
                }
            }
            out
        };
        report.cases.push(compare_prechecked(
            budget,
            &format!(
                "edit (sphere r 4) in a level-{level} node -> node re-made ({} chunks' clusters + node)",
                touched.len()
            ),
            "node",
            1,
            TRANSVOXEL,
            "(report)",
            || {
                for &c in &touched {
                    let fresh = mesher.chunk_clusters(t.store(), c, &mut ws).expect("chunk clusters");
                    tables.insert(c, Arc::new(fresh));
                }
                from_tables(&mesher, node, &tables)
            },
            || transvoxel_node(&t, node, TransitionSide::none()),
        ));
        let mut mip_ws = MeshWorkspace::new();
        report.cases.push(compare_prechecked(
            budget,
            &format!("node at level {level}, mips"),
            "node",
            1,
            TRANSVOXEL,
            "(beside: same-level tiling only)",
            || t.lod_mesh(&mesher, node, &mut mip_ws).expect("node meshes").indices.len(),
            || transvoxel_node(&t, node, TransitionSide::none()),
        ));
        report.metrics.push(Metric {
            name: format!("triangles in the level-{level} node"),
            voxterra: ours as f64,
            peer: theirs as f64,
            peer_name: TRANSVOXEL.into(),
            goal: "(report)".into(),
        });
    }

    // A neighbour changes level: we re-make the node's border from the summaries the view keeps
    // (the node's and its neighbours'); transvoxel re-extracts the node with a transition face.
    {
        let node = node_at_ground(&t, size, 2);
        let r = node.region().expect("in range");
        let split_beside = move |p: VoxelPos| if p.x >= r.max().x { 1 } else { 2 };
        let mut summaries: hashbrown::HashMap<LodNode, _, foldhash::fast::FixedState> = Default::default();
        let around = r.expanded(NODE_CELLS << 2);
        let (lo, hi) = (around.min(), around.max());
        for y in (lo.y..hi.y).step_by(32) {
            for z in (lo.z..hi.z).step_by(32) {
                for x in (lo.x..hi.x).step_by(32) {
                    let p = Point3::new(x, y, z);
                    let n = LodNode::containing(split_beside(p), p);
                    summaries.entry(n).or_insert_with(|| {
                        let cn = ClusterNode { region: n.region().expect("in range"), level: n.level };
                        let (mut a, mut b) = (RenderMesh::default(), RenderMesh::default());
                        mesher
                            .mesh_cluster_node(t.store(), cn, &split_beside, &mut ws, &mut a, &mut b)
                            .expect("meshes")
                    });
                }
            }
        }
        let own = summaries.get(&node).expect("the node's summary").clone();
        let others = |k: (u32, [i32; 3])| {
            let cell = Point3::from(k.1).map(|v| v << k.0);
            summaries.get(&LodNode::containing(split_beside(cell), cell)).and_then(|s| s.vertex(k))
        };
        let stitch = || {
            let mut m = RenderMesh::default();
            mesher.stitch_border(&own, &split_beside, &others, &mut m);
            m
        };
        let fresh = clustered(&t, &mesher, node, &split_beside, ClusterPart::Border, &mut ws);
        assert!(!fresh.indices.is_empty() && stitch() == fresh, "stitching equals a fresh border");
        report.cases.push(compare_prechecked(
            budget,
            "neighbour changes level (level 2 node)",
            "node",
            1,
            TRANSVOXEL,
            "≥ 10× re-extracting the node",
            || stitch().indices.len(),
            || transvoxel_node(&t, node, TransitionSide::HighX.into()),
        ));
    }

    let world = t.extent().expect("a world").expanded(1);
    let mut full = RenderMesh::default();
    mesher.mesh(t.store(), &world, &mut ws, &mut full).expect("world meshes");

    let reference = lod_quality::Reference::new(&full);
    // What a person sees: the clipmap around a viewer over the world's centre, against the
    // full-resolution surface.
    {
        let eye = Point3::new(size[0] as f32 * 0.5, 100.0, size[2] as f32 * 0.5);
        let update = LodView::new(LodConfig::default())
            .expect("default config")
            .update(&t, &mesher, &[eye])
            .expect("update");
        let what = format!("view from ({}, 100, {})", eye.x, eye.z);
        report.metrics.extend(lod_quality::view_metrics(&what, &update.meshes, &reference));
        let zero = lod_quality::zero_area(&full);
        report.metrics.push(Metric {
            name: "full resolution: zero-area triangles".into(),
            voxterra: zero as f64,
            peer: zero as f64 * 100.0 / full.indices.len() as f64,
            peer_name: "%".into(),
            goal: "(report)".into(),
        });
    }

    // Geometric error at equal triangle count, over the whole world.
    {
        let full_tri = trimesh(&full);
        let mut below = full.indices.len();
        for level in 1..=4u32 {
            let (ours, nodes) = level_mesh(&t, &mesher, &world, level);
            let (ours_mean, ours_max) = symmetric(&ours, &full.positions, &full_tri, &trimesh(&ours));
            // Like with like: meshoptimizer on each node's full-resolution mesh, its border locked
            // (so nodes still meet), down to our node's triangle count.
            let start = Instant::now();
            let per_node = lod_quality::meshopt_per_node(&t, &mesher, &nodes, &world);
            let per_node_seconds = start.elapsed().as_secs_f64();
            let (pn_mean, _) = symmetric(&per_node, &full.positions, &full_tri, &trimesh(&per_node));
            let (ours_away, ours_strongly, _) = lod_quality::facing(&ours, &reference);
            let (pn_away, pn_strongly, _) = lod_quality::facing(&per_node, &reference);
            report.metrics.push(Metric {
                name: format!("level {level}: facing away (strongly), %, vs meshopt per node"),
                voxterra: ours_away,
                peer: pn_away,
                peer_name: "meshopt per node, border locked".into(),
                goal: format!("strongly: ours {ours_strongly:.3}%, meshopt's {pn_strongly:.3}%"),
            });
            report.metrics.push(Metric {
                name: format!("level {level}: mean symmetric distance, voxels, vs meshopt per node"),
                voxterra: ours_mean,
                peer: pn_mean,
                peer_name: "meshopt per node, border locked".into(),
                goal: format!(
                    "≤ meshopt's; it reached {} triangles for our {} in {per_node_seconds:.2} s",
                    per_node.indices.len(),
                    ours.indices.len()
                ),
            });
            let start = Instant::now();
            let simple = lod_quality::simplify(&full, ours.indices.len(), meshopt::SimplifyOptions::None);
            let meshopt_seconds = start.elapsed().as_secs_f64();
            let theirs = RenderMesh {
                positions: full.positions.clone(),
                indices: simple.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect(),
                ..RenderMesh::default()
            };
            // Only the vertices meshopt kept sample its surface.
            let mut used = vec![false; full.positions.len()];
            for &i in &simple {
                used[i as usize] = true;
            }
            let kept = RenderMesh {
                positions: full.positions.iter().zip(&used).filter(|(_, u)| **u).map(|(p, _)| *p).collect(),
                ..RenderMesh::default()
            };
            let theirs_tri = trimesh(&theirs);
            let (whole_away, whole_strongly, _) = lod_quality::facing(&theirs, &reference);
            report.metrics.push(Metric {
                name: format!("level {level}: facing away (strongly), %, vs meshopt whole world"),
                voxterra: ours_away,
                peer: whole_away,
                peer_name: MESHOPT.into(),
                goal: format!("meshopt's strongly: {whole_strongly:.3}%"),
            });
            let (m1, x1) = distances(&kept.positions, &full_tri);
            let (m2, x2) = distances(&full.positions, &theirs_tri);
            let (theirs_mean, theirs_max) = ((m1 + m2) * 0.5, x1.max(x2));
            let cell = (1u32 << level) as f64;
            report.metrics.push(Metric {
                name: format!("level {level}: triangles, share of the level below"),
                voxterra: ours.indices.len() as f64 / below as f64,
                peer: theirs.indices.len() as f64,
                peer_name: "meshopt's count".into(),
                goal: format!("≤ 1/3.5 (0.286); {} triangles", ours.indices.len()),
            });
            report.metrics.push(Metric {
                name: format!("level {level}: mean symmetric distance, voxels"),
                voxterra: ours_mean,
                peer: theirs_mean,
                peer_name: MESHOPT.into(),
                goal: format!("≤ meshopt's and ≤ half a cell ({})", cell / 2.0),
            });
            report.metrics.push(Metric {
                name: format!("level {level}: largest distance, voxels"),
                voxterra: ours_max,
                peer: theirs_max,
                peer_name: MESHOPT.into(),
                goal: format!("(report; meshopt took {meshopt_seconds:.2} s)"),
            });
            below = ours.indices.len();
        }
    }

    if !quick {
        whole_view(&mut report);
    }
    report
}

/// The viewer at the centre of a 2048×256×2048 world, everything in view; then one chunk over.
fn whole_view(report: &mut Report) {
    let size = [2048, 256, 2048];
    let t = Terrain::generate(&GenParams::new(1, size), TerrainConfig::default()).expect("world");
    let mesher = Mesher::new(t.materials());
    let keys = t.render_chunks();
    let mut full = 0usize;
    for batch in keys.chunks(1024) {
        full += t
            .render_meshes_of(&mesher, batch)
            .expect("chunks mesh")
            .iter()
            .map(|(_, m)| m.indices.len())
            .sum::<usize>();
    }
    let eye = Point3::new(1024.0, 200.0, 1024.0);
    let mut view = LodView::new(LodConfig::default()).expect("default config");
    let start = Instant::now();
    let update = view.update(&t, &mesher, &[eye]).expect("update");
    let seconds = start.elapsed().as_secs_f64();
    let triangles: usize = update.meshes.iter().map(|(_, m)| m.indices.len()).sum();
    let bytes: usize = update
        .meshes
        .iter()
        .map(|(_, m)| {
            m.positions.len() * 12 + m.normals.len() * 12 + m.materials.len() + m.indices.len() * 12
        })
        .sum();
    report.metrics.push(Metric {
        name: "whole view 2048x256x2048: triangles".into(),
        voxterra: triangles as f64,
        peer: full as f64,
        peer_name: "full resolution".into(),
        goal: format!(
            "≤ 1/20 ({:.4} of full); {} meshes",
            triangles as f64 / full as f64,
            update.meshes.len()
        ),
    });
    report.metrics.push(Metric {
        name: "whole view: seconds, mesh MiB".into(),
        voxterra: seconds,
        peer: bytes as f64 / (1024.0 * 1024.0),
        peer_name: "(MiB)".into(),
        goal: "(report, 2 threads)".into(),
    });
    report.metrics.push(Metric {
        name: "whole view: chunk clusters held, MiB".into(),
        voxterra: view.cluster_bytes() as f64 / (1024.0 * 1024.0),
        peer: 0.0,
        peer_name: "".into(),
        goal: "(report)".into(),
    });
    let start = Instant::now();
    let moved = view
        .update(&t, &mesher, &[eye + voxterra_core::nalgebra::Vector3::new(32.0, 0.0, 0.0)])
        .expect("update");
    report.metrics.push(Metric {
        name: "viewer crosses one chunk: meshes rebuilt, seconds".into(),
        voxterra: moved.meshes.len() as f64,
        peer: start.elapsed().as_secs_f64(),
        peer_name: "(seconds)".into(),
        goal: format!("(report); {} dropped", moved.dropped.len()),
    });
}
