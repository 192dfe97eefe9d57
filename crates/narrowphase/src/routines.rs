//! One convex part against one triangle: specialized routines for balls and capsules, SAT with
//! face clipping for cuboids (`cuboid_triangle`) and convex hulls (`hull_triangle`, GJK/EPA where
//! it does not answer), parry's GJK/EPA for the rest; and the redo of a
//! point pushing a shape out through a one-sided triangle's back.

use crate::closest::{feature_of, point_triangle, segment_triangle, triangle_normal};
use crate::contact::{ContactPoint, Correction, FeatureId};
use crate::convert::{FromParry, ToParry};
use crate::cuboid_triangle::{Routine, cuboid_triangle};
use crate::error::NarrowphaseError;
use crate::part::Part;
use crate::triangle_set::TriangleRules;
use parry3d::math::Pose;
use parry3d::shape::{ConvexPolyhedron, TypedShape};
use voxterra_core::nalgebra::{Point3, Unit, Vector3};

/// Below this distance between a capsule's segment and a triangle the closest-point routine has
/// no reliable normal: the segment touches or crosses the triangle, and GJK/EPA takes over.
const SEGMENT_TOUCH: f32 = 1e-4;

/// Contacts of one convex shape with one triangle, appended to `out`, and what stands beside them
/// (a box's routine pushes its points out through a one-sided front itself, and may hand back a
/// point that stands in only if nothing else holds the box).
pub(crate) fn shape_triangle(
    part: &Part<'_>,
    tri: &[Point3<f32>; 3],
    prediction: f32,
    id: FeatureId,
    surface: TriangleRules,
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
    if let Some(hull) = part.shape.as_shape::<ConvexPolyhedron>()
        && crate::hull_triangle::hull_triangle(hull, &part.iso, tri, prediction, id, out)
    {
        return Ok(());
    }
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
pub(crate) fn deepest_under(
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
pub(crate) fn front_side(
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
