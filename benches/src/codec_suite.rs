//! Suite `codec`: the RLE format and RLE+LZ4 against LZ4 alone on the raw 2-byte voxels, chunk by
//! chunk over the default world; plus the whole save and load beside the time to generate.

use crate::harness::{Budget, Metric, Report, compare};
use crate::world::bench_world;
use std::time::Instant;
use voxterra_codec::block::{BlockScratch, decode_block, encode_block};
use voxterra_codec::{Compression, RleEncoder, rle};
use voxterra_core::{MaterialTable, Region, Voxel, VoxelRead};
use voxterra_voxel_store::{CHUNK_SHIFT, VoxelStore};

const PEER: &str = "lz4_flex raw";

fn raw_bytes(voxels: &[Voxel]) -> Vec<u8> {
    voxels.iter().flat_map(|v| [v.material().id(), v.occupancy_byte()]).collect()
}

fn encode_chunk_rle(store: &VoxelStore, region: &Region, out: &mut Vec<u8>) {
    out.clear();
    let mut enc = RleEncoder::new(out);
    store.visit_rows(region, &mut |_, row| enc.push_slice(row));
    enc.finish();
}

/// The peer's decode: every raw chunk's LZ4 block into one buffer; returns how many decoded.
fn lz4_decode_all(blocks: &[Vec<u8>], out: &mut [u8]) -> usize {
    blocks.iter().filter(|b| lz4_flex::block::decompress_into(b, out).is_ok()).count()
}

