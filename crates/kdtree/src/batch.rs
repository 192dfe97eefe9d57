//! Batched ray casts: up to [`LANES`] rays walk the tree at once, round robin, one node a turn.
//! Each turn of a ray ends by prefetching what its next turn loads (the next node's word, a leaf's
//! triangle indices, then their vertices), so by the time the ray comes round again the line has
//! arrived: the rays' cache misses overlap instead of queueing one after another.
//!
//! PERF: a ray on the 200k-triangle terrain waits on about one dependent miss a node (tree and
//! mesh are 5.3 MB, past L2), and a ray's misses cannot overlap each other. `kd_batch_probe`, 16
//! rays in flight (8 gave about half the gain, 32 the same as 16), medians of shuffled rounds:
//! - blocks of 10 000 rays, caches cold before each (`SWEEP=64`): down 759 → 409 ns a ray (1.64× →
//!   3.04× parry), oblique hits 1008 → 872 ns (1.74× → 2.01×);
//! - the same without the sweep: down 683 → 398 ns, oblique 1007 → 874 ns;
//! - all 100 000 rays a block, as the compare suite (the mesh then stays in L3): down 481 → 385
//!   ns, oblique 832 → 876 ns (slower: an oblique ray makes about 40 turns whose unpredictable
//!   branches, interleaved across lanes, cost more than the misses they hide there);
//! - fully warm (criterion, 1024 oblique rays over an 80k-triangle grid, repeated): 150 µs one by
//!   one, 257 µs batched.
//!
//! Tried and dropped: the branch case written branch-free (a select and a conditional push, as
//! the box query): 3–6% slower warm; visiting a next node on the line just loaded without
//! yielding: 12% slower warm, no change cold.
//!
//! Trees small enough to stay in cache (chunk meshes) gain nothing: they are cast one by one.

use crate::fetch::Fetch;
use crate::node::upto;
use crate::node::{Kind, Node};
use crate::ray_query::{RayAxis, SHALLOW, Segment, test_leaf};
use crate::tree::{KdTreeView, LARGE_TREE};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Culling, Ray, RayHit, TriangleSource};

/// Rays in flight at once (a lane is about 550 bytes: 16 take 9 KB of the stack).
const LANES: usize = 16;

/// What a lane's next turn does.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Visit `seg.node` (its word was prefetched).
    Visit,
    /// The leaf at `seg.node`: its triangles' indices were prefetched; read them and prefetch
    /// their vertices.
    Corners,
    /// The leaf at `seg.node`: test its triangles (their vertices were prefetched).
    Test,
}

/// One ray in flight: the single-ray walk's locals.
#[derive(Clone, Copy)]
struct Lane {
    /// The ray's index in the batch.
    ray: usize,
    axes: [RayAxis; 3],
    seg: Segment,
    best: Option<RayHit>,
    phase: Phase,
    top: usize,
    stack: [Segment; SHALLOW],
}

