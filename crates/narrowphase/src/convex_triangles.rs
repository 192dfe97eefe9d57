//! Contacts between a convex shape (or a compound of convex parts) at a pose and a set of
//! triangles: candidates from the set's AABB query, then one routine per triangle — specialized
//! for balls and capsules, SAT with face clipping for cuboids, parry's GJK/EPA for the rest.

use crate::closest::{feature_of, point_triangle, segment_triangle, triangle_normal};
use crate::contact::{ContactPoint, Correction, FeatureId, Manifold, TriangleFeature};
use crate::contact_cache::{ContactCache, Motion, query_boxes};
use crate::convert::{FromParry, ToParry};
use crate::cuboid_triangle::{Routine, cuboid_triangle};
use crate::error::NarrowphaseError;
use crate::internal_contacts::{self, Core, InternalScratch, Note};
use crate::internal_edges::{ALL_ACTIVE, correct};
use crate::manifold::{ReduceScratch, reduce};
use parry3d::math::Pose;
use parry3d::shape::{ConvexPolyhedron, Shape, SupportMap, TypedShape};
use voxterra_core::nalgebra::{Isometry3, Point3, Unit, Vector3};
use voxterra_core::{Aabb, EdgeFlags, TriangleIndex, TriangleSource};

/// A triangle set as the narrowphase reads it: the triangles, and an index that finds those in a
/// box (the kD tree's view, [`voxterra_core::BruteForceTriangles`], or any other).
#[derive(Debug)]
pub struct TriangleSet<'a, S: TriangleSource, I: TriangleIndex> {
    /// The triangles.
    pub source: &'a S,
    /// Finds the triangles whose boxes overlap a box.
    pub index: &'a I,
    /// Per triangle, bit `i` set when edge `i` (corners `i` and `(i + 1) % 3`) is an active,
    /// convex crease (the mesher's [`edge flags`](https://docs.rs/voxterra-mesher)); contacts on
    /// inactive edges take the face's normal. [`EdgeFlags::None`]: every edge counts as active.
    pub edge_flags: EdgeFlags<'a>,
    /// True when the triangles are one-sided surfaces, solid behind their counter-clockwise
    /// front (terrain): a contact is never pushed out through a triangle's back.
    pub one_sided: bool,
}

// By hand: a derive would require `S: Copy` and `I: Copy`, but only references are copied.
impl<S: TriangleSource, I: TriangleIndex> Clone for TriangleSet<'_, S, I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: TriangleSource, I: TriangleIndex> Copy for TriangleSet<'_, S, I> {}

impl<'a, S: TriangleSource, I: TriangleIndex> TriangleSet<'a, S, I> {
    /// The set of `source`'s triangles found through `index`, every edge active.
    pub fn new(source: &'a S, index: &'a I) -> Self {
        TriangleSet { source, index, edge_flags: EdgeFlags::None, one_sided: false }
    }

    /// The same set with per-triangle edge flags (a byte a triangle, or the physics mesh's own
    /// [`EdgeFlags`]), so contacts on flat or concave edges take the face's normal. Flags of the
    /// wrong length are ignored for the triangles they do not cover (those count as all active).
    pub fn with_edge_flags(self, flags: impl Into<EdgeFlags<'a>>) -> Self {
        TriangleSet { edge_flags: flags.into(), ..self }
    }

    /// The same set as one-sided surfaces, solid behind each triangle's counter-clockwise front (a
    /// terrain's surface): a contact whose normal would push the shape out through a triangle's
    /// back is redone along the front normal, so a shape that sank past a surface is pushed back
    /// up through it, never further down.
    pub fn one_sided(self) -> Self {
        TriangleSet { one_sided: true, ..self }
    }

    /// The flags of triangle `t` (all active without flags).
    #[inline]
    pub(crate) fn flags(&self, t: u32) -> u8 {
        self.edge_flags.get(t as usize).unwrap_or(ALL_ACTIVE)
    }

    /// How triangle `t`'s surface behaves.
    #[inline]
    pub(crate) fn surface(&self, t: u32) -> Surface {
        Surface { flags: self.flags(t), one_sided: self.one_sided }
    }
}

/// How one triangle's surface behaves: which of its edges are active creases, and whether it is
/// one-sided (solid behind its front).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Surface {
    /// Bit `i` set when edge `i` is active.
    pub(crate) flags: u8,
    /// Solid behind the counter-clockwise front.
    pub(crate) one_sided: bool,
}

