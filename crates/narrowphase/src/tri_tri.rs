//! Möller's triangle–triangle overlap test ("A Fast Triangle-Triangle Intersection Test", 1997),
//! coplanar case included, in f64 and without divisions: interval endpoints are compared as
//! fractions, so on coordinates that f64 multiplies exactly (small integers, the test grids) touching
//! triangles are decided exactly.

use voxterra_core::nalgebra::{Point3, Vector3};

type P = Point3<f64>;

/// True when the closed triangles `a` and `b` share a point. Triangles of zero area overlap
/// nothing.
pub fn triangles_intersect(a: &[Point3<f32>; 3], b: &[Point3<f32>; 3]) -> bool {
    let a = a.map(|p| p.cast::<f64>());
    let b = b.map(|p| p.cast::<f64>());
    triangles_intersect_f64(&a, &b)
}

/// [`triangles_intersect`] on f64 triangles.
pub fn triangles_intersect_f64(a: &[P; 3], b: &[P; 3]) -> bool {
    let nb = (b[1] - b[0]).cross(&(b[2] - b[0]));
    let na = (a[1] - a[0]).cross(&(a[2] - a[0]));
    if nb == Vector3::zeros() || na == Vector3::zeros() {
        return false;
    }
    // Signed distances (scaled) of a's corners to b's plane, and of b's to a's.
    let da = a.map(|p| nb.dot(&(p - b[0])));
    if same_side(&da) {
        return false;
    }
    let db = b.map(|p| na.dot(&(p - a[0])));
    if same_side(&db) {
        return false;
    }
    if da == [0.0; 3] {
        return coplanar(a, b, &na);
    }
    // Project onto the intersection line's dominant axis.
    let d = na.cross(&nb);
    let k = (0..3).max_by(|&i, &j| d[i].abs().total_cmp(&d[j].abs())).unwrap_or(0);
    let (Some(ia), Some(ib)) = (interval(&a.map(|p| p[k]), &da), interval(&b.map(|p| p[k]), &db)) else {
        return coplanar(a, b, &na);
    };
    // Overlap of [ia.0, ia.1] and [ib.0, ib.1], endpoints as fractions.
    le(ib.0, ia.1) && le(ia.0, ib.1)
}

/// A fraction `num / den` with `den > 0`.
type Frac = (f64, f64);

#[inline]
fn le(x: Frac, y: Frac) -> bool {
    x.0 * y.1 <= y.0 * x.1
}

fn same_side(d: &[f64; 3]) -> bool {
    (d[0] > 0.0 && d[1] > 0.0 && d[2] > 0.0) || (d[0] < 0.0 && d[1] < 0.0 && d[2] < 0.0)
}

/// The interval a triangle covers on the intersection line, from its corners' projections `p` and
/// distances `d` to the other plane (Möller's cases), ordered; `None` when coplanar.
fn interval(p: &[f64; 3], d: &[f64; 3]) -> Option<(Frac, Frac)> {
    let lone = if d[0] * d[1] > 0.0 {
        2
    } else if d[0] * d[2] > 0.0 {
        1
    } else if d[1] * d[2] > 0.0 || d[0] != 0.0 {
        0
    } else if d[1] != 0.0 {
        1
    } else if d[2] != 0.0 {
        2
    } else {
        return None;
    };
    let (w1, w2) = ((lone + 1) % 3, (lone + 2) % 3);
    // t = p_v + (p_w − p_v) · d_v / (d_v − d_w), as a fraction with a positive denominator.
    let end = |w: usize| -> Frac {
        let den = d[lone] - d[w];
        let num = p[lone] * den + (p[w] - p[lone]) * d[lone];
        if den < 0.0 { (-num, -den) } else { (num, den) }
    };
    let (x, y) = (end(w1), end(w2));
    Some(if le(x, y) { (x, y) } else { (y, x) })
}

/// Both triangles in one plane (normal `n`): some edges cross, or one holds a corner of the other.
fn coplanar(a: &[P; 3], b: &[P; 3], n: &Vector3<f64>) -> bool {
    // Drop the axis along which the plane is widest seen from (the normal's largest component).
    let k = (0..3).max_by(|&i, &j| n[i].abs().total_cmp(&n[j].abs())).unwrap_or(0);
    let (i0, i1) = ((k + 1) % 3, (k + 2) % 3);
    let flat = |t: &[P; 3]| t.map(|p| [p[i0], p[i1]]);
    let (a2, b2) = (flat(a), flat(b));
    for i in 0..3 {
        for j in 0..3 {
            if segments_meet(a2[i], a2[(i + 1) % 3], b2[j], b2[(j + 1) % 3]) {
                return true;
            }
        }
    }
    inside(&b2, a2[0]) || inside(&a2, b2[0])
}

type V2 = [f64; 2];

#[inline]
fn orient(a: V2, b: V2, c: V2) -> f64 {
    (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])
}

fn on_segment(a: V2, b: V2, p: V2) -> bool {
    a[0].min(b[0]) <= p[0] && p[0] <= a[0].max(b[0]) && a[1].min(b[1]) <= p[1] && p[1] <= a[1].max(b[1])
}

/// Closed 2D segments `p–q` and `r–s` share a point.
fn segments_meet(p: V2, q: V2, r: V2, s: V2) -> bool {
    let (o1, o2, o3, o4) = (orient(p, q, r), orient(p, q, s), orient(r, s, p), orient(r, s, q));
    if ((o1 > 0.0 && o2 < 0.0) || (o1 < 0.0 && o2 > 0.0))
        && ((o3 > 0.0 && o4 < 0.0) || (o3 < 0.0 && o4 > 0.0))
    {
        return true;
    }
    (o1 == 0.0 && on_segment(p, q, r))
        || (o2 == 0.0 && on_segment(p, q, s))
        || (o3 == 0.0 && on_segment(r, s, p))
        || (o4 == 0.0 && on_segment(r, s, q))
}

/// `p` lies in the closed triangle `t` (either winding).
fn inside(t: &[V2; 3], p: V2) -> bool {
    let o = [orient(t[0], t[1], p), orient(t[1], t[2], p), orient(t[2], t[0], p)];
    (o[0] >= 0.0 && o[1] >= 0.0 && o[2] >= 0.0) || (o[0] <= 0.0 && o[1] <= 0.0 && o[2] <= 0.0)
}
