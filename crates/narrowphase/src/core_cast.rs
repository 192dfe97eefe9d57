//! Exact linear casts of a ball or a capsule against a triangle: the shape is a *core* (its
//! center, or its segment) grown by a radius, so its first touch of the triangle is the first time
//! the moving core comes within the radius of it. That time is the earliest over the feature
//! pairs — core end and face, core end and edge line (a cylinder), core end and vertex (a
//! sphere), core segment and edge line, vertex and core segment — each checked to land on both
//! features, all closed-form. PERF: parry's GJK cast per triangle was most of a cast.

use crate::closest::{point_triangle, segment_triangle};
use crate::contact::{FeatureId, TriangleFeature};
use crate::cuboid_triangle::cuboid_triangle;
use crate::internal_edges::ALL_ACTIVE;
use crate::triangle_set::TriangleRules;
use voxterra_core::nalgebra::{Isometry3, Point3, Translation3, Unit, Vector3};

/// Where a moving core first comes within its radius of a triangle.
pub(crate) struct CoreHit {
    pub(crate) toi: f32,
    /// The core's point nearest the triangle then (for a box: its touching point).
    pub(crate) on_core: Point3<f32>,
    /// The triangle's point nearest it.
    pub(crate) on_triangle: Point3<f32>,
    /// Unit normal from the triangle toward the core.
    pub(crate) normal: Unit<Vector3<f32>>,
}

/// What [`cast_core`] found.
pub(crate) enum CoreCast {
    /// The first touch in `[0, max_toi]`.
    Hit(CoreHit),
    /// No touch in `[0, max_toi]`.
    Miss,
    /// The core starts within its radius of the triangle, or the case is degenerate: the caller
    /// uses the general routine (its rules for starting in contact).
    Undecided,
}

