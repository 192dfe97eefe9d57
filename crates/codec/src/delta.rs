//! Edit deltas on the wire: one edit's region and its new voxels under the edit's sequence number,
//! what a server sends its clients. The layout is documented in `docs/format.md`.
//!
//! Delta bytes come from another process: every field is checked and bounded before anything is
//! allocated (the region against the caller's voxel limit, the block's declared length against the
//! bytes given) and the voxels' materials against the caller's table.
//!
//! ```
//! use voxterra_codec::delta::{decode_delta, encode_delta};
//! use voxterra_codec::{BlockScratch, Compression, block::encode_voxels};
//! use voxterra_core::{Region, Voxel, VoxelPos, materials};
//!
//! let region = Region::from_min_size(VoxelPos::new(4, 0, -2), [2, 1, 2])?;
//! let voxels = vec![Voxel::full(materials::ROCK); 4];
//! let mut block = Vec::new();
//! encode_voxels(&voxels, Compression::Lz4, &mut BlockScratch::default(), &mut block);
//! let bytes = encode_delta(7, &region, &block);
//! let d = decode_delta(&bytes, 1 << 20, u64::MAX)?;
//! assert_eq!((d.seq, d.region, d.voxels), (7, region, voxels));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::block::{BlockScratch, decode_block};
use crate::error::BlockError;
use voxterra_core::{Region, Voxel, VoxelPos};

/// The first 8 bytes of every delta.
pub const DELTA_MAGIC: [u8; 8] = *b"VXDELTA1";
/// Bytes before the block: magic, sequence number, region corners, block length.
const HEADER: usize = 8 + 8 + 24 + 4;
/// The CRC-32 after the block.
const TRAILER: usize = 4;

/// Why delta bytes were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DeltaFormatError {
    /// Shorter than a header and checksum, or the block length disagrees with the size.
    #[error("truncated or mis-sized delta ({len} bytes)")]
    Truncated {
        /// Bytes given.
        len: usize,
    },
    /// Not a voxterra delta.
    #[error("not a voxterra delta (bad magic)")]
    BadMagic,
    /// The checksum does not match.
    #[error("delta checksum mismatch")]
    Checksum,
    /// An inverted or overflowing region.
    #[error("invalid delta region {min:?}..{max:?}")]
    BadRegion {
        /// Minimum corner as sent.
        min: [i32; 3],
        /// Maximum corner as sent.
        max: [i32; 3],
    },
    /// More voxels than the receiver allows.
    #[error("delta of {voxels} voxels over the limit of {limit}")]
    TooLarge {
        /// Voxels in the region.
        voxels: u128,
        /// The receiver's limit.
        limit: usize,
    },
    /// The voxel block does not decode to the region (or names unknown materials).
    #[error("delta voxels: {0}")]
    Block(#[from] BlockError),
}

/// A decoded delta.
#[derive(Clone, PartialEq, Debug)]
pub struct Delta {
    /// The edit's sequence number: the state it applies to is the source after this many edits.
    pub seq: u64,
    /// The region the edit rewrote.
    pub region: Region,
    /// Its voxels, in the region's buffer order (X fastest, then Z, then Y).
    pub voxels: Vec<Voxel>,
}

/// The wire size of a delta whose codec block is `block_len` bytes.
pub fn encoded_len(block_len: usize) -> usize {
    HEADER + block_len + TRAILER
}

/// The wire form of edit `seq` over `region`, whose voxels are `block` (a codec block of the
/// region's voxels in buffer order, as `block::encode_voxels` makes it).
pub fn encode_delta(seq: u64, region: &Region, block: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(encoded_len(block.len()));
    out.extend_from_slice(&DELTA_MAGIC);
    out.extend_from_slice(&seq.to_le_bytes());
    for v in [region.min(), region.max()].iter().flat_map(|p| [p.x, p.y, p.z]) {
        out.extend_from_slice(&v.to_le_bytes());
    }
    // A block over 4 GiB would need a region past any edit limit: saturate rather than wrap, so
    // the receiver refuses it as mis-sized.
    out.extend_from_slice(&u32::try_from(block.len()).unwrap_or(u32::MAX).to_le_bytes());
    out.extend_from_slice(block);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks and decodes delta bytes: allocates at most `max_voxels` voxels, only after the
/// checksum, the region and the block's declared length have been checked; `known` is the mask of
/// the receiver's materials (bit `i` for material `i`).
pub fn decode_delta(bytes: &[u8], max_voxels: usize, known: u64) -> Result<Delta, DeltaFormatError> {
    let truncated = DeltaFormatError::Truncated { len: bytes.len() };
    if bytes.len() < HEADER + TRAILER {
        return Err(truncated);
    }
    if bytes[..8] != DELTA_MAGIC {
        return Err(DeltaFormatError::BadMagic);
    }
    let body = bytes.len() - TRAILER;
    let le32 = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    if crc32fast::hash(&bytes[..body]) != le32(body) {
        return Err(DeltaFormatError::Checksum);
    }
    let seq = u64::from(le32(8)) | (u64::from(le32(12)) << 32);
    let corner = |i: usize| le32(16 + 4 * i) as i32;
    let (min, max) = ([corner(0), corner(1), corner(2)], [corner(3), corner(4), corner(5)]);
    let block_len = le32(40) as usize;
    if HEADER.checked_add(block_len) != Some(body) {
        return Err(truncated);
    }
    let region = Region::new(VoxelPos::from(min), VoxelPos::from(max))
        .map_err(|_| DeltaFormatError::BadRegion { min, max })?;
    if region.volume() > max_voxels as u128 {
        return Err(DeltaFormatError::TooLarge { voxels: region.volume(), limit: max_voxels });
    }
    let n = region.len().map_err(|_| DeltaFormatError::BadRegion { min, max })?;
    let mut voxels = vec![Voxel::AIR; n];
    decode_block(&bytes[HEADER..body], &mut voxels, known, &mut BlockScratch::default())?;
    Ok(Delta { seq, region, voxels })
}
