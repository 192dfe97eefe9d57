//! [`DurableTerrain`]: a terrain kept in a chunk database, each change committed as it is made.

use crate::chunk_record::{CHUNK_VOXELS, decode_chunk, encode_chunk};
use crate::config::TerrainConfig;
use crate::delta_log::LoggedEdit;
use crate::error::{DurableError, PageError};
use crate::paging::{DbSource, PageReport};
use crate::terrain::{EditReport, Terrain};
use crate::{Brush, LoadError};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use voxterra_chunk_db::{Batch, ChunkDb, Durability};
use voxterra_codec::delta::decode_delta;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, MaterialTable, StoreChunkKey, Voxel, VoxelRead};
use voxterra_voxel_store::VoxelStore;
use voxterra_worldgen::GenParams;

/// Metadata: the terrain's sequence as of the last commit (u64, little-endian).
pub const META_SEQUENCE: &str = "sequence";
/// Metadata: the material table (JSON).
pub const META_MATERIALS: &str = "materials";
/// Metadata: the voxel size (f32, little-endian).
pub const META_VOXEL_SIZE: &str = "voxel_size";
/// Metadata: the number of the oldest edit whose delta the database keeps (u64, little-endian);
/// the deltas from it up to the sequence are entries `delta/<number>`, each in the delta wire
/// format, so that after a restart [`Terrain::edits_since`] serves what it served before.
pub const META_DELTAS_FROM: &str = "deltas_from";

fn delta_name(seq: u64) -> String {
    format!("delta/{seq}")
}

/// Metadata: the world generator's parameters, in a world whose unstored chunks are generated
/// (seed u64, size 3 × u32, origin 3 × i32, max voxels u64, max chunks u64; little-endian).
pub const META_GENERATOR: &str = "generator";

fn encode_generator(p: &GenParams) -> Vec<u8> {
    let mut out = p.seed.to_le_bytes().to_vec();
    p.size.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    [p.origin.x, p.origin.y, p.origin.z].iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
    out.extend_from_slice(&p.max_voxels.to_le_bytes());
    out.extend_from_slice(&p.max_chunks.to_le_bytes());
    out
}

fn decode_generator(b: &[u8]) -> Option<GenParams> {
    if b.len() != 48 {
        return None;
    }
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let mut p = GenParams::new(u64_at(0), [u32_at(8), u32_at(12), u32_at(16)]);
    p.origin = Point3::new(u32_at(20) as i32, u32_at(24) as i32, u32_at(28) as i32);
    p.max_voxels = u64_at(32);
    p.max_chunks = u64_at(40);
    p.region().ok().map(|_| p)
}

/// The world generator a database names, if any; malformed is an error.
pub fn stored_generator(db: &impl ChunkDb) -> Result<Option<GenParams>, DurableError> {
    db.meta(META_GENERATOR)?
        .map(|b| decode_generator(&b).ok_or(DurableError::Meta(META_GENERATOR)))
        .transpose()
}

/// A terrain kept in a chunk database ([`voxterra_chunk_db::RedbChunkDb`], or any [`ChunkDb`]):
/// every edit, undo, redo and applied delta made through it is committed before it returns, so
/// what it acknowledged survives a crash. With [`Durability::Deferred`] commits reach the disk at
/// the next [`flush`](Self::flush) (group commit: a crash loses the edits since, whole).
///
/// [`open`](Self::open) holds the world whole in memory; [`open_paged`](Self::open_paged) pages
/// it under [`TerrainConfig::resident_bytes`] (see [`crate::paging`]): chunks edits wrote stay
/// until committed. The database holds what the world is made of: chunk records in the codec's
/// block format, the material table, the voxel size, the sequence of the last commit, and for a
/// generated world ([`create_generated`](Self::create_generated)) the generator's parameters:
/// chunks never stored are generated (a chunk an edit emptied is stored as Air). The delta log
/// is kept beside them ([`META_DELTAS_FROM`]), so after a restart [`Terrain::edits_since`] serves
/// what it served before and replicas resume; undo history is not kept across a restart.
pub struct DurableTerrain<D: ChunkDb> {
    terrain: Terrain,
    db: Arc<D>,
    /// The terrain's sequence as of the last commit.
    committed: u64,
    durability: Durability,
    /// The generator behind unstored chunks.
    generator: Option<GenParams>,
    /// The oldest edit whose delta the database keeps.
    deltas_from: u64,
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

impl<D: ChunkDb + 'static> DurableTerrain<D> {
    /// Writes `terrain` whole into `db` (which must hold no chunks) and keeps it there.
    pub fn create(terrain: Terrain, db: D, durability: Durability) -> Result<Self, DurableError> {
        write_world(
            terrain.store(),
            terrain.materials(),
            terrain.voxel_size(),
            terrain.sequence(),
            &db,
            |_, _| {},
        )?;
        let seq = terrain.sequence();
        Ok(DurableTerrain {
            committed: seq,
            terrain,
            db: Arc::new(db),
            durability,
            generator: None,
            deltas_from: seq,
        })
    }

