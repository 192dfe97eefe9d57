//! Shape casts: the first time a convex shape moving linearly touches a triangle set, for
//! continuous collision and character movement. Candidates come from the swept box, visited by a
//! lower bound on their time of impact; each is cast in closed form (a landing inside the
//! triangle's face; balls, capsules and boxes) or by parry's cast against the one triangle, the
//! search window shrinking to the best hit so far.

use crate::closest::{feature_of, triangle_normal};
use crate::contact::FeatureId;
use crate::convert::{FromParry, ToParry};
use crate::core_cast::{CoreCast, cast_core, cast_cuboid};
use crate::error::NarrowphaseError;
use crate::internal_edges::{face_side, is_inactive};
use crate::part::{Part, check_query, check_shape, flatten};
use crate::triangle_set::TriangleSet;
use parry3d::math::{Pose, Vector};
use parry3d::query::ShapeCastOptions;
use parry3d::shape::{Shape, Triangle, TypedShape};
use voxterra_core::nalgebra::{Point3, Translation3, Unit, Vector3};
use voxterra_core::{Aabb, TriangleIndex, TriangleSource};

/// Where a cast stops.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct ShapeCastHit {
    /// Time of impact: the shape touches at `pose` moved by `velocity × toi`.
    pub toi: f32,
    /// The touching point on the shape, world space, at the time of impact.
    pub on_shape: Point3<f32>,
    /// The touching point on the triangle.
    pub on_triangle: Point3<f32>,
    /// Unit normal from the triangle toward the shape at impact.
    pub normal: Unit<Vector3<f32>>,
    /// The triangle and feature hit.
    pub id: FeatureId,
}

/// Options of [`cast_shape`].
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct CastOptions {
    /// The shape counts as touching once this close (≥ 0; a skin for character controllers).
    pub target_distance: f32,
    /// When the shape already penetrates at time 0, report a hit at 0 (`true`) or only if it moves
    /// deeper (`false`, so a character can walk out of a wall it grazes).
    pub stop_at_penetration: bool,
}

impl Default for CastOptions {
    fn default() -> Self {
        CastOptions { target_distance: 0.0, stop_at_penetration: true }
    }
}