/// Scratch memory for contact queries: reuse one per thread and the queries allocate nothing once
/// it has grown.
#[derive(Debug, Default, Clone)]
pub struct ContactWorkspace {
    candidates: Vec<u32>,
    reduce: ReduceScratch,
    /// A query's points over every set collected, each with its triangle's corners and its group.
    collected: Vec<ContactPoint>,
    corners: Vec<[Point3<f32>; 3]>,
    groups: Vec<u32>,
    /// Every candidate triangle of the query (the neighbors whose normals bound a feature's cone).
    nearby: Vec<[Point3<f32>; 3]>,
    /// Per collected point, what the internal-contact rules need to know of it.
    notes: Vec<Note>,
    /// Per compound part, where it is inside or outside the solid.
    cores: Vec<Core>,
    internal: InternalScratch,
    /// A kept query's part boxes.
    boxes: Vec<Aabb>,
}

impl ContactWorkspace {
    /// An empty workspace.
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts one query over several triangle sets (the chunks around a shape): then
    /// [`ContactWorkspace::collect`] each set, and [`ContactWorkspace::finish`].
    pub fn begin(&mut self) {
        self.collected.clear();
        self.corners.clear();
        self.groups.clear();
        self.nearby.clear();
        self.notes.clear();
        self.cores.clear();
    }

    /// Collects the contact points of `shape` at `pose` with `set` under `group` (the caller's name
    /// for the set, a chunk's index say), as [`contact_points`] finds them.
    pub fn collect<S: TriangleSource, I: TriangleIndex>(
        &mut self,
        shape: &dyn Shape,
        pose: &Pose,
        set: TriangleSet<'_, S, I>,
        prediction: f32,
        group: u32,
    ) -> Result<(), NarrowphaseError> {
        let before = self.collected.len();
        let trace = Trace {
            corners: &mut self.corners,
            nearby: &mut self.nearby,
            notes: &mut self.notes,
            cores: &mut self.cores,
        };
        let r = collect_points(
            shape,
            pose,
            set,
            prediction,
            &mut self.candidates,
            &mut self.collected,
            Some(trace),
        );
        if r.is_err() {
            self.collected.truncate(before);
            self.corners.truncate(before);
            self.notes.truncate(before);
        }
        self.groups.resize(self.collected.len(), group);
        r
    }

    /// Collects `set`'s contact points for the query `cache` started ([`ContactCache::start`]:
    /// the same shape, its pose and prediction) under `group`, as [`ContactWorkspace::collect`]
    /// does, keeping in `cache` the set's triangles near enough to touch while the shape moves
    /// less than the cache's slack.
    pub fn collect_keeping<S: TriangleSource, I: TriangleIndex>(
        &mut self,
        shape: &dyn Shape,
        set: TriangleSet<'_, S, I>,
        group: u32,
        cache: &mut ContactCache,
    ) -> Result<(), NarrowphaseError> {
        let first = cache.keep(set.source, set.index, |t| set.surface(t), group, &mut self.candidates)?;
        let (pose, prediction) = cache.kept_query().ok_or(NarrowphaseError::InvalidParameter {
            what: "contact cache not started",
            value: f32::NAN,
        })?;
        let mut parts = Vec::new();
        flatten(shape, &pose, 0, &mut parts)?;
        query_boxes(&parts, prediction, &mut self.boxes);
        self.replay(&parts, prediction, Motion::NONE, cache, first)
    }

    /// Collects the contact points of `shape` at `pose` within `prediction` from the candidates
    /// `cache` keeps, each under the group it was kept with — the same points, in the same order,
    /// as collecting every set the cache was filled from. False, collecting nothing, when the
    /// cache does not cover the query ([`ContactCache::covers`]): then start it again.
    ///
    /// ```
    /// use voxterra_core::nalgebra::Point3;
    /// use voxterra_core::{BruteForceTriangles, TriangleMesh};
    /// use voxterra_narrowphase::{ContactCache, ContactWorkspace, TriangleSet};
    /// use voxterra_narrowphase::parry3d::math::{Pose, Vector};
    /// use voxterra_narrowphase::parry3d::shape::Ball;
    ///
    /// let ground = TriangleMesh {
    ///     positions: vec![
    ///         Point3::new(-5.0, 0.0, -5.0), Point3::new(5.0, 0.0, -5.0),
    ///         Point3::new(5.0, 0.0, 5.0), Point3::new(-5.0, 0.0, 5.0),
    ///     ],
    ///     triangles: vec![[0, 2, 1], [0, 3, 2]],
    /// };
    /// let index = BruteForceTriangles(&ground);
    /// let ball = Ball::new(0.5);
    /// let (mut ws, mut cache) = (ContactWorkspace::new(), ContactCache::new(0.1));
    /// let mut frame = |pose: &Pose, ws: &mut ContactWorkspace, cache: &mut ContactCache| {
    ///     let mut manifolds = Vec::new();
    ///     ws.begin();
    ///     if !ws.collect_kept(&ball, pose, 0.05, cache)? {
    ///         cache.start(&ball, pose, 0.05)?; // gather the sets in the box it returns
    ///         ws.collect_keeping(&ball, TriangleSet::new(&ground, &index), 0, cache)?;
    ///     }
    ///     ws.finish(|_, m| manifolds.push(*m));
    ///     Ok::<_, voxterra_narrowphase::NarrowphaseError>(manifolds)
    /// };
    /// let first = frame(&Pose::translation(0.3, 0.49, 0.2), &mut ws, &mut cache)?;
    /// let next = frame(&Pose::translation(0.32, 0.49, 0.2), &mut ws, &mut cache)?; // replayed
    /// assert_eq!((first.len(), next.len()), (1, 1));
    /// # Ok::<(), voxterra_narrowphase::NarrowphaseError>(())
    /// ```
    pub fn collect_kept(
        &mut self,
        shape: &dyn Shape,
        pose: &Pose,
        prediction: f32,
        cache: &mut ContactCache,
    ) -> Result<bool, NarrowphaseError> {
        let mut parts = Vec::new();
        flatten(shape, pose, 0, &mut parts)?;
        let Some(motion) = cache.covering(shape, pose, prediction, &parts, &mut self.boxes) else {
            return Ok(false);
        };
        self.replay(&parts, prediction, motion, cache, 0)?;
        Ok(true)
    }

