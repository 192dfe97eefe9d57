//! [`TerrainDispatcher`]: the pairs with a [`TerrainShape`] go to voxterra's narrowphase; every
//! other pair goes on to parry's default dispatcher.

use crate::shape::TerrainShape;
use rapier3d::parry::math::{Pose, Real, Vector};
use rapier3d::parry::query::sweep_toi::Sweep;
use rapier3d::parry::query::{
    ClosestPoints, Contact, ContactManifold, ContactManifoldsWorkspace, DefaultQueryDispatcher,
    NonlinearRigidMotion, PersistentQueryDispatcher, QueryDispatcher, QueryDispatcherChain, ShapeCastHit,
    ShapeCastOptions, ShapeCastStatus, ShapeDistance, ShapeIntersection, TrackedContact, TypedWorkspaceData,
    Unsupported, WorkspaceData,
};
use rapier3d::parry::shape::{PackedFeatureId, Shape};
use std::sync::atomic::{AtomicU64, Ordering};
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::nalgebra::Vector3;
use voxterra::narrowphase::NarrowphaseError;
use voxterra::narrowphase::{CastOptions, ContactPoint, Correction, FeatureId, SweepHit, TriangleFeature};
use voxterra::{QueryError, TerrainContactCache, TerrainContactPoint, TerrainManifold};

/// The query dispatcher that routes every pair with a [`TerrainShape`] to voxterra: contact
/// manifolds (ghost-free across chunk seams, feature ids stable for warm starting), contacts,
/// intersection tests and shape casts. Pairs without the terrain are [`Unsupported`] here, so
/// chain it in front of parry's default one ([`dispatcher`]).
///
/// Not answered for the terrain (they fall through to parry, which has no routine for a custom
/// shape, so they are unsupported): `distance` and `closest_points`. `cast_shapes_nonlinear`
/// (rapier's CCD) sweeps the body from its pose at the start time to its pose at the end time,
/// rotation included, as rapier sweeps a body against its own triangle meshes
/// ([`Terrain::sweep_shape`](voxterra::Terrain::sweep_shape)): a body resting on
/// the terrain slides on, a body about to pass through stops at the surface. Cylinders and cones,
/// which have no point-cloud form, and sensors are cast linearly, holding the start orientation.
#[derive(Clone, Copy, Default, Debug)]
pub struct TerrainDispatcher;

/// voxterra's dispatcher in front of parry's default one: what
/// `NarrowPhase::with_query_dispatcher` and rapier's query pipeline take.
pub fn dispatcher() -> QueryDispatcherChain<TerrainDispatcher, DefaultQueryDispatcher> {
    TerrainDispatcher.chain(DefaultQueryDispatcher)
}

/// Which of the two shapes is the terrain, and the other shape's pose in the terrain's frame.
struct Pair<'a> {
    terrain: &'a TerrainShape,
    other: &'a dyn Shape,
    /// The other shape's pose in the terrain's frame.
    pose: Pose,
    /// True when the terrain is the second shape.
    flipped: bool,
}

fn pair<'a>(pos12: &Pose, g1: &'a dyn Shape, g2: &'a dyn Shape) -> Result<Pair<'a>, Unsupported> {
    match (g1.as_shape::<TerrainShape>(), g2.as_shape::<TerrainShape>()) {
        (Some(terrain), None) => Ok(Pair { terrain, other: g2, pose: *pos12, flipped: false }),
        (None, Some(terrain)) => Ok(Pair { terrain, other: g1, pose: pos12.inverse(), flipped: true }),
        (Some(_), Some(_)) => {
            Err(refuse("two terrain colliders meet: terrain against terrain is not answered"))
        }
        (None, None) => Err(Unsupported),
    }
}

/// Queries with the terrain the dispatcher refused.
static REFUSED: AtomicU64 = AtomicU64::new(0);

/// How many queries between the terrain and another collider the dispatcher refused since the
/// program started. rapier drops a pair whose query fails without a word: its bodies then get no
/// contact with the terrain at all. A refusal comes from a shape the terrain cannot collide (not
/// convex nor a compound of convex parts: a TriMesh, a heightfield, a half-space), a pose that is
/// not finite, two terrain colliders meeting, or a query voxterra does not answer (`distance`,
/// `closest_points`). The first refusal is logged as a warning (the `log` crate), later ones at
/// debug level. A game should check this stays 0.
pub fn refused_queries() -> u64 {
    REFUSED.load(Ordering::Relaxed)
}