    /// Makes the world of `params` in `db` (which must hold no chunks) without writing a chunk:
    /// the generator's parameters, the default materials and `config`'s voxel size, then opens it
    /// paged ([`open_paged`](Self::open_paged)). A world of any size is made at once.
    pub fn create_generated(
        params: &GenParams,
        db: D,
        config: TerrainConfig,
        durability: Durability,
    ) -> Result<Self, DurableError> {
        params.region().map_err(|e| LoadError::Generate(e.widen()))?;
        if !db.keys()?.is_empty() {
            return Err(DurableError::NotEmpty);
        }
        let mut batch = Batch::default();
        let table = serde_json::to_vec(&MaterialTable::default()).expect("a material table serializes");
        batch.meta.push((META_MATERIALS.into(), table));
        batch.meta.push((META_VOXEL_SIZE.into(), config.voxel_size.to_le_bytes().to_vec()));
        batch.meta.push((META_GENERATOR.into(), encode_generator(params)));
        batch.meta.push((META_SEQUENCE.into(), 0u64.to_le_bytes().to_vec()));
        db.commit(batch, Durability::Immediate)?;
        Self::open_paged(db, config, durability)
    }

    /// The terrain kept in `db`, loaded whole (`config`'s voxel size gives way to the stored one),
    /// at the sequence of its last commit.
    pub fn open(db: D, config: TerrainConfig, durability: Durability) -> Result<Self, DurableError> {
        let (table, voxel_size, sequence) = read_meta(&db)?;
        let generator = stored_generator(&db)?;
        let known = table.solid_mask() | table.liquid_mask() | 1;
        let mut store = VoxelStore::new();
        if let Some(params) = &generator {
            voxterra_worldgen::generate(params, &mut store, |_, _| {}).map_err(LoadError::from)?;
        }
        let mut buf = vec![Voxel::AIR; CHUNK_VOXELS];
        for key in db.keys()? {
            let record = db.chunk(key)?.ok_or(DurableError::Meta("chunks"))?;
            decode_chunk(key, &record, &mut buf, known)?;
            let region = key.region().map_err(|_| DurableError::Meta("chunks"))?;
            store.write_box(&region, &buf).map_err(LoadError::from)?;
        }
        let mut terrain = Terrain::from_store(store, table, TerrainConfig { voxel_size, ..config })?;
        let deltas_from = restore_deltas(&db, &mut terrain, sequence)?;
        Ok(DurableTerrain {
            terrain,
            db: Arc::new(db),
            committed: sequence,
            durability,
            generator,
            deltas_from,
        })
    }

    /// The terrain kept in `db`, paged ([`Terrain::paged`]): nothing is read but its metadata
    /// until chunks are used, so a world of any size opens at once (`config`'s voxel size gives
    /// way to the stored one).
    pub fn open_paged(db: D, config: TerrainConfig, durability: Durability) -> Result<Self, DurableError> {
        let (table, voxel_size, sequence) = read_meta(&db)?;
        let generator = stored_generator(&db)?;
        let db = Arc::new(db);
        let source = Arc::new(DbSource::new(Arc::clone(&db), &table, generator));
        let mut terrain = Terrain::paged(source, table, TerrainConfig { voxel_size, ..config })?;
        let deltas_from = restore_deltas(db.as_ref(), &mut terrain, sequence)?;
        Ok(DurableTerrain { terrain, db, committed: sequence, durability, generator, deltas_from })
    }

    /// [`Terrain::page_in`]: the chunks `boxes` need, now.
    pub fn page_in(&mut self, boxes: &[Aabb]) -> Result<PageReport, PageError> {
        self.terrain.page_in(boxes)
    }

