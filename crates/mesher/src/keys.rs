//! Corner keys: each voxel of the padded box as the mesher needs it, in 16 bits.
//!
//! A key is 0 when the voxel's material is not matter for the surface being meshed, else the
//! material id in bits 9.. and the occupancy byte plus one (the density in 256ths, 1 to 256) in
//! bits 0..9. Air (id 0) is never matter, so 0 always means "not matter". The read pass turns every
//! voxel into its key once, so corners need no material lookups. Rows convert 8 voxels at a time,
//! matter tested by comparing ids with up to three ranges (terrain tables need one or two), so no
//! voxel needs a table lookup unless the matter set is more scattered than that.

use voxterra_core::Voxel;
use wide::i16x8;

/// A voxel as a cell corner (see the module docs).
pub(crate) type Key = u16;

/// 1 when the key's density is above one half (occupancy byte 128 or more), else 0.
#[inline(always)]
pub(crate) fn key_inside(k: Key) -> u16 {
    ((k & 511) + 127) >> 8
}

/// Ranges of matter ids the lane path tests; tables needing more take the lookup path.
const RANGES: usize = 3;

/// How to turn voxels into keys for one set of matter materials.
pub(crate) struct KeyTable {
    /// Per material id: `id << 9 | 1` for matter, 0 otherwise; add the occupancy byte for matter.
    bases: [Key; 64],
    /// The matter ids as at most [`RANGES`] inclusive ranges, as `(lo - 1, hi + 1)` for lane
    /// compares (spare ranges match nothing), when they fit; terrain tables need one or two.
    ranges: Option<[(i16, i16); RANGES]>,
}

impl KeyTable {
    /// The table for the materials whose bits are set in `matter` (air's bit is ignored).
    pub(crate) fn new(matter: u64) -> Self {
        let matter = matter & !1;
        let bases = std::array::from_fn(|m| if matter >> m & 1 != 0 { (m as Key) << 9 | 1 } else { 0 });
        let mut ranges = [(i16::MAX, i16::MIN); RANGES];
        let (mut n, mut rest) = (0, matter);
        while rest != 0 && n <= RANGES {
            let lo = rest.trailing_zeros();
            let len = (rest >> lo).trailing_ones();
            if n < RANGES {
                ranges[n] = (lo as i16 - 1, (lo + len) as i16);
            }
            n += 1;
            rest &= if lo + len >= 64 { 0 } else { u64::MAX << (lo + len) };
        }
        KeyTable { bases, ranges: (n <= RANGES).then_some(ranges) }
    }

    /// The key of one voxel.
    #[inline(always)]
    pub(crate) fn key(&self, v: Voxel) -> Key {
        let bits = v.to_bits();
        let base = self.bases[(bits & 63) as usize];
        (base + (bits >> 8)) * (base != 0) as Key
    }

    /// Writes the keys of `row` (at most 64 voxels) to `keys`; returns the inside bits (bit `i` for
    /// `row[i]`).
    #[inline]
    pub(crate) fn convert(&self, row: &[Voxel], keys: &mut [Key]) -> u64 {
        debug_assert!(row.len() <= 64 && row.len() == keys.len());
        let n = row.len();
        let Some(ranges) = self.ranges.filter(|_| n >= 8) else {
            return self.convert_by_lookup(row, keys);
        };
        // 8 lanes at a time, matter by range compares instead of a lookup per voxel. A ragged end
        // is done as the last 8 voxels, overlapping the previous group (same keys rewritten).
        let lanes = |at: usize, keys: &mut [Key]| -> u64 {
            let v8 = &row[at..at + 8];
            let bits = i16x8::new(std::array::from_fn(|i| v8[i].to_bits() as i16));
            let m = bits & i16x8::splat(63);
            let mut matter = i16x8::ZERO;
            for &(below, above) in &ranges {
                matter |= m.simd_gt(i16x8::splat(below)) & i16x8::splat(above).simd_gt(m);
            }
            let level = ((bits >> 8i32) & i16x8::splat(255)) + i16x8::splat(1);
            let key = ((m << 9i32) | level) & matter;
            keys[at..at + 8].copy_from_slice(&key.to_array().map(|k| k as Key));
            let inside = level.simd_gt(i16x8::splat(128)) & matter;
            (inside.to_bitmask() as u64) << at
        };
        let mut inside = 0u64;
        for at in (0..n - 7).step_by(8) {
            inside |= lanes(at, keys);
        }
        if !n.is_multiple_of(8) {
            inside |= lanes(n - 8, keys);
        }
        inside
    }

