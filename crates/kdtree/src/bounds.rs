//! Boxes and triangles as the builder handles them: [`Bounds`] in 4-lane vectors (maxima negated, so
//! growing a box is two minimums) and [`Prim`], a triangle's box and midpoint.

use wide::f32x4;

/// A box as minima `[x, y, z, spare]` and negated maxima `[-x, -y, -z, -1]`: with the maxima
/// negated, growing a box is two 4-lane minimums (PERF: explicit lanes; as an `[f32; 8]` the
/// compiler assembled the lanes of each triangle with shuffles, and the axis choice cost 83
/// instructions a sample).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    pub(crate) lo: f32x4,
    pub(crate) nhi: f32x4,
}

/// Added to a triangle index to make the bits of its spare lane a normal float (exponent field 1 to
/// 64): lane-wise arithmetic also runs on the spare lane, and on a subnormal it costs a microcode
/// assist per operation (PERF: with the raw index, a quarter of the build time). The lane of
/// `mids2` is then exactly 1.0 (that float is far below 1.0's ulp), so sums stay normal too.
pub(crate) const INDEX_BIAS: u32 = 1 << 23;

impl Bounds {
    pub(crate) const EMPTY: Bounds =
        Bounds { lo: f32x4::new([f32::INFINITY; 4]), nhi: f32x4::new([f32::INFINITY; 4]) };

    /// A triangle's bounds, with its index.
    pub(crate) fn new(min: [f32; 3], max: [f32; 3], index: u32) -> Self {
        let index = f32::from_bits(index + INDEX_BIAS);
        Bounds {
            lo: f32x4::new([min[0], min[1], min[2], index]),
            nhi: f32x4::new([-max[0], -max[1], -max[2], -1.0]),
        }
    }

    #[inline]
    pub(crate) fn grow(&mut self, other: &Bounds) {
        // No NaN reaches a build (vertices are checked finite), so `minps` is exact.
        self.lo = self.lo.fast_min(other.lo);
        self.nhi = self.nhi.fast_min(other.nhi);
    }

    #[inline]
    pub(crate) fn min(&self, axis: usize) -> f32 {
        self.lo.as_array()[axis]
    }

    #[inline]
    pub(crate) fn max(&self, axis: usize) -> f32 {
        -self.nhi.as_array()[axis]
    }

    /// Of a triangle's bounds: twice its midpoint on `axis`.
    #[inline]
    pub(crate) fn mid2(&self, axis: usize) -> f32 {
        self.lo.as_array()[axis] - self.nhi.as_array()[axis]
    }

    /// Of a triangle's bounds: twice its midpoint on each axis (lane 3: 1.0, unused).
    #[inline]
    pub(crate) fn mids2(&self) -> f32x4 {
        self.lo - self.nhi
    }

    /// Of a triangle's bounds: its index, kept in the spare lane.
    #[inline]
    pub(crate) fn index(&self) -> u32 {
        self.lo.as_array()[3].to_bits() - INDEX_BIAS
    }

    /// Half the surface area: the surface-area heuristic's weight.
    pub(crate) fn half_area(&self) -> f32 {
        // A plain compare, not `f32::max` (its NaN rule costs five instructions; an empty box's
        // extent is -inf, never NaN).
        let e = [0, 1, 2].map(|a| {
            let e = self.max(a) - self.min(a);
            if e > 0.0 { e } else { 0.0 }
        });
        e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
    }
}

/// Per-triangle build data (the one scratch buffer of a build, 32 bytes a triangle): its bounds,
/// with its index in the spare lane.
pub(crate) type Prim = Bounds;

/// The tight box of `prims`.
pub(crate) fn bounds_of(prims: &[Prim]) -> Bounds {
    let mut b = Bounds::EMPTY;
    prims.iter().for_each(|p| b.grow(p));
    b
}

/// Growing one of two boxes, chosen per triangle.
pub(crate) trait GrowEither {
    /// Grows `self[0]` by `p` when `left`, else `self[1]`, branch-free and in registers: the
    /// other box's operand is made all-ones bits, a NaN, which `minps` passes over when it is the
    /// first operand. PERF: indexing the box to grow made each grow wait for the last one's
    /// store (a fifth of the build's samples sat on those stores); chunk builds −5% in time.
    fn grow_either(&mut self, p: &Prim, left: bool);
}

impl GrowEither for [Bounds; 2] {
    #[inline(always)]
    fn grow_either(&mut self, p: &Prim, left: bool) {
        let nan = f32x4::splat(f32::from_bits(u32::MAX));
        let to_right = f32x4::splat(f32::from_bits(u32::from(left).wrapping_neg()));
        let to_left = to_right ^ nan;
        for (b, skip) in self.iter_mut().zip([to_left, to_right]) {
            b.lo = (p.lo | skip).fast_min(b.lo);
            b.nhi = (p.nhi | skip).fast_min(b.nhi);
        }
    }
}
