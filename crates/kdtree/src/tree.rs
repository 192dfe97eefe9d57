//! The tree, its queries, statistics and invariant check.

use crate::build::{self, MAX_DEPTH};
use crate::node::{Grid, Kind, Node, TOP};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{
    Aabb, Culling, QuantizedPositions, Ray, RayHit, TriangleIndex, TriangleSource, ray_triangle,
};

/// Why a tree cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KdTreeError {
    /// A triangle names a vertex past the end of the positions.
    #[error("triangle {triangle} uses vertex {vertex}, past the end of the positions")]
    IndexOutOfRange {
        /// The triangle.
        triangle: usize,
        /// The vertex index.
        vertex: u32,
    },
    /// A vertex with a NaN or infinite coordinate.
    #[error("triangle {triangle} uses vertex {vertex}, which is not finite")]
    NonFiniteVertex {
        /// The triangle.
        triangle: usize,
        /// The vertex index.
        vertex: u32,
    },
    /// More triangles than node fields can address.
    #[error("{0} triangles exceed the limit of {max}", max = build::MAX_TRIANGLES)]
    TooManyTriangles(usize),
}

/// Size and shape of a tree.
#[derive(Clone, Copy, PartialEq, Debug)]
#[non_exhaustive]
pub struct KdTreeStats {
    /// Triangles indexed.
    pub triangles: usize,
    /// Nodes (branches, leaves and slabs).
    pub nodes: usize,
    /// Leaves.
    pub leaves: usize,
    /// Slab nodes (bounds on an axis the planes above leave loose; see the crate docs).
    pub slabs: usize,
    /// Levels, the root counting as 1 (slabs count).
    pub depth: usize,
    /// Bytes of the tree (nodes and bounds; not the mesh).
    pub bytes: usize,
    /// Mean triangles per leaf.
    pub triangles_per_leaf: f32,
}

/// A loose kD tree over the triangles of a mesh it does not own. Build it with [`KdTree::build`],
/// query it through [`KdTree::with`], which pairs it with its mesh.
#[derive(Clone, Debug)]
pub struct KdTree {
    pub(crate) nodes: Vec<Node>,
    pub(crate) bounds: Aabb,
    /// The grid the nodes' planes are steps of.
    pub(crate) grid: Grid,
    /// `bounds` loosened against float error, for clipping rays.
    pub(crate) clip: Aabb,
    /// Per axis, the largest coordinate magnitude in `bounds` (the ray error bound's scale).
    pub(crate) reach: [f32; 3],
    pub(crate) depth: usize,
    pub(crate) triangles: u32,
}

impl KdTree {
    /// Builds the tree over `mesh`'s triangles. O(n log n); one scratch buffer of 40 bytes per
    /// triangle. Errors on out-of-range indices, non-finite vertices, or more than 2^29 triangles.
    pub fn build(mesh: &impl TriangleSource) -> Result<Self, KdTreeError> {
        build::build(mesh)
    }

    /// The tree paired with its mesh (the one it was built from): the query interface.
    pub fn with<'a, S: TriangleSource>(&'a self, mesh: &'a S) -> KdTreeView<'a, S> {
        KdTreeView { tree: self, mesh }
    }

    /// The bounds of every triangle (inverted — mins above maxs — for an empty tree).
    pub fn bounds(&self) -> &Aabb {
        &self.bounds
    }

    /// Statistics.
    pub fn stats(&self) -> KdTreeStats {
        // One pass: [branches, leaves, slabs].
        let mut kinds = [0usize; 3];
        for n in &self.nodes {
            kinds[match n.kind() {
                Kind::Branch(..) => 0,
                Kind::Leaf(_) => 1,
                Kind::Slab(..) => 2,
            }] += 1;
        }
        let leaves = kinds[1];
        KdTreeStats {
            triangles: self.triangles as usize,
            nodes: self.nodes.len(),
            leaves,
            slabs: kinds[2],
            depth: self.depth,
            bytes: self.nodes.len() * std::mem::size_of::<Node>() + std::mem::size_of::<Self>(),
            triangles_per_leaf: self.triangles as f32 / leaves.max(1) as f32,
        }
    }

