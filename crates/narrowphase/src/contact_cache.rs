//! What a shape keeps between its contact queries against the same triangles, as parry keeps a
//! pair's workspace: the candidate triangles of its box grown by a slack, their corners and flags,
//! and for each a lower bound on how near the shape came to it. While no point of the shape has
//! moved more than the slack, a query replays the kept candidates instead of searching the index,
//! and skips the triangles whose bound, less the motion, stays beyond the prediction. The answer
//! is the one a fresh query gives, bit for bit: the candidates a fresh query would find are the
//! kept ones whose boxes overlap its box, in the same order, and a skipped triangle is one no
//! routine could have touched.

use crate::closest::{point_triangle, segment_triangle};
use crate::convert::{FromParry, ToParry};
use crate::error::NarrowphaseError;
use crate::part::{Corners, Part, check_query, check_shape, flatten, touchable};
use crate::triangle_set::TriangleRules;
use parry3d::math::Pose;
use parry3d::shape::{Shape, SupportMap, TypedShape};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, TriangleIndex, TriangleSource};

/// A shape's kept contact candidates: see [`ContactWorkspace::collect_kept`](crate::ContactWorkspace::collect_kept).
///
/// A cache belongs to one shape against one unchanging set of triangle sets; the caller empties
/// it ([`ContactCache::clear`]) when the triangles change (a terrain edit). It notices by itself a
/// motion past its slack, another prediction, and another shape of a different kind or bounding
/// sphere (not one of the same kind and sphere: keep a cache per shape).
#[derive(Clone, Debug)]
pub struct ContactCache {
    slack: f32,
    kept: Option<Kept>,
    entries: Vec<Entry>,
}

/// A broken invariant of a [`ContactCache`], found by [`ContactCache::validate`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("contact cache candidate {entry}: {what}")]
pub struct InvalidContactCache {
    /// The candidate at fault, in keeping order.
    pub entry: usize,
    /// Which invariant.
    pub what: &'static str,
}

/// The query the entries were made for.
#[derive(Clone, Debug)]
struct Kept {
    pose: Pose,
    prediction: f32,
    /// How far any point of the shape lies from its origin.
    reach: f32,
    shape: ShapeKey,
    /// Per part, the box its candidates were searched in.
    boxes: Vec<Aabb>,
}

/// Enough of a shape to notice it was swapped for another: its kind and bounding sphere (not its
/// address: a caller may rebuild the same shape every frame).
#[derive(Clone, Copy, Debug, PartialEq)]
struct ShapeKey {
    kind: u8,
    bits: [u32; 4],
}

impl ShapeKey {
    fn of(shape: &dyn Shape) -> Self {
        let s = shape.compute_local_bounding_sphere();
        let v = [s.center.x, s.center.y, s.center.z, s.radius];
        ShapeKey { kind: shape.shape_type() as u8, bits: v.map(f32::to_bits) }
    }
}

/// One kept candidate.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Entry {
    pub(crate) group: u32,
    part: u32,
    pub(crate) triangle: u32,
    pub(crate) corners: Corners,
    /// Its box, tested as the indices test it.
    bounds: Aabb,
    /// Its unit normal; `None` when it touches nothing (degenerate or not finite).
    pub(crate) face: Option<Vector3<f32>>,
    pub(crate) surface: TriangleRules,
    /// True once `bound` and `axes` hold (made at the first visit).
    bounded: bool,
    /// True once the bound is as tight as it gets (GJK's, for shapes that go through it).
    refined: bool,
    /// For a box: the largest gap along its own face normals at the kept pose (less rounding;
    /// `-inf` for other shapes), and the triangle's farthest corner from its center then.
    axes: f32,
    axes_reach: f32,
    /// No part of the shape came nearer the triangle than this at the kept pose (already less
    /// the rounding the routines may differ by).
    bound: f32,
}

