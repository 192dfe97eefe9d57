//! Criterion benches of the codec: RLE encode/decode and LZ4 blocks on real terrain chunks.

#![allow(clippy::unwrap_used)] // bench setup: a failed unwrap is a broken bench
#![allow(missing_docs)] // criterion_main! generates an undocumented main

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use voxterra_benches::world::bench_world;
use voxterra_codec::block::{BlockScratch, decode_block, encode_block};
use voxterra_codec::{Compression, RleEncoder, rle};
use voxterra_core::{Voxel, VoxelRead};

fn codec(c: &mut Criterion) {
    let w = bench_world(true);
    // A surface chunk: the hardest common case.
    let key =
        *w.store.chunk_keys().iter().max_by_key(|k| w.store.chunk(**k).unwrap().allocated_rows()).unwrap();
    let region = key.region().unwrap();
    let mut dense = vec![Voxel::AIR; 32 * 32 * 32];
    w.store.read_box(&region, &mut dense).unwrap();
    let mut stream = Vec::new();
    rle::encode(&dense, &mut stream);
    let mut block = Vec::new();
    encode_block(&stream, Compression::Lz4, &mut block);
    let mut out = vec![Voxel::AIR; dense.len()];
    rle::decode_exact(&stream, &mut out, u64::MAX).unwrap();
    assert_eq!(out, dense);
    // Check each timed path's answer once: encoding from the store's rows gives the dense
    // encoding's bytes, and the LZ4 block decodes to the chunk.
    let mut from_rows = Vec::new();
    let mut e = RleEncoder::new(&mut from_rows);
    w.store.visit_rows(&region, &mut |_, row| e.push_slice(row));
    e.finish();
    assert_eq!(from_rows, stream);
    let mut check = BlockScratch::default();
    out.fill(Voxel::AIR);
    decode_block(&block, &mut out, u64::MAX, &mut check).unwrap();
    assert_eq!(out, dense);

    let mut g = c.benchmark_group("codec");
    g.throughput(Throughput::Elements(dense.len() as u64));
    let mut buf = Vec::with_capacity(1 << 17);
    g.bench_function("rle encode from store rows (surface chunk)", |b| {
        b.iter(|| {
            buf.clear();
            let mut e = RleEncoder::new(&mut buf);
            w.store.visit_rows(&region, &mut |_, row| e.push_slice(row));
            e.finish();
            buf.len()
        })
    });
    g.bench_function("rle decode (surface chunk)", |b| {
        b.iter(|| rle::decode_exact(&stream, &mut out, u64::MAX).unwrap())
    });
    let mut scratch = BlockScratch::default();
    g.bench_function("rle+lz4 decode (surface chunk)", |b| {
        b.iter(|| decode_block(&block, &mut out, u64::MAX, &mut scratch).unwrap())
    });
    g.finish();
}

criterion_group!(benches, codec);
criterion_main!(benches);
