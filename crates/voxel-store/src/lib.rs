//! # voxterra-voxel-store
//!
//! Sparse, unbounded voxel storage, as in the Roblox smooth-terrain article: a hash map of 32³
//! chunks, each stored *row-packed*. Every X row of a chunk has a 2-byte header: a row that is one
//! material at default occupancy (the common case: air, deep rock, water) is the header alone; any
//! other row is *allocated* and its 32 voxels live in the chunk's cell array. Reads stay as fast as
//! a dense array — a row read is a header load and a slice, packed rows come from static pre-filled
//! rows — while memory drops to a fraction of 2 bytes per voxel.
//!
//! Use it when you need a big, editable voxel world in memory with fast region reads; every other
//! voxterra crate reads voxels from it through [`voxterra_core::VoxelRead`].
//!
//! - [`VoxelStore`]: get/set, [`rows`](VoxelStore::rows) (zero-copy X rows of a region),
//!   [`read_box`](voxterra_core::VoxelRead::read_box) into a dense buffer,
//!   [`write_box`](VoxelStore::write_box), [`fill`](VoxelStore::fill), [`brush`](VoxelStore::brush).
//!   Every write returns its dirty region and keeps the mips current; all-air chunks are dropped.
//! - [`ChunkRef`]: one chunk's rows, packed-row materials and mips (16³, 8³, 4³; a mip voxel is
//!   Air exactly when everything under it is Air).
//! - [`LevelView`] ([`VoxelStore::level`]): the store at a level of detail, one voxel per `2^k`
//!   cube (the mips, and merged from them up to one voxel a chunk), for meshing far terrain.
//! - [`StoreStats`]: bytes, chunks, allocated rows, bytes per non-empty voxel.
//!
//! Writes are two-stage, as in the article: mark the rows a write touches (keeping them packed
//! when the new content allows), reallocate the chunk's cells once, then write.
//!
//! ```
//! use voxterra_core::{materials, Region, Voxel, VoxelPos, VoxelRead};
//! use voxterra_voxel_store::VoxelStore;
//!
//! let mut store = VoxelStore::new();
//! let ground = Region::from_min_size(VoxelPos::new(-32, 0, -32), [64, 10, 64])?;
//! store.fill(&ground, Voxel::full(materials::ROCK))?;
//! let dirty = store.set(VoxelPos::new(3, 9, 3), Voxel::new(materials::GRASS, 127))?;
//! assert_eq!(dirty, Region::voxel(VoxelPos::new(3, 9, 3)).ok());
//! assert_eq!(store.get(VoxelPos::new(3, 9, 3)).occupancy(), 0.5);
//!
//! // Zero-copy rows: each segment is one chunk's part of an X row.
//! let solid: usize = store.rows(&ground).map(|(_, row)| row.iter().filter(|v| !v.is_air()).count()).sum();
//! assert_eq!(solid, 64 * 10 * 64);
//! let stats = store.stats();
//! // Whole rows of one material are packed: a tenth of a dense array, headers and mips included.
//! assert!(stats.total_bytes < 64 * 10 * 64 * 2 / 5);
//! # Ok::<(), voxterra_voxel_store::StoreError>(())
//! ```

#![forbid(unsafe_code)]

mod chunk;
mod error;
mod levels;
mod mips;
mod packed_box;
mod stats;
mod store;
mod stored;

pub use chunk::{CHUNK_SHIFT, CHUNK_SIZE, ChunkRef};
pub use error::{InvalidStore, StoreError};
pub use levels::{LevelView, MAX_LEVEL};
pub use packed_box::RowFault;
pub use stats::StoreStats;
pub use store::{Rows, StoreLimits, VoxelStore};
pub use stored::StoredChunk;