impl ContactCache {
    /// An empty cache whose candidates hold while the shape moves less than `slack` (world units;
    /// a shape's expected motion between refreshes, a tenth of its size say). Larger keeps more
    /// candidates a query; smaller refreshes more often. Negative or NaN counts as 0.
    pub fn new(slack: f32) -> Self {
        ContactCache { slack: if slack > 0.0 { slack } else { 0.0 }, kept: None, entries: Vec::new() }
    }

    /// A cache for `shape` with the slack parry's triangle-mesh workspace gives its box: a tenth
    /// of the shape's smallest extent, at most 0.1 (in the shape's units).
    pub fn for_shape(shape: &dyn Shape) -> Self {
        let b = shape.compute_local_aabb();
        let e = b.maxs - b.mins;
        Self::new((e.max_element() / 10.0).min(0.1))
    }

    /// Checks the kept candidates: each of a part the kept query has, its box holding its
    /// triangle and meeting that part's search box, its normal of unit length, and its bound no
    /// further than the prediction plus the slack when it was kept within reach. For tests.
    pub fn validate(&self) -> Result<(), InvalidContactCache> {
        let Some(kept) = &self.kept else {
            return if self.entries.is_empty() {
                Ok(())
            } else {
                Err(InvalidContactCache { entry: 0, what: "candidates without a kept query" })
            };
        };
        for (i, e) in self.entries.iter().enumerate() {
            let bad = |what| Err(InvalidContactCache { entry: i, what });
            let Some(search) = kept.boxes.get(e.part as usize) else {
                return bad("a part the query does not have");
            };
            if e.corners.iter().all(|c| c.iter().all(|v| v.is_finite()))
                && !e.corners.iter().all(|c| e.bounds.contains_point(c))
            {
                return bad("its box does not hold its triangle");
            }
            if !e.bounds.intersects(search) {
                return bad("its box misses its part's search box");
            }
            if e.face.is_some_and(|n| (n.norm() - 1.0).abs() > 1e-4) {
                return bad("its normal is not of unit length");
            }
        }
        Ok(())
    }

    /// The motion the candidates hold for.
    pub fn slack(&self) -> f32 {
        self.slack
    }

    /// Forgets the candidates (the triangles changed).
    pub fn clear(&mut self) {
        self.kept = None;
        self.entries.clear();
    }

    /// How many candidates are kept.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when a query of `shape` at `pose` within `prediction` can replay the kept candidates:
    /// the same shape and prediction, no point of it moved more than the slack, and every part's
    /// box (grown by the prediction) inside the one searched.
    pub fn covers(&self, shape: &dyn Shape, pose: &Pose, prediction: f32) -> bool {
        let mut parts = Vec::new();
        flatten(shape, pose, 0, &mut parts).is_ok()
            && self.covering(shape, pose, prediction, &parts, &mut Vec::new()).is_some()
    }

