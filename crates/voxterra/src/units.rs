//! The one conversion between world units and the voxel grid: [`VoxelScale`].

use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, Region};
use voxterra_narrowphase::parry3d::math::Pose;

/// World units per voxel, and the conversions the facade makes with it: world = voxels × size.
/// Positions and lengths go to voxel units by multiplying by the inverse, one operation
/// everywhere, so every query scales alike. [`Terrain::scale`](crate::Terrain::scale) gives a
/// terrain's.
///
/// ```
/// use voxterra::VoxelScale;
/// use voxterra::core::{Region, VoxelPos};
/// use voxterra::core::nalgebra::Point3;
///
/// let half = VoxelScale::new(0.5);
/// assert_eq!(half.point_to_voxels(&Point3::new(1.0, 2.0, 3.0)), Point3::new(2.0, 4.0, 6.0));
/// let voxel = Region::voxel(VoxelPos::new(4, 0, 0))?;
/// let b = half.region_to_world(&voxel, 0.0);
/// assert_eq!((b.mins.x, b.maxs.x), (2.0, 2.5));
/// # Ok::<(), voxterra::core::CoreError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VoxelScale {
    size: f32,
    inv: f32,
}

impl VoxelScale {
    /// The scale of voxels `size` world units wide (finite and positive: a terrain checks it).
    pub fn new(size: f32) -> Self {
        VoxelScale { size, inv: 1.0 / size }
    }

    /// World units per voxel.
    pub fn size(&self) -> f32 {
        self.size
    }

    /// A world length in voxels.
    pub fn length_to_voxels(&self, l: f32) -> f32 {
        l * self.inv
    }

    /// A length in voxels in world units.
    pub fn length_to_world(&self, l: f32) -> f32 {
        l * self.size
    }

    /// A world point in voxel units.
    pub fn point_to_voxels(&self, p: &Point3<f32>) -> Point3<f32> {
        Point3::from(p.coords * self.inv)
    }

    /// A point in voxel units in world units.
    pub fn point_to_world(&self, p: &Point3<f32>) -> Point3<f32> {
        Point3::from(p.coords * self.size)
    }

    /// A box in voxel units in world units.
    pub fn box_to_world(&self, b: &Aabb) -> Aabb {
        Aabb::new(self.point_to_world(&b.mins), self.point_to_world(&b.maxs))
    }

    /// A pose in world units in voxel units (its translation scaled, its rotation kept).
    pub fn pose_to_voxels(&self, pose: &Pose) -> Pose {
        Pose::from_parts(pose.translation * self.inv, pose.rotation)
    }

    /// The voxels of `region`, grown by `grow` voxels on every side, as a world box.
    pub fn region_to_world(&self, region: &Region, grow: f32) -> Aabb {
        Aabb::new(
            region.min().map(|v| (v as f32 - grow) * self.size),
            region.max().map(|v| (v as f32 + grow) * self.size),
        )
    }
}
