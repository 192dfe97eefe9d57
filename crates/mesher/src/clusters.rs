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
use crate::config::{MeshError, Mesher};
use crate::output::{MeshOutput, RenderMesh, sealed};
use crate::workspace::MeshWorkspace;
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

/// Voxels along a storage chunk's side: the coarsest cluster.
const CHUNK: i32 = 1 << MAX_CLUSTER_LEVEL;

/// Words of a chunk's sign bits: one per voxel with even coordinates, `(CHUNK / 2)³`.
const SIGN_WORDS: usize = ((CHUNK / 2) * (CHUNK / 2) * (CHUNK / 2)) as usize / 64;

/// A full-resolution cell with a vertex: its low corner voxel, the vertex's position, normal and
/// material.
type CellVertex = (VoxelPos, Point3<f32>, Vector3<f32>, Material);

/// The signs of a chunk's even voxels.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Signs {
    /// All inside (`true`) or all outside.
    Uniform(bool),
    /// A bit per even voxel (x fastest, then z, then y).
    Mixed(Box<[u64; SIGN_WORDS]>),
}

/// What a clustered node needs from one storage chunk (`2^MAX_CLUSTER_LEVEL` voxels a side): its
/// clusters' vertices at every level from 1 to [`MAX_CLUSTER_LEVEL`] and the signs of its voxels
/// with even coordinates (every level-1-or-coarser node grid point). Made by
/// [`Mesher::chunk_clusters`]; a node is then meshed from them without reading voxels
/// ([`Mesher::mesh_cluster_node_from`]). About 9 KB, every level, for a chunk the surface
/// crosses; a chunk with no surface holds no heap memory.
#[derive(Clone, PartialEq, Debug)]
pub struct ChunkClusters {
    /// The finest level held ([`ChunkClusters::keep_from`]).
    from: u32,
    signs: Signs,
    /// Level `l` at `l - 1`.
    levels: [LevelClusters; MAX_CLUSTER_LEVEL as usize],
}

/// A chunk's clusters of one level: a bit per cube of the chunk's `2^(5 - l)`-sided grid (x
/// fastest, then z, then y) with a vertex, and the vertices in that order. PERF: the vertex of a
/// cube is found by counting bits (a binary search over the vertices was a tenth of a node).
#[derive(Clone, PartialEq, Debug, Default)]
struct LevelClusters {
    bits: Box<[u64]>,
    /// Vertices before each word of `bits`.
    before: Box<[u16]>,
    vertices: Box<[PackedVertex]>,
}

/// A cluster vertex in 12 bytes (PERF: a view holds thousands of chunks' clusters; 28 bytes a
/// vertex was most of them): its position within the cluster's cube in 16-bit steps, its normal
/// octahedron-encoded, its material. Every cluster vertex of level 1 and coarser is made exactly
/// what its packed form gives back ([`finish`]), so held and fresh vertices are equal.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct PackedVertex {
    position: [u16; 3],
    normal: [i16; 2],
    material: u8,
}

impl PackedVertex {
    /// The cube a level-`l` cluster's vertex is kept in: `(low corner, side)`, voxel units.
    fn cube(key: &ClusterKey) -> ([f64; 3], f64) {
        let side = (1i64 << key.0) as f64;
        (key.1.map(|c| c as f64 * side + 0.5), side)
    }

    fn pack(key: &ClusterKey, v: &ClusterVertex) -> Self {
        let (lo, side) = Self::cube(key);
        let position = [0, 1, 2].map(|a| {
            let f = ((v.position[a] as f64 - lo[a]) / side).clamp(0.0, 1.0);
            (f * 65535.0).round() as u16
        });
        // Octahedral: onto |x| + |y| + |z| = 1, the lower half folded over the upper.
        let n = v.normal;
        let l1 = n.x.abs() + n.y.abs() + n.z.abs();
        let (mut x, mut y) = if l1 > 0.0 { (n.x / l1, n.y / l1) } else { (0.0, 0.0) };
        if n.z < 0.0 {
            let (fx, fy) = ((1.0 - y.abs()) * x.signum(), (1.0 - x.abs()) * y.signum());
            (x, y) = (fx, fy);
        }
        let q = |v: f32| (v.clamp(-1.0, 1.0) * 32767.0).round() as i16;
        PackedVertex { position, normal: [q(x), q(y)], material: v.material.id() }
    }

    fn unpack(&self, key: &ClusterKey) -> ClusterVertex {
        let (lo, side) = Self::cube(key);
        let step = side * (1.0 / 65535.0);
        let p = [0, 1, 2].map(|a| (lo[a] + self.position[a] as f64 * step) as f32);
        let (x, y) = (self.normal[0] as f32 * (1.0 / 32767.0), self.normal[1] as f32 * (1.0 / 32767.0));
        let z = 1.0 - x.abs() - y.abs();
        let (x, y) =
            if z < 0.0 { ((1.0 - y.abs()) * x.signum(), (1.0 - x.abs()) * y.signum()) } else { (x, y) };
        // Never zero: |x| + |y| + |z| ≥ 1 on the octahedron.
        let normal = Vector3::new(x, y, z) * (x * x + y * y + z * z).sqrt().recip();
        ClusterVertex {
            position: Point3::new(p[0], p[1], p[2]),
            normal,
            material: Material::from_low_bits(self.material),
        }
    }
}

