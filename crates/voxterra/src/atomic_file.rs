//! Atomic file replacement, for world files and exported meshes: write a temporary file beside the
//! target, flush and fsync it, rename it over the target ([`tempfile`]'s `persist`, which replaces
//! on every platform), then, on Unix, fsync the directory so the rename itself is durable. A crash
//! or an error at any point leaves either the old file or the new one, never a mix.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// A file being written that replaces `target` only on [`commit`](AtomicFile::commit). Dropped
/// without a commit, its temporary file is deleted and `target` is untouched.
///
/// ```
/// use std::io::Write;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("note.txt");
/// let mut file = voxterra::AtomicFile::create(&path)?;
/// file.write_all(b"saved")?;
/// file.commit()?;
/// assert_eq!(std::fs::read(&path)?, b"saved");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct AtomicFile {
    file: BufWriter<NamedTempFile>,
    target: PathBuf,
}

impl AtomicFile {
    /// Creates a temporary file in the target's directory (so the rename never crosses file
    /// systems).
    pub fn create(target: impl AsRef<Path>) -> io::Result<Self> {
        let target = target.as_ref().to_path_buf();
        let name = target
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the target path has no file name"))?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let temp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".tmp")
            .tempfile_in(dir)?;
        Ok(AtomicFile { file: BufWriter::with_capacity(1 << 20, temp), target })
    }

    /// The temporary file's path (for tests and error messages).
    pub fn temp_path(&self) -> &Path {
        self.file.get_ref().path()
    }

    /// Flushes, fsyncs and renames over the target; on Unix, then fsyncs the directory. An error
    /// before the rename leaves the target as it was and removes the temporary file.
    pub fn commit(self) -> io::Result<()> {
        let temp = self.file.into_inner().map_err(|e| e.into_error())?;
        temp.as_file().sync_all()?;
        temp.persist(&self.target).map_err(|e| e.error)?;
        sync_dir(&self.target)
    }
}

/// Makes a rename in `target`'s directory durable. Unix only: Windows cannot open a directory as a
/// file, and its rename (`MoveFileEx` with write-through, as `persist` uses) needs no such step.
#[cfg(unix)]
fn sync_dir(target: &Path) -> io::Result<()> {
    match target.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) => std::fs::File::open(dir)?.sync_all(),
        None => std::fs::File::open(".")?.sync_all(),
    }
}

#[cfg(not(unix))]
fn sync_dir(_target: &Path) -> io::Result<()> {
    Ok(())
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}
