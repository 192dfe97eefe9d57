//! A terrain kept in a chunk database: after any mix of edits, undos and redos (committed at once,
//! or deferred and flushed), reopening gives the same voxels at the same sequence, whether the
//! delta log still reached the last commit or not.

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra::chunk_db::{ChunkDb, Durability, RedbChunkDb};
use voxterra::core::nalgebra::Point3;
use voxterra::core::{Voxel, VoxelRead, materials};
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, DurableError, DurableTerrain, Terrain, TerrainConfig};

fn voxels(t: &Terrain) -> Vec<(voxterra::core::StoreChunkKey, Vec<Voxel>)> {
    t.store()
        .chunk_keys()
        .into_iter()
        .map(|k| {
            let mut v = vec![Voxel::AIR; 32 * 32 * 32];
            t.store().read_box(&k.region().unwrap(), &mut v).unwrap();
            (k, v)
        })
        .filter(|(_, v)| v.iter().any(|x| !x.is_air()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn reopened_it_is_the_terrain_it_was(
        seed in 0u64..100,
        small_log in any::<bool>(),
        deferred in any::<bool>(),
        steps in prop::collection::vec((0u8..6, 4.0f32..92.0, 4.0f32..44.0, 4.0f32..92.0, 1.0f32..6.0), 1..12),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.redb");
        // A log too small for one edit makes every commit rewrite every chunk.
        let config = TerrainConfig { delta_log_bytes: if small_log { 1 } else { 1 << 24 }, ..TerrainConfig::default() };
        let t = Terrain::generate(&GenParams::new(seed, [96, 48, 96]), config).unwrap();
        let durability = if deferred { Durability::Deferred } else { Durability::Immediate };
        let mut d = DurableTerrain::create(t, RedbChunkDb::create(&path).unwrap(), durability).unwrap();
        for (what, x, y, z, r) in steps {
            let center = Point3::new(x, y, z);
            let result = match what {
                0 => d.undo().map(|_| ()),
                1 => d.redo().map(|_| ()),
                2 | 3 => d.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius: r }, op: BrushOp::Subtract }).map(|_| ()),
                _ => d.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius: r }, op: BrushOp::Add(materials::ROCK) }).map(|_| ()),
            };
            match result {
                Ok(()) | Err(DurableError::Edit(_)) => {}
                Err(e) => panic!("{e}"),
            }
        }
        d.flush().unwrap();
        let (expected, db) = d.into_parts();
        drop(db);
        let back = DurableTerrain::open(RedbChunkDb::open(&path).unwrap(), config, Durability::Immediate).unwrap();
        prop_assert_eq!(back.terrain().sequence(), expected.sequence());
        prop_assert!(voxels(back.terrain()) == voxels(&expected));
        back.terrain().validate().unwrap();
        // The delta log came back: a replica behind the restart catches up as before it.
        prop_assert_eq!(back.terrain().edits_since(0), expected.edits_since(0));
        if !small_log {
            prop_assert_eq!(back.terrain().edits_since(0).len() as u64, expected.sequence());
        }
        drop(back);
        let paged = DurableTerrain::open_paged(RedbChunkDb::open(&path).unwrap(), config, Durability::Immediate).unwrap();
        prop_assert_eq!(paged.terrain().edits_since(0), expected.edits_since(0));
    }
}

