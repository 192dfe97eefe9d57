//! The redb chunk database against a map of what was committed: records and metadata survive a
//! reopen, a batch is all or nothing, and bad files and a second writer are typed errors.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use std::collections::BTreeMap;
use voxterra_chunk_db::{Batch, ChunkDb, ChunkDbError, Durability, RedbChunkDb};
use voxterra_core::StoreChunkKey;

/// A record of seeded bytes, a few kilobytes long.
fn record(seed: u64) -> Vec<u8> {
    let mut rng = voxterra_test_support::Rng::new(seed);
    (0..1000 + rng.below(4000)).map(|_| rng.below(256) as u8).collect()
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
            let db = RedbChunkDb::create(&path).unwrap();
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
                        batch.chunks.push((k, record(seed)));
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
        for (&k, &seed) in &model {
            prop_assert!(db.chunk(k).unwrap() == Some(record(seed)), "chunk {:?}", k);
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
        let db = RedbChunkDb::create(&path).unwrap();
        let mut batch = Batch::default();
        for x in 0..20 {
            batch.chunks.push((StoreChunkKey::new(x, 0, 0), record(x as u64)));
        }
        db.commit(batch, Durability::Immediate).unwrap();
    }
    let bytes = std::fs::read(&path).unwrap();
    for cut in [bytes.len() / 2, bytes.len() - 1, 4096] {
        let cut_path = dir.path().join(format!("cut{cut}.redb"));
        std::fs::write(&cut_path, &bytes[..cut]).unwrap();
        // Opened (redb repairs from the last good commit) or refused; never a panic, never
        // other bytes.
        if let Ok(db) = RedbChunkDb::open(&cut_path) {
            for k in db.keys().unwrap_or_default() {
                if let Ok(Some(r)) = db.chunk(k) {
                    assert!(r == record(k.x as u64));
                }
            }
        }
    }
    assert!(matches!(RedbChunkDb::open(dir.path().join("absent.redb")), Err(ChunkDbError::Io(_))));
}

#[test]
fn a_read_only_file_is_an_error_and_keeps_its_contents() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.redb");
    {
        let db = RedbChunkDb::create(&path).unwrap();
        let batch = Batch { chunks: vec![(StoreChunkKey::new(1, 2, 3), record(1))], ..Batch::default() };
        db.commit(batch, Durability::Immediate).unwrap();
    }
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    // Root ignores file modes; elsewhere opening for writing is refused.
    if let Err(e) = RedbChunkDb::open(&path) {
        assert!(matches!(e, ChunkDbError::Store(_) | ChunkDbError::Io(_)), "{e}");
    }
    // Opened read-only it reads, and refuses to commit.
    let ro = RedbChunkDb::open_read_only(&path).unwrap();
    assert_eq!(ro.keys().unwrap(), vec![StoreChunkKey::new(1, 2, 3)]);
    assert!(matches!(ro.commit(Batch::default(), Durability::Immediate), Err(ChunkDbError::ReadOnly(_))));
    // Two readers at once; no writer beside them.
    let other = RedbChunkDb::open_read_only(&path).unwrap();
    assert_eq!(other.chunk(StoreChunkKey::new(1, 2, 3)).unwrap(), Some(record(1)));
    drop((ro, other));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let db = RedbChunkDb::open(&path).unwrap();
    assert_eq!(db.keys().unwrap(), vec![StoreChunkKey::new(1, 2, 3)]);
    assert!(matches!(RedbChunkDb::open_read_only(&path), Err(ChunkDbError::Locked(_))));
}
