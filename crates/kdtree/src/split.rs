//! Where a node splits: at the mean of its triangles' midpoints on the axis of lowest surface-area
//! cost (measured on sampled split boxes for large nodes, estimated from the box, the midpoint
//! spread and the triangle size for small ones), the midpoint order halved when a side would get
//! under a quarter of the triangles.

use crate::bounds::{Bounds, GrowEither, Prim, bounds_of};
use wide::f32x4;

/// A split on Y (up) must cost this much less than the best horizontal one to be chosen: rays
/// against terrain mostly come from above, and a Y split of a heightfield interleaves both children
/// over the same ground, so a vertical ray visits both (measured on the `kdtree` suite's terrain).
pub(crate) const VERTICAL_BIAS: f32 = 1.25;

/// Of a node's split statistics, at most this many triangles are looked at (evenly spaced): the
/// axis choice needs only an estimate, and a full pass on every axis doubled the build time.
pub(crate) const SAH_SAMPLES: usize = 16;

/// Nodes of up to this many triangles choose their axis by [`estimated_axis`], without sampled
/// split boxes (PERF: those cost 40% of a chunk's build). Traversal instructions on the `kdtree`
/// suite's rays, against sampled boxes at every node: +0.02% with the estimate up to 16
/// triangles, +0.55% up to 32, +1.9% up to 64, +6% everywhere.
pub(crate) const ESTIMATE_MAX: usize = 32;

/// Splits `prims` (at least 3, tight box `bounds`) in two: returns the axis, the left count (the
/// left triangles are moved first) and both sides' boxes.
pub(crate) fn split(prims: &mut [Prim], bounds: &Bounds) -> (usize, usize, Bounds, Bounds) {
    let n = prims.len();
    let step = (n / SAH_SAMPLES).max(1);
    // The mean midpoint, estimated on the sample the axis choice uses. Midpoints are taken relative
    // to the box center, so f32 sums keep their precision far from the origin.
    let center = bounds.mids2();
    // PERF: `step_by` cost 6 instructions an element; most nodes take every element.
    let (sum, mids_lo, mids_hi, extents, sampled) =
        if step == 1 { sample(prims.iter(), center) } else { sample(prims.iter().step_by(step), center) };
    let mean = center + sum / sampled as f32;
    let axis = if n <= ESTIMATE_MAX {
        // The range of twice the midpoints, halved.
        estimated_axis(bounds, (mids_hi - mids_lo) * 0.5, extents / sampled as f32)
    } else {
        cheapest_axis(prims, step, mean, bounds)
    };
    if n <= SMALL {
        // An even left count (2 of 3, 2 of 4 or 5, 4 of 6 to 8), so leaves come out full.
        return small_split(prims, axis, (n / 2 + 1) & !1);
    }
    // Partition by midpoint, branch-free (the side is unpredictable): every element is swapped,
    // and both sides' boxes grow.
    let mut sides = [Bounds::EMPTY; 2];
    let mut l = 0;
    for i in 0..n {
        let p = prims[i];
        let is_left = p.mids2().simd_lt(mean).to_bitmask() >> axis & 1 != 0;
        sides.grow_either(&p, is_left);
        // A swap through registers (`slice::swap` went through the stack).
        prims[i] = prims[l];
        prims[l] = p;
        l += is_left as usize;
    }
    if fair(l, n) {
        return (axis, l, sides[0], sides[1]);
    }
    // Too skewed: halves of the midpoint order (the article's fallback).
    median_split(prims, axis, n / 2)
}

/// Over `prims`: the sum of twice their midpoints relative to `center`; for the estimated axis
/// choice, the range of twice the midpoints and the summed extents; and their count.
#[inline(always)]
pub(crate) fn sample<'a>(
    prims: impl Iterator<Item = &'a Prim>,
    center: f32x4,
) -> (f32x4, f32x4, f32x4, f32x4, usize) {
    let mut sum = f32x4::ZERO;
    let (mut mids_lo, mut mids_hi) = (f32x4::splat(f32::INFINITY), f32x4::splat(f32::NEG_INFINITY));
    let mut extents = f32x4::ZERO;
    let mut sampled = 0;
    for p in prims {
        let m = p.mids2();
        sum += m - center;
        mids_lo = mids_lo.fast_min(m);
        mids_hi = mids_hi.fast_max(m);
        extents -= p.lo + p.nhi;
        sampled += 1;
    }
    (sum, mids_lo, mids_hi, extents, sampled)
}