    /// Collects the points of the kept candidates from entry `first` on, for `parts` (their query
    /// boxes in `self.boxes`) moved by `motion` since they were kept.
    fn replay(
        &mut self,
        parts: &[Part<'_>],
        prediction: f32,
        motion: Motion,
        cache: &mut ContactCache,
        first: usize,
    ) -> Result<(), NarrowphaseError> {
        let before = self.collected.len();
        record_cores(&mut self.cores, parts);
        let (collected, corners, nearby, notes, cores, groups) = (
            &mut self.collected,
            &mut self.corners,
            &mut self.nearby,
            &mut self.notes,
            &mut self.cores,
            &mut self.groups,
        );
        let r = cache.replay(first, parts, &self.boxes, prediction, motion, |part, e, near| {
            let Some(face) = e.face else { return Ok(()) };
            if near {
                let mut trace = Trace {
                    corners: &mut *corners,
                    nearby: &mut *nearby,
                    notes: &mut *notes,
                    cores: &mut *cores,
                };
                let trace = Some(&mut trace);
                triangle_points(part, e.triangle, &e.corners, face, e.surface, prediction, collected, trace)?;
            } else {
                // Too far to touch, yet a neighbor bounding the others' normal cones.
                nearby.push(e.corners);
            }
            groups.resize(collected.len(), e.group);
            Ok(())
        });
        if r.is_err() {
            self.collected.truncate(before);
            self.corners.truncate(before);
            self.notes.truncate(before);
            self.groups.truncate(before);
        }
        r
    }

    /// Ends the query: drops the internal contacts among everything collected, across sets (the
    /// crate page says what the rules promise), then reduces each group's points to
    /// manifolds of at most four points per normal, handed to `emit` group by group in the order
    /// collected.
    pub fn finish(&mut self, mut emit: impl FnMut(u32, &Manifold)) {
        let keep = internal_contacts::keep(
            &mut self.collected,
            &self.corners,
            &self.nearby,
            &self.notes,
            &self.cores,
            &mut self.internal,
        );
        let mut n = 0;
        for (i, &k) in keep.iter().enumerate() {
            if k {
                (self.collected[n], self.groups[n]) = (self.collected[i], self.groups[i]);
                n += 1;
            }
        }
        self.collected.truncate(n);
        self.groups.truncate(n);
        let mut manifolds = Vec::new();
        let mut start = 0;
        while start < n {
            let group = self.groups[start];
            let end = start + self.groups[start..].iter().take_while(|&&g| g == group).count();
            manifolds.clear();
            reduce(&self.collected[start..end], &mut self.reduce, &mut manifolds);
            for m in &manifolds {
                emit(group, m);
            }
            start = end;
        }
    }

    /// The points the last [`ContactWorkspace::finish`] reduced (the internal contacts dropped),
    /// each with its group, in the order collected: what a caller keeping contacts between steps
    /// moves with the shape and reduces again ([`reduce`](crate::manifold::reduce)).
    pub fn reduced_points(&self) -> impl Iterator<Item = (u32, &ContactPoint)> {
        self.groups.iter().copied().zip(&self.collected)
    }
}

/// A triangle's three corners.
pub(crate) type Corners = [Point3<f32>; 3];

/// What a query records beside its points for [`internal_contacts::keep`]: per point its
/// triangle's corners and a [`Note`], every candidate triangle, and per compound part its core.
pub(crate) struct Trace<'a> {
    corners: &'a mut Vec<Corners>,
    nearby: &'a mut Vec<Corners>,
    notes: &'a mut Vec<Note>,
    cores: &'a mut Vec<Core>,
}

