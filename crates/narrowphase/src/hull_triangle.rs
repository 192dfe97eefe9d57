//! Convex hull against triangle by the separating axis theorem over the Minkowski difference's
//! faces: the triangle's normal (both ways), the hull's face normals, and the cross products of a
//! hull edge and a triangle edge whose normal cones meet (Gregorius's Gauss-map test, the triangle
//! seen as a polytope with two faces). Their least overlap is the exact penetration depth. The
//! axis of least overlap (the triangle's face preferred, then the hull's faces, within a
//! tolerance) picks a reference face and the other shape's incident polygon is clipped against
//! it, as for boxes: a hull resting on a triangle gets a point at each corner of its face over it,
//! the same points whichever way the rounding falls (no witness chosen by an iteration's path).
//!
//! Apart, the best axis's separation is a lower bound on the distance, exact where a point pair
//! on the two shapes realizes it (the clipped points, an edge pair's closest points); where none
//! does (a hull corner nearest a triangle corner), GJK answers.
//!
//! parry merges a hull's faces within about a degree of each other, so its face normals and
//! corner rings lie near the hull's surface, not on it. A separation counts only along the hull's
//! true extent; an edge inside a merged face lends its axis near the face's normal; a merged
//! face's points lie on its plane, up to the merge's deviation off the true hull (as parry's own
//! polygonal features do). Where the features found do not reach the kept axis's depth, or parry's
//! topology is not a polyhedron's, GJK/EPA answers.

use crate::clip::{Poly, clip};
use crate::closest::{feature_of, point_triangle, segment_segment, triangle_normal};
use crate::contact::{ContactPoint, Correction, FeatureId};
use crate::cuboid_triangle::EDGE_BIAS;
use parry3d::shape::ConvexPolyhedron;
use voxterra_core::nalgebra::{Isometry3, Point3, Unit, Vector3};

/// Corners a clipped polygon can hold: a face of up to [`MAX_FACE`] corners clipped by a
/// triangle's three sides, or a triangle clipped by the sides of such a face.
const CAPACITY: usize = 32;
/// The most corners of a hull face the routine clips; a hull with a larger face goes to GJK/EPA.
const MAX_FACE: usize = CAPACITY - 4;
/// How near a face's normal the axis of an edge inside it (parry merges faces within about a
/// degree, and merges chain) may lie: cos 5°.
const MERGED_COS: f32 = 0.996_2;

/// The axis of least overlap.
#[derive(Clone, Copy)]
enum Axis {
    Triangle,
    Face(usize),
    Edge(usize, usize),
}

/// The contacts of `hull` at `iso` with triangle `tri` within `prediction`, two-sided, appended to
/// `out`; false (appending nothing) where the routine does not answer and GJK/EPA must: a hull
/// face it cannot clip ([`clippable`]), a degenerate triangle in the hull's frame, or shapes
/// apart whose nearest points no axis realizes.
pub(crate) fn hull_triangle(
    hull: &ConvexPolyhedron,
    iso: &Isometry3<f32>,
    tri: &[Point3<f32>; 3],
    prediction: f32,
    id: FeatureId,
    out: &mut Vec<ContactPoint>,
) -> bool {
    FACE_DOTS.with_borrow_mut(|dots| sat_clip(hull, iso, tri, prediction, id, out, dots))
}

