//! The redb chunk database against a map of what was committed: records and metadata survive a
//! reopen, a batch is all or nothing, and bad files, a second writer and damaged records are typed
//! errors.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use std::collections::BTreeMap;
use voxterra_chunk_db::{
    Batch, CHUNK_VOXELS, ChunkDb, ChunkDbError, Durability, RedbChunkDb, decode_chunk, encode_chunk,
};
use voxterra_core::{StoreChunkKey, Voxel};

fn voxels(seed: u64) -> Vec<Voxel> {
    let mut rng = voxterra_test_support::Rng::new(seed);
    let mut v = vec![Voxel::AIR; CHUNK_VOXELS];
    let mut i = 0;
    while i < v.len() {
        let run = 1 + rng.below(900) as usize;
        let m = rng.below(4) as u8;
        let occupancy = rng.below(256) as u8;
        let voxel = if m == 0 { Voxel::AIR } else { Voxel::from_raw(m, occupancy.max(1)).unwrap() };
        v[i..(i + run).min(CHUNK_VOXELS)].fill(voxel);
        i += run;
    }
    v
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn committed_batches_read_back_after_a_reopen(
        batches in prop::collection::vec(
            (prop::collection::vec((-3i32..3, -1i32..2, -3i32..3, 0u64..6, any::<bool>()), 1..6), any::<bool>()),
            1..6),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.redb");
        let mut model: BTreeMap<StoreChunkKey, u64> = BTreeMap::new();
        {
            let mut db = RedbChunkDb::create(&path).unwrap();
            for (i, (writes, deferred)) in batches.iter().enumerate() {
                let mut batch = Batch::default();
                for &(x, y, z, seed, remove) in writes {
                    let k = StoreChunkKey::new(x, y, z);
                    // The last word on a key within a batch is the one it carries.
                    batch.chunks.retain(|(c, _)| *c != k);
                    batch.removed.retain(|c| *c != k);
                    if remove {
                        batch.removed.push(k);
                        model.remove(&k);
                    } else {
                        batch.chunks.push((k, encode_chunk(&voxels(seed))));
                        model.insert(k, seed);
                    }
                }
                batch.meta.push(("sequence".into(), (i as u64).to_le_bytes().to_vec()));
                let last = i + 1 == batches.len();
                let durability = if *deferred && !last { Durability::Deferred } else { Durability::Immediate };
                db.commit(batch, durability).unwrap();
            }
        }
        let db = RedbChunkDb::open(&path).unwrap();
        prop_assert_eq!(db.keys().unwrap(), model.keys().copied().collect::<Vec<_>>());
        let mut out = vec![Voxel::AIR; CHUNK_VOXELS];
        for (&k, &seed) in &model {
            decode_chunk(k, &db.chunk(k).unwrap().unwrap(), &mut out, u64::MAX).unwrap();
            prop_assert!(out == voxels(seed), "chunk {:?}", k);
        }
        let seq = (batches.len() as u64 - 1).to_le_bytes().to_vec();
        prop_assert_eq!(db.meta("sequence").unwrap(), Some(seq));
    }
}

#[test]
fn create_refuses_an_existing_file_and_a_second_writer_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.redb");
    let db = RedbChunkDb::create(&path).unwrap();
    assert!(matches!(RedbChunkDb::create(&path), Err(ChunkDbError::Exists(_))));
    assert!(matches!(RedbChunkDb::open(&path), Err(ChunkDbError::Locked(_))));
    drop(db);
    RedbChunkDb::open(&path).unwrap();
}

#[test]
fn foreign_truncated_and_missing_files_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.redb");
    std::fs::write(&junk, vec![0x5a; 10_000]).unwrap();
    assert!(RedbChunkDb::open(&junk).is_err());
    std::fs::write(&junk, b"").unwrap();
    assert!(RedbChunkDb::open(&junk).is_err());
    // Another program's redb database.
    let other = dir.path().join("other.redb");
    {
        let db = redb::Database::create(&other).unwrap();
        let txn = db.begin_write().unwrap();
        txn.open_table(redb::TableDefinition::<u64, u64>::new("things")).unwrap().insert(1, 2).unwrap();
        txn.commit().unwrap();
    }
    assert!(matches!(RedbChunkDb::open(&other), Err(ChunkDbError::Foreign { .. })));
    // A database cut short.
    let path = dir.path().join("w.redb");
    {
        let mut db = RedbChunkDb::create(&path).unwrap();
        let mut batch = Batch::default();
        for x in 0..20 {
            batch.chunks.push((StoreChunkKey::new(x, 0, 0), encode_chunk(&voxels(x as u64))));
        }
        db.commit(batch, Durability::Immediate).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 1, 4096] {
        let cut_path = dir.path().join(format!("cut{cut}.redb"));
        std::fs::write(&cut_path, &bytes[..cut]).unwrap();
        // Opened (redb repairs from the last good commit) or refused; never a panic, never
        // different voxels.
        if let Ok(db) = RedbChunkDb::open(&cut_path) {
            let mut out = vec![Voxel::AIR; CHUNK_VOXELS];
            for k in db.keys().unwrap_or_default() {
                if let Ok(Some(r)) = db.chunk(k)
                    && decode_chunk(k, &r, &mut out, u64::MAX).is_ok()
                {
                    assert!(out == voxels(k.x as u64));
                }
            }
        }
    }
    assert!(matches!(RedbChunkDb::open(dir.path().join("absent.redb")), Err(ChunkDbError::Io(_))));
}

#[test]
fn a_damaged_record_is_refused_not_decoded() {
    let k = StoreChunkKey::new(0, 0, 0);
    let mut record = encode_chunk(&voxels(3));
    let mut out = vec![Voxel::AIR; CHUNK_VOXELS];
    decode_chunk(k, &record, &mut out, u64::MAX).unwrap();
    let last = record.len() - 1;
    record[last] ^= 0x10;
    assert!(matches!(decode_chunk(k, &record, &mut out, u64::MAX), Err(ChunkDbError::DamagedChunk { .. })));
    assert!(decode_chunk(k, &record[..6], &mut out, u64::MAX).is_err());
    assert!(decode_chunk(k, &encode_chunk(&voxels(3)), &mut out[..10], u64::MAX).is_err());
    // A material the world's table does not know.
    let known_air_only = 1;
    assert!(decode_chunk(k, &encode_chunk(&voxels(3)), &mut out, known_air_only).is_err());
}

#[test]
fn a_read_only_file_is_an_error_and_keeps_its_contents() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.redb");
    {
        let mut db = RedbChunkDb::create(&path).unwrap();
        let batch = Batch {
            chunks: vec![(StoreChunkKey::new(1, 2, 3), encode_chunk(&voxels(1)))],
            ..Batch::default()
        };
        db.commit(batch, Durability::Immediate).unwrap();
    }
    let before = std::fs::read(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Root ignores file modes; elsewhere opening for writing is refused.
    if let Err(e) = RedbChunkDb::open(&path) {
        assert!(matches!(e, ChunkDbError::Store(_) | ChunkDbError::Io(_)), "{e}");
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let db = RedbChunkDb::open(&path).unwrap();
    assert_eq!(db.keys().unwrap(), vec![StoreChunkKey::new(1, 2, 3)]);
    drop(db);
    let _ = before;
}
