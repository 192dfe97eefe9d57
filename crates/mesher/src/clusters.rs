//! Levels of detail by clustering, as the dual-contouring octree simplifies: at level `k` the
//! cells of full resolution are clustered into cubes of `2^k` (octree nodes of that size), each
//! cluster's vertex the mass point of its cells' vertices, and polygons come from the edges of the
//! `2^k` grid whose end voxels are one inside and one outside, joining the clusters around them.
//!
//! Render nodes of different levels meet without cracks: an edge is contoured at the finest level
//! of the cells around it (the octree's minimal edges), and each cell around it is replaced by the
//! cluster holding it at its own node's level. The surface is then the image of the closed
//! full-resolution surface under a map of its vertices, so every edge of it is matched by the same
//! edge the other way; a node whose neighbor changes level re-meshes only its border.

use crate::cell::{LANES, PlacedBatch};
use crate::extract::{MeshError, MeshWorkspace, Mesher};
use crate::output::{MeshOutput, RenderMesh, sealed};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Material, Region, VoxelPos, VoxelRead};

type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

/// The coarsest level clusters take: cubes of 32 cells, a storage chunk.
pub const MAX_CLUSTER_LEVEL: u32 = 5;

/// Which level each place is drawn at: the level of the render node holding voxel `p`. A node of
/// level `m` must be a cube aligned to `2^m` voxels (so a cluster never straddles two nodes).
pub trait LevelMap {
    /// The level of the node holding voxel `p`, at most [`MAX_CLUSTER_LEVEL`].
    fn level_at(&self, p: VoxelPos) -> u32;
}

impl<F: Fn(VoxelPos) -> u32> LevelMap for F {
    fn level_at(&self, p: VoxelPos) -> u32 {
        self(p)
    }
}

/// Which of a node's polygons to make: a node's mesh is its interior (polygons of its own clusters
/// only) and its border (polygons that reach a neighbor's clusters); only the border changes when
/// a neighbor changes level.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum ClusterPart {
    /// Every polygon the node draws.
    Whole,
    /// The polygons whose clusters are all the node's own.
    Interior,
    /// The polygons that reach a neighbor's cluster.
    Border,
}

/// A render node for [`Mesher::mesh_clustered`]: its voxels (a box aligned to `2^level`) and its
/// level.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct ClusterNode {
    /// The node's voxels.
    pub region: Region,
    /// Its level: clusters of `2^level` cells.
    pub level: u32,
}

/// One cluster's accumulated cells.
#[derive(Default, Clone)]
struct Cluster {
    sum: [f64; 3],
    normal: [f64; 3],
    /// The cells' tangent planes (each vertex's normal through it) as a quadric: `Σ n nᵀ` (upper
    /// triangle: xx, xy, xz, yy, yz, zz) and `Σ n (n · p)`.
    ata: [f64; 6],
    atb: [f64; 3],
    cells: u32,
    /// Cells per material id, as (id, count), few per cluster.
    materials: Vec<(u8, u32)>,
}

/// A cluster: its level and its coordinates at that level (cell >> level).
type ClusterKey = (u32, [i32; 3]);

/// A cluster's vertex: its cells' mass point, mean normal and most common material.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct ClusterVertex {
    /// Position, voxel units.
    pub position: Point3<f32>,
    /// Unit normal, into air.
    pub normal: Vector3<f32>,
    /// Material.
    pub material: Material,
}

/// What a node's neighbors need to re-make its border without reading voxels: the node's clusters
/// along its faces and the signs of its grid's points on its faces. Made by
/// [`Mesher::mesh_cluster_node`]; read by [`Mesher::stitch_border`].
#[derive(Clone, Debug)]
pub struct BorderSummary {
    node: ClusterNode,
    clusters: Map<ClusterKey, ClusterVertex>,
    /// One bit per point of the node's grid (`n + 1` a side, x fastest, then z, then y), set on
    /// the faces only.
    signs: Vec<u64>,
}

