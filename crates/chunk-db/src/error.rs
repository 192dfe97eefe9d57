//! The chunk database's errors.

use std::path::PathBuf;

/// Why a chunk database operation failed. Nothing is half-written: a failed commit leaves the
/// database as it was.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChunkDbError {
    /// Another process (or another handle in this one) has the database open for writing.
    #[error("{0}: the database is open elsewhere (one writer at a time)")]
    Locked(PathBuf),
    /// A file that is not a voxterra chunk database (another program's redb file, or not redb).
    #[error("{path}: not a voxterra chunk database ({why})")]
    Foreign {
        /// The file.
        path: PathBuf,
        /// What gave it away.
        why: String,
    },
    /// A database not closed cleanly (its writer crashed), opened read-only: opening it for
    /// writing once repairs it from its last commit.
    #[error("{0}: not closed cleanly; open it for writing once to repair it")]
    NeedsRepair(PathBuf),
    /// A commit or repair through a database opened read-only.
    #[error("{0}: opened read-only")]
    ReadOnly(PathBuf),
    /// `create` on a path that already holds a file.
    #[error("{0}: a file is there already")]
    Exists(PathBuf),
    /// The store failed: I/O (a full disk, a read-only file), or damage it found in its pages.
    #[error("the chunk database: {0}")]
    Store(#[from] redb::Error),
    /// The file system.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
}

/// Any of redb's errors, as [`ChunkDbError::Store`].
pub(crate) fn store<E: Into<redb::Error>>(e: E) -> ChunkDbError {
    ChunkDbError::Store(e.into())
}
