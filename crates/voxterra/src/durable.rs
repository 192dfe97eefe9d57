//! [`DurableTerrain`]: a terrain kept in a chunk database, each change committed as it is made.

use crate::chunk_record::{CHUNK_VOXELS, decode_chunk, encode_chunk};
use crate::config::TerrainConfig;
use crate::error::DurableError;
use crate::terrain::{EditReport, Terrain};
use crate::{Brush, LoadError};
use std::collections::BTreeSet;
use voxterra_chunk_db::{Batch, ChunkDb, Durability};
use voxterra_core::{MaterialTable, StoreChunkKey, Voxel, VoxelRead};
use voxterra_voxel_store::VoxelStore;

/// Metadata: the terrain's sequence as of the last commit (u64, little-endian).
pub const META_SEQUENCE: &str = "sequence";
/// Metadata: the material table (JSON).
pub const META_MATERIALS: &str = "materials";
/// Metadata: the voxel size (f32, little-endian).
pub const META_VOXEL_SIZE: &str = "voxel_size";

/// A terrain kept in a chunk database ([`voxterra_chunk_db::RedbChunkDb`], or any [`ChunkDb`]):
/// every edit, undo, redo and applied delta made through it is committed before it returns, so
/// what it acknowledged survives a crash. With [`Durability::Deferred`] commits reach the disk at
/// the next [`flush`](Self::flush) (group commit: a crash loses the edits since, whole).
///
/// The world is held whole in memory; the database holds what it is made of (chunk records in
/// the codec's block format, the material table, the voxel size, the sequence of the last
/// commit). Undo history is not kept across a restart.
pub struct DurableTerrain<D: ChunkDb> {
    terrain: Terrain,
    db: D,
    /// The terrain's sequence as of the last commit.
    committed: u64,
    durability: Durability,
}

impl<D: ChunkDb> std::fmt::Debug for DurableTerrain<D> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurableTerrain")
            .field("committed", &self.committed)
            .field("durability", &self.durability)
            .finish_non_exhaustive()
    }
}

fn meta_u64(db: &impl ChunkDb, name: &'static str) -> Result<u64, DurableError> {
    let v = db.meta(name)?.ok_or(DurableError::Meta(name))?;
    Ok(u64::from_le_bytes(v.as_slice().try_into().map_err(|_| DurableError::Meta(name))?))
}

impl<D: ChunkDb> DurableTerrain<D> {
    /// Writes `terrain` whole into `db` (which must hold no chunks) and keeps it there.
    pub fn create(terrain: Terrain, mut db: D, durability: Durability) -> Result<Self, DurableError> {
        write_world(
            terrain.store(),
            terrain.materials(),
            terrain.voxel_size(),
            terrain.sequence(),
            &mut db,
            |_, _| {},
        )?;
        Ok(DurableTerrain { committed: terrain.sequence(), terrain, db, durability })
    }

    /// The terrain kept in `db`, loaded whole (`config`'s voxel size gives way to the stored one),
    /// at the sequence of its last commit.
    pub fn open(db: D, config: TerrainConfig, durability: Durability) -> Result<Self, DurableError> {
        let table: MaterialTable =
            serde_json::from_slice(&db.meta(META_MATERIALS)?.ok_or(DurableError::Meta(META_MATERIALS))?)
                .map_err(|_| DurableError::Meta(META_MATERIALS))?;
        let size = db.meta(META_VOXEL_SIZE)?.ok_or(DurableError::Meta(META_VOXEL_SIZE))?;
        let voxel_size =
            f32::from_le_bytes(size.as_slice().try_into().map_err(|_| DurableError::Meta(META_VOXEL_SIZE))?);
        let sequence = meta_u64(&db, META_SEQUENCE)?;
        let known = table.solid_mask() | table.liquid_mask() | 1;
        let mut store = VoxelStore::new();
        let mut buf = vec![Voxel::AIR; CHUNK_VOXELS];
        for key in db.keys()? {
            let record = db.chunk(key)?.ok_or(DurableError::Meta("chunks"))?;
            decode_chunk(key, &record, &mut buf, known)?;
            let region = key.region().map_err(|_| DurableError::Meta("chunks"))?;
            store.write_box(&region, &buf).map_err(LoadError::from)?;
        }
        let mut terrain = Terrain::from_store(store, table, TerrainConfig { voxel_size, ..config })?;
        terrain.set_sequence(sequence);
        Ok(DurableTerrain { terrain, db, committed: sequence, durability })
    }

    /// The terrain, to read and query.
    pub fn terrain(&self) -> &Terrain {
        &self.terrain
    }

    /// The database.
    pub fn db(&self) -> &D {
        &self.db
    }

    /// The terrain's sequence as of the last commit.
    pub fn committed(&self) -> u64 {
        self.committed
    }

    /// How edits are committed from now on.
    pub fn set_durability(&mut self, durability: Durability) {
        self.durability = durability;
    }

    /// [`Terrain::apply_brush`], committed.
    pub fn apply_brush(&mut self, brush: &Brush) -> Result<EditReport, DurableError> {
        self.apply_brush_with(brush, Vec::new())
    }

