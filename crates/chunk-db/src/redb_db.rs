//! [`RedbChunkDb`]: the chunk database on redb.

use crate::error::store;
use crate::{Batch, ChunkDb, ChunkDbError, Durability};
use redb::{
    Database, DatabaseError, ReadOnlyDatabase, ReadTransaction, ReadableDatabase, ReadableTable,
    TableDefinition, TableError,
};
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
/// another, is [`ChunkDbError::Locked`]), or any number of read-only openers
/// ([`open_read_only`](Self::open_read_only)) when no writer has it; reads see the last committed
/// state.
pub struct RedbChunkDb {
    db: Handle,
    path: PathBuf,
}

enum Handle {
    Write(Database),
    Read(ReadOnlyDatabase),
}

impl Handle {
    fn begin_read(&self) -> Result<ReadTransaction, ChunkDbError> {
        match self {
            Handle::Write(d) => d.begin_read().map_err(store),
            Handle::Read(d) => d.begin_read().map_err(store),
        }
    }
}

impl std::fmt::Debug for RedbChunkDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbChunkDb").field("path", &self.path).finish_non_exhaustive()
    }
}

fn open_error(path: &Path, e: DatabaseError) -> ChunkDbError {
    match e {
        DatabaseError::DatabaseAlreadyOpen => ChunkDbError::Locked(path.to_path_buf()),
        DatabaseError::RepairAborted => ChunkDbError::NeedsRepair(path.to_path_buf()),
        DatabaseError::UpgradeRequired(v) => {
            ChunkDbError::Foreign { path: path.to_path_buf(), why: format!("redb file format {v}") }
        }
        DatabaseError::Storage(redb::StorageError::Corrupted(why)) => {
            ChunkDbError::Foreign { path: path.to_path_buf(), why }
        }
        other => store(other),
    }
}

impl RedbChunkDb {
    /// A new, empty database at `path` ([`ChunkDbError::Exists`] if a file is there).
    pub fn create(path: impl AsRef<Path>) -> Result<Self, ChunkDbError> {
        let path = path.as_ref();
        if path.exists() {
            return Err(ChunkDbError::Exists(path.to_path_buf()));
        }
        let db = Database::create(path).map_err(|e| open_error(path, e))?;
        let txn = db.begin_write().map_err(store)?;
        {
            txn.open_table(CHUNKS).map_err(store)?;
            txn.open_table(META).map_err(store)?.insert(FORMAT_KEY, FORMAT).map_err(store)?;
        }
        txn.commit().map_err(store)?;
        Ok(RedbChunkDb { db: Handle::Write(db), path: path.to_path_buf() })
    }

    /// The database at `path`, checked to be a voxterra chunk database, for reading and writing.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, ChunkDbError> {
        let path = path.as_ref();
        Self::checked(path, |p| Database::open(p).map(Handle::Write))
    }

    /// The database at `path`, for reading only: several processes may read it at once (none
    /// while a writer has it), and a file without write permission opens; commits are
    /// [`ChunkDbError::ReadOnly`].
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, ChunkDbError> {
        let path = path.as_ref();
        Self::checked(path, |p| ReadOnlyDatabase::open(p).map(Handle::Read))
    }

    fn checked(
        path: &Path,
        open: impl FnOnce(&Path) -> Result<Handle, DatabaseError> + std::panic::UnwindSafe,
    ) -> Result<Self, ChunkDbError> {
        if !path.is_file() {
            return Err(
                std::io::Error::new(std::io::ErrorKind::NotFound, format!("{}", path.display())).into()
            );
        }
        // Should redb assert rather than err on a damaged file (its older releases did on files
        // cut or padded outside it), that is damage in a file handed to us: an error, not a panic.
        let handle = std::panic::catch_unwind(|| open(path)).map_err(|_| ChunkDbError::Foreign {
            path: path.to_path_buf(),
            why: "damaged: shorter than its header says, or its pages disagree".into(),
        })?;
        let handle = handle.map_err(|e| open_error(path, e))?;
        let db = RedbChunkDb { db: handle, path: path.to_path_buf() };
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
        match &mut self.db {
            Handle::Write(d) => d.check_integrity().map_err(store),
            Handle::Read(_) => Err(ChunkDbError::ReadOnly(self.path.clone())),
        }
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
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(CHUNKS) {
            Ok(t) => t,
            Err(e) => return missing_table(e).map(|()| None),
        };
        Ok(table.get((key.x, key.y, key.z)).map_err(store)?.map(|v| v.value().to_vec()))
    }

    fn keys(&self) -> Result<Vec<StoreChunkKey>, ChunkDbError> {
        let txn = self.db.begin_read()?;
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
        let txn = self.db.begin_read()?;
        let table = txn.open_table(META).map_err(store)?;
        Ok(table.get(name).map_err(store)?.map(|v| v.value().to_vec()))
    }

    fn commit(&self, batch: Batch, durability: Durability) -> Result<(), ChunkDbError> {
        let Handle::Write(db) = &self.db else { return Err(ChunkDbError::ReadOnly(self.path.clone())) };
        let mut txn = db.begin_write().map_err(store)?;
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
            for name in &batch.removed_meta {
                meta.remove(name.as_str()).map_err(store)?;
            }
        }
        // Dropped without a commit on any error above: the transaction aborts, nothing changes.
        txn.commit().map_err(store)
    }
}
