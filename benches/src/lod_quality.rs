//! What a person sees of the levels of detail: triangles facing away from the full-resolution
//! surface (folded facets), zero-area triangles and edges shared by more than two triangles, per
//! level of a clipmap view.
//!
//! Facing: each view triangle's normal against the area-weighted normal of the 8 full-resolution
//! triangles whose centroids lie nearest its centroid. Zero area: under 1e-9 voxel².

use crate::harness::Metric;
use voxterra::lod::LodMeshKey;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_mesher::RenderMesh;

type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

/// Side of the grid cells that bucket the full-resolution centroids, voxels.
const CELL: f32 = 2.0;
/// Full-resolution triangles a view triangle's reference normal is taken from.
const NEAREST: usize = 8;
/// Below this area (voxel²) a triangle has none.
const ZERO_AREA: f32 = 1e-9;

/// Centroids with their triangles' area vectors.
type Bucket = Vec<(Point3<f32>, Vector3<f32>)>;

/// The full-resolution surface as centroids in a grid, each with its triangle's area vector.
pub struct Reference {
    cells: Map<[i32; 3], Bucket>,
}

impl Reference {
    /// The reference surface of `full`, a full-resolution mesh.
    pub fn new(full: &RenderMesh) -> Self {
        let mut cells: Map<[i32; 3], Bucket> = Map::default();
        for t in &full.indices {
            let [a, b, c] = t.map(|i| full.positions[i as usize]);
            let centroid = Point3::from((a.coords + b.coords + c.coords) / 3.0);
            cells.entry(cell_of(&centroid)).or_default().push((centroid, (b - a).cross(&(c - a))));
        }
        Reference { cells }
    }

    /// The summed area vectors of the `NEAREST` triangles whose centroids are nearest `p` (ties
    /// to the first met in a fixed order).
    fn normal_near(&self, p: &Point3<f32>) -> Vector3<f32> {
        let home = cell_of(p);
        let mut found: Vec<(f32, Vector3<f32>)> = Vec::new();
        for r in 0..64i32 {
            // The shell of cells at Chebyshev distance r.
            for dy in -r..=r {
                for dz in -r..=r {
                    for dx in -r..=r {
                        if dx.abs().max(dy.abs()).max(dz.abs()) != r {
                            continue;
                        }
                        let Some(list) = self.cells.get(&[home[0] + dx, home[1] + dy, home[2] + dz]) else {
                            continue;
                        };
                        found.extend(list.iter().map(|(c, n)| ((c - p).norm_squared(), *n)));
                    }
                }
            }
            if found.len() >= NEAREST {
                found.sort_by(|a, b| a.0.total_cmp(&b.0));
                // Every centroid within r cells of p's cell has been seen.
                let covered = r as f32 * CELL;
                if found[NEAREST - 1].0.sqrt() <= covered {
                    break;
                }
            }
        }
        found.sort_by(|a, b| a.0.total_cmp(&b.0));
        found.iter().take(NEAREST).fold(Vector3::zeros(), |s, (_, n)| s + n)
    }
}

fn cell_of(p: &Point3<f32>) -> [i32; 3] {
    [p.x, p.y, p.z].map(|v| (v / CELL).floor() as i32)
}

/// Adds `m`'s triangles to `c`: area, facing against `reference`, zero area.
fn count_into(m: &RenderMesh, reference: &Reference, c: &mut Counts) {
    for t in &m.indices {
        let [a, b, d] = t.map(|i| m.positions[i as usize]);
        c.triangles += 1;
        let n = (b - a).cross(&(d - a));
        let area = n.norm() * 0.5;
        c.area += area as f64;
        if !has_area(area) {
            c.zero += 1;
            continue;
        }
        let centroid = Point3::from((a.coords + b.coords + d.coords) / 3.0);
        let Some(r) = reference.normal_near(&centroid).try_normalize(1e-12) else { continue };
        let dot = n.normalize().dot(&r);
        if dot < 0.0 {
            c.away += 1;
            c.away_area += area as f64;
        }
        if dot < -0.5 {
            c.strongly += 1;
        }
        if dot < 0.5 {
            c.off60 += 1;
        }
    }
}

/// Triangles of `m` facing away from `reference` (dot < 0) and strongly (dot < −0.5), % of its
/// triangles; and its zero-area triangles.
pub fn facing(m: &RenderMesh, reference: &Reference) -> (f64, f64, usize) {
    let mut c = Counts::default();
    count_into(m, reference, &mut c);
    (c.pct(c.away), c.pct(c.strongly), c.zero)
}

/// One level's counts.
#[derive(Default, Clone, Copy)]
struct Counts {
    triangles: usize,
    area: f64,
    away: usize,
    away_area: f64,
    strongly: usize,
    off60: usize,
    zero: usize,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.triangles += o.triangles;
        self.area += o.area;
        self.away += o.away;
        self.away_area += o.away_area;
        self.strongly += o.strongly;
        self.off60 += o.off60;
        self.zero += o.zero;
    }

    fn pct(&self, n: usize) -> f64 {
        n as f64 * 100.0 / self.triangles.max(1) as f64
    }
}