    /// Checks every invariant against `mesh`: each branch's planes bound all triangles below it,
    /// children in range, each triangle in exactly one leaf, at most 2 per leaf, depth as recorded
    /// and within the query stacks, bounds holding everything. `Err` names the first broken one.
    pub fn validate(&self, mesh: &impl TriangleSource) -> Result<(), String> {
        let n = mesh.triangle_count();
        if n != self.triangles as usize {
            return Err(format!("built over {} triangles, mesh has {n}", self.triangles));
        }
        if self.depth > 2 * MAX_DEPTH {
            return Err(format!("depth {} exceeds the query stack bound", self.depth));
        }
        let mut seen = vec![false; n];
        // (node, level, branches above, bounds the node's triangles must respect on each axis)
        let mut stack = vec![(0usize, 1usize, 0usize, [[f32::NEG_INFINITY, f32::INFINITY]; 3])];
        let mut max_level = 0;
        while let Some((i, level, branches, limits)) = stack.pop() {
            max_level = max_level.max(level);
            if branches > MAX_DEPTH {
                return Err(format!("node {i} has {branches} branches above it, past the query stack"));
            }
            let node = self.nodes.get(i).ok_or(format!("node {i} out of range"))?;
            match node.kind() {
                Kind::Leaf(count) => {
                    if count > 2 {
                        return Err(format!("leaf {i} holds {count} triangles"));
                    }
                    for &t in &node.triangles()[..count] {
                        let t = t as usize;
                        if t >= n || std::mem::replace(&mut seen[t], true) {
                            return Err(format!("leaf {i}: triangle {t} out of range or in two leaves"));
                        }
                        for v in mesh.triangle(t) {
                            for a in 0..3 {
                                if !(limits[a][0] <= v[a] && v[a] <= limits[a][1]) {
                                    return Err(format!(
                                        "triangle {t} at leaf {i} lies outside a split plane or slab on axis {a}"
                                    ));
                                }
                                if !(self.bounds.mins[a] <= v[a] && v[a] <= self.bounds.maxs[a]) {
                                    return Err(format!("triangle {t} lies outside the tree bounds"));
                                }
                            }
                        }
                    }
                }
                Kind::Branch(a, c) => {
                    if c + 1 >= self.nodes.len() || c <= i {
                        return Err(format!("branch {i}: children at {c} out of range"));
                    }
                    let mut left = limits;
                    left[a][1] = left[a][1].min(self.grid.value(a, node.plane(0)));
                    let mut right = limits;
                    right[a][0] = right[a][0].max(self.grid.value(a, node.plane(1)));
                    stack.push((c, level + 1, branches + 1, left));
                    stack.push((c + 1, level + 1, branches + 1, right));
                }
                Kind::Slab(a, c) => {
                    if c >= self.nodes.len() || c <= i {
                        return Err(format!("slab {i}: child {c} out of range"));
                    }
                    if matches!(self.nodes[c].kind(), Kind::Slab(..)) {
                        return Err(format!("slab {i}: its child is a slab"));
                    }
                    let mut inner = limits;
                    let range = [0, 1].map(|k| self.grid.value(a, node.plane(k)));
                    inner[a] = [inner[a][0].max(range[0]), inner[a][1].min(range[1])];
                    stack.push((c, level + 1, branches, inner));
                }
            }
        }
        if max_level != self.depth.max(1) {
            return Err(format!("depth {} recorded, {max_level} found", self.depth));
        }
        match seen.iter().position(|s| !s) {
            Some(t) => Err(format!("triangle {t} is in no leaf")),
            None => Ok(()),
        }
    }
}

impl KdTree {
    /// A ray's per-axis constants and its segment inside the tree's bounds, or `None` when it
    /// cannot hit: an empty tree, a ray missing the bounds, a non-finite origin or direction, a
    /// zero direction or a NaN `max_t` (documented: such rays hit nothing, as with
    /// `ray_triangle`).
    #[inline(always)]
    pub(crate) fn ray_start(&self, ray: &Ray, max_t: f32) -> Option<([RayAxis; 3], Segment)> {
        let finite = ray.origin.iter().chain(ray.dir.iter()).all(|v| v.is_finite());
        if self.triangles == 0
            || !finite
            || ray.dir == voxterra_core::nalgebra::Vector3::zeros()
            || max_t.is_nan()
        {
            return None;
        }
        // Per ray, once (the article): inverse direction; the bounds clip reuses it.
        let inv = ray.dir.map(|d| 1.0 / d);
        let (t0, t1) = self.clip.clip_ray_inv(&ray.origin, &inv, max_t)?;
        let slack = t1.abs().min(f32::MAX / 2.0) * WIDEN;
        let axis = |a: usize| RayAxis::new(self, ray, inv[a], a, slack);
        Some(([axis(0), axis(1), axis(2)], Segment { node: 0, tmin: t0, tmax: t1 }))
    }
}

