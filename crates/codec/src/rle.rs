//! The article's RLE voxel format.
//!
//! A box of voxels, in buffer order (X fastest, then Z, then Y), is a sequence of runs. Each run is:
//!
//! | byte | present when | meaning |
//! | --- | --- | --- |
//! | lead | always | bits 0–5 material; bit 6 (0x40) an occupancy byte follows; bit 7 (0x80) a count byte follows |
//! | occupancy | bit 6 | the occupancy byte; left out when it is the default (full for non-air; Air never has one) |
//! | count | bit 7 | run length − 1 (runs of 2..=256); without it the run is one voxel |
//!
//! Longer runs are split. A 32³ chunk of one material at default occupancy is 128 runs of 2 bytes:
//! 256 bytes. The encoder is canonical (maximal runs, bytes only when needed); the decoder also
//! accepts split runs and explicit default occupancy bytes, and rejects everything else that is not
//! a box of valid voxels.

use crate::DecodeError;
use voxterra_core::{Material, Voxel};

/// Lead-byte flag: an occupancy byte follows.
pub const OCCUPANCY_FLAG: u8 = 0x40;
/// Lead-byte flag: a count byte (run length − 1) follows.
pub const COUNT_FLAG: u8 = 0x80;
/// The longest run one record holds.
pub const MAX_RUN: usize = 256;

/// The largest RLE stream a box of `voxels` voxels can have, even non-canonical (3 bytes a voxel):
/// the bound every decoder checks declared lengths against.
pub fn max_encoded_len(voxels: usize) -> usize {
    voxels.saturating_mul(3)
}

/// Streams voxels into RLE bytes. Push slices (or runs) in buffer order, then [`finish`](Self::finish).
#[derive(Debug)]
pub struct RleEncoder<'a> {
    out: &'a mut Vec<u8>,
    current: Voxel,
    count: usize,
}

impl<'a> RleEncoder<'a> {
    /// An encoder appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Self {
        RleEncoder { out, current: Voxel::AIR, count: 0 }
    }

    /// Appends `count` copies of `voxel`.
    #[inline]
    pub fn push_run(&mut self, voxel: Voxel, count: usize) {
        if count == 0 {
            return;
        }
        if self.count > 0 && voxel != self.current {
            self.flush();
        }
        self.current = voxel;
        self.count += count;
    }

    /// Appends the voxels of `row` in order.
    #[inline]
    pub fn push_slice(&mut self, row: &[Voxel]) {
        // PERF: most rows of real terrain are uniform and continue the current run (air above the
        // surface, rock below): one vectorized comparison of the whole row, no run splitting.
        if self.count > 0 && all_equal(row, self.current) {
            self.count += row.len();
            return;
        }
        // PERF: a full store row gets its run boundaries from one vectorized pass; the runs are then
        // the gaps between set bits.
        if let Ok(row32) = <&[Voxel; 32]>::try_from(row) {
            let mut prev = row32[0].to_bits();
            let mut boundaries = 0u32;
            for (i, v) in row32.iter().enumerate().skip(1) {
                let b = v.to_bits();
                boundaries |= ((b != prev) as u32) << i;
                prev = b;
            }
            let mut start = 0usize;
            while boundaries != 0 {
                let end = boundaries.trailing_zeros() as usize;
                self.push_run(row32[start], end - start);
                start = end;
                boundaries &= boundaries - 1;
            }
            self.push_run(row32[start], 32 - start);
            return;
        }
        let mut rest = row;
        while let Some(&v) = rest.first() {
            let n = run_length(rest, v);
            self.push_run(v, n);
            rest = &rest[n..];
        }
    }

    #[inline]
    fn flush(&mut self) {
        let (v, mut n) = (self.current, self.count);
        while n > MAX_RUN {
            emit(self.out, v, MAX_RUN);
            n -= MAX_RUN;
        }
        if n > 0 {
            emit(self.out, v, n);
        }
        self.count = 0;
    }

    /// Writes the last run.
    pub fn finish(mut self) {
        self.flush();
    }
}

/// Writes one run of `n` (1..=256) copies of `v`. PERF: byte pushes, not `extend_from_slice` of
/// a variable 1–3 bytes (which profiled as a memcpy call per run).
#[inline]
fn emit(out: &mut Vec<u8>, v: Voxel, n: usize) {
    let with_occupancy = !v.has_default_occupancy();
    out.push(v.material().id() | (with_occupancy as u8) << 6 | ((n > 1) as u8) << 7);
    if with_occupancy {
        out.push(v.occupancy_byte());
    }
    if n > 1 {
        out.push((n - 1) as u8);
    }
}