impl<S: TriangleSource> KdTreeView<'_, S> {
    /// Casts every ray of `rays`, writing ray `i`'s closest hit, as
    /// [`cast_ray`](voxterra_core::TriangleIndex::cast_ray) gives it, to `hits[i]` (when the slices differ in
    /// length, the longer one's tail is left alone). Bit for bit the results of one call per ray,
    /// and faster where the mesh is not in cache: up to 16 rays walk the tree together, each
    /// prefetching what it loads next while the others work, so their cache misses overlap. On
    /// the suite's 200k-triangle terrain with cold caches, downward rays ran 1.9× as fast as one by
    /// one and oblique ones 1.15×; with the mesh warm in L3, 1.25× and 0.95×. **With the mesh in
    /// L2, batching is slower** (oblique rays 1.7× slower in the criterion bench): use it for
    /// many rays against a large mesh the rest of the frame has pushed out of cache. Small trees
    /// (under 32 768 triangles) are always cast one ray at a time. No heap allocation.
    ///
    /// ```
    /// use voxterra_core::nalgebra::{Point3, Vector3};
    /// use voxterra_core::{Culling, Ray, TriangleMesh};
    /// use voxterra_kdtree::KdTree;
    ///
    /// let mesh = TriangleMesh {
    ///     positions: vec![Point3::new(0.0, 0.0, 0.0), Point3::new(0.0, 0.0, 1.0), Point3::new(1.0, 0.0, 0.0)],
    ///     triangles: vec![[0, 1, 2]],
    /// };
    /// let tree = KdTree::build(&mesh)?;
    /// let rays = [0.2f32, 0.9].map(|x| Ray::new(Point3::new(x, 1.0, 0.2), Vector3::new(0.0, -1.0, 0.0)));
    /// let mut hits = [None; 2];
    /// tree.with(&mesh).cast_rays(&rays, f32::MAX, Culling::None, &mut hits);
    /// assert_eq!(hits[0].map(|h| h.t), Some(1.0));
    /// assert!(hits[1].is_none()); // x + z > 1: outside the triangle
    /// # Ok::<(), voxterra_kdtree::KdTreeError>(())
    /// ```
    pub fn cast_rays(&self, rays: &[Ray], max_t: f32, culling: Culling, hits: &mut [Option<RayHit>]) {
        let rays = &rays[..rays.len().min(hits.len())];
        let lanes = self.tree.triangles >= LARGE_TREE;
        self.batch(rays, max_t, culling, false, lanes, &mut |i, hit| hits[i] = hit);
    }

    /// [`ray_hits_any`](voxterra_core::TriangleIndex::ray_hits_any) for every ray of `rays`, into `hits` (as
    /// [`cast_rays`](Self::cast_rays), whose batching it shares: each ray stops at its first hit).
    pub fn rays_hit_any(&self, rays: &[Ray], max_t: f32, culling: Culling, hits: &mut [bool]) {
        let rays = &rays[..rays.len().min(hits.len())];
        let lanes = self.tree.triangles >= LARGE_TREE;
        self.batch(rays, max_t, culling, true, lanes, &mut |i, hit| hits[i] = hit.is_some());
    }

    /// Casts `rays` (closest hit, or with `any` the first found), calling `emit(i, hit)` once per
    /// ray: in lanes when `lanes` is set and the tree is shallow enough for their stacks, else
    /// one ray at a time.
    pub(crate) fn batch(
        &self,
        rays: &[Ray],
        max_t: f32,
        culling: Culling,
        any: bool,
        lanes: bool,
        emit: &mut dyn FnMut(usize, Option<RayHit>),
    ) {
        if !lanes || self.tree.depth as usize > SHALLOW {
            for (i, ray) in rays.iter().enumerate() {
                emit(i, self.cast_one(ray, max_t, culling, any));
            }
            return;
        }
        crate::fetch::with_fetch!(self, fetch, ahead, corners => self.walk_lanes(rays, max_t, culling, any, emit, fetch, ahead, corners));
    }

    #[allow(clippy::too_many_arguments)] // the batch's arguments, and the mesh's monomorphised accessors
    fn walk_lanes(
        &self,
        rays: &[Ray],
        max_t: f32,
        culling: Culling,
        any: bool,
        emit: &mut dyn FnMut(usize, Option<RayHit>),
        fetch: impl Fn(u32) -> [Point3<f32>; 3],
        ahead: impl Fn(u32),
        corners: impl Fn(u32),
    ) {
        let tree = self.tree;
        let nodes = &tree.nodes[..];
        let blank = Segment::default();
        let mut lanes = [Lane {
            ray: 0,
            axes: [RayAxis::default(); 3],
            seg: blank,
            best: None,
            phase: Phase::Visit,
            top: 0,
            stack: [blank; SHALLOW],
        }; LANES];
        // Starts the next ray that can hit in `lane` (emitting a miss for each that cannot);
        // false when none is left.
        let mut next = 0;
        let mut start = |lane: &mut Lane, emit: &mut dyn FnMut(usize, Option<RayHit>)| -> bool {
            while let Some(ray) = rays.get(next) {
                let i = next;
                next += 1;
                match tree.ray_start(ray, max_t) {
                    Some((axes, seg)) => {
                        *lane = Lane { ray: i, axes, seg, best: None, phase: Phase::Visit, top: 0, ..*lane };
                        return true;
                    }
                    None => emit(i, None),
                }
            }
            false
        };
        let mut live = 0;
        while live < LANES && start(&mut lanes[live], emit) {
            live += 1;
        }
        let mut l = 0;
        while live > 0 {
            let lane = &mut lanes[l];
            let node = nodes[lane.seg.node as usize];
            if turn(lane, node, &rays[lane.ray], max_t, culling, any, &fetch, &ahead, &corners) {
                prefetch_index::prefetch_index(nodes, lane.seg.node as usize);
            } else {
                emit(lane.ray, lane.best);
                if !start(lane, emit) {
                    // Retire the lane: the last live one takes its place.
                    live -= 1;
                    lanes[l] = lanes[live];
                    if l < live {
                        continue;
                    }
                }
            }
            l += 1;
            if l >= live {
                l = 0;
            }
        }
    }
}

