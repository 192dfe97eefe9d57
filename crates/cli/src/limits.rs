//! What the machine can do: a cap on worker threads, a memory estimate checked against what is
//! available before long work, and outputs checked before the work that fills them.

use anyhow::{Context, bail};
use std::path::Path;

/// The most worker threads a command starts.
pub(crate) const MAX_THREADS: usize = 256;

/// `--threads`: 1 to [`MAX_THREADS`].
pub(crate) fn parse_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(format!("expected a thread count in 1..={MAX_THREADS}; got {s:?}")),
    }
}

/// Bytes of memory available (Linux: `MemAvailable`); `None` where it cannot be told.
pub(crate) fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Refuses work estimated to need `bytes` when less is available, saying how much both are.
pub(crate) fn ensure_memory(bytes: u64, what: &str) -> anyhow::Result<()> {
    if let Some(free) = available_memory()
        && bytes > free
    {
        bail!(
            "{what} needs about {:.1} GiB of memory; {:.1} GiB are available",
            bytes as f64 / f64::from(1u32 << 30),
            free as f64 / f64::from(1u32 << 30)
        );
    }
    Ok(())
}

/// Checks a picture's output before the work: a `.png` name (the only format written) in an
/// existing directory, not a device or other non-regular file.
pub(crate) fn check_png_out(path: &Path) -> anyhow::Result<()> {
    let png = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("png"));
    if !png {
        bail!("{}: pictures are written as PNG; name the file .png", path.display());
    }
    check_out(path)
}

/// Checks an output path before the work ([`voxterra::AtomicFile::check`]).
pub(crate) fn check_out(path: &Path) -> anyhow::Result<()> {
    voxterra::AtomicFile::check(path).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}