/// A tree and its mesh: runs queries. Implements core's [`TriangleIndex`].
#[derive(Clone, Copy, Debug)]
pub struct KdTreeView<'a, S: TriangleSource> {
    pub(crate) tree: &'a KdTree,
    pub(crate) mesh: &'a S,
}

/// Vertex positions, for a given vertex format (resolved once per query).
pub(crate) trait Vertices: Copy {
    fn vertex(self, v: u32) -> Point3<f32>;
    /// Prefetches vertex `v`.
    fn ahead(self, v: u32);
}

impl Vertices for &[Point3<f32>] {
    #[inline]
    fn vertex(self, v: u32) -> Point3<f32> {
        self[v as usize]
    }

    #[inline(always)]
    fn ahead(self, v: u32) {
        prefetch_index::prefetch_index(self, v as usize);
    }
}

impl Vertices for QuantizedPositions<'_> {
    #[inline]
    fn vertex(self, v: u32) -> Point3<f32> {
        self.get(v as usize)
    }

    #[inline(always)]
    fn ahead(self, v: u32) {
        prefetch_index::prefetch_index(self.points, v as usize);
    }
}

/// Vertex positions of triangle `t`, for a given index type (resolved once per query).
pub(crate) trait Fetch: Copy {
    fn fetch(self, positions: impl Vertices, t: u32) -> [Point3<f32>; 3];
    /// Reads triangle `t`'s indices and prefetches its vertices.
    fn corners_ahead(self, positions: impl Vertices, t: u32);
}

impl Fetch for &[[u16; 3]] {
    #[inline]
    fn fetch(self, p: impl Vertices, t: u32) -> [Point3<f32>; 3] {
        // PERF: not `map`, which compiled to an out-of-line `try_map` call per triangle.
        let [a, b, c] = self[t as usize];
        [p.vertex(a.into()), p.vertex(b.into()), p.vertex(c.into())]
    }

    #[inline(always)]
    fn corners_ahead(self, p: impl Vertices, t: u32) {
        let [a, b, c] = self[t as usize];
        p.ahead(a.into());
        p.ahead(b.into());
        p.ahead(c.into());
    }
}

impl Fetch for &[[u32; 3]] {
    #[inline]
    fn fetch(self, p: impl Vertices, t: u32) -> [Point3<f32>; 3] {
        let [a, b, c] = self[t as usize];
        [p.vertex(a), p.vertex(b), p.vertex(c)]
    }

    #[inline(always)]
    fn corners_ahead(self, p: impl Vertices, t: u32) {
        let [a, b, c] = self[t as usize];
        p.ahead(a);
        p.ahead(b);
        p.ahead(c);
    }
}

/// Trees at most this deep (levels, as [`KdTreeStats::depth`]) are ray cast with a stack this long:
/// a path of that many levels has fewer branches. PERF: clearing a stack for the deepest tree any
/// input can give cost 68 instructions a ray (2%); box queries, whose stack entries are 4 bytes,
/// measured no gain.
pub(crate) const SHALLOW: usize = 32;

/// A pending ray segment: node and its parameter interval.
#[derive(Clone, Copy, Default)]
pub(crate) struct Segment {
    pub(crate) node: u32,
    pub(crate) tmin: f32,
    pub(crate) tmax: f32,
}

/// Relative widening of split-plane crossings, against float error in `(split - origin) / dir`.
pub(crate) const WIDEN: f32 = 4.0 * f32::EPSILON;

/// One axis of a ray, prepared once per query.
#[derive(Clone, Copy, Default)]
pub(crate) struct RayAxis {
    /// Where the ray crosses the plane at grid step q, widened by the error bound: at least
    /// `before + q × scale` and at most `after + q × scale` (see `RayAxis::new`).
    before: f32,
    after: f32,
    scale: f32,
    /// The bit offsets (`Node::plane_shift`) of the plane the ray crosses first and second.
    first: u32,
    second: u32,
    /// 1 when the ray runs toward lower coordinates: its near child is the right one, and it
    /// crosses plane 1 first.
    pub(crate) neg: usize,
    /// `inv` is infinite (d is zero or subnormal): the axis is tested by position, not crossing.
    flat: bool,
    /// For a flat axis: a plane at step q is at or above the ray when q >= `q_above`, at or below
    /// it when q <= `q_below` (both always, for a subnormal d: conservative).
    q_above: i32,
    q_below: i32,
}