/// The first hit of `shape`, starting at `pose` and moving by `velocity` per unit time, against
/// the triangles of `set`, with time of impact in `[0, max_toi]`. Ties go to the triangle whose
/// face the motion runs into hardest, then to the lowest triangle index, so any index gives the
/// same answer. With `stop_at_penetration` false, a triangle touched at the start whose reported
/// face the motion leaves is not a hit (a character sliding along a crease is blocked by the face
/// it moves into, never by the one it slides on).
pub fn cast_shape<S: TriangleSource, I: TriangleIndex>(
    shape: &dyn Shape,
    pose: &Pose,
    velocity: Vector,
    max_toi: f32,
    set: TriangleSet<'_, S, I>,
    options: CastOptions,
) -> Result<Option<ShapeCastHit>, NarrowphaseError> {
    check_query(pose, options.target_distance)?;
    if !velocity.is_finite() {
        return Err(NarrowphaseError::InvalidParameter { what: "velocity", value: velocity.length() });
    }
    let vel = Vector3::from_parry(velocity);
    if !(max_toi.is_finite() && max_toi >= 0.0) {
        return Err(NarrowphaseError::InvalidParameter { what: "max_toi", value: max_toi });
    }
    let mut parts = Vec::new();
    flatten(shape, pose, 0, &mut parts)?;
    let mut best: Option<ShapeCastHit> = None;
    let mut candidates: Vec<(f32, u32, Option<PlaneReach>)> = Vec::new();
    for part in parts {
        check_shape(part.shape)?;
        let start = Aabb::from_parry(&part.shape.compute_aabb(&part.pose));
        let end =
            Aabb::from_parry(&part.shape.compute_aabb(&part.pose.append_translation(velocity * max_toi)));
        let swept = start.merged(&end).loosened(options.target_distance);
        candidates.clear();
        let start = start.loosened(options.target_distance);
        set.index.triangles_in_aabb(&swept, &mut |t| {
            // A lower bound on the triangle's time of impact: when the moving box first meets
            // the triangle's box, and when the shape first reaches the triangle's plane. PERF:
            // casts visit candidates by it and stop once it passes the best hit, instead of
            // casting against every triangle of the swept box.
            let tri = set.source.triangle(t as usize);
            if let Some(b) = Aabb::from_points(&tri) {
                let entry = box_entry(&start, &vel, &b);
                let reach = plane_reach(&part, &tri, &vel, options.target_distance);
                let bound = reach.as_ref().map_or(entry, |r| entry.max(r.toi));
                if bound.is_finite() {
                    candidates.push((bound, t, reach));
                }
            }
        });
        candidates.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        // Balls and capsules cast in closed form (parry's cast where they start in touch), as do
        // boxes.
        let core = match part.shape.as_typed_shape() {
            TypedShape::Ball(b) => {
                let c = Point3::from(part.iso.translation.vector);
                Some((c, c, b.radius))
            }
            TypedShape::Capsule(c) => Some((
                part.iso * Point3::from_parry(c.segment.a),
                part.iso * Point3::from_parry(c.segment.b),
                c.radius,
            )),
            _ => None,
        };
        let cuboid = part.shape.as_cuboid();
        for &(entry, t, ref reach) in &candidates {
            if entry > best.map_or(max_toi, |b| b.toi) {
                break;
            }
            let tri = set.source.triangle(t as usize);
            if !tri.iter().all(|p| p.iter().all(|v| v.is_finite())) || triangle_normal(&tri).is_none() {
                continue;
            }
            let limit = best.map_or(max_toi, |b| b.toi);
            let opts = ShapeCastOptions {
                max_time_of_impact: limit,
                target_distance: options.target_distance,
                stop_at_penetration: options.stop_at_penetration,
                compute_impact_geometry_on_penetration: true,
            };
            // The shape's first point on the plane lands inside the triangle: that is where and
            // when it touches (it reaches no point of the triangle before the plane). PERF: most
            // hits on terrain are such face hits, and need no GJK.
            let face_hit = reach.as_ref().filter(|r| r.toi <= limit && inside(&r.on_plane, &tri));
            let closed = match (&face_hit, core, cuboid) {
                (None, Some((a, b, r)), _) => {
                    match cast_core(&a, &b, r + options.target_distance, &vel, &tri, limit) {
                        CoreCast::Hit(h) => {
                            Some((h.toi, h.on_core - h.normal.into_inner() * r, h.on_triangle, h.normal))
                        }
                        CoreCast::Miss => continue,
                        CoreCast::Undecided => None,
                    }
                }
                // Boxes too when touching means touching (a target distance rounds the box).
                (None, None, Some(c)) if options.target_distance == 0.0 => {
                    match cast_cuboid(&Vector3::from_parry(c.half_extents), &part.iso, &vel, &tri, limit) {
                        CoreCast::Hit(h) => Some((h.toi, h.on_core, h.on_triangle, h.normal)),
                        CoreCast::Miss => continue,
                        CoreCast::Undecided => None,
                    }
                }
                _ => None,
            };
            let (toi, on_shape, on_triangle, normal2) = match (face_hit, closed) {
                (Some(r), _) => (r.toi, r.on_shape, r.on_plane, r.normal),
                (None, Some(hit)) => hit,
                (None, None) => {
                    let triangle = Triangle::new(tri[0].to_parry(), tri[1].to_parry(), tri[2].to_parry());
                    let hit = parry3d::query::cast_shapes(
                        &part.pose,
                        velocity,
                        part.shape,
                        &Pose::IDENTITY,
                        Vector::ZERO,
                        &triangle,
                        opts,
                    )
                    .map_err(|_| {
                        NarrowphaseError::UnsupportedShape("a shape parry cannot cast against a triangle")
                    })?;
                    let Some(h) = hit else { continue };
                    let at = Translation3::from(vel * h.time_of_impact) * part.iso;
                    let on_shape = at * Point3::from_parry(h.witness1);
                    (h.time_of_impact, on_shape, Point3::from_parry(h.witness2), Unit::from_parry(h.normal2))
                }
            };
            if !(toi.is_finite() && toi <= limit) {
                continue;
            }
            if best.is_some_and(|b| toi > b.toi) {
                continue;
            }
            let feature = feature_of(&on_triangle, &tri);
            // An inactive edge or vertex continues into its neighbor's face: the normal a
            // sliding character should see is the face's.
            let normal = match triangle_normal(&tri) {
                Some(face) if is_inactive(feature, set.flags(t)) => face_side(&face, &normal2),
                _ => normal2,
            };
            let closing = normal.dot(&vel);
            // Touching at the start on a face the motion leaves: not in the way (the face's
            // neighbor across a concave crease is, and reports its own face).
            if toi == 0.0 && !options.stop_at_penetration && closing >= 0.0 {
                continue;
            }
            // Ties go to the face the motion runs into hardest (the one that blocks it), then to
            // the lower triangle.
            if let Some(b) = best
                && toi == b.toi
                && (closing, t) >= (b.normal.dot(&vel), b.id.triangle)
            {
                continue;
            }
            best = Some(ShapeCastHit {
                toi,
                on_shape,
                on_triangle,
                normal,
                id: FeatureId { triangle: t, feature, part: part.index, sub: 0 },
            });
        }
    }
    Ok(best)
}

