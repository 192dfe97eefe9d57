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
    let got = voxterra::codec::write_world(file, &store, &bad, &table, Default::default(), |_, _| {});
    assert!(matches!(got, Err(voxterra::codec::WorldFileError::Voxels(_))), "{:?}", got.err());
    assert_eq!(std::fs::read(&path).unwrap(), saved);
    assert_eq!(files_in(dir.path()), 1);
    // A commit whose rename fails (the target is a directory): an error, and nothing is left.
    let blocked = dir.path().join("taken");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("inside"), b"x").unwrap();
    let mut file = AtomicFile::create(&blocked).unwrap();
    file.write_all(b"data").unwrap();
    assert_eq!(file.commit().map_err(|e| e.kind()), Err(std::io::ErrorKind::IsADirectory));
    assert!(blocked.is_dir(), "the target is untouched");
    assert_eq!(files_in(dir.path()), 2, "the temporary file is gone");
}

#[test]
fn a_path_without_a_file_name_is_an_error() {
    for path in ["/", ""] {
        let err = AtomicFile::create(path).err().map(|e| e.kind());
        assert_eq!(err, Some(std::io::ErrorKind::InvalidInput), "{path:?}");
    }
}
