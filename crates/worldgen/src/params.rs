//! What world to make: seed, size, placement, and the checks that keep a request within memory.

use voxterra_core::{Region, StoreChunkKey, VoxelPos};

/// The parameters of a world. Same parameters, same voxels, on every machine and thread count.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct GenParams {
    /// Seeds every noise field.
    pub seed: u64,
    /// Voxels along X, Y (up), Z. Any size from one voxel up is made: a world under two voxels
    /// tall is one layer of ground.
    pub size: [u32; 3],
    /// The world's minimum corner.
    pub origin: VoxelPos,
    /// Refuse worlds of more voxels than this (a guard against sizes that exhaust memory).
    pub max_voxels: u64,
    /// Refuse worlds touching more 32³ storage chunks than this: a thin world of few voxels can
    /// touch millions of chunks, each with its own bookkeeping.
    pub max_chunks: u64,
}

impl GenParams {
    /// The default world's size: 512 × 128 × 512 voxels (33.5 M), a few seconds on 2 cores.
    pub const DEFAULT_SIZE: [u32; 3] = [512, 128, 512];
    /// The default guard: 2^34 voxels (about 17 G; ~7 GB at the store's ~0.4 bytes per voxel).
    pub const DEFAULT_MAX_VOXELS: u64 = 1 << 34;
    /// The default chunk guard: 2^19 chunks (a full 2^34-voxel world; a few GB of bookkeeping).
    pub const DEFAULT_MAX_CHUNKS: u64 = 1 << 19;

    /// A world of `size` with `seed` at the origin.
    pub fn new(seed: u64, size: [u32; 3]) -> Self {
        GenParams {
            seed,
            size,
            origin: VoxelPos::origin(),
            max_voxels: Self::DEFAULT_MAX_VOXELS,
            max_chunks: Self::DEFAULT_MAX_CHUNKS,
        }
    }

    /// A smaller world for tests and examples: 96 × 64 × 96.
    pub fn small(seed: u64) -> Self {
        GenParams::new(seed, [96, 64, 96])
    }

    /// The region the world fills, checked: no zero or oversized dimension, inside the i32 space.
    pub fn region(&self) -> Result<Region, GenError> {
        if self.size.contains(&0) {
            return Err(GenError::EmptySize(self.size));
        }
        let voxels = self.size.iter().map(|&s| s as u128).product::<u128>();
        if voxels > self.max_voxels as u128 {
            return Err(GenError::TooLarge { size: self.size, voxels, limit: self.max_voxels });
        }
        let region = Region::from_min_size(self.origin, self.size).map_err(|source| GenError::Placement {
            origin: self.origin,
            size: self.size,
            source,
        })?;
        let chunks = StoreChunkKey::range(&region).map_or(0, |r| r.count());
        if chunks > self.max_chunks as u128 {
            return Err(GenError::TooManyChunks { size: self.size, chunks, limit: self.max_chunks });
        }
        Ok(region)
    }
}

impl Default for GenParams {
    /// The default world: seed 1, [`GenParams::DEFAULT_SIZE`].
    fn default() -> Self {
        GenParams::new(1, Self::DEFAULT_SIZE)
    }
}

/// Why a world could not be made.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenError<E: std::error::Error = std::convert::Infallible> {
    /// Some dimension is zero.
    #[error("world size {0:?} has a zero dimension")]
    EmptySize([u32; 3]),
    /// More voxels than the guard allows.
    #[error("world size {size:?} is {voxels} voxels, over the limit of {limit}")]
    TooLarge {
        /// Requested size.
        size: [u32; 3],
        /// Its voxel count.
        voxels: u128,
        /// The limit in force.
        limit: u64,
    },
    /// The world touches more storage chunks than the guard allows.
    #[error("world size {size:?} touches {chunks} storage chunks, over the limit of {limit}")]
    TooManyChunks {
        /// Requested size.
        size: [u32; 3],
        /// The 32³ chunks it touches.
        chunks: u128,
        /// The limit in force.
        limit: u64,
    },
    /// Origin plus size leaves the i32 coordinate space.
    #[error("a world of size {size:?} at {origin:?} leaves the voxel space: {source}")]
    Placement {
        /// Requested origin.
        origin: voxterra_core::VoxelPos,
        /// Requested size.
        size: [u32; 3],
        /// What the core refused.
        #[source]
        source: voxterra_core::CoreError,
    },
    /// The destination refused a write.
    #[error("writing the world failed: {0}")]
    Write(#[source] E),
}

impl GenError {
    /// Carries a parameter error over to any destination error type.
    pub fn widen<E: std::error::Error>(self) -> GenError<E> {
        match self {
            GenError::EmptySize(s) => GenError::EmptySize(s),
            GenError::TooLarge { size, voxels, limit } => GenError::TooLarge { size, voxels, limit },
            GenError::TooManyChunks { size, chunks, limit } => {
                GenError::TooManyChunks { size, chunks, limit }
            }
            GenError::Placement { origin, size, source } => GenError::Placement { origin, size, source },
            GenError::Write(e) => match e {},
        }
    }
}