/// True when every voxel of `s` is `v`. No early exit, so it vectorizes.
#[inline]
fn all_equal(s: &[Voxel], v: Voxel) -> bool {
    let bits = v.to_bits();
    s.iter().fold(true, |acc, x| acc & (x.to_bits() == bits))
}

/// Bit `i` set when `block[i] != v` (16 voxels). No early exit, so it compiles to vector compares
/// and a move-mask.
#[inline]
fn mismatch_mask(block: &[Voxel], bits: u16) -> u32 {
    block.iter().enumerate().fold(0u32, |m, (i, x)| m | ((x.to_bits() != bits) as u32) << i)
}

/// How many voxels at the start of `s` equal `v` (at least 1 when `s[0] == v`).
#[inline]
fn run_length(s: &[Voxel], v: Voxel) -> usize {
    // PERF: 16 voxels per step; the first mismatch is the mask's lowest set bit.
    let bits = v.to_bits();
    let mut n = 0;
    for block in s.chunks_exact(16) {
        let m = mismatch_mask(block, bits);
        if m != 0 {
            return n + m.trailing_zeros() as usize;
        }
        n += 16;
    }
    let tail = &s[n..];
    let m = mismatch_mask(tail, bits);
    n + if m != 0 { m.trailing_zeros() as usize } else { tail.len() }
}

/// Encodes a dense box (any voxels, in buffer order) and appends the bytes to `out`.
pub fn encode(voxels: &[Voxel], out: &mut Vec<u8>) {
    let mut e = RleEncoder::new(out);
    e.push_slice(voxels);
    e.finish();
}

/// Decodes one box's worth of runs from the start of `data` into `out` (whose length is the box's
/// voxel count). `known` has bit `id` set for every material id allowed (`u64::MAX`: any). Returns
/// the bytes consumed; bytes after the box are the caller's business (see [`decode_exact`]).
pub fn decode_prefix(data: &[u8], out: &mut [Voxel], known: u64) -> Result<usize, DecodeError> {
    let mut pos = 0usize;
    let mut at = 0usize;
    while at < out.len() {
        let start = pos;
        let Some(&lead) = data.get(pos) else {
            return Err(DecodeError::TooShort { offset: pos, decoded: at, expected: out.len() });
        };
        pos += 1;
        let id = lead & 0x3f;
        if known >> id & 1 == 0 {
            return Err(DecodeError::UnknownMaterial { offset: start, material: id });
        }
        let material = Material::from_low_bits(id);
        let occupancy = if lead & OCCUPANCY_FLAG != 0 {
            let &b = data.get(pos).ok_or(DecodeError::Truncated { offset: start })?;
            pos += 1;
            if id == 0 {
                return Err(DecodeError::AirWithOccupancy { offset: start, byte: b });
            }
            b
        } else {
            255
        };
        let count = if lead & COUNT_FLAG != 0 {
            let &c = data.get(pos).ok_or(DecodeError::Truncated { offset: start })?;
            pos += 1;
            c as usize + 1
        } else {
            1
        };
        let remaining = out.len() - at;
        if count > remaining {
            return Err(DecodeError::RunOverflow { offset: start, run: count, remaining });
        }
        out[at..at + count].fill(Voxel::new(material, occupancy));
        at += count;
    }
    Ok(pos)
}

/// Decodes `data`, which must hold exactly one box of `out.len()` voxels.
pub fn decode_exact(data: &[u8], out: &mut [Voxel], known: u64) -> Result<(), DecodeError> {
    let used = decode_prefix(data, out, known)?;
    if used != data.len() {
        return Err(DecodeError::TrailingBytes { offset: used, extra: data.len() - used });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_chunk_is_256_bytes() {
        let rock = Voxel::full(Material::new(3).unwrap());
        let mut out = Vec::new();
        encode(&vec![rock; 32 * 32 * 32], &mut out);
        assert_eq!(out.len(), 256);
        assert_eq!(&out[..2], &[0x83, 0xff]);
        let mut back = vec![Voxel::AIR; 32 * 32 * 32];
        decode_exact(&out, &mut back, u64::MAX).unwrap();
        assert!(back.iter().all(|v| *v == rock));
    }

    #[test]
    fn run_length_matches_scalar() {
        let a = Voxel::full(Material::new(1).unwrap());
        for len in 0..40 {
            for cut in 0..=len {
                let mut s = vec![a; len];
                if cut < len {
                    s[cut] = Voxel::AIR;
                }
                if len > 0 {
                    assert_eq!(run_length(&s, a), cut.min(len), "len {len} cut {cut}");
                }
            }
        }
    }
}
