//! One convex part of a query's shape ([`Part`]: the shape itself, or one part of a compound)
//! and the checks every query makes of its shape, pose and triangles.

use crate::closest::triangle_normal;
use crate::convert::{FromParry, ToParry};
use crate::error::NarrowphaseError;
use crate::internal_contacts::Core;
use parry3d::math::Pose;
use parry3d::shape::{Shape, SupportMap, TypedShape};
use voxterra_core::nalgebra::{Isometry3, Point3, Vector3};

/// A triangle's three corners.
pub(crate) type Corners = [Point3<f32>; 3];

/// A triangle's unit normal when it can touch anything: finite and not degenerate.
pub(crate) fn touchable(tri: &Corners) -> Option<Vector3<f32>> {
    if !tri.iter().all(|p| p.iter().all(|v| v.is_finite())) {
        return None;
    }
    triangle_normal(tri)
}

/// The query's pose is finite and its prediction distance finite and not negative.
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
