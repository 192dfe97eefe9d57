//! Chunks moved whole between stores ([`StoredChunk`]): what a loader thread builds so that the
//! owner of a store only moves it in.

use crate::StoreError;
use crate::chunk::Chunk;
use crate::store::{VoxelStore, chunk_region};
use voxterra_core::{Region, StoreChunkKey as Key};

/// One chunk taken out of a store, to move into another ([`VoxelStore::take_chunk`],
/// [`VoxelStore::put_chunk`]): what a loader thread builds so the owner of the store only moves it.
#[derive(Debug, Clone)]
pub struct StoredChunk(Chunk);

impl StoredChunk {
    /// Heap bytes the chunk holds (see [`ChunkRef::heap_bytes`](crate::ChunkRef::heap_bytes)).
    pub fn heap_bytes(&self) -> usize {
        let (v, m) = self.0.heap_bytes();
        v + m
    }
}

impl VoxelStore {
    /// Takes chunk `key` out of the store (`None` when not held): a [`StoredChunk`] moves whole
    /// between stores, mips and all, with no copy of its voxels.
    pub fn take_chunk(&mut self, key: Key) -> Option<StoredChunk> {
        self.chunks.remove(&key).map(StoredChunk)
    }

    /// Puts `chunk` in at `key` (one another store's [`take_chunk`](Self::take_chunk) gave),
    /// replacing what the store held there; the chunk's region is its dirty region. Fails only
    /// past the chunk limit.
    pub fn put_chunk(&mut self, key: Key, chunk: StoredChunk) -> Result<Region, StoreError> {
        if !self.chunks.contains_key(&key) && self.chunks.len() >= self.limits().max_chunks {
            let (needed, held) = (self.chunks.len() as u128 + 1, self.chunks.len());
            return Err(StoreError::TooManyChunks { needed, limit: self.limits().max_chunks, held });
        }
        self.chunks.insert(key, chunk.0);
        Ok(chunk_region(key))
    }
}