impl RayAxis {
    #[inline(always)]
    pub(crate) fn new(tree: &KdTree, ray: &Ray, inv: f32, a: usize, slack: f32) -> Self {
        let (o, d) = (ray.origin[a], ray.dir[a]);
        let (origin, step) = (tree.grid.origin[a], tree.grid.step[a]);
        // The crossing of the plane at step q is `(origin + q × step - o) × inv`, computed as
        // `base + q × scale`. Against the exact crossing, both forms err by a few roundings of
        // magnitude `reach × |inv|` plus one of |t|; `eps` allows 8 of the first and 4 of the second.
        let reach = tree.reach[a] + o.abs();
        let eps = reach * WIDEN * inv.abs() * 2.0 + slack;
        let base = (origin - o) * inv;
        // Axes the ray does not cross at a usable rate: `inv` is infinite, and `0 * inf` would be
        // NaN.
        let flat = inv.is_infinite();
        let (q_above, q_below) = match (flat, d != 0.0) {
            (true, false) => (tree.grid.first_at_or_above(a, o), tree.grid.last_at_or_below(a, o)),
            _ => (0, TOP as i32),
        };
        RayAxis {
            before: base - eps,
            after: base + eps,
            scale: step * inv,
            first: Node::plane_shift((d < 0.0) as usize),
            second: Node::plane_shift((d >= 0.0) as usize),
            neg: (d < 0.0) as usize,
            flat,
            q_above,
            q_below,
        }
    }

    /// The crossing of the plane at step `q`, from `before` or `after`.
    #[inline(always)]
    fn crossing(&self, q: u16, base: f32) -> f32 {
        base + q as f32 * self.scale
    }

    /// At a branch on this axis: where the segment leaves the near child (the one the ray meets
    /// first) and where it enters the far one, each clipped to the segment. The near child is
    /// `child + neg`. Left holds points with coordinate <= split 0, right those >= split 1: the
    /// near child ends where the ray crosses its own plane, the far one starts where it crosses
    /// the other's.
    #[inline(always)]
    pub(crate) fn branch(&self, node: Node, seg: &Segment) -> (f32, f32) {
        if !self.flat {
            let hi = self.crossing(node.plane_at(self.first), self.after);
            let lo = self.crossing(node.plane_at(self.second), self.before);
            (upto(hi, seg.tmax), from(lo, seg.tmin))
        } else {
            // Constant coordinate (d = 0): all or nothing, by grid steps. Subnormal d: all (the
            // steps admit every plane).
            let left = node.plane(0) as i32 >= self.q_above;
            let right = node.plane(1) as i32 <= self.q_below;
            (if left { seg.tmax } else { f32::NEG_INFINITY }, if right { seg.tmin } else { f32::INFINITY })
        }
    }

