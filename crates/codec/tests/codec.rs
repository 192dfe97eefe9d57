//! The codec against the store and a dense reference: round trips, exact bytes (insta), every
//! byte flip and truncation of a terrain file, interrupted saves.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use proptest::prelude::*;
use std::io::Cursor;
use voxterra_codec::block::{BlockScratch, decode_block, encode_voxels};
use voxterra_codec::{
    Compression, ReadLimits, Snapshot, TerrainFileError, TerrainFileReader, TerrainFileWriter, WriteOptions,
    rle,
};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{
    Material, MaterialTable, Region, StoreChunkKey, Voxel, VoxelPos, VoxelRead, materials as m,
};
use voxterra_voxel_store::VoxelStore;

fn arb_voxel() -> impl Strategy<Value = Voxel> {
    (0u8..6, any::<u8>(), any::<bool>())
        .prop_map(|(mat, occ, full)| Voxel::new(Material::new(mat).unwrap(), if full { 255 } else { occ }))
}

/// Boxes with long runs (the common case) and noise.
fn arb_box() -> impl Strategy<Value = Vec<Voxel>> {
    prop_oneof![
        proptest::collection::vec(arb_voxel(), 0..600),
        proptest::collection::vec((arb_voxel(), 1usize..700), 0..12)
            .prop_map(|runs| runs.into_iter().flat_map(|(v, n)| std::iter::repeat_n(v, n)).collect()),
    ]
}

proptest! {
    #[test]
    fn rle_and_blocks_round_trip(voxels in arb_box()) {
        let mut bytes = Vec::new();
        rle::encode(&voxels, &mut bytes);
        prop_assert!(bytes.len() <= 2 * voxels.len());
        let mut back = vec![Voxel::AIR; voxels.len()];
        rle::decode_exact(&bytes, &mut back, u64::MAX).unwrap();
        prop_assert_eq!(&back, &voxels);
        for c in [Compression::None, Compression::Lz4] {
            let mut block = Vec::new();
            encode_voxels(&voxels, c, &mut BlockScratch::default(), &mut block);
            let mut back = vec![Voxel::AIR; voxels.len()];
            decode_block(&block, &mut back, u64::MAX, &mut BlockScratch::default()).unwrap();
            prop_assert_eq!(&back, &voxels);
        }
    }

    #[test]
    fn snapshots_round_trip_against_the_store(min in proptest::array::uniform3(-40i32..40), size in proptest::array::uniform3(1u32..40), seed: u64) {
        let mut store = VoxelStore::new();
        let world = Region::from_min_size(Point3::new(-48, -48, -48), [96, 96, 96]).unwrap();
        let mut s = seed;
        store.brush(&world, |p, _| {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            if p.y + (p.x * 3 + p.z).rem_euclid(7) < 0 { Voxel::new(Material::new((s >> 60) as u8 % 4 + 1).unwrap(), if s >> 40 & 7 == 0 { (s >> 8) as u8 } else { 255 }) } else { Voxel::AIR }
        }).unwrap();
        let region = Region::from_min_size(min.into(), size).unwrap();
        let before = {
            let mut v = vec![Voxel::AIR; region.len().unwrap()];
            store.read_box(&region, &mut v).unwrap();
            v
        };
        let snap = Snapshot::capture(&store, &region, Compression::Lz4).unwrap();
        prop_assert_eq!(&snap.decode(1 << 20).unwrap(), &before);
        store.fill(&region, Voxel::full(m::ICE)).unwrap();
        snap.restore(&mut store, 1 << 20).unwrap();
        let mut after = vec![Voxel::AIR; region.len().unwrap()];
        store.read_box(&region, &mut after).unwrap();
        prop_assert_eq!(after, before);
    }
}

#[test]
fn exact_bytes_of_small_boxes() {
    let rock = Voxel::full(m::ROCK);
    let half_water = Voxel::new(m::WATER, 127);
    let hex = |v: &[Voxel]| {
        let mut b = Vec::new();
        rle::encode(v, &mut b);
        b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
    };
    let mut cases = String::new();
    for (name, voxels) in [
        ("one air voxel", vec![Voxel::AIR]),
        ("one rock voxel", vec![rock]),
        ("half-full water voxel", vec![half_water]),
        ("3 air, 2 rock, 1 half water", vec![Voxel::AIR, Voxel::AIR, Voxel::AIR, rock, rock, half_water]),
        ("300 rock (run split at 256)", vec![rock; 300]),
        ("4 half water", vec![half_water; 4]),
        (
            "grass over dirt 2x2x2",
            vec![
                Voxel::full(m::DIRT),
                Voxel::full(m::DIRT),
                Voxel::full(m::DIRT),
                Voxel::full(m::DIRT),
                Voxel::new(m::GRASS, 200),
                Voxel::full(m::GRASS),
                Voxel::AIR,
                Voxel::AIR,
            ],
        ),
    ] {
        cases += &format!("{name}: {}\n", hex(&voxels));
    }
    insta::assert_snapshot!(cases);
}