    /// [`Terrain::page`]: the chunks `boxes` need, ahead, off this thread.
    pub fn page(&mut self, boxes: &[Aabb], max_time: Duration) -> Result<PageReport, PageError> {
        self.terrain.page(boxes, max_time)
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

    /// Gives the terrain and the database back (a paged terrain reads its chunks from the same
    /// database, hence the shared handle).
    pub fn into_parts(self) -> (Terrain, Arc<D>) {
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
        let keys: BTreeSet<StoreChunkKey> = if self.terrain.is_paged() {
            // Exactly the chunks written since the last commit: they stay in memory until then.
            self.terrain.paged_dirty().into_iter().collect()
        } else if complete {
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
                // Over a generator, an emptied chunk is stored as Air, or it would come back.
                None if self.generator.is_some() => {
                    buf.fill(Voxel::AIR);
                    batch.chunks.push((key, encode_chunk(&buf)));
                }
                None => batch.removed.push(key),
            }
        }
        // The deltas: those since the last commit (all the log holds when it no longer reaches
        // back that far), and none older than the log keeps.
        let oldest = self.terrain.log.oldest();
        let from = if oldest <= self.committed { self.deltas_from.max(oldest) } else { oldest };
        let stored_to = if oldest <= self.committed { self.committed } else { self.deltas_from };
        for e in self.terrain.log.since(from.max(stored_to)) {
            batch.meta.push((delta_name(e.seq), e.to_bytes()));
        }
        let gone_to = if oldest <= self.committed { from } else { self.committed };
        batch.removed_meta.extend((self.deltas_from..gone_to.min(self.committed)).map(delta_name));
        batch.meta.push((META_DELTAS_FROM.into(), from.to_le_bytes().to_vec()));
        batch.meta.push((META_SEQUENCE.into(), now.to_le_bytes().to_vec()));
        self.db.commit(batch, durability)?;
        self.committed = now;
        self.deltas_from = from;
        self.terrain.paged_written_back();
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
    db: &impl ChunkDb,
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

/// Puts the deltas `db` keeps back into `terrain`'s delta log, numbered up to `sequence` (the
/// terrain's sequence after). Returns the oldest one's number.
fn restore_deltas(db: &impl ChunkDb, terrain: &mut Terrain, sequence: u64) -> Result<u64, DurableError> {
    let from = match db.meta(META_DELTAS_FROM)? {
        Some(v) => {
            u64::from_le_bytes(v.as_slice().try_into().map_err(|_| DurableError::Meta(META_DELTAS_FROM))?)
        }
        None => sequence,
    };
    if from > sequence {
        return Err(DurableError::Meta(META_DELTAS_FROM));
    }
    let table = terrain.materials();
    let known = if table.len() >= 64 { u64::MAX } else { (1u64 << table.len()) - 1 };
    let max = terrain.config().max_edit_voxels;
    let mut entries = Vec::new();
    for seq in from..sequence {
        let bytes = db.meta(&delta_name(seq))?.ok_or(DurableError::Meta("delta log"))?;
        let d = decode_delta(&bytes, max, known).map_err(|_| DurableError::Meta("delta log"))?;
        if d.seq != seq {
            return Err(DurableError::Meta("delta log"));
        }
        entries.push(LoggedEdit::from_voxels(seq, d.region, &d.voxels));
    }
    terrain.log.restore(entries, sequence);
    Ok(from)
}

/// The material table, voxel size and committed sequence of a database.
fn read_meta(db: &impl ChunkDb) -> Result<(MaterialTable, f32, u64), DurableError> {
    let table: MaterialTable =
        serde_json::from_slice(&db.meta(META_MATERIALS)?.ok_or(DurableError::Meta(META_MATERIALS))?)
            .map_err(|_| DurableError::Meta(META_MATERIALS))?;
    let size = db.meta(META_VOXEL_SIZE)?.ok_or(DurableError::Meta(META_VOXEL_SIZE))?;
    let voxel_size =
        f32::from_le_bytes(size.as_slice().try_into().map_err(|_| DurableError::Meta(META_VOXEL_SIZE))?);
    if !(voxel_size.is_finite() && voxel_size > 0.0) {
        return Err(DurableError::Meta(META_VOXEL_SIZE));
    }
    Ok((table, voxel_size, meta_u64(db, META_SEQUENCE)?))
}

/// The record of chunk `key` from `store`, `None` when it is all air.
fn chunk_record(store: &VoxelStore, key: StoreChunkKey, buf: &mut [Voxel]) -> Option<Vec<u8>> {
    let region = key.region().ok()?;
    buf.fill(Voxel::AIR);
    store.read_box(&region, buf).ok()?;
    if buf.iter().all(|v| v.is_air()) { None } else { Some(encode_chunk(buf)) }
}