/// The first time in `[0, max_toi]` that the segment `a–b` (a point when `a == b`), moving by
/// `vel` per unit time, comes within `radius` of triangle `tri` (not degenerate).
pub(crate) fn cast_core(
    a: &Point3<f32>,
    b: &Point3<f32>,
    radius: f32,
    vel: &Vector3<f32>,
    tri: &[Point3<f32>; 3],
    max_toi: f32,
) -> CoreCast {
    if radius.is_nan() || radius <= 0.0 || vel.norm_squared() == 0.0 {
        return CoreCast::Undecided;
    }
    let Some(n) = Unit::try_new((tri[1] - tri[0]).cross(&(tri[2] - tri[0])), 1e-20) else {
        return CoreCast::Undecided;
    };
    // Starting in touch, or so near that the closed forms lose their precision. PERF: a core
    // whole on one side of the plane, farther than that, is farther from the triangle too.
    let near = radius * (1.0 + 1e-4);
    let (da, db) = ((a - tri[0]).dot(&n), (b - tri[0]).dot(&n));
    if !(da.min(db) > near || da.max(db) < -near) {
        let (on_seg, on_tri) = if a == b {
            (*a, point_triangle(a, tri).0)
        } else {
            let (s, t, _) = segment_triangle(a, b, tri);
            (s, t)
        };
        if (on_seg - on_tri).norm() <= near {
            return CoreCast::Undecided;
        }
    }
    let mut best: Option<(f32, Point3<f32>, Point3<f32>)> = None;
    let mut consider = |t: f32, on_core: Point3<f32>, on_triangle: Point3<f32>| {
        if t.is_finite() && t >= 0.0 && t <= max_toi && best.is_none_or(|b| t < b.0) {
            best = Some((t, on_core, on_triangle));
        }
    };
    let segment = a != b;
    let ends: &[Point3<f32>] = if segment { &[*a, *b] } else { &[*a] };
    for &p in ends {
        // The face: the point reaches the plane's offset inside the triangle.
        let d = (p - tri[0]).dot(&n);
        if d.abs() > radius {
            let side = d.signum();
            let approach = -side * vel.dot(&n);
            if approach > 0.0 {
                let t = (d.abs() - radius) / approach;
                let x = p + vel * t;
                let foot = x - n.into_inner() * (side * radius);
                if inside(&foot, tri, &n) {
                    consider(t, x, foot);
                }
            }
        }
        for i in 0..3 {
            let (e0, e1) = (tri[i], tri[(i + 1) % 3]);
            // The edge: a cylinder around its line, entered between its ends.
            if let Some((t, u)) = ray_cylinder(&(p - e0), vel, &(e1 - e0), radius)
                && (0.0..=1.0).contains(&u)
            {
                consider(t, p + vel * t, e0 + (e1 - e0) * u);
            }
            // The vertex: a sphere.
            if let Some(t) = ray_sphere(&(p - e0), vel, radius) {
                consider(t, p + vel * t, e0);
            }
        }
    }
    if segment {
        let axis = b - a;
        for i in 0..3 {
            let (e0, e1) = (tri[i], tri[(i + 1) % 3]);
            let edge = e1 - e0;
            // The core's inside and an edge's inside: the lines' distance along their common
            // normal reaches the radius where both closest points lie inside.
            let m = axis.cross(&edge);
            let m2 = m.norm_squared();
            if m2 > 1e-10 * axis.norm_squared() * edge.norm_squared() {
                let m = m / m2.sqrt();
                let d = (a - e0).dot(&m);
                let approach = -d.signum() * vel.dot(&m);
                if d.abs() > radius && approach > 0.0 {
                    let t = (d.abs() - radius) / approach;
                    let at = a + vel * t;
                    if let Some((s, u)) = line_params(&at, &axis, &e0, &edge)
                        && (0.0..=1.0).contains(&s)
                        && (0.0..=1.0).contains(&u)
                    {
                        consider(t, at + axis * s, e0 + edge * u);
                    }
                }
            }
            // A vertex and the core's inside: the vertex, moving the other way, enters the
            // cylinder around the core.
            if let Some((t, s)) = ray_cylinder(&(e0 - a), &-vel, &axis, radius)
                && (0.0..=1.0).contains(&s)
            {
                consider(t, a + vel * t + axis * s, e0);
            }
        }
    }
    let Some((toi, on_core, on_triangle)) = best else { return CoreCast::Miss };
    match Unit::try_new(on_core - on_triangle, radius * 1e-3) {
        Some(normal) => CoreCast::Hit(CoreHit { toi, on_core, on_triangle, normal }),
        None => CoreCast::Undecided,
    }
}

/// When a point at `w` from a sphere's center, moving by `v`, enters the sphere of radius `r`
/// (`None`: it starts inside, moves away or misses).
fn ray_sphere(w: &Vector3<f32>, v: &Vector3<f32>, r: f32) -> Option<f32> {
    let (a, b, c) = (v.norm_squared(), w.dot(v), w.norm_squared() - r * r);
    if c <= 0.0 || b >= 0.0 || a == 0.0 {
        return None;
    }
    let disc = b * b - a * c;
    // The nearer root, in the form without cancellation: c / (−b + √disc).
    (disc >= 0.0).then(|| c / (-b + disc.sqrt()))
}

/// When a point at `w` from `e0`, moving by `v`, enters the cylinder of radius `r` around the line
/// through `e0` along `e`, and where along `e` (as a fraction of it) it enters.
fn ray_cylinder(w: &Vector3<f32>, v: &Vector3<f32>, e: &Vector3<f32>, r: f32) -> Option<(f32, f32)> {
    let e2 = e.norm_squared();
    if e2 == 0.0 {
        return None;
    }
    let w_perp = w - e * (w.dot(e) / e2);
    let v_perp = v - e * (v.dot(e) / e2);
    let t = ray_sphere(&w_perp, &v_perp, r)?;
    Some((t, (w + v * t).dot(e) / e2))
}