fn small_world() -> (VoxelStore, Vec<StoreChunkKey>) {
    let mut store = VoxelStore::new();
    let params = voxterra_worldgen::GenParams::new(9, [40, 40, 36]);
    voxterra_worldgen::generate(&params, &mut store, |_, _| {}).unwrap();
    let keys = store.chunk_keys();
    (store, keys)
}

fn file_of(store: &VoxelStore, keys: &[StoreChunkKey], c: Compression) -> Vec<u8> {
    let mut w =
        TerrainFileWriter::new(Vec::new(), &MaterialTable::default(), WriteOptions { compression: c })
            .unwrap();
    for k in keys {
        w.write_chunk(*k, store).unwrap();
    }
    w.finish().unwrap().0
}

fn load(bytes: &[u8]) -> Result<VoxelStore, TerrainFileError> {
    let mut r = TerrainFileReader::open(Cursor::new(bytes), ReadLimits::default())?;
    let mut out = VoxelStore::new();
    r.read_all(&mut out, |_, _| {})?;
    Ok(out)
}

fn same_voxels(a: &VoxelStore, b: &VoxelStore) -> bool {
    let region = Region::from_min_size(Point3::new(-32, -32, -32), [128, 128, 128]).unwrap();
    let (mut va, mut vb) = (vec![Voxel::AIR; region.len().unwrap()], vec![Voxel::AIR; region.len().unwrap()]);
    a.read_box(&region, &mut va).unwrap();
    b.read_box(&region, &mut vb).unwrap();
    va == vb && a.chunk_keys() == b.chunk_keys()
}

#[test]
fn terrain_files_load_exactly_what_was_saved() {
    let (store, keys) = small_world();
    for c in [Compression::None, Compression::Lz4] {
        let bytes = file_of(&store, &keys, c);
        let loaded = load(&bytes).unwrap();
        assert!(same_voxels(&store, &loaded));
        // One chunk alone, through the directory.
        let mut r = TerrainFileReader::open(Cursor::new(&bytes), ReadLimits::default()).unwrap();
        let mut chunk = vec![Voxel::AIR; r.chunk_voxels()];
        assert!(r.read_chunk(keys[1], &mut chunk).unwrap());
        let mut expect = vec![Voxel::AIR; chunk.len()];
        store.read_box(&keys[1].region().unwrap(), &mut expect).unwrap();
        assert_eq!(chunk, expect);
        assert!(!r.read_chunk(StoreChunkKey::new(100, 100, 100), &mut chunk).unwrap());
        assert_eq!(r.material_table(), &MaterialTable::default());
    }
}

#[test]
fn every_byte_flip_and_truncation_errors_or_decodes_exactly() {
    // A world small enough to try every byte: two chunks.
    let mut store = VoxelStore::new();
    store
        .fill(&Region::from_min_size(Point3::new(0, 0, 0), [40, 3, 8]).unwrap(), Voxel::full(m::SAND))
        .unwrap();
    store.set(Point3::new(5, 3, 5), Voxel::new(m::GRASS, 99)).unwrap();
    let keys = store.chunk_keys();
    let bytes = file_of(&store, &keys, Compression::Lz4);
    assert!(same_voxels(&store, &load(&bytes).unwrap()));
    let (mut errors, mut exact) = (0, 0);
    for i in 0..bytes.len() {
        for flip in [0x01u8, 0x80, 0xff] {
            let mut bad = bytes.clone();
            bad[i] ^= flip;
            match load(&bad) {
                Err(_) => errors += 1,
                Ok(s) => {
                    assert!(
                        same_voxels(&store, &s),
                        "flip {flip:#x} at byte {i} decoded to a different world"
                    );
                    exact += 1;
                }
            }
        }
    }
    assert!(errors > 0);
    for len in 0..bytes.len() {
        // A cut header or trailer loses a magic; a cut anywhere else leaves a structure short.
        let e = load(&bytes[..len]);
        assert!(
            matches!(e, Err(TerrainFileError::BadMagic { .. } | TerrainFileError::Corrupt { .. })),
            "truncation to {len} bytes: {e:?}"
        );
    }
    eprintln!("{errors} flips rejected, {exact} decoded exactly");
}

#[test]
fn other_chunk_sizes_are_rejected_by_name() {
    let (store, keys) = small_world();
    let mut bytes = file_of(&store, &keys, Compression::Lz4);
    assert_eq!(bytes[10], 5, "the chunk shift byte");
    bytes[10] = 4;
    // Fix the header CRC so only the shift is wrong.
    let json_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let body = 16 + json_len;
    let crc = crc32fast::hash(&bytes[..body]);
    bytes[body..body + 4].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(load(&bytes), Err(TerrainFileError::UnsupportedChunkShift(4))));
}

