//! Oriented bounding boxes and their separating axis test.

use voxterra_core::Aabb;
use voxterra_core::nalgebra::{Isometry3, Matrix3, Point3, Vector3};

/// An oriented box: a center, three unit axes (the columns of `axes`, right-handed) and the half
/// extent along each.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Obb {
    /// The box's center.
    pub center: Point3<f32>,
    /// Unit axes as columns.
    pub axes: Matrix3<f32>,
    /// Half extents along the axes.
    pub half: Vector3<f32>,
}

impl Obb {
    /// The box `local` (in a body's space) placed by `pose`: the article's construction, a model
    /// transform applied to an axis-aligned box.
    pub fn from_aabb(local: &Aabb, pose: &Isometry3<f32>) -> Self {
        let center = pose * voxterra_core::nalgebra::center(&local.mins, &local.maxs);
        Obb { center, axes: pose.rotation.to_rotation_matrix().into_inner(), half: local.extents() * 0.5 }
    }

    /// True when the boxes overlap (touching counts), by the separating axis theorem over the 15
    /// axes: 3 face normals of each box and the 9 cross products of their edges. Edge pairs that
    /// are parallel have no cross product; the absolute rotation terms carry a small epsilon
    /// instead (Gottschalk's form), so such pairs never separate wrongly and the face axes decide,
    /// rather than answering `false` as a naive normalized-cross-product loop would.
    pub fn intersects(&self, other: &Obb) -> bool {
        // Rotation of `other` in this box's frame, and the translation in this box's frame.
        let r = self.axes.transpose() * other.axes;
        let t = self.axes.transpose() * (other.center - self.center);
        sat15(&r, &r.map(|v| v.abs() + 1e-6), &t, &self.half, &other.half)
    }
}

/// The 15-axis test of a box of half extents `ha` (in its own frame) against one of half extents
/// `hb` rotated by `r` and centered at `t` in that frame; `abs_r` is `|r|` plus a small epsilon,
/// which keeps parallel edge pairs (whose cross product vanishes) from separating wrongly.
pub(crate) fn sat15(
    r: &Matrix3<f32>,
    abs_r: &Matrix3<f32>,
    t: &Vector3<f32>,
    ha: &Vector3<f32>,
    hb: &Vector3<f32>,
) -> bool {
    for i in 0..3 {
        let rb = hb[0] * abs_r[(i, 0)] + hb[1] * abs_r[(i, 1)] + hb[2] * abs_r[(i, 2)];
        if t[i].abs() > ha[i] + rb {
            return false;
        }
    }
    for j in 0..3 {
        let ra = ha[0] * abs_r[(0, j)] + ha[1] * abs_r[(1, j)] + ha[2] * abs_r[(2, j)];
        let tj = t[0] * r[(0, j)] + t[1] * r[(1, j)] + t[2] * r[(2, j)];
        if tj.abs() > ra + hb[j] {
            return false;
        }
    }
    // Axis i of the first box × axis j of the second.
    for i in 0..3 {
        let (i1, i2) = ((i + 1) % 3, (i + 2) % 3);
        for j in 0..3 {
            let (j1, j2) = ((j + 1) % 3, (j + 2) % 3);
            let ra = ha[i1] * abs_r[(i2, j)] + ha[i2] * abs_r[(i1, j)];
            let rb = hb[j1] * abs_r[(i, j2)] + hb[j2] * abs_r[(i, j1)];
            let tl = t[i2] * r[(i1, j)] - t[i1] * r[(i2, j)];
            if tl.abs() > ra + rb {
                return false;
            }
        }
    }
    true
}

/// A bounding sphere: the first, cheapest pass.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct BoundingSphere {
    /// Center.
    pub center: Point3<f32>,
    /// Radius.
    pub radius: f32,
}

impl BoundingSphere {
    /// True when the spheres overlap (touching counts).
    #[inline]
    pub fn intersects(&self, other: &BoundingSphere) -> bool {
        let r = self.radius + other.radius;
        (self.center - other.center).norm_squared() <= r * r
    }
}
