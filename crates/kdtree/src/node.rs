//! The 8-byte node, and the grid its planes are quantized on.

use wide::{f32x4, i32x4};

/// Low 2 bits of a node that is not a branch (branch axes are 0 = X, 1 = Y, 2 = Z).
const OTHER: u64 = 3;
/// With [`OTHER`]: the node is a slab, not a leaf.
const SLAB: u64 = 4;

/// The most nodes a slab can address as its child (it has 27 bits for it).
pub(crate) const SLAB_CHILD_LIMIT: usize = 1 << 27;

/// Trees of at most this many triangles may have leaves of three or four (14-bit indices).
pub(crate) const NARROW_TRIANGLES: usize = 1 << 14;

/// The most triangles a leaf holds.
pub(crate) const LEAF_MAX: usize = 4;

/// A node: a branch, a leaf or a slab, in one 64-bit word. The low 2 bits are the branch axis, or 3
/// for the other two kinds:
/// - **branch**: two split planes on one axis, children at `child` and `child + 1`; bits 2..32 are
///   `child`, bits 32..48 and 48..64 the planes as steps of the tree's [`Grid`]. Every triangle
///   under the left child lies at or below plane 0 on the axis, every triangle under the right
///   child at or above plane 1.
/// - **leaf** (bit 2 clear): bits 3..6 are the count; up to two triangles as 29-bit indices at
///   bits 6 and 35, or three or four as 14-bit indices at bits 6, 20, 34 and 48 (trees of at
///   most [`NARROW_TRIANGLES`] triangles, such as chunk meshes: a node per 3–4 triangles instead
///   of 2, a third fewer nodes).
/// - **slab** (bit 2 set; our addition to the article's tree): one child, all of whose triangles
///   lie between plane 0 and plane 1 on an axis (bits 3..5); bits 5..32 are the child. Slabs
///   bound subtrees on an axis no ancestor's planes bound, such as height over a heightfield,
///   where the article's tree never splits on Y and rays passing over terrain would otherwise
///   descend to every leaf below them.
///
/// The article's node is 12 bytes (two f32 planes and a tag word) and names 16-bit planes as the
/// next step; planes as 16-bit steps of one grid per tree make it 8 (see [`Grid`]).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Node(u64);

// PERF: 8 bytes per node, about one node per triangle (the article's f32 node is 12).
const _: () = assert!(std::mem::size_of::<Node>() == 8);

/// What a node is, decoded.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// Split axis and left child index.
    Branch(usize, usize),
    /// Triangle count.
    Leaf(usize),
    /// Bounded axis and child index.
    Slab(usize, usize),
}

impl Node {
    /// An empty leaf: a placeholder until its subtree is built.
    pub(crate) const EMPTY: Node = Node(OTHER);

    pub(crate) fn branch(axis: usize, planes: [u16; 2], child: u32) -> Self {
        debug_assert!(axis < 3 && child < 1 << 30);
        Node(axis as u64 | (child as u64) << 2 | Self::planes_bits(planes))
    }

    /// A leaf over the first `count` of `triangles` (three or four only below
    /// [`NARROW_TRIANGLES`]).
    pub(crate) fn leaf(triangles: [u32; LEAF_MAX], count: usize) -> Self {
        let head = OTHER | (count as u64) << 3;
        if count <= 2 {
            debug_assert!(triangles[..2].iter().all(|&t| t < 1 << 29));
            Node(head | (triangles[0] as u64) << 6 | (triangles[1] as u64) << 35)
        } else {
            debug_assert!(count <= LEAF_MAX && triangles.iter().all(|&t| (t as usize) < NARROW_TRIANGLES));
            let t = triangles.map(u64::from);
            Node(head | t[0] << 6 | t[1] << 20 | t[2] << 34 | t[3] << 48)
        }
    }

    pub(crate) fn slab(axis: usize, range: [u16; 2], child: usize) -> Self {
        debug_assert!(axis < 3 && child < SLAB_CHILD_LIMIT);
        Node(OTHER | SLAB | (axis as u64) << 3 | (child as u64) << 5 | Self::planes_bits(range))
    }

    fn planes_bits(planes: [u16; 2]) -> u64 {
        (planes[0] as u64) << 32 | (planes[1] as u64) << 48
    }

    #[inline]
    pub(crate) fn kind(&self) -> Kind {
        let t = self.0;
        if t & 3 != OTHER {
            Kind::Branch((t & 3) as usize, (t as u32 >> 2) as usize)
        } else if t & SLAB == 0 {
            Kind::Leaf((t >> 3 & 7) as usize)
        } else {
            Kind::Slab((t >> 3 & 3) as usize, (t as u32 >> 5) as usize)
        }
    }

