//! Exact references in f64 for the collision queries: closest points on triangles, segments and
//! triangles, convex polytopes against triangles (separating axes, distances between their
//! surfaces), rays against triangles and the side of a closed mesh a point is on. Written for
//! clarity, not speed: the obvious formula, every case spelled out, so a test can trust it over
//! the f32 code it checks.

use voxterra_core::nalgebra::{Point3, Vector3};

/// A point in f64.
pub type P = Point3<f64>;
/// A vector in f64.
pub type V = Vector3<f64>;
/// A triangle in f64.
pub type Tri = [P; 3];

/// A point of f32 coordinates in f64 (exact).
pub fn p64(p: &Point3<f32>) -> P {
    p.map(f64::from)
}

/// A triangle of f32 corners in f64 (exact), scaled by `k` (exact for powers of two).
pub fn tri64(t: &[Point3<f32>; 3], k: f64) -> Tri {
    t.map(|p| Point3::from(p64(&p).coords * k))
}

/// The triangle's unit normal (counter-clockwise front), `None` when degenerate.
pub fn normal(t: &Tri) -> Option<V> {
    let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
    let len = n.norm();
    (len > 1e-300 && len.is_finite()).then(|| n / len)
}

/// Which part of a triangle a closest point lies on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Region {
    /// Corner `i`.
    Vertex(u8),
    /// The edge from corner `i` to corner `(i + 1) % 3`.
    Edge(u8),
    /// The interior of the face.
    Face,
}

/// The point of triangle `t` closest to `p`, and the part it lies on (Ericson, "Real-Time
/// Collision Detection", 5.1.5: by Voronoi regions).
pub fn closest_on_triangle(p: &P, t: &Tri) -> (P, Region) {
    let (a, b, c) = (t[0], t[1], t[2]);
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(&ap), ac.dot(&ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return (a, Region::Vertex(0));
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(&bp), ac.dot(&bp));
    if d3 >= 0.0 && d4 <= d3 {
        return (b, Region::Vertex(1));
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (a + ab * v, Region::Edge(0));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(&cp), ac.dot(&cp));
    if d6 >= 0.0 && d5 <= d6 {
        return (c, Region::Vertex(2));
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (a + ac * w, Region::Edge(2));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (b + (c - b) * w, Region::Edge(1));
    }
    if !(va + vb + vc).is_normal() {
        // Degenerate (a sliver or a point): the nearest of its edges.
        return (0..3u8)
            .map(|i| {
                let (_, q) = closest_segment_segment(p, p, &t[i as usize], &t[(i as usize + 1) % 3]);
                (q, Region::Edge(i))
            })
            .min_by(|x, y| (p - x.0).norm().total_cmp(&(p - y.0).norm()))
            .unwrap_or((a, Region::Vertex(0)));
    }
    let denom = 1.0 / (va + vb + vc);
    let (v, w) = (vb * denom, vc * denom);
    (a + ab * v + ac * w, Region::Face)
}

/// The distance from `p` to triangle `t`.
pub fn point_triangle_distance(p: &P, t: &Tri) -> f64 {
    (p - closest_on_triangle(p, t).0).norm()
}

/// The closest points of segments `p1`–`q1` and `p2`–`q2` (Ericson 5.1.9).
pub fn closest_segment_segment(p1: &P, q1: &P, p2: &P, q2: &P) -> (P, P) {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.norm_squared(), d2.norm_squared(), d2.dot(&r));
    let (s, t);
    if a <= 1e-300 && e <= 1e-300 {
        return (*p1, *p2);
    }
    if a <= 1e-300 {
        s = 0.0;
        t = (f / e).clamp(0.0, 1.0);
    } else {
        let c = d1.dot(&r);
        if e <= 1e-300 {
            t = 0.0;
            s = (-c / a).clamp(0.0, 1.0);
        } else {
            let b = d1.dot(&d2);
            let denom = a * e - b * b;
            let s0 = if denom > 0.0 { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
            let t0 = (b * s0 + f) / e;
            if t0 < 0.0 {
                t = 0.0;
                s = (-c / a).clamp(0.0, 1.0);
            } else if t0 > 1.0 {
                t = 1.0;
                s = ((b - c) / a).clamp(0.0, 1.0);
            } else {
                t = t0;
                s = s0;
            }
        }
    }
    (p1 + d1 * s, p2 + d2 * t)
}