/// Records the parts' cores (the same for every set of one query).
fn record_cores(cores: &mut Vec<Core>, parts: &[Part<'_>]) {
    for part in parts {
        let i = part.index as usize;
        if cores.len() <= i {
            cores.resize(i + 1, Core::Point(Point3::origin()));
        }
        cores[i] = part.core();
    }
}

/// Below this distance between a capsule's segment and a triangle the closest-point routine has
/// no reliable normal: the segment touches or crosses the triangle, and GJK/EPA takes over.
const SEGMENT_TOUCH: f32 = 1e-4;

/// Every contact point between `shape` at `pose` and the triangles of `set` within `prediction`
/// (world units, ≥ 0), appended to `out` in triangle order: at most one a triangle, except
/// cuboids, which give up to 8 (their face clipped against the triangle).
pub fn contact_points<S: TriangleSource, I: TriangleIndex>(
    shape: &dyn Shape,
    pose: &Pose,
    set: TriangleSet<'_, S, I>,
    prediction: f32,
    ws: &mut ContactWorkspace,
    out: &mut Vec<ContactPoint>,
) -> Result<(), NarrowphaseError> {
    collect_points(shape, pose, set, prediction, &mut ws.candidates, out, None)
}

/// [`contact_points`], recording when given each point's triangle corners and every candidate
/// triangle.
fn collect_points<S: TriangleSource, I: TriangleIndex>(
    shape: &dyn Shape,
    pose: &Pose,
    set: TriangleSet<'_, S, I>,
    prediction: f32,
    candidates: &mut Vec<u32>,
    out: &mut Vec<ContactPoint>,
    mut trace: Option<Trace<'_>>,
) -> Result<(), NarrowphaseError> {
    check_query(pose, prediction)?;
    let mut parts = Vec::new();
    flatten(shape, pose, 0, &mut parts)?;
    if let Some(t) = trace.as_mut() {
        record_cores(t.cores, &parts);
    }
    for part in parts {
        check_shape(part.shape)?;
        let query = Aabb::from_parry(&part.shape.compute_aabb(&part.pose)).loosened(prediction);
        candidates.clear();
        set.index.triangles_in_aabb(&query, &mut |t| candidates.push(t));
        // Index order differs between indices; triangle order makes results comparable.
        candidates.sort_unstable();
        for &t in candidates.iter() {
            let tri = set.source.triangle(t as usize);
            let Some(face) = touchable(&tri) else { continue };
            triangle_points(&part, t, &tri, face, set.surface(t), prediction, out, trace.as_mut())?;
        }
    }
    Ok(())
}

/// The contact points of one convex part with triangle `t` (corners `tri`, unit normal `face`),
/// corrected for one-sided surfaces and inactive edges, appended to `out`; recorded in `trace` as
/// [`collect_points`] records them.
#[allow(clippy::too_many_arguments)] // one triangle's whole query, passed on from two callers
fn triangle_points(
    part: &Part<'_>,
    t: u32,
    tri: &Corners,
    face: Vector3<f32>,
    surface: Surface,
    prediction: f32,
    out: &mut Vec<ContactPoint>,
    trace: Option<&mut Trace<'_>>,
) -> Result<(), NarrowphaseError> {
    let mut trace = trace;
    if let Some(t) = trace.as_mut() {
        t.nearby.push(*tri);
    }
    let id = FeatureId { triangle: t, feature: TriangleFeature::Face, part: part.index, sub: 0 };
    let flags = surface.flags;
    let first = out.len();
    let routine = shape_triangle(part, tri, prediction, id, surface, out)?;
    // One pass over this triangle's points, order kept: one-sided sets redo a point pushing
    // through the back along the front normal; points on inactive edges are redone along the face
    // normal; either drops the points the neighbors' faces cover.
    let mut keep = first;
    for i in first..out.len() {
        let found = out[i];
        let mut p = Some(found);
        if surface.one_sided {
            p = p.and_then(|p| front_side(p, part, tri, &face, prediction));
        }
        // A point pushed out through the front already has the face's normal.
        if flags != ALL_ACTIVE {
            p = p.and_then(|p| {
                if p.correction == Correction::Sunk {
                    Some(p)
                } else {
                    correct(p, part, tri, &face, flags, prediction)
                }
            });
        }
        if let Some(p) = p {
            out[keep] = p;
            keep += 1;
            if let Some(t) = trace.as_mut() {
                // A box's routine pushes its points out itself: as found, at its two-sided distance.
                let found = match routine.two_sided {
                    Some(d) if found.correction == Correction::Sunk => ContactPoint { dist: d, ..found },
                    _ => found,
                };
                t.notes.push(note(&p, &found, part, tri, &face, surface.one_sided));
            }
        }
    }
    out.truncate(keep);
    if let Some(t) = trace {
        if let Some(h) = routine.hidden {
            out.push(h);
            t.notes.push(Note::Hidden);
        }
        t.corners.resize(out.len(), *tri);
    }
    Ok(())
}

/// What [`internal_contacts::keep`] needs to know of `p` (made from `found`, the point as the
/// routine found it) beyond the point itself.
fn note(
    p: &ContactPoint,
    found: &ContactPoint,
    part: &Part<'_>,
    tri: &Corners,
    face: &Vector3<f32>,
    one_sided: bool,
) -> Note {
    match p.correction {
        // Pushed out through the front: from beside the triangle (not from over it, the lowest
        // point of the shape on a normal line through it), and what stands in for it should the
        // shape prove to be in the open with nothing else holding it: the point as found, turned
        // to the front normal, its distance kept.
        Correction::Sunk => Note::Sunk {
            beside: !deepest_under(part, tri, face, &p.on_shape).2,
            fallback: ContactPoint {
                on_shape: found.on_triangle + p.normal.into_inner() * found.dist,
                on_triangle: found.on_triangle,
                normal: p.normal,
                dist: found.dist,
                id: found.id,
                correction: Correction::FaceNormal,
            },
        },
        // A penetrating edge or vertex contact whose normal is not the face's may leave its
        // feature's normal cone (EPA's shortest way out of one triangle, sideways past its edge):
        // what it becomes along the face's normal, should no neighbor hold the shape.
        Correction::None
            if p.id.feature != TriangleFeature::Face
                && p.dist < 0.0
                && p.normal.dot(face).abs() < internal_contacts::FACE_COS =>
        {
            // The face's normal on the side the shape is on (its front, on a one-sided surface),
            // the distance kept. PERF: no support query for a point that rarely stands in.
            let toward = if one_sided || (part.center() - tri[0]).dot(face) >= 0.0 { *face } else { -*face };
            Note::Sideways(ContactPoint {
                on_shape: p.on_triangle + toward * p.dist,
                normal: Unit::new_unchecked(toward),
                correction: Correction::FaceNormal,
                ..*p
            })
        }
        _ => Note::None,
    }
}

/// A triangle's unit normal when it can touch anything: finite and not degenerate.
pub(crate) fn touchable(tri: &Corners) -> Option<Vector3<f32>> {
    if !tri.iter().all(|p| p.iter().all(|v| v.is_finite())) {
        return None;
    }
    triangle_normal(tri)
}

/// The contacts of `shape` at `pose` with the triangles of `set`, reduced to manifolds of at most
/// four points, one per normal direction (within 5°), appended to `out`.
///
/// ```
/// use voxterra_core::nalgebra::Point3;
/// use voxterra_core::{BruteForceTriangles, TriangleMesh};
/// use voxterra_narrowphase::{contacts, ContactWorkspace, TriangleSet};
/// use voxterra_narrowphase::parry3d::math::{Pose, Vector};
/// use voxterra_narrowphase::parry3d::shape::Cuboid;
///
/// // Two triangles of flat ground at y = 0, and a 1×1×1 box resting 1 cm into it.
/// let ground = TriangleMesh {
///     positions: vec![
///         Point3::new(-5.0, 0.0, -5.0), Point3::new(5.0, 0.0, -5.0),
///         Point3::new(5.0, 0.0, 5.0), Point3::new(-5.0, 0.0, 5.0),
///     ],
///     triangles: vec![[0, 2, 1], [0, 3, 2]],
/// };
/// let index = BruteForceTriangles(&ground);
/// let cube = Cuboid::new(Vector::splat(0.5));
/// let pose = Pose::translation(0.3, 0.49, 0.2);
/// let mut manifolds = Vec::new();
/// contacts(&cube, &pose, TriangleSet::new(&ground, &index), 0.05, &mut ContactWorkspace::new(), &mut manifolds)?;
/// assert_eq!(manifolds.len(), 1);
/// assert_eq!(manifolds[0].points().len(), 4); // the four bottom corners
/// assert!(manifolds[0].normal.y > 0.999);
/// # Ok::<(), voxterra_narrowphase::NarrowphaseError>(())
/// ```
pub fn contacts<S: TriangleSource, I: TriangleIndex>(
    shape: &dyn Shape,
    pose: &Pose,
    set: TriangleSet<'_, S, I>,
    prediction: f32,
    ws: &mut ContactWorkspace,
    out: &mut Vec<Manifold>,
) -> Result<(), NarrowphaseError> {
    ws.begin();
    ws.collect(shape, pose, set, prediction, 0)?;
    ws.finish(|_, m| out.push(*m));
    Ok(())
}

pub(crate) fn check_query(pose: &Pose, prediction: f32) -> Result<(), NarrowphaseError> {
    if !pose.is_finite() {
        return Err(NarrowphaseError::NonFinitePose);
    }
    if !(prediction.is_finite() && prediction >= 0.0) {
        return Err(NarrowphaseError::InvalidParameter { what: "prediction distance", value: prediction });
    }
    Ok(())
}

/// A shape with a finite bounding box that has extent on some axis.
pub(crate) fn check_shape(shape: &dyn Shape) -> Result<(), NarrowphaseError> {
    let local = shape.compute_local_aabb();
    let extent = local.maxs - local.mins;
    if !extent.is_finite() || extent.cmple(parry3d::math::Vector::ZERO).all() {
        return Err(NarrowphaseError::DegenerateShape);
    }
    Ok(())
}

/// One convex part of a query's shape: the shape itself, or one part of a compound.
pub(crate) struct Part<'s> {
    /// The compound part's index (0 for a plain shape).
    pub(crate) index: u32,
    /// Its world pose, for parry's routines.
    pub(crate) pose: Pose,
    /// The same pose for voxterra's own routines.
    pub(crate) iso: Isometry3<f32>,
    pub(crate) shape: &'s dyn Shape,
}

