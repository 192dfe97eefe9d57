//! The binned surface-area-heuristic split that every build of the tree uses (full, background
//! and subtree rebuilds), the items it partitions, and the child-reference tags.

use voxterra_core::Aabb;
use voxterra_core::nalgebra::Point3;
#[cfg(test)]
use voxterra_core::nalgebra::Vector3;

/// "No node" (and an empty slot).
pub(crate) const NULL: u32 = u32::MAX;
/// A child reference with this bit is a leaf holding item `r & ITEM_MASK`; without it, the index
/// of an internal node.
pub(crate) const LEAF: u32 = 1 << 31;
/// On a child reference: the leaf moved since the last pair update, or the subtree holds one
/// that did.
pub(crate) const LEAF_MOVED: u32 = 1 << 30;
/// The item bits of a leaf reference.
pub(crate) const ITEM_MASK: u32 = LEAF_MOVED - 1;
/// Items must stay below this (the two high bits tag references).
pub(crate) const MAX_ITEMS: u32 = ITEM_MASK;

/// An empty box: inverted, so any union passes over it.
const EMPTY_BOX: Aabb =
    Aabb::new(Point3::new(f32::MAX, f32::MAX, f32::MAX), Point3::new(-f32::MAX, -f32::MAX, -f32::MAX));

/// A build item: a leaf (or a kept subtree) and its box; `r` carries its moved flag.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item {
    pub(crate) aabb: Aabb,
    pub(crate) r: u32,
    /// Scratch for [`split`]: the item's bin, so the partition need not compute it again.
    bin: u8,
}

impl Item {
    /// A leaf holding `item` with box `aabb`.
    pub(crate) fn leaf(aabb: Aabb, item: u32) -> Self {
        Item { aabb, r: LEAF | item, bin: 0 }
    }

    /// Twice the box center on `axis` (binning only compares, so the halving is skipped).
    #[inline]
    fn center2(&self, axis: usize) -> f32 {
        self.aabb.mins[axis] + self.aabb.maxs[axis]
    }

    /// The box as two 4-lane vectors, minima and maxima in lanes 0–2 (lane 3 repeats a
    /// coordinate and is never read).
    #[inline(always)]
    fn lanes(&self) -> (F4, F4) {
        let a = &self.aabb;
        (F4::new([a.mins.x, a.mins.y, a.mins.z, a.mins.z]), F4::new([a.maxs.x, a.maxs.y, a.maxs.z, a.maxs.z]))
    }
}

/// [`EMPTY_BOX`] as [`Item::lanes`] gives a box: minima and maxima that any union passes over.
#[inline(always)]
fn empty_lanes() -> (F4, F4) {
    (F4::splat(f32::MAX), F4::splat(-f32::MAX))
}

/// [`area`] of the box with minima `lo` and maxima `hi` in lanes 0–2 (bit for bit).
#[inline(always)]
fn area_lanes(lo: F4, hi: F4) -> f32 {
    let e = (hi - lo).to_array();
    2.0 * (e[0] * e[1] + e[1] * e[2] + e[2] * e[0])
}

const BINS: usize = 12;

/// Branch-free box overlap (the inner test of traversals and queries).
#[inline(always)]
pub(crate) fn overlap(a: &Aabb, b: &Aabb) -> bool {
    (a.mins.x <= b.maxs.x)
        & (b.mins.x <= a.maxs.x)
        & (a.mins.y <= b.maxs.y)
        & (b.mins.y <= a.maxs.y)
        & (a.mins.z <= b.maxs.z)
        & (b.mins.z <= a.maxs.z)
}

#[inline]
fn area(b: &Aabb) -> f32 {
    b.surface_area()
}

#[inline]
fn union(a: &Aabb, b: &Aabb) -> Aabb {
    a.merged(b)
}

/// Where [`split`] cut a run of items, and the surface areas of both sides' bounds (the sweeps
/// that choose the plane have them; the four-way grouping would otherwise fold every box again).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Split {
    pub(crate) at: usize,
    pub(crate) areas: [f32; 2],
}

impl Split {
    /// A cut at `at` whose areas come from folding each side (the fallbacks, which are rare).
    fn folded(items: &[Item], at: usize) -> Self {
        Split { at, areas: [bounds_area(&items[..at]), bounds_area(&items[at..])] }
    }
}

/// The surface area of the bounds of `items` (at least one).
fn bounds_area(items: &[Item]) -> f32 {
    let (lo, hi) = items.iter().fold(empty_lanes(), |(lo, hi), it| {
        let (l, h) = it.lanes();
        (lo.fast_min(l), hi.fast_max(h))
    });
    area_lanes(lo, hi)
}