    /// Branch: plane 0 (bounds the left child from above) or 1 (the right child from below), in
    /// grid steps. Slab: the lower (0) or upper (1) bound.
    #[inline]
    pub(crate) fn plane(&self, i: usize) -> u16 {
        self.plane_at(Self::plane_shift(i))
    }

    /// Plane `i` (as [`Node::plane`]) taken by its bit offset, [`Node::plane_shift`]`(i)`: queries
    /// that pick planes per ray precompute the shift.
    #[inline(always)]
    pub(crate) fn plane_at(&self, shift: u32) -> u16 {
        (self.0 >> shift) as u16
    }

    /// The bit offset of plane `i`.
    pub(crate) const fn plane_shift(i: usize) -> u32 {
        32 + 16 * i as u32
    }

    /// Leaf: its triangles (the first `count`).
    #[inline]
    pub(crate) fn triangles(&self) -> [u32; LEAF_MAX] {
        let t = self.0;
        if t >> 3 & 7 <= 2 {
            let wide = (1 << 29) - 1;
            [(t >> 6) as u32 & wide, (t >> 35) as u32 & wide, 0, 0]
        } else {
            let narrow = (NARROW_TRIANGLES - 1) as u64;
            [6, 20, 34, 48].map(|s| (t >> s & narrow) as u32)
        }
    }
}

/// The grid planes are stored on: per axis, `origin + q × step` for `q` in `0..=65535`, spanning
/// the tree's bounds. Every plane is rounded outward to a grid value (a left child's upper plane up,
/// a right child's lower plane down), and queries dequantize with this same function, so the
/// planes still bound their triangles exactly; they are looser than the f32 planes by under a step
/// (1/65535 of the tree's extent: 0.005 voxels on a 317-voxel terrain, 0.0002 on a physics chunk).
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) struct Grid {
    pub(crate) origin: [f32; 3],
    pub(crate) step: [f32; 3],
    /// `1 / step`, for estimates (the exact step comes from comparing values).
    inv_step: [f32; 3],
}

/// The highest grid step.
pub(crate) const TOP: u16 = u16::MAX;

impl Grid {
    /// The grid over bounds `[min, max]` (finite, `min <= max`): step 0 at `min`, step [`TOP`] at
    /// or above `max`.
    pub(crate) fn new(min: [f32; 3], max: [f32; 3]) -> Self {
        let step = std::array::from_fn(|a| {
            // Not `(max - min) / TOP`: the extent of finite bounds may overflow f32 (the step
            // would be infinite and step 0 NaN); the top steps may still overflow, to +inf.
            let mut s = max[a] / TOP as f32 - min[a] / TOP as f32;
            // Rounding may leave the top step short of `max`: widen until it reaches it.
            while min[a] + TOP as f32 * s < max[a] {
                s = s.next_up();
            }
            s
        });
        Grid { origin: min, step, inv_step: step.map(|s| 1.0 / s) }
    }

    /// The value of step `q` on axis `a`.
    #[inline(always)]
    pub(crate) fn value(&self, a: usize, q: u16) -> f32 {
        self.origin[a] + q as f32 * self.step[a]
    }

    /// The lowest step at or above `x` on axis `a` (`x` within the grid's span).
    #[inline]
    pub(crate) fn up(&self, a: usize, x: f32) -> u16 {
        // The estimate is within a step unless steps are far below the coordinates' ulp (then
        // runs of steps share a value): check its neighborhood with two values, search only past it.
        let e = self.estimate(a, x);
        let v = self.value(a, e);
        if v >= x {
            if e == 0 || self.value(a, e - 1) < x {
                return e;
            }
        } else if e < TOP && self.value(a, e + 1) >= x {
            return e + 1;
        }
        self.search(a, |v| v >= x)
    }

    /// The highest step at or below `x` on axis `a` (`x` within the grid's span).
    #[inline]
    pub(crate) fn down(&self, a: usize, x: f32) -> u16 {
        let e = self.estimate(a, x);
        let v = self.value(a, e);
        if v <= x {
            if e == TOP || self.value(a, e + 1) > x {
                return e;
            }
        } else if e > 0 && self.value(a, e - 1) <= x {
            return e - 1;
        }
        // The highest step at or below is one below the lowest step above (none: the top).
        match self.search(a, |v| v > x) {
            0 => 0,
            q if self.value(a, q) > x => q - 1,
            q => q,
        }
    }

    /// The lowest step whose value passes `test` (monotone in the step), or [`TOP`].
    #[cold]
    fn search(&self, a: usize, test: impl Fn(f32) -> bool) -> u16 {
        let (mut lo, mut hi) = (0u32, TOP as u32);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if test(self.value(a, mid as u16)) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        lo as u16
    }