    /// [`KeyTable::convert`] by one lookup per voxel.
    fn convert_by_lookup(&self, row: &[Voxel], keys: &mut [Key]) -> u64 {
        for (&v, k) in row.iter().zip(keys.iter_mut()) {
            *k = self.key(v);
        }
        inside_bits(keys)
    }
}

/// Bit `i` set when `keys[i]` is inside (at most 64 keys), 8 lanes at a time.
#[inline(always)]
fn inside_bits(keys: &[Key]) -> u64 {
    let mut bits = 0u64;
    let mut eights = keys.chunks_exact(8);
    for (c, k8) in eights.by_ref().enumerate() {
        let k = i16x8::new(std::array::from_fn(|i| k8[i] as i16));
        bits |= ((k & i16x8::splat(511)).simd_gt(i16x8::splat(128)).to_bitmask() as u64) << (8 * c);
    }
    let done = keys.len() - eights.remainder().len();
    for (i, &k) in eights.remainder().iter().enumerate() {
        bits |= (key_inside(k) as u64) << (done + i);
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use voxterra_core::{Material, MaterialTable};

    /// The key of a matter voxel of material `m` with occupancy byte `occ`.
    fn k(m: u16, occ: u8) -> Key {
        m << 9 | (occ as u16 + 1)
    }

    fn voxel(m: u8, occ: u8) -> Voxel {
        Voxel::new(Material::from_low_bits(m), occ)
    }

    #[test]
    fn matter_ranges() {
        let r = |m: u64| KeyTable::new(m).ranges.map(|r| r.iter().filter(|x| x.0 < x.1).count());
        assert_eq!(r(0b0111_1110), Some(1));
        assert_eq!(r(MaterialTable::default().solid_mask()), Some(2));
        assert_eq!(r(1 << 63 | 1 << 62 | 0b1010), Some(3));
        assert_eq!(r(0b1010_1010), None);
        assert_eq!(r(u64::MAX), Some(1));
        assert_eq!(KeyTable::new(1 << 63).ranges.map(|r| r[0]), Some((62, 64)));
    }

    #[test]
    fn keys_encode_matter_and_density() {
        let t = KeyTable::new(1 << 3 | 1 << 5);
        assert_eq!(t.key(voxel(3, 200)), k(3, 200));
        assert_eq!(t.key(voxel(4, 200)), 0); // not matter
        assert_eq!(t.key(Voxel::AIR), 0);
        assert_eq!(t.key(voxel(5, 255)), 5 << 9 | 256);
        assert_eq!(t.key(voxel(5, 0)), 5 << 9 | 1); // the least occupancy is still matter
        assert_eq!((key_inside(k(3, 127)), key_inside(k(3, 128)), key_inside(0)), (0, 1, 0));
        assert_eq!(KeyTable::new(u64::MAX).key(Voxel::AIR), 0, "air is never matter");
    }

    proptest! {
        /// Whole rows convert as voxel by voxel, whichever path they take.
        #[test]
        fn rows_convert_as_single_voxels(
            // Any mask (the lookup path), or one of at most four ranges of ids (the lane path).
            matter in prop_oneof![any::<u64>(), proptest::collection::vec((0u32..64, 1u32..12), 1..5).prop_map(
                |r| r.iter().fold(0u64, |m, &(lo, len)| m | ((1u64 << len.min(64 - lo)) - 1).wrapping_shl(lo))
            )],
            row in proptest::collection::vec((0u8..64, any::<u8>()), 1..=64),
            ids in proptest::collection::vec(0u8..64, 1..4),
        ) {
            let t = KeyTable::new(matter);
            // Few distinct ids per row, as on terrain, so every path is taken.
            let row: Vec<Voxel> = row.iter().map(|&(m, o)| voxel(ids[m as usize % ids.len()], o)).collect();
            let mut keys = vec![1; row.len()];
            let inside = t.convert(&row, &mut keys);
            for (i, &v) in row.iter().enumerate() {
                prop_assert_eq!(keys[i], t.key(v));
                prop_assert_eq!(inside >> i & 1, key_inside(t.key(v)) as u64);
            }
            if row.len() < 64 {
                prop_assert_eq!(inside >> row.len(), 0);
            }
        }
    }
}