/// Facing, zero-area and non-manifold figures of a view's meshes against `reference`, as
/// metrics named after `what`: per level, then over every level.
pub fn view_metrics(what: &str, meshes: &[(LodMeshKey, RenderMesh)], reference: &Reference) -> Vec<Metric> {
    let top = meshes.iter().map(|(k, _)| k.node.level).max().unwrap_or(0) as usize;
    let mut per_level = vec![Counts::default(); top + 1];
    // Edges by their end points' bits (the view's meshes share no vertex buffer).
    let mut edges: Map<([u32; 3], [u32; 3]), u32> = Map::default();
    let bits = |p: &Point3<f32>| [p.x, p.y, p.z].map(f32::to_bits);
    for (key, m) in meshes {
        count_into(m, reference, &mut per_level[key.node.level as usize]);
        for t in &m.indices {
            let [a, b, d] = t.map(|i| m.positions[i as usize]);
            for (u, v) in [(a, b), (b, d), (d, a)] {
                let (u, v) = (bits(&u), bits(&v));
                *edges.entry(if u < v { (u, v) } else { (v, u) }).or_default() += 1;
            }
        }
    }
    let shared = edges.values().filter(|&&n| n > 2).count();
    let mut all = Counts::default();
    let mut coarse = Counts::default();
    for (level, c) in per_level.iter().enumerate() {
        all.add(c);
        if level > 0 {
            coarse.add(c);
        }
    }
    let row = |name: String, voxterra: f64, peer: f64, peer_name: &str, goal: &str| Metric {
        name: format!("{what}{name}"),
        voxterra,
        peer,
        peer_name: peer_name.into(),
        goal: goal.into(),
    };
    let mut out = Vec::new();
    let rows = per_level.iter().enumerate().map(|(l, c)| (format!("level {l}"), *c, l > 0));
    for (name, c, coarse_level) in rows.chain([("all levels".to_owned(), all, false)]) {
        let area_pct = c.away_area * 100.0 / c.area.max(1e-30);
        let triangles = c.triangles;
        out.extend([
            row(
                format!(", {name}: facing away (dot < 0), % of {triangles} triangles"),
                c.pct(c.away),
                area_pct,
                "% of the area",
                "≤ 0.05%",
            ),
            row(
                format!(", {name}: strongly away (dot < −0.5), %"),
                c.pct(c.strongly),
                c.strongly as f64,
                "triangles",
                "0",
            ),
            row(
                format!(", {name}: more than 60° off, %"),
                c.pct(c.off60),
                c.off60 as f64,
                "triangles",
                "≤ 1%",
            ),
            row(
                format!(", {name}: zero-area triangles"),
                c.zero as f64,
                c.pct(c.zero),
                "%",
                if coarse_level { "0" } else { "(report)" },
            ),
        ]);
    }
    out.push(row(
        ", levels 1 and up: zero-area triangles".into(),
        coarse.zero as f64,
        coarse.pct(coarse.zero),
        "%",
        "0",
    ));
    out.push(row(
        ": edges shared by more than two triangles".into(),
        shared as f64,
        edges.len() as f64,
        "edges",
        "(report)",
    ));
    out
}

/// Whether a triangle of `area` (voxel²) has any.
fn has_area(area: f32) -> bool {
    area >= ZERO_AREA
}

/// `mesh`'s zero-area triangles: full resolution's are the baseline beside the coarse levels'.
pub fn zero_area(mesh: &RenderMesh) -> usize {
    mesh.indices
        .iter()
        .filter(|t| {
            let [a, b, c] = t.map(|i| mesh.positions[i as usize]);
            !has_area((b - a).cross(&(c - a)).norm() * 0.5)
        })
        .count()
}

/// meshoptimizer's simplifier on `mesh`, toward `target` triangles: the indices it keeps.
pub fn simplify(mesh: &RenderMesh, target: usize, options: meshopt::SimplifyOptions) -> Vec<u32> {
    let flat: Vec<u32> = mesh.indices.iter().flatten().copied().collect();
    let bytes: Vec<u8> =
        mesh.positions.iter().flat_map(|p| [p.x, p.y, p.z]).flat_map(f32::to_le_bytes).collect();
    let adapter = meshopt::VertexDataAdapter::new(&bytes, 12, 0).expect("positions");
    meshopt::simplify(&flat, &adapter, target * 3, 1.0, options, None)
}

/// meshoptimizer's simplifier on each node's full-resolution mesh with the node's border locked
/// (so that nodes still meet without cracks), each down to the triangle count given beside it;
/// merged, within `world`. The simplified vertices are the full-resolution ones it kept.
pub fn meshopt_per_node(
    t: &voxterra::Terrain,
    mesher: &voxterra_mesher::Mesher,
    nodes: &[(voxterra::lod::LodNode, usize)],
    world: &voxterra_core::Region,
) -> RenderMesh {
    let mut ws = voxterra_mesher::MeshWorkspace::new();
    let mut all = RenderMesh::default();
    for (node, target) in nodes {
        let mut full = RenderMesh::default();
        // The node's part of the world (the full-resolution mesh's region).
        let Some(region) = node.region().expect("a node in range").intersection(world) else { continue };
        mesher.mesh(t.store(), &region, &mut ws, &mut full).expect("the node meshes");
        if full.indices.is_empty() {
            continue;
        }
        let kept = simplify(&full, *target, meshopt::SimplifyOptions::LockBorder);
        let mut remap = vec![u32::MAX; full.positions.len()];
        for &i in &kept {
            if remap[i as usize] == u32::MAX {
                remap[i as usize] = all.positions.len() as u32;
                all.positions.push(full.positions[i as usize]);
            }
        }
        all.indices.extend(kept.chunks_exact(3).map(|c| [c[0], c[1], c[2]].map(|i| remap[i as usize])));
    }
    all
}