impl LevelClusters {
    /// From `(index, vertex)` pairs sorted by index, in a grid of `cubes` cubes.
    fn new(sorted: &[(u16, PackedVertex)], cubes: usize) -> Self {
        if sorted.is_empty() {
            return LevelClusters::default();
        }
        let mut bits = vec![0u64; cubes.div_ceil(64)];
        for &(i, _) in sorted {
            bits[i as usize / 64] |= 1 << (i % 64);
        }
        let mut before = Vec::with_capacity(bits.len());
        let mut n = 0u16;
        for w in &bits {
            before.push(n);
            n += w.count_ones() as u16;
        }
        LevelClusters {
            bits: bits.into(),
            before: before.into(),
            vertices: sorted.iter().map(|e| e.1).collect(),
        }
    }

    fn get(&self, i: usize) -> Option<PackedVertex> {
        let w = *self.bits.get(i / 64)?;
        if w >> (i % 64) & 1 == 0 {
            return None;
        }
        let rank = self.before[i / 64] as usize + (w & ((1u64 << (i % 64)) - 1)).count_ones() as usize;
        self.vertices.get(rank).copied()
    }

    /// The cubes with a vertex, in index order.
    fn iter(&self) -> impl Iterator<Item = (usize, PackedVertex)> + '_ {
        let indices = self.bits.iter().enumerate().flat_map(|(k, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                (w != 0).then(|| {
                    let j = w.trailing_zeros() as usize;
                    w &= w - 1;
                    64 * k + j
                })
            })
        });
        indices.zip(self.vertices.iter().copied())
    }

    fn heap_bytes(&self) -> usize {
        self.bits.len() * 8
            + self.before.len() * 2
            + self.vertices.len() * std::mem::size_of::<PackedVertex>()
    }
}

impl ChunkClusters {
    pub(crate) fn uniform(inside: bool) -> Self {
        ChunkClusters { from: 1, signs: Signs::Uniform(inside), levels: Default::default() }
    }

    /// The clusters of a chunk whose voxels, and those a voxel around it, are all outside the
    /// surface (air, or beyond a store's bounds): no cluster, every sign outside. What
    /// [`Mesher::chunk_clusters`] gives such a chunk, without reading it.
    pub fn outside() -> Self {
        Self::uniform(false)
    }

    /// `Some(inside)` when the surface misses the chunk: no cluster, every voxel on one side
    /// (`true`: inside). Such chunks of one side are equal, so a cache can share one.
    pub fn uniform_side(&self) -> Option<bool> {
        // Uniform signs are only ever made without clusters.
        match self.signs {
            Signs::Uniform(inside) => Some(inside),
            Signs::Mixed(_) => None,
        }
    }

    /// Whether the chunk serves nodes whose clusters here are of `level`: it holds that level,
    /// or the level is 0 (such clusters are never read from chunk clusters, only the signs).
    pub fn holds(&self, level: u32) -> bool {
        level == 0 || self.uniform_side().is_some() || (self.from..=MAX_CLUSTER_LEVEL).contains(&level)
    }

    /// Drops the levels finer than `level` (a chunk drawn coarse needs only its coarse clusters);
    /// the signs stay.
    pub fn keep_from(&mut self, level: u32) {
        let level = level.clamp(1, MAX_CLUSTER_LEVEL);
        // A chunk the surface misses has no cluster at any level (and may be shared).
        if level <= self.from || self.uniform_side().is_some() {
            return;
        }
        for v in &mut self.levels[..level as usize - 1] {
            *v = LevelClusters::default();
        }
        self.from = level;
    }

    /// The sign of voxel `p` (even coordinates, inside the chunk).
    fn sign(&self, p: VoxelPos) -> bool {
        match &self.signs {
            Signs::Uniform(inside) => *inside,
            Signs::Mixed(bits) => {
                let h = (CHUNK / 2) as usize;
                let q = p.map(|v| ((v & (CHUNK - 1)) >> 1) as usize);
                let i = q.x + h * (q.z + h * q.y);
                bits[i / 64] >> (i % 64) & 1 != 0
            }
        }
    }

    /// The vertex of cluster `key` (level ≥ 1, inside the chunk), if its cube has a cell with a
    /// vertex.
    fn vertex(&self, key: ClusterKey) -> Option<ClusterVertex> {
        let l = key.0;
        let list = self.levels.get((l as usize).checked_sub(1)?)?;
        let n = CHUNK >> l;
        let q = key.1.map(|v| v & (n - 1));
        list.get((q[0] + n * (q[2] + n * q[1])) as usize).map(|v| v.unpack(&key))
    }