/// Counts and logs a refused query; rapier hears [`Unsupported`].
fn refuse(why: impl std::fmt::Display) -> Unsupported {
    if REFUSED.fetch_add(1, Ordering::Relaxed) == 0 {
        log::warn!("voxterra-rapier refused a query with the terrain (the pair gets no contacts): {why}");
    } else {
        log::debug!("voxterra-rapier refused a query with the terrain: {why}");
    }
    Unsupported
}

fn is_terrain(g: &dyn Shape) -> bool {
    g.as_shape::<TerrainShape>().is_some()
}

/// A query voxterra does not answer: refused (and counted) when the terrain is in it.
fn unanswered(g1: &dyn Shape, g2: &dyn Shape, what: &str) -> Unsupported {
    if is_terrain(g1) || is_terrain(g2) {
        refuse(format_args!("`{what}` is not answered for the terrain"))
    } else {
        Unsupported
    }
}

/// A terrain triangle's feature as parry packs it: three codes a triangle.
fn terrain_fid(id: &FeatureId) -> PackedFeatureId {
    let t = id.triangle & 0x0fff_ffff;
    match id.feature {
        TriangleFeature::Vertex(i) => PackedFeatureId::vertex(t * 3 + i as u32),
        TriangleFeature::Edge(i) => PackedFeatureId::edge(t * 3 + i as u32),
        TriangleFeature::Face => PackedFeatureId::face(t),
    }
}

/// The shape side's feature: its compound part and its own index.
fn shape_fid(id: &FeatureId) -> PackedFeatureId {
    PackedFeatureId::vertex(((id.part & 0x3fff) << 16) | (id.sub & 0xffff))
}

/// A physics chunk as a manifold's sub-shape id (its low 10 bits per axis: manifolds are only
/// matched between a pair's consecutive steps, which never span 1 024 chunks).
fn chunk_id(m: &TerrainManifold) -> u32 {
    let c = m.chunk;
    (c.x as u32 & 0x3ff) | ((c.y as u32 & 0x3ff) << 10) | ((c.z as u32 & 0x3ff) << 20)
}

impl Pair<'_> {
    /// The manifolds between the terrain and the other shape, in the terrain's frame.
    fn manifolds(&self, prediction: Real) -> Result<Vec<TerrainManifold>, Unsupported> {
        let terrain = self.terrain.terrain().read();
        let mut out = Vec::new();
        terrain.contacts(self.other, &self.pose, prediction, &mut out).map_err(refuse)?;
        Ok(out)
    }
}

impl QueryDispatcher for TerrainDispatcher {
    fn intersection_test(
        &self,
        pos12: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
    ) -> Result<ShapeIntersection, Unsupported> {
        let p = pair(pos12, g1, g2)?;
        Ok(ShapeIntersection::new(p.manifolds(0.0)?.iter().any(|m| m.manifold.min_dist() <= 0.0)))
    }

    fn distance(&self, _: &Pose, g1: &dyn Shape, g2: &dyn Shape) -> Result<ShapeDistance, Unsupported> {
        Err(unanswered(g1, g2, "distance"))
    }

    fn contact(
        &self,
        pos12: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
        prediction: Real,
    ) -> Result<Option<Contact>, Unsupported> {
        let p = pair(pos12, g1, g2)?;
        let found = p.manifolds(prediction)?;
        let deepest = found.iter().flat_map(|m| m.manifold.points()).min_by(|a, b| {
            a.dist.total_cmp(&b.dist).then((a.id.triangle, a.id.sub).cmp(&(b.id.triangle, b.id.sub)))
        });
        Ok(deepest.map(|c| {
            let on_other = p.pose.inverse_transform_point(c.on_shape.to_parry());
            let n_other = p.pose.inverse_transform_vector(-c.normal.to_parry());
            let (on_terrain, n_terrain) = (c.on_triangle.to_parry(), c.normal.to_parry());
            if p.flipped {
                Contact::new(on_other, on_terrain, n_other, n_terrain, c.dist)
            } else {
                Contact::new(on_terrain, on_other, n_terrain, n_other, c.dist)
            }
        }))
    }

    fn closest_points(
        &self,
        _: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
        _: Real,
    ) -> Result<ClosestPoints, Unsupported> {
        Err(unanswered(g1, g2, "closest_points"))
    }