/// One turn of `lane` at `node` (the word at `lane.seg.node`): the single-ray walk's visit, cut
/// where it would wait on memory. Returns true while the ray goes on, with `lane.seg.node` the
/// node its next turn loads (the caller prefetches it; a leaf's turns prefetch their own data);
/// false when it is done, with its result in `lane.best`.
#[allow(clippy::too_many_arguments)] // the lane, the ray, and the mesh's monomorphised accessors
#[inline(always)]
fn turn(
    lane: &mut Lane,
    node: Node,
    ray: &Ray,
    max_t: f32,
    culling: Culling,
    any: bool,
    fetch: &impl Fn(u32) -> [Point3<f32>; 3],
    ahead: &impl Fn(u32),
    corners: &impl Fn(u32),
) -> bool {
    let seg = lane.seg;
    match (lane.phase, node.kind()) {
        (Phase::Visit, Kind::Branch(a, c)) => {
            let ax = &lane.axes[a];
            let (near_hi, far_lo) = ax.branch(node, &seg);
            let (near, far) = (c + ax.neg, c + 1 - ax.neg);
            match (seg.tmin <= near_hi, far_lo <= seg.tmax) {
                (true, true) => {
                    lane.stack[lane.top] = Segment { node: far as u32, tmin: far_lo, tmax: seg.tmax };
                    lane.top += 1;
                    lane.seg = Segment { node: near as u32, tmin: seg.tmin, tmax: near_hi };
                    return true;
                }
                (true, false) => {
                    lane.seg = Segment { node: near as u32, tmin: seg.tmin, tmax: near_hi };
                    return true;
                }
                (false, true) => {
                    lane.seg = Segment { node: far as u32, tmin: far_lo, tmax: seg.tmax };
                    return true;
                }
                (false, false) => {}
            }
        }
        (Phase::Visit, Kind::Slab(a, c)) => {
            let (lo, hi) = lane.axes[a].slab(node, &seg);
            if lo <= hi {
                lane.seg = Segment { node: c as u32, tmin: lo, tmax: hi };
                return true;
            }
        }
        (Phase::Visit | Phase::Corners, Kind::Leaf(count)) => {
            // First the triangles' indices, a turn later (once they are in) their vertices.
            let first = lane.phase == Phase::Visit;
            for &t in &node.triangles()[..count] {
                if first { ahead(t) } else { corners(t) }
            }
            lane.phase = if first { Phase::Corners } else { Phase::Test };
            return true;
        }
        (_, Kind::Leaf(count)) => {
            lane.phase = Phase::Visit;
            if test_leaf(ray, node, count, max_t, culling, any, fetch, &mut lane.best) {
                return false;
            }
        }
        // Leaf phases are only set at leaves.
        (_, Kind::Branch(..) | Kind::Slab(..)) => unreachable!("a leaf's phase at a branch or slab"),
    }
    // Next pending segment that can still hold a hit no farther than the best.
    let best_t = lane.best.map_or(f32::INFINITY, |b| b.t);
    while lane.top > 0 {
        lane.top -= 1;
        let seg = lane.stack[lane.top];
        if seg.tmin <= best_t {
            lane.seg = Segment { tmax: upto(seg.tmax, best_t), ..seg };
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KdTree;
    use voxterra_core::nalgebra::Vector3;
    use voxterra_core::{TriangleIndex, TriangleMesh};

    /// A random heightfield-like soup and rays through it, some degenerate.
    fn scene(seeds: &[(f32, f32, f32)]) -> TriangleMesh {
        let mut positions = Vec::new();
        let mut triangles = Vec::new();
        for (i, &(x, z, y)) in seeds.iter().enumerate() {
            positions.extend([
                Point3::new(x, y, z),
                Point3::new(x + 1.0, y, z),
                Point3::new(x, y + 0.5, z + 1.0),
            ]);
            triangles.push([3 * i as u32, 3 * i as u32 + 1, 3 * i as u32 + 2]);
        }
        TriangleMesh { positions, triangles }
    }

    proptest::proptest! {
        /// The lanes give each ray exactly the single-ray walk's result, closest and any hit,
        /// whatever the batch's size against the lanes (fewer, more, rays that cannot hit).
        #[test]
        fn lanes_equal_single_rays(
            seeds in proptest::collection::vec((0.0f32..20.0, 0.0f32..20.0, 0.0f32..5.0), 0..150),
            rays in proptest::collection::vec(
                (proptest::array::uniform3(-5.0f32..25.0), proptest::array::uniform3(-1.0f32..1.0), 0u8..8),
                0..40,
            ),
            max_t in proptest::prop_oneof![proptest::strategy::Just(f32::MAX), 0.0f32..30.0],
            culling in proptest::prop_oneof![proptest::strategy::Just(Culling::None), proptest::strategy::Just(Culling::BackFaces)],
        ) {
            let mesh = scene(&seeds);
            let tree = KdTree::build(&mesh).map_err(|e| proptest::test_runner::TestCaseError::fail(e.to_string()))?;
            let view = tree.with(&mesh);
            let rays: Vec<Ray> = rays
                .iter()
                .map(|&(o, d, kind)| {
                    let d = match kind {
                        0 => [0.0, -1.0, 0.0],
                        1 => [d[0], 0.0, 0.0],
                        2 => [0.0; 3],
                        3 => [f32::NAN, d[1], d[2]],
                        _ => d,
                    };
                    Ray::new(Point3::from(o), Vector3::from(d))
                })
                .collect();
            for any in [false, true] {
                let mut got = vec![Some(RayHit { t: -1.0, triangle: u32::MAX, u: 0.0, v: 0.0 }); rays.len()];
                view.batch(&rays, max_t, culling, any, true, &mut |i, hit| got[i] = hit);
                for (ray, hit) in rays.iter().zip(&got) {
                    let want = if any {
                        view.ray_hits_any(ray, max_t, culling).then_some(())
                    } else {
                        view.cast_ray(ray, max_t, culling).map(|_| ())
                    };
                    proptest::prop_assert_eq!(hit.is_some(), want.is_some(), "any {}: {:?}", any, ray);
                    if !any {
                        proptest::prop_assert_eq!(*hit, view.cast_ray(ray, max_t, culling));
                    }
                }
            }
        }
    }
}