/// Partitions `items` (at least 2) by binned SAH on the centers (longest centroid axis); the split
/// point is always in `1..len`. Falls back to halving when the centers coincide or SAH finds
/// nothing.
pub(crate) fn split(items: &mut [Item]) -> Split {
    let n = items.len();
    if n == 2 {
        return Split { at: 1, areas: [area(&items[0].aabb), area(&items[1].aabb)] };
    }
    let (axis, lo, ext) = centroid_axis(items);
    if n <= SMALL {
        return split_small(items, axis);
    }
    if ext <= 0.0 || !ext.is_finite() {
        return Split::folded(items, n / 2);
    }
    let scale = BINS as f32 / ext;
    // PERF: boxes as 4-lane vectors, a union two instructions (`fast_min`/`fast_max`, without
    // `min`/`max`'s NaN blend: boxes are finite, checked when given); each item keeps its bin
    // for the partition.
    let (empty_lo, empty_hi) = empty_lanes();
    let (mut bin_lo, mut bin_hi) = ([empty_lo; BINS], [empty_hi; BINS]);
    let mut counts = [0u32; BINS];
    for it in items.iter_mut() {
        let b = (((it.center2(axis) - lo) * scale) as usize).min(BINS - 1);
        it.bin = b as u8;
        counts[b] += 1;
        let (l, h) = it.lanes();
        bin_lo[b] = bin_lo[b].fast_min(l);
        bin_hi[b] = bin_hi[b].fast_max(h);
    }
    // Sweep from the right, then from the left, for the cost of each of the BINS-1 planes.
    // Empty bins keep the inverted box: unions skip it, and its area is never used (a plane
    // is only costed with items on both sides).
    let (mut right_area, mut right_cost) = ([0.0f32; BINS], [0.0f32; BINS]);
    let (mut acc_lo, mut acc_hi) = empty_lanes();
    let mut cnt = 0u32;
    for b in (1..BINS).rev() {
        acc_lo = acc_lo.fast_min(bin_lo[b]);
        acc_hi = acc_hi.fast_max(bin_hi[b]);
        cnt += counts[b];
        if cnt > 0 {
            right_area[b] = area_lanes(acc_lo, acc_hi);
            right_cost[b] = right_area[b] * cnt as f32;
        }
    }
    // (cost, plane, left area)
    let mut best = (f32::INFINITY, 0usize, 0.0f32);
    (acc_lo, acc_hi) = empty_lanes();
    cnt = 0;
    for b in 0..BINS - 1 {
        acc_lo = acc_lo.fast_min(bin_lo[b]);
        acc_hi = acc_hi.fast_max(bin_hi[b]);
        cnt += counts[b];
        if cnt == 0 || cnt as usize == n {
            continue;
        }
        let left_area = area_lanes(acc_lo, acc_hi);
        let cost = left_area * cnt as f32 + right_cost[b + 1];
        if cost < best.0 {
            best = (cost, b, left_area);
        }
    }
    if !best.0.is_finite() {
        return Split::folded(items, n / 2);
    }
    let areas = [best.2, right_area[best.1 + 1]];
    // Partition in place: bins <= best.1 to the left. (Branch-free, every item swapped with
    // the first one right of the split, took 40% longer: arena order is spatial, so the sides
    // come in runs the branch predicts.)
    let best = best.1 as u8;
    let mut i = 0;
    let mut j = n;
    while i < j {
        if items[i].bin <= best {
            i += 1;
        } else {
            j -= 1;
            items.swap(i, j);
        }
    }
    // Both sides are non-empty: the plane was only costed with items on each.
    debug_assert!(i > 0 && i < n);
    Split { at: i, areas }
}

/// Up to this many items are split by exact SAH over their sorted centers: cheaper than 12 bins
/// (about half of all nodes of a tree have this few leaves below them).
const SMALL: usize = 8;

/// The axis along which the items' centers spread most, with the centers' low end and extent
/// on it (in `center2` units).
fn centroid_axis(items: &[Item]) -> (usize, f32, f32) {
    let (mut lo, mut hi) = (F4::splat(f32::INFINITY), F4::splat(f32::NEG_INFINITY));
    for it in items.iter() {
        let (l, h) = it.lanes();
        let c = l + h;
        lo = lo.fast_min(c);
        hi = hi.fast_max(c);
    }
    let (lo, hi) = (lo.to_array(), hi.to_array());
    let ext = [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]];
    let axis = if ext[0] >= ext[1] && ext[0] >= ext[2] {
        0
    } else if ext[1] >= ext[2] {
        1
    } else {
        2
    };
    (axis, lo[axis], ext[axis])
}