/// Runs the suite.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let gen_start = Instant::now();
    let w = bench_world(quick);
    let gen_seconds = gen_start.elapsed().as_secs_f64();
    let store = &w.store;
    let keys = store.chunk_keys();
    let regions: Vec<Region> = keys.iter().map(|k| k.region().expect("stored chunk")).collect();
    let chunk_voxels = 1usize << (3 * CHUNK_SHIFT);
    let total_voxels = (regions.len() * chunk_voxels) as u64;
    let non_empty = store.stats().non_empty_voxels as f64;
    let [sx, sy, sz] = w.params.size;
    let mut report = Report {
        suite: "codec".into(),
        setup: format!(
            "default world {sx}x{sy}x{sz}, seed {}: {} chunks of 32^3, one core; peer: LZ4 (lz4_flex) alone on the raw 2-byte voxels",
            w.params.seed,
            regions.len()
        ),
        ..Report::default()
    };

    // Reference data, untimed: each chunk dense, its raw bytes, RLE, RLE+LZ4 block, LZ4 of raw.
    let dense: Vec<Vec<Voxel>> = regions
        .iter()
        .map(|r| {
            let mut v = vec![Voxel::AIR; chunk_voxels];
            store.read_box(r, &mut v).expect("sized");
            v
        })
        .collect();
    let raw: Vec<Vec<u8>> = dense.iter().map(|v| raw_bytes(v)).collect();
    let rles: Vec<Vec<u8>> = regions
        .iter()
        .map(|r| {
            let mut b = Vec::new();
            encode_chunk_rle(store, r, &mut b);
            b
        })
        .collect();
    let blocks: Vec<Vec<u8>> = rles
        .iter()
        .map(|r| {
            let mut b = Vec::new();
            encode_block(r, Compression::Lz4, &mut b);
            b
        })
        .collect();
    let lz4_raw: Vec<Vec<u8>> = raw.iter().map(|r| lz4_flex::block::compress(r)).collect();
    // Correctness before timing: every chunk decodes back exactly, both ways.
    let mut scratch = BlockScratch::default();
    let mut buf = vec![Voxel::AIR; chunk_voxels];
    let mut raw_buf = vec![0u8; chunk_voxels * 2];
    for i in 0..regions.len() {
        rle::decode_exact(&rles[i], &mut buf, u64::MAX).expect("own RLE decodes");
        assert!(buf == dense[i], "RLE round trip of chunk {i}");
        decode_block(&blocks[i], &mut buf, u64::MAX, &mut scratch).expect("own block decodes");
        assert!(buf == dense[i], "RLE+LZ4 round trip of chunk {i}");
        let n = lz4_flex::block::decompress_into(&lz4_raw[i], &mut raw_buf).expect("lz4 decodes");
        assert!(n == raw_buf.len() && raw_buf == raw[i], "LZ4 round trip of chunk {i}");
    }
    let sum = |v: &[Vec<u8>]| v.iter().map(Vec::len).sum::<usize>() as f64;
    for (name, bytes, goal) in [
        ("RLE bytes/non-empty voxel", sum(&rles), "<= 0.07 (Roblox: 0.07)"),
        ("RLE+LZ4 bytes/non-empty voxel", sum(&blocks), "<= 0.05 (Roblox: 0.05)"),
    ] {
        report.metrics.push(Metric {
            name: name.into(),
            voxterra: bytes / non_empty,
            peer: sum(&lz4_raw) / non_empty,
            peer_name: PEER.into(),
            goal: goal.into(),
        });
    }

    // Encoding, straight from the store's rows; the peer compresses ready-made raw chunk bytes.
    let mut out = Vec::with_capacity(1 << 17);
    let mut peer_out = vec![0u8; lz4_flex::block::get_maximum_output_size(chunk_voxels * 2)];
    report.cases.push(compare(
        budget,
        "RLE encode",
        "voxel",
        total_voxels,
        PEER,
        ">= 1 G voxels/s per core (<= 1 ns)",
        || {
            regions
                .iter()
                .map(|r| {
                    encode_chunk_rle(store, r, &mut out);
                    out.len()
                })
                .count()
        },
        || raw.iter().map(|r| lz4_flex::block::compress_into(r, &mut peer_out).expect("sized")).count(),
    ));
    let mut rle_buf = Vec::with_capacity(1 << 17);
    report.cases.push(compare(
        budget,
        "RLE+LZ4 encode",
        "voxel",
        total_voxels,
        PEER,
        "smaller and faster than LZ4 alone",
        || {
            regions
                .iter()
                .map(|r| {
                    encode_chunk_rle(store, r, &mut rle_buf);
                    out.clear();
                    encode_block(&rle_buf, Compression::Lz4, &mut out);
                    out.len()
                })
                .count()
        },
        || raw.iter().map(|r| lz4_flex::block::compress_into(r, &mut peer_out).expect("sized")).count(),
    ));
    // Decoding into a dense chunk; the peer decompresses to raw bytes (and skips validating them).
    report.cases.push(compare(
        budget,
        "RLE decode",
        "voxel",
        total_voxels,
        PEER,
        ">= 1 G voxels/s per core (<= 1 ns)",
        || rles.iter().map(|r| rle::decode_exact(r, &mut buf, u64::MAX).is_ok()).filter(|ok| *ok).count(),
        || lz4_decode_all(&lz4_raw, &mut raw_buf),
    ));
    report.cases.push(compare(
        budget,
        "RLE+LZ4 decode",
        "voxel",
        total_voxels,
        PEER,
        ">= 500 M voxels/s per core (<= 2 ns)",
        || {
            blocks
                .iter()
                .map(|b| decode_block(b, &mut buf, u64::MAX, &mut scratch).is_ok())
                .filter(|ok| *ok)
                .count()
        },
        || lz4_decode_all(&lz4_raw, &mut raw_buf),
    ));

    // The whole save and load of the world, beside generating it.
    let dir = std::env::temp_dir().join(format!("voxterra-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("world.vxt");
    let table = MaterialTable::default();
    let t = Instant::now();
    let file = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let (file, saved) =
        voxterra_codec::write_terrain_file(file, store, &keys, &table, Default::default(), |_, _| {})
            .expect("save");
    file.into_inner().expect("flush").sync_all().expect("sync");
    let save_seconds = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut reader = voxterra_codec::TerrainFileReader::open_path(&path, Default::default()).expect("open");
    let mut loaded = VoxelStore::new();
    reader.read_all(&mut loaded, |_, _| {}).expect("load");
    let load_seconds = t.elapsed().as_secs_f64();
    let world = w.params.region().expect("valid");
    let (mut a, mut b) =
        (vec![Voxel::AIR; world.len().expect("fits")], vec![Voxel::AIR; world.len().expect("fits")]);
    store.read_box(&world, &mut a).expect("sized");
    loaded.read_box(&world, &mut b).expect("sized");
    assert!(a == b, "the loaded world differs from the saved one");
    std::fs::remove_dir_all(&dir).expect("cleanup");
    report.metrics.push(Metric {
        name: "terrain file bytes/non-empty".into(),
        voxterra: saved.bytes as f64 / non_empty,
        peer: sum(&lz4_raw) / non_empty,
        peer_name: PEER.into(),
        goal: format!("{:.2} MiB file", saved.bytes as f64 / 1048576.0),
    });
    report.metrics.push(Metric {
        name: "save / load seconds".into(),
        voxterra: save_seconds,
        peer: load_seconds,
        peer_name: "(load)".into(),
        goal: format!("generating the world: {gen_seconds:.2} s"),
    });
    report
}