    /// At a slab on this axis: the part of the segment between its bounds (empty: `lo > hi`).
    /// Above the lower bound and below the upper one: entered at one plane's crossing, left at
    /// the other's.
    #[inline(always)]
    pub(crate) fn slab(&self, node: Node, seg: &Segment) -> (f32, f32) {
        if !self.flat {
            let lo = self.crossing(node.plane_at(self.first), self.before);
            let hi = self.crossing(node.plane_at(self.second), self.after);
            (from(lo, seg.tmin), upto(hi, seg.tmax))
        } else if node.plane(0) as i32 <= self.q_below && self.q_above <= node.plane(1) as i32 {
            (seg.tmin, seg.tmax)
        } else {
            (f32::INFINITY, f32::NEG_INFINITY)
        }
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

impl<S: TriangleSource> KdTreeView<'_, S> {
    /// Every triangle whose box overlaps `aabb`: descends the children and slabs whose planes admit
    /// the box, depth first, left child first.
    fn aabb_query<const DEFER: bool>(
        &self,
        aabb: &Aabb,
        fetch: impl Fn(u32) -> [Point3<f32>; 3],
        ahead: impl Fn(u32),
        corners: impl Fn(u32),
        visit: &mut dyn FnMut(u32),
    ) {
        let tree = self.tree;
        if tree.triangles == 0 || !tree.bounds.intersects(aabb) {
            return;
        }
        let (lo, hi) = (aabb.mins, aabb.maxs);
        // The box in grid steps (a plane at or above `lo` has a step of at least `qlo`, one at or
        // below `hi` at most `qhi`), so branches compare integers.
        let (qlo, qhi) = tree.grid.loose_steps(lo.into(), hi.into());
        // Pending right children: at most one per branch on the current path.
        let mut stack = [0u32; MAX_DEPTH + 2];
        let mut top = 0;
        let mut at = 0;
        // Large trees: triangles of leaves reached but not yet tested, in walk order (see
        // `test_deferred`).
        let mut deferred = [0u32; 2 * DEFERRED];
        let mut pending = 0;
        loop {
            let node = tree.nodes[at];
            match node.kind() {
                Kind::Branch(a, c) => {
                    let (l, r) = (node.plane(0) as i32 >= qlo[a], node.plane(1) as i32 <= qhi[a]);
                    // PERF: the right child is written whatever the sides, kept when both are
                    // visited, and the next node is a select: one branch (neither side) in place
                    // of two on the sides, which the box decides and predictors miss.
                    stack[top] = c as u32 + 1;
                    top += (l & r) as usize;
                    if l | r {
                        at = c + !l as usize;
                        continue;
                    }
                }
                Kind::Slab(a, c) => {
                    if node.plane(0) as i32 <= qhi[a] && qlo[a] <= node.plane(1) as i32 {
                        at = c;
                        continue;
                    }
                }
                Kind::Leaf(count) if DEFER => {
                    for &t in &node.triangles()[..count] {
                        ahead(t);
                        deferred[pending] = t;
                        pending += 1;
                    }
                    if pending > deferred.len() - 2 {
                        test_deferred(&deferred[..pending], &fetch, &corners, (&lo, &hi), visit);
                        pending = 0;
                    }
                }
                Kind::Leaf(count) => {
                    for &t in &node.triangles()[..count] {
                        if box_overlaps(&fetch(t), &lo, &hi) {
                            visit(t);
                        }
                    }
                }
            }
            if top == 0 {
                if DEFER {
                    test_deferred(&deferred[..pending], &fetch, &corners, (&lo, &hi), visit);
                }
                return;
            }
            top -= 1;
            at = stack[top] as usize;
        }
    }

    /// [`Self::aabb_query`] with leaf tests deferred, for large trees. PERF: not inlined, so that
    /// the plain walk, inlined in `triangles_in_aabb`, keeps its own register allocation (with
    /// both walks inlined there, chunk box queries took 8% more instructions).
    #[inline(never)]
    fn aabb_query_deferred(&self, aabb: &Aabb, visit: &mut dyn FnMut(u32)) {
        with_fetch!(self, fetch, ahead, corners => self.aabb_query::<true>(aabb, fetch, ahead, corners, visit))
    }

    /// Segment traversal, near child first: each branch clips the current `t` interval against its
    /// two planes, each slab against its range. `any`: stop at the first hit.
    fn ray_query<const STACK: usize>(
        &self,
        ray: &Ray,
        max_t: f32,
        culling: Culling,
        any: bool,
        fetch: impl Fn(u32) -> [Point3<f32>; 3],
        ahead: impl Fn(u32),
    ) -> Option<RayHit> {
        let tree = self.tree;
        let (axes, mut seg) = tree.ray_start(ray, max_t)?;
        let mut stack = [Segment::default(); STACK];
        let big = tree.triangles >= LARGE_TREE;
        let mut top = 0;
        // `tmax` is kept at most the best hit's t (segments starting past it are skipped; ties go
        // to the lowest index, so a segment starting at it is not).
        let mut best: Option<RayHit> = None;
        let mut best_t = f32::INFINITY;
        'walk: loop {
            let node = tree.nodes[seg.node as usize];
            match node.kind() {
                Kind::Branch(a, c) => {
                    let ax = &axes[a];
                    let (near_hi, far_lo) = ax.branch(node, &seg);
                    let (near, far) = (c + ax.neg, c + 1 - ax.neg);
                    if big {
                        leaves_ahead(&tree.nodes, c, &ahead);
                    }
                    // Branches, not the box query's select: on a large tree the speculated next
                    // node's load hides memory latency (a select measured 10% slower).
                    match (seg.tmin <= near_hi, far_lo <= seg.tmax) {
                        (true, true) => {
                            stack[top] = Segment { node: far as u32, tmin: far_lo, tmax: seg.tmax };
                            top += 1;
                            seg = Segment { node: near as u32, tmin: seg.tmin, tmax: near_hi };
                            continue;
                        }
                        (true, false) => {
                            seg = Segment { node: near as u32, tmin: seg.tmin, tmax: near_hi };
                            continue;
                        }
                        (false, true) => {
                            seg = Segment { node: far as u32, tmin: far_lo, tmax: seg.tmax };
                            continue;
                        }
                        (false, false) => {}
                    }
                }
                Kind::Slab(a, c) => {
                    let (lo, hi) = axes[a].slab(node, &seg);
                    if lo <= hi {
                        seg = Segment { node: c as u32, tmin: lo, tmax: hi };
                        continue;
                    }
                }
                Kind::Leaf(count) => {
                    if test_leaf(ray, node, count, max_t, culling, any, &fetch, &mut best) {
                        return best;
                    }
                    best_t = best.map_or(f32::INFINITY, |b| b.t);
                }
            }
            // Next pending segment that can still hold a hit no farther than the best.
            loop {
                if top == 0 {
                    break 'walk;
                }
                top -= 1;
                seg = stack[top];
                if seg.tmin <= best_t {
                    seg.tmax = upto(seg.tmax, best_t);
                    break;
                }
            }
        }
        best
    }
}