impl Part<'_> {
    /// The part's support point (its farthest point) along `dir`, when it has a support map.
    #[inline]
    pub(crate) fn support(&self, dir: &Vector3<f32>) -> Option<Point3<f32>> {
        self.shape.as_support_map().map(|s| support_point(s, &self.pose, dir))
    }

    /// Its center: that of its bounding sphere (a ball's, a box's or a capsule's own center).
    pub(crate) fn center(&self) -> Point3<f32> {
        Point3::from_parry(self.shape.compute_bounding_sphere(&self.pose).center)
    }

    /// What decides whether it is inside the solid.
    pub(crate) fn core(&self) -> Core {
        let iso = &self.iso;
        match self.shape.as_typed_shape() {
            TypedShape::Ball(_) => {
                Core::Segment(Point3::from(iso.translation.vector), Point3::from(iso.translation.vector))
            }
            TypedShape::Capsule(c) => {
                Core::Segment(iso * Point3::from_parry(c.segment.a), iso * Point3::from_parry(c.segment.b))
            }
            _ => Core::Point(self.center()),
        }
    }
}

/// `support`'s farthest point along `dir` at `pose`.
#[inline]
fn support_point(support: &dyn SupportMap, pose: &Pose, dir: &Vector3<f32>) -> Point3<f32> {
    Point3::from_parry(support.support_point(pose, dir.to_parry()))
}

