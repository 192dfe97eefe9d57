//! Float geometry: axis-aligned boxes, rays, and the ray–triangle test every triangle index shares.

use crate::CoreError;
use nalgebra::{Point3, Vector3};

/// An axis-aligned box in world units, closed: `[mins, maxs]`.
///
/// Fields are public like parry's; a box built by hand may be invalid (NaN, `mins > maxs`). The
/// documented result for such a box: [`Aabb::intersects`] and [`Aabb::contains_point`] are false
/// (every comparison with NaN is false; an inverted box overlaps nothing). Use [`Aabb::try_new`] to
/// reject them at the edge.
#[derive(Clone, Copy, PartialEq, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Aabb {
    /// Minimum corner.
    pub mins: Point3<f32>,
    /// Maximum corner.
    pub maxs: Point3<f32>,
}

impl Aabb {
    /// A box from its corners, unchecked.
    #[inline]
    pub const fn new(mins: Point3<f32>, maxs: Point3<f32>) -> Self {
        Aabb { mins, maxs }
    }

    /// A box from its corners, or [`CoreError::InvalidAabb`] for NaN, infinities, or `mins > maxs`.
    pub fn try_new(mins: Point3<f32>, maxs: Point3<f32>) -> Result<Self, CoreError> {
        let b = Aabb { mins, maxs };
        if b.is_valid() { Ok(b) } else { Err(CoreError::InvalidAabb(format!("{mins:?}..{maxs:?}"))) }
    }

    /// The smallest box holding every point, `None` for no points.
    pub fn from_points<'a>(points: impl IntoIterator<Item = &'a Point3<f32>>) -> Option<Self> {
        let mut it = points.into_iter();
        let first = *it.next()?;
        Some(it.fold(Aabb::new(first, first), |b, p| Aabb::new(b.mins.inf(p), b.maxs.sup(p))))
    }

    /// Finite corners with `mins <= maxs` on every axis.
    pub fn is_valid(&self) -> bool {
        (0..3).all(|i| self.mins[i].is_finite() && self.maxs[i].is_finite() && self.mins[i] <= self.maxs[i])
    }

    /// True when the closed boxes share a point.
    #[inline]
    pub fn intersects(&self, other: &Aabb) -> bool {
        self.mins.x <= other.maxs.x
            && other.mins.x <= self.maxs.x
            && self.mins.y <= other.maxs.y
            && other.mins.y <= self.maxs.y
            && self.mins.z <= other.maxs.z
            && other.mins.z <= self.maxs.z
    }

    /// True when `other` lies inside this box.
    #[inline]
    pub fn contains(&self, other: &Aabb) -> bool {
        (0..3).all(|i| self.mins[i] <= other.mins[i] && other.maxs[i] <= self.maxs[i])
    }

    /// True when `p` lies in the closed box.
    #[inline]
    pub fn contains_point(&self, p: &Point3<f32>) -> bool {
        (0..3).all(|i| self.mins[i] <= p[i] && p[i] <= self.maxs[i])
    }

    /// The smallest box holding both.
    #[inline]
    pub fn merged(&self, other: &Aabb) -> Aabb {
        Aabb::new(self.mins.inf(&other.mins), self.maxs.sup(&other.maxs))
    }

    /// Grown by `margin` on every side.
    #[inline]
    pub fn loosened(&self, margin: f32) -> Aabb {
        let m = Vector3::repeat(margin);
        Aabb::new(self.mins - m, self.maxs + m)
    }

    /// `maxs - mins`.
    #[inline]
    pub fn extents(&self) -> Vector3<f32> {
        self.maxs - self.mins
    }

    /// The centre point.
    #[inline]
    pub fn center(&self) -> Point3<f32> {
        nalgebra::center(&self.mins, &self.maxs)
    }

    /// Surface area (the SAH cost of a node).
    #[inline]
    pub fn surface_area(&self) -> f32 {
        let e = self.extents();
        2.0 * (e.x * e.y + e.y * e.z + e.z * e.x)
    }

    /// Volume.
    #[inline]
    pub fn volume(&self) -> f32 {
        let e = self.extents();
        e.x * e.y * e.z
    }

    /// The parameter interval `[t0, t1]` of `ray` inside this box, clipped to `[0, max_t]`, or `None`.
    /// Slab test; axis-parallel rays work (infinite reciprocals).
    pub fn clip_ray(&self, ray: &Ray, max_t: f32) -> Option<(f32, f32)> {
        self.clip_ray_inv(&ray.origin, &ray.dir.map(|d| 1.0 / d), max_t)
    }

    /// [`Aabb::clip_ray`] with the ray given as its origin and the reciprocal of its direction, for
    /// callers that already computed it (ray traversals do, once per ray).
    #[inline]
    pub fn clip_ray_inv(
        &self,
        origin: &Point3<f32>,
        inv_dir: &Vector3<f32>,
        max_t: f32,
    ) -> Option<(f32, f32)> {
        let (mut t0, mut t1) = (0.0f32, max_t);
        for i in 0..3 {
            let (mut a, mut b) =
                ((self.mins[i] - origin[i]) * inv_dir[i], (self.maxs[i] - origin[i]) * inv_dir[i]);
            if a > b {
                std::mem::swap(&mut a, &mut b);
            }
            // NaN (origin on a slab plane of a parallel ray) keeps the current bound: max/min skip NaN.
            t0 = t0.max(a);
            t1 = t1.min(b);
            if t0 > t1 {
                return None;
            }
        }
        Some((t0, t1))
    }
}

