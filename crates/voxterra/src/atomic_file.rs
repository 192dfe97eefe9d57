//! Atomic file replacement, for terrain files, pictures and exported meshes: write a temporary file
//! beside the target, flush and fsync it, rename it over the target ([`tempfile`]'s `persist`,
//! which replaces on every platform), then, on Unix, fsync the directory so the rename itself is
//! durable. A crash or an error at any point leaves either the old file or the new one, never a
//! mix.
//!
//! It harms nothing but its target: a target that exists and is not a regular file (a device such
//! as `/dev/null`, a FIFO, a socket, a directory) is refused before anything is written; a symlink
//! is written through (its final target is replaced, the link stays); a new file gets the mode
//! `File::create` would give it (0666 less the umask), a replaced one keeps its mode.
//! [`AtomicFile::check`] runs the same checks without writing, for a program to call before long
//! work.

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use tempfile::NamedTempFile;

/// Symlinks followed before giving up (a loop).
const MAX_LINKS: usize = 40;

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
    /// Creates a temporary file in the directory of the file `target` names (through symlinks),
    /// so the rename never crosses file systems. Refuses a target that is not a regular file or
    /// whose directory does not exist (see the module docs).
    pub fn create(target: impl AsRef<Path>) -> io::Result<Self> {
        let target = Self::check(target)?;
        let name = target.file_name().expect("checked: the target has a file name");
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let prefix = format!(".{}.", name.to_string_lossy());
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".tmp");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            // Created 0666 less the umask, as `File::create` would.
            builder.permissions(std::fs::Permissions::from_mode(0o666));
        }
        let temp = builder.tempfile_in(dir)?;
        if let Ok(old) = std::fs::metadata(&target) {
            temp.as_file().set_permissions(old.permissions())?;
        }
        Ok(AtomicFile { file: BufWriter::with_capacity(1 << 20, temp), target })
    }

    /// Where a write to `target` would land, checked without writing: the path itself, or for a
    /// symlink the file it finally names. An error names the path when the target exists and is
    /// not a regular file, when its directory does not exist or is not a directory, or when
    /// symlinks loop. A symlink to a missing file in an existing directory lands there.
    pub fn check(target: impl AsRef<Path>) -> io::Result<PathBuf> {
        let invalid = |msg: String| io::Error::new(io::ErrorKind::InvalidInput, msg);
        let mut path = target.as_ref().to_path_buf();
        for _ in 0..MAX_LINKS {
            if path.file_name().is_none() {
                return Err(invalid(format!("{} names no file", path.display())));
            }
            match std::fs::symlink_metadata(&path) {
                Ok(m) if m.file_type().is_symlink() => {
                    let to = std::fs::read_link(&path)?;
                    path = match path.parent() {
                        Some(dir) if to.is_relative() => dir.join(to),
                        _ => to,
                    };
                }
                Ok(m) if m.is_file() => return Ok(path),
                Ok(_) => {
                    return Err(invalid(format!(
                        "{} exists and is not a regular file (a device, FIFO, socket or directory): not replacing it",
                        path.display()
                    )));
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let dir = match path.parent() {
                        Some(d) if !d.as_os_str().is_empty() => d,
                        _ => Path::new("."),
                    };
                    return match std::fs::metadata(dir) {
                        Ok(m) if m.is_dir() => Ok(path),
                        Ok(_) => Err(invalid(format!("{} is not a directory", dir.display()))),
                        Err(e) => Err(io::Error::new(e.kind(), format!("directory {}: {e}", dir.display()))),
                    };
                }
                Err(e) => return Err(io::Error::new(e.kind(), format!("{}: {e}", path.display()))),
            }
        }
        Err(invalid(format!("{}: more than {MAX_LINKS} symlinks", target.as_ref().display())))
    }

    /// The file the commit replaces (for a symlink, the file it names).
    pub fn target(&self) -> &Path {
        &self.target
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