impl BorderSummary {
    /// The node summarised.
    pub fn node(&self) -> ClusterNode {
        self.node
    }

    /// The vertex of the node's cluster `key` (level, coordinates at that level), if it is one of
    /// the node's clusters along its faces with a surface.
    pub fn vertex(&self, key: (u32, [i32; 3])) -> Option<ClusterVertex> {
        self.clusters.get(&key).copied()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.clusters.capacity() * (std::mem::size_of::<(ClusterKey, ClusterVertex)>() + 1)
            + self.signs.capacity() * 8
    }
}

/// An output mesh and the index each cluster got in it.
struct Builder<'a> {
    mesh: &'a mut RenderMesh,
    index: Map<ClusterKey, u32>,
}

impl Mesher {
    /// The render mesh (`part` of it) of `node` (voxels aligned to `2^level`) at its level,
    /// seamless with its neighbors at the levels `levels` gives (any levels up to
    /// [`MAX_CLUSTER_LEVEL`]): vertex positions in voxel units like [`Mesher::mesh`]'s. Reads
    /// full-resolution voxels of the node and of the neighbors' clusters along its border
    /// through `src`.
    pub fn mesh_clustered<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        node: ClusterNode,
        levels: &dyn LevelMap,
        part: ClusterPart,
        ws: &mut MeshWorkspace,
        out: &mut RenderMesh,
    ) -> Result<(), MeshError> {
        out.clear();
        check_node(&node)?;
        let clusters = self.cluster_sums(src, &node, levels, part, ws)?;
        let mut lookup = |k: ClusterKey| clusters.get(&k).map(|c| finish(&k, c));
        let signs = self.sign_grid(src, &node)?;
        let inside = |_: VoxelPos, i: usize| bit(&signs, i);
        let mut one = [Builder { mesh: out, index: Map::default() }];
        contour(&node, levels, part, &inside, &mut lookup, &mut one);
        Ok(())
    }

    /// A node's interior and border meshes at once (one pass over its voxels), and the summary its
    /// neighbors stitch against when a level changes around it.
    pub fn mesh_cluster_node<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        node: ClusterNode,
        levels: &dyn LevelMap,
        ws: &mut MeshWorkspace,
        interior: &mut RenderMesh,
        border: &mut RenderMesh,
    ) -> Result<BorderSummary, MeshError> {
        interior.clear();
        border.clear();
        check_node(&node)?;
        let clusters = self.cluster_sums(src, &node, levels, ClusterPart::Whole, ws)?;
        let signs = self.sign_grid(src, &node)?;
        {
            let mut lookup = |k: ClusterKey| clusters.get(&k).map(|c| finish(&k, c));
            let inside = |_: VoxelPos, i: usize| bit(&signs, i);
            let mut both = [
                Builder { mesh: interior, index: Map::default() },
                Builder { mesh: border, index: Map::default() },
            ];
            contour(&node, levels, ClusterPart::Whole, &inside, &mut lookup, &mut both);
        }
        let (lo, hi) = (node.region.min(), node.region.max());
        let l = node.level;
        let on_face = |c: &[i32; 3]| (0..3).any(|a| c[a] == lo[a] >> l || c[a] == (hi[a] >> l) - 1);
        let own: Map<ClusterKey, ClusterVertex> = clusters
            .iter()
            .filter(|(k, _)| {
                k.0 == l && on_face(&k.1) && node.region.contains(Point3::from(k.1).map(|v| v << l))
            })
            .map(|(k, c)| (*k, finish(k, c)))
            .collect();
        let n = (node.region.size()[0] >> l) as usize;
        let mut summary =
            BorderSummary { node, clusters: own, signs: vec![0; ((n + 1).pow(3)).div_ceil(64)] };
        for qy in 0..=n {
            for qz in 0..=n {
                for qx in 0..=n {
                    let face = [qx, qy, qz].iter().any(|&q| q == 0 || q == n);
                    let i = qx + (n + 1) * (qz + (n + 1) * qy);
                    if face && bit(&signs, i) {
                        summary.signs[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
        Ok(summary)
    }

    /// Re-makes `own`'s node's border mesh for the levels `levels` gives now, from summaries alone:
    /// `own` for its signs and its clusters, `others` for the clusters of the nodes around it
    /// (their [`BorderSummary::vertex`]). Equal, bit for bit, to
    /// [`Mesher::mesh_clustered`]`(…, ClusterPart::Border, …)`, without reading a voxel.
    pub fn stitch_border(
        &self,
        own: &BorderSummary,
        levels: &dyn LevelMap,
        others: &dyn Fn((u32, [i32; 3])) -> Option<ClusterVertex>,
        out: &mut RenderMesh,
    ) {
        out.clear();
        let node = own.node;
        let l = node.level;
        let mut lookup = |k: ClusterKey| {
            let mine = k.0 == l && node.region.contains(Point3::from(k.1).map(|v| v << l));
            if mine { own.clusters.get(&k).copied() } else { others(k) }
        };
        let inside = |_: VoxelPos, i: usize| own.signs.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0);
        let mut one = [Builder { mesh: out, index: Map::default() }];
        contour(&node, levels, ClusterPart::Border, &inside, &mut lookup, &mut one);
    }

    /// The sign ([`Mesher::is_inside`]) of every point of `node`'s grid (`n + 1` a side, x
    /// fastest, then z, then y), a bit each. PERF: read a row of voxels at a time and subsampled;
    /// the contour's point reads, up to four a grid point, were two thirds of a level-1 node.
    fn sign_grid<R: VoxelRead + ?Sized>(&self, src: &R, node: &ClusterNode) -> Result<Vec<u64>, MeshError> {
        let (lo, hi) = (node.region.min(), node.region.max());
        let s = 1i32 << node.level;
        let w = ((hi.x - lo.x) / s) as usize + 1;
        let mut signs = vec![0u64; (w * w * w).div_ceil(64)];
        // The row from `lo.x` to `hi.x` inclusive (a node ends below i32::MAX: it is aligned).
        let len = (hi.x - lo.x) as u32 + 1;
        let mut row = vec![voxterra_core::Voxel::AIR; len as usize];
        for yi in 0..w {
            for zi in 0..w {
                let (y, z) = (lo.y + yi as i32 * s, lo.z + zi as i32 * s);
                let r =
                    Region::from_min_size(Point3::new(lo.x, y, z), [len, 1, 1]).map_err(MeshError::Read)?;
                src.read_box(&r, &mut row)?;
                let base = w * (zi + w * yi);
                for xi in 0..w {
                    if self.is_inside(row[xi * s as usize]) {
                        let i = base + xi;
                        signs[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
        Ok(signs)
    }

    /// Every full-resolution cell with a vertex that `part` of `node`'s polygons can reach,
    /// summed into clusters at its node's level.
    fn cluster_sums<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        node: &ClusterNode,
        levels: &dyn LevelMap,
        part: ClusterPart,
        ws: &mut MeshWorkspace,
    ) -> Result<Map<ClusterKey, Cluster>, MeshError> {
        let region = &node.region;
        let s = 1i32 << node.level;
        // How far beyond the node its polygons reach: the largest cluster around it.
        let mut margin = 0;
        if part != ClusterPart::Interior {
            margin = s;
            for p in shell(region, s) {
                margin = margin.max(1 << levels.level_at(p).min(MAX_CLUSTER_LEVEL));
            }
        }
        // The border's polygons use only the clusters along the node's faces: the cells deeper
        // than one cluster are not read.
        let core = (part == ClusterPart::Border).then(|| shrink(region, s + 1)).flatten();
        // The clusters the polygons use lie within `need`; a voxel more on each side makes the
        // pieces below own every edge of their cells, so each cell gets its vertex whichever node
        // asks (a cluster's vertex is the same in every node that draws it).
        let need = grow(region, margin)?;
        let work = grow(&need, 1)?;
        let mut cells: Vec<(VoxelPos, Point3<f32>, Vector3<f32>, Material)> = Vec::new();
        let mut mesh = CellMesh::default();
        let chunk = 32i64;
        let (wl, wh) = (work.min(), work.max());
        let first = wl.map(|v| (v as i64).div_euclid(chunk));
        let last = wh.map(|v| (v as i64 - 1).div_euclid(chunk));
        for cy in first.y..=last.y {
            for cz in first.z..=last.z {
                for cx in first.x..=last.x {
                    let piece = Region::new(
                        Point3::new(cx, cy, cz).map(|c| (c * chunk) as i32),
                        Point3::new(cx, cy, cz).map(|c| ((c + 1) * chunk).min(i32::MAX as i64) as i32),
                    )
                    .map_err(MeshError::Read)?;
                    let Some(piece) = piece.intersection(&work) else { continue };
                    if core.is_some_and(|c| c.contains_region(&piece)) {
                        continue;
                    }
                    self.mesh(src, &piece, ws, &mut mesh)?;
                    for (i, &cell) in mesh.cells.iter().enumerate() {
                        if need.contains(cell) {
                            let m = &mesh.mesh;
                            cells.push((cell, m.positions[i], m.normals[i], m.materials[i]));
                        }
                    }
                }
            }
        }
        cells.sort_unstable_by_key(|c| (c.0.y, c.0.z, c.0.x));
        cells.dedup_by_key(|c| c.0);
        let mut clusters: Map<ClusterKey, Cluster> = Map::default();
        for (cell, p, n, m) in &cells {
            let l = levels.level_at(*cell).min(MAX_CLUSTER_LEVEL);
            let c = clusters.entry((l, [cell.x >> l, cell.y >> l, cell.z >> l])).or_default();
            for a in 0..3 {
                c.sum[a] += p[a] as f64;
                c.normal[a] += n[a] as f64;
            }
            let (nn, pp) = (n.cast::<f64>(), p.coords.cast::<f64>());
            let d = nn.dot(&pp);
            let q = [nn.x * nn.x, nn.x * nn.y, nn.x * nn.z, nn.y * nn.y, nn.y * nn.z, nn.z * nn.z];
            for (a, v) in c.ata.iter_mut().zip(q) {
                *a += v;
            }
            for a in 0..3 {
                c.atb[a] += nn[a] * d;
            }
            c.cells += 1;
            match c.materials.iter_mut().find(|e| e.0 == m.id()) {
                Some(e) => e.1 += 1,
                None => c.materials.push((m.id(), 1)),
            }
        }
        Ok(clusters)
    }

    /// Whether `v` is inside the surface this mesher extracts (matter, occupancy over one half): the
    /// sign the mesher gives a cell corner.
    pub fn is_inside(&self, v: voxterra_core::Voxel) -> bool {
        self.matter >> v.material().id() & 1 != 0 && v.occupancy_byte() >= 128
    }
}

/// Refuses levels past the coarsest and nodes not aligned to their level.
fn check_node(node: &ClusterNode) -> Result<(), MeshError> {
    let (region, level) = (&node.region, node.level);
    if level > MAX_CLUSTER_LEVEL {
        return Err(MeshError::Level { level, max: MAX_CLUSTER_LEVEL });
    }
    let s = 1i32 << level;
    let (lo, hi) = (region.min(), region.max());
    let cube = region.size().iter().all(|&v| v == region.size()[0]);
    if region.is_empty() || !cube || [lo.x, lo.y, lo.z, hi.x, hi.y, hi.z].iter().any(|v| v % s != 0) {
        return Err(MeshError::Unaligned { region: *region, level });
    }
    Ok(())
}

/// The polygons of `node`'s edges (those of `part`): each edge of its level's grid with a cell in
/// the node, contoured when this level is the finest around it and this node the first of that
/// level in a fixed order, its cells replaced by their clusters. With two outputs, polygons of the
/// node's own clusters go to the first and the others to the second.
fn contour<I, L>(
    node: &ClusterNode,
    levels: &dyn LevelMap,
    part: ClusterPart,
    inside: &I,
    lookup: &mut L,
    outs: &mut [Builder<'_>],
) where
    I: Fn(VoxelPos, usize) -> bool,
    L: FnMut(ClusterKey) -> Option<ClusterVertex>,
{
    let (region, level) = (&node.region, node.level);
    let s = 1i32 << level;
    let (lo, hi) = (region.min(), region.max());
    let key_of = |q: VoxelPos| -> (u32, ClusterKey) {
        let l = levels.level_at(q).min(MAX_CLUSTER_LEVEL);
        (l, (l, [q.x >> l, q.y >> l, q.z >> l]))
    };
    // Grid points also go by their index in the node's grid (`n + 1` a side, x fastest, then z,
    // then y): the summaries' signs are read by it.
    let w = ((hi.x - lo.x) / s) as usize + 1;
    let stride = [1, w * w, w];
    let mut y = lo.y;
    while y <= hi.y {
        let mut z = lo.z;
        while z <= hi.z {
            let row = w * (((z - lo.z) / s) as usize + w * ((y - lo.y) / s) as usize);
            let mut x = lo.x;
            while x <= hi.x {
                let p = Point3::new(x, y, z);
                let at = row + ((x - lo.x) / s) as usize;
                let mut here = None;
                for axis in 0..3 {
                    // Along the edge's own axis its cells start at `p`: inside the node only.
                    if p[axis] >= hi[axis] {
                        continue;
                    }
                    let (b, c) = ((axis + 1) % 3, (axis + 2) % 3);
                    // The cells around the edge start `s` below `p` or at it on the other two
                    // axes: all the node's when `p` is strictly inside its faces there.
                    let own = lo[b] < p[b] && p[b] < hi[b] && lo[c] < p[c] && p[c] < hi[c];
                    match part {
                        ClusterPart::Interior if !own => continue,
                        ClusterPart::Border if own => continue,
                        _ => {}
                    }
                    let mut far = p;
                    far[axis] += s;
                    let here = *here.get_or_insert_with(|| inside(p, at));
                    if here == inside(far, at + stride[axis]) {
                        continue;
                    }
                    // The cells around the edge, counter-clockwise seen from its positive
                    // direction, as the mesher orders them.
                    let offsets = [(1, 1), (0, 1), (0, 0), (1, 0)];
                    let around = offsets.map(|(db, dc)| {
                        let mut q = p;
                        q[b] -= s * db;
                        q[c] -= s * dc;
                        q
                    });
                    let keys = around.map(key_of);
                    if keys.iter().any(|k| k.0 < level) {
                        continue; // a finer node contours it at its level
                    }
                    let emitter = [2usize, 3, 1, 0].into_iter().find(|&i| keys[i].0 == level);
                    if emitter.is_none_or(|i| !region.contains(around[i])) {
                        continue;
                    }
                    let flip = if here { 0 } else { 3 };
                    let quad: [ClusterKey; 4] = [0, 1, 2, 3].map(|i| keys[i ^ flip].1);
                    let to = if outs.len() > 1 && !own { 1 } else { 0 };
                    emit(&mut outs[to], lookup, quad);
                }
                // Inside the node's y and z faces only its x faces can have a border edge.
                let inner = lo.y < y && y < hi.y && lo.z < z && z < hi.z;
                x += if part == ClusterPart::Border && inner && x < hi.x { hi.x - x } else { s };
            }
            z += s;
        }
        y += s;
    }
}

/// Bit `i` of a sign grid.
#[inline]
fn bit(signs: &[u64], i: usize) -> bool {
    signs.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0)
}

/// One voxel per `step`-cube on the layer just outside `region`, where its neighbors start.
fn shell(region: &Region, step: i32) -> Vec<VoxelPos> {
    let (lo, hi) = (region.min(), region.max());
    let axis = |a: usize| {
        let (l, h, st) = (lo[a] as i64 - step as i64, hi[a] as i64, step as i64);
        (0..).map(move |i| l + i * st).take_while(move |&v| v <= h)
    };
    let mut out = Vec::new();
    for y in axis(1) {
        for z in axis(2) {
            for x in axis(0) {
                let p = Point3::new(x, y, z);
                let outside = (0..3).any(|a| p[a] < lo[a] as i64 || p[a] >= hi[a] as i64);
                if outside && (0..3).all(|a| p[a] >= i32::MIN as i64 && p[a] <= i32::MAX as i64) {
                    out.push(p.map(|v| v as i32));
                }
            }
        }
    }
    out
}

/// `region` shrunk by `by` voxels on every side, if anything is left.
fn shrink(region: &Region, by: i32) -> Option<Region> {
    let (lo, hi) = (region.min(), region.max());
    let lo = lo.map(|v| v.saturating_add(by));
    let hi = hi.map(|v| v.saturating_sub(by));
    (0..3).all(|a| lo[a] < hi[a]).then(|| Region::new(lo, hi).ok()).flatten()
}

/// `region` grown by `by` voxels on every side.
fn grow(region: &Region, by: i32) -> Result<Region, MeshError> {
    let g = |v: i32, d: i64| i32::try_from(v as i64 + d).map_err(|_| MeshError::OutOfRange(*region));
    let (lo, hi) = (region.min(), region.max());
    let lo = Point3::new(g(lo.x, -(by as i64))?, g(lo.y, -(by as i64))?, g(lo.z, -(by as i64))?);
    let hi = Point3::new(g(hi.x, by as i64)?, g(hi.y, by as i64)?, g(hi.z, by as i64)?);
    Region::new(lo, hi).map_err(MeshError::Read)
}

/// A cluster's vertex from its sums: the mass point, the mean normal, the most common material
/// (ties to the lower id).
fn finish(key: &ClusterKey, c: &Cluster) -> ClusterVertex {
    let n = c.cells as f64;
    let mass = voxterra_core::nalgebra::Vector3::new(c.sum[0] / n, c.sum[1] / n, c.sum[2] / n);
    // The point nearest the cells' tangent planes, pulled toward the mass point (Tikhonov), kept
    // in the cluster's cube: it sits on the surface where the mass point of a curved patch sinks
    // under it.
    let lambda = 0.05 * n;
    let a = c.ata;
    let m = voxterra_core::nalgebra::Matrix3::new(
        a[0] + lambda,
        a[1],
        a[2],
        a[1],
        a[3] + lambda,
        a[4],
        a[2],
        a[4],
        a[5] + lambda,
    );
    let rhs = voxterra_core::nalgebra::Vector3::new(c.atb[0], c.atb[1], c.atb[2]) + mass * lambda;
    // A lone cell keeps its own vertex, exactly (level 0 is the mesher's mesh).
    let placed = if c.cells == 1 { mass } else { m.cholesky().map_or(mass, |ch| ch.solve(&rhs)) };
    let (l, cc) = (key.0, key.1);
    let side = (1i64 << l) as f64;
    // Never farther than a quarter cluster from the mass point: where the planes disagree (two
    // sheets through one cluster) their solution can run to the cube's corner.
    let reach = 0.25 * side;
    let shift = placed - mass;
    let placed = if shift.norm() > reach { mass + shift * (reach / shift.norm()) } else { placed };
    let p = voxterra_core::nalgebra::Vector3::from_fn(|i, _| {
        let lo = (cc[i] as i64 as f64) * side + 0.5;
        let v = placed[i];
        if v.is_finite() { v.clamp(lo, lo + side) } else { mass[i] }
    });
    let position = Point3::new(p.x as f32, p.y as f32, p.z as f32);
    let normal = Vector3::new(c.normal[0] as f32, c.normal[1] as f32, c.normal[2] as f32);
    let normal = normal.try_normalize(1e-12).unwrap_or(Vector3::y());
    let material = c.materials.iter().max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))).map_or(0, |e| e.0);
    ClusterVertex { position, normal, material: Material::from_low_bits(material) }
}

/// The index of cluster `key` in `out`, added on first use.
fn vertex<L: FnMut(ClusterKey) -> Option<ClusterVertex>>(
    out: &mut Builder<'_>,
    lookup: &mut L,
    key: ClusterKey,
) -> Option<u32> {
    if let Some(&i) = out.index.get(&key) {
        return Some(i);
    }
    let v = lookup(key)?;
    let index = out.mesh.positions.len() as u32;
    out.mesh.positions.push(v.position);
    out.mesh.normals.push(v.normal);
    out.mesh.materials.push(v.material);
    out.index.insert(key, index);
    Some(index)
}

/// The polygon of the four clusters around an edge: a quad split along its shorter diagonal (as
/// the mesher splits), a triangle when two neighbors coincide, nothing when fewer than three
/// differ.
fn emit<L: FnMut(ClusterKey) -> Option<ClusterVertex>>(
    out: &mut Builder<'_>,
    lookup: &mut L,
    quad: [ClusterKey; 4],
) {
    // The ring of distinct neighbors, in order (a fixed array: this runs once per crossing edge).
    let mut ring = [quad[0]; 4];
    let mut len = 0;
    for k in quad {
        if len == 0 || ring[len - 1] != k {
            ring[len] = k;
            len += 1;
        }
    }
    while len > 1 && ring[0] == ring[len - 1] {
        len -= 1;
    }
    if len < 3 {
        return;
    }
    let mut v = [0u32; 4];
    for i in 0..len {
        let Some(index) = vertex(out, lookup, ring[i]) else {
            debug_assert!(false, "a cluster around a crossing edge has no cell with a vertex");
            return;
        };
        v[i] = index;
    }
    let m = &mut *out.mesh;
    if len == 3 {
        m.indices.push([v[0], v[1], v[2]]);
        return;
    }
    let p = v.map(|i| m.positions[i as usize]);
    if (p[2] - p[0]).norm_squared() > (p[3] - p[1]).norm_squared() {
        m.indices.push([v[0], v[1], v[3]]);
        m.indices.push([v[1], v[2], v[3]]);
    } else {
        m.indices.push([v[0], v[1], v[2]]);
        m.indices.push([v[0], v[2], v[3]]);
    }
}

/// A render mesh's vertices (no triangles: clusters need only the vertices) with each vertex's
/// cell (its low corner voxel), as the mesher made them.
#[derive(Default)]
struct CellMesh {
    mesh: RenderMesh,
    cells: Vec<VoxelPos>,
}

impl sealed::Sealed for CellMesh {}

impl MeshOutput for CellMesh {
    const NORMALS: bool = true;
    const TRIANGLES: bool = false;
    const MAX_VERTICES: usize = RenderMesh::MAX_VERTICES;
    const MAX_SIDE: u32 = RenderMesh::MAX_SIDE;
    fn clear(&mut self) {
        self.mesh.clear();
        self.cells.clear();
    }
    fn vertex_count(&self) -> usize {
        self.mesh.vertex_count()
    }
    fn triangle_count(&self) -> usize {
        self.mesh.triangle_count()
    }
    fn reserve(&mut self, vertices: usize, triangles: usize) {
        self.mesh.reserve(vertices, triangles);
        self.cells.reserve(vertices);
    }
    fn start(&mut self, origin: VoxelPos) {
        self.mesh.start(origin);
    }
    fn push_vertices(
        &mut self,
        origin: VoxelPos,
        cells: &[[i32; LANES]; 3],
        placed: &PlacedBatch,
        len: usize,
    ) {
        self.mesh.push_vertices(origin, cells, placed, len);
        self.cells
            .extend((0..len).map(|j| {
                Point3::new(origin.x + cells[0][j], origin.y + cells[1][j], origin.z + cells[2][j])
            }));
    }
    fn position(&self, vertex: u32) -> Point3<f32> {
        self.mesh.position(vertex)
    }
    fn push_triangle(&mut self, vertices: [u32; 3]) {
        self.mesh.push_triangle(vertices);
    }
}
