//! The error type shared by core's constructors and traits.

use thiserror::Error;

/// What went wrong in a core constructor or a voxel read/write through core's traits.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum CoreError {
    /// Material ids are 6 bits (the codec's lead byte): 0..=63.
    #[error("material id {0} is out of range: at most 64 materials (0..=63)")]
    MaterialOutOfRange(u8),
    /// Air must have occupancy 0; such a voxel is never stored.
    #[error("air voxel with non-zero occupancy byte {0}")]
    AirWithOccupancy(u8),
    /// A material id the material table does not define.
    #[error("material {0} is not in the material table ({1} entries)")]
    UnknownMaterial(u8, usize),
    /// A region whose min exceeds its max on some axis.
    #[error("inverted region: min {min:?} exceeds max {max:?}")]
    InvertedRegion {
        /// The given minimum corner.
        min: [i32; 3],
        /// The given maximum corner.
        max: [i32; 3],
    },
    /// A region or coordinate that leaves the i32 voxel space, or whose voxel count overflows usize.
    #[error("region too large or out of range: {0}")]
    RegionOverflow(String),
    /// A dense buffer whose length does not match the region it stands for.
    #[error("buffer holds {got} voxels but the region has {expected}")]
    BufferSize {
        /// Voxels in the region.
        expected: usize,
        /// Voxels in the buffer.
        got: usize,
    },
    /// An AABB with a NaN or infinite coordinate, or min > max.
    #[error("invalid AABB: {0}")]
    InvalidAabb(String),
    /// A ray with a NaN or infinite component, or a zero direction.
    #[error("invalid ray: {0}")]
    InvalidRay(String),
    /// A proxy id the broadphase does not hold.
    #[error("unknown proxy {0}")]
    UnknownProxy(u32),
    /// A material table that breaks the table's rules.
    #[error("invalid material table: {0}")]
    InvalidMaterialTable(String),
    /// A structure would grow past its documented size limit (e.g. a broadphase's proxy count).
    #[error("capacity exceeded: {0}")]
    CapacityExceeded(String),
}
