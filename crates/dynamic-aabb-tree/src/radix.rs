//! The sort of a pair update's keys: least-significant-digit radix over only the bits proxy ids
//! can use.
//!
//! A pair key is `low id << 32 | high id`, and ids stay below the slot count, so of its 64 bits
//! only `2 × b` carry anything (`b` = the bits of the largest id: 17 at 100k proxies). The sort
//! reads each key as that compact `2b`-bit number and orders it in a few passes of up to
//! [`MAX_WIDTH`] bits. PERF: on the 100k-box scene, all moving (98k pairs a frame), the sort
//! took 3.8% of `dyn_tree_profile`'s samples against `sort_unstable`'s 5.1%; general radix
//! crates (`radsort`: 8-bit digits) would spend 6 passes on these keys.

/// Widest digit: 2^12 counters (16 KB) stay in L1. Ids of 17 bits then take 3 passes; digits of
/// at most 11 bits (4 passes of 9) measured the same.
const MAX_WIDTH: u32 = 12;

/// Below this many keys the comparison sort is as fast and needs no scratch.
const MIN_RADIX: usize = 512;

/// Sorts `keys`, pair keys of ids below `2^id_bits`, ascending; `scratch` is working memory
/// (its contents are lost). The result equals `keys.sort_unstable()`.
pub(crate) fn sort_pair_keys(keys: &mut Vec<u64>, scratch: &mut Vec<u64>, id_bits: u32) {
    let n = keys.len();
    if n < MIN_RADIX || id_bits > 31 {
        keys.sort_unstable();
        return;
    }
    let bits = 2 * id_bits;
    let passes = bits.div_ceil(MAX_WIDTH).max(1);
    let width = bits.div_ceil(passes);
    let mask = (1u64 << width) - 1;
    // The key with the gap between its two ids closed up.
    let compact = |k: u64| (k >> 32) << id_bits | (k & 0xffff_ffff);
    let mut counts = vec![0u32; (passes as usize) << width];
    for &k in keys.iter() {
        let c = compact(k);
        for p in 0..passes {
            counts[((p as usize) << width) + ((c >> (p * width)) & mask) as usize] += 1;
        }
    }
    scratch.clear();
    scratch.resize(n, 0);
    let (mut src, mut dst) = (std::mem::take(keys), std::mem::take(scratch));
    for p in 0..passes {
        let count = &mut counts[(p as usize) << width..((p as usize) + 1) << width];
        // Every key has the same digit here: the pass would copy them in order.
        if count.iter().any(|&c| c as usize == n) {
            continue;
        }
        // Counts to starting offsets.
        let mut at = 0u32;
        for c in count.iter_mut() {
            (*c, at) = (at, at + *c);
        }
        let shift = p * width;
        for &k in &src {
            let d = ((compact(k) >> shift) & mask) as usize;
            dst[count[d] as usize] = k;
            count[d] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    *keys = src;
    *scratch = dst;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn key(a: u32, b: u32) -> u64 {
        u64::from(a.min(b)) << 32 | u64::from(a.max(b))
    }

    proptest! {
        /// Equals the comparison sort, for any id width (few keys, many, one digit for all).
        #[test]
        fn sorts_as_sort_unstable(
            ids in proptest::collection::vec((0u32..u32::MAX, 0u32..u32::MAX), 0..3000),
            id_bits in 1u32..32,
            same_high in any::<bool>(),
        ) {
            let m = (1u64 << id_bits) - 1;
            let mut keys: Vec<u64> = ids
                .iter()
                .map(|&(a, b)| {
                    let a = if same_high { 0 } else { a as u64 & m } as u32;
                    key(a, (b as u64 & m) as u32)
                })
                .collect();
            let mut want = keys.clone();
            want.sort_unstable();
            let mut scratch = vec![7; 5];
            sort_pair_keys(&mut keys, &mut scratch, id_bits);
            prop_assert_eq!(keys, want);
        }
    }

    #[test]
    fn ids_too_wide_fall_back() {
        let mut keys: Vec<u64> = (0..2000u32).rev().map(|i| key(i.wrapping_mul(2_654_435_761), i)).collect();
        let mut want = keys.clone();
        want.sort_unstable();
        sort_pair_keys(&mut keys, &mut Vec::new(), 32);
        assert_eq!(keys, want);
    }
}