/// Where segment `a`–`b` crosses triangle `t` (its closed face), as a fraction along the segment.
pub fn segment_crosses_triangle(a: &P, b: &P, t: &Tri) -> Option<f64> {
    let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
    let (da, db) = ((a - t[0]).dot(&n), (b - t[0]).dot(&n));
    if (da > 0.0 && db > 0.0) || (da < 0.0 && db < 0.0) || da == db {
        return None;
    }
    let s = da / (da - db);
    let x = a + (b - a) * s;
    // Inside: on the inner side of each edge.
    let inside = (0..3).all(|i| (t[(i + 1) % 3] - t[i]).cross(&(x - t[i])).dot(&n) >= 0.0);
    inside.then_some(s)
}

/// The distance between segment `a`–`b` and triangle `t` (0 when they cross).
pub fn segment_triangle_distance(a: &P, b: &P, t: &Tri) -> f64 {
    if segment_crosses_triangle(a, b, t).is_some() {
        return 0.0;
    }
    let mut d = point_triangle_distance(a, t).min(point_triangle_distance(b, t));
    for i in 0..3 {
        let (x, y) = closest_segment_segment(a, b, &t[i], &t[(i + 1) % 3]);
        d = d.min((x - y).norm());
    }
    d
}

/// Whether two triangles intersect (share a point).
pub fn triangles_intersect(s: &Tri, t: &Tri) -> bool {
    (0..3).any(|i| segment_crosses_triangle(&s[i], &s[(i + 1) % 3], t).is_some())
        || (0..3).any(|i| segment_crosses_triangle(&t[i], &t[(i + 1) % 3], s).is_some())
}

/// The distance between two triangles (0 when they intersect).
pub fn triangle_triangle_distance(s: &Tri, t: &Tri) -> f64 {
    if triangles_intersect(s, t) {
        return 0.0;
    }
    let mut d = f64::INFINITY;
    for i in 0..3 {
        d = d.min(point_triangle_distance(&s[i], t)).min(point_triangle_distance(&t[i], s));
        for j in 0..3 {
            let (x, y) = closest_segment_segment(&s[i], &s[(i + 1) % 3], &t[j], &t[(j + 1) % 3]);
            d = d.min((x - y).norm());
        }
    }
    d
}

/// A convex polytope: its corners, its faces' outward planes and polygons, and its edges. Built
/// from any point cloud by brute force (every plane through three points with all points on one
/// side is a face), so it depends on no hull routine.
#[derive(Clone, Debug)]
pub struct Polytope {
    /// The points it was made from (every corner among them).
    pub points: Vec<P>,
    /// Per face: outward unit normal and its corners in order around it.
    pub faces: Vec<(V, Vec<P>)>,
    /// Edge directions (unit), one per face-polygon side.
    pub edges: Vec<V>,
    /// Its surface as triangles (faces fanned).
    pub surface: Vec<Tri>,
}

