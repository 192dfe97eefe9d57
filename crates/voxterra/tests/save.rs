//! Atomic saves: a save that fails, or is never committed, leaves the previous file as it was
//! and no temporary file behind.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use std::io::Write;
use voxterra::AtomicFile;
use voxterra::core::{MaterialTable, Region, Voxel, VoxelPos, VoxelRead, materials as m};
use voxterra::store::VoxelStore;

fn store_of(material: voxterra::core::Material, size: [u32; 3]) -> VoxelStore {
    let mut store = VoxelStore::new();
    store
        .fill(&Region::from_min_size(VoxelPos::new(-3, 0, 0), size).unwrap(), Voxel::full(material))
        .unwrap();
    store
}

fn files_in(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[test]
fn saves_round_trip_and_replace() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.vxt");
    let table = MaterialTable::default();
    let first = store_of(m::SAND, [40, 4, 6]);
    voxterra::save(&path, &first, &table, |_, _| {}).unwrap();
    let (loaded, t) = voxterra::load(&path, |_, _| {}).unwrap();
    assert_eq!(t, table);
    assert_eq!(loaded.chunk_keys(), first.chunk_keys());
    assert_eq!(loaded.voxel(VoxelPos::new(0, 1, 1)), Voxel::full(m::SAND));
    // Saving over it replaces it whole.
    let second = store_of(m::SNOW, [8, 8, 8]);
    voxterra::save(&path, &second, &table, |_, _| {}).unwrap();
    let (loaded, _) = voxterra::load(&path, |_, _| {}).unwrap();
    assert_eq!(loaded.voxel(VoxelPos::new(0, 1, 1)), Voxel::full(m::SNOW));
    assert_eq!(loaded.voxel(VoxelPos::new(30, 1, 1)), Voxel::AIR);
    assert_eq!(files_in(dir.path()), 1, "no temporary file is left behind");
}

#[test]
fn an_uncommitted_file_leaves_the_previous_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.vxt");
    let table = MaterialTable::default();
    voxterra::save(&path, &store_of(m::SAND, [40, 4, 6]), &table, |_, _| {}).unwrap();
    let saved = std::fs::read(&path).unwrap();
    {
        // A crash between write and rename: everything written, never committed.
        let mut file = AtomicFile::create(&path).unwrap();
        let temp = file.temp_path().to_path_buf();
        file.write_all(b"half a world").unwrap();
        file.flush().unwrap();
        assert!(temp.exists());
        drop(file);
        assert!(!temp.exists(), "the partial file is removed");
    }
    assert_eq!(std::fs::read(&path).unwrap(), saved, "the previous file is untouched");
    assert_eq!(files_in(dir.path()), 1);
}

#[test]
fn a_failing_save_reports_and_keeps_the_previous_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("world.vxt");
    let table = MaterialTable::default();
    voxterra::save(&path, &store_of(m::SAND, [40, 4, 6]), &table, |_, _| {}).unwrap();
    let saved = std::fs::read(&path).unwrap();
    // A source that fails mid-save: a chunk key whose region leaves the i32 voxel space.
    let file = AtomicFile::create(&path).unwrap();
    let bad = [voxterra::core::StoreChunkKey::new(i32::MAX, 0, 0)];
    let store = VoxelStore::new();
    let got = voxterra::codec::write_terrain_file(file, &store, &bad, &table, Default::default(), |_, _| {});
    assert!(matches!(got, Err(voxterra::codec::TerrainFileError::ChunkOutOfRange { .. })), "{:?}", got.err());
    assert_eq!(std::fs::read(&path).unwrap(), saved);
    assert_eq!(files_in(dir.path()), 1);
    // A target that is a directory is refused before anything is written.
    let blocked = dir.path().join("taken");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("inside"), b"x").unwrap();
    assert_eq!(
        AtomicFile::create(&blocked).map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::InvalidInput)
    );
    assert!(blocked.is_dir(), "the target is untouched");
    assert_eq!(files_in(dir.path()), 2, "no temporary file");
}

/// The process's umask, from /proc (Linux).
#[cfg(target_os = "linux")]
fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
    u32::from_str_radix(line.split_whitespace().nth(1).unwrap(), 8).unwrap()
}

/// Devices, FIFOs and directories are refused and left alone; a symlink is written through; a new
/// file gets 0666 less the umask, a replaced one keeps its mode; a missing directory is named
/// before anything is written.
#[cfg(target_os = "linux")]
#[test]
fn outputs_harm_nothing_but_their_target() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
    for device in ["/dev/null", "/dev/full"] {
        let err = AtomicFile::create(device).expect_err("a device is refused");
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
        assert!(err.to_string().contains(device), "{err}");
        assert!(std::fs::metadata(device).unwrap().file_type().is_char_device());
    }
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    assert_eq!(AtomicFile::check(&fifo).unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    // A new file: the mode File::create gives.
    let fresh = dir.path().join("fresh.bin");
    let mut f = AtomicFile::create(&fresh).unwrap();
    f.write_all(b"new").unwrap();
    f.commit().unwrap();
    assert_eq!(mode(&fresh), 0o666 & !umask());
    // An existing file keeps its mode, 0644 or 0600 alike.
    for keep in [0o644, 0o600, 0o640] {
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(keep)).unwrap();
        let mut f = AtomicFile::create(&fresh).unwrap();
        f.write_all(b"again").unwrap();
        f.commit().unwrap();
        assert_eq!(mode(&fresh), keep);
    }
    // A symlink: its target is replaced, the link stays.
    let link = dir.path().join("link.bin");
    std::os::unix::fs::symlink("fresh.bin", &link).unwrap();
    let mut f = AtomicFile::create(&link).unwrap();
    assert_eq!(f.target(), fresh.as_path());
    f.write_all(b"through").unwrap();
    f.commit().unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&fresh).unwrap(), b"through");
    // A symlink to a device is refused; one to nothing, or a loop, too.
    let to_null = dir.path().join("null");
    std::os::unix::fs::symlink("/dev/null", &to_null).unwrap();
    assert_eq!(AtomicFile::check(&to_null).unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    assert_eq!(AtomicFile::check(&a).unwrap_err().kind(), std::io::ErrorKind::InvalidInput);
    // A missing directory is named.
    let err = AtomicFile::check(dir.path().join("no/such/dir/a.png")).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    assert!(err.to_string().contains("no/such/dir"), "{err}");
}

#[test]
fn a_path_without_a_file_name_is_an_error() {
    for path in ["/", ""] {
        let err = AtomicFile::create(path).err().map(|e| e.kind());
        assert_eq!(err, Some(std::io::ErrorKind::InvalidInput), "{path:?}");
    }
}