/// Whether the narrowphase collides `shape`: convex, or a compound of convex parts, with a finite
/// extent. Every query refuses other shapes with this error; a caller can check once up front
/// (before the shape meets any triangle, when a query finds no candidates and returns nothing).
pub fn check_supported(shape: &dyn Shape) -> Result<(), NarrowphaseError> {
    if let Some(c) = shape.as_compound() {
        if c.shapes().iter().any(|(_, s)| s.as_compound().is_some() || !s.is_convex()) {
            return Err(NarrowphaseError::UnsupportedShape("a compound part that is not convex"));
        }
    } else if !shape.is_convex() {
        return Err(NarrowphaseError::UnsupportedShape(shape_name(shape)));
    }
    check_shape(shape)
}

/// The convex parts of `shape` with their world poses and compound part indices.
pub(crate) fn flatten<'s>(
    shape: &'s dyn Shape,
    pose: &Pose,
    part: u32,
    out: &mut Vec<Part<'s>>,
) -> Result<(), NarrowphaseError> {
    let mut push = |index: u32, pose: Pose, shape: &'s dyn Shape| {
        out.push(Part { index, pose, iso: Isometry3::from_parry(&pose), shape });
    };
    if let Some(c) = shape.as_compound() {
        for (i, (p, s)) in c.shapes().iter().enumerate() {
            let s: &dyn Shape = &**s;
            if s.as_compound().is_some() || !s.is_convex() {
                return Err(NarrowphaseError::UnsupportedShape("a compound part that is not convex"));
            }
            push(i as u32, *pose * *p, s);
        }
        return Ok(());
    }
    if !shape.is_convex() {
        return Err(NarrowphaseError::UnsupportedShape(shape_name(shape)));
    }
    push(part, *pose, shape);
    Ok(())
}

fn shape_name(shape: &dyn Shape) -> &'static str {
    match shape.as_typed_shape() {
        TypedShape::TriMesh(_) => "a triangle mesh",
        TypedShape::HeightField(_) => "a height field",
        TypedShape::Voxels(_) => "voxels",
        TypedShape::Polyline(_) => "a polyline",
        TypedShape::HalfSpace(_) => "a half-space",
        _ => "a non-convex shape",
    }
}

