//! The one boundary between voxterra's types (nalgebra: points, vectors, rotations, isometries,
//! [`Aabb`], [`Ray`], 3×3 matrices) and parry's and rapier's (glam: `Vec3`, `Quat`, `Pose`, `Mat3`,
//! parry's `Aabb` and `Ray`). Every crate of the workspace converts through it, and nowhere else.
//!
//! - [`ToParry`]: a voxterra value as parry's (`point.to_parry()`, `isometry.to_parry()`).
//! - [`FromParry`]: a voxterra value from parry's, the target named by its type
//!   (`Point3::from_parry(v)`, `Vector3::from_parry(v)`, `Isometry3::from_parry(&pose)`), since one
//!   glam `Vec3` stands for both a point and a vector.
//!
//! Every conversion copies fields, so round trips are bit-exact (NaN payloads included) and cost
//! a few register moves: nothing a contact, ray or cast query can see in its profile.
//!
//! ```
//! use voxterra_core::nalgebra::{Isometry3, Matrix3, Point3, Vector3};
//! use voxterra_narrowphase::convert::{FromParry, ToParry};
//! use voxterra_narrowphase::parry3d::math::{Pose, Vector};
//!
//! let pose = Pose::translation(1.0, 2.0, 3.0);
//! let iso = Isometry3::from_parry(&pose);
//! assert_eq!(iso * Point3::origin(), Point3::new(1.0, 2.0, 3.0));
//! assert_eq!(iso.to_parry(), pose);
//! assert_eq!(Vector3::new(0.0, 1.0, 0.0).to_parry(), Vector::Y);
//! ```

use crate::parry3d::bounding_volume::Aabb as ParryAabb;
use crate::parry3d::math::{Matrix, Pose, Rotation, Vector};
use crate::parry3d::query::Ray as ParryRay;
use voxterra_core::nalgebra::{
    Isometry3, Matrix3, Point3, Quaternion, Translation3, Unit, UnitQuaternion, Vector3,
};
use voxterra_core::{Aabb, Ray};

/// A voxterra (nalgebra) value as parry's (glam) type.
pub trait ToParry {
    /// parry's type for it.
    type Parry;
    /// The value as parry's type.
    fn to_parry(&self) -> Self::Parry;
}

/// A voxterra (nalgebra) value made from parry's (glam) `P`.
pub trait FromParry<P> {
    /// The value of `p` as this type.
    fn from_parry(p: P) -> Self;
}

impl ToParry for Vector3<f32> {
    type Parry = Vector;
    #[inline]
    fn to_parry(&self) -> Vector {
        Vector::new(self.x, self.y, self.z)
    }
}

impl ToParry for Point3<f32> {
    type Parry = Vector;
    #[inline]
    fn to_parry(&self) -> Vector {
        Vector::new(self.x, self.y, self.z)
    }
}

impl ToParry for Unit<Vector3<f32>> {
    type Parry = Vector;
    #[inline]
    fn to_parry(&self) -> Vector {
        Vector::new(self.x, self.y, self.z)
    }
}

impl ToParry for UnitQuaternion<f32> {
    type Parry = Rotation;
    #[inline]
    fn to_parry(&self) -> Rotation {
        let q = self.quaternion();
        Rotation::from_xyzw(q.i, q.j, q.k, q.w)
    }
}

impl ToParry for Isometry3<f32> {
    type Parry = Pose;
    #[inline]
    fn to_parry(&self) -> Pose {
        Pose::from_parts(self.translation.vector.to_parry(), self.rotation.to_parry())
    }
}

impl ToParry for Matrix3<f32> {
    type Parry = Matrix;
    #[inline]
    fn to_parry(&self) -> Matrix {
        let col = |j: usize| Vector::new(self[(0, j)], self[(1, j)], self[(2, j)]);
        Matrix::from_cols(col(0), col(1), col(2))
    }
}

impl ToParry for Aabb {
    type Parry = ParryAabb;
    #[inline]
    fn to_parry(&self) -> ParryAabb {
        ParryAabb::new(self.mins.to_parry(), self.maxs.to_parry())
    }
}

impl ToParry for Ray {
    type Parry = ParryRay;
    #[inline]
    fn to_parry(&self) -> ParryRay {
        ParryRay::new(self.origin.to_parry(), self.dir.to_parry())
    }
}

impl FromParry<Vector> for Vector3<f32> {
    #[inline]
    fn from_parry(v: Vector) -> Self {
        Vector3::new(v.x, v.y, v.z)
    }
}

impl FromParry<Vector> for Point3<f32> {
    #[inline]
    fn from_parry(v: Vector) -> Self {
        Point3::new(v.x, v.y, v.z)
    }
}

impl FromParry<Vector> for Unit<Vector3<f32>> {
    /// Trusts `v` to be unit length, as parry's normals are (no renormalization, so the round
    /// trip stays bit-exact).
    #[inline]
    fn from_parry(v: Vector) -> Self {
        Unit::new_unchecked(Vector3::new(v.x, v.y, v.z))
    }
}