    /// For a query bound `x` (any float): the first step whose value is at or above it, as i32 (65536
    /// when none is; NaN gives 65536).
    #[inline]
    pub(crate) fn first_at_or_above(&self, a: usize, x: f32) -> i32 {
        if x <= self.origin[a] {
            0
        } else if x <= self.value(a, TOP) {
            self.up(a, x) as i32
        } else {
            TOP as i32 + 1
        }
    }

    /// For a query bound `x` (any float): the last step whose value is at or below it (-1 when none
    /// is; NaN gives -1).
    #[inline]
    pub(crate) fn last_at_or_below(&self, a: usize, x: f32) -> i32 {
        if x >= self.value(a, TOP) {
            TOP as i32
        } else if x >= self.origin[a] {
            self.down(a, x) as i32
        } else {
            -1
        }
    }

    /// For a query box `[lo, hi]` (no NaN; infinities are fine): per axis, steps `qlo` and `qhi`
    /// such that every plane at or above `lo` has a step of at least `qlo` and every plane at or
    /// below `hi` one of at most `qhi`. Up to two steps looser than
    /// [`first_at_or_above`](Self::first_at_or_above) and [`last_at_or_below`](Self::last_at_or_below):
    /// a plane that close to the box costs a visit, never a result, as leaves test the box itself.
    /// PERF: all six estimates in a few 4-lane operations, each checked by one value, where the exact
    /// bounds cost a tenth of a chunk mesh's box query. Falls back to them when a check fails
    /// (steps far below the coordinates' ulp, or a flat axis).
    #[inline]
    pub(crate) fn loose_steps(&self, lo: [f32; 3], hi: [f32; 3]) -> ([i32; 3], [i32; 3]) {
        let lanes = |v: [f32; 3], spare: f32| f32x4::new([v[0], v[1], v[2], spare]);
        let (origin, step, inv) = (lanes(self.origin, 0.0), lanes(self.step, 0.0), lanes(self.inv_step, 0.0));
        let top = f32x4::splat(TOP as f32);
        // Estimates clamped to the steps, so the truncation is exact; a NaN (flat axis: 0 × inf)
        // becomes 0 through `maxps`, which returns its second operand then.
        let estimate = |x: f32x4| ((x - origin) * inv).fast_max(f32x4::ZERO).fast_min(top).fast_trunc_int();
        let (lo4, hi4) = (lanes(lo, 0.0), lanes(hi, -1.0));
        let one = i32x4::splat(1);
        let (qlo, qhi) = (estimate(lo4) - one, estimate(hi4) + one);
        // Every step below `qlo` is under `lo` when step `qlo - 1` is (values grow with the step),
        // or none is; likewise above `qhi`. Computed as `value`, so bit for bit the planes' values.
        let below = (qlo - one).round_float();
        let above = (qhi + one).round_float();
        let ok_lo = below.simd_lt(f32x4::ZERO) | (origin + below * step).simd_lt(lo4);
        let ok_hi = above.simd_gt(top) | (origin + above * step).simd_gt(hi4);
        if (ok_lo & ok_hi).to_bitmask() & 7 == 7 {
            let (l, h) = (qlo.to_array(), qhi.to_array());
            return ([l[0], l[1], l[2]], [h[0], h[1], h[2]]);
        }
        (
            std::array::from_fn(|a| self.first_at_or_above(a, lo[a])),
            std::array::from_fn(|a| self.last_at_or_below(a, hi[a])),
        )
    }

    /// About `(x - origin) / step` rounded down, clamped to the step range (0 for a flat axis).
    #[inline]
    fn estimate(&self, a: usize, x: f32) -> u16 {
        // `as` saturates (and maps NaN to 0); no `floor`, a libm call on baseline x86-64.
        ((x - self.origin[a]) * self.inv_step[a]) as u16
    }
}

/// The end of a span: `t` clipped to `limit`, or `limit` when `t` is NaN (conservative). One
/// `minss`, where `f32::min`'s NaN handling costs five instructions per plane.
#[inline(always)]
pub(crate) fn upto(t: f32, limit: f32) -> f32 {
    if t < limit { t } else { limit }
}