#[test]
fn a_replica_resumes_from_the_deltas_of_a_restarted_world() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.redb");
    let params = GenParams::new(4, [96, 48, 96]);
    let mut replica = Terrain::generate(&params, TerrainConfig::default()).unwrap();
    let mut d = DurableTerrain::create(
        Terrain::generate(&params, TerrainConfig::default()).unwrap(),
        RedbChunkDb::create(&path).unwrap(),
        Durability::Deferred,
    )
    .unwrap();
    let crater = |x: f32| Brush {
        shape: BrushShape::Sphere { center: Point3::new(x, 30.0, 40.0), radius: 4.0 },
        op: BrushOp::Subtract,
    };
    for i in 0..6 {
        d.apply_brush(&crater(20.0 + 8.0 * i as f32)).unwrap();
        if i == 2 {
            // The replica follows up to here, then the server restarts.
            for delta in d.terrain().edits_since(0) {
                replica.apply_delta(&delta).unwrap();
            }
        }
    }
    d.flush().unwrap();
    drop(d);
    let mut back = DurableTerrain::open(
        RedbChunkDb::open(&path).unwrap(),
        TerrainConfig::default(),
        Durability::Deferred,
    )
    .unwrap();
    back.apply_brush(&crater(70.0)).unwrap();
    for delta in back.terrain().edits_since(replica.sequence()) {
        replica.apply_delta(&delta).unwrap();
    }
    assert_eq!(replica.sequence(), back.terrain().sequence());
    assert!(voxels(&replica) == voxels(back.terrain()));
}

#[test]
fn a_database_with_a_world_or_without_its_metadata_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.redb");
    let world = || Terrain::generate(&GenParams::new(1, [64, 32, 64]), TerrainConfig::default()).unwrap();
    let d =
        DurableTerrain::create(world(), RedbChunkDb::create(&path).unwrap(), Durability::Immediate).unwrap();
    let (_, db) = d.into_parts();
    assert!(matches!(
        DurableTerrain::create(world(), db, Durability::Immediate),
        Err(DurableError::NotEmpty)
    ));
    let bare = dir.path().join("bare.redb");
    let db = RedbChunkDb::create(&bare).unwrap();
    assert!(db.keys().unwrap().is_empty());
    assert!(matches!(
        DurableTerrain::open(db, TerrainConfig::default(), Durability::Immediate),
        Err(DurableError::Meta(_))
    ));
}

#[test]
fn a_damaged_chunk_record_is_refused_not_decoded() {
    use voxterra::{CHUNK_VOXELS, decode_chunk, encode_chunk};
    let k = voxterra::core::StoreChunkKey::new(0, 0, 0);
    let t = Terrain::generate(&GenParams::new(2, [32, 32, 32]), TerrainConfig::default()).unwrap();
    let mut voxels = vec![Voxel::AIR; CHUNK_VOXELS];
    t.store().read_box(&k.region().unwrap(), &mut voxels).unwrap();
    let mut record = encode_chunk(&voxels);
    let mut out = vec![Voxel::AIR; CHUNK_VOXELS];
    decode_chunk(k, &record, &mut out, u64::MAX).unwrap();
    assert!(out == voxels);
    let last = record.len() - 1;
    record[last] ^= 0x10;
    assert!(matches!(decode_chunk(k, &record, &mut out, u64::MAX), Err(DurableError::DamagedChunk { .. })));
    assert!(decode_chunk(k, &record[..6], &mut out, u64::MAX).is_err());
    assert!(decode_chunk(k, &encode_chunk(&voxels), &mut out[..10], u64::MAX).is_err());
    // A material the world's table does not know.
    assert!(decode_chunk(k, &encode_chunk(&voxels), &mut out, 1).is_err());
}