impl FromParry<Rotation> for UnitQuaternion<f32> {
    /// Trusts `q` to be unit length, as a pose's rotation is.
    #[inline]
    fn from_parry(q: Rotation) -> Self {
        UnitQuaternion::new_unchecked(Quaternion::new(q.w, q.x, q.y, q.z))
    }
}

impl FromParry<&Pose> for Isometry3<f32> {
    #[inline]
    fn from_parry(p: &Pose) -> Self {
        Isometry3::from_parts(
            Translation3::new(p.translation.x, p.translation.y, p.translation.z),
            UnitQuaternion::from_parry(p.rotation),
        )
    }
}

impl FromParry<&ParryAabb> for Aabb {
    #[inline]
    fn from_parry(b: &ParryAabb) -> Self {
        Aabb::new(Point3::from_parry(b.mins), Point3::from_parry(b.maxs))
    }
}

impl FromParry<&ParryRay> for Ray {
    #[inline]
    fn from_parry(r: &ParryRay) -> Self {
        Ray::new(Point3::from_parry(r.origin), Vector3::from_parry(r.dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bits(v: &[f32]) -> Vec<u32> {
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// Any f32, NaN payloads and infinities included.
    fn any_f32() -> impl Strategy<Value = f32> {
        any::<u32>().prop_map(f32::from_bits)
    }

    fn three() -> impl Strategy<Value = [f32; 3]> {
        proptest::array::uniform3(any_f32())
    }

    proptest! {
        #[test]
        fn vectors_and_points_round_trip_bit_exact(a in three()) {
            let v = Vector3::from(a);
            let back = Vector3::from_parry(v.to_parry());
            prop_assert_eq!(bits(back.as_slice()), bits(&a));
            let p = Point3::from(a);
            let back = Point3::from_parry(p.to_parry());
            prop_assert_eq!(bits(back.coords.as_slice()), bits(&a));
            let g = Vector::from_array(a);
            prop_assert_eq!(bits(&Vector3::from_parry(g).to_parry().to_array()), bits(&a));
        }

        #[test]
        fn isometries_round_trip_bit_exact(t in three(), q in proptest::array::uniform4(any_f32())) {
            let iso = Isometry3::from_parts(
                Translation3::from(Vector3::from(t)),
                UnitQuaternion::new_unchecked(Quaternion::new(q[0], q[1], q[2], q[3])),
            );
            let back = Isometry3::from_parry(&iso.to_parry());
            prop_assert_eq!(bits(back.translation.vector.as_slice()), bits(&t));
            prop_assert_eq!(bits(back.rotation.coords.as_slice()), bits(iso.rotation.coords.as_slice()));
            let pose = iso.to_parry();
            let again = Isometry3::from_parry(&pose).to_parry();
            prop_assert_eq!(bits(&again.translation.to_array()), bits(&pose.translation.to_array()));
            prop_assert_eq!(bits(&again.rotation.to_array()), bits(&pose.rotation.to_array()));
        }

        #[test]
        fn matrices_keep_rows_and_columns(m in proptest::array::uniform9(any_f32())) {
            let n = Matrix3::from_row_slice(&m);
            let g = n.to_parry();
            for (i, j) in (0..3).flat_map(|i| (0..3).map(move |j| (i, j))) {
                prop_assert_eq!(g.col(j)[i].to_bits(), n[(i, j)].to_bits());
            }
        }

        #[test]
        fn boxes_and_rays_round_trip_bit_exact(a in three(), b in three()) {
            let aabb = Aabb::new(Point3::from(a), Point3::from(b));
            let back = Aabb::from_parry(&aabb.to_parry());
            prop_assert_eq!(bits(back.mins.coords.as_slice()), bits(&a));
            prop_assert_eq!(bits(back.maxs.coords.as_slice()), bits(&b));
            let ray = Ray::new(Point3::from(a), Vector3::from(b));
            let back = Ray::from_parry(&ray.to_parry());
            prop_assert_eq!(bits(back.origin.coords.as_slice()), bits(&a));
            prop_assert_eq!(bits(back.dir.as_slice()), bits(&b));
        }

        /// The same pose moves points alike on both sides: the quaternion's components map to the
        /// right places (nalgebra stores `(i, j, k, w)`, glam `(x, y, z, w)`).
        #[test]
        fn poses_act_alike(
            axis in proptest::array::uniform3(-1.0f32..1.0),
            angle in -3.0f32..3.0,
            t in proptest::array::uniform3(-100.0f32..100.0),
            p in proptest::array::uniform3(-10.0f32..10.0),
        ) {
            let axis = Vector3::from(axis);
            prop_assume!(axis.norm() > 0.1);
            let iso = Isometry3::new(Vector3::from(t), axis.normalize() * angle);
            let pose = iso.to_parry();
            let a = iso * Point3::from(p);
            let b = pose * Vector::from_array(p);
            prop_assert!((a - Point3::from_parry(b)).norm() < 1e-4, "{a} vs {b}");
            let back = Isometry3::from_parry(&pose) * Point3::from(p);
            prop_assert_eq!(bits(back.coords.as_slice()), bits(a.coords.as_slice()));
        }
    }
}