impl Polytope {
    /// The hull of `points` (at least four, not coplanar; else the polytope has no faces).
    pub fn new(points: Vec<P>) -> Polytope {
        let scale = points.iter().map(|p| p.coords.amax()).fold(1.0, f64::max);
        let eps = 1e-9 * scale;
        let mut planes: Vec<(V, f64)> = Vec::new();
        let n = points.len();
        for i in 0..n {
            for j in i + 1..n {
                for k in j + 1..n {
                    let Some(mut nrm) = normal(&[points[i], points[j], points[k]]) else { continue };
                    let mut off = nrm.dot(&points[i].coords);
                    let (mut above, mut below) = (false, false);
                    for p in &points {
                        let d = nrm.dot(&p.coords) - off;
                        above |= d > eps;
                        below |= d < -eps;
                    }
                    if above && below {
                        continue;
                    }
                    if above {
                        nrm = -nrm;
                        off = -off;
                    }
                    if !planes.iter().any(|(m, o)| (m - nrm).norm() < 1e-9 && (o - off).abs() < eps) {
                        planes.push((nrm, off));
                    }
                }
            }
        }
        let mut faces = Vec::new();
        let mut edges = Vec::new();
        let mut surface = Vec::new();
        for (nrm, off) in planes {
            let mut on: Vec<P> = Vec::new();
            for p in &points {
                if (nrm.dot(&p.coords) - off).abs() <= eps && !on.iter().any(|q| (q - p).norm() <= eps) {
                    on.push(*p);
                }
            }
            let c = on.iter().fold(V::zeros(), |acc, p| acc + p.coords) / on.len() as f64;
            let u = (on[0].coords - c).normalize();
            let w = nrm.cross(&u);
            on.sort_by(|a, b| {
                let ang = |p: &P| (p.coords - c).dot(&w).atan2((p.coords - c).dot(&u));
                ang(a).total_cmp(&ang(b))
            });
            // Drop corners on a side's interior (collinear), keeping the polygon's true corners.
            let mut corners: Vec<P> = Vec::new();
            for i in 0..on.len() {
                let (prev, cur, next) = (on[(i + on.len() - 1) % on.len()], on[i], on[(i + 1) % on.len()]);
                if (cur - prev).cross(&(next - cur)).norm() > 1e-9 * (cur - prev).norm() * (next - cur).norm()
                {
                    corners.push(cur);
                }
            }
            for i in 0..corners.len() {
                let e = corners[(i + 1) % corners.len()] - corners[i];
                edges.push(e.normalize());
            }
            for i in 1..corners.len().saturating_sub(1) {
                surface.push([corners[0], corners[i], corners[i + 1]]);
            }
            faces.push((nrm, corners));
        }
        Polytope { points, faces, edges, surface }
    }

    /// The support value: the largest `p · d` over the corners.
    pub fn support(&self, d: &V) -> f64 {
        self.points.iter().map(|p| p.coords.dot(d)).fold(f64::NEG_INFINITY, f64::max)
    }

    /// Whether `p` lies inside (or on) the polytope.
    pub fn contains(&self, p: &P) -> bool {
        self.faces.iter().all(|(n, c)| (p - c[0]).dot(n) <= 1e-9 * (1.0 + p.coords.amax()))
    }

    /// The separating-axis test against triangle `t`: the smallest overlap over the axes (the
    /// triangle's normal, the faces' normals, and the cross products of the polytope's and the
    /// triangle's edges), negative when some axis separates them. For two convex polytopes the
    /// smallest overlap is the two-sided penetration depth, and a negative one a lower bound on
    /// their distance.
    pub fn sat(&self, t: &Tri) -> f64 {
        let mut axes: Vec<V> = self.faces.iter().map(|(n, _)| *n).collect();
        if let Some(n) = normal(t) {
            axes.push(n);
        }
        for e in &self.edges {
            for i in 0..3 {
                let c = e.cross(&(t[(i + 1) % 3] - t[i]));
                let len = c.norm();
                if len > 1e-9 * (t[(i + 1) % 3] - t[i]).norm() {
                    axes.push(c / len);
                }
            }
        }
        let mut best = f64::INFINITY;
        for a in axes {
            let (smin, smax) = (-self.support(&-a), self.support(&a));
            let tv = t.map(|p| p.coords.dot(&a));
            let (tmin, tmax) = (tv[0].min(tv[1]).min(tv[2]), tv[0].max(tv[1]).max(tv[2]));
            best = best.min((smax - tmin).min(tmax - smin));
        }
        best
    }