    fn cast_shapes(
        &self,
        pos12: &Pose,
        local_vel12: Vector,
        g1: &dyn Shape,
        g2: &dyn Shape,
        options: ShapeCastOptions,
    ) -> Result<Option<ShapeCastHit>, Unsupported> {
        let p = pair(pos12, g1, g2)?;
        // The other shape's velocity relative to the terrain, in the terrain's frame.
        // Flipped, the terrain moves by `local_vel12` in the other shape's frame: the other shape
        // moves by its opposite, turned into the terrain's frame.
        let vel = if p.flipped { p.pose.rotation * -local_vel12 } else { local_vel12 };
        cast(&p, vel, options.max_time_of_impact, options, 0.0)
    }

    fn cast_shapes_nonlinear(
        &self,
        motion1: &NonlinearRigidMotion,
        g1: &dyn Shape,
        motion2: &NonlinearRigidMotion,
        g2: &dyn Shape,
        start_time: Real,
        end_time: Real,
        stop_at_penetration: bool,
    ) -> Result<Option<ShapeCastHit>, Unsupported> {
        let (m_terrain, m_other) = match (is_terrain(g1), is_terrain(g2)) {
            (true, false) => (motion1, motion2),
            (false, true) => (motion2, motion1),
            (true, true) => {
                return Err(refuse("two terrain colliders meet: terrain against terrain is not answered"));
            }
            (false, false) => return Err(Unsupported),
        };
        let span = end_time - start_time;
        if !(span.is_finite() && span >= 0.0) {
            return Ok(None);
        }
        // In the terrain's frame (the terrain is fixed: its start pose).
        let frame = m_terrain.position_at_time(start_time);
        let p0 = frame.inv_mul(&m_other.position_at_time(start_time));
        let p1 = frame.inv_mul(&m_other.position_at_time(end_time));
        let pos12 = if is_terrain(g1) { p0 } else { p0.inverse() };
        let p = pair(&pos12, g1, g2)?;
        if !stop_at_penetration {
            // rapier's CCD of a solid body: swept over the step, rotation included, to the linear
            // slop, as rapier sweeps a body against its own triangle meshes.
            let sweep = Sweep::from_poses(&p0, &p1, m_other.local_center);
            let terrain = p.terrain.terrain().read();
            let found = terrain.sweep_shape(p.other, &sweep, 1.0, LINEAR_SLOP);
            match found {
                Ok(hit) => return Ok(hit.map(|(_, h)| sweep_hit(&p, &sweep, &h, start_time, span))),
                // Shapes without a point-cloud form (cylinders, cones): the linear cast below.
                Err(QueryError::Narrowphase(NarrowphaseError::UnsupportedShape(_))) => {}
                Err(e) => return Err(refuse(e)),
            }
        }
        let vel = if span > 0.0 { (p1.translation - p0.translation) / span } else { Vector::ZERO };
        let options =
            ShapeCastOptions { stop_at_penetration, ..ShapeCastOptions::with_max_time_of_impact(span) };
        cast(&p, vel, span, options, start_time)
    }
}

/// rapier's allowed linear error at its default length unit (1): the separation a CCD sweep stops
/// at, which the next step's contacts (their prediction distance is larger) then hold.
const LINEAR_SLOP: Real = 0.005;

/// A sweep's hit as parry reports a cast: the time in the step, witnesses and normals in each
/// shape's local frame at impact.
fn sweep_hit(p: &Pair<'_>, sweep: &Sweep, h: &SweepHit, start_time: Real, span: Real) -> ShapeCastHit {
    let at = sweep.transform_at(h.fraction);
    let point = h.point.to_parry();
    let n = h.normal.to_parry();
    let (on_other, n_other) = (at.inverse_transform_point(point), at.inverse_transform_vector(-n));
    let (witness1, witness2, normal1, normal2) =
        if p.flipped { (on_other, point, n_other, n) } else { (point, on_other, n, n_other) };
    ShapeCastHit {
        time_of_impact: start_time + h.fraction * span,
        witness1,
        witness2,
        normal1,
        normal2,
        status: ShapeCastStatus::Converged,
        subshape1: 0,
        subshape2: 0,
    }
}

