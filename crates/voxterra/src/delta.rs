//! Edit deltas: what a server sends its clients. Each edit that changed voxels is logged as its
//! dirty region's new content (RLE, LZ4) under its sequence number; [`Terrain::edits_since`]
//! serializes the log from a sequence number on, and [`Terrain::apply_delta`] replays one delta on
//! a replica with the same result. A delta's sequence number names the state it applies to: the
//! source after that many edits. A replica applies only the delta numbered its own
//! [`Terrain::sequence`], so deltas that come repeated, out of order or after a gap are refused.
//! Delta bytes come from another process: every field is checked and bounded before anything is
//! allocated or written, and a refused delta leaves the terrain unchanged.
//!
//! Layout (little endian): magic `VXDELTA1` (8 bytes), sequence number (u64), region min and
//! max (3 + 3 × i32), block length (u32), the codec block (RLE of the region's voxels in buffer
//! order, LZ4 or not), CRC-32 of everything before it (u32).

use crate::terrain::{EditReport, Terrain, TerrainError};
use voxterra_codec::block::{BlockScratch, decode_block, encode_voxels};
use voxterra_codec::{BlockError, Compression};
use voxterra_core::{Region, Voxel, VoxelPos, VoxelRead};

const MAGIC: [u8; 8] = *b"VXDELTA1";
const HEADER: usize = 8 + 8 + 24 + 4;

/// Why delta bytes were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DeltaError {
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
    /// More voxels than the receiving terrain's edit limit.
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
    /// The replica is already past this delta: it was applied before (repeated), or comes after a
    /// later one (reordered).
    #[error("delta {delta} is stale: the replica expects delta {expected}")]
    Stale {
        /// The delta's sequence number.
        delta: u64,
        /// The replica's sequence number: the delta it applies next.
        expected: u64,
    },
    /// Deltas before this one are missing: one was skipped, or this one came early.
    #[error("delta {delta} leaves a gap: the replica expects delta {expected}")]
    Gap {
        /// The delta's sequence number.
        delta: u64,
        /// The replica's sequence number: the delta it applies next.
        expected: u64,
    },
}

/// One logged edit: its sequence number and its dirty region's new content.
#[derive(Clone, Debug)]
pub(crate) struct LoggedEdit {
    pub(crate) seq: u64,
    pub(crate) region: Region,
    pub(crate) block: Vec<u8>,
}

impl LoggedEdit {
    /// Captures `region` of `src` as the content of edit `seq`.
    pub(crate) fn capture(seq: u64, src: &impl VoxelRead, region: &Region) -> Result<Self, TerrainError> {
        let mut voxels = vec![Voxel::AIR; region.len()?];
        src.read_box(region, &mut voxels)?;
        let mut block = Vec::new();
        encode_voxels(&voxels, Compression::Lz4, &mut BlockScratch::default(), &mut block);
        Ok(LoggedEdit { seq, region: *region, block })
    }

    pub(crate) fn bytes(&self) -> usize {
        self.block.len() + HEADER + 4
    }

    /// The wire form.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.bytes());
        out.extend_from_slice(&MAGIC);
        out.extend_from_slice(&self.seq.to_le_bytes());
        for v in [self.region.min(), self.region.max()].iter().flat_map(|p| [p.x, p.y, p.z]) {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&(self.block.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.block);
        let crc = crc32(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

fn crc32(bytes: &[u8]) -> u32 {
    // CRC-32 (IEEE), bitwise: deltas are small, and the facade needs no table or crate for it.
    let mut c = !0u32;
    for &b in bytes {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ 0xEDB8_8320 } else { c >> 1 };
        }
    }
    !c
}

/// A checked delta: its sequence number, region and voxels.
pub(crate) struct Decoded {
    pub(crate) seq: u64,
    pub(crate) region: Region,
    pub(crate) voxels: Vec<Voxel>,
}

/// Checks and decodes delta bytes; allocates at most `max_voxels` voxels, only after the region
/// and the block's declared length have been checked.
pub(crate) fn decode(bytes: &[u8], max_voxels: usize, known_materials: u64) -> Result<Decoded, DeltaError> {
    let truncated = DeltaError::Truncated { len: bytes.len() };
    if bytes.len() < HEADER + 4 {
        return Err(truncated);
    }
    if bytes[..8] != MAGIC {
        return Err(DeltaError::BadMagic);
    }
    let body = bytes.len() - 4;
    let le32 = |at: usize| u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    if crc32(&bytes[..body]) != le32(body) {
        return Err(DeltaError::Checksum);
    }
    let seq = u64::from_le_bytes(bytes[8..16].try_into().map_err(|_| truncated.clone())?);
    let v = |i: usize| le32(16 + 4 * i) as i32;
    let (min, max) = ([v(0), v(1), v(2)], [v(3), v(4), v(5)]);
    let block_len = le32(40) as usize;
    if HEADER.checked_add(block_len) != Some(body) {
        return Err(truncated);
    }
    let region = Region::new(VoxelPos::from(min), VoxelPos::from(max))
        .map_err(|_| DeltaError::BadRegion { min, max })?;
    if region.volume() > max_voxels as u128 {
        return Err(DeltaError::TooLarge { voxels: region.volume(), limit: max_voxels });
    }
    let n = region.len().map_err(|_| DeltaError::BadRegion { min, max })?;
    let mut voxels = vec![Voxel::AIR; n];
    decode_block(&bytes[HEADER..body], &mut voxels, known_materials, &mut BlockScratch::default())?;
    Ok(Decoded { seq, region, voxels })
}

impl Terrain {
    /// The serialized deltas of every logged edit with a sequence number of at least `seq`, in
    /// order: send them to a client that has applied everything before `seq`. Edits older than the
    /// log's byte budget are gone (a client that far behind needs the world file).
    pub fn edits_since(&self, seq: u64) -> Vec<Vec<u8>> {
        self.delta_log().filter(|e| e.seq >= seq).map(LoggedEdit::to_bytes).collect()
    }

    /// Replays one delta from [`Terrain::edits_since`] (of a terrain with the same material table)
    /// on this replica: writes its region through the same path as an edit (masks, cache, history,
    /// render updates, the delta log under the same number, so a replica can relay). The delta
    /// must be the one numbered [`Terrain::sequence`]: an earlier one is
    /// [`DeltaError::Stale`], a later one [`DeltaError::Gap`]. Refused bytes change nothing.
    /// Returns the report and the delta's sequence number; [`Terrain::sequence`] is then one more.
    pub fn apply_delta(&mut self, bytes: &[u8]) -> Result<(EditReport, u64), TerrainError> {
        let known =
            if self.materials().len() >= 64 { u64::MAX } else { (1u64 << self.materials().len()) - 1 };
        let d = decode(bytes, self.max_edit_voxels(), known)?;
        let expected = self.sequence();
        if d.seq < expected {
            return Err(DeltaError::Stale { delta: d.seq, expected }.into());
        }
        if d.seq > expected {
            return Err(DeltaError::Gap { delta: d.seq, expected }.into());
        }
        let report = self.write_logged(d.region, &d.voxels)?;
        if report.dirty.is_none() {
            // The replica held those voxels already; the source's edit still takes its number.
            self.log_unchanged(&d.region)?;
        }
        debug_assert_eq!(self.sequence(), d.seq + 1);
        Ok((report, d.seq))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_matches_the_standard() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }
}