/// Tests the `count` triangles of leaf `node` against `ray`, replacing `best` by any closer hit
/// (ties to the lowest triangle index, as the brute force). True when `any` and one was hit: the
/// query can stop.
#[allow(clippy::too_many_arguments)] // PERF: inlined into both ray walks; a struct would be rebuilt per leaf
#[inline(always)]
pub(crate) fn test_leaf(
    ray: &Ray,
    node: Node,
    count: usize,
    max_t: f32,
    culling: Culling,
    any: bool,
    fetch: &impl Fn(u32) -> [Point3<f32>; 3],
    best: &mut Option<RayHit>,
) -> bool {
    // PERF: fetch both triangles before testing either, so their cache misses overlap.
    let ids = node.triangles();
    let tris = [fetch(ids[0]), if count == 2 { fetch(ids[1]) } else { [Point3::origin(); 3] }];
    for (&t, tri) in ids.iter().zip(&tris).take(count) {
        let limit = best.map_or(max_t, |b| b.t);
        if let Some((th, u, v)) = ray_triangle(ray, tri, limit, culling)
            && best.is_none_or(|b| th < b.t || (th == b.t && t < b.triangle))
        {
            *best = Some(RayHit { t: th, triangle: t, u, v });
            if any {
                return true;
            }
        }
    }
    false
}

/// Leaves (of up to 2 triangles) a box query on a large tree holds before testing them.
const DEFERRED: usize = 16;

/// Reports the triangles of `tris` whose boxes overlap `lo..=hi`, in order, after prefetching all
/// their vertices.
/// PERF: a box query's walk does not depend on its triangle tests, so on a large tree (mesh and
/// tree past L2) it prefetches each leaf's triangle indices when it reaches it and tests the
/// leaves in batches: the misses on indices, then on vertices, overlap across leaves instead of
/// costing two dependent misses a leaf in turn. Same triangles, same order. The `kdtree` suite's
/// box queries on its 200k terrain, both walks in one process in shuffled order, four runs of 15
/// rounds: 525–577 ns against 615–689 (−15%). Batches of 8 or 32 leaves timed the same.
/// Prefetching, besides, the children of a right child left pending made it slower.
#[inline(always)]
fn test_deferred(
    tris: &[u32],
    fetch: &impl Fn(u32) -> [Point3<f32>; 3],
    corners: &impl Fn(u32),
    (lo, hi): (&Point3<f32>, &Point3<f32>),
    visit: &mut dyn FnMut(u32),
) {
    for &t in tris {
        corners(t);
    }
    for &t in tris {
        if box_overlaps(&fetch(t), lo, hi) {
            visit(t);
        }
    }
}

/// Whether the box of triangle `v` overlaps the closed box `lo..=hi`. PERF: plain compares, not
/// `f32::min`/`max` (their NaN handling cost five instructions each; vertices are finite, checked
/// at build). `&`, not `&&`: no branch per axis.
#[inline(always)]
fn box_overlaps(v: &[Point3<f32>; 3], lo: &Point3<f32>, hi: &Point3<f32>) -> bool {
    (0..3).fold(true, |ok, a| {
        let tlo = upto(upto(v[0][a], v[1][a]), v[2][a]);
        let thi = from(from(v[0][a], v[1][a]), v[2][a]);
        ok & (tlo <= hi[a]) & (lo[a] <= thi)
    })
}