/// A linear cast of the other shape against the terrain, `vel` in the terrain's frame; the hit
/// in parry's convention (witnesses and normals in each shape's local frame, at impact).
fn cast(
    p: &Pair<'_>,
    vel: Vector,
    max_toi: Real,
    options: ShapeCastOptions,
    time_offset: Real,
) -> Result<Option<ShapeCastHit>, Unsupported> {
    let terrain = p.terrain.terrain().read();
    let cast_options = CastOptions {
        target_distance: options.target_distance,
        stop_at_penetration: options.stop_at_penetration,
    };
    let hit = terrain.cast_shape(p.other, &p.pose, vel, max_toi, cast_options).map_err(refuse)?;
    Ok(hit.map(|(_, h)| {
        let at = p.pose.append_translation(vel * h.toi);
        let on_other = at.inverse_transform_point(h.on_shape.to_parry());
        let n_other = at.inverse_transform_vector(-h.normal.to_parry());
        let (on_terrain, n_terrain) = (h.on_triangle.to_parry(), h.normal.to_parry());
        let status = if h.toi == 0.0 {
            ShapeCastStatus::PenetratingOrWithinTargetDist
        } else {
            ShapeCastStatus::Converged
        };
        let (witness1, witness2, normal1, normal2) = if p.flipped {
            (on_other, on_terrain, n_other, n_terrain)
        } else {
            (on_terrain, on_other, n_terrain, n_other)
        };
        ShapeCastHit {
            time_of_impact: h.toi + time_offset,
            witness1,
            witness2,
            normal1,
            normal2,
            status,
            subshape1: 0,
            subshape2: 0,
        }
    }))
}

/// The pair workspace the dispatcher leaves in rapier's contact pair: the pair's last query and
/// the contact points its manifolds were reduced from. Its presence also tells rapier the pair is
/// composite — manifolds come and go with the chunks and normals touched, so their order is not
/// stable between updates (rapier then rebuilds its solver contact graph for the pair instead of
/// patching it, as for its own triangle meshes).
#[derive(Clone, Default, Debug)]
struct TerrainPairWorkspace {
    last: Option<LastQuery>,
    /// The last query's points (world units, the terrain's frame), each with its point on the
    /// other shape in that shape's frame.
    points: Vec<(TerrainContactPoint, Vector)>,
    /// Scratch: the points moved to the shape's pose, the query's points, the manifolds.
    moved: Vec<TerrainContactPoint>,
    found: Vec<TerrainManifold>,
    /// The candidate triangles the pair's queries replay while the shape moves little.
    candidates: TerrainContactCache,
}

/// How far past rapier's prediction a query reaches, as a fraction of the prediction: how far the
/// other shape may move before the pair queries again. A quarter is rapier's allowed linear error
/// (its linear slop) at its default prediction: contacts moved that far stay within what the
/// solver tolerates, while the narrowphase's corrected contacts at creases (which appear and
/// vanish as a shape crosses a face's edge, not as it moves) are never kept stale for long.
const MARGIN: Real = 0.25;

/// A query whose points the pair still holds.
#[derive(Clone, Copy, Debug)]
struct LastQuery {
    /// The other shape's pose in the terrain's frame.
    pose: Pose,
    /// The terrain's revision.
    revision: u64,
    /// The prediction rapier asked for; the query reached `margin` further.
    prediction: Real,
    margin: Real,
    /// How far any point of the other shape is from its local origin.
    reach: Real,
}

impl LastQuery {
    /// True when every contact within `prediction` of the shape at `pose` is one of the query's
    /// points: the terrain is unchanged and no point of the shape moved more than the margin.
    fn still_covers(&self, pose: &Pose, revision: u64, prediction: Real) -> bool {
        if revision != self.revision || prediction != self.prediction {
            return false;
        }
        // A rotation by angle a moves a point at distance r by 2 r sin(a / 2), and
        // |cos(a / 2)| is the quaternions' dot product.
        let cos_half = self.pose.rotation.dot(pose.rotation).abs().min(1.0);
        let turn = 2.0 * self.reach * (1.0 - cos_half * cos_half).sqrt();
        let moved = (pose.translation - self.pose.translation).length() + turn;
        moved <= self.margin
    }
}

/// The query's points moved with the other shape, now at `pose` in the terrain's frame, as parry
/// moves a triangle mesh's contacts between steps: each keeps its features and its triangle's
/// plane, its distance changed by the shape point's motion along the normal and its terrain point
/// slid under the shape's. False when a point went from touching to apart or back (which may make
/// others appear), or came from a shape deep in the solid (its contact follows the nearest
/// surface, not a plane).
fn move_points(
    pose: &Pose,
    kept: &[(TerrainContactPoint, Vector)],
    out: &mut Vec<TerrainContactPoint>,
) -> bool {
    out.clear();
    for (c, local) in kept {
        let p = c.point;
        if p.correction == Correction::Interior {
            return false;
        }
        let d = Vector3::from_parry(*pose * *local) - p.on_shape.coords;
        let along = d.dot(&p.normal);
        let dist = p.dist + along;
        if dist * p.dist < 0.0 {
            return false;
        }
        let slide = d - p.normal.into_inner() * along;
        let point = ContactPoint { on_shape: p.on_shape + d, on_triangle: p.on_triangle + slide, dist, ..p };
        out.push(TerrainContactPoint { chunk: c.chunk, point });
    }
    true
}