/// When and where a shape moving linearly first comes within the target distance of a triangle's
/// plane.
struct PlaneReach {
    toi: f32,
    /// The shape's point nearest the plane then.
    on_shape: Point3<f32>,
    /// Its foot on the plane.
    on_plane: Point3<f32>,
    /// The plane's normal on the shape's side.
    normal: Unit<Vector3<f32>>,
}

/// The first time `part`, moving by `vel` per unit time, comes within `target` of the plane of
/// `tri`: a lower bound on when it touches the triangle. `None` when it is already that close or
/// crosses the plane (no bound but 0), or has no support map; a time of infinity when it never
/// gets there.
fn plane_reach(
    part: &Part<'_>,
    tri: &[Point3<f32>; 3],
    vel: &Vector3<f32>,
    target: f32,
) -> Option<PlaneReach> {
    let n = triangle_normal(tri)?;
    let below = part.support(&-n)?;
    let (n, near, dist) = match (below - tri[0]).dot(&n) {
        d if d > target => (n, below, d),
        _ => {
            let above = part.support(&n)?;
            match (tri[0] - above).dot(&n) {
                d if d > target => (-n, above, d),
                _ => return None,
            }
        }
    };
    let approach = -vel.dot(&n);
    let toi = if approach > 0.0 { (dist - target) / approach } else { f32::INFINITY };
    let on_shape = near + vel * toi;
    Some(PlaneReach { toi, on_shape, on_plane: on_shape - n * target, normal: Unit::new_unchecked(n) })
}

/// Whether `p`, on the plane of `tri`, lies inside it or on its border.
fn inside(p: &Point3<f32>, tri: &[Point3<f32>; 3]) -> bool {
    let n = (tri[1] - tri[0]).cross(&(tri[2] - tri[0]));
    (0..3).all(|i| (tri[(i + 1) % 3] - tri[i]).cross(&(p - tri[i])).dot(&n) >= 0.0)
}

/// The first time `moving`, translated by `velocity` per unit time, overlaps `fixed` (0 when it
/// already does; infinity when never). Conservative: never later than any contact inside.
fn box_entry(moving: &Aabb, velocity: &Vector3<f32>, fixed: &Aabb) -> f32 {
    let mut t0 = 0.0f32;
    for a in 0..3 {
        let (lo, hi) = (fixed.mins[a] - moving.maxs[a], fixed.maxs[a] - moving.mins[a]);
        let v = velocity[a];
        if v == 0.0 {
            if lo > 0.0 || hi < 0.0 {
                return f32::INFINITY;
            }
        } else {
            let (ta, tb) = (lo / v, hi / v);
            let (enter, exit) = if ta < tb { (ta, tb) } else { (tb, ta) };
            if exit < 0.0 {
                return f32::INFINITY;
            }
            t0 = t0.max(enter);
        }
    }
    t0
}