/// Trees of at least this many triangles are large: their mesh and tree, about 26 bytes a
/// triangle, are mostly past L2, and cache misses outweigh instructions. There rays prefetch
/// leaves' triangles ahead, batched rays run in lanes (`batch.rs`), box queries defer their
/// leaves' tests ([`test_deferred`]) and the build places slabs over smaller subtrees. On
/// chunk-sized meshes, which stay in cache, the same prefetch made box queries 7% slower, the
/// deferral gained nothing and the slabs cost 9–15% of a build, so small trees do none of it.
pub(crate) const LARGE_TREE: u32 = 1 << 15;

/// Prefetches the triangle indices of whichever of the children at `c` and `c + 1` are leaves
/// (children are adjacent, so both words share a line the visit loads next anyway). PERF: a leaf
/// then costs two dependent cache misses (its triangles' indices, then their positions) instead of
/// three on the 200k-triangle terrain, whose mesh and tree (5.3 MB) are past L2: closest-hit rays
/// against parry in `compare kdtree` went from 1.75–1.98× to 2.15–2.39× down and from 1.57–1.98×
/// to 2.03–2.18× oblique.
#[inline(always)]
fn leaves_ahead(nodes: &[Node], c: usize, ahead: &impl Fn(u32)) {
    for w in [nodes[c], nodes[c + 1]] {
        if let Kind::Leaf(count) = w.kind() {
            let ids = w.triangles();
            ahead(ids[0]);
            if count == 2 {
                ahead(ids[1]);
            }
        }
    }
}

/// Runs `$body` with `$fetch` bound to a closure for this mesh's index type, monomorphised per
/// type (PERF: a `&dyn Fn` fetch cost an indirect call per triangle), `$ahead` to one that
/// prefetches a triangle's indices and `$corners` to one that prefetches its vertices.
macro_rules! with_fetch {
    ($view:expr, $fetch:ident, $ahead:ident, $corners:ident => $body:expr) => {{
        match $view.mesh.positions() {
            voxterra_core::Positions::F32(p) => $crate::tree::with_fetch!(@indices $view, p, $fetch, $ahead, $corners => $body),
            voxterra_core::Positions::Quantized(p) => $crate::tree::with_fetch!(@indices $view, p, $fetch, $ahead, $corners => $body),
        }
    }};
    (@indices $view:expr, $p:ident, $fetch:ident, $ahead:ident, $corners:ident => $body:expr) => {{
        match $view.mesh.indices() {
            voxterra_core::TriangleIndices::U16(t) => {
                let $fetch = |i: u32| t.fetch($p, i);
                let $ahead = |i: u32| prefetch_index::prefetch_index(t, i as usize);
                let $corners = |i: u32| t.corners_ahead($p, i);
                $body
            }
            voxterra_core::TriangleIndices::U32(t) => {
                let $fetch = |i: u32| t.fetch($p, i);
                let $ahead = |i: u32| prefetch_index::prefetch_index(t, i as usize);
                let $corners = |i: u32| t.corners_ahead($p, i);
                $body
            }
        }
    }};
}
pub(crate) use with_fetch;

impl<S: TriangleSource> TriangleIndex for KdTreeView<'_, S> {
    fn triangles_in_aabb(&self, aabb: &Aabb, visit: &mut dyn FnMut(u32)) {
        if self.tree.triangles >= LARGE_TREE {
            self.aabb_query_deferred(aabb, visit)
        } else {
            with_fetch!(self, fetch, ahead, corners => self.aabb_query::<false>(aabb, fetch, ahead, corners, visit))
        }
    }

    fn cast_ray(&self, ray: &Ray, max_t: f32, culling: Culling) -> Option<RayHit> {
        self.cast_one(ray, max_t, culling, false)
    }

    fn ray_hits_any(&self, ray: &Ray, max_t: f32, culling: Culling) -> bool {
        self.cast_one(ray, max_t, culling, true).is_some()
    }
}