/// Contacts of one convex shape with one triangle, appended to `out`, and what stands beside them
/// (a box's routine pushes its points out through a one-sided front itself, and may hand back a
/// point that stands in only if nothing else holds the box).
pub(crate) fn shape_triangle(
    part: &Part<'_>,
    tri: &[Point3<f32>; 3],
    prediction: f32,
    id: FeatureId,
    surface: Surface,
    out: &mut Vec<ContactPoint>,
) -> Result<Routine, NarrowphaseError> {
    let iso = &part.iso;
    match part.shape.as_typed_shape() {
        TypedShape::Ball(b) => {
            let c = Point3::from(iso.translation.vector);
            out.extend(sphere_triangle(&c, b.radius, tri, prediction, id));
            Ok(Routine::default())
        }
        TypedShape::Capsule(c) => {
            let (a, b) = (iso * Point3::from_parry(c.segment.a), iso * Point3::from_parry(c.segment.b));
            // PERF: a segment whole on one side of the plane, farther than radius and prediction.
            if let Some(n) = triangle_normal(tri) {
                let (da, db) = ((a - tri[0]).dot(&n), (b - tri[0]).dot(&n));
                let reach = c.radius + prediction;
                if da.min(db) > reach || da.max(db) < -reach {
                    return Ok(Routine::default());
                }
            }
            let (on_seg, on_tri, feature) = segment_triangle(&a, &b, tri);
            if (on_seg - on_tri).norm() > SEGMENT_TOUCH {
                out.extend(sphere_triangle(&on_seg, c.radius, tri, prediction, FeatureId { feature, ..id }));
                Ok(Routine::default())
            } else {
                generic(part, tri, prediction, id, out).map(|()| Routine::default())
            }
        }
        TypedShape::Cuboid(c) => {
            Ok(cuboid_triangle(&Vector3::from_parry(c.half_extents), iso, tri, prediction, id, surface, out))
        }
        _ => generic(part, tri, prediction, id, out).map(|()| Routine::default()),
    }
}

/// A sphere of radius `r` at `c` against a triangle: the closest point and the feature it is on.
fn sphere_triangle(
    c: &Point3<f32>,
    r: f32,
    tri: &[Point3<f32>; 3],
    prediction: f32,
    id: FeatureId,
) -> Option<ContactPoint> {
    let (on_tri, feature) = point_triangle(c, tri);
    let v = c - on_tri;
    let d = v.norm();
    if d - r > prediction {
        return None;
    }
    let normal = if d > f32::EPSILON {
        Unit::new_unchecked(v / d)
    } else {
        Unit::new_unchecked(triangle_normal(tri).unwrap_or_else(Vector3::y))
    };
    Some(ContactPoint {
        on_shape: c - normal.into_inner() * r,
        on_triangle: on_tri,
        normal,
        dist: d - r,
        id: FeatureId { feature, ..id },
        correction: Correction::None,
    })
}

/// parry's contact (GJK/EPA or its own specialized pair), with the triangle feature recovered
/// from the contact point.
fn generic(
    part: &Part<'_>,
    tri: &[Point3<f32>; 3],
    prediction: f32,
    id: FeatureId,
    out: &mut Vec<ContactPoint>,
) -> Result<(), NarrowphaseError> {
    // The triangle's plane as a separating axis first: a shape wholly in front of it beyond the
    // prediction touches nothing. PERF: one support query instead of GJK for most candidates
    // (the box query returns the triangles around a body, not only those it touches).
    if let Some(n) = triangle_normal(tri)
        && let Some(deepest) = part.support(&-n)
        && (deepest - tri[0]).dot(&n) > prediction
    {
        return Ok(());
    }
    let t = parry3d::shape::Triangle::new(tri[0].to_parry(), tri[1].to_parry(), tri[2].to_parry());
    let c = match part.shape.as_shape::<ConvexPolyhedron>() {
        Some(hull) => hull_triangle(hull, &part.pose, &t, prediction),
        None => parry3d::query::contact(&part.pose, part.shape, &Pose::IDENTITY, &t, prediction).map_err(
            |_| NarrowphaseError::UnsupportedShape("a shape parry cannot collide with a triangle"),
        )?,
    };
    // GJK may stop on a distance a hair past the prediction: not a contact.
    if let Some(c) = c
        && c.dist <= prediction
        && c.normal2.is_finite()
    {
        let on_triangle = Point3::from_parry(c.point2);
        out.push(ContactPoint {
            on_shape: Point3::from_parry(c.point1),
            on_triangle,
            normal: Unit::from_parry(c.normal2),
            dist: c.dist,
            id: FeatureId { feature: feature_of(&on_triangle, tri), ..id },
            correction: Correction::None,
        });
    }
    Ok(())
}

thread_local! {
    /// EPA's buffers, kept between queries (parry's `contact` makes new ones every time).
    static EPA: std::cell::RefCell<parry3d::query::epa::EPA> = std::cell::RefCell::new(parry3d::query::epa::EPA::new());
}