/// The start of a span: `t` clipped from below by `limit`, or `limit` when `t` is NaN.
#[inline(always)]
pub(crate) fn from(t: f32, limit: f32) -> f32 {
    if t > limit { t } else { limit }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        let b = Node::branch(2, [65535, 7], (1 << 30) - 1);
        assert_eq!(b.kind(), Kind::Branch(2, (1 << 30) - 1));
        assert_eq!((b.plane(0), b.plane(1)), (65535, 7));
        for c in 0..=LEAF_MAX {
            assert_eq!(Node::leaf([7, 9, 11, 13], c).kind(), Kind::Leaf(c));
        }
        let top = (1 << 29) - 1;
        assert_eq!(Node::leaf([top, top - 1, 0, 0], 2).triangles()[..2], [top, top - 1]);
        assert_eq!(Node::leaf([7, 9, 0, 0], 2).triangles()[..2], [7, 9]);
        let narrow = NARROW_TRIANGLES as u32 - 1;
        assert_eq!(Node::leaf([narrow, 0, narrow - 1, 5], 4).triangles(), [narrow, 0, narrow - 1, 5]);
        assert_eq!(Node::leaf([1, narrow, 3, 0], 3).triangles()[..3], [1, narrow, 3]);
        for axis in 0..3 {
            let s = Node::slab(axis, [3, 65534], SLAB_CHILD_LIMIT - 1);
            assert_eq!(s.kind(), Kind::Slab(axis, SLAB_CHILD_LIMIT - 1));
            assert_eq!((s.plane(0), s.plane(1)), (3, 65534));
        }
    }

    #[test]
    fn extents_beyond_f32_keep_a_finite_grid() {
        let big = 3.0e38f32;
        let g = Grid::new([-big; 3], [big; 3]);
        assert!(g.step[0].is_finite() && g.step[0] > 0.0);
        assert_eq!(g.value(0, 0), -big);
        assert!(g.value(0, TOP) >= big);
        for x in [-big, -1e30, 0.0, 7.5, 1e30, big] {
            let (up, down) = (g.up(0, x), g.down(0, x));
            assert!(g.value(0, up) >= x && (up == 0 || g.value(0, up - 1) < x), "{x}");
            assert!(g.value(0, down) <= x && (down == TOP || g.value(0, down + 1) > x), "{x}");
        }
    }

    proptest::proptest! {
        /// Rounding up gives the lowest step at or above a value, rounding down the highest at or
        /// below; the top step reaches the bounds' maximum.
        #[test]
        fn steps_round_outward(
            min in -1e6f32..1e6, extent in proptest::prop_oneof![0.0f32..1e-3, 0.0f32..1e3, 0.0f32..1e7],
            f in 0.0f32..=1.0,
        ) {
            let max = min + extent;
            let g = Grid::new([min; 3], [max; 3]);
            proptest::prop_assert!(g.value(0, TOP) >= max);
            proptest::prop_assert_eq!(g.value(0, 0), min);
            let x = (min + extent * f).clamp(min, max);
            let (up, down) = (g.up(0, x), g.down(0, x));
            proptest::prop_assert!(g.value(0, up) >= x && (up == 0 || g.value(0, up - 1) < x));
            proptest::prop_assert!(g.value(0, down) <= x && (down == TOP || g.value(0, down + 1) > x));
            // Query bounds anywhere, in i32 steps.
            for q in [x - extent, x, x + extent, f32::NAN] {
                let (first, last) = (g.first_at_or_above(0, q), g.last_at_or_below(0, q));
                for s in [0, up, down, TOP] {
                    let v = g.value(0, s);
                    proptest::prop_assert_eq!(v >= q, s as i32 >= first, "step {} of {}", s, q);
                    proptest::prop_assert_eq!(v <= q, s as i32 <= last, "step {} of {}", s, q);
                }
            }
        }

        /// Loose step bounds never exclude a plane the exact ones admit, and are at most two steps
        /// looser; on every axis, whatever the grid (flat, fine, far from the origin).
        #[test]
        fn loose_steps_admit_what_exact_ones_do(
            min in proptest::array::uniform3(-1e6f32..1e6),
            extent in proptest::array::uniform3(proptest::prop_oneof![
                proptest::strategy::Just(0.0f32), 0.0f32..1e-3, 0.0f32..20.0, 0.0f32..1e7,
            ]),
            f in proptest::array::uniform3(-0.1f32..=1.1),
            size in proptest::prop_oneof![0.0f32..1e-3, 0.0f32..3.0, 0.0f32..1e8],
        ) {
            let max = std::array::from_fn(|a| min[a] + extent[a]);
            let g = Grid::new(min, max);
            let lo: [f32; 3] = std::array::from_fn(|a| min[a] + extent[a] * f[a]);
            let hi = lo.map(|x| x + size);
            let (qlo, qhi) = g.loose_steps(lo, hi);
            for a in 0..3 {
                let (first, last) = (g.first_at_or_above(a, lo[a]), g.last_at_or_below(a, hi[a]));
                proptest::prop_assert!(qlo[a] <= first && first - 2 <= qlo[a], "axis {}: {} against {}", a, qlo[a], first);
                proptest::prop_assert!(last <= qhi[a] && qhi[a] <= last + 2, "axis {}: {} against {}", a, qhi[a], last);
            }
        }
    }
}
