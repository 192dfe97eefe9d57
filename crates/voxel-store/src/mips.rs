//! Mip downsampling: each mip voxel stands for a 2³ block of the level below.
//!
//! The rule keeps the article's guarantee: a mip voxel is Air exactly when all eight voxels under it
//! are Air (and so, by induction, everything under it at level 0). Non-air voxels always carry at
//! least 1/256 occupancy, so the summed occupancy is zero only for all-air blocks.

use crate::packed_box::{PackedBox, Rect, Scratch};
use voxterra_core::{Material, Voxel};

/// Merges a 2³ block: occupancy is the block's mean; the material is the one holding the most
/// occupancy, ties to the lowest id, so the result does not depend on voxel order.
#[inline]
pub(crate) fn merge8(block: [Voxel; 8]) -> Voxel {
    let mut mats = [0u8; 8];
    let mut sums = [0u16; 8];
    let mut n = 0;
    let mut total = 0u16;
    for v in block {
        if v.is_air() {
            continue;
        }
        let w = v.occupancy_byte() as u16 + 1;
        total += w;
        let m = v.material().id();
        match mats[..n].iter().position(|&x| x == m) {
            Some(i) => sums[i] += w,
            None => {
                mats[n] = m;
                sums[n] = w;
                n += 1;
            }
        }
    }
    if total == 0 {
        return Voxel::AIR;
    }
    let mut best = 0;
    for i in 1..n {
        if sums[i] > sums[best] || (sums[i] == sums[best] && mats[i] < mats[best]) {
            best = i;
        }
    }
    // Mean of (byte + 1) over 8, rounded, back to a byte; at least 0 (1/256) since total > 0.
    let byte = ((total + 4) / 8).saturating_sub(1).min(255) as u8;
    Voxel::new(Material::from_low_bits(mats[best]), byte)
}

/// Recomputes the part of `dst` (M = N/2) under the changed box `changed` of `src`. Returns the
/// box of `dst` that changed.
pub(crate) fn downsample<const N: usize, const M: usize>(
    src: &PackedBox<N>,
    dst: &mut PackedBox<M>,
    changed: Rect,
    scratch: &mut Scratch,
) -> Option<Rect> {
    const { assert!(N == 2 * M) };
    let rect = Rect { lo: changed.lo.map(|v| v / 2), hi: changed.hi.map(|v| v.div_ceil(2)) };
    let x0 = rect.lo[0];
    dst.modify(rect, scratch, |y, z, seg| {
        let rows = [
            src.row(2 * y, 2 * z),
            src.row(2 * y, 2 * z + 1),
            src.row(2 * y + 1, 2 * z),
            src.row(2 * y + 1, 2 * z + 1),
        ];
        for (i, out) in seg.iter_mut().enumerate() {
            let x = 2 * (x0 + i);
            *out = merge8([
                rows[0][x],
                rows[0][x + 1],
                rows[1][x],
                rows[1][x + 1],
                rows[2][x],
                rows[2][x + 1],
                rows[3][x],
                rows[3][x + 1],
            ]);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_rules() {
        let rock = Material::new(3).unwrap();
        let sand = Material::new(4).unwrap();
        assert_eq!(merge8([Voxel::AIR; 8]), Voxel::AIR);
        let mut b = [Voxel::AIR; 8];
        b[5] = Voxel::new(rock, 0);
        assert_eq!(merge8(b), Voxel::new(rock, 0)); // the smallest occupancy still is not air
        assert_eq!(merge8([Voxel::full(rock); 8]), Voxel::full(rock));
        let half = [Voxel::full(rock), Voxel::full(sand)].repeat(4);
        assert_eq!(merge8(half.try_into().unwrap()), Voxel::full(rock)); // tie: lowest id
        let mut b = [Voxel::full(sand); 8];
        b[0] = Voxel::full(rock);
        b[1] = Voxel::AIR;
        assert_eq!(merge8(b), Voxel::new(sand, 223)); // 7 of 8 full: 7/8 = 224/256
    }
}
