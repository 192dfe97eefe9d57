//! Closest-hit and any-hit rays: per-axis constants once a ray, then segment traversal near child
//! first, clipping by each branch's planes and each slab's range.

use crate::fetch::{Fetch, with_fetch};
use crate::node::{Kind, LEAF_MAX, Node, TOP, from, upto};
use crate::tree::{KdTree, KdTreeView, LARGE_TREE, MAX_DEPTH};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Culling, Ray, RayHit, TriangleSource, ray_triangle};

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
        // The clip's crossings round by a few ulps of the coordinates times `inv`: far from the
        // origin that is more than a hit exactly at `max_t` leaves between its `t` and the
        // bounds' face through its triangle. The segment may run that much past `max_t`; leaves
        // test `max_t` itself.
        let late = (0..3)
            .filter(|&a| inv[a].is_finite())
            .map(|a| (self.reach(a) + ray.origin[a].abs()) * WIDEN * 2.0 * inv[a].abs())
            .fold(0.0f32, f32::max);
        let (t0, t1) = self.clip().clip_ray_inv(&ray.origin, &inv, max_t + late)?;
        let slack = t1.abs().min(f32::MAX / 2.0) * WIDEN;
        let axis = |a: usize| RayAxis::new(self, ray, inv[a], a, slack);
        Some(([axis(0), axis(1), axis(2)], Segment { node: 0, tmin: t0, tmax: t1 }))
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
        let reach = tree.reach(a) + o.abs();
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

impl<S: TriangleSource> KdTreeView<'_, S> {
    /// Segment traversal, near child first: each branch clips the current `t` interval against its
    /// two planes, each slab against its range. `any`: stop at the first hit.
    pub(crate) fn ray_query<const STACK: usize>(
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

impl<S: TriangleSource> KdTreeView<'_, S> {
    /// One ray, closest hit or (`any`) the first found, with the stack the tree's depth needs.
    pub(crate) fn cast_one(&self, ray: &Ray, max_t: f32, culling: Culling, any: bool) -> Option<RayHit> {
        if self.tree.depth as usize <= SHALLOW {
            with_fetch!(self, fetch, ahead, _corners => self.ray_query::<SHALLOW>(ray, max_t, culling, any, fetch, ahead))
        } else {
            with_fetch!(self, fetch, ahead, _corners => self.ray_query::<{ MAX_DEPTH + 2 }>(ray, max_t, culling, any, fetch, ahead))
        }
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
    // PERF: fetch every triangle before testing any, so their cache misses overlap.
    let ids = node.triangles();
    let mut tris = [[Point3::origin(); 3]; LEAF_MAX];
    for (tri, &t) in tris.iter_mut().zip(&ids).take(count) {
        *tri = fetch(t);
    }
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
            for &t in &w.triangles()[..count] {
                ahead(t);
            }
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
            proptest::prop_assume!(tree.depth as usize <= SHALLOW);
            let ray = Ray::new(Point3::from(ray.0), Vector3::from(ray.1));
            let view = tree.with(&mesh);
            let positions = &mesh.positions[..];
            let fetch = |t: u32| mesh.triangles[..].fetch(positions, t);
            let shallow = view.ray_query::<SHALLOW>(&ray, f32::MAX, Culling::None, any, fetch, |_| {});
            let deep = view.ray_query::<{ MAX_DEPTH + 2 }>(&ray, f32::MAX, Culling::None, any, fetch, |_| {});
            proptest::prop_assert_eq!(shallow, deep);
        }
    }
}