/// The closest points' parameters of the lines `p + s·d` and `q + u·e` (not parallel).
fn line_params(p: &Point3<f32>, d: &Vector3<f32>, q: &Point3<f32>, e: &Vector3<f32>) -> Option<(f32, f32)> {
    let r = p - q;
    let (a, b, c, ee, f) = (d.norm_squared(), d.dot(e), d.dot(&r), e.norm_squared(), e.dot(&r));
    let denom = a * ee - b * b;
    if denom.is_nan() || denom <= 0.0 {
        return None;
    }
    Some(((b * f - c * ee) / denom, (a * f - b * c) / denom))
}

/// Whether `p`, on the plane of `tri` (normal `n`), lies inside it or on its border.
fn inside(p: &Point3<f32>, tri: &[Point3<f32>; 3], n: &Unit<Vector3<f32>>) -> bool {
    (0..3).all(|i| (tri[(i + 1) % 3] - tri[i]).cross(&(p - tri[i])).dot(n) >= 0.0)
}

/// The first time in `[0, max_toi]` that a box of half extents `half` at `pose`, moving by `vel`
/// per unit time, touches triangle `tri`: the separating axes (the triangle's normal, the box's
/// three, their nine edge crosses) all stop separating at the latest of their entry times, if that
/// comes before the earliest exit. The touching points then come from the box–triangle contact
/// routine at that pose.
pub(crate) fn cast_cuboid(
    half: &Vector3<f32>,
    pose: &Isometry3<f32>,
    vel: &Vector3<f32>,
    tri: &[Point3<f32>; 3],
    max_toi: f32,
) -> CoreCast {
    let Some(n) = Unit::try_new((tri[1] - tri[0]).cross(&(tri[2] - tri[0])), 1e-20) else {
        return CoreCast::Undecided;
    };
    let c = pose.translation.vector;
    let u = [0, 1, 2].map(|i| pose.rotation * Vector3::ith(i, 1.0));
    let h = [half.x, half.y, half.z];
    let edges = [tri[1] - tri[0], tri[2] - tri[1], tri[0] - tri[2]];
    let (mut enter, mut exit) = (f32::NEG_INFINITY, f32::INFINITY);
    let mut axes = [Vector3::zeros(); 13];
    axes[0] = n.into_inner();
    axes[1..4].copy_from_slice(&u);
    for i in 0..3 {
        for j in 0..3 {
            axes[4 + 3 * i + j] = u[i].cross(&edges[j]);
        }
    }
    let scale = edges.iter().map(|e| e.norm_squared()).fold(1.0f32, f32::max);
    for d in &axes {
        // Crosses of (nearly) parallel directions tell nothing.
        if d.norm_squared() <= 1e-10 * scale {
            continue;
        }
        let rb: f32 = (0..3).map(|i| h[i] * u[i].dot(d).abs()).sum();
        let cb = c.dot(d);
        let p = tri.map(|v| v.coords.dot(d));
        let (tmin, tmax) = (p[0].min(p[1]).min(p[2]), p[0].max(p[1]).max(p[2]));
        let v = vel.dot(d);
        if v == 0.0 {
            if cb + rb < tmin || cb - rb > tmax {
                return CoreCast::Miss;
            }
            continue;
        }
        let (t1, t2) = ((tmin - cb - rb) / v, (tmax - cb + rb) / v);
        enter = enter.max(t1.min(t2));
        exit = exit.min(t1.max(t2));
    }
    if !(enter.is_finite() && exit.is_finite()) || enter > exit || exit < 0.0 || enter > max_toi {
        return if enter > 0.0 || exit < 0.0 { CoreCast::Miss } else { CoreCast::Undecided };
    }
    // Overlapping (or touching) already: the caller's rules for starting in contact.
    if enter <= 0.0 {
        return CoreCast::Undecided;
    }
    let at = Isometry3::from_parts(Translation3::from(c + vel * enter), pose.rotation);
    let mut touching = Vec::new();
    let id = FeatureId { triangle: 0, feature: TriangleFeature::Face, part: 0, sub: 0 };
    let surface = TriangleRules { flags: ALL_ACTIVE, one_sided: false };
    let reach = 1e-3 * (1.0 + h.iter().fold(0.0f32, |a, &b| a.max(b)));
    cuboid_triangle(half, &at, tri, reach, id, surface, &mut touching);
    match touching.iter().min_by(|a, b| a.dist.total_cmp(&b.dist)) {
        Some(p) => CoreCast::Hit(CoreHit {
            toi: enter,
            on_core: p.on_shape,
            on_triangle: p.on_triangle,
            normal: p.normal,
        }),
        None => CoreCast::Undecided,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The brute-force reference: the core's distance to the triangle sampled finely along the
    /// motion, then bisected where it first drops within the radius.
    fn reference(
        a: &Point3<f32>,
        b: &Point3<f32>,
        r: f32,
        v: &Vector3<f32>,
        tri: &[Point3<f32>; 3],
        max: f32,
    ) -> Option<f32> {
        first_touch(
            |t| {
                let (s, q, _) = segment_triangle(&(a + v * t), &(b + v * t), tri);
                (s - q).norm() - r
            },
            max,
            4000,
        )
    }

    /// The first time in `[0, max]` that `dist` drops to zero: sampled in `steps`, then bisected.
    fn first_touch(dist: impl Fn(f32) -> f32, max: f32, steps: u32) -> Option<f32> {
        let mut prev = 0.0f32;
        for i in 1..=steps {
            let t = max * i as f32 / steps as f32;
            if dist(t) <= 0.0 {
                let (mut lo, mut hi) = (prev, t);
                for _ in 0..40 {
                    let mid = 0.5 * (lo + hi);
                    if dist(mid) <= 0.0 { hi = mid } else { lo = mid }
                }
                return Some(hi);
            }
            prev = t;
        }
        None
    }

    /// A point near the triangle, by weights of its corners (on a vertex, an edge, the face or just
    /// past them): where the tests aim their casts.
    fn aimed_at(tri: &[Point3<f32>; 3], aim: [f32; 3]) -> Point3<f32> {
        let w = Vector3::from(aim) / (aim[0] + aim[1] + aim[2]).abs().max(0.3);
        Point3::from(tri[0].coords * w.x + tri[1].coords * w.y + tri[2].coords * w.z)
    }

    fn point() -> impl Strategy<Value = Point3<f32>> {
        proptest::array::uniform3(-3.0f32..3.0).prop_map(Point3::from)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        /// Balls and capsules cast at random triangles hit when and where the sampled distance
        /// says.
        #[test]
        fn casts_match_the_sampled_distance(
            t0 in point(), t1 in point(), t2 in point(),
            start in proptest::array::uniform3(-6.0f32..6.0),
            axis in proptest::array::uniform3(-1.5f32..1.5),
            ball in any::<bool>(),
            r in 0.1f32..1.0,
            aim in proptest::array::uniform3(-0.3f32..1.3),
            time in 0.3f32..2.5,
        ) {
            let tri = [t0, t1, t2];
            prop_assume!((tri[1] - tri[0]).cross(&(tri[2] - tri[0])).norm() > 0.05);
            let a = Point3::from(start);
            let b = if ball { a } else { a + Vector3::from(axis) };
            // Aimed near the triangle (its vertices, edges, face or just past them), arriving
            // around the end of the cast.
            let target = aimed_at(&tri, aim);
            let v = (target - a) / time;
            let max = 2.0;
            let want = reference(&a, &b, r, &v, &tri, max);
            match cast_core(&a, &b, r, &v, &tri, max) {
                CoreCast::Hit(h) => {
                    // A graze (in touch for an instant) slips between the samples: then the core
                    // is within a hair of the triangle at our time.
                    let (s, q, _) = segment_triangle(&(a + v * h.toi), &(b + v * h.toi), &tri);
                    let grazed = want.is_none_or(|w| w > h.toi) && (s - q).norm() - r < 1e-3;
                    let w = want.unwrap_or(f32::NAN);
                    prop_assert!(grazed || (h.toi - w).abs() < 2e-3, "toi {} want {:?}", h.toi, want);
                    // The points are the closest pair then, the radius apart.
                    let (s, q, _) = segment_triangle(&(a + v * h.toi), &(b + v * h.toi), &tri);
                    prop_assert!(((s - q).norm() - r).abs() < 1e-3);
                    prop_assert!(((h.on_core - h.on_triangle).norm() - r).abs() < 1e-3);
                }
                CoreCast::Miss => prop_assert!(want.is_none_or(|w| w > max - 2e-3), "missed {:?}", want),
                CoreCast::Undecided => {
                    let (s, q, _) = segment_triangle(&a, &b, &tri);
                    prop_assert!((s - q).norm() <= r * 1.001, "undecided apart");
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Boxes cast at random triangles touch when parry's distance, sampled along the motion,
        /// first reaches zero, at points that touch.
        #[test]
        fn box_casts_match_the_sampled_distance(
            t0 in point(), t1 in point(), t2 in point(),
            start in proptest::array::uniform3(-6.0f32..6.0),
            half in proptest::array::uniform3(0.1f32..1.2),
            angles in proptest::array::uniform3(-3.2f32..3.2),
            aim in proptest::array::uniform3(-0.3f32..1.3),
            time in 0.3f32..2.5,
        ) {
            use crate::convert::ToParry;
            let tri = [t0, t1, t2];
            prop_assume!((tri[1] - tri[0]).cross(&(tri[2] - tri[0])).norm() > 0.05);
            let half = Vector3::from(half);
            let rot = voxterra_core::nalgebra::UnitQuaternion::from_euler_angles(angles[0], angles[1], angles[2]);
            let pose = Isometry3::from_parts(Translation3::from(Vector3::from(start)), rot);
            let target = aimed_at(&tri, aim);
            let v = (target - Point3::from(pose.translation.vector)) / time;
            let cuboid = parry3d::shape::Cuboid::new(half.to_parry());
            let triangle = parry3d::shape::Triangle::new(tri[0].to_parry(), tri[1].to_parry(), tri[2].to_parry());
            let dist = |t: f32| {
                let at = Isometry3::from_parts(Translation3::from(pose.translation.vector + v * t), rot);
                parry3d::query::distance(&at.to_parry(), &cuboid, &parry3d::math::Pose::IDENTITY, &triangle).map_or(0.0, |d| d.distance)
            };
            let max = 2.0;
            // Starting within a hair, the box touches at once.
            let want = if dist(0.0) > 1e-3 { first_touch(dist, max, 2000) } else { Some(0.0) };
            match cast_cuboid(&half, &pose, &v, &tri, max) {
                CoreCast::Hit(h) => {
                    // A graze (in touch for an instant) slips between the samples, and a shallow
                    // approach stretches a hair of parry's distance (noisy near zero) into a long
                    // time: then the box is within a hair of the triangle from our time to its.
                    let (lo, hi) = (h.toi.min(want.unwrap_or(h.toi)), h.toi.max(want.unwrap_or(h.toi)));
                    let near = (0..=20).all(|k| dist(lo + (hi - lo) * k as f32 / 20.0) < 1e-3);
                    let w = want.unwrap_or(f32::NAN);
                    prop_assert!(near || (h.toi - w).abs() < 2e-3, "toi {} want {:?}", h.toi, want);
                    // Apart by no more than the contact's bias toward face axes allows.
                    let bias = crate::cuboid_triangle::EDGE_BIAS * (1.0 + half.max());
                    prop_assert!((h.on_core - h.on_triangle).norm() < bias + 1e-4);
                }
                CoreCast::Miss => {
                    // Starting within a hair but leaving, the box never touches.
                    let leaves = want == Some(0.0) && first_touch(dist, max, 2000).is_none();
                    prop_assert!(leaves || want.is_none_or(|w| w > max - 2e-3), "missed {:?}", want);
                }
                CoreCast::Undecided => prop_assert!(dist(0.0) < 1e-2, "undecided apart: {}", dist(0.0)),
            }
        }
    }
}