/// A ray `origin + t * dir`, `t >= 0`. The direction need not be unit length; `t` is in its units.
#[derive(Clone, Copy, PartialEq, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct Ray {
    /// Where it starts.
    pub origin: Point3<f32>,
    /// Where it goes.
    pub dir: Vector3<f32>,
}

impl Ray {
    /// A ray, unchecked.
    #[inline]
    pub const fn new(origin: Point3<f32>, dir: Vector3<f32>) -> Self {
        Ray { origin, dir }
    }

    /// A ray, or [`CoreError::InvalidRay`] for non-finite components or a zero direction.
    pub fn try_new(origin: Point3<f32>, dir: Vector3<f32>) -> Result<Self, CoreError> {
        let finite = origin.iter().chain(dir.iter()).all(|v| v.is_finite());
        if !finite || dir == Vector3::zeros() {
            return Err(CoreError::InvalidRay(format!("origin {origin:?}, dir {dir:?}")));
        }
        Ok(Ray { origin, dir })
    }

    /// The point at parameter `t`.
    #[inline]
    pub fn point_at(&self, t: f32) -> Point3<f32> {
        self.origin + self.dir * t
    }
}

/// Whether a ray test counts hits on a triangle's back (clockwise-seen) face.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Culling {
    /// Triangles are double-sided.
    #[default]
    None,
    /// Only faces whose counter-clockwise side faces the ray count.
    BackFaces,
}

/// A ray hit on a triangle: parameter, triangle index and barycentrics (`p = (1-u-v)a + u b + v c`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct RayHit {
    /// Ray parameter of the hit.
    pub t: f32,
    /// Index of the triangle hit.
    pub triangle: u32,
    /// Barycentric weight of the second vertex.
    pub u: f32,
    /// Barycentric weight of the third vertex.
    pub v: f32,
}

/// Ray against triangle `[a, b, c]` (Möller–Trumbore), hits with `t` in `[0, max_t]`.
///
/// Edges and vertices count as inside (a ray through an edge shared by two triangles hits both),
/// so a closed mesh has no cracks. Degenerate triangles and rays parallel to the plane miss.
/// Returns `(t, u, v)`.
#[inline]
pub fn ray_triangle(
    ray: &Ray,
    tri: &[Point3<f32>; 3],
    max_t: f32,
    culling: Culling,
) -> Option<(f32, f32, f32)> {
    let e1 = tri[1] - tri[0];
    let e2 = tri[2] - tri[0];
    let p = ray.dir.cross(&e2);
    let det = e1.dot(&p);
    // det > 0: the ray sees the counter-clockwise (front) side.
    let accept = match culling {
        Culling::None => det != 0.0,
        Culling::BackFaces => det > 0.0,
    };
    if !accept || !det.is_finite() {
        return None;
    }
    let inv = 1.0 / det;
    let s = ray.origin - tri[0];
    let u = s.dot(&p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(&e1);
    let v = ray.dir.dot(&q) * inv;
    if !(v >= 0.0 && u + v <= 1.0) {
        return None;
    }
    let t = e2.dot(&q) * inv;
    (t >= 0.0 && t <= max_t).then_some((t, u, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_edge_hits_both() {
        let a = [Point3::new(0.0, 0.0, 0.0), Point3::new(1.0, 0.0, 0.0), Point3::new(0.0, 0.0, 1.0)];
        let b = [Point3::new(1.0, 0.0, 0.0), Point3::new(1.0, 0.0, 1.0), Point3::new(0.0, 0.0, 1.0)];
        let ray = Ray::new(Point3::new(0.5, 1.0, 0.5), Vector3::new(0.0, -1.0, 0.0));
        assert!(ray_triangle(&ray, &a, 10.0, Culling::None).is_some());
        assert!(ray_triangle(&ray, &b, 10.0, Culling::None).is_some());
        // a and b are counter-clockwise seen from below (normal -Y): from above they are back faces.
        assert!(ray_triangle(&ray, &a, 10.0, Culling::BackFaces).is_none());
        let (t, _, _) = ray_triangle(&ray, &a, 10.0, Culling::None).unwrap();
        assert_eq!(t, 1.0);
        assert!(ray_triangle(&ray, &a, 0.5, Culling::None).is_none());
    }

    #[test]
    fn invalid_inputs_are_rejected_or_miss() {
        assert!(Aabb::try_new(Point3::new(1.0, 0.0, 0.0), Point3::origin()).is_err());
        assert!(Aabb::try_new(Point3::new(f32::NAN, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0)).is_err());
        let nan = Aabb::new(Point3::new(f32::NAN, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
        let unit = Aabb::new(Point3::origin(), Point3::new(1.0, 1.0, 1.0));
        assert!(!nan.intersects(&unit) && !unit.intersects(&nan));
        assert!(Ray::try_new(Point3::origin(), Vector3::zeros()).is_err());
        let ray = Ray::new(Point3::new(0.5, 2.0, 0.5), Vector3::new(0.0, -1.0, 0.0));
        assert_eq!(unit.clip_ray(&ray, 10.0), Some((1.0, 2.0)));
        let tri = [Point3::origin(), Point3::new(1.0, 0.0, 0.0), Point3::new(2.0, 0.0, 0.0)];
        assert!(ray_triangle(&ray, &tri, 10.0, Culling::None).is_none());
        let nan_ray = Ray::new(Point3::origin(), Vector3::new(f32::NAN, 0.0, 0.0));
        assert!(ray_triangle(&nan_ray, &tri, 10.0, Culling::None).is_none());
    }
}
