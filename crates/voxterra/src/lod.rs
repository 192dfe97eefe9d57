//! Levels of detail for rendering: render nodes meshed from the store at a coarser level.
//!
//! A [`LodNode`] is a cube of [`NODE_CELLS`]³ voxels of its level `k`, each standing for a cube of
//! `2^k` voxels (the store's mips and what is merged from them, [`VoxelStore::level`]): far
//! terrain at a fraction of the triangles, with the materials the mips keep (the one holding the
//! most occupancy). Nodes of one level tile space and mesh seamlessly against each other, as
//! storage chunks do. Collision never reads these meshes: physics keeps full resolution.
//!
//! [`VoxelStore::level`]: voxterra_voxel_store::VoxelStore::level

use crate::terrain::Terrain;
use thiserror::Error;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{CoreError, Region};
use voxterra_mesher::{MeshError, MeshWorkspace, Mesher, RenderMesh};
use voxterra_voxel_store::MAX_LEVEL;

/// Voxels of its own level along a render node's side.
pub const NODE_CELLS: u32 = 32;

/// A render node: voxels `NODE_CELLS·(x, y, z) .. NODE_CELLS·(x, y, z) + NODE_CELLS` of level
/// `level`, which cover `2^level` times as many voxels of the terrain on each axis.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct LodNode {
    /// The level: 0 is full resolution, up to [`MAX_LEVEL`].
    pub level: u32,
    /// Node coordinates at its level.
    pub x: i32,
    /// Node coordinates at its level.
    pub y: i32,
    /// Node coordinates at its level.
    pub z: i32,
}

/// What can go wrong making a level-of-detail mesh.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LodError {
    /// A level past the coarsest one.
    #[error("level {level} is past the coarsest level {max}")]
    Level {
        /// The level asked for.
        level: u32,
        /// The coarsest level.
        max: u32,
    },
    /// A node whose voxels fall outside the voxel coordinate range.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The mesher refused the node.
    #[error(transparent)]
    Mesh(#[from] MeshError),
}

impl LodNode {
    /// The node of `level` holding terrain voxel `p`.
    pub fn containing(level: u32, p: Point3<i32>) -> LodNode {
        let s = level.min(MAX_LEVEL) + NODE_CELLS.trailing_zeros();
        LodNode { level, x: p.x >> s, y: p.y >> s, z: p.z >> s }
    }

    /// The node's voxels at its own level.
    pub fn region_at_level(&self) -> Result<Region, LodError> {
        let n = NODE_CELLS as i64;
        let min = [self.x, self.y, self.z].map(|v| v as i64 * n);
        if min.iter().any(|&v| v < i32::MIN as i64 || v + n > i32::MAX as i64) {
            return Err(CoreError::RegionOverflow {
                what: "render node",
                value: min[0] as i128,
                limit: i32::MAX as i128,
            }
            .into());
        }
        Ok(Region::from_min_size(Point3::new(min[0] as i32, min[1] as i32, min[2] as i32), [NODE_CELLS; 3])?)
    }

    /// The terrain voxels the node covers (clamped to the voxel coordinate range).
    pub fn region(&self) -> Result<Region, LodError> {
        let r = self.region_at_level()?;
        let k = self.level;
        let lo = r.min().map(|v| ((v as i64) << k).clamp(i32::MIN as i64, i32::MAX as i64) as i32);
        let hi = r.max().map(|v| ((v as i64) << k).clamp(i32::MIN as i64, i32::MAX as i64) as i32);
        Ok(Region::new(lo, hi)?)
    }
}

impl Terrain {
    /// The render mesh of `node`: its level's voxels meshed by `mesher` (seamless with the nodes
    /// of the same level around it), positions and normals in terrain voxel units like
    /// [`Terrain::take_render_updates`]' meshes.
    pub fn lod_mesh(
        &self,
        mesher: &Mesher,
        node: LodNode,
        ws: &mut MeshWorkspace,
    ) -> Result<RenderMesh, LodError> {
        let view = self
            .store()
            .level(node.level)
            .map_err(|_| LodError::Level { level: node.level, max: MAX_LEVEL })?;
        let region = node.region_at_level()?;
        let mut mesh = RenderMesh::default();
        mesher.mesh(&view, &region, ws, &mut mesh)?;
        let scale = (1u64 << node.level) as f32;
        for p in &mut mesh.positions {
            p.coords *= scale;
        }
        Ok(mesh)
    }
}