/// parry's GJK (then EPA when they overlap) between a convex hull at `pose` and a triangle, as
/// parry's `contact` runs them (from the direction between the shapes' origins) but with EPA's
/// buffers kept between queries. Starting from the triangle's normal instead converged faster
/// (rocks 10%) but left a cut-loose arch resting on flat ground without ever sleeping.
fn hull_triangle(
    hull: &ConvexPolyhedron,
    pose: &Pose,
    t: &parry3d::shape::Triangle,
    prediction: f32,
) -> Option<parry3d::query::Contact> {
    use parry3d::query::gjk::{self, CsoPoint, GJKResult, VoronoiSimplex};
    // The triangle in the hull's frame.
    let pos12 = pose.inverse();
    let dir = pos12.translation.try_normalize().unwrap_or(parry3d::math::Vector::X);
    let mut simplex = VoronoiSimplex::new();
    simplex.reset(CsoPoint::from_shapes(&pos12, hull, t, dir));
    let result = match gjk::closest_points(&pos12, hull, t, prediction, true, &mut simplex) {
        GJKResult::Intersection => EPA
            .with_borrow_mut(|epa| epa.closest_points(&pos12, hull, t, &simplex))
            .map(|(p1, p2, n1)| GJKResult::ClosestPoints(p1, p2, n1)),
        other => Some(other),
    };
    match result? {
        GJKResult::ClosestPoints(p1, p2_1, n1) => {
            let dist = (p2_1 - p1).dot(n1);
            let (p2, n2) = (pos12.inverse_transform_point(p2_1), pos12.rotation.inverse() * -n1);
            // In the world, as parry's `contact` answers.
            Some(parry3d::query::Contact::new(*pose * p1, p2, pose.rotation * n1, n2, dist))
        }
        _ => None,
    }
}

/// The part's deepest point toward the back of a triangle (`front` its unit normal), its distance
/// from the triangle's plane along `front`, and whether it lies over the triangle (its foot inside,
/// within rounding). Without a support map, `fallback` (a point of the shape) stands for it.
fn deepest_under(
    part: &Part<'_>,
    tri: &[Point3<f32>; 3],
    front: &Vector3<f32>,
    fallback: &Point3<f32>,
) -> (Point3<f32>, f32, bool) {
    let deepest = part.support(&-front).unwrap_or(*fallback);
    let rel = deepest - tri[0];
    let dist = rel.dot(front);
    // Relative to a corner: far from the origin, absolute coordinates round by more than the
    // tolerance.
    let foot = Point3::from(rel - front * dist);
    let local = [Point3::origin(), Point3::from(tri[1] - tri[0]), Point3::from(tri[2] - tri[0])];
    let scale = local[1].coords.norm().max(local[2].coords.norm());
    (deepest, dist, (point_triangle(&foot, &local).0 - foot).norm() <= 1e-4 * scale.max(1.0))
}

/// For one-sided triangles: a contact pushing the shape out through the triangle's back is redone
/// along the front normal, from the shape's deepest point over the triangle: its support point
/// along the normal when that lies over the triangle, else the shape's lowest point on the normal
/// line through the triangle point nearest the shape's center (a shape over only part of a small
/// triangle: a hill raised through a body). `None` when the shape is not over the triangle or lies
/// beyond the prediction distance.
fn front_side(
    p: ContactPoint,
    part: &Part<'_>,
    tri: &[Point3<f32>; 3],
    front: &Vector3<f32>,
    prediction: f32,
) -> Option<ContactPoint> {
    if p.normal.dot(front) >= 0.0 {
        return Some(p);
    }
    let (deepest, dist, over) = deepest_under(part, tri, front, &p.on_shape);
    // Over the triangle: the deepest point's foot. Beside it: the triangle point nearest the
    // shape's center, so the depth is at most the center's distance to the triangle plus the
    // shape's reach (where the chord through the support point's nearest point could be far more).
    let (on_triangle, feature) = if over {
        point_triangle(&(deepest - front * dist), tri)
    } else {
        point_triangle(&part.center(), tri)
    };
    let (on_triangle, feature, on_shape, dist) = if over {
        (on_triangle, feature, deepest, dist)
    } else {
        // Up the normal line through that triangle point, from below the whole shape; where the
        // shape is shallower there (or the line misses it) than the contact found, the
        // contact's own distance along the front normal.
        let start = on_triangle + front * ((deepest - on_triangle).dot(front) - 1.0);
        let ray = parry3d::query::Ray::new(start.to_parry(), front.to_parry());
        let lowest = part.shape.cast_ray(&part.pose, &ray, f32::MAX, true).map(|toi| start + front * toi);
        match lowest {
            Some(l) if (l - on_triangle).dot(front) < p.dist => {
                (on_triangle, feature, l, (l - on_triangle).dot(front))
            }
            _ => (p.on_triangle, p.id.feature, p.on_triangle + front * p.dist, p.dist),
        }
    };
    if dist > prediction {
        return None;
    }
    Some(ContactPoint {
        on_shape,
        on_triangle,
        normal: Unit::new_unchecked(*front),
        dist,
        id: FeatureId { feature, ..p.id },
        correction: Correction::Sunk,
    })
}
