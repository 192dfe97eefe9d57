//! The octree nodes levels of detail mesh ([`ClusterNode`]), which level each place wants
//! ([`LevelMap`]), the cluster keys and vertices, and the chunk and region arithmetic around them.

use crate::config::MeshError;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Material, Region, VoxelPos};

pub(crate) type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

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
pub(crate) const CHUNK: i32 = 1 << MAX_CLUSTER_LEVEL;

/// Words of a chunk's sign bits: one per voxel with even coordinates, `(CHUNK / 2)³`.
pub(crate) const SIGN_WORDS: usize = ((CHUNK / 2) * (CHUNK / 2) * (CHUNK / 2)) as usize / 64;

/// A full-resolution cell with a vertex: its low corner voxel, the vertex's position, normal and
/// material.
pub(crate) type CellVertex = (VoxelPos, Point3<f32>, Vector3<f32>, Material);

/// The storage chunk holding voxel `p`.
pub(crate) fn chunk_of(p: VoxelPos) -> [i32; 3] {
    [p.x >> MAX_CLUSTER_LEVEL, p.y >> MAX_CLUSTER_LEVEL, p.z >> MAX_CLUSTER_LEVEL]
}

/// The voxels of storage chunk `chunk`.
pub(crate) fn chunk_region(chunk: [i32; 3]) -> Result<Region, MeshError> {
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
pub(crate) fn chunk_pieces(region: &Region) -> Result<Vec<Region>, MeshError> {
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
pub(crate) fn reach(
    node: &ClusterNode,
    levels: &dyn LevelMap,
    part: ClusterPart,
) -> Result<Region, MeshError> {
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

/// A cluster's vertex: its level, its coordinates at that level (cell >> level) and which: 0 for
/// the cluster whole, `1 + s` for its sheet `s` where sheets of surface cross its cube apart
/// ([`crate::clusters::vertex::Sheets`]).
pub(crate) type ClusterKey = (u32, [i32; 3], u8);

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

/// Refuses levels past the coarsest and nodes not aligned to their level.
pub(crate) fn check_node(node: &ClusterNode) -> Result<(), MeshError> {
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

/// Bit `i` of a sign grid.
#[inline]
pub(crate) fn bit(signs: &[u64], i: usize) -> bool {
    signs.get(i / 64).is_some_and(|w| w >> (i % 64) & 1 != 0)
}

/// One voxel per `step`-cube on the layer just outside `region`, where its neighbors start.
pub(crate) fn shell(region: &Region, step: i32) -> Vec<VoxelPos> {
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
pub(crate) fn shrink(region: &Region, by: i32) -> Option<Region> {
    let (lo, hi) = (region.min(), region.max());
    let lo = lo.map(|v| v.saturating_add(by));
    let hi = hi.map(|v| v.saturating_sub(by));
    (0..3).all(|a| lo[a] < hi[a]).then(|| Region::new(lo, hi).ok()).flatten()
}

/// `region` grown by `by` voxels on every side.
pub(crate) fn grow(region: &Region, by: i32) -> Result<Region, MeshError> {
    let g = |v: i32, d: i64| i32::try_from(v as i64 + d).map_err(|_| MeshError::OutOfRange(*region));
    let (lo, hi) = (region.min(), region.max());
    let lo = Point3::new(g(lo.x, -(by as i64))?, g(lo.y, -(by as i64))?, g(lo.z, -(by as i64))?);
    let hi = Point3::new(g(hi.x, by as i64)?, g(hi.y, by as i64)?, g(hi.z, by as i64)?);
    Region::new(lo, hi).map_err(MeshError::Read)
}