impl WorkspaceData for TerrainPairWorkspace {
    fn as_typed_workspace_data(&self) -> TypedWorkspaceData<'_> {
        TypedWorkspaceData::Custom
    }

    fn clone_dyn(&self) -> Box<dyn WorkspaceData> {
        Box::new(self.clone())
    }
}

impl<M: Default + Clone, C: Default + Copy> PersistentQueryDispatcher<M, C> for TerrainDispatcher {
    /// One manifold per terrain manifold (at most four points, per physics chunk and normal),
    /// each matched to the pair's previous manifolds of the same chunk by feature ids, so rapier's
    /// warm start carries the impulses of contacts that persist.
    ///
    /// The query reaches a quarter past the prediction and the pair keeps every point its
    /// manifolds were reduced from. While no point of the other shape has moved more than that
    /// quarter since, on the same terrain revision and prediction, the pair queries nothing: its
    /// points move with the shape (as parry moves a triangle mesh's contacts) and are reduced
    /// again. Contacts beyond the prediction are left to rapier, which keeps those a body's
    /// velocity closes within the step. A fresh query replays the candidate triangles the pair
    /// kept while the shape moved less than a tenth of its size (at most 0.1, as parry loosens a
    /// triangle mesh pair's box): the same answer, without picking chunks or searching trees
    /// ([`Terrain::contacts_kept`](voxterra::Terrain::contacts_kept)).
    fn contact_manifolds(
        &self,
        pos12: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
        prediction: Real,
        manifolds: &mut Vec<ContactManifold<M, C>>,
        workspace: &mut Option<ContactManifoldsWorkspace>,
    ) -> Result<(), Unsupported> {
        let p = pair(pos12, g1, g2)?;
        if !workspace.as_ref().is_some_and(|w| w.0.is::<TerrainPairWorkspace>()) {
            *workspace = Some(TerrainPairWorkspace::default().into());
        }
        let ws = workspace
            .as_mut()
            .and_then(|w| w.0.downcast_mut::<TerrainPairWorkspace>())
            .ok_or_else(|| refuse("the pair's workspace is not the terrain's"))?;
        let TerrainPairWorkspace { last, points, moved, found, candidates } = ws;
        found.clear();
        let terrain = p.terrain.terrain().read();
        let revision = terrain.revision();
        if last.is_some_and(|l| l.still_covers(&p.pose, revision, prediction))
            && move_points(&p.pose, points, moved)
        {
            drop(terrain);
            TerrainContactPoint::reduce(moved, found);
        } else {
            // The query reaches a margin past the prediction: its points hold every contact that
            // can come within the prediction while the shape moves less than the margin.
            let margin = prediction * MARGIN;
            *last = None;
            terrain
                .contacts_kept(p.other, &p.pose, prediction + margin, candidates, found, moved)
                .map_err(refuse)?;
            drop(terrain);
            points.clear();
            points.extend(
                moved.iter().map(|c| (*c, p.pose.inverse_transform_point(c.point.on_shape.to_parry()))),
            );
            let sphere = p.other.compute_local_bounding_sphere();
            let reach = sphere.center.length() + sphere.radius;
            *last = Some(LastQuery { pose: p.pose, revision, prediction, margin, reach });
        }
        let found = &*found;
        let mut old = std::mem::take(manifolds);
        // Which old manifolds have handed their data on: each moves to at most one new manifold
        // (rapier's own bookkeeping lives in it and must not be duplicated).
        let mut moved = vec![false; old.len()];
        for m in found {
            let sub = chunk_id(m);
            let (s1, s2) = if p.flipped { (0, sub) } else { (sub, 0) };
            let same = |o: &ContactManifold<M, C>| o.subshape1 == s1 && o.subshape2 == s2;
            let data = match (0..old.len()).find(|&i| !moved[i] && same(&old[i])) {
                Some(i) => {
                    moved[i] = true;
                    std::mem::take(&mut old[i].data)
                }
                None => M::default(),
            };
            let mut cm = ContactManifold::<M, C>::with_data(s1, s2, data);
            let n = m.manifold.normal.to_parry();
            let n_other = p.pose.inverse_transform_vector(-n);
            if p.flipped {
                cm.local_n1 = n_other;
                cm.local_n2 = n;
            } else {
                cm.local_n1 = n;
                cm.local_n2 = n_other;
            }
            for c in m.manifold.points() {
                let on_other = p.pose.inverse_transform_point(c.on_shape.to_parry());
                let on_terrain = c.on_triangle.to_parry();
                let (tf, sf) = (terrain_fid(&c.id), shape_fid(&c.id));
                cm.points.push(if p.flipped {
                    TrackedContact::new(on_other, on_terrain, sf, tf, c.dist)
                } else {
                    TrackedContact::new(on_terrain, on_other, tf, sf, c.dist)
                });
            }
            // Points may change normal group between steps: match against the whole chunk.
            for o in old.iter().filter(|o| same(o)) {
                cm.match_contacts(&o.points);
            }
            manifolds.push(cm);
        }
        Ok(())
    }