    /// The clusters of level `l` of chunk `chunk` (these clusters' chunk), with their keys.
    fn level(&self, chunk: [i32; 3], l: u32) -> impl Iterator<Item = (ClusterKey, PackedVertex)> + '_ {
        let n = CHUNK >> l;
        let base = chunk.map(|c| c.wrapping_mul(n));
        let list = (l as usize).checked_sub(1).and_then(|i| self.levels.get(i));
        list.into_iter().flat_map(LevelClusters::iter).map(move |(i, v)| {
            let i = i as i32;
            ((l, [base[0] + i % n, base[1] + i / (n * n), base[2] + (i / n) % n]), v)
        })
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        let signs = match self.signs {
            Signs::Uniform(_) => 0,
            Signs::Mixed(_) => SIGN_WORDS * 8,
        };
        signs + self.levels.iter().map(LevelClusters::heap_bytes).sum::<usize>()
    }
}

/// The storage chunk holding voxel `p`.
fn chunk_of(p: VoxelPos) -> [i32; 3] {
    [p.x >> MAX_CLUSTER_LEVEL, p.y >> MAX_CLUSTER_LEVEL, p.z >> MAX_CLUSTER_LEVEL]
}

/// The voxels of storage chunk `chunk`.
fn chunk_region(chunk: [i32; 3]) -> Result<Region, MeshError> {
    let lo = chunk.map(|c| c as i64 * CHUNK as i64);
    let fits = |v: i64| v >= i32::MIN as i64 && v + CHUNK as i64 <= i32::MAX as i64;
    if !lo.iter().all(|&v| fits(v)) {
        return Err(MeshError::Read(voxterra_core::CoreError::RegionOverflow {
            what: "storage chunk",
            value: lo[0] as i128,
            limit: i32::MAX as i128,
        }));
    }
    Region::from_min_size(Point3::new(lo[0] as i32, lo[1] as i32, lo[2] as i32), [CHUNK as u32; 3])
        .map_err(MeshError::Read)
}

/// `region` cut along the storage chunks' faces, in (y, z, x) chunk order.
fn chunk_pieces(region: &Region) -> Result<Vec<Region>, MeshError> {
    let chunk = CHUNK as i64;
    let (wl, wh) = (region.min(), region.max());
    let first = wl.map(|v| (v as i64).div_euclid(chunk));
    let last = wh.map(|v| (v as i64 - 1).div_euclid(chunk));
    let mut out = Vec::new();
    for cy in first.y..=last.y {
        for cz in first.z..=last.z {
            for cx in first.x..=last.x {
                let piece = Region::new(
                    Point3::new(cx, cy, cz).map(|c| (c * chunk) as i32),
                    Point3::new(cx, cy, cz).map(|c| ((c + 1) * chunk).min(i32::MAX as i64) as i32),
                )
                .map_err(MeshError::Read)?;
                out.extend(piece.intersection(region));
            }
        }
    }
    Ok(out)
}

/// The voxels whose cells `part` of `node`'s polygons can use: the node grown by the largest
/// cluster around it.
fn reach(node: &ClusterNode, levels: &dyn LevelMap, part: ClusterPart) -> Result<Region, MeshError> {
    let s = 1i32 << node.level;
    let mut margin = 0;
    if part != ClusterPart::Interior {
        margin = s;
        for p in shell(&node.region, s) {
            margin = margin.max(1 << levels.level_at(p).min(MAX_CLUSTER_LEVEL));
        }
    }
    grow(&node.region, margin)
}

/// The storage chunks [`Mesher::mesh_cluster_node_from`] reads for `node` at `levels`, in (y, z,
/// x) order.
pub fn cluster_chunks(node: &ClusterNode, levels: &dyn LevelMap) -> Result<Vec<[i32; 3]>, MeshError> {
    check_node(node)?;
    let need = reach(node, levels, ClusterPart::Whole)?;
    // The grid's last points lie on the node's upper faces, inside `need`.
    let (lo, hi) = (chunk_of(need.min()), chunk_of(need.max().map(|v| v - 1)));
    let mut out = Vec::new();
    for cy in lo[1]..=hi[1] {
        for cz in lo[2]..=hi[2] {
            for cx in lo[0]..=hi[0] {
                out.push([cx, cy, cz]);
            }
        }
    }
    Ok(out)
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
    /// Cells per material id, as (id, count): the first few inline (PERF: an allocation per
    /// cluster was a tenth of making a chunk's clusters), the rest beyond.
    materials: [(u8, u32); 4],
    distinct: u8,
    more: Vec<(u8, u32)>,
}