impl<S: TriangleSource> KdTreeView<'_, S> {
    /// One ray, closest hit or (`any`) the first found, with the stack the tree's depth needs.
    pub(crate) fn cast_one(&self, ray: &Ray, max_t: f32, culling: Culling, any: bool) -> Option<RayHit> {
        if self.tree.depth <= SHALLOW {
            with_fetch!(self, fetch, ahead, _corners => self.ray_query::<SHALLOW>(ray, max_t, culling, any, fetch, ahead))
        } else {
            with_fetch!(self, fetch, ahead, _corners => self.ray_query::<{ MAX_DEPTH + 2 }>(ray, max_t, culling, any, fetch, ahead))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use voxterra_core::TriangleMesh;
    use voxterra_core::nalgebra::Vector3;

    proptest::proptest! {
        /// The shallow stack and the deepest one give the same hits. The deep instantiation serves
        /// trees over [`SHALLOW`] levels, which no other test builds; here it runs on shallow ones.
        #[test]
        fn both_stack_sizes_agree(
            seeds in proptest::collection::vec((0.0f32..20.0, 0.0f32..20.0, 0.0f32..5.0), 3..200),
            ray in (proptest::array::uniform3(-5.0f32..25.0), proptest::array::uniform3(-1.0f32..1.0)),
            any: bool,
        ) {
            let mut positions = Vec::new();
            let mut triangles = Vec::new();
            for (i, &(x, z, y)) in seeds.iter().enumerate() {
                positions.extend([Point3::new(x, y, z), Point3::new(x + 1.0, y, z), Point3::new(x, y + 0.5, z + 1.0)]);
                triangles.push([3 * i as u32, 3 * i as u32 + 1, 3 * i as u32 + 2]);
            }
            let mesh = TriangleMesh { positions, triangles };
            let tree = KdTree::build(&mesh).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            proptest::prop_assume!(tree.depth <= SHALLOW);
            let ray = Ray::new(Point3::from(ray.0), Vector3::from(ray.1));
            let view = tree.with(&mesh);
            let positions = &mesh.positions[..];
            let fetch = |t: u32| mesh.triangles[..].fetch(positions, t);
            let shallow = view.ray_query::<SHALLOW>(&ray, f32::MAX, Culling::None, any, fetch, |_| {});
            let deep = view.ray_query::<{ MAX_DEPTH + 2 }>(&ray, f32::MAX, Culling::None, any, fetch, |_| {});
            proptest::prop_assert_eq!(shallow, deep);
        }
    }

    /// On a large tree, box queries that test their leaves in deferred batches report what the
    /// plain walk does, in the same order: boxes from a single triangle to the whole mesh, so
    /// that batches fill and flush mid-walk.
    #[test]
    fn deferred_box_tests_match_the_plain_walk() {
        let mesh = crate::test_util::grid(130, |x, z| {
            ((x * 7 + z * 13) % 5) as f32 * 0.3 + (x as f32 * 0.1).sin() * 4.0
        });
        assert!(mesh.triangles.len() as u32 >= LARGE_TREE);
        let tree = KdTree::build(&mesh).unwrap();
        let view = tree.with(&mesh);
        let positions = &mesh.positions[..];
        let tris = &mesh.triangles[..];
        let query = |deferred: bool, b: &Aabb| {
            let mut out = Vec::new();
            let fetch = |t: u32| tris.fetch(positions, t);
            let ahead = |t: u32| prefetch_index::prefetch_index(tris, t as usize);
            let corners = |t: u32| tris.corners_ahead(positions, t);
            if deferred {
                view.aabb_query::<true>(b, fetch, ahead, corners, &mut |t| out.push(t));
            } else {
                view.aabb_query::<false>(b, fetch, ahead, corners, &mut |t| out.push(t));
            }
            out
        };
        let mut sizes_seen = Vec::new();
        for (i, size) in [0.2f32, 1.0, 2.5, 6.0, 20.0, 200.0].into_iter().enumerate() {
            for k in 0..20 {
                let c = Point3::new((k * 37 + i * 11) as f32 % 130.0, 1.0, (k * 53 + i * 7) as f32 % 130.0);
                let b = Aabb::new(c - Vector3::repeat(size / 2.0), c + Vector3::repeat(size / 2.0));
                let (deferred, plain) = (query(true, &b), query(false, &b));
                assert_eq!(deferred, plain, "{b:?}");
                sizes_seen.push(plain.len());
            }
        }
        // Empty results, a few triangles, and more than the deferred batch holds.
        assert!(sizes_seen.contains(&0), "{sizes_seen:?}");
        assert!(sizes_seen.iter().any(|&n| (1..=4).contains(&n)), "{sizes_seen:?}");
        assert!(sizes_seen.iter().any(|&n| n > 4 * DEFERRED), "{sizes_seen:?}");
        assert!(sizes_seen.contains(&mesh.triangles.len()), "{sizes_seen:?}");
    }
}