/// Splits `prims` on `axis` with the `l` lowest midpoints on the left.
#[inline(never)] // PERF: inlined into `split`, it worsened the register use of its loops
pub(crate) fn median_split(prims: &mut [Prim], axis: usize, l: usize) -> (usize, usize, Bounds, Bounds) {
    prims.select_nth_unstable_by(l, |p, q| p.mid2(axis).total_cmp(&q.mid2(axis)));
    let (lp, rp) = prims.split_at(l);
    (axis, l, bounds_of(lp), bounds_of(rp))
}

/// [`median_split`] for at most [`SMALL`] triangles: an insertion sort of their midpoints, then
/// one permutation (PERF: the standard selection cost twice as much on so few).
#[inline(never)]
pub(crate) fn small_split(prims: &mut [Prim], axis: usize, l: usize) -> (usize, usize, Bounds, Bounds) {
    let n = prims.len();
    debug_assert!(n <= SMALL);
    let mut order = [(0.0f32, 0u8); SMALL];
    for (i, p) in prims.iter().enumerate().take(SMALL) {
        let key = p.mid2(axis);
        let mut j = i;
        while j > 0 && order[j - 1].0 > key {
            order[j] = order[j - 1];
            j -= 1;
        }
        order[j] = (key, i as u8);
    }
    let copy: [Prim; SMALL] = std::array::from_fn(|i| prims.get(i).copied().unwrap_or(Bounds::EMPTY));
    let mut sides = [Bounds::EMPTY; 2];
    for (k, &(_, i)) in order[..n].iter().enumerate() {
        let p = copy[i as usize];
        sides.grow_either(&p, k < l);
        prims[k] = p;
    }
    (axis, l, sides[0], sides[1])
}

/// [`estimated_axis`] for 3 or 4 triangles, from a fixed four (the last repeated for 3, its extent
/// weighted 0): the axis [`sample`]'s statistics give, without a loop.
pub(crate) fn tiny_axis(prims: &[Prim], bounds: &Bounds) -> usize {
    let n = prims.len();
    debug_assert!((3..=4).contains(&n));
    let p = [&prims[0], &prims[1], &prims[2], &prims[n - 1]];
    let m = p.map(Prim::mids2);
    let mids_lo = m[0].fast_min(m[1]).fast_min(m[2]).fast_min(m[3]);
    let mids_hi = m[0].fast_max(m[1]).fast_max(m[2]).fast_max(m[3]);
    let e = p.map(|p| p.lo + p.nhi);
    let w = f32x4::splat(if n == 4 { 1.0 } else { 0.0 });
    // In `sample`'s order, so the sum is bit for bit the same (`x - 0` is `x`).
    let extents = f32x4::ZERO - e[0] - e[1] - e[2] - e[3] * w;
    estimated_axis(bounds, (mids_hi - mids_lo) * 0.5, extents / n as f32)
}

/// [`small_split`] for 3 or 4 triangles (nearly every call: chunk builds end in them), sorted by
/// a compare-exchange network on (midpoint, position), so the order is the insertion sort's, in
/// registers (PERF: `small_split` took 182 instructions and two or three mispredictions a call).
#[inline(never)]
pub(crate) fn tiny_split(prims: &mut [Prim], axis: usize) -> (usize, usize, Bounds, Bounds) {
    debug_assert!((3..=4).contains(&prims.len()));
    let key = |i: usize| prims.get(i).map_or(f32::INFINITY, |p| p.mid2(axis));
    let mut o = [(key(0), 0u8), (key(1), 1), (key(2), 2), (key(3), 3)];
    // Lexicographic on (key, position): a stable order, branch-free.
    let mut cx = |a: usize, b: usize| {
        // `|` and `&`, not `||` and `&&`: no branch.
        let swap = (o[a].0 > o[b].0) | ((o[a].0 == o[b].0) & (o[a].1 > o[b].1));
        let (x, y) = (o[a], o[b]);
        o[a] = if swap { y } else { x };
        o[b] = if swap { x } else { y };
    };
    cx(0, 1);
    cx(2, 3);
    cx(0, 2);
    cx(1, 3);
    cx(1, 2);
    let copy = [prims[0], prims[1], prims[2], prims.get(3).copied().unwrap_or(Bounds::EMPTY)];
    let sorted = o.map(|(_, i)| copy[i as usize]);
    // Element by element: `copy_from_slice` of a runtime length called `memcpy`.
    for (p, s) in prims.iter_mut().zip(&sorted) {
        *p = *s;
    }
    let (mut lb, mut rb) = (sorted[0], sorted[2]);
    lb.grow(&sorted[1]);
    rb.grow(&sorted[3]);
    (axis, 2, lb, rb)
}