    /// How the shape moved since the kept pose, when the cache covers the query of `shape` (its
    /// `parts`) at `pose`; fills `boxes` with the parts' query boxes.
    pub(crate) fn covering(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        parts: &[Part<'_>],
        boxes: &mut Vec<Aabb>,
    ) -> Option<Motion> {
        let kept = self.kept.as_ref()?;
        if kept.prediction != prediction || !pose.is_finite() || parts.len() != kept.boxes.len() {
            return None;
        }
        // A turn by angle a moves a point at distance r by 2 r sin(a / 2); |cos(a / 2)| is the
        // quaternions' dot product.
        let cos_half = kept.pose.rotation.dot(pose.rotation).abs().min(1.0);
        // Rounding in the motion itself: a little more.
        let turn = 2.0 * (1.0 - cos_half * cos_half).sqrt() * (1.0 + 1e-5) + 1e-6;
        let moved = ((pose.translation - kept.pose.translation).length() + turn * kept.reach) * (1.0 + 1e-5)
            + 1e-6 * kept.reach;
        if moved.is_nan() || moved > self.slack || kept.shape != ShapeKey::of(shape) {
            return None;
        }
        query_boxes(parts, prediction, boxes);
        boxes.iter().zip(&kept.boxes).all(|(q, b)| b.contains(q)).then_some(Motion { moved, turn })
    }

    /// Starts keeping a new query of `shape` at `pose` within `prediction`: forgets the kept
    /// candidates and returns the box to gather triangle sets in (the shape's box grown by the
    /// prediction and the slack); then [`ContactWorkspace::collect_keeping`] each set.
    ///
    /// [`ContactWorkspace::collect_keeping`]: crate::ContactWorkspace::collect_keeping
    pub fn start(
        &mut self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
    ) -> Result<Aabb, NarrowphaseError> {
        self.clear();
        check_query(pose, prediction)?;
        let mut parts = Vec::new();
        flatten(shape, pose, 0, &mut parts)?;
        let mut boxes = Vec::with_capacity(parts.len());
        for p in &parts {
            check_shape(p.shape)?;
            boxes.push(Aabb::from_parry(&p.shape.compute_aabb(&p.pose)).loosened(prediction + self.slack));
        }
        let all = boxes.iter().skip(1).fold(boxes[0], |a, b| a.merged(b));
        let sphere = shape.compute_local_bounding_sphere();
        let reach = sphere.center.length() + sphere.radius;
        self.kept = Some(Kept { pose: *pose, prediction, reach, shape: ShapeKey::of(shape), boxes });
        Ok(all)
    }

    /// Appends `set`'s candidates for the started query under `group`; returns where they begin.
    pub(crate) fn keep<S: TriangleSource, I: TriangleIndex>(
        &mut self,
        source: &S,
        index: &I,
        surface: impl Fn(u32) -> TriangleRules,
        group: u32,
        candidates: &mut Vec<u32>,
    ) -> Result<usize, NarrowphaseError> {
        let Some(kept) = self.kept.as_ref() else {
            return Err(NarrowphaseError::InvalidParameter {
                what: "contact cache not started",
                value: f32::NAN,
            });
        };
        let first = self.entries.len();
        for (k, b) in kept.boxes.iter().enumerate() {
            candidates.clear();
            index.triangles_in_aabb(b, &mut |t| candidates.push(t));
            candidates.sort_unstable();
            for &t in candidates.iter() {
                let corners = source.triangle(t as usize);
                // Bounded when first visited: most candidates of the grown box never are.
                let entry = Entry {
                    group,
                    part: k as u32,
                    triangle: t,
                    corners,
                    bounds: Aabb::from_points(&corners).unwrap_or(*b),
                    face: touchable(&corners),
                    surface: surface(t),
                    bounded: false,
                    refined: false,
                    axes: f32::NEG_INFINITY,
                    axes_reach: 0.0,
                    bound: f32::NEG_INFINITY,
                };
                self.entries.push(entry);
            }
        }
        Ok(first)
    }

    /// The kept query's pose and prediction, once started.
    pub(crate) fn kept_query(&self) -> Option<(Pose, f32)> {
        self.kept.as_ref().map(|k| (k.pose, k.prediction))
    }

    /// Visits the kept entries from `first` that the query of `parts` (their boxes `boxes`), moved
    /// at most `moved` since they were kept, would find: each entry's part, group, triangle,
    /// corners, face normal and surface, and whether the part may touch it. A triangle the cheap
    /// bounds leave near a part that goes through GJK gets GJK's own bound, once: later replays
    /// then skip it while it stays out of reach.
    pub(crate) fn replay(
        &mut self,
        first: usize,
        parts: &[Part<'_>],
        boxes: &[Aabb],
        prediction: f32,
        motion: Motion,
        mut visit: impl FnMut(&Part<'_>, &Entry, bool) -> Result<(), NarrowphaseError>,
    ) -> Result<(), NarrowphaseError> {
        let Some(kept) = self.kept.as_ref() else { return Ok(()) };
        let moved = motion.moved;
        let far_for = |e: &Entry| {
            // A box's own axes turn with it: their gaps shrink by the turn times the triangle's
            // distance from the box's center, besides the motion.
            (e.bound - moved).max(e.axes - moved - motion.turn * e.axes_reach) > prediction
        };
        // Per part, its bounding sphere now, made when first needed.
        let mut spheres: Vec<Option<(Point3<f32>, f32)>> = vec![None; parts.len()];
        for e in &mut self.entries[first..] {
            // Exactly the candidates the index would give for today's box.
            if !e.bounds.intersects(&boxes[e.part as usize]) {
                continue;
            }
            let part = &parts[e.part as usize];
            if !e.bounded {
                e.bounded = true;
                if let Some(n) = e.face {
                    let sphere = *spheres[e.part as usize].get_or_insert_with(|| {
                        let s = part.shape.compute_bounding_sphere(&part.pose);
                        (Point3::from_parry(s.center), s.radius)
                    });
                    // Bounds now bound the ones at the kept pose, less the motion since.
                    e.bound = lower_bound(part, &e.corners, &n, sphere, kept.reach) - moved;
                    let (axes, reach) = box_axes_gap(part, &e.corners, kept.reach);
                    (e.axes, e.axes_reach) = (axes - moved - motion.turn * reach, reach + moved);
                }
            }
            let mut near = !far_for(e);
            if near && !e.refined {
                e.refined = true;
                if let (Some(n), Some(s)) = (e.face, part.shape.as_support_map())
                    && through_gjk(part)
                {
                    // Far enough now that it stays beyond the prediction for any motion within
                    // the slack from the kept pose: a distance now bounds the one then, less the
                    // motion since.
                    let far = prediction + self.slack + moved;
                    let center = Point3::from(part.iso.translation.vector);
                    let now = less_rounding(
                        gjk_bound(s, &part.pose, &e.corners, &n, far),
                        &e.corners,
                        &center,
                        kept.reach,
                    );
                    e.bound = e.bound.max(now - moved);
                    near = !far_for(e);
                }
            }
            visit(part, e, near)?;
        }
        Ok(())
    }
}

/// How far a shape moved since its candidates were kept.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Motion {
    /// How far any point of it moved, at most.
    pub(crate) moved: f32,
    /// Twice the sine of half the angle it turned by: how far a point at distance 1 from a center
    /// of the turn moved, at most.
    turn: f32,
}

impl Motion {
    /// Not moved: the kept query itself.
    pub(crate) const NONE: Motion = Motion { moved: 0.0, turn: 0.0 };
}

/// Each part's query box: its box grown by the prediction.
pub(crate) fn query_boxes(parts: &[Part<'_>], prediction: f32, boxes: &mut Vec<Aabb>) {
    boxes.clear();
    boxes.extend(parts.iter().map(|p| Aabb::from_parry(&p.shape.compute_aabb(&p.pose)).loosened(prediction)));
}

/// A lower bound on the distance between `part` and triangle `tri` (unit normal `n`), below
/// which every routine may report a contact and beyond which none does; it shrinks by at most a
/// point's motion. For balls and capsules their distance; for boxes the gap to the triangle's
/// plane when the box is wholly on one side (their first separating axis); for the rest, which go
/// through GJK (nothing reported beyond the prediction), the larger of that gap and their
/// bounding sphere's distance (`sphere`: center and radius). `-inf` when nothing is known.
fn lower_bound(
    part: &Part<'_>,
    tri: &Corners,
    n: &Vector3<f32>,
    sphere: (Point3<f32>, f32),
    reach: f32,
) -> f32 {
    let bound = match part.shape.as_typed_shape() {
        TypedShape::Ball(b) => {
            let c = Point3::from(part.iso.translation.vector);
            (c - point_triangle(&c, tri).0).norm() - b.radius
        }
        TypedShape::Capsule(c) => {
            let (a, b) =
                (part.iso * Point3::from_parry(c.segment.a), part.iso * Point3::from_parry(c.segment.b));
            let (s, q, _) = segment_triangle(&a, &b, tri);
            (s - q).norm() - c.radius
        }
        TypedShape::Cuboid(c) => {
            let h = Vector3::from_parry(c.half_extents);
            let r = part.iso.rotation;
            let rb = (0..3).map(|i| h[i] * (r * Vector3::ith(i, 1.0)).dot(n).abs()).sum::<f32>();
            (part.iso.translation.vector - tri[0].coords).dot(n).abs() - rb
        }
        _ => {
            let (c, radius) = sphere;
            let mut bound = (c - point_triangle(&c, tri).0).norm() - radius;
            if let Some(s) = part.shape.as_support_map() {
                let support = |d: Vector3<f32>| {
                    Point3::from_parry(s.support_point(&part.pose, parry3d::math::Vector::new(d.x, d.y, d.z)))
                };
                let front = (support(-n) - tri[0]).dot(n);
                // Behind the plane only when not in front of it.
                let gap = if front > 0.0 { front } else { (tri[0] - support(*n)).dot(n) };
                bound = bound.max(gap);
            }
            bound
        }
    };
    let center = Point3::from(part.iso.translation.vector);
    less_rounding(bound, tri, &center, reach)
}

/// `bound` less what rounding can take off it: the routines compute these gaps again at another
/// pose, with their own rounding (in proportion to the coordinates), and GJK stops within a
/// relative tolerance of a distance; so a triangle at the edge stays on the near side.
fn less_rounding(bound: f32, tri: &Corners, center: &Point3<f32>, reach: f32) -> f32 {
    let scale =
        tri.iter().chain(std::iter::once(center)).map(|p| p.coords.amax()).fold(1.0f32, f32::max) + reach;
    bound - 64.0 * f32::EPSILON * scale - 1e-3 * bound.abs()
}

/// For a box part: the largest gap between it and triangle `tri` along its own face normals
/// (axes the box–triangle routine separates by), less rounding, and the triangle's farthest
/// corner from the box's center. `(-inf, 0)` for other parts.
fn box_axes_gap(part: &Part<'_>, tri: &Corners, reach: f32) -> (f32, f32) {
    let TypedShape::Cuboid(c) = part.shape.as_typed_shape() else { return (f32::NEG_INFINITY, 0.0) };
    let center = Point3::from(part.iso.translation.vector);
    let h = Vector3::from_parry(c.half_extents);
    let gap = (0..3)
        .map(|i| {
            let u = part.iso.rotation * Vector3::ith(i, 1.0);
            let p = tri.map(|v| (v - center).dot(&u));
            let (lo, hi) = (p[0].min(p[1]).min(p[2]), p[0].max(p[1]).max(p[2]));
            (lo - h[i]).max(-h[i] - hi)
        })
        .fold(f32::NEG_INFINITY, f32::max);
    let far = tri.iter().map(|v| (v - center).norm()).fold(0.0f32, f32::max);
    (less_rounding(gap, tri, &center, reach), far * (1.0 + 1e-5))
}

/// Whether a part's contacts go through GJK (which reports nothing beyond the prediction): every
/// support-mapped shape but the ones with routines of their own.
fn through_gjk(part: &Part<'_>) -> bool {
    !matches!(
        part.shape.as_typed_shape(),
        TypedShape::Ball(_) | TypedShape::Capsule(_) | TypedShape::Cuboid(_)
    ) && part.shape.as_support_map().is_some()
}

/// `far` when GJK proves a support-mapped part at `pose` farther than that from triangle `tri`
/// (normal `n`), else `-inf`. Only its proof counts: the distance it converges to bounds the
/// true one from above, not below.
fn gjk_bound(s: &dyn SupportMap, pose: &Pose, tri: &Corners, n: &Vector3<f32>, far: f32) -> f32 {
    use parry3d::query::gjk::{self, CsoPoint, GJKResult, VoronoiSimplex};
    let t = parry3d::shape::Triangle::new(tri[0].to_parry(), tri[1].to_parry(), tri[2].to_parry());
    let pos12 = pose.inverse();
    let mut simplex = VoronoiSimplex::new();
    simplex.reset(CsoPoint::from_shapes(&pos12, s, &t, pos12.rotation * (-*n).to_parry()));
    match gjk::closest_points(&pos12, s, &t, far, false, &mut simplex) {
        GJKResult::NoIntersection(_) => far,
        _ => f32::NEG_INFINITY,
    }
}
