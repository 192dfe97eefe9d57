//! Fuzz target bodies. `fuzz/` (cargo-fuzz) calls them on arbitrary bytes; a normal test replays the
//! committed corpus through them on stable. Each must never panic, and checks what must hold.

use crate::block::{BlockScratch, Compression, decode_block, encode_voxels};
use crate::delta::{self, encode_delta};
use crate::file::{ReadLimits, TerrainFileReader};
use crate::rle;
use voxterra_core::{Material, Voxel};

/// Box dimensions from the first three bytes (1..=16 each), the rest is the payload.
fn split_dims(data: &[u8]) -> Option<(usize, &[u8])> {
    let (d, rest) = data.split_at_checked(3)?;
    let n = d.iter().map(|&b| (b as usize % 16) + 1).product();
    Some((n, rest))
}

/// Decodes arbitrary bytes as an RLE box; whatever decodes must re-encode to a stream that decodes
/// to the same voxels.
pub fn check_decode_rle(data: &[u8]) {
    let Some((n, stream)) = split_dims(data) else { return };
    let mut out = vec![Voxel::AIR; n];
    if rle::decode_exact(stream, &mut out, u64::MAX).is_ok() {
        let mut again = Vec::new();
        rle::encode(&out, &mut again);
        assert!(again.len() <= stream.len(), "the canonical encoding is never longer");
        let mut back = vec![Voxel::AIR; n];
        rle::decode_exact(&again, &mut back, u64::MAX).expect("canonical encodings decode");
        assert_eq!(back, out);
    }
    // The same bytes as a block: errors, never panics.
    let _ = decode_block(stream, &mut out, u64::MAX, &mut BlockScratch::default());
}

/// Arbitrary voxel boxes round-trip exactly through RLE and both block compressors.
pub fn check_roundtrip(data: &[u8]) {
    let voxels: Vec<Voxel> =
        data.chunks_exact(2).map(|p| Voxel::new(Material::from_low_bits(p[0] % 8), p[1])).collect();
    let mut scratch = BlockScratch::default();
    for c in [Compression::None, Compression::Lz4] {
        let mut block = Vec::new();
        encode_voxels(&voxels, c, &mut scratch, &mut block);
        let mut back = vec![Voxel::AIR; voxels.len()];
        decode_block(&block, &mut back, u64::MAX, &mut scratch).expect("own encodings decode");
        assert_eq!(back, voxels);
    }
}

/// Opens arbitrary bytes as a terrain file and reads every chunk it lists: errors, never panics.
pub fn check_open_world(data: &[u8]) {
    let limits = ReadLimits { max_chunks: 4096 };
    if let Ok(mut r) = TerrainFileReader::open(std::io::Cursor::new(data), limits) {
        let mut out = vec![Voxel::AIR; r.chunk_voxels()];
        let keys: Vec<_> = r.entries().iter().map(|e| e.key).collect();
        for k in keys {
            let _ = r.read_chunk(k, &mut out);
        }
    }
}

/// Decodes arbitrary bytes as an edit delta (within a 2^18-voxel limit, every material known):
/// errors or succeeds, never panics; what decodes re-encodes (voxels re-blocked) to bytes that
/// decode to the same delta.
pub fn check_decode_delta(data: &[u8]) {
    if let Ok(d) = decode_delta_bytes(data) {
        let mut block = Vec::new();
        encode_voxels(&d.voxels, Compression::Lz4, &mut BlockScratch::default(), &mut block);
        let again = encode_delta(d.seq, &d.region, &block);
        assert_eq!(decode_delta_bytes(&again).as_ref(), Ok(&d), "a decoded delta re-encodes to itself");
    }
}

fn decode_delta_bytes(data: &[u8]) -> Result<crate::Delta, crate::DeltaFormatError> {
    delta::decode_delta(data, 1 << 18, u64::MAX)
}

/// Decodes arbitrary bytes as a network packet of the box they declare (every material known):
/// errors, never panics; whatever decodes re-encodes to a packet that decodes alike.
pub fn check_decode_packet(data: &[u8]) {
    let Ok(size) = crate::packet::packet_size(data) else { return };
    let mut out = vec![Voxel::AIR; size.iter().product()];
    if crate::packet::decode_packet(data, size, u64::MAX, &mut out).is_ok() {
        let mut again = Vec::new();
        crate::packet::encode_packet(&out, size, &mut again);
        let mut back = vec![Voxel::AIR; out.len()];
        crate::packet::decode_packet(&again, size, u64::MAX, &mut back).expect("own packets decode");
        assert_eq!(back, out);
    }
}