    fn contact_manifold_convex_convex(
        &self,
        _: &Pose,
        _: &dyn Shape,
        _: &dyn Shape,
        _: Option<&dyn rapier3d::parry::query::details::NormalConstraints>,
        _: Option<&dyn rapier3d::parry::query::details::NormalConstraints>,
        _: Real,
        _: &mut ContactManifold<M, C>,
    ) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pose(t: [f32; 3], axis_angle: [f32; 3]) -> Pose {
        Pose::new(Vector::from(t), Vector::from(axis_angle))
    }

    proptest! {
        /// The motion bound holds for every point within reach: no point of the shape moved more
        /// than `still_covers` allows.
        #[test]
        fn the_motion_bound_holds_for_every_point_in_reach(
            t0 in prop::array::uniform3(-50.0f32..50.0),
            r0 in prop::array::uniform3(-3.0f32..3.0),
            dt in prop::array::uniform3(-0.1f32..0.1),
            dr in prop::array::uniform3(-0.1f32..0.1),
            dir in prop::array::uniform3(-1.0f32..1.0),
            reach in 0.01f32..5.0,
        ) {
            let p0 = pose(t0, r0);
            let p1 = pose([t0[0] + dt[0], t0[1] + dt[1], t0[2] + dt[2]], [0.0; 3]);
            let p1 = Pose::from_parts(p1.translation, Pose::new(Vector::ZERO, Vector::from(dr)).rotation * p0.rotation);
            let d = Vector::from(dir);
            prop_assume!(d.length() > 1e-3);
            let x = d.normalize() * reach;
            let moved = (p1 * x - p0 * x).length();
            let margin = 0.2;
            let last = LastQuery { pose: p0, revision: 1, prediction: margin, margin, reach };
            let covers = last.still_covers(&p1, 1, margin);
            // The bound is conservative: it covers only motions no longer than the margin (up
            // to rounding of the poses' own arithmetic).
            prop_assert!(!covers || moved <= margin * (1.0 + 1e-4) + 1e-4 * (1.0 + t0[0].abs().max(t0[1].abs()).max(t0[2].abs())));
            // A revision or prediction that differs never covers.
            prop_assert!(!last.still_covers(&p1, 2, margin));
            prop_assert!(!last.still_covers(&p1, 1, margin * 0.5));
        }
    }

    #[test]
    fn a_shape_at_rest_is_covered_and_one_past_the_margin_is_not() {
        let p0 = pose([1.0, 2.0, 3.0], [0.1, 0.2, 0.3]);
        let last = LastQuery { pose: p0, revision: 7, prediction: 0.01, margin: 0.01, reach: 1.0 };
        assert!(last.still_covers(&p0, 7, 0.01));
        let slid = Pose::from_parts(p0.translation + Vector::new(0.011, 0.0, 0.0), p0.rotation);
        assert!(!last.still_covers(&slid, 7, 0.01));
        // A turn of 0.011 rad moves a point at reach 1 by about 0.011.
        let turned = Pose::from_parts(
            p0.translation,
            Pose::new(Vector::ZERO, Vector::new(0.0, 0.011, 0.0)).rotation * p0.rotation,
        );
        assert!(!last.still_covers(&turned, 7, 0.01));
        let small = Pose::from_parts(
            p0.translation,
            Pose::new(Vector::ZERO, Vector::new(0.0, 0.009, 0.0)).rotation * p0.rotation,
        );
        assert!(last.still_covers(&small, 7, 0.01));
    }
}
