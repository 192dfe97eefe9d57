//! The tree, its queries, statistics and invariant check.

use crate::build::{self, MAX_DEPTH};
use crate::node::Node;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{
    Aabb, Culling, Ray, RayHit, TriangleIndex, TriangleIndices, TriangleSource, ray_triangle,
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
    /// Nodes (branches and leaves).
    pub nodes: usize,
    /// Leaves.
    pub leaves: usize,
    /// Levels, the root counting as 1.
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
        let leaves = self.nodes.iter().filter(|n| n.is_leaf()).count();
        KdTreeStats {
            triangles: self.triangles as usize,
            nodes: self.nodes.len(),
            leaves,
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
        if self.depth > MAX_DEPTH {
            return Err(format!("depth {} exceeds the query stack bound {MAX_DEPTH}", self.depth));
        }
        let mut seen = vec![false; n];
        // (node, level, bounds the node's triangles must respect on each axis: [lo, hi])
        let mut stack = vec![(0usize, 1usize, [[f32::NEG_INFINITY, f32::INFINITY]; 3])];
        let mut max_level = 0;
        while let Some((i, level, limits)) = stack.pop() {
            max_level = max_level.max(level);
            let node = self.nodes.get(i).ok_or(format!("node {i} out of range"))?;
            if node.is_leaf() {
                let (tris, count) = node.triangles();
                if count > 2 {
                    return Err(format!("leaf {i} holds {count} triangles"));
                }
                for &t in &tris[..count] {
                    let t = t as usize;
                    if t >= n || std::mem::replace(&mut seen[t], true) {
                        return Err(format!("leaf {i}: triangle {t} out of range or in two leaves"));
                    }
                    for v in mesh.triangle(t) {
                        for a in 0..3 {
                            if !(limits[a][0] <= v[a] && v[a] <= limits[a][1]) {
                                return Err(format!(
                                    "triangle {t} at leaf {i} lies outside a split plane on axis {a}"
                                ));
                            }
                            if !(self.bounds.mins[a] <= v[a] && v[a] <= self.bounds.maxs[a]) {
                                return Err(format!("triangle {t} lies outside the tree bounds"));
                            }
                        }
                    }
                }
            } else {
                let (c, a) = (node.child(), node.axis());
                if c + 1 >= self.nodes.len() || c <= i {
                    return Err(format!("branch {i}: children at {c} out of range"));
                }
                let mut left = limits;
                left[a][1] = left[a][1].min(node.split(0));
                let mut right = limits;
                right[a][0] = right[a][0].max(node.split(1));
                stack.push((c, level + 1, left));
                stack.push((c + 1, level + 1, right));
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

/// A tree and its mesh: runs queries. Implements core's [`TriangleIndex`].
#[derive(Clone, Copy, Debug)]
pub struct KdTreeView<'a, S: TriangleSource> {
    tree: &'a KdTree,
    mesh: &'a S,
}

/// Vertex positions of triangle `t`, for a given index type (resolved once per query).
trait Fetch: Copy {
    fn fetch(self, positions: &[Point3<f32>], t: u32) -> [Point3<f32>; 3];
}

impl Fetch for &[[u16; 3]] {
    #[inline]
    fn fetch(self, p: &[Point3<f32>], t: u32) -> [Point3<f32>; 3] {
        self[t as usize].map(|v| p[v as usize])
    }
}

impl Fetch for &[[u32; 3]] {
    #[inline]
    fn fetch(self, p: &[Point3<f32>], t: u32) -> [Point3<f32>; 3] {
        self[t as usize].map(|v| p[v as usize])
    }
}

/// A pending ray segment: node and its parameter interval.
#[derive(Clone, Copy, Default)]
struct Segment {
    node: u32,
    tmin: f32,
    tmax: f32,
}

/// Relative widening of split-plane crossings, against float error in `(split - origin) / dir`.
const WIDEN: f32 = 4.0 * f32::EPSILON;

impl<S: TriangleSource> KdTreeView<'_, S> {
    /// Runs `$body` with `$fetch` bound to a closure for this mesh's index type, monomorphised per
    /// type (PERF: a `&dyn Fn` fetch cost an indirect call per triangle).
    fn aabb_query(&self, aabb: &Aabb, fetch: impl Fn(u32) -> [Point3<f32>; 3], visit: &mut dyn FnMut(u32)) {
        let tree = self.tree;
        if tree.triangles == 0 || !tree.bounds.intersects(aabb) {
            return;
        }
        let mut stack = [0u32; MAX_DEPTH + 2];
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let node = tree.nodes[stack[top] as usize];
            if node.is_leaf() {
                let (tris, count) = node.triangles();
                for &t in &tris[..count] {
                    let v = fetch(t);
                    let overlaps = (0..3).all(|a| {
                        let lo = v[0][a].min(v[1][a]).min(v[2][a]);
                        let hi = v[0][a].max(v[1][a]).max(v[2][a]);
                        lo <= aabb.maxs[a] && aabb.mins[a] <= hi
                    });
                    if overlaps {
                        visit(t);
                    }
                }
                continue;
            }
            let (a, c) = (node.axis(), node.child() as u32);
            if node.split(1) <= aabb.maxs[a] {
                stack[top] = c + 1;
                top += 1;
            }
            if node.split(0) >= aabb.mins[a] {
                stack[top] = c;
                top += 1;
            }
        }
    }

    /// Segment traversal, near child first. `any`: stop at the first hit.
    fn ray_query(
        &self,
        ray: &Ray,
        max_t: f32,
        culling: Culling,
        any: bool,
        fetch: impl Fn(u32) -> [Point3<f32>; 3],
    ) -> Option<RayHit> {
        let tree = self.tree;
        let finite = ray.origin.iter().chain(ray.dir.iter()).all(|v| v.is_finite());
        if tree.triangles == 0
            || !finite
            || ray.dir == voxterra_core::nalgebra::Vector3::zeros()
            || max_t.is_nan()
        {
            return None; // documented: such rays hit nothing, as with `ray_triangle`
        }
        // Per ray, once (the article): inverse direction; the bounds clip reuses it.
        let inv = ray.dir.map(|d| 1.0 / d);
        let lb = tree.bounds.loosened(tree.bounds.extents().norm() * WIDEN + f32::MIN_POSITIVE);
        let (t0, t1) = lb.clip_ray_inv(&ray.origin, &inv, max_t)?;
        // Per axis, a bound on the float error of a plane crossing `(split - origin) * inv` anywhere
        // in the tree, plus slack proportional to t.
        let reach =
            [0, 1, 2].map(|a| tree.bounds.mins[a].abs().max(tree.bounds.maxs[a].abs()) + ray.origin[a].abs());
        let eps =
            [0, 1, 2].map(|a| reach[a] * WIDEN * inv[a].abs() * 2.0 + t1.abs().min(f32::MAX / 2.0) * WIDEN);
        let mut stack = [Segment::default(); MAX_DEPTH + 2];
        stack[0] = Segment { node: 0, tmin: t0, tmax: t1 };
        let mut top = 1;
        let mut best: Option<RayHit> = None;
        while top > 0 {
            top -= 1;
            let seg = stack[top];
            if best.is_some_and(|b| b.t < seg.tmin) {
                continue; // everything in this segment is farther than the best hit
            }
            let node = tree.nodes[seg.node as usize];
            if node.is_leaf() {
                let (tris, count) = node.triangles();
                for &t in &tris[..count] {
                    let limit = best.map_or(max_t, |b| b.t);
                    if let Some((th, u, v)) = ray_triangle(ray, &fetch(t), limit, culling) {
                        // Ties to the lowest triangle index, as the brute force.
                        if best.is_none_or(|b| th < b.t || (th == b.t && t < b.triangle)) {
                            best = Some(RayHit { t: th, triangle: t, u, v });
                            if any {
                                return best;
                            }
                        }
                    }
                }
                continue;
            }
            let (a, c) = (node.axis(), node.child() as u32);
            let (o, d, inv, eps) = (ray.origin[a], ray.dir[a], inv[a], eps[a]);
            let (s0, s1) = (node.split(0), node.split(1));
            // Left holds points with coordinate <= s0, right those >= s1.
            let (left, right) = if d == 0.0 {
                let whole = Some((seg.tmin, seg.tmax));
                (whole.filter(|_| o <= s0), whole.filter(|_| o >= s1))
            } else {
                // Plane crossings, widened by `eps` against float error.
                let (tl, tr) = ((s0 - o) * inv, (s1 - o) * inv);
                if d > 0.0 {
                    // Moving up the axis: left is the part before tl, right the part after tr.
                    let l = (seg.tmin <= tl + eps).then(|| (seg.tmin, seg.tmax.min(tl + eps)));
                    let r = (tr - eps <= seg.tmax).then(|| (seg.tmin.max(tr - eps), seg.tmax));
                    (l, r)
                } else {
                    let l = (tl - eps <= seg.tmax).then(|| (seg.tmin.max(tl - eps), seg.tmax));
                    let r = (seg.tmin <= tr + eps).then(|| (seg.tmin, seg.tmax.min(tr + eps)));
                    (l, r)
                }
            };
            // Push the far child first so the near one is visited first.
            let (near, far) =
                if d >= 0.0 { ((c, left), (c + 1, right)) } else { ((c + 1, right), (c, left)) };
            for (node, span) in [far, near] {
                if let Some((tmin, tmax)) = span {
                    stack[top] = Segment { node, tmin, tmax };
                    top += 1;
                }
            }
        }
        best
    }
}

macro_rules! with_fetch {
    ($view:expr, $fetch:ident => $body:expr) => {{
        let p = $view.mesh.positions();
        match $view.mesh.indices() {
            TriangleIndices::U16(t) => {
                let $fetch = |i: u32| t.fetch(p, i);
                $body
            }
            TriangleIndices::U32(t) => {
                let $fetch = |i: u32| t.fetch(p, i);
                $body
            }
        }
    }};
}

impl<S: TriangleSource> TriangleIndex for KdTreeView<'_, S> {
    fn triangles_in_aabb(&self, aabb: &Aabb, visit: &mut dyn FnMut(u32)) {
        with_fetch!(self, fetch => self.aabb_query(aabb, fetch, visit))
    }

    fn cast_ray(&self, ray: &Ray, max_t: f32, culling: Culling) -> Option<RayHit> {
        with_fetch!(self, fetch => self.ray_query(ray, max_t, culling, false, fetch))
    }

    fn ray_hits_any(&self, ray: &Ray, max_t: f32, culling: Culling) -> bool {
        with_fetch!(self, fetch => self.ray_query(ray, max_t, culling, true, fetch)).is_some()
    }
}
