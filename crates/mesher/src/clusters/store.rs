//! What a chunk keeps of its clusters ([`ChunkClusters`]: per level, each cluster's vertex packed
//! in its cube, and the inside signs of the coarser grids), and what a node's border keeps
//! ([`BorderSummary`]), so a level change re-meshes from them without reading voxels again.

use crate::clusters::node::{
    CHUNK, ClusterKey, ClusterNode, ClusterVertex, MAX_CLUSTER_LEVEL, Map, SIGN_WORDS,
};
use crate::clusters::vertex::{Cluster, place};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Material, VoxelPos};

/// The signs of a chunk's even voxels.
#[derive(Clone, PartialEq, Eq, Debug)]
pub(crate) enum Signs {
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
    pub(crate) from: u32,
    pub(crate) signs: Signs,
    /// Level `l` at `l - 1`.
    pub(crate) levels: [LevelClusters; MAX_CLUSTER_LEVEL as usize],
}

/// A chunk's clusters of one level: a bit per cube of the chunk's `2^(5 - l)`-sided grid (x
/// fastest, then z, then y) with a vertex, and the vertices (sheet 0) in that order. PERF: the
/// vertex of a cube is found by counting bits (a binary search over the vertices was a tenth of
/// a node). The few cubes crossed by more than one sheet keep the other sheets' vertices aside.
#[derive(Clone, PartialEq, Debug, Default)]
pub(crate) struct LevelClusters {
    pub(crate) bits: Box<[u64]>,
    /// Vertices before each word of `bits`.
    pub(crate) before: Box<[u16]>,
    pub(crate) vertices: Box<[PackedVertex]>,
    /// The vertices of the sheets of cubes crossed by more than one (`1 + s` for sheet `s`):
    /// (cube, which, vertex), sorted.
    pub(crate) sheets: Box<[(u16, u8, PackedVertex)]>,
}

/// A cluster vertex in 12 bytes (PERF: a view holds thousands of chunks' clusters; 28 bytes a
/// vertex was most of them): its position within the cluster's cube in 16-bit steps, its normal
/// octahedron-encoded, its material. Every cluster vertex of level 1 and coarser is made exactly
/// what its packed form gives back ([`finish`]), so held and fresh vertices are equal.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct PackedVertex {
    pub(crate) position: [u16; 3],
    pub(crate) normal: [i16; 2],
    pub(crate) material: u8,
}

impl PackedVertex {
    /// The cube a level-`l` cluster's vertex is kept in: `(low corner, side)`, voxel units.
    pub(crate) fn cube(key: &ClusterKey) -> ([f64; 3], f64) {
        let side = (1i64 << key.0) as f64;
        (key.1.map(|c| c as f64 * side + 0.5), side)
    }

    pub(crate) fn pack(key: &ClusterKey, v: &ClusterVertex) -> Self {
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

    pub(crate) fn unpack(&self, key: &ClusterKey) -> ClusterVertex {
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
    /// From `(index, vertex)` pairs sorted by index (sheet 0) and the other sheets' `(index,
    /// sheet, vertex)` sorted, in a grid of `cubes` cubes.
    pub(crate) fn new(
        sorted: &[(u16, PackedVertex)],
        sheets: &[(u16, u8, PackedVertex)],
        cubes: usize,
    ) -> Self {
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
            sheets: sheets.into(),
        }
    }

    /// Cube `i`'s vertex `sheet` (0: the cube's whole, `1 + s`: its sheet `s`).
    pub(crate) fn get(&self, i: usize, sheet: u8) -> Option<PackedVertex> {
        let w = *self.bits.get(i / 64)?;
        if w >> (i % 64) & 1 == 0 {
            return None;
        }
        if sheet > 0 {
            let at = self.sheets.binary_search_by_key(&(i as u16, sheet), |e| (e.0, e.1)).ok()?;
            return Some(self.sheets[at].2);
        }
        let rank = self.before[i / 64] as usize + (w & ((1u64 << (i % 64)) - 1)).count_ones() as usize;
        self.vertices.get(rank).copied()
    }

    /// The cubes' vertices: each whole in index order, then the sheets'.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (usize, u8, PackedVertex)> + '_ {
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
        let first = indices.zip(self.vertices.iter().copied()).map(|(i, v)| (i, 0, v));
        first.chain(self.sheets.iter().map(|&(i, s, v)| (i as usize, s, v)))
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.bits.len() * 8
            + self.before.len() * 2
            + self.vertices.len() * std::mem::size_of::<PackedVertex>()
            + self.sheets.len() * std::mem::size_of::<(u16, u8, PackedVertex)>()
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
    pub(crate) fn sign(&self, p: VoxelPos) -> bool {
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
    pub(crate) fn vertex(&self, key: ClusterKey) -> Option<ClusterVertex> {
        let l = key.0;
        let list = self.levels.get((l as usize).checked_sub(1)?)?;
        let n = CHUNK >> l;
        let q = key.1.map(|v| v & (n - 1));
        list.get((q[0] + n * (q[2] + n * q[1])) as usize, key.2).map(|v| v.unpack(&key))
    }

    /// The clusters of level `l` of chunk `chunk` (these clusters' chunk), with their keys.
    pub(crate) fn level(
        &self,
        chunk: [i32; 3],
        l: u32,
    ) -> impl Iterator<Item = (ClusterKey, PackedVertex)> + '_ {
        let n = CHUNK >> l;
        let base = chunk.map(|c| c.wrapping_mul(n));
        let list = (l as usize).checked_sub(1).and_then(|i| self.levels.get(i));
        list.into_iter().flat_map(LevelClusters::iter).map(move |(i, sheet, v)| {
            let i = i as i32;
            ((l, [base[0] + i % n, base[1] + i / (n * n), base[2] + (i / n) % n], sheet), v)
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

/// What a node's neighbors need to re-make its border without reading voxels: the node's clusters
/// along its faces and the signs of its grid's points on its faces. Made by
/// [`Mesher::mesh_cluster_node`]; read by [`Mesher::stitch_border`].
#[derive(Clone, PartialEq, Debug)]
pub struct BorderSummary {
    pub(crate) node: ClusterNode,
    pub(crate) clusters: Map<ClusterKey, ClusterVertex>,
    /// One bit per point of the node's grid (`n + 1` a side, x fastest, then z, then y), set on
    /// the faces only.
    pub(crate) signs: Vec<u64>,
}

impl BorderSummary {
    /// The node summarised.
    pub fn node(&self) -> ClusterNode {
        self.node
    }

    /// The vertex of the node's cluster `key` (level, coordinates at that level), if it is one of
    /// the node's clusters along its faces with a surface.
    pub fn vertex(&self, key: (u32, [i32; 3])) -> Option<ClusterVertex> {
        self.clusters.get(&(key.0, key.1, 0)).copied()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.clusters.capacity() * (std::mem::size_of::<(ClusterKey, ClusterVertex)>() + 1)
            + self.signs.capacity() * 8
    }
}

/// A cluster's vertex from its sums: [`place`]'s, and for level 1 and coarser exactly what its
/// packed form (as chunk clusters keep it) gives back, so held and fresh vertices are equal.
pub(crate) fn finish(key: &ClusterKey, c: &Cluster) -> ClusterVertex {
    let v = place(key, c);
    // Level 0 is the mesher's own vertex.
    if key.0 == 0 { v } else { PackedVertex::pack(key, &v).unpack(key) }
}