    /// Whether the polytope reaches into the column over triangle `t` (the triangle swept along
    /// its normal): their shadows on the triangle's plane overlap. Separating directions in the
    /// plane: the triangle's edge normals and the polytope's edges turned about the normal.
    pub fn over(&self, t: &Tri) -> bool {
        let Some(n) = normal(t) else { return false };
        let mut axes: Vec<V> = (0..3).map(|i| n.cross(&(t[(i + 1) % 3] - t[i]))).collect();
        axes.extend(self.edges.iter().map(|e| n.cross(e)));
        axes.iter().filter(|a| a.norm() > 1e-12).all(|a| {
            let a = a.normalize();
            let (smin, smax) = (-self.support(&-a), self.support(&a));
            let tv = t.map(|p| p.coords.dot(&a));
            smax >= tv[0].min(tv[1]).min(tv[2]) && smin <= tv[0].max(tv[1]).max(tv[2])
        })
    }

    /// The distance to triangle `t`: 0 when they overlap, else between their surfaces.
    pub fn distance(&self, t: &Tri) -> f64 {
        if self.sat(t) >= 0.0 {
            return 0.0;
        }
        self.surface.iter().map(|s| triangle_triangle_distance(s, t)).fold(f64::INFINITY, f64::min)
    }
}

/// The ray parameter where `origin + t dir` crosses triangle `t`'s closed face, by the plane and
/// three edge sides in f64 (no barycentric shortcuts), and how far inside the nearest edge the
/// crossing is (relative to the triangle's size): negative when it misses.
pub fn ray_triangle(origin: &P, dir: &V, t: &Tri) -> Option<(f64, f64)> {
    let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
    let denom = n.dot(dir);
    if denom == 0.0 || !denom.is_finite() {
        return None;
    }
    let s = (t[0] - origin).dot(&n) / denom;
    let x = origin + dir * s;
    let size = (t[1] - t[0]).norm().max((t[2] - t[0]).norm()).max((t[2] - t[1]).norm());
    let nn = n.norm();
    let margin = (0..3)
        .map(|i| {
            let e = t[(i + 1) % 3] - t[i];
            e.cross(&(x - t[i])).dot(&n) / (nn * e.norm().max(1e-300))
        })
        .fold(f64::INFINITY, f64::min);
    Some((s, margin / size.max(1e-300)))
}

