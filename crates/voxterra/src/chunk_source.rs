//! Where a paged terrain's chunks come from ([`ChunkSource`]): the world generator alone
//! ([`GeneratorSource`]), or a chunk database with the generator behind it for chunks it never
//! stored ([`DbSource`]).

use crate::chunk_record::{CHUNK_VOXELS, decode_chunk};
use crate::error::{DurableError, PageError};
use std::sync::Arc;
use voxterra_chunk_db::ChunkDb;
use voxterra_core::{MaterialTable, Region, StoreChunkKey, Voxel};
use voxterra_worldgen::{GenParams, generate_region};

/// Where the chunks of a paged terrain ([`Terrain::paged`](crate::Terrain::paged)) come from.
/// Called from the terrain's thread and from its background loader, so it is `Send + Sync`.
pub trait ChunkSource: Send + Sync {
    /// Writes the voxels of storage chunks `keys` into `out`: [`CHUNK_VOXELS`] per key in the
    /// order given, each chunk in (y, z, x) order. The keys of one call share x and z (one column
    /// of chunks, so a generator evaluates the column's noise once).
    fn load(&self, keys: &[StoreChunkKey], out: &mut [Voxel]) -> Result<(), PageError>;

    /// A region holding the world as the source makes it, when it knows one (a generator's
    /// world): what colliders and cameras take as the world's bounds before it is visited.
    fn bounds(&self) -> Option<Region> {
        None
    }
}

/// Chunks made by the world generator: a world of any size that costs only what is visited.
#[derive(Clone, Copy, Debug)]
pub struct GeneratorSource(pub GenParams);

impl ChunkSource for GeneratorSource {
    fn load(&self, keys: &[StoreChunkKey], out: &mut [Voxel]) -> Result<(), PageError> {
        generate_column(&self.0, keys, out)
    }

    fn bounds(&self) -> Option<Region> {
        self.0.region().ok()
    }
}

/// Generates chunks `keys` of one column: each run of consecutive layers in one call (the
/// column's noise once per run), each chunk copied out of it.
fn generate_column(params: &GenParams, keys: &[StoreChunkKey], out: &mut [Voxel]) -> Result<(), PageError> {
    assert_eq!(out.len(), keys.len() * CHUNK_VOXELS, "one chunk of voxels per key");
    let mut start = 0;
    while start < keys.len() {
        let first = keys[start];
        let mut end = start + 1;
        while end < keys.len() && keys[end] == StoreChunkKey::new(first.x, keys[end - 1].y + 1, first.z) {
            end += 1;
        }
        let layers = (end - start) as u32;
        let span = Region::from_min_size(first.to_point() * 32, [32, 32 * layers, 32])
            .map_err(|e| PageError::DamagedChunk { key: first.to_array(), why: e.to_string() })?;
        generate_region(params, &span, &mut out[start * CHUNK_VOXELS..end * CHUNK_VOXELS])?;
        start = end;
    }
    Ok(())
}

/// Chunks from a chunk database; those it never stored come from the world generator when the
/// database names one (else they are Air).
pub struct DbSource<D: ChunkDb> {
    db: Arc<D>,
    generator: Option<GenParams>,
    /// The bit mask of the table's material ids: records naming others are damaged.
    known: u64,
}

impl<D: ChunkDb> std::fmt::Debug for DbSource<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DbSource").field("generator", &self.generator).finish_non_exhaustive()
    }
}

impl<D: ChunkDb> DbSource<D> {
    /// Chunks of `db` (their materials checked against `table`), the rest from `generator`.
    pub fn new(db: Arc<D>, table: &MaterialTable, generator: Option<GenParams>) -> Self {
        DbSource { db, generator, known: table.solid_mask() | table.liquid_mask() | 1 }
    }

    /// The database.
    pub fn db(&self) -> &Arc<D> {
        &self.db
    }
}

impl<D: ChunkDb> ChunkSource for DbSource<D> {
    fn bounds(&self) -> Option<Region> {
        self.generator.and_then(|g| g.region().ok())
    }

    fn load(&self, keys: &[StoreChunkKey], out: &mut [Voxel]) -> Result<(), PageError> {
        let mut never_stored = Vec::new();
        for (&key, dst) in keys.iter().zip(out.chunks_exact_mut(CHUNK_VOXELS)) {
            match self.db.chunk(key)? {
                Some(record) => decode_chunk(key, &record, dst, self.known).map_err(|e| match e {
                    DurableError::DamagedChunk { key, why } => PageError::DamagedChunk { key, why },
                    other => PageError::DamagedChunk { key: key.to_array(), why: other.to_string() },
                })?,
                None => {
                    dst.fill(Voxel::AIR);
                    never_stored.push(key);
                }
            }
        }
        if let (Some(params), false) = (&self.generator, never_stored.is_empty()) {
            let mut made = vec![Voxel::AIR; never_stored.len() * CHUNK_VOXELS];
            generate_column(params, &never_stored, &mut made)?;
            for (k, src) in never_stored.iter().zip(made.chunks_exact(CHUNK_VOXELS)) {
                let i = keys.iter().position(|x| x == k).expect("a key of this call");
                out[i * CHUNK_VOXELS..(i + 1) * CHUNK_VOXELS].copy_from_slice(src);
            }
        }
        Ok(())
    }
}