#[test]
fn malformed_rle_is_a_typed_error_with_offsets() {
    use voxterra_codec::DecodeError::*;
    let mut out = [Voxel::AIR; 4];
    let known = u64::MAX;
    assert_eq!(
        rle::decode_exact(&[0x40, 5, 0x83, 2], &mut out, known),
        Err(AirWithOccupancy { offset: 0, byte: 5 })
    );
    assert_eq!(
        rle::decode_exact(&[0x03, 0x83, 3], &mut out, known),
        Err(RunOverflow { offset: 1, run: 4, remaining: 3 })
    );
    assert_eq!(rle::decode_exact(&[0x83], &mut out, known), Err(Truncated { offset: 0 }));
    assert_eq!(rle::decode_exact(&[0x81], &mut out[..2], known), Err(Truncated { offset: 0 }));
    assert_eq!(
        rle::decode_exact(&[0x01], &mut out, known),
        Err(TooShort { offset: 1, decoded: 1, expected: 4 })
    );
    assert_eq!(rle::decode_exact(&[0x83, 3, 0], &mut out, known), Err(TrailingBytes { offset: 2, extra: 1 }));
    assert_eq!(
        rle::decode_exact(&[0x83, 3], &mut out, 0b111),
        Err(UnknownMaterial { offset: 0, material: 3 })
    );
    // Non-canonical but valid: split runs, explicit full occupancy.
    rle::decode_exact(&[0x81, 1, 0x43, 255, 0x03], &mut out, known).unwrap();
    assert!(out.iter().all(|v| *v == Voxel::full(m::ROCK) || v.material() == m::GRASS));
    let _ = VoxelPos::origin();
}

/// The delta format's exact bytes for a small edit (uncompressed block), and each way a delta is
/// refused, by its variant.
#[test]
fn delta_bytes_and_refusals() {
    use voxterra_codec::delta::{DELTA_MAGIC, decode_delta, encode_delta};
    use voxterra_codec::{Compression, DeltaFormatError};
    let region = Region::from_min_size(Point3::new(-1, 2, 3), [2, 1, 1]).unwrap();
    let voxels = [Voxel::full(m::ROCK), Voxel::new(m::WATER, 127)];
    let mut block = Vec::new();
    encode_voxels(&voxels, Compression::None, &mut BlockScratch::default(), &mut block);
    let bytes = encode_delta(42, &region, &block);
    let hex: Vec<String> = bytes.chunks(16).map(|c| c.iter().map(|b| format!("{b:02x}")).collect()).collect();
    insta::assert_snapshot!(hex.join("\n"));
    assert_eq!(&bytes[..8], &DELTA_MAGIC);
    let d = decode_delta(&bytes, 1 << 10, u64::MAX).unwrap();
    assert_eq!((d.seq, d.region, d.voxels.as_slice()), (42, region, &voxels[..]));

    let resealed = |mut b: Vec<u8>| {
        let body = b.len() - 4;
        let crc = crc32fast::hash(&b[..body]);
        b[body..].copy_from_slice(&crc.to_le_bytes());
        b
    };
    assert_eq!(decode_delta(&bytes[..47], 1 << 10, u64::MAX), Err(DeltaFormatError::Truncated { len: 47 }));
    let mut magic = bytes.clone();
    magic[0] ^= 1;
    assert_eq!(decode_delta(&magic, 1 << 10, u64::MAX), Err(DeltaFormatError::BadMagic));
    let mut flipped = bytes.clone();
    flipped[20] ^= 1;
    assert_eq!(decode_delta(&flipped, 1 << 10, u64::MAX), Err(DeltaFormatError::Checksum));
    let mut inverted = bytes.clone();
    inverted[28..32].copy_from_slice(&(-5i32).to_le_bytes());
    assert!(matches!(
        decode_delta(&resealed(inverted), 1 << 10, u64::MAX),
        Err(DeltaFormatError::BadRegion { .. })
    ));
    assert_eq!(decode_delta(&bytes, 1, u64::MAX), Err(DeltaFormatError::TooLarge { voxels: 2, limit: 1 }));
    assert!(
        matches!(decode_delta(&bytes, 1 << 10, 0b11), Err(DeltaFormatError::Block(_))),
        "water is unknown"
    );
    let mut long = bytes.clone();
    long[40] = long[40].wrapping_add(1);
    assert_eq!(
        decode_delta(&resealed(long), 1 << 10, u64::MAX),
        Err(DeltaFormatError::Truncated { len: bytes.len() })
    );
}
