//! What a shape keeps between its contact queries against the same triangles, as parry keeps a
//! pair's workspace: the candidate triangles of its box grown by a slack, their corners and flags,
//! and for each a lower bound on how near the shape came to it. While no point of the shape has
//! moved more than the slack, a query replays the kept candidates instead of searching the index,
//! and skips the triangles whose bound, less the motion, stays beyond the prediction. The answer
//! is the one a fresh query gives, bit for bit: the candidates a fresh query would find are the
//! kept ones whose boxes overlap its box, in the same order, and a skipped triangle is one no
//! routine could have touched.

use crate::closest::{point_triangle, segment_triangle};
use crate::convert::FromParry;
use crate::convex_triangles::{Corners, Part, Surface, check_query, check_shape, flatten, touchable};
use crate::error::NarrowphaseError;
use parry3d::math::Pose;
use parry3d::shape::{Shape, TypedShape};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, TriangleIndex, TriangleSource};

/// A shape's kept contact candidates: see [`ContactWorkspace::collect_kept`](crate::ContactWorkspace::collect_kept).
///
/// A cache belongs to one shape against one unchanging set of triangle sets; the caller empties
/// it ([`ContactCache::clear`]) when the triangles change (a terrain edit). It notices by itself a
/// motion past its slack, another prediction, and another shape of a different kind or size (not
/// one of the same kind and bounds: keep a cache per shape).
#[derive(Clone, Debug)]
pub struct ContactCache {
    slack: f32,
    kept: Option<Kept>,
    entries: Vec<Entry>,
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

/// Enough of a shape to notice it was swapped for another: its kind, local box and bounding
/// sphere (not its address: a caller may rebuild the same shape every frame).
#[derive(Clone, Copy, Debug, PartialEq)]
struct ShapeKey {
    kind: u8,
    bits: [u32; 10],
}

impl ShapeKey {
    fn of(shape: &dyn Shape) -> Self {
        let b = shape.compute_local_aabb();
        let s = shape.compute_local_bounding_sphere();
        let v = [
            b.mins.x, b.mins.y, b.mins.z, b.maxs.x, b.maxs.y, b.maxs.z, s.center.x, s.center.y, s.center.z,
            s.radius,
        ];
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
    /// Its unit normal; `None` when it touches nothing (degenerate or not finite).
    pub(crate) face: Option<Vector3<f32>>,
    pub(crate) surface: Surface,
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

    /// How far any point of the shape moved since the kept pose, when the cache covers the query
    /// of `shape` (its `parts`) at `pose`; fills `boxes` with the parts' query boxes.
    pub(crate) fn covering(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        parts: &[Part<'_>],
        boxes: &mut Vec<Aabb>,
    ) -> Option<f32> {
        let kept = self.kept.as_ref()?;
        if kept.prediction != prediction || !pose.is_finite() || parts.len() != kept.boxes.len() {
            return None;
        }
        // A turn by angle a moves a point at distance r by 2 r sin(a / 2); |cos(a / 2)| is the
        // quaternions' dot product.
        let cos_half = kept.pose.rotation.dot(pose.rotation).abs().min(1.0);
        let turn = 2.0 * kept.reach * (1.0 - cos_half * cos_half).sqrt();
        let moved = (pose.translation - kept.pose.translation).length() + turn;
        // Rounding in the motion itself.
        let moved = moved * (1.0 + 1e-5) + 1e-6 * kept.reach;
        if !(moved <= self.slack) || kept.shape != ShapeKey::of(shape) {
            return None;
        }
        query_boxes(parts, prediction, boxes);
        boxes.iter().zip(&kept.boxes).all(|(q, b)| b.contains(q)).then_some(moved)
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
        shape: &dyn Shape,
        source: &S,
        index: &I,
        surface: impl Fn(u32) -> Surface,
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
        let mut parts = Vec::new();
        flatten(shape, &kept.pose, 0, &mut parts)?;
        for (k, (part, b)) in parts.iter().zip(&kept.boxes).enumerate() {
            let sphere = part.shape.compute_bounding_sphere(&part.pose);
            let sphere = (Point3::from_parry(sphere.center), sphere.radius);
            candidates.clear();
            index.triangles_in_aabb(b, &mut |t| candidates.push(t));
            candidates.sort_unstable();
            for &t in candidates.iter() {
                let corners = source.triangle(t as usize);
                let face = touchable(&corners);
                let bound =
                    face.map_or(f32::NEG_INFINITY, |n| lower_bound(part, &corners, &n, sphere, kept.reach));
                let entry =
                    Entry { group, part: k as u32, triangle: t, corners, face, surface: surface(t), bound };
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
    /// corners, face normal and surface, and whether the part may touch it.
    pub(crate) fn replay(
        &self,
        first: usize,
        parts: &[Part<'_>],
        boxes: &[Aabb],
        prediction: f32,
        moved: f32,
        mut visit: impl FnMut(&Part<'_>, &Entry, bool) -> Result<(), NarrowphaseError>,
    ) -> Result<(), NarrowphaseError> {
        for e in &self.entries[first..] {
            // Exactly the candidates the index would give for today's box.
            if !overlaps(&e.corners, &boxes[e.part as usize]) {
                continue;
            }
            let near = !(e.bound - moved > prediction);
            visit(&parts[e.part as usize], e, near)?;
        }
        Ok(())
    }
}

/// Each part's query box: its box grown by the prediction.
pub(crate) fn query_boxes(parts: &[Part<'_>], prediction: f32, boxes: &mut Vec<Aabb>) {
    boxes.clear();
    boxes.extend(parts.iter().map(|p| Aabb::from_parry(&p.shape.compute_aabb(&p.pose)).loosened(prediction)));
}

/// Whether a triangle's box overlaps `b`, as the indices test it.
fn overlaps(t: &Corners, b: &Aabb) -> bool {
    (0..3).all(|a| {
        let lo = t[0][a].min(t[1][a]).min(t[2][a]);
        let hi = t[0][a].max(t[1][a]).max(t[2][a]);
        lo <= b.maxs[a] && b.mins[a] <= hi
    })
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
    // The routines compute these gaps again at another pose, with their own rounding: a margin
    // in proportion to the coordinates keeps a triangle at the edge on the near side.
    let center = Point3::from(part.iso.translation.vector);
    let scale =
        tri.iter().chain(std::iter::once(&center)).map(|p| p.coords.amax()).fold(1.0f32, f32::max) + reach;
    bound - 64.0 * f32::EPSILON * scale
}
