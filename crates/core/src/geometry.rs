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
        if b.is_valid() {
            Ok(b)
        } else {
            Err(CoreError::InvalidAabb { mins: mins.into(), maxs: maxs.into() })
        }
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

    /// True when the closed boxes share a point. An inverted box (`mins > maxs` on some axis) holds
    /// no point, so it intersects nothing, itself included; neither does a box with a NaN corner.
    #[inline]
    pub fn intersects(&self, other: &Aabb) -> bool {
        // Each axis: the later start is at most the earlier end, written as the four pairwise
        // compares so NaN fails every one (`f32::max` would skip a NaN).
        self.mins.x <= self.maxs.x
            && other.mins.x <= other.maxs.x
            && self.mins.y <= self.maxs.y
            && other.mins.y <= other.maxs.y
            && self.mins.z <= self.maxs.z
            && other.mins.z <= other.maxs.z
            && self.mins.x <= other.maxs.x
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

    /// The box swept by a displacement: this box and the same box moved by `d`, merged (a body's
    /// box over a step is its box swept by its velocity × the step).
    pub fn swept(&self, d: &Vector3<f32>) -> Aabb {
        Aabb { mins: self.mins + d.inf(&Vector3::zeros()), maxs: self.maxs + d.sup(&Vector3::zeros()) }
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

    /// The center point.
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
            let a = (self.mins[i] - origin[i]) * inv_dir[i];
            let b = (self.maxs[i] - origin[i]) * inv_dir[i];
            // Entry and exit by the direction's sign, not by comparing `a` and `b` (a NaN made that
            // comparison pick a side arbitrarily).
            let (near, far) = if inv_dir[i] < 0.0 { (b, a) } else { (a, b) };
            // A NaN (the origin on a face of a parallel ray) keeps the bound. PERF: plain compares,
            // one `maxss`/`minss` each, where `f32::max`/`min` cost five instructions.
            t0 = if near > t0 { near } else { t0 };
            t1 = if far < t1 { far } else { t1 };
        }
        // A NaN `max_t` gives `None`.
        (t0 <= t1).then_some((t0, t1))
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
            return Err(CoreError::InvalidRay { origin: origin.into(), dir: dir.into() });
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

/// How far outside its edges (in barycentric weight) a ray still hits a triangle: a few units in
/// the last place of 1. A ray through an edge shared by two triangles computes the edge's
/// barycentric sum a rounding away from 1 in each, and could otherwise slip between them.
const EDGE_SLACK: f32 = 1e-6;

/// Ray against triangle `[a, b, c]` (Möller–Trumbore), hits with `t` in `[0, max_t]`.
///
/// Edges and vertices count as inside, with [`EDGE_SLACK`] of rounding (a ray through an edge
/// shared by two triangles hits both), so a closed mesh has no cracks. Degenerate triangles and
/// rays parallel to the plane miss. Returns `(t, u, v)`.
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
    if !(-EDGE_SLACK..=1.0 + EDGE_SLACK).contains(&u) {
        return None;
    }
    let q = s.cross(&e1);
    let v = ray.dir.dot(&q) * inv;
    if !(v >= -EDGE_SLACK && u + v <= 1.0 + EDGE_SLACK) {
        return None;
    }
    let t = e2.dot(&q) * inv;
    (t >= 0.0 && t <= max_t).then_some((t, u, v))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ray down the diagonal of a sloped quad, through the edge its two triangles share, where
    /// each triangle computes the edge's barycentric sum one rounding above 1 (found on a
    /// voxel slope whose fall line runs at 45° to the grid).
    #[test]
    fn a_ray_through_a_rounded_shared_edge_hits() {
        let p = |x: f32, y: f32, z: f32| Point3::new(x, y, z);
        let a = [
            p(8.3515625, 36.4209, 7.3515625),
            p(7.685547, 36.59375, 7.685547),
            p(8.010742, 36.30371, 8.010742),
        ];
        let b = [
            p(7.3515625, 36.4209, 8.3515625),
            p(8.010742, 36.30371, 8.010742),
            p(7.685547, 36.59375, 7.685547),
        ];
        let ray = Ray::new(p(7.9, 60.0, 7.9), Vector3::new(0.0, -1.0, 0.0));
        let hits = [a, b].iter().filter(|t| ray_triangle(&ray, t, 100.0, Culling::None).is_some()).count();
        assert!(hits >= 1, "the ray slipped between the two triangles");
    }

    #[test]
    fn a_swept_box_holds_both_ends() {
        let b = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(1.0, 2.0, 1.0));
        let d = Vector3::new(3.0, -1.0, 0.0);
        let s = b.swept(&d);
        assert_eq!(s, Aabb::new(Point3::new(0.0, -1.0, 0.0), Point3::new(4.0, 2.0, 1.0)));
        assert_eq!(s, b.merged(&Aabb::new(b.mins + d, b.maxs + d)));
        assert_eq!(b.swept(&Vector3::zeros()), b);
    }

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
        assert!(matches!(
            Aabb::try_new(Point3::new(1.0, 0.0, 0.0), Point3::origin()),
            Err(CoreError::InvalidAabb { .. })
        ));
        assert!(matches!(
            Aabb::try_new(Point3::new(f32::NAN, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0)),
            Err(CoreError::InvalidAabb { .. })
        ));
        let nan = Aabb::new(Point3::new(f32::NAN, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0));
        let unit = Aabb::new(Point3::origin(), Point3::new(1.0, 1.0, 1.0));
        assert!(!nan.intersects(&unit) && !unit.intersects(&nan));
        // The documented contract: an inverted box overlaps nothing, whichever side it is on.
        let inverted = Aabb::new(Point3::new(5.0, 0.0, 0.0), Point3::new(3.0, 1.0, 1.0));
        let spanning = Aabb::new(Point3::new(2.0, 0.0, 0.0), Point3::new(6.0, 1.0, 1.0));
        assert!(!inverted.intersects(&spanning) && !spanning.intersects(&inverted));
        assert!(!inverted.intersects(&inverted));
        assert!(matches!(
            Ray::try_new(Point3::origin(), Vector3::zeros()),
            Err(CoreError::InvalidRay { .. })
        ));
        let ray = Ray::new(Point3::new(0.5, 2.0, 0.5), Vector3::new(0.0, -1.0, 0.0));
        assert_eq!(unit.clip_ray(&ray, 10.0), Some((1.0, 2.0)));
        let tri = [Point3::origin(), Point3::new(1.0, 0.0, 0.0), Point3::new(2.0, 0.0, 0.0)];
        assert!(ray_triangle(&ray, &tri, 10.0, Culling::None).is_none());
        let nan_ray = Ray::new(Point3::origin(), Vector3::new(f32::NAN, 0.0, 0.0));
        assert!(ray_triangle(&nan_ray, &tri, 10.0, Culling::None).is_none());
        assert_eq!(unit.clip_ray(&ray, f32::NAN), None);
    }

    #[test]
    fn parallel_rays_on_a_face_are_inside_whatever_the_zero_sign() {
        let unit = Aabb::new(Point3::origin(), Point3::new(1.0, 1.0, 1.0));
        for zero in [0.0f32, -0.0] {
            for x in [0.0f32, 0.5, 1.0] {
                let ray = Ray::new(Point3::new(x, 2.0, 0.0), Vector3::new(zero, -1.0, zero));
                assert_eq!(unit.clip_ray(&ray, 10.0), Some((1.0, 2.0)), "x {x}, zero {zero}");
            }
            let outside = Ray::new(Point3::new(1.5, 2.0, 0.5), Vector3::new(zero, -1.0, zero));
            assert_eq!(unit.clip_ray(&outside, 10.0), None);
        }
    }

    proptest::proptest! {
        /// The slab test against the same intervals in f64.
        #[test]
        fn clips_match_an_f64_slab_test(
            lo in proptest::array::uniform3(-10.0f32..10.0), size in proptest::array::uniform3(0.1f32..5.0),
            o in proptest::array::uniform3(-20.0f32..20.0), d in proptest::array::uniform3(-1.0f32..1.0),
            max_t in 0.0f32..100.0,
        ) {
            proptest::prop_assume!(d.iter().all(|v| v.abs() > 1e-3));
            let b = Aabb::new(Point3::from(lo), Point3::from([0, 1, 2].map(|a| lo[a] + size[a])));
            let ray = Ray::new(Point3::from(o), Vector3::from(d));
            let (mut t0, mut t1) = (0.0f64, max_t as f64);
            for a in 0..3 {
                let (p, q) = ((b.mins[a] as f64 - o[a] as f64) / d[a] as f64, (b.maxs[a] as f64 - o[a] as f64) / d[a] as f64);
                t0 = t0.max(p.min(q));
                t1 = t1.min(p.max(q));
            }
            match b.clip_ray(&ray, max_t) {
                Some((a, c)) => {
                    proptest::prop_assert!(t0 <= t1 + 1e-3, "{:?} vs {}..{}", (a, c), t0, t1);
                    proptest::prop_assert!((a as f64 - t0).abs() < 1e-3 && (c as f64 - t1).abs() < 1e-3);
                }
                None => proptest::prop_assert!(t0 > t1 - 1e-3, "missed {}..{}", t0, t1),
            }
        }
    }
}