/// Nodes of at most this many triangles split at the median of the chosen axis with an even left
/// count, not at the mean, so leaves come out full (1.99 triangles a leaf, against 1.88: fewer nodes).
pub(crate) const SMALL: usize = 8;

/// The longest axis of `bounds`, Y's extent divided by [`VERTICAL_BIAS`].
pub(crate) fn longest(bounds: &Bounds) -> usize {
    let e = [0, 1, 2].map(|a| (bounds.max(a) - bounds.min(a)) / if a == 1 { VERTICAL_BIAS } else { 1.0 });
    if e[0] >= e[1] && e[0] >= e[2] {
        0
    } else if e[1] >= e[2] {
        1
    } else {
        2
    }
}

/// The axis whose mean split (at `mean`) has the lowest surface-area cost on every `step`-th
/// triangle, among those giving each side at least a quarter; the longest if none does.
pub(crate) fn cheapest_axis(prims: &[Prim], step: usize, mean: f32x4, bounds: &Bounds) -> usize {
    let mut boxes = [[Bounds::EMPTY; 2]; 3];
    let mut left = [0usize; 3];
    let mut sampled = 0;
    for p in prims.iter().step_by(step) {
        // One compare for the three axes; bit `a` of the mask: left of the split on axis `a`.
        let mask = p.mids2().simd_lt(mean).to_bitmask() as usize;
        for (a, (boxes, left)) in boxes.iter_mut().zip(&mut left).enumerate() {
            let is_left = mask >> a & 1;
            boxes.grow_either(p, is_left != 0);
            *left += is_left;
        }
        sampled += 1;
    }
    let cost = |a: usize| {
        let bias = if a == 1 { VERTICAL_BIAS } else { 1.0 };
        bias * (boxes[a][0].half_area() * left[a] as f32
            + boxes[a][1].half_area() * (sampled - left[a]) as f32)
    };
    (0..3)
        .filter(|&a| fair(left[a], sampled))
        .min_by(|&a, &b| cost(a).total_cmp(&cost(b)))
        .unwrap_or_else(|| longest(bounds))
}

/// The axis whose split has the lowest estimated surface-area cost, from the box alone: a split on
/// an axis leaves each side about half the midpoints' `spread` on it plus a triangle's mean extent
/// (`extent`), and the box's extents on the other two. Y is weighted by [`VERTICAL_BIAS`], as in
/// [`cheapest_axis`].
pub(crate) fn estimated_axis(bounds: &Bounds, spread: f32x4, extent: f32x4) -> usize {
    let e = [0, 1, 2].map(|a| bounds.max(a) - bounds.min(a));
    let (spread, extent) = (spread.as_array(), extent.as_array());
    let cost = |a: usize| {
        let mut s = e;
        let side = spread[a] * 0.5 + extent[a];
        if side < s[a] {
            s[a] = side;
        }
        let bias = if a == 1 { VERTICAL_BIAS } else { 1.0 };
        bias * (s[0] * s[1] + s[1] * s[2] + s[2] * s[0])
    };
    let c = [cost(0), cost(1), cost(2)];
    if c[0] <= c[1] && c[0] <= c[2] {
        0
    } else if c[1] <= c[2] {
        1
    } else {
        2
    }
}

/// Whether `l` of `n` triangles on the left leaves each side at least a quarter (the article's
/// bound; it keeps the depth logarithmic).
pub(crate) fn fair(l: usize, n: usize) -> bool {
    l >= (n / 4).max(1) && n - l >= (n / 4).max(1)
}