    /// [`apply_brush`](Self::apply_brush), committing `meta` entries in the same transaction.
    pub fn apply_brush_with(
        &mut self,
        brush: &Brush,
        meta: Vec<(String, Vec<u8>)>,
    ) -> Result<EditReport, DurableError> {
        let report = self.terrain.apply_brush(brush)?;
        self.commit(meta, self.durability)?;
        Ok(report)
    }

    /// [`Terrain::undo`], committed.
    pub fn undo(&mut self) -> Result<EditReport, DurableError> {
        let report = self.terrain.undo()?;
        self.commit(Vec::new(), self.durability)?;
        Ok(report)
    }

    /// [`Terrain::redo`], committed.
    pub fn redo(&mut self) -> Result<EditReport, DurableError> {
        let report = self.terrain.redo()?;
        self.commit(Vec::new(), self.durability)?;
        Ok(report)
    }

    /// [`Terrain::apply_delta`], committed.
    pub fn apply_delta(&mut self, bytes: &[u8]) -> Result<(EditReport, u64), DurableError> {
        let applied = self.terrain.apply_delta(bytes)?;
        self.commit(Vec::new(), self.durability)?;
        Ok(applied)
    }

    /// Commits what changed since the last commit at once and on disk (and whatever deferred
    /// commits came before it).
    pub fn flush(&mut self) -> Result<(), DurableError> {
        self.commit(Vec::new(), Durability::Immediate)
    }

    /// Gives the terrain and the database back.
    pub fn into_parts(self) -> (Terrain, D) {
        (self.terrain, self.db)
    }

    /// Writes the chunks edits touched since the last commit (every chunk, when the delta log no
    /// longer reaches back that far), the sequence and `meta`, in one transaction. On failure
    /// nothing is acknowledged: the next commit writes it again.
    fn commit(&mut self, meta: Vec<(String, Vec<u8>)>, durability: Durability) -> Result<(), DurableError> {
        let now = self.terrain.sequence();
        let log = &self.terrain.log;
        let complete = now == self.committed
            || log.since(self.committed).next().is_some_and(|e| e.seq == self.committed);
        let keys: BTreeSet<StoreChunkKey> = if complete {
            log.since(self.committed)
                .filter_map(|e| StoreChunkKey::range(&e.region))
                .flat_map(|r| r.iter())
                .collect()
        } else {
            let mut all: BTreeSet<_> = self.terrain.store().chunk_keys().into_iter().collect();
            all.extend(self.db.keys()?);
            all
        };
        let mut batch = Batch { meta, ..Batch::default() };
        let mut buf = vec![Voxel::AIR; CHUNK_VOXELS];
        for key in keys {
            match chunk_record(self.terrain.store(), key, &mut buf) {
                Some(record) => batch.chunks.push((key, record)),
                None => batch.removed.push(key),
            }
        }
        batch.meta.push((META_SEQUENCE.into(), now.to_le_bytes().to_vec()));
        self.db.commit(batch, durability)?;
        self.committed = now;
        Ok(())
    }
}

/// Writes a world into `db`, which must hold no chunks: its chunks in batches, then its material
/// table, voxel size and `sequence` in a last, immediate commit; `progress(done, total)` after each
/// batch. A database cut short before the last commit has no sequence entry, and opening it says so.
/// Returns the chunks written.
pub fn write_world(
    store: &VoxelStore,
    table: &MaterialTable,
    voxel_size: f32,
    sequence: u64,
    db: &mut impl ChunkDb,
    mut progress: impl FnMut(u64, u64),
) -> Result<usize, DurableError> {
    /// Chunks a batch: a few megabytes of records.
    const BATCH: usize = 2048;
    if !db.keys()?.is_empty() {
        return Err(DurableError::NotEmpty);
    }
    let keys = store.chunk_keys();
    let mut buf = vec![Voxel::AIR; CHUNK_VOXELS];
    let mut written = 0;
    for (i, part) in keys.chunks(BATCH).enumerate() {
        let mut batch = Batch::default();
        for &key in part {
            if let Some(record) = chunk_record(store, key, &mut buf) {
                batch.chunks.push((key, record));
            }
        }
        written += batch.chunks.len();
        db.commit(batch, Durability::Deferred)?;
        progress(((i + 1) * BATCH).min(keys.len()) as u64, keys.len() as u64);
    }
    let mut batch = Batch::default();
    let table = serde_json::to_vec(table).expect("a material table serializes");
    batch.meta.push((META_MATERIALS.into(), table));
    batch.meta.push((META_VOXEL_SIZE.into(), voxel_size.to_le_bytes().to_vec()));
    batch.meta.push((META_SEQUENCE.into(), sequence.to_le_bytes().to_vec()));
    db.commit(batch, Durability::Immediate)?;
    Ok(written)
}

/// The record of chunk `key` from `store`, `None` when it is all air.
fn chunk_record(store: &VoxelStore, key: StoreChunkKey, buf: &mut [Voxel]) -> Option<Vec<u8>> {
    let region = key.region().ok()?;
    buf.fill(Voxel::AIR);
    store.read_box(&region, buf).ok()?;
    if buf.iter().all(|v| v.is_air()) { None } else { Some(encode_chunk(buf)) }
}
