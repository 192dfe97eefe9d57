//! The error type shared by core's constructors and voxel traits.

use crate::Region;
use thiserror::Error;

/// What went wrong in a core constructor or a voxel read/write through core's traits.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum CoreError {
    /// Material ids are 6 bits (the codec's lead byte): 0..=63.
    #[error("material id {0} is out of range: at most 64 materials (0..=63)")]
    MaterialOutOfRange(u8),
    /// Air must have occupancy 0; such a voxel is never stored.
    #[error("air voxel with non-zero occupancy byte {0}")]
    AirWithOccupancy(u8),
    /// A material id the material table does not define.
    #[error("material {id} is not in the material table ({table_len} entries)")]
    UnknownMaterial {
        /// The material id.
        id: u8,
        /// Entries in the table.
        table_len: usize,
    },
    /// A region whose min exceeds its max on some axis.
    #[error("inverted region: min {min:?} exceeds max {max:?}")]
    InvertedRegion {
        /// The given minimum corner.
        min: [i32; 3],
        /// The given maximum corner.
        max: [i32; 3],
    },
    /// A coordinate, size or count past what its type can hold: a region leaving the i32 voxel
    /// space, a voxel count past usize, a row longer than u32.
    #[error("{what} {value} is past its limit {limit}")]
    RegionOverflow {
        /// What overflowed ("region end", "chunk key", "voxel count", "row length").
        what: &'static str,
        /// The value asked for.
        value: i128,
        /// The largest (or, for negative values, smallest) value allowed.
        limit: i128,
    },
    /// A dense buffer asked for more voxels than the caller's limit.
    #[error("{voxels} voxels exceed the limit of {limit}")]
    TooManyVoxels {
        /// Voxels asked for.
        voxels: usize,
        /// The limit in force.
        limit: usize,
    },
    /// A read or write outside the voxels a reader or writer holds.
    #[error("region {region:?} is not inside {bounds:?}")]
    OutsideRegion {
        /// The region asked for.
        region: Region,
        /// The region held.
        bounds: Region,
    },
    /// A dense buffer whose length does not match the region it stands for.
    #[error("buffer holds {got} voxels but the region has {expected}")]
    BufferSize {
        /// Voxels in the region.
        expected: usize,
        /// Voxels in the buffer.
        got: usize,
    },
    /// An AABB with a NaN or infinite coordinate, or `mins > maxs` on some axis.
    #[error("invalid AABB {mins:?}..{maxs:?}: NaN, infinite or inverted")]
    InvalidAabb {
        /// The given minimum corner.
        mins: [f32; 3],
        /// The given maximum corner.
        maxs: [f32; 3],
    },
    /// A ray with a NaN or infinite component, or a zero direction.
    #[error("invalid ray from {origin:?} along {dir:?}: non-finite or zero direction")]
    InvalidRay {
        /// The given origin.
        origin: [f32; 3],
        /// The given direction.
        dir: [f32; 3],
    },
    /// A material table that breaks one of the table's rules.
    #[error("invalid material table: entry {entry} breaks the rule \"{rule}\"")]
    InvalidMaterialTable {
        /// The entry that breaks it (the entry count for the count rule).
        entry: usize,
        /// The rule, as the table's documentation states it.
        rule: &'static str,
    },
}
