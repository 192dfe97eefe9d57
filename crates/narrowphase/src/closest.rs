//! Closest points between points, segments and triangles, with the triangle feature they land on.

use crate::contact::TriangleFeature;
use crate::convert::{FromParry, ToParry};
use parry3d::query::PointQueryWithLocation;
use parry3d::shape::{Triangle, TrianglePointLocation};
use voxterra_core::nalgebra::{Point3, Vector3};

/// The point of triangle `tri` closest to `p`, and the feature it lies on (edges numbered as
/// parry numbers them: 0 from corner 0 to 1, 1 from 1 to 2, 2 from 2 to 0). By Voronoi regions
/// (Ericson, Real-Time Collision Detection 5.1.5). PERF: parry's projection, which also guards
/// near-degenerate triangles, was a tenth of a contact query; triangles here are never degenerate
/// (callers skip those), and parry's stays the reference in the tests.
#[inline]
pub(crate) fn point_triangle(p: &Point3<f32>, tri: &[Point3<f32>; 3]) -> (Point3<f32>, TriangleFeature) {
    let [a, b, c] = *tri;
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(&ap), ac.dot(&ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (a, TriangleFeature::Vertex(0));
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(&bp), ac.dot(&bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (b, TriangleFeature::Vertex(1));
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return (a + ab * (d1 / (d1 - d3)), TriangleFeature::Edge(0));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(&cp), ac.dot(&cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (c, TriangleFeature::Vertex(2));
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return (a + ac * (d2 / (d2 - d6)), TriangleFeature::Edge(2));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + (c - b) * w, TriangleFeature::Edge(1));
    }
    let denom = va + vb + vc;
    if !(denom.is_finite() && denom != 0.0) {
        // Degenerate after all: parry's projection.
        return parry_point_triangle(p, tri);
    }
    let (v, w) = (vb / denom, vc / denom);
    (a + ab * v + ac * w, TriangleFeature::Face)
}

/// parry's projection of `p` onto `tri` and the feature it lands on.
fn parry_point_triangle(p: &Point3<f32>, tri: &[Point3<f32>; 3]) -> (Point3<f32>, TriangleFeature) {
    let t = Triangle::new(tri[0].to_parry(), tri[1].to_parry(), tri[2].to_parry());
    let (proj, loc) = t.project_local_point_and_get_location(p.to_parry(), true);
    (Point3::from_parry(proj.point), feature(loc))
}

/// The feature of `tri` a point already on it lies on (parry's numbering).
pub(crate) fn feature_of(p: &Point3<f32>, tri: &[Point3<f32>; 3]) -> TriangleFeature {
    point_triangle(p, tri).1
}

fn feature(loc: TrianglePointLocation) -> TriangleFeature {
    match loc {
        TrianglePointLocation::OnVertex(i) => TriangleFeature::Vertex(i as u8),
        TrianglePointLocation::OnEdge(i, _) => TriangleFeature::Edge(i as u8),
        _ => TriangleFeature::Face,
    }
}

/// Closest points of segments `p1–q1` and `p2–q2` (Ericson, Real-Time Collision Detection 5.1.9),
/// as `(on the first, on the second)`. Degenerate segments are points.
pub(crate) fn segment_segment(
    p1: &Point3<f32>,
    q1: &Point3<f32>,
    p2: &Point3<f32>,
    q2: &Point3<f32>,
) -> (Point3<f32>, Point3<f32>) {
    const EPS: f32 = 1e-12;
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.norm_squared(), d2.norm_squared(), d2.dot(&r));
    let (s, t);
    if a <= EPS && e <= EPS {
        return (*p1, *p2);
    }
    if a <= EPS {
        s = 0.0;
        t = (f / e).clamp(0.0, 1.0);
    } else {
        let c = d1.dot(&r);
        if e <= EPS {
            t = 0.0;
            s = (-c / a).clamp(0.0, 1.0);
        } else {
            let b = d1.dot(&d2);
            let denom = a * e - b * b;
            let mut s0 = if denom > EPS { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
            let mut t0 = (b * s0 + f) / e;
            if t0 < 0.0 {
                t0 = 0.0;
                s0 = (-c / a).clamp(0.0, 1.0);
            } else if t0 > 1.0 {
                t0 = 1.0;
                s0 = ((b - c) / a).clamp(0.0, 1.0);
            }
            s = s0;
            t = t0;
        }
    }
    (p1 + d1 * s, p2 + d2 * t)
}

/// Where segment `p–q` crosses the inside of triangle `tri` (closed), if it does.
pub(crate) fn segment_crosses_triangle(
    p: &Point3<f32>,
    q: &Point3<f32>,
    tri: &[Point3<f32>; 3],
) -> Option<Point3<f32>> {
    let n = (tri[1] - tri[0]).cross(&(tri[2] - tri[0]));
    let (dp, dq) = (n.dot(&(p - tri[0])), n.dot(&(q - tri[0])));
    if dp * dq > 0.0 || dp == dq {
        return None;
    }
    let x = p + (q - p) * (dp / (dp - dq));
    let inside = (0..3).all(|i| {
        let (a, b) = (tri[i], tri[(i + 1) % 3]);
        (b - a).cross(&(x - a)).dot(&n) >= 0.0
    });
    inside.then_some(x)
}

/// Closest points of segment `p–q` and triangle `tri`: `(on the segment, on the triangle, the
/// triangle's feature there)`. A segment crossing the triangle gives the crossing point twice.
pub(crate) fn segment_triangle(
    p: &Point3<f32>,
    q: &Point3<f32>,
    tri: &[Point3<f32>; 3],
) -> (Point3<f32>, Point3<f32>, TriangleFeature) {
    if let Some(x) = segment_crosses_triangle(p, q, tri) {
        return (x, x, TriangleFeature::Face);
    }
    let mut best: Option<(f32, Point3<f32>, Point3<f32>)> = None;
    let mut consider = |on_seg: Point3<f32>, on_tri: Point3<f32>| {
        let d = (on_seg - on_tri).norm_squared();
        if best.is_none_or(|(bd, _, _)| d < bd) {
            best = Some((d, on_seg, on_tri));
        }
    };
    for end in [p, q] {
        consider(*end, point_triangle(end, tri).0);
    }
    for i in 0..3 {
        let (a, b) = segment_segment(p, q, &tri[i], &tri[(i + 1) % 3]);
        consider(a, b);
    }
    let (_, on_seg, on_tri) = best.unwrap_or((0.0, *p, tri[0]));
    (on_seg, on_tri, feature_of(&on_tri, tri))
}

/// The triangle's unit normal (counter-clockwise front), `None` for a degenerate triangle.
#[inline]
pub(crate) fn triangle_normal(tri: &[Point3<f32>; 3]) -> Option<Vector3<f32>> {
    let n = (tri[1] - tri[0]).cross(&(tri[2] - tri[0]));
    let len = n.norm();
    (len > 1e-12 && len.is_finite()).then(|| n / len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn pt() -> impl Strategy<Value = Point3<f32>> {
        proptest::array::uniform3(-4.0f32..4.0).prop_map(Point3::from)
    }

    proptest! {
        /// Segment–triangle closest points against a dense sampling of both.
        #[test]
        fn segment_triangle_is_closest(p in pt(), q in pt(), a in pt(), b in pt(), c in pt()) {
            let tri = [a, b, c];
            prop_assume!(triangle_normal(&tri).is_some());
            let (s, t, _) = segment_triangle(&p, &q, &tri);
            let got = (s - t).norm();
            let mut best = f32::INFINITY;
            let n = 24;
            for i in 0..=n {
                let x = p + (q - p) * (i as f32 / n as f32);
                best = best.min((x - point_triangle(&x, &tri).0).norm());
            }
            prop_assert!(got <= best + 1e-3, "got {got}, sampled {best}");
        }
    }

    proptest! {
        /// The projection equals parry's: the same point, and the same feature away from the
        /// borders between features.
        #[test]
        fn point_triangle_is_parrys(p in pt(), a in pt(), b in pt(), c in pt()) {
            let tri = [a, b, c];
            prop_assume!(triangle_normal(&tri).is_some_and(|_| (b - a).cross(&(c - a)).norm() > 1e-2));
            let (got, feature) = point_triangle(&p, &tri);
            let (want, parry_feature) = parry_point_triangle(&p, &tri);
            prop_assert!((got - want).norm() < 1e-4, "{:?} against parry's {:?}", got, want);
            // The same feature unless the point is within a hair of another's region.
            if feature != parry_feature {
                let on = |f: TriangleFeature, x: &Point3<f32>| match f {
                    TriangleFeature::Vertex(i) => (x - tri[i as usize]).norm() < 1e-4,
                    TriangleFeature::Edge(i) => {
                        let (e0, e1) = (tri[i as usize], tri[(i as usize + 1) % 3]);
                        let t = ((x - e0).dot(&(e1 - e0)) / (e1 - e0).norm_squared()).clamp(0.0, 1.0);
                        (x - (e0 + (e1 - e0) * t)).norm() < 1e-4
                    }
                    TriangleFeature::Face => true,
                };
                prop_assert!(on(feature, &want) && on(parry_feature, &got), "{:?} against parry's {:?}", feature, parry_feature);
            }
        }
    }

    #[test]
    fn edges_are_numbered_as_parry_does() {
        let tri = [Point3::new(0.0, 0.0, 0.0), Point3::new(1.0, 0.0, 0.0), Point3::new(0.0, 0.0, 1.0)];
        assert_eq!(point_triangle(&Point3::new(0.5, 1.0, -1.0), &tri).1, TriangleFeature::Edge(0));
        assert_eq!(point_triangle(&Point3::new(1.0, 1.0, 1.0), &tri).1, TriangleFeature::Edge(1));
        assert_eq!(point_triangle(&Point3::new(-1.0, 1.0, 0.5), &tri).1, TriangleFeature::Edge(2));
        assert_eq!(point_triangle(&Point3::new(2.0, 1.0, -0.5), &tri).1, TriangleFeature::Vertex(1));
        assert_eq!(point_triangle(&Point3::new(0.2, 1.0, 0.2), &tri).1, TriangleFeature::Face);
    }
}
