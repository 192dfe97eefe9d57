//! Construction. As in the article: split at the mean of the triangle midpoints, sort triangles to
//! a side by midpoint, fit both planes to all 3 vertices; when a side would get under 25% of the
//! triangles, split the midpoint order in halves instead. Two departures, measured on terrain
//! (docs/architecture.md, "kD tree"):
//! - the axis is the one whose mean split gives the lowest surface-area cost, not the longest one
//!   (on steep heightfields the longest axis is often Y, whose split interleaves both children over
//!   the same ground, so a vertical ray tested 19 triangles instead of 2); large nodes measure it on
//!   sampled split boxes, small ones estimate it from their box, midpoint spread and triangle size;
//! - slab nodes bound a subtree on an axis its ancestors leave loose (height, on terrain).

use crate::node::{Grid, LEAF_MAX, NARROW_TRIANGLES, Node, SLAB_CHILD_LIMIT, TOP};
use crate::tree::{KdTree, KdTreeError, LARGE_TREE, MAX_TRIANGLES};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, Positions, TriangleIndices, TriangleSource};
use wide::f32x4;

/// A box as minima `[x, y, z, spare]` and negated maxima `[-x, -y, -z, -1]`: with the maxima
/// negated, growing a box is two 4-lane minimums (PERF: explicit lanes; as an `[f32; 8]` the
/// compiler assembled the lanes of each triangle with shuffles, and the axis choice cost 83
/// instructions a sample).
#[derive(Clone, Copy, Debug)]
struct Bounds {
    lo: f32x4,
    nhi: f32x4,
}

/// Added to a triangle index to make the bits of its spare lane a normal float (exponent field 1 to
/// 64): lane-wise arithmetic also runs on the spare lane, and on a subnormal it costs a microcode
/// assist per operation (PERF: with the raw index, a quarter of the build time). The lane of
/// `mids2` is then exactly 1.0 (that float is far below 1.0's ulp), so sums stay normal too.
const INDEX_BIAS: u32 = 1 << 23;

impl Bounds {
    const EMPTY: Bounds = Bounds { lo: f32x4::new([f32::INFINITY; 4]), nhi: f32x4::new([f32::INFINITY; 4]) };

    /// A triangle's bounds, with its index.
    fn new(min: [f32; 3], max: [f32; 3], index: u32) -> Self {
        let index = f32::from_bits(index + INDEX_BIAS);
        Bounds {
            lo: f32x4::new([min[0], min[1], min[2], index]),
            nhi: f32x4::new([-max[0], -max[1], -max[2], -1.0]),
        }
    }

    #[inline]
    fn grow(&mut self, other: &Bounds) {
        // No NaN reaches a build (vertices are checked finite), so `minps` is exact.
        self.lo = self.lo.fast_min(other.lo);
        self.nhi = self.nhi.fast_min(other.nhi);
    }

    #[inline]
    fn min(&self, axis: usize) -> f32 {
        self.lo.as_array()[axis]
    }

    #[inline]
    fn max(&self, axis: usize) -> f32 {
        -self.nhi.as_array()[axis]
    }

    /// Of a triangle's bounds: twice its midpoint on `axis`.
    #[inline]
    fn mid2(&self, axis: usize) -> f32 {
        self.lo.as_array()[axis] - self.nhi.as_array()[axis]
    }

    /// Of a triangle's bounds: twice its midpoint on each axis (lane 3: 1.0, unused).
    #[inline]
    fn mids2(&self) -> f32x4 {
        self.lo - self.nhi
    }

    /// Of a triangle's bounds: its index, kept in the spare lane.
    #[inline]
    fn index(&self) -> u32 {
        self.lo.as_array()[3].to_bits() - INDEX_BIAS
    }