/// Unmounts the small file system when the test ends, however it ends.
struct Mounted(std::path::PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_full_disk_refuses_the_edit_and_loses_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let small = dir.path().join("small");
    std::fs::create_dir(&small).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(&small)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        // Mounting takes root (CI runs as root on these machines).
        eprintln!("skipped: cannot mount a small tmpfs here");
        return;
    }
    let _guard = Mounted(small.clone());
    let path = small.join("w.redb");
    let world = || Terrain::generate(&GenParams::new(5, [96, 48, 96]), TerrainConfig::default()).unwrap();
    let mut d =
        DurableTerrain::create(world(), RedbChunkDb::create(&path).unwrap(), Durability::Immediate).unwrap();
    // Fill the disk, then leave a little room: a few commits go through, then one does not.
    let filler = small.join("filler");
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&filler).unwrap();
        while f.write_all(&[0xa5; 4096]).is_ok() {}
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(48 << 10)).unwrap();
    }
    // The same edits on a terrain of its own, each once the database took it.
    let mut mirror = world();
    let palette = [materials::ROCK, materials::DIRT, materials::SAND, materials::SNOW, materials::MUD];
    let mut rng = voxterra_test_support::Rng::new(9);
    let mut refused = None;
    for i in 0..5000 {
        let center = Point3::new(rng.range(6.0, 90.0), rng.range(6.0, 42.0), rng.range(6.0, 90.0));
        let op = BrushOp::Add(palette[i % palette.len()]);
        let brush = Brush { shape: BrushShape::Sphere { center, radius: rng.range(2.0, 5.0) }, op };
        match d.apply_brush(&brush) {
            Ok(_) => {
                mirror.apply_brush(&brush).unwrap();
            }
            Err(DurableError::Db(e)) => {
                refused = Some(e);
                break;
            }
            Err(e) => panic!("{e}"),
        }
    }
    let refused = refused.expect("a 1 MiB disk filled up");
    eprintln!("refused at sequence {}: {refused}", mirror.sequence());
    drop(d);
    // Copied off the full disk, it opens at the last commit that went through.
    let copy = dir.path().join("copy.redb");
    std::fs::copy(&path, &copy).unwrap();
    let back = DurableTerrain::open(
        RedbChunkDb::open(&copy).unwrap(),
        TerrainConfig::default(),
        Durability::Immediate,
    )
    .unwrap();
    assert_eq!(back.terrain().sequence(), mirror.sequence());
    assert!(voxels(back.terrain()) == voxels(&mirror));
}

#[test]
fn chunk_record_corpus() {
    voxterra_test_support::replay_corpus("chunk_record", voxterra::fuzz::check_chunk_record);
}

#[test]
fn a_malformed_generator_or_delta_log_entry_is_a_typed_error() {
    use voxterra::chunk_db::Batch;
    let dir = tempfile::tempdir().unwrap();
    let config = TerrainConfig::default();
    let make = |name: &str| {
        let path = dir.path().join(name);
        let d = DurableTerrain::create_generated(
            &GenParams::new(2, [128, 48, 128]),
            RedbChunkDb::create(&path).unwrap(),
            config,
            Durability::Immediate,
        )
        .unwrap();
        drop(d);
        (path.clone(), RedbChunkDb::open(&path).unwrap())
    };
    type Meta = Vec<(String, Vec<u8>)>;
    let cases: [(&str, Meta); 4] = [
        ("short generator", vec![(voxterra::META_GENERATOR.into(), vec![1, 2, 3])]),
        // A world of zero size.
        ("empty generator", vec![(voxterra::META_GENERATOR.into(), vec![0; 48])]),
        ("deltas past the sequence", vec![(voxterra::META_DELTAS_FROM.into(), 5u64.to_le_bytes().to_vec())]),
        (
            "a missing delta",
            vec![
                (voxterra::META_SEQUENCE.into(), 3u64.to_le_bytes().to_vec()),
                (voxterra::META_DELTAS_FROM.into(), 1u64.to_le_bytes().to_vec()),
            ],
        ),
    ];
    for (i, (what, meta)) in cases.into_iter().enumerate() {
        let (path, db) = make(&format!("w{i}.redb"));
        db.commit(Batch { meta, ..Batch::default() }, Durability::Immediate).unwrap();
        drop(db);
        for paged in [false, true] {
            let db = RedbChunkDb::open(&path).unwrap();
            let r = if paged {
                DurableTerrain::open_paged(db, config, Durability::Immediate)
            } else {
                DurableTerrain::open(db, config, Durability::Immediate)
            };
            assert!(matches!(r, Err(DurableError::Meta(_))), "{what} (paged {paged}): {:?}", r.map(|_| ()));
        }
    }
}
