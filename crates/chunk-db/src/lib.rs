//! # voxterra-chunk-db
//!
//! A world kept as a database of chunks instead of one file written whole: each 32³ chunk's record
//! (opaque bytes here; the facade stores the codec's per-chunk block under a CRC-32) by its key,
//! the world's metadata (material table, voxel size, last durable edit) beside them, and every
//! change a transaction that is on disk when [`Durability::Immediate`] says so. Use it for
//! servers whose worlds must survive a crash edit by edit, and for worlds too large to load
//! whole; use the codec's terrain files to hand a world around.
//!
//! Main types: the [`ChunkDb`] trait (what a terrain needs of its storage, so a networked store
//! can stand behind it), [`RedbChunkDb`] (the embedded one, on redb: pure Rust, ACID,
//! copy-on-write B-trees with checksummed pages, one writer at a time), [`Batch`].
//! `voxterra::DurableTerrain` keeps a terrain in one.
//!
//! ```
//! use voxterra_chunk_db::{Batch, ChunkDb, Durability, RedbChunkDb};
//! use voxterra_core::StoreChunkKey;
//!
//! let dir = tempfile::tempdir()?;
//! let mut db = RedbChunkDb::create(dir.path().join("world.redb"))?;
//! let key = StoreChunkKey::new(1, 0, -2);
//! let mut batch = Batch::default();
//! batch.chunks.push((key, b"a chunk's record".to_vec()));
//! batch.meta.push(("sequence".into(), 7u64.to_le_bytes().to_vec()));
//! db.commit(batch, Durability::Immediate)?;
//!
//! assert_eq!(db.chunk(key)?, Some(b"a chunk's record".to_vec()));
//! assert_eq!(db.meta("sequence")?, Some(7u64.to_le_bytes().to_vec()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![forbid(unsafe_code)]

mod error;
mod redb_db;

pub use error::ChunkDbError;
pub use redb_db::RedbChunkDb;

use voxterra_core::StoreChunkKey;

/// When a commit is on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// On disk when [`ChunkDb::commit`] returns (an fsync).
    Immediate,
    /// Visible to reads at once, on disk with the next immediate commit (a crash before then loses
    /// it, whole: never part of a batch).
    Deferred,
}

/// Chunks and metadata to write in one transaction: all of it or none.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// Chunk records to store, replacing any stored under the same key.
    pub chunks: Vec<(StoreChunkKey, Vec<u8>)>,
    /// Chunks to remove (they read as never stored).
    pub removed: Vec<StoreChunkKey>,
    /// Metadata entries to set.
    pub meta: Vec<(String, Vec<u8>)>,
    /// Metadata entries to remove (they read as never set).
    pub removed_meta: Vec<String>,
}

/// What a terrain needs of the storage under it: chunk records by key, metadata by name, and
/// atomic commits. Implemented by [`RedbChunkDb`]; a networked store can stand behind the same
/// trait.
pub trait ChunkDb: Send + Sync {
    /// The record of chunk `key`, `None` when it was never stored.
    fn chunk(&self, key: StoreChunkKey) -> Result<Option<Vec<u8>>, ChunkDbError>;
    /// Every stored chunk's key, sorted by (y, z, x).
    fn keys(&self) -> Result<Vec<StoreChunkKey>, ChunkDbError>;
    /// The metadata entry `name`.
    fn meta(&self, name: &str) -> Result<Option<Vec<u8>>, ChunkDbError>;
    /// Writes `batch` in one transaction: after a crash, either all of it or none of it is there.
    /// Reads from other threads go on meanwhile and see the batch whole once it returns.
    fn commit(&self, batch: Batch, durability: Durability) -> Result<(), ChunkDbError>;
}

/// A database behind a pointer (a boxed trait object, or one shared with a loader thread) is one.
macro_rules! forward_chunk_db {
    ($($ptr:ident)::+) => {
        impl<T: ChunkDb + ?Sized> ChunkDb for $($ptr)::+<T> {
            fn chunk(&self, key: StoreChunkKey) -> Result<Option<Vec<u8>>, ChunkDbError> {
                (**self).chunk(key)
            }
            fn keys(&self) -> Result<Vec<StoreChunkKey>, ChunkDbError> {
                (**self).keys()
            }
            fn meta(&self, name: &str) -> Result<Option<Vec<u8>>, ChunkDbError> {
                (**self).meta(name)
            }
            fn commit(&self, batch: Batch, durability: Durability) -> Result<(), ChunkDbError> {
                (**self).commit(batch, durability)
            }
        }
    };
}

forward_chunk_db!(Box);
forward_chunk_db!(std::sync::Arc);
