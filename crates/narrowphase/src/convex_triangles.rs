//! Contacts between a convex shape (or a compound of convex parts) at a pose and a set of
//! triangles: candidates from the set's AABB query, then one routine per triangle (`routines`),
//! corrected for one-sided surfaces and inactive edges, then the internal contacts dropped across
//! the whole query and the rest reduced to manifolds ([`ContactWorkspace`]).

use crate::contact::{ContactPoint, Correction, FeatureId, Manifold, TriangleFeature};
use crate::contact_cache::{ContactCache, Motion, query_boxes};
use crate::convert::FromParry;
use crate::error::NarrowphaseError;
use crate::internal_contacts::{self, Core, InternalScratch, Note};
use crate::internal_edges::{ALL_ACTIVE, correct};
use crate::manifold::{ReduceScratch, reduce};
use crate::part::{Corners, Part, check_query, check_shape, flatten, touchable};
use crate::routines::{deepest_under, front_side, shape_triangle};
use crate::triangle_set::{TriangleRules, TriangleSet};
use parry3d::math::Pose;
use parry3d::shape::Shape;
use voxterra_core::nalgebra::{Point3, Unit, Vector3};
use voxterra_core::{Aabb, TriangleIndex, TriangleSource};

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
        let first = cache.keep(set.source, set.index, |t| set.rules(t), group, &mut self.candidates)?;
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
            triangle_points(&part, t, &tri, face, set.rules(t), prediction, out, trace.as_mut())?;
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
    surface: TriangleRules,
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
