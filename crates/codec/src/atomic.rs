//! Atomic file replacement: write a temporary file beside the target, fsync it, rename it over the
//! target, fsync the directory. A crash at any point leaves either the old file or the new one.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A file being written that replaces `target` only on [`commit`](AtomicFile::commit). Dropped
/// without commit, it deletes its temporary file and leaves `target` untouched.
#[derive(Debug)]
pub struct AtomicFile {
    file: Option<io::BufWriter<File>>,
    temp: PathBuf,
    target: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file `.NAME.tmp.PID.N` in the target's directory.
    pub fn create(target: impl AsRef<Path>) -> io::Result<Self> {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let target = target.as_ref().to_path_buf();
        let name = target
            .file_name()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the target path has no file name"))?;
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let temp =
            target.with_file_name(format!(".{}.tmp.{}.{n}", name.to_string_lossy(), std::process::id()));
        let file = fs::OpenOptions::new().write(true).create_new(true).open(&temp)?;
        Ok(AtomicFile { file: Some(io::BufWriter::with_capacity(1 << 20, file)), temp, target })
    }

    /// The temporary file's path.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// Flushes, fsyncs, renames over the target and fsyncs the directory.
    pub fn commit(mut self) -> io::Result<()> {
        let file = self.file.take().expect("the file is present until commit or drop");
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        fs::rename(&self.temp, &self.target)?;
        // Make the rename itself durable.
        if let Some(dir) = self.target.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir)?.sync_all()?;
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.file.as_mut().expect("present until commit").write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.file.as_mut().expect("present until commit").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            // Not committed: the target keeps its old content; the partial file goes.
            let _ = fs::remove_file(&self.temp);
        }
    }
}
