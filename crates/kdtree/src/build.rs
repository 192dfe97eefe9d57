//! Construction. As in the article: split at the mean of the triangle midpoints, sort triangles to
//! a side by midpoint, fit both planes to all 3 vertices; when a side would get under 25% of the
//! triangles, split the midpoint order in halves instead. Two departures, measured on terrain
//! (docs/architecture.md, "kD tree"):
//! - the axis is the one whose mean split gives the lowest surface-area cost, not the longest one
//!   (on steep heightfields the longest axis is often Y, whose split interleaves both children over
//!   the same ground, so a vertical ray tested 19 triangles instead of 2); large nodes measure it on
//!   sampled split boxes, small ones estimate it from their box, midpoint spread and triangle size;
//! - slab nodes bound a subtree on an axis its ancestors leave loose (height, on terrain).

use crate::bounds::{Bounds, Prim, bounds_of};
use crate::node::{Grid, LEAF_MAX, NARROW_TRIANGLES, Node, SLAB_CHILD_LIMIT, TOP};
use crate::split::{split, tiny_axis, tiny_split};
use crate::tree::{KdTree, KdTreeError, LARGE_TREE, MAX_TRIANGLES};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, Positions, TriangleIndices, TriangleSource};

/// Subtrees of at least this many triangles may get a slab...
pub(crate) const SLAB_MIN_TRIANGLES: usize = 16;

/// ...or of this many, in trees of at least [`LARGE_TREE`] triangles, whose mesh and tree are
/// past L2: there a leaf a ray need not test saves cache misses on its triangles' indices and
/// vertices. PERF (callgrind, 1 MB last level, the `kdtree` suite's 200k terrain): oblique rays
/// 8.96 → 8.15 last-level misses and 3 260 → 3 063 instructions, down rays +1% of each; 5% more
/// nodes (8.4 → 8.8 bytes a triangle). On chunk meshes, which stay in cache, the same threshold
/// cost 9–15% of a build.
pub(crate) const SLAB_MIN_TRIANGLES_LARGE: usize = 8;

/// ...when the bounds their ancestors give them on some axis are this many times their own extent.
pub(crate) const SLAB_RATIO: f32 = 1.5;

impl KdTree {
    /// Builds the tree over `mesh`'s triangles. O(n log n); one scratch buffer of 40 bytes per
    /// triangle. Errors on out-of-range indices, non-finite vertices, or more than 2^29 triangles.
    pub fn build(mesh: &impl TriangleSource) -> Result<Self, KdTreeError> {
        build(mesh)
    }
}

pub(crate) fn build(source: &impl TriangleSource) -> Result<KdTree, KdTreeError> {
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
pub(crate) fn prims_of(
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

pub(crate) struct Builder {
    pub(crate) nodes: Vec<Node>,
    pub(crate) depth: usize,
    /// The fewest triangles a subtree needs for a slab (`usize::MAX`: no slabs).
    pub(crate) slab_min: usize,
    pub(crate) grid: Grid,
    /// The most triangles a leaf takes: [`LEAF_MAX`] in small trees, else 2.
    pub(crate) leaf_max: usize,
}

impl Builder {
    /// Fills node `at` with the tree over `prims` (which it reorders). `level` is `at`'s depth,
    /// `bounds` the tight box of `prims` (from the parent's partition pass), `limits` the range queries know `at` to lie in
    /// on each axis (from the planes above it); `may_slab` is false right below a slab.
    pub(crate) fn subdivide(
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
    pub(crate) fn tiny(&mut self, prims: &mut [Prim], at: usize, level: usize, bounds: &Bounds) {
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
pub(crate) fn leaf(prims: &[Prim]) -> Node {
    let id = |i: usize| prims.get(i).map_or(0, Prim::index);
    Node::leaf([id(0), id(1), id(2), id(3)], prims.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bounds::GrowEither;
    use crate::node::Kind;
    use crate::split::{estimated_axis, sample, small_split};
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