/// The signed distance from `p` to the closed surface made of `tris` (negative inside, behind the
/// counter-clockwise fronts), and the nearest point. The side comes from the nearest triangle;
/// where several are nearest (an edge or a corner), from the one whose plane `p` is farthest from
/// (the side a pseudo-normal gives, without building adjacency). `None` for no triangles.
pub fn signed_distance(p: &P, tris: &[Tri]) -> Option<(f64, P)> {
    let mut best: Option<(f64, P)> = None;
    for t in tris.iter().filter(|t| normal(t).is_some()) {
        let (q, _) = closest_on_triangle(p, t);
        let d = (p - q).norm();
        if best.is_none_or(|(b, _)| d < b) {
            best = Some((d, q));
        }
    }
    let (d, q) = best?;
    let mut side = 0.0;
    let mut lean = -1.0;
    for t in tris {
        let (qt, _) = closest_on_triangle(p, t);
        let dt = (p - qt).norm();
        if dt > d * (1.0 + 1e-9) + 1e-12 {
            continue;
        }
        let Some(n) = normal(t) else { continue };
        let h = (p - qt).dot(&n);
        let l = if dt > 0.0 { h.abs() / dt } else { 1.0 };
        if l > lean {
            lean = l;
            side = h;
        }
    }
    Some((if side < 0.0 { -d } else { d }, q))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(x: f64, y: f64, z: f64) -> P {
        P::new(x, y, z)
    }

    #[test]
    fn closest_points_by_region() {
        let t = [p(0.0, 0.0, 0.0), p(2.0, 0.0, 0.0), p(0.0, 0.0, 2.0)];
        assert_eq!(closest_on_triangle(&p(0.5, 3.0, 0.5), &t), (p(0.5, 0.0, 0.5), Region::Face));
        assert_eq!(closest_on_triangle(&p(-1.0, 1.0, -1.0), &t), (p(0.0, 0.0, 0.0), Region::Vertex(0)));
        assert_eq!(closest_on_triangle(&p(1.0, 1.0, -1.0), &t), (p(1.0, 0.0, 0.0), Region::Edge(0)));
        assert_eq!(closest_on_triangle(&p(2.0, 0.0, 2.0), &t), (p(1.0, 0.0, 1.0), Region::Edge(1)));
        assert_eq!(closest_on_triangle(&p(-1.0, 0.0, 1.0), &t), (p(0.0, 0.0, 1.0), Region::Edge(2)));
    }

    #[test]
    fn a_box_against_a_triangle() {
        let corners = (0..8)
            .map(|i| {
                p((i & 1) as f64 * 2.0 - 1.0, (i >> 1 & 1) as f64 * 2.0 - 1.0, (i >> 2) as f64 * 2.0 - 1.0)
            })
            .collect();
        let b = Polytope::new(corners);
        assert_eq!((b.faces.len(), b.edges.len(), b.surface.len()), (6, 24, 12));
        let under = |y: f64| [p(-5.0, y, -5.0), p(0.0, y, 5.0), p(5.0, y, -5.0)];
        assert!((b.distance(&under(-1.5)) - 0.5).abs() < 1e-12);
        assert_eq!(b.distance(&under(-0.75)), 0.0);
        assert!((b.sat(&under(-0.75)) - 0.25).abs() < 1e-12);
        assert!(b.contains(&p(0.5, 0.5, -0.5)) && !b.contains(&p(0.5, 1.5, -0.5)));
    }

    #[test]
    fn signed_distance_takes_the_side_of_the_nearest_surface() {
        // A ridge: two faces meeting at x = 0, y = 1, solid below.
        let left = [p(-1.0, 0.0, -5.0), p(-1.0, 0.0, 5.0), p(0.0, 1.0, 5.0)];
        let left2 = [p(-1.0, 0.0, -5.0), p(0.0, 1.0, 5.0), p(0.0, 1.0, -5.0)];
        let right = [p(0.0, 1.0, -5.0), p(0.0, 1.0, 5.0), p(1.0, 0.0, 5.0)];
        let right2 = [p(0.0, 1.0, -5.0), p(1.0, 0.0, 5.0), p(1.0, 0.0, -5.0)];
        let tris = [left, left2, right, right2];
        assert!(tris.iter().all(|t| normal(t).unwrap().y > 0.0));
        let (d, _) = signed_distance(&p(0.0, 2.0, 0.0), &tris).unwrap();
        assert!((d - 1.0).abs() < 1e-12);
        let (d, _) = signed_distance(&p(0.0, 0.5, 0.0), &tris).unwrap();
        assert!(d < 0.0);
        // Behind the left face's plane, in front of the right face: outside.
        let (d, _) = signed_distance(&p(0.3, 1.0, 0.0), &tris).unwrap();
        assert!(d > 0.0);
    }

    #[test]
    fn segments_and_rays() {
        let t = [p(0.0, 0.0, 0.0), p(2.0, 0.0, 0.0), p(0.0, 0.0, 2.0)];
        assert_eq!(segment_triangle_distance(&p(0.5, 1.0, 0.5), &p(0.5, -1.0, 0.5), &t), 0.0);
        assert!(
            (segment_triangle_distance(&p(3.0, 1.0, 0.0), &p(3.0, 1.0, 1.0), &t) - 2.0f64.sqrt()).abs()
                < 1e-12
        );
        let (s, margin) = ray_triangle(&p(0.5, 2.0, 0.5), &V::new(0.0, -1.0, 0.0), &t).unwrap();
        assert!((s - 2.0).abs() < 1e-12 && margin > 0.0);
        let (_, margin) = ray_triangle(&p(3.0, 2.0, 0.5), &V::new(0.0, -1.0, 0.0), &t).unwrap();
        assert!(margin < 0.0);
    }
}