impl Cluster {
    /// Adds a cell's vertex (cells go in (y, z, x) order: a cluster's sums depend on its cells
    /// alone, whichever region they were read from).
    fn add(&mut self, (_, p, n, m): &CellVertex) {
        for a in 0..3 {
            self.sum[a] += p[a] as f64;
            self.normal[a] += n[a] as f64;
        }
        let (nn, pp) = (n.cast::<f64>(), p.coords.cast::<f64>());
        let d = nn.dot(&pp);
        let q = [nn.x * nn.x, nn.x * nn.y, nn.x * nn.z, nn.y * nn.y, nn.y * nn.z, nn.z * nn.z];
        for (a, v) in self.ata.iter_mut().zip(q) {
            *a += v;
        }
        for a in 0..3 {
            self.atb[a] += nn[a] * d;
        }
        self.cells += 1;
        let id = m.id();
        let inline = &mut self.materials[..self.distinct as usize];
        if let Some(e) = inline.iter_mut().find(|e| e.0 == id) {
            e.1 += 1;
        } else if (self.distinct as usize) < self.materials.len() {
            self.materials[self.distinct as usize] = (id, 1);
            self.distinct += 1;
        } else {
            match self.more.iter_mut().find(|e| e.0 == id) {
                Some(e) => e.1 += 1,
                None => self.more.push((id, 1)),
            }
        }
    }
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
#[derive(Clone, PartialEq, Debug)]
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
    /// PERF: the node's own clusters' indices in a dense grid (`u32::MAX`: none yet), the others
    /// in a map; a hash probe per corner was a tenth of a node.
    dense: Vec<u32>,
    /// The dense grid's level, first cluster and side.
    grid: (u32, [i32; 3], usize),
    index: Map<ClusterKey, u32>,
}

impl<'a> Builder<'a> {
    /// Largest side of a node whose own clusters are indexed densely.
    const DENSE_SIDE: usize = 32;

    fn new(mesh: &'a mut RenderMesh, node: &ClusterNode) -> Self {
        let l = node.level;
        let n = (node.region.size()[0] >> l) as usize;
        let base = [node.region.min().x >> l, node.region.min().y >> l, node.region.min().z >> l];
        let dense = if n <= Self::DENSE_SIDE { vec![u32::MAX; n * n * n] } else { Vec::new() };
        Builder { mesh, dense, grid: (l, base, n), index: Map::default() }
    }