    /// Half the surface area: the surface-area heuristic's weight.
    fn half_area(&self) -> f32 {
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
type Prim = Bounds;

/// A split on Y (up) must cost this much less than the best horizontal one to be chosen: rays
/// against terrain mostly come from above, and a Y split of a heightfield interleaves both children
/// over the same ground, so a vertical ray visits both (measured on the `kdtree` suite's terrain).
const VERTICAL_BIAS: f32 = 1.25;

/// Subtrees of at least this many triangles may get a slab...
const SLAB_MIN_TRIANGLES: usize = 16;
/// ...or of this many, in trees of at least [`LARGE_TREE`] triangles, whose mesh and tree are
/// past L2: there a leaf a ray need not test saves cache misses on its triangles' indices and
/// vertices. PERF (callgrind, 1 MB last level, the `kdtree` suite's 200k terrain): oblique rays
/// 8.96 → 8.15 last-level misses and 3 260 → 3 063 instructions, down rays +1% of each; 5% more
/// nodes (8.4 → 8.8 bytes a triangle). On chunk meshes, which stay in cache, the same threshold
/// cost 9–15% of a build.
const SLAB_MIN_TRIANGLES_LARGE: usize = 8;
/// ...when the bounds their ancestors give them on some axis are this many times their own extent.
const SLAB_RATIO: f32 = 1.5;

impl KdTree {
    /// Builds the tree over `mesh`'s triangles. O(n log n); one scratch buffer of 40 bytes per
    /// triangle. Errors on out-of-range indices, non-finite vertices, or more than 2^29 triangles.
    pub fn build(mesh: &impl TriangleSource) -> Result<Self, KdTreeError> {
        build(mesh)
    }
}

fn build(source: &impl TriangleSource) -> Result<KdTree, KdTreeError> {
    let n = source.triangle_count();
    if n > MAX_TRIANGLES {
        return Err(KdTreeError::TooManyTriangles(n));
    }
    let positions = source.positions();
    let mut prims = Vec::with_capacity(n);
    // One pass over the positions decides whether each triangle's vertices need a finiteness
    // check (they do only when some position is not finite).
    let check = !positions.iter().all(|q| q.x.is_finite() && q.y.is_finite() && q.z.is_finite());
    // Monomorphised per vertex and index format (PERF: a format match per vertex cost a third of
    // a chunk's build).
    macro_rules! prims {
        ($get:expr, $tris:expr) => {
            prims_of(&mut prims, $tris, positions.len(), $get, check)
        };
    }
    match (positions, source.indices()) {
        (Positions::F32(p), TriangleIndices::Packed9(t)) => {
            prims!(|v| p[v], t.iter().map(|&t| voxterra_core::unpack9(t)))
        }
        (Positions::Quantized(p), TriangleIndices::Packed9(t)) => {
            prims!(|v| p.get(v), t.iter().map(|&t| voxterra_core::unpack9(t)))
        }
        (Positions::F32(p), TriangleIndices::U16(t)) => prims!(|v| p[v], t.iter().map(|t| t.map(u32::from))),
        (Positions::F32(p), TriangleIndices::U32(t)) => prims!(|v| p[v], t.iter().copied()),
        (Positions::Quantized(p), TriangleIndices::U16(t)) => {
            prims!(|v| p.get(v), t.iter().map(|t| t.map(u32::from)))
        }
        (Positions::Quantized(p), TriangleIndices::U32(t)) => prims!(|v| p.get(v), t.iter().copied()),
    }?;
    let b = bounds_of(&prims);
    let bounds =
        Aabb::new(Point3::from([0, 1, 2].map(|a| b.min(a))), Point3::from([0, 1, 2].map(|a| b.max(a))));
    let grid = if prims.is_empty() {
        Grid::new([0.0; 3], [0.0; 3])
    } else {
        Grid::new([0, 1, 2].map(|a| b.min(a)), [0, 1, 2].map(|a| b.max(a)))
    };
    // Slabs only while every node index still fits a branch's 30 bits: at most 2n - 1 branches and
    // leaves plus fewer than 2^27 slabs.
    let slab_min = if n > 1 << 28 {
        usize::MAX
    } else if n >= LARGE_TREE as usize {
        SLAB_MIN_TRIANGLES_LARGE
    } else {
        SLAB_MIN_TRIANGLES
    };
    // Small trees take leaves of up to four triangles (their indices fit 14 bits).
    let leaf_max = if n <= NARROW_TRIANGLES { LEAF_MAX } else { 2 };
    let mut builder = Builder {
        nodes: Vec::with_capacity(2 * n / leaf_max + n / 8 + 1),
        depth: 0,
        slab_min,
        grid,
        leaf_max,
    };
    builder.nodes.push(Node::EMPTY);
    if !prims.is_empty() {
        // The grid's span is the root's limits (queries clip to the tree's bounds, inside it).
        let limits = [0, 1, 2].map(|a| [grid.value(a, 0), grid.value(a, TOP)]);
        builder.subdivide(&mut prims, 0, 1, b, limits, false);
    }
    Ok(KdTree {
        nodes: builder.nodes.into_boxed_slice(),
        // Against the rounding of coordinates: relative to their magnitude, not only the extent
        // (far from the origin a margin of the extent alone rounds away).
        clip_margin: (bounds.extents().norm() + bounds.mins.coords.amax().max(bounds.maxs.coords.amax()))
            * crate::ray_query::WIDEN
            + f32::MIN_POSITIVE,
        bounds,
        grid,
        // The depth is at most MAX_DEPTH plus the slabs on a path (each under a branch).
        depth: u16::try_from(builder.depth).unwrap_or(u16::MAX),
        triangles: n as u32,
    })
}

/// Appends the build data of each triangle of `tris` (vertex indices below `len`, positions from
/// `get`; `check`: test each vertex for finiteness).
fn prims_of(
    prims: &mut Vec<Prim>,
    tris: impl Iterator<Item = [u32; 3]> + Clone,
    len: usize,
    get: impl Fn(usize) -> Point3<f32>,
    check: bool,
) -> Result<(), KdTreeError> {
    // Checks in passes of their own (PERF: inside the main loop, their exits made it spill half
    // its registers: 68 instructions a triangle, against 45 plus 10 for the index check). The
    // highest index first, branch-free; the culprit only when it is out of range.
    if tris.clone().map(|v| v[0].max(v[1]).max(v[2])).max().is_some_and(|m| m as usize >= len) {
        let out_of_range = |v: &[u32; 3]| v.iter().copied().find(|&vi| vi as usize >= len);
        if let Some((triangle, vertex)) =
            tris.clone().enumerate().find_map(|(i, v)| Some((i, out_of_range(&v)?)))
        {
            return Err(KdTreeError::IndexOutOfRange { triangle, vertex });
        }
    }
    if check {
        for (i, v) in tris.clone().enumerate() {
            if let Some(&vertex) = v.iter().find(|&&vi| {
                let q = get(vi as usize);
                !(q.x.is_finite() && q.y.is_finite() && q.z.is_finite())
            }) {
                return Err(KdTreeError::NonFiniteVertex { triangle: i, vertex });
            }
        }
    }
    prims.extend(tris.enumerate().map(|(i, v)| {
        let q = v.map(|vi| get(vi as usize));
        // Plain compares: no NaN reaches here.
        let pick = |a: f32, b: f32, low: bool| if (a < b) == low { a } else { b };
        let lo = [0, 1, 2].map(|a| pick(pick(q[0][a], q[1][a], true), q[2][a], true));
        let hi = [0, 1, 2].map(|a| pick(pick(q[0][a], q[1][a], false), q[2][a], false));
        Prim::new(lo, hi, i as u32)
    }));
    Ok(())
}

/// The tight box of `prims`.
fn bounds_of(prims: &[Prim]) -> Bounds {
    let mut b = Bounds::EMPTY;
    prims.iter().for_each(|p| b.grow(p));
    b
}

struct Builder {
    nodes: Vec<Node>,
    depth: usize,
    /// The fewest triangles a subtree needs for a slab (`usize::MAX`: no slabs).
    slab_min: usize,
    grid: Grid,
    /// The most triangles a leaf takes: [`LEAF_MAX`] in small trees, else 2.
    leaf_max: usize,
}

impl Builder {
    /// Fills node `at` with the tree over `prims` (which it reorders). `level` is `at`'s depth,
    /// `bounds` the tight box of `prims` (from the parent's partition pass), `limits` the range queries know `at` to lie in
    /// on each axis (from the planes above it); `may_slab` is false right below a slab.
    fn subdivide(
        &mut self,
        prims: &mut [Prim],
        at: usize,
        level: usize,
        bounds: Bounds,
        mut limits: [[f32; 2]; 3],
        may_slab: bool,
    ) {
        self.depth = self.depth.max(level);
        let n = prims.len();
        if n <= self.leaf_max {
            self.nodes[at] = leaf(prims);
            return;
        }
        if n <= 4 {
            return self.tiny(prims, at, level, &bounds);
        }
        if may_slab && n >= self.slab_min && self.nodes.len() < SLAB_CHILD_LIMIT {
            // The axis whose known limits are loosest relative to the triangles' own extent.
            let loose = |a: usize| (limits[a][1] - limits[a][0]) / (bounds.max(a) - bounds.min(a)).max(1e-6);
            let axis = (0..3).max_by(|&a, &b| loose(a).total_cmp(&loose(b))).unwrap_or(0);
            if loose(axis) >= SLAB_RATIO {
                let child = self.nodes.len();
                self.nodes.push(Node::EMPTY);
                // Rounded outward to the grid.
                let range = [self.grid.down(axis, bounds.min(axis)), self.grid.up(axis, bounds.max(axis))];
                self.nodes[at] = Node::slab(axis, range, child);
                limits[axis] = range.map(|q| self.grid.value(axis, q));
                return self.subdivide(prims, child, level + 1, bounds, limits, false);
            }
        }
        let (axis, left, lb, rb) = split(prims, &bounds);
        let child = self.nodes.len();
        self.nodes.push(Node::EMPTY);
        self.nodes.push(Node::EMPTY);
        // The left child's upper plane rounded up to the grid, the right child's lower one down.
        let planes = [self.grid.up(axis, lb.max(axis)), self.grid.down(axis, rb.min(axis))];
        self.nodes[at] = Node::branch(axis, planes, child as u32);
        let (l, r) = prims.split_at_mut(left);
        let mut ll = limits;
        ll[axis][1] = self.grid.value(axis, planes[0]);
        limits[axis][0] = self.grid.value(axis, planes[1]);
        // Leaves are written here (PERF: a call per leaf, half the nodes, cost its frame set-up).
        for (prims, at, bounds, limits) in [(l, child, lb, ll), (r, child + 1, rb, limits)] {
            if prims.len() <= self.leaf_max {
                self.depth = self.depth.max(level + 1);
                self.nodes[at] = leaf(prims);
            } else {
                self.subdivide(prims, at, level + 1, bounds, limits, true);
            }
        }
    }

    /// [`Builder::subdivide`] for 3 or 4 triangles, most of a chunk's nodes: a branch over two
    /// leaves, with no branch on the data after the one that led here (PERF: the sample loop's
    /// exit, the size tests and the per-child leaf test each mispredicted about one call in two).
    fn tiny(&mut self, prims: &mut [Prim], at: usize, level: usize, bounds: &Bounds) {
        let axis = tiny_axis(prims, bounds);
        let (_, left, lb, rb) = tiny_split(prims, axis);
        let child = self.nodes.len();
        let planes = [self.grid.up(axis, lb.max(axis)), self.grid.down(axis, rb.min(axis))];
        self.nodes.push(leaf(&prims[..left]));
        self.nodes.push(leaf(&prims[left..]));
        self.nodes[at] = Node::branch(axis, planes, child as u32);
        self.depth = self.depth.max(level + 1);
    }
}

/// The leaf over `prims` (at most [`LEAF_MAX`]; more than 2 only in small trees).
fn leaf(prims: &[Prim]) -> Node {
    let id = |i: usize| prims.get(i).map_or(0, Prim::index);
    Node::leaf([id(0), id(1), id(2), id(3)], prims.len())
}

/// Of a node's split statistics, at most this many triangles are looked at (evenly spaced): the
/// axis choice needs only an estimate, and a full pass on every axis doubled the build time.
const SAH_SAMPLES: usize = 16;

/// Nodes of up to this many triangles choose their axis by [`estimated_axis`], without sampled
/// split boxes (PERF: those cost 40% of a chunk's build). Traversal instructions on the `kdtree`
/// suite's rays, against sampled boxes at every node: +0.02% with the estimate up to 16
/// triangles, +0.55% up to 32, +1.9% up to 64, +6% everywhere.
const ESTIMATE_MAX: usize = 32;

/// Splits `prims` (at least 3, tight box `bounds`) in two: returns the axis, the left count (the
/// left triangles are moved first) and both sides' boxes.
fn split(prims: &mut [Prim], bounds: &Bounds) -> (usize, usize, Bounds, Bounds) {
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
fn sample<'a>(prims: impl Iterator<Item = &'a Prim>, center: f32x4) -> (f32x4, f32x4, f32x4, f32x4, usize) {
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
fn median_split(prims: &mut [Prim], axis: usize, l: usize) -> (usize, usize, Bounds, Bounds) {
    prims.select_nth_unstable_by(l, |p, q| p.mid2(axis).total_cmp(&q.mid2(axis)));
    let (lp, rp) = prims.split_at(l);
    (axis, l, bounds_of(lp), bounds_of(rp))
}

/// [`median_split`] for at most [`SMALL`] triangles: an insertion sort of their midpoints, then
/// one permutation (PERF: the standard selection cost twice as much on so few).
#[inline(never)]
fn small_split(prims: &mut [Prim], axis: usize, l: usize) -> (usize, usize, Bounds, Bounds) {
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
fn tiny_axis(prims: &[Prim], bounds: &Bounds) -> usize {
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
fn tiny_split(prims: &mut [Prim], axis: usize) -> (usize, usize, Bounds, Bounds) {
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
const SMALL: usize = 8;

/// The longest axis of `bounds`, Y's extent divided by [`VERTICAL_BIAS`].
fn longest(bounds: &Bounds) -> usize {
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
fn cheapest_axis(prims: &[Prim], step: usize, mean: f32x4, bounds: &Bounds) -> usize {
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
fn estimated_axis(bounds: &Bounds, spread: f32x4, extent: f32x4) -> usize {
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
fn fair(l: usize, n: usize) -> bool {
    l >= (n / 4).max(1) && n - l >= (n / 4).max(1)
}

/// Growing one of two boxes, chosen per triangle.
trait GrowEither {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::Kind;
    use proptest::prelude::*;

    /// 3 or 4 triangles' build data, coordinates on a coarse grid so midpoints tie often.
    fn arb_prims() -> impl Strategy<Value = Vec<Prim>> {
        let c = (-8i8..8).prop_map(|v| v as f32 * 0.5);
        let tri = (proptest::array::uniform3(c.clone()), proptest::array::uniform3(0u8..4));
        prop::collection::vec(tri, 3..=4).prop_map(|t| {
            t.iter()
                .enumerate()
                .map(|(i, (lo, e))| Prim::new(*lo, [0, 1, 2].map(|a| lo[a] + e[a] as f32 * 0.5), i as u32))
                .collect()
        })
    }

    fn ids(prims: &[Prim]) -> Vec<u32> {
        prims.iter().map(Prim::index).collect()
    }

    fn same(a: &Bounds, b: &Bounds) -> bool {
        a.lo.to_array().map(f32::to_bits) == b.lo.to_array().map(f32::to_bits)
            && a.nhi.to_array().map(f32::to_bits) == b.nhi.to_array().map(f32::to_bits)
    }

    /// Triangles under node `at`.
    fn triangles_below(nodes: &[Node], at: usize) -> usize {
        match nodes[at].kind() {
            Kind::Leaf(count) => count,
            Kind::Slab(_, c) => triangles_below(nodes, c),
            Kind::Branch(_, c) => triangles_below(nodes, c) + triangles_below(nodes, c + 1),
        }
    }

    /// The fewest triangles under a slab of a hilly `side × side` grid's tree.
    fn smallest_slabbed(side: u32) -> usize {
        let mesh =
            crate::test_util::grid(side, |x, z| ((x as f32 * 0.3).sin() + (z as f32 * 0.2).cos()) * 8.0);
        let tree = build(&mesh).unwrap();
        let slabbed = tree.nodes.iter().filter_map(|n| match n.kind() {
            Kind::Slab(_, c) => Some(triangles_below(&tree.nodes, c)),
            _ => None,
        });
        slabbed.min().unwrap_or(usize::MAX)
    }

    #[test]
    fn large_trees_slab_smaller_subtrees() {
        // 2 × 100² triangles: under the large-tree size; 2 × 130² = 33 800: over it.
        const { assert!(2 * 100 * 100 < LARGE_TREE && LARGE_TREE <= 2 * 130 * 130) };
        let small = smallest_slabbed(100);
        assert!((SLAB_MIN_TRIANGLES..SLAB_MIN_TRIANGLES + 4).contains(&small), "{small}");
        let large = smallest_slabbed(130);
        assert!((SLAB_MIN_TRIANGLES_LARGE..SLAB_MIN_TRIANGLES).contains(&large), "{large}");
    }

    proptest! {
        /// The tiny path builds what the general one does: the axis from the sample statistics,
        /// and the stable midpoint order with its two boxes.
        #[test]
        fn tiny_nodes_split_as_small_ones(prims in arb_prims()) {
            let bounds = bounds_of(&prims);
            let (_, lo, hi, extents, sampled) = sample(prims.iter(), bounds.mids2());
            let axis = estimated_axis(&bounds, (hi - lo) * 0.5, extents / sampled as f32);
            prop_assert_eq!(tiny_axis(&prims, &bounds), axis);
            let (mut a, mut b) = (prims.clone(), prims.clone());
            let (_, la, lba, rba) = tiny_split(&mut a, axis);
            let (_, lb, lbb, rbb) = small_split(&mut b, axis, 2);
            prop_assert_eq!((la, ids(&a)), (lb, ids(&b)));
            prop_assert!(same(&lba, &lbb) && same(&rba, &rbb));
        }

        /// Growing either box by selection grows exactly the chosen one.
        #[test]
        fn grow_either_grows_the_chosen_box(prims in arb_prims(), sides in prop::collection::vec(any::<bool>(), 4)) {
            let mut ours = [Bounds::EMPTY; 2];
            let mut want = [Bounds::EMPTY; 2];
            for (p, &left) in prims.iter().zip(&sides) {
                ours.grow_either(p, left);
                want[usize::from(!left)].grow(p);
            }
            prop_assert!(same(&ours[0], &want[0]) && same(&ours[1], &want[1]));
        }
    }
}
