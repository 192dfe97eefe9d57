//! The store's error type.

use crate::packed_box::RowFault;
use thiserror::Error;
use voxterra_core::{CoreError, StoreChunkKey};

/// What can go wrong with a store operation.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A region, buffer or voxel that core rejects.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The write could create more chunks than [`StoreLimits::max_chunks`](crate::StoreLimits)
    /// allows; nothing was written.
    #[error("write could need {needed} chunks but the store allows {limit} (now holds {held})")]
    TooManyChunks {
        /// Chunks the store would hold in the worst case after the write.
        needed: u128,
        /// The configured limit.
        limit: usize,
        /// Chunks held now.
        held: usize,
    },
    /// A level of detail past the coarsest a view offers.
    #[error("level {level} is past the coarsest level {max}")]
    Level {
        /// The level asked for.
        level: u32,
        /// The coarsest level.
        max: u32,
    },
}

/// A store invariant that does not hold, from [`VoxelStore::validate`](crate::VoxelStore::validate).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum InvalidStore {
    /// A row-packed box (level 0 or a mip) is malformed.
    #[error("chunk {chunk:?}, level {level}: {fault}")]
    Rows {
        /// The chunk.
        chunk: StoreChunkKey,
        /// 0 for the voxels, 1..=3 for the mips.
        level: u32,
        /// What is wrong with it.
        fault: RowFault,
    },
    /// Chunks that become all Air are dropped, so none is held.
    #[error("chunk {chunk:?} is all air but held")]
    AirChunkHeld {
        /// The chunk.
        chunk: StoreChunkKey,
    },
    /// A mip voxel differs from the downsample of the 8 voxels under it.
    #[error("chunk {chunk:?}: mip {level} voxel {at:?} is stale")]
    StaleMip {
        /// The chunk.
        chunk: StoreChunkKey,
        /// The mip level (1..=3).
        level: u32,
        /// Local coordinates in the mip.
        at: [usize; 3],
    },
    /// A mip voxel is Air exactly when every voxel under it is Air.
    #[error("chunk {chunk:?}: mip {level} voxel {at:?} breaks the air guarantee")]
    AirGuarantee {
        /// The chunk.
        chunk: StoreChunkKey,
        /// The mip level (1..=3).
        level: u32,
        /// Local coordinates in the mip.
        at: [usize; 3],
    },
}
