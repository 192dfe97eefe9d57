//! [`LodNode`]: a render node's place, its voxels and its mesh at its level.

use super::{LodError, NODE_CELLS};
use crate::terrain::Terrain;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{CoreError, Region};
use voxterra_mesher::{MeshWorkspace, Mesher, RenderMesh};
use voxterra_voxel_store::MAX_LEVEL;

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

impl LodNode {
    /// Child `i` (0–7: bit 0 x, bit 1 y, bit 2 z) one level finer.
    fn child(&self, i: i32) -> LodNode {
        LodNode {
            level: self.level - 1,
            x: self.x * 2 + (i & 1),
            y: self.y * 2 + (i >> 1 & 1),
            z: self.z * 2 + (i >> 2 & 1),
        }
    }

    /// Its eight children one level finer (level 1 and up).
    pub(super) fn children(&self) -> impl Iterator<Item = LodNode> + '_ {
        (0..8).map(|i| self.child(i))
    }

    /// The node one level coarser holding it.
    pub(super) fn parent(&self) -> LodNode {
        LodNode { level: self.level + 1, x: self.x >> 1, y: self.y >> 1, z: self.z >> 1 }
    }

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

    /// The voxels of `terrain` the node's meshes read: its own, a voxel past them and its
    /// neighbours' clusters along its border (at most a coarsest cluster deep), within the world's
    /// bounds and the margin a surface there reaches (past them a view reads air without looking).
    /// `None` when it reads nothing. On a paged terrain the node is drawn once these are resident.
    pub fn reads(&self, terrain: &Terrain) -> Result<Option<Region>, LodError> {
        let r = self.region()?.expanded(READ_MARGIN);
        Ok(terrain.world_bounds().and_then(|w| w.expanded(2).intersection(&r)))
    }
}

/// Voxels a node's meshes read past its own: a coarsest cluster and two voxels.
pub(super) const READ_MARGIN: u32 = (1u32 << MAX_LEVEL) + 2;

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
