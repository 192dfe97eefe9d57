//! [`RedbChunkDb`]: the chunk database on redb.

use crate::error::store;
use crate::{Batch, ChunkDb, ChunkDbError, Durability};
use redb::{Database, DatabaseError, ReadableDatabase, ReadableTable, TableDefinition, TableError};
use std::path::{Path, PathBuf};
use voxterra_core::StoreChunkKey;

/// Chunk records by key (x, y, z).
const CHUNKS: TableDefinition<'_, (i32, i32, i32), &[u8]> = TableDefinition::new("chunks");
/// Metadata by name.
const META: TableDefinition<'_, &str, &[u8]> = TableDefinition::new("meta");
/// The metadata entry naming the format; a database without it is another program's.
const FORMAT_KEY: &str = "format";
const FORMAT: &[u8] = b"voxterra-chunk-db 1";

/// A chunk database in one redb file: one writer at a time (a second opener, in this process or
/// another, is [`ChunkDbError::Locked`]), readers see the last committed state.
pub struct RedbChunkDb {
    db: Database,
    path: PathBuf,
}

impl std::fmt::Debug for RedbChunkDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbChunkDb").field("path", &self.path).finish_non_exhaustive()
    }
}

fn opened(path: &Path, r: Result<Database, DatabaseError>) -> Result<Database, ChunkDbError> {
    r.map_err(|e| match e {
        DatabaseError::DatabaseAlreadyOpen => ChunkDbError::Locked(path.to_path_buf()),
        DatabaseError::UpgradeRequired(v) => {
            ChunkDbError::Foreign { path: path.to_path_buf(), why: format!("redb file format {v}") }
        }
        DatabaseError::Storage(redb::StorageError::Corrupted(why)) => {
            ChunkDbError::Foreign { path: path.to_path_buf(), why }
        }
        other => store(other),
    })
}

impl RedbChunkDb {
    /// A new, empty database at `path` ([`ChunkDbError::Exists`] if a file is there).
    pub fn create(path: impl AsRef<Path>) -> Result<Self, ChunkDbError> {
        let path = path.as_ref();
        if path.exists() {
            return Err(ChunkDbError::Exists(path.to_path_buf()));
        }
        let db = opened(path, Database::create(path))?;
        let txn = db.begin_write().map_err(store)?;
        {
            txn.open_table(CHUNKS).map_err(store)?;
            txn.open_table(META).map_err(store)?.insert(FORMAT_KEY, FORMAT).map_err(store)?;
        }
        txn.commit().map_err(store)?;
        Ok(RedbChunkDb { db, path: path.to_path_buf() })
    }

    /// The database at `path`, checked to be a voxterra chunk database.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ChunkDbError> {
        let path = path.as_ref();
        if !path.is_file() {
            return Err(
                std::io::Error::new(std::io::ErrorKind::NotFound, format!("{}", path.display())).into()
            );
        }
        // Should redb assert rather than err on a damaged file (its older releases did on files
        // cut or padded outside it), that is damage in a file handed to us: an error, not a panic.
        let open = std::panic::catch_unwind(|| Database::open(path)).map_err(|_| ChunkDbError::Foreign {
            path: path.to_path_buf(),
            why: "damaged: shorter than its header says, or its pages disagree".into(),
        })?;
        let db = RedbChunkDb { db: opened(path, open)?, path: path.to_path_buf() };
        let foreign = |why: &str| ChunkDbError::Foreign { path: path.to_path_buf(), why: why.into() };
        match db.meta(FORMAT_KEY) {
            Ok(Some(f)) if f == FORMAT => Ok(db),
            Ok(Some(_)) => Err(foreign("another format version")),
            Ok(None) => Err(foreign("no format entry")),
            Err(ChunkDbError::Store(redb::Error::TableDoesNotExist(_))) => Err(foreign("no voxterra tables")),
            Err(ChunkDbError::Store(redb::Error::TableTypeMismatch { .. })) => {
                Err(foreign("tables of other types"))
            }
            Err(e) => Err(e),
        }
    }

    /// Where it lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks every page's checksum; `Ok(false)` when damage was found (and repaired from the last
    /// good commit where redb could).
    pub fn check_integrity(&mut self) -> Result<bool, ChunkDbError> {
        self.db.check_integrity().map_err(store)
    }

    /// The file's size, bytes.
    pub fn file_len(&self) -> Result<u64, ChunkDbError> {
        Ok(std::fs::metadata(&self.path)?.len())
    }
}

fn missing_table(e: TableError) -> Result<(), ChunkDbError> {
    match e {
        TableError::TableDoesNotExist(_) => Ok(()),
        other => Err(store(other)),
    }
}

impl ChunkDb for RedbChunkDb {
    fn chunk(&self, key: StoreChunkKey) -> Result<Option<Vec<u8>>, ChunkDbError> {
        let txn = self.db.begin_read().map_err(store)?;
        let table = match txn.open_table(CHUNKS) {
            Ok(t) => t,
            Err(e) => return missing_table(e).map(|()| None),
        };
        Ok(table.get((key.x, key.y, key.z)).map_err(store)?.map(|v| v.value().to_vec()))
    }

    fn keys(&self) -> Result<Vec<StoreChunkKey>, ChunkDbError> {
        let txn = self.db.begin_read().map_err(store)?;
        let table = match txn.open_table(CHUNKS) {
            Ok(t) => t,
            Err(e) => return missing_table(e).map(|()| Vec::new()),
        };
        let mut keys = Vec::new();
        for entry in table.iter().map_err(store)? {
            let (x, y, z) = entry.map_err(store)?.0.value();
            keys.push(StoreChunkKey::new(x, y, z));
        }
        keys.sort_unstable();
        Ok(keys)
    }

    fn meta(&self, name: &str) -> Result<Option<Vec<u8>>, ChunkDbError> {
        let txn = self.db.begin_read().map_err(store)?;
        let table = txn.open_table(META).map_err(store)?;
        Ok(table.get(name).map_err(store)?.map(|v| v.value().to_vec()))
    }

    fn commit(&mut self, batch: Batch, durability: Durability) -> Result<(), ChunkDbError> {
        let mut txn = self.db.begin_write().map_err(store)?;
        txn.set_durability(match durability {
            Durability::Immediate => redb::Durability::Immediate,
            Durability::Deferred => redb::Durability::None,
        })
        .map_err(|e| ChunkDbError::Store(redb::Error::Io(std::io::Error::other(e.to_string()))))?;
        {
            let mut chunks = txn.open_table(CHUNKS).map_err(store)?;
            for (k, record) in &batch.chunks {
                chunks.insert((k.x, k.y, k.z), record.as_slice()).map_err(store)?;
            }
            for k in &batch.removed {
                chunks.remove((k.x, k.y, k.z)).map_err(store)?;
            }
            let mut meta = txn.open_table(META).map_err(store)?;
            for (name, value) in &batch.meta {
                meta.insert(name.as_str(), value.as_slice()).map_err(store)?;
            }
        }
        // Dropped without a commit on any error above: the transaction aborts, nothing changes.
        txn.commit().map_err(store)
    }
}
