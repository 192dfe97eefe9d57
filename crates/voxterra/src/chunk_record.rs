//! A chunk's record in a chunk database: magic, the CRC-32 of the block, the codec's block of the
//! chunk's 32³ voxels.

use crate::error::DurableError;
use voxterra_codec::block::{decode_block, encode_voxels};
use voxterra_codec::{BlockScratch, Compression};
use voxterra_core::{StoreChunkKey, Voxel};

const MAGIC: &[u8; 4] = b"VXC1";
/// Voxels in a stored chunk.
pub const CHUNK_VOXELS: usize = 32 * 32 * 32;

/// The record of one chunk's voxels (32³, buffer order), LZ4-compressed.
pub fn encode_chunk(voxels: &[Voxel]) -> Vec<u8> {
    let mut block = Vec::new();
    encode_voxels(voxels, Compression::Lz4, &mut BlockScratch::default(), &mut block);
    let mut out = Vec::with_capacity(8 + block.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&crc32fast::hash(&block).to_le_bytes());
    out.extend_from_slice(&block);
    out
}

/// Decodes chunk `key`'s record into `out` (32³ voxels); `known` is the bit mask of material ids
/// the world's table has. A damaged record is [`DurableError::DamagedChunk`], never other voxels.
pub fn decode_chunk(
    key: StoreChunkKey,
    record: &[u8],
    out: &mut [Voxel],
    known: u64,
) -> Result<(), DurableError> {
    let damaged = |why: String| DurableError::DamagedChunk { key: key.to_array(), why };
    if out.len() != CHUNK_VOXELS {
        return Err(damaged(format!("a buffer of {} voxels, not {CHUNK_VOXELS}", out.len())));
    }
    if record.len() < 8 || &record[..4] != MAGIC {
        return Err(damaged("too short, or not a chunk record".into()));
    }
    let block = &record[8..];
    let crc = u32::from_le_bytes([record[4], record[5], record[6], record[7]]);
    if crc32fast::hash(block) != crc {
        return Err(damaged("checksum mismatch".into()));
    }
    decode_block(block, out, known, &mut BlockScratch::default()).map_err(|e| damaged(e.to_string()))
}