/// Exact SAH split of a few items along `axis`.
fn split_small(items: &mut [Item], axis: usize) -> Split {
    let n = items.len();
    // Insertion sort: stable, deterministic, and fast at this size.
    for i in 1..n {
        let mut j = i;
        while j > 0 && items[j - 1].center2(axis) > items[j].center2(axis) {
            items.swap(j - 1, j);
            j -= 1;
        }
    }
    let (mut right_area, mut right) = ([0.0f32; SMALL], [0.0f32; SMALL]);
    let mut acc = EMPTY_BOX;
    for i in (1..n).rev() {
        acc = union(&acc, &items[i].aabb);
        right_area[i] = area(&acc);
        right[i] = right_area[i] * (n - i) as f32;
    }
    let (mut best, mut at, mut left_area) = (f32::INFINITY, n / 2, None);
    acc = EMPTY_BOX;
    for i in 1..n {
        acc = union(&acc, &items[i - 1].aabb);
        let cost = area(&acc) * i as f32 + right[i];
        if cost < best {
            (best, at, left_area) = (cost, i, Some(area(&acc)));
        }
    }
    match left_area {
        Some(l) => Split { at, areas: [l, right_area[at]] },
        // No finite cost (boxes too large to area): halves.
        None => Split::folded(items, at),
    }
}

pub(crate) type F4 = wide::f32x4;

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn split_reference(items: &mut [Item]) -> usize {
        let n = items.len();
        if n == 2 {
            return 1;
        }
        let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        for it in items.iter() {
            for k in 0..3 {
                lo[k] = lo[k].min(it.center2(k));
                hi[k] = hi[k].max(it.center2(k));
            }
        }
        let ext = [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]];
        let axis = if ext[0] >= ext[1] && ext[0] >= ext[2] {
            0
        } else if ext[1] >= ext[2] {
            1
        } else {
            2
        };
        if n <= SMALL {
            return split_small(items, axis).at;
        }
        let (lo, ext) = (lo[axis], ext[axis]);
        if ext <= 0.0 || !ext.is_finite() {
            return n / 2;
        }
        let scale = BINS as f32 / ext;
        let bin_of = |c: f32| (((c - lo) * scale) as usize).min(BINS - 1);
        let mut boxes = [EMPTY_BOX; BINS];
        let mut counts = [0u32; BINS];
        for it in items.iter() {
            let b = bin_of(it.center2(axis));
            counts[b] += 1;
            boxes[b] = union(&boxes[b], &it.aabb);
        }
        let cost = |range: std::ops::Range<usize>| {
            let (bx, cnt) = range.fold((EMPTY_BOX, 0u32), |(a, c), b| (union(&a, &boxes[b]), c + counts[b]));
            (area(&bx) * cnt as f32, cnt)
        };
        let mut best = (f32::INFINITY, 0usize);
        for b in 0..BINS - 1 {
            let ((l, lc), (r, rc)) = (cost(0..b + 1), cost(b + 1..BINS));
            if lc > 0 && rc > 0 && l + r < best.0 {
                best = (l + r, b);
            }
        }
        if !best.0.is_finite() {
            return n / 2;
        }
        let (mut i, mut j) = (0, n);
        while i < j {
            if bin_of(items[i].center2(axis)) <= best.1 {
                i += 1;
            } else {
                j -= 1;
                items.swap(i, j);
            }
        }
        if i == 0 || i == n { n / 2 } else { i }
    }

    proptest! {
        /// [`split`] splits as the plain scalar reference does: the same point and the same items
        /// on each side, in the same order (few items, many, coinciding centers).
        #[test]
        fn split_is_the_plain_binned_sah(
            boxes in proptest::collection::vec(
                (proptest::array::uniform3(-50.0f32..50.0), proptest::array::uniform3(0.0f32..4.0)),
                2..200,
            ),
            same in any::<bool>(),
        ) {
            let mut items: Vec<Item> = boxes
                .iter()
                .enumerate()
                .map(|(i, &(lo, e))| {
                    let (lo, e) = if same { ([1.0, 2.0, 3.0], [0.5; 3]) } else { (lo, e) };
                    let lo = Point3::from(lo);
                    Item { aabb: Aabb::new(lo, lo + Vector3::from(e)), r: LEAF | i as u32, bin: 0 }
                })
                .collect();
            let mut want = items.clone();
            let cut = split(&mut items);
            let mid = cut.at;
            prop_assert_eq!(mid, split_reference(&mut want));
            // The areas are those of each side's bounds, bit for bit.
            let fold = |it: &[Item]| area(&it.iter().fold(EMPTY_BOX, |b, x| union(&b, &x.aabb)));
            prop_assert_eq!(cut.areas, [fold(&items[..mid]), fold(&items[mid..])]);
            prop_assert!(mid >= 1 && mid < items.len());
            prop_assert_eq!(items.iter().map(|it| it.r).collect::<Vec<_>>(), want.iter().map(|it| it.r).collect::<Vec<_>>());
        }
    }
}