    /// `key`'s slot in the dense grid, if it has one.
    fn slot(&self, key: &ClusterKey) -> Option<usize> {
        let (l, base, n) = self.grid;
        if key.0 != l || self.dense.is_empty() {
            return None;
        }
        let q = [0, 1, 2].map(|a| key.1[a].wrapping_sub(base[a]) as u32 as usize);
        q.iter().all(|&v| v < n).then(|| q[0] + n * (q[2] + n * q[1]))
    }
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
        let mut lookup = |k: ClusterKey| fresh(&clusters, k);
        let signs = self.sign_grid(src, &node)?;
        let mut one = [Builder::new(out, &node)];
        contour(&node, levels, part, &signs, &mut lookup, &mut one);
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
        let mut lookup = |k: ClusterKey| fresh(&clusters, k);
        Ok(self.node_meshes(node, levels, signs, &mut lookup, own, interior, border))
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
        let mut one = [Builder::new(out, &node)];
        contour(&node, levels, ClusterPart::Border, &own.signs, &mut lookup, &mut one);
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
        let need = reach(node, levels, part)?;
        // The border's polygons use only the clusters along the node's faces: the cells deeper
        // than one cluster are not read.
        let core = (part == ClusterPart::Border).then(|| shrink(region, s + 1)).flatten();
        // A voxel more on each side makes the pieces below own every edge of their cells, so
        // each cell gets its vertex whichever node asks (a cluster's vertex is the same in every
        // node that draws it).
        let work = grow(&need, 1)?;
        let mut cells: Vec<CellVertex> = Vec::new();
        let mut mesh = CellMesh::default();
        for piece in chunk_pieces(&work)? {
            if core.is_some_and(|c| c.contains_region(&piece)) {
                continue;
            }
            self.mesh(src, &piece, ws, &mut mesh)?;
            cells.extend(mesh.cells_in(&need));
        }
        cells.sort_unstable_by_key(|c| (c.0.y, c.0.z, c.0.x));
        cells.dedup_by_key(|c| c.0);
        let mut clusters: Map<ClusterKey, Cluster> = Map::default();
        for c in &cells {
            let l = levels.level_at(c.0).min(MAX_CLUSTER_LEVEL);
            clusters.entry((l, [c.0.x >> l, c.0.y >> l, c.0.z >> l])).or_default().add(c);
        }
        Ok(clusters)
    }

    /// Storage chunk `chunk`'s clusters at levels 1 to [`MAX_CLUSTER_LEVEL`] and the signs of its
    /// even voxels: all [`Mesher::mesh_cluster_node_from`] reads of the chunk, made once and
    /// kept until an edit within a voxel of the chunk. Each cluster's vertex is bit for bit the
    /// one [`Mesher::mesh_cluster_node`] computes from the voxels.
    pub fn chunk_clusters<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        chunk: [i32; 3],
        ws: &mut MeshWorkspace,
    ) -> Result<ChunkClusters, MeshError> {
        let region = chunk_region(chunk)?;
        let work = grow(&region, 1)?;
        // A chunk uniform a voxel beyond its box has no cell with a vertex and one sign.
        if let Some(v) = grow(&work, 1).ok().and_then(|padded| src.uniform(&padded)) {
            return Ok(ChunkClusters::uniform(self.is_inside(v)));
        }
        let mut mesh = CellMesh::default();
        self.mesh(src, &work, ws, &mut mesh)?;
        let mut cells: Vec<CellVertex> = mesh.cells_in(&region).collect();
        cells.sort_unstable_by_key(|c| (c.0.y, c.0.z, c.0.x));
        // Signs: the even voxels of the chunk, read a row at a time.
        let mut signs = Box::new([0u64; SIGN_WORDS]);
        let half = (CHUNK / 2) as usize;
        let mut row = [voxterra_core::Voxel::AIR; CHUNK as usize];
        let lo = region.min();
        for yi in 0..half {
            for zi in 0..half {
                let r = Region::from_min_size(
                    Point3::new(lo.x, lo.y + 2 * yi as i32, lo.z + 2 * zi as i32),
                    [CHUNK as u32, 1, 1],
                )
                .map_err(MeshError::Read)?;
                src.read_box(&r, &mut row)?;
                for xi in 0..half {
                    if self.is_inside(row[2 * xi]) {
                        let i = xi + half * (zi + half * yi);
                        signs[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
        let mut levels: [LevelClusters; MAX_CLUSTER_LEVEL as usize] = Default::default();
        // PERF: each level's clusters found through a dense grid of slots, not a map.
        let mut slot = vec![u16::MAX; ((CHUNK / 2) * (CHUNK / 2) * (CHUNK / 2)) as usize];
        let mut sums: Vec<(u16, Cluster)> = Vec::new();
        let mut out = Vec::new();
        for l in 1..=MAX_CLUSTER_LEVEL {
            let n = CHUNK >> l;
            slot[..(n * n * n) as usize].fill(u16::MAX);
            sums.clear();
            for c in &cells {
                let q = (c.0 - lo).map(|v| v >> l);
                let i = (q.x + n * (q.z + n * q.y)) as usize;
                if slot[i] == u16::MAX {
                    slot[i] = sums.len() as u16;
                    sums.push((i as u16, Cluster::default()));
                }
                sums[slot[i] as usize].1.add(c);
            }
            out.clear();
            out.extend(sums.iter().map(|(i, c)| {
                let (i, n) = (*i as i32, n);
                let q = [i % n, i / (n * n), (i / n) % n];
                let key = (l, [(lo.x >> l) + q[0], (lo.y >> l) + q[1], (lo.z >> l) + q[2]]);
                (i as u16, PackedVertex::pack(&key, &place(&key, c)))
            }));
            out.sort_unstable_by_key(|e| e.0);
            levels[l as usize - 1] = LevelClusters::new(&out, (n * n * n) as usize);
        }
        let all = if signs.iter().all(|&w| w == 0) {
            Some(false)
        } else if signs.iter().all(|&w| w == !0) {
            Some(true)
        } else {
            None
        };
        match all {
            Some(inside) if cells.is_empty() => Ok(ChunkClusters::uniform(inside)),
            _ => Ok(ChunkClusters { from: 1, signs: Signs::Mixed(signs), levels }),
        }
    }

    /// [`Mesher::mesh_cluster_node`] from chunk clusters instead of voxels: `chunks` gives each
    /// storage chunk's [`ChunkClusters`] (the chunks of [`cluster_chunks`], each holding the level
    /// drawn there). The same meshes and summary, bit for bit, for nodes of level 1 and coarser;
    /// a level-0 node reads voxels at odd coordinates, which chunk clusters do not keep. A chunk
    /// missing, or lacking a level it is read at, is [`MeshError::MissingClusters`].
    pub fn mesh_cluster_node_from<'c>(
        &self,
        chunks: &dyn Fn([i32; 3]) -> Option<&'c ChunkClusters>,
        node: ClusterNode,
        levels: &dyn LevelMap,
        interior: &mut RenderMesh,
        border: &mut RenderMesh,
    ) -> Result<BorderSummary, MeshError> {
        interior.clear();
        border.clear();
        check_node(&node)?;
        if node.level == 0 {
            return Err(MeshError::MissingClusters { chunk: chunk_of(node.region.min()), level: 0 });
        }
        let (lo, hi) = (node.region.min(), node.region.max());
        let s = 1i32 << node.level;
        let w = ((hi.x - lo.x) / s) as usize + 1;
        let mut signs = vec![0u64; (w * w * w).div_ceil(64)];
        let l = node.level;
        let on_face = |c: &[i32; 3]| (0..3).any(|a| c[a] == lo[a] >> l || c[a] == (hi[a] >> l) - 1);
        // The node's own clusters on its faces, for its summary.
        let mut own: Map<ClusterKey, ClusterVertex> = Map::default();
        // Chunk by chunk (PERF: one table lookup a chunk, not one a grid point): the grid points
        // in it (the grid reaches the node's upper faces, in the chunks past it), and the node's
        // own clusters in the node's chunks.
        let (clo, chi) = (chunk_of(lo), chunk_of(hi));
        let inner_hi = chunk_of(hi.map(|v| v - 1));
        // Grid indices whose points lie in chunk `c` along axis `a`.
        let span = |c: i32, a: usize| {
            let first = ((c as i64) << MAX_CLUSTER_LEVEL).max(lo[a] as i64);
            let last = (((c as i64 + 1) << MAX_CLUSTER_LEVEL) - 1).min(hi[a] as i64);
            let from = (first - lo[a] as i64 + s as i64 - 1) >> l;
            let to = (last - lo[a] as i64) >> l;
            from as usize..(to + 1).max(from) as usize
        };
        for cy in clo[1]..=chi[1] {
            for cz in clo[2]..=chi[2] {
                for cx in clo[0]..=chi[0] {
                    let c = [cx, cy, cz];
                    let Some(t) = chunks(c) else {
                        return Err(MeshError::MissingClusters { chunk: c, level: l });
                    };
                    let (xs, ys, zs) = (span(cx, 0), span(cy, 1), span(cz, 2));
                    let all = t.uniform_side();
                    for yi in ys {
                        for zi in zs.clone() {
                            for xi in xs.clone() {
                                let p = Point3::new(
                                    lo.x + xi as i32 * s,
                                    lo.y + yi as i32 * s,
                                    lo.z + zi as i32 * s,
                                );
                                if all.unwrap_or_else(|| t.sign(p)) {
                                    let i = xi + w * (zi + w * yi);
                                    signs[i / 64] |= 1 << (i % 64);
                                }
                            }
                        }
                    }
                    if (0..3).all(|a| c[a] <= inner_hi[a]) && all.is_none() {
                        if !t.holds(l) {
                            return Err(MeshError::MissingClusters { chunk: c, level: l });
                        }
                        // Only chunks on the node's faces hold face clusters.
                        if (0..3).any(|a| c[a] == clo[a] || c[a] == inner_hi[a]) {
                            own.extend(
                                t.level(c, l)
                                    .filter(|(key, _)| on_face(&key.1))
                                    .map(|(key, v)| (key, v.unpack(&key))),
                            );
                        }
                    }
                }
            }
        }
        // A level map that changes inside a storage chunk can ask a chunk for a level it does
        // not hold: an error, not a hole.
        let mut missing = None;
        let mut last: Option<([i32; 3], Option<&ChunkClusters>)> = None;
        let mut lookup = |k: ClusterKey| {
            let cell = Point3::from(k.1).map(|v| v << k.0);
            let chunk = chunk_of(cell);
            // Clusters come in grid order: mostly from the chunk the last one came from.
            let t = match last {
                Some((c, t)) if c == chunk => t,
                _ => {
                    let t = chunks(chunk);
                    last = Some((chunk, t));
                    t
                }
            };
            let t = t.filter(|t| t.holds(k.0));
            if t.is_none() {
                missing.get_or_insert(chunk);
            }
            t.and_then(|t| t.vertex(k))
        };
        let summary = self.node_meshes(node, levels, signs, &mut lookup, own, interior, border);
        match missing {
            Some(chunk) => Err(MeshError::MissingClusters { chunk, level: node.level }),
            None => Ok(summary),
        }
    }

    /// A node's interior and border meshes from its grid's signs and its clusters, and its summary.
    #[allow(clippy::too_many_arguments)]
    fn node_meshes<L: FnMut(ClusterKey) -> Option<ClusterVertex>>(
        &self,
        node: ClusterNode,
        levels: &dyn LevelMap,
        signs: Vec<u64>,
        lookup: &mut L,
        own: Map<ClusterKey, ClusterVertex>,
        interior: &mut RenderMesh,
        border: &mut RenderMesh,
    ) -> BorderSummary {
        {
            let mut both = [Builder::new(interior, &node), Builder::new(border, &node)];
            contour(&node, levels, ClusterPart::Whole, &signs, lookup, &mut both);
        }
        let n = (node.region.size()[0] >> node.level) as usize;
        let mut summary =
            BorderSummary { node, clusters: own, signs: vec![0; ((n + 1).pow(3)).div_ceil(64)] };
        // The face points only: whole rows on the y and z faces, the row ends elsewhere.
        for qy in 0..=n {
            for qz in 0..=n {
                let whole_row = qy == 0 || qy == n || qz == 0 || qz == n;
                let step = if whole_row { 1 } else { n.max(1) };
                for qx in (0..=n).step_by(step) {
                    let i = qx + (n + 1) * (qz + (n + 1) * qy);
                    if bit(&signs, i) {
                        summary.signs[i / 64] |= 1 << (i % 64);
                    }
                }
            }
        }
        summary
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
/// node's own clusters go to the first and the others to the second. `signs` holds a bit per grid
/// point (`n + 1` a side, x fastest, then z, then y).
fn contour<L>(
    node: &ClusterNode,
    levels: &dyn LevelMap,
    part: ClusterPart,
    signs: &[u64],
    lookup: &mut L,
    outs: &mut [Builder<'_>],
) where
    L: FnMut(ClusterKey) -> Option<ClusterVertex>,
{
    let (region, level) = (&node.region, node.level);
    let s = 1i32 << level;
    let (lo, hi) = (region.min(), region.max());
    let w = ((hi.x - lo.x) / s) as usize + 1;
    // PERF: a grid row's signs as words, so that the crossing edges of a row along each axis are
    // an exclusive or of two rows; only those edges are visited (a node's surface crosses a few
    // percent of its grid's edges).
    let words = w.div_ceil(64);
    let mut rows = vec![0u64; w * w * words];
    for (r, row) in rows.chunks_exact_mut(words).enumerate() {
        for (k, word) in row.iter_mut().enumerate() {
            for j in 0..64.min(w - 64 * k) {
                if bit(signs, r * w + 64 * k + j) {
                    *word |= 1 << j;
                }
            }
        }
    }
    let row = |yi: usize, zi: usize| &rows[(zi + w * yi) * words..][..words];
    // Grid points strictly inside the node's faces along x, and all of them along x but the last.
    let mask = |k: usize, from: usize, to: usize| -> u64 {
        let (a, b) = ((64 * k).max(from), (64 * k + 64).min(to));
        if a >= b { 0 } else { (u64::MAX >> (64 - (b - a))) << (a - 64 * k) }
    };
    let inner = |i: usize| 0 < i && i + 1 < w;
    let mut edges = [vec![0u64; words], vec![0u64; words], vec![0u64; words]];
    for yi in 0..w {
        for zi in 0..w {
            let here_row = row(yi, zi);
            for k in 0..words {
                // Along x: the point and the next one differ (no edge leaves the last point).
                let next = here_row[k] >> 1 | here_row.get(k + 1).map_or(0, |v| v << 63);
                let mut ex = (here_row[k] ^ next) & mask(k, 0, w - 1);
                let mut ey = if yi + 1 < w { here_row[k] ^ row(yi + 1, zi)[k] } else { 0 };
                let mut ez = if zi + 1 < w { here_row[k] ^ row(yi, zi + 1)[k] } else { 0 };
                // An edge is the node's own when its cells are: the point strictly inside the
                // node's faces on the other two axes.
                let own_x = if inner(yi) && inner(zi) { u64::MAX } else { 0 };
                let own_y = if inner(zi) { mask(k, 1, w - 1) } else { 0 };
                let own_z = if inner(yi) { mask(k, 1, w - 1) } else { 0 };
                match part {
                    ClusterPart::Whole => {}
                    ClusterPart::Interior => {
                        ex &= own_x;
                        ey &= own_y;
                        ez &= own_z;
                    }
                    ClusterPart::Border => {
                        ex &= !own_x;
                        ey &= !own_y;
                        ez &= !own_z;
                    }
                }
                let owned = [own_x, own_y, own_z];
                edges[0][k] = ex;
                edges[1][k] = ey;
                edges[2][k] = ez;
                let mut any = ex | ey | ez;
                while any != 0 {
                    let j = any.trailing_zeros() as usize;
                    any &= any - 1;
                    let xi = 64 * k + j;
                    let p = Point3::new(lo.x + xi as i32 * s, lo.y + yi as i32 * s, lo.z + zi as i32 * s);
                    let here = here_row[k] >> j & 1 != 0;
                    for axis in 0..3 {
                        if edges[axis][k] >> j & 1 == 0 {
                            continue;
                        }
                        let own = owned[axis] >> j & 1 != 0;
                        let (b, c) = ((axis + 1) % 3, (axis + 2) % 3);
                        // The cells around the edge, counter-clockwise seen from its positive
                        // direction, as the mesher orders them: offsets (1, 1), (0, 1), (0, 0),
                        // (1, 0) cells down along b and c. PERF: written out, not mapped over
                        // arrays of points (those went through the stack).
                        let mut around = [[p.x, p.y, p.z]; 4];
                        around[0][b] -= s;
                        around[0][c] -= s;
                        around[1][c] -= s;
                        around[3][b] -= s;
                        let mut keys = [(0u32, [0i32; 3]); 4];
                        let mut finer = false;
                        for (k, q) in keys.iter_mut().zip(&around) {
                            let inside = (0..3).all(|a| lo[a] <= q[a] && q[a] < hi[a]);
                            let l = if inside {
                                level
                            } else {
                                levels.level_at(Point3::from(*q)).min(MAX_CLUSTER_LEVEL)
                            };
                            finer |= l < level;
                            *k = (l, [q[0] >> l, q[1] >> l, q[2] >> l]);
                        }
                        if finer {
                            continue; // a finer node contours it at its level
                        }
                        let emitter = [2usize, 3, 1, 0].into_iter().find(|&i| keys[i].0 == level);
                        if emitter.is_none_or(|i| !(0..3).all(|a| around[i][a] < hi[a])) {
                            continue;
                        }
                        let flip = if here { 0 } else { 3 };
                        let quad: [ClusterKey; 4] =
                            [keys[flip], keys[1 ^ flip], keys[2 ^ flip], keys[3 ^ flip]];
                        let to = if outs.len() > 1 && !own { 1 } else { 0 };
                        emit(&mut outs[to], lookup, quad);
                    }
                }
            }
        }
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

/// A cluster's vertex from its sums: [`place`]'s, and for level 1 and coarser exactly what its
/// packed form (as chunk clusters keep it) gives back, so held and fresh vertices are equal.
fn finish(key: &ClusterKey, c: &Cluster) -> ClusterVertex {
    let v = place(key, c);
    // Level 0 is the mesher's own vertex.
    if key.0 == 0 { v } else { PackedVertex::pack(key, &v).unpack(key) }
}

/// A cluster's vertex from its sums: the mass point, the mean normal, the most common material
/// (ties to the lower id).
fn place(key: &ClusterKey, c: &Cluster) -> ClusterVertex {
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
    let placed = if c.cells == 1 { mass } else { solve_spd(&m, &rhs).unwrap_or(mass) };
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
    let counts = c.materials[..c.distinct as usize].iter().chain(&c.more);
    let material = counts.max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0))).map_or(0, |e| e.0);
    ClusterVertex { position, normal, material: Material::from_low_bits(material) }
}

/// `m⁻¹ b` for a symmetric positive definite `m` by Cholesky, written out for 3×3 (PERF:
/// nalgebra's general one was a tenth of making a chunk's clusters); `None` when `m` is not
/// positive definite.
fn solve_spd(
    m: &voxterra_core::nalgebra::Matrix3<f64>,
    b: &voxterra_core::nalgebra::Vector3<f64>,
) -> Option<voxterra_core::nalgebra::Vector3<f64>> {
    let l00 = m[(0, 0)].sqrt();
    let l10 = m[(1, 0)] / l00;
    let l20 = m[(2, 0)] / l00;
    let l11 = (m[(1, 1)] - l10 * l10).sqrt();
    let l21 = (m[(2, 1)] - l20 * l10) / l11;
    let l22 = (m[(2, 2)] - l20 * l20 - l21 * l21).sqrt();
    if !(l00 > 0.0 && l11 > 0.0 && l22 > 0.0) {
        return None;
    }
    // L y = b, then Lᵀ x = y.
    let y0 = b[0] / l00;
    let y1 = (b[1] - l10 * y0) / l11;
    let y2 = (b[2] - l20 * y0 - l21 * y1) / l22;
    let x2 = y2 / l22;
    let x1 = (y1 - l21 * x2) / l11;
    let x0 = (y0 - l10 * x1 - l20 * x2) / l00;
    Some(voxterra_core::nalgebra::Vector3::new(x0, x1, x2))
}

/// The vertex of cluster `k` from sums made from the voxels: every cluster around a crossing edge
/// has a cell with a vertex.
fn fresh(clusters: &Map<ClusterKey, Cluster>, k: ClusterKey) -> Option<ClusterVertex> {
    let v = clusters.get(&k).map(|c| finish(&k, c));
    debug_assert!(v.is_some(), "a cluster around a crossing edge has no cell with a vertex");
    v
}

/// The index of cluster `key` in `out`, added on first use.
fn vertex<L: FnMut(ClusterKey) -> Option<ClusterVertex>>(
    out: &mut Builder<'_>,
    lookup: &mut L,
    key: ClusterKey,
) -> Option<u32> {
    let slot = out.slot(&key);
    let held = match slot {
        Some(i) => Some(out.dense[i]).filter(|&v| v != u32::MAX),
        None => out.index.get(&key).copied(),
    };
    if held.is_some() {
        return held;
    }
    let v = lookup(key)?;
    let index = out.mesh.positions.len() as u32;
    out.mesh.positions.push(v.position);
    out.mesh.normals.push(v.normal);
    out.mesh.materials.push(v.material);
    match slot {
        Some(i) => out.dense[i] = index,
        None => {
            out.index.insert(key, index);
        }
    }
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
        // A lookup that fails drops the polygon; the callers whose lookups cannot fail check
        // it (`fresh`), the others report it.
        let Some(index) = vertex(out, lookup, ring[i]) else { return };
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

impl CellMesh {
    /// The vertices of cells in `region`.
    fn cells_in<'a>(&'a self, region: &'a Region) -> impl Iterator<Item = CellVertex> + 'a {
        let m = &self.mesh;
        self.cells
            .iter()
            .enumerate()
            .filter(|(_, c)| region.contains(**c))
            .map(|(i, &c)| (c, m.positions[i], m.normals[i], m.materials[i]))
    }
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