thread_local! {
    /// Per hull face, the triangle's corners along its normal: kept between queries.
    static FACE_DOTS: std::cell::RefCell<Vec<[f32; 3]>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[allow(clippy::too_many_arguments)] // the routine's arguments and its scratch
fn sat_clip(
    hull: &ConvexPolyhedron,
    iso: &Isometry3<f32>,
    tri: &[Point3<f32>; 3],
    prediction: f32,
    id: FeatureId,
    out: &mut Vec<ContactPoint>,
    face_dots: &mut Vec<[f32; 3]>,
) -> bool {
    // In the hull's frame: far from the origin, world coordinates round by more than a contact's
    // depth.
    let q = tri.map(|p| iso.inverse_transform_point(&p));
    let Some(n) = triangle_normal(&q) else { return false };
    let pts = hull.points();
    let at = |i: u32| {
        let p = pts[i as usize];
        Point3::new(p.x, p.y, p.z)
    };
    let faces = hull.faces();
    let ring = hull.vertices_adj_to_face();
    let face_normal = |f: usize| {
        let m = faces[f].normal;
        Vector3::new(m.x, m.y, m.z)
    };
    let ring_of = |f: usize| {
        let first = faces[f].first_vertex_or_edge as usize;
        &ring[first..first + faces[f].num_vertices_or_edges as usize]
    };

    // The triangle's normal, both ways (`normal` points from the triangle toward the hull).
    let t0 = q[0].coords.dot(&n);
    let (mut lo, mut hi, mut size) = (f32::INFINITY, f32::NEG_INFINITY, 0.0f32);
    let (mut lowest, mut highest) = (0, 0);
    for (i, p) in pts.iter().enumerate() {
        let d = p.x * n.x + p.y * n.y + p.z * n.z;
        if d < lo {
            (lo, lowest) = (d, i);
        }
        if d > hi {
            (hi, highest) = (d, i);
        }
        size = larger(larger(larger(size, p.x.abs()), p.y.abs()), p.z.abs());
    }
    let bias = EDGE_BIAS * (1.0 + size);
    let (up, down) = (lo - t0, t0 - hi);
    // The hull's corner deepest toward the triangle along its normal.
    let (mut best, mut normal, deepest) = if up >= down { (up, n, lowest) } else { (down, -n, highest) };
    let mut axis = Axis::Triangle;
    let along_triangle = (best, normal);
    if best > prediction {
        return true;
    }

    let extent = |m: &Vector3<f32>| {
        pts.iter().map(|p| p.x * m.x + p.y * m.y + p.z * m.z).fold(f32::NEG_INFINITY, larger)
    };
    // The direction from the hull's origin (its center, for a body's hull) to the triangle's
    // nearest point: the axis that separates most triangles beside the hull, one support query
    // before the faces (most candidates a box query returns touch nothing).
    let foot = point_triangle(&Point3::origin(), &q).0.coords;
    let reach = foot.norm();
    if reach > 1e-6 * (1.0 + size) {
        let l = foot / reach;
        if reach - extent(&l) > prediction {
            return true;
        }
    }

    // The hull's faces, outward only (inward, the hull's other side is a face or a corner of its
    // own).
    // The bias holds between kinds of axis only: among the hull's faces (and among the edge
    // pairs) the least overlap wins, else the kept face's sides may miss the triangle.
    let (mut face_sep, mut face) = (f32::NEG_INFINITY, 0);
    // parry merges faces within a degree or so of each other: a face's corners are near its
    // plane, not on it, and another corner may even stand above it. So a face's corners screen
    // the faces; the hull's true extent along the normal decides a separation and the kept face
    // (the extent is never below the corners', so a screened-out face stays out).
    face_dots.clear();
    for (f, hull_face) in faces.iter().enumerate() {
        let m = face_normal(f);
        // The triangle's corners along the normal; their differences are its sides' (the edge
        // pairs' screen below).
        let d = q.map(|p| p.coords.dot(&m));
        face_dots.push(d);
        let top = ring_of(f).first().map_or(f32::NEG_INFINITY, |&i| at(i).coords.dot(&m));
        let below = smaller(smaller(d[0], d[1]), d[2]);
        let mut sep = below - top;
        // A face parry did not merge is a triangle of the hull: its plane bounds the hull.
        if hull_face.num_vertices_or_edges > 3 && (sep > face_sep || sep > prediction) {
            sep = sep.min(below - extent(&m));
        }
        if sep > prediction {
            return true;
        }
        if sep > face_sep {
            (face_sep, face) = (sep, f);
        }
    }
    if face_sep > best + bias {
        (best, normal, axis) = (face_sep, -face_normal(face), Axis::Face(face));
    }

    // Edge pairs whose normal cones meet: the hull edge's is the arc between its two faces'
    // normals; the triangle edge's, the half circle from its normal to its back through its
    // outward side, square to the edge. The hull edge's arc crosses that great circle where its
    // ends lie on either side of it (the side along each face's normal, from the face loop's
    // dot products: most pairs stop there); the crossing, a positive mix of the two normals,
    // is the pair's axis when the triangle's lowest along it is that edge.
    // parry's topology, trusted only where it is a polyhedron's: an edge of a triangle it dropped
    // as degenerate points at no face; faces merged around a corner, or a ring through a corner
    // twice, break Euler's formula. There the normal cones are not the hull's, and an edge pair's
    // axis may claim a gap that is not there.
    let mut between_faces = 0;
    for e in hull.edges() {
        if e.faces.iter().any(|&f| f as usize >= faces.len()) {
            return false;
        }
        between_faces += usize::from(e.faces[0] != e.faces[1]);
    }
    if pts.len() + faces.len() != between_faces + 2 {
        return false;
    }
    let sides = [q[1] - q[0], q[2] - q[1], q[0] - q[2]];
    let outward = sides.map(|d| d.cross(&n));
    let (mut edge_sep, mut edge, mut edge_normal) = (f32::NEG_INFINITY, (0, 0), Vector3::zeros());
    for (ei, e) in hull.edges().iter().enumerate() {
        let inside = e.faces[0] == e.faces[1];
        // Beside a merged face, the edge's cone is known only within the merge's tolerance.
        let merged = e.faces.iter().any(|&f| faces[f as usize].num_vertices_or_edges > 3);
        let (ga, gb) = (face_dots[e.faces[0] as usize], face_dots[e.faces[1] as usize]);
        for j in 0..3 {
            let k = (j + 1) % 3;
            // The side along the two faces' normals.
            let (da, db) = (ga[k] - ga[j], gb[k] - gb[j]);
            // Not crossing (an end on the circle: a face axis covers it).
            if !inside && da * db >= 0.0 {
                continue;
            }
            let (fa, fb) = (face_normal(e.faces[0] as usize), face_normal(e.faces[1] as usize));
            let a = at(e.vertices[0]);
            let l = if inside {
                // An edge inside a face parry merged from triangles a degree or so apart: its
                // cone is a sliver around the face's normal, there only as the axis square to
                // both edges near that normal.
                let l = (at(e.vertices[1]) - a).cross(&sides[j]);
                let len = l.norm();
                if len.is_nan() || len <= 1e-12 {
                    continue;
                }
                let l = if l.dot(&fa) < 0.0 { -l / len } else { l / len };
                if l.dot(&fa) < MERGED_COS {
                    continue;
                }
                l
            } else {
                let mix = fa * db.abs() + fb * da.abs();
                if mix.dot(&outward[j]) >= 0.0 {
                    continue;
                }
                // The axis itself square to both edges, on the mix's side: merged faces'
                // normals are not quite square to their edges, and off square the edge's ends
                // would project apart.
                let l = (at(e.vertices[1]) - a).cross(&sides[j]);
                let len = l.norm();
                if len.is_nan() || len <= 1e-12 {
                    continue;
                }
                if l.dot(&mix) < 0.0 { -l / len } else { l / len }
            };
            // The triangle's lowest along the axis is edge j (else the pair is not a feature
            // pair: tilted by merged normals).
            if l.dot(&outward[j]) >= 0.0 {
                continue;
            }
            let low = l.dot(&q[j].coords);
            let mut sep = low - l.dot(&a.coords);
            // Merged faces' normals bound an edge's cone only within their merge tolerance: a
            // separation that would count is checked against the hull's true extent there.
            if merged && (sep > edge_sep || sep > prediction) {
                sep = sep.min(low - extent(&l));
            }
            if sep > prediction {
                return true;
            }
            if sep > edge_sep {
                (edge_sep, edge, edge_normal) = (sep, (ei, j), -l);
            }
        }
    }
    if edge_sep > best + bias {
        (best, normal, axis) = (edge_sep, edge_normal, Axis::Edge(edge.0, edge.1));
    }

    // The points along the kept axis, in the hull's frame (on the hull, with their depths and
    // shape-side tags). Where the kept axis won by the bias and its clipped region rounds away,
    // the axis of least overlap, whose features always meet: the points along it.
    let strict = [
        (along_triangle.0, along_triangle.1, Axis::Triangle),
        (face_sep, -face_normal(face), Axis::Face(face)),
        (edge_sep, edge_normal, Axis::Edge(edge.0, edge.1)),
    ]
    .into_iter()
    .fold((f32::NEG_INFINITY, n, Axis::Triangle), |a, b| if b.0 > a.0 { b } else { a });
    let tag = |plane: u32, start: u32| 16 + (plane % 15) * 16 + (start & 15);
    let mut found: Poly<CAPACITY> = Poly::empty();
    let mut depths = [0.0f32; CAPACITY];
    let tolerance = 1e-4 * (1.0 + size);
    let mut realized = false;
    for (attempt, (sep, along, kept)) in [(best, normal, axis), strict].into_iter().enumerate() {
        if realized || (attempt == 1 && sep == best) {
            break;
        }
        (best, normal, axis) = (sep, along, kept);
        found = Poly::empty();
        let mut keep = |p: Point3<f32>, dist: f32, tag: u32, found: &mut Poly<CAPACITY>| {
            if dist <= prediction {
                depths[found.len()] = dist;
                found.push(p, tag);
            }
        };
        match axis {
            Axis::Triangle => {
                // Reference: the triangle's plane. Incident: of the faces around the deepest corner,
                // the one most against it (the face most against it overall may not hold that corner).
                let v = hull.vertices()[deepest];
                let first = v.first_adj_face_or_edge as usize;
                let around = &hull.faces_adj_to_vertex()[first..first + v.num_adj_faces_or_edge as usize];
                let f = around
                    .iter()
                    .map(|&f| f as usize)
                    .min_by(|&a, &b| face_normal(a).dot(&normal).total_cmp(&face_normal(b).dot(&normal)))
                    .unwrap_or(0);
                let r = ring_of(f);
                if !clippable(r) {
                    return false;
                }
                let mut poly: Poly<CAPACITY> = Poly::empty();
                for (k, &i) in r.iter().enumerate() {
                    poly.push(at(i), k as u32 & 15);
                }
                for s in 0..3 {
                    let inward = normal.cross(&sides[s]);
                    let inward = if inward.dot(&(q[(s + 2) % 3] - q[s])) < 0.0 { -inward } else { inward };
                    poly = clip(&poly, &q[s], &inward, s as u32, tag);
                }
                let code = (192 + (f as u32 % 64)) << 8;
                for (p, t) in poly.iter() {
                    keep(p, (p - q[0]).dot(&normal), code | t, &mut found);
                }
            }
            Axis::Face(f) => {
                // Reference: hull face `f` (outward `-normal`). Incident: the triangle, clipped to the
                // face's sides.
                let r = ring_of(f);
                if !clippable(r) {
                    return false;
                }
                let m = -normal;
                let center = r.iter().fold(Vector3::zeros(), |c, &i| c + at(i).coords) / r.len() as f32;
                let top = extent(&m);
                let mut poly = Poly::<CAPACITY>::new(&[(q[0], 0), (q[1], 1), (q[2], 2)]);
                for k in 0..r.len() {
                    let (a, b) = (at(r[k]), at(r[(k + 1) % r.len()]));
                    let inward = m.cross(&(b - a));
                    let inward = if inward.dot(&(center - a.coords)) < 0.0 { -inward } else { inward };
                    poly = clip(&poly, &a, &inward, k as u32, tag);
                }
                let code = (128 + (f as u32 % 64)) << 8;
                for (p, t) in poly.iter() {
                    // `p` on the triangle; its point on the hull's face plane is `p + normal * dist`.
                    let dist = p.coords.dot(&m) - top;
                    keep(p + normal * dist, dist, code | t, &mut found);
                }
            }
            Axis::Edge(ei, j) => {
                let e = hull.edges()[ei];
                let (on_hull, on_tri) =
                    segment_segment(&at(e.vertices[0]), &at(e.vertices[1]), &q[j], &q[(j + 1) % 3]);
                let dist = (on_hull - on_tri).dot(&normal);
                // Along the axis every pair on the two edges' lines is `best` apart; the closest
                // points realize it only where neither clamps to a segment's end.
                if best > 0.0 && ((on_hull - on_tri) - normal * dist).norm() > tolerance {
                    return false;
                }
                keep(on_tri + normal * dist, dist, ((50 + j as u32) << 8) | (ei as u32 & 0xff), &mut found);
            }
        }
        let nearest = depths[..found.len()].iter().copied().fold(f32::INFINITY, f32::min);
        realized = nearest <= best + tolerance;
    }
    if !realized {
        // Apart, no point pair at the axis's separation: the nearest points are elsewhere (corner
        // to corner), beyond what the axes measure. In touch, nothing found at the axis's depth:
        // merged faces hid the feature pair that bounds it.
        return false;
    }
    let world_normal = Unit::new_normalize(iso.rotation * normal);
    let mut push = |on_shape: Point3<f32>, dist: f32, sub: u32| {
        let on_tri = on_shape - normal * dist;
        out.push(ContactPoint {
            on_shape: iso * on_shape,
            on_triangle: iso * on_tri,
            normal: world_normal,
            dist,
            id: FeatureId { feature: feature_of(&on_tri, &q), sub, ..id },
            correction: Correction::None,
        });
    };
    for (k, (p, t)) in found.iter().enumerate() {
        push(p, depths[k], t);
    }
    true
}

/// Whether a face's corner ring can be clipped: at most [`MAX_FACE`] corners, none twice (parry
/// can merge faces into a ring that passes a corner twice: no polygon to clip).
fn clippable(ring: &[u32]) -> bool {
    ring.len() <= MAX_FACE && ring.iter().enumerate().all(|(i, v)| !ring[i + 1..].contains(v))
}

/// The larger of two numbers by one comparison. PERF: `f32::max`'s NaN rule costs several
/// instructions in the routine's per-corner and per-face loops; a NaN corner fails elsewhere.
#[inline]
fn larger(a: f32, b: f32) -> f32 {
    if b > a { b } else { a }
}

/// The smaller of two numbers by one comparison (see [`larger`]).
#[inline]
fn smaller(a: f32, b: f32) -> f32 {
    if b < a { b } else { a }
}
