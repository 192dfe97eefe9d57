//! Internal-edge correction: a contact whose normal comes from a triangle edge that is not a real
//! convex crease (flat or concave, *inactive* in the mesh's edge flags), or from a vertex whose
//! two edges on this triangle are inactive, is redone along the face's normal: from the shape's
//! deepest point along it when that lies over the face, else (a shape over a slight convex crease)
//! keeping the contact's distance and turning only its normal. This is what keeps bodies from bumping on seams,
//! including seams between separately built chunk meshes, since the flags see across chunk
//! borders.

use crate::closest::feature_of;
use crate::contact::{ContactPoint, Correction, TriangleFeature};
use crate::part::Part;
use voxterra_core::nalgebra::{Point3, Unit, Vector3};

/// All three edges active: what a triangle without flags is treated as.
pub(crate) const ALL_ACTIVE: u8 = 0b111;

/// True when a contact on `feature` of a triangle with `flags` comes from an inactive edge or
/// vertex.
#[inline]
pub(crate) fn is_inactive(feature: TriangleFeature, flags: u8) -> bool {
    match feature {
        TriangleFeature::Face => false,
        TriangleFeature::Edge(i) => flags & (1 << i) == 0,
        // Vertex i lies on edges i and i − 1 of this triangle.
        TriangleFeature::Vertex(i) => flags & (1 << i) == 0 && flags & (1 << ((i + 2) % 3)) == 0,
    }
}

/// The face normal on the side of `toward` (the contact's old normal).
pub(crate) fn face_side(face: &Vector3<f32>, toward: &Vector3<f32>) -> Unit<Vector3<f32>> {
    Unit::new_unchecked(if face.dot(toward) < 0.0 { -face } else { *face })
}

/// `p` (on the triangle's plane) lies in the closed triangle, within a relative tolerance.
fn in_triangle(p: &Point3<f32>, tri: &[Point3<f32>; 3], n: &Vector3<f32>) -> bool {
    let scale = (tri[1] - tri[0]).norm().max((tri[2] - tri[0]).norm());
    let tol = -1e-5 * scale * scale;
    (0..3).all(|i| (tri[(i + 1) % 3] - tri[i]).cross(&(p - tri[i])).dot(n) >= tol)
}

/// Redoes `p` along the face normal when it sits on an inactive feature (see the module docs).
/// `None`: beyond the prediction distance along the face normal.
pub(crate) fn correct(
    p: ContactPoint,
    part: &Part<'_>,
    tri: &[Point3<f32>; 3],
    face: &Vector3<f32>,
    flags: u8,
    prediction: f32,
) -> Option<ContactPoint> {
    if !is_inactive(p.id.feature, flags) {
        return Some(p);
    }
    along_face(p, part, tri, face, prediction)
}

/// `p` redone along the face's normal (on the side of `p`'s): from the shape's deepest point
/// along it when that lies over the face, else `p` with the face's normal (its distance kept).
/// `None`: beyond the prediction distance along the face normal.
fn along_face(
    p: ContactPoint,
    part: &Part<'_>,
    tri: &[Point3<f32>; 3],
    face: &Vector3<f32>,
    prediction: f32,
) -> Option<ContactPoint> {
    let normal = face_side(face, &p.normal);
    if (normal.dot(&p.normal) - 1.0).abs() < 1e-6 && !matches!(p.id.feature, TriangleFeature::Vertex(_)) {
        return Some(p); // already the face's normal
    }
    let n = normal.into_inner();
    if let Some(deepest) = part.support(&-n) {
        let dist = (deepest - tri[0]).dot(&n);
        let on_tri = deepest - n * dist;
        if in_triangle(&on_tri, tri, face) {
            if dist > prediction {
                return None;
            }
            let feature = feature_of(&on_tri, tri);
            let id = crate::FeatureId { feature, ..p.id };
            return Some(ContactPoint {
                on_shape: deepest,
                on_triangle: on_tri,
                normal,
                dist,
                id,
                correction: Correction::FaceNormal,
            });
        }
    }
    // Over the edge (a slight convex crease, both faces' feet beyond it, or a shape without a
    // support map): the same distance from the same triangle point, along the face normal. Only
    // the normal turns: measuring the witness points along it would bring a shape beside a
    // concave crease nearer than it is.
    Some(ContactPoint {
        on_shape: p.on_triangle + n * p.dist,
        normal,
        correction: Correction::EdgeWitness,
        ..p
    })
}
