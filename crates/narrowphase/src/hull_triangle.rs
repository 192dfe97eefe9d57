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

/// The axis of least overlap.
#[derive(Clone, Copy)]
enum Axis {
    Triangle,
    Face(usize),
    Edge(usize, usize),
}

/// The contacts of `hull` at `iso` with triangle `tri` within `prediction`, two-sided, appended to
/// `out`; false (appending nothing) where the routine does not answer and GJK/EPA must: a hull
/// face of more than [`MAX_FACE`] corners, a degenerate triangle in the hull's frame, or shapes
/// apart whose nearest points no axis realizes.
pub(crate) fn hull_triangle(
    hull: &ConvexPolyhedron,
    iso: &Isometry3<f32>,
    tri: &[Point3<f32>; 3],
    prediction: f32,
    id: FeatureId,
    out: &mut Vec<ContactPoint>,
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
        size = size.max(p.x.abs()).max(p.y.abs()).max(p.z.abs());
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

    // The hull's faces, outward only (inward, the hull's other side is a face or a corner of its
    // own).
    // The bias holds between kinds of axis only: among the hull's faces (and among the edge
    // pairs) the least overlap wins, else the kept face's sides may miss the triangle.
    let (mut face_sep, mut face) = (f32::NEG_INFINITY, 0);
    // parry merges faces within a degree or so of each other: a face's corners are near its
    // plane, not on it, and another corner may even stand above it. So a face's corners screen
    // the faces; the hull's true extent along the normal decides a separation and the kept face.
    let extent = |m: &Vector3<f32>| {
        pts.iter().map(|p| p.x * m.x + p.y * m.y + p.z * m.z).fold(f32::NEG_INFINITY, f32::max)
    };
    for f in 0..faces.len() {
        let m = face_normal(f);
        let top = ring_of(f).iter().map(|&i| at(i).coords.dot(&m)).fold(f32::NEG_INFINITY, f32::max);
        let below = q.iter().map(|p| p.coords.dot(&m)).fold(f32::INFINITY, f32::min);
        let sep = below - top;
        if sep > prediction && below - extent(&m) > prediction {
            return true;
        }
        if sep > face_sep {
            (face_sep, face) = (sep, f);
        }
    }
    if face_sep > f32::NEG_INFINITY {
        let m = face_normal(face);
        face_sep = q.iter().map(|p| p.coords.dot(&m)).fold(f32::INFINITY, f32::min) - extent(&m);
        if face_sep > prediction {
            return true;
        }
    }
    if face_sep > best + bias {
        (best, normal, axis) = (face_sep, -face_normal(face), Axis::Face(face));
    }

    // Edge pairs whose normal cones meet: the hull edge's is the arc between its two faces'
    // normals; the triangle edge's, the half circle from its normal to its back through its
    // outward side. `l` on both (the triangle's reversed) is the pair's axis.
    let sides = [q[1] - q[0], q[2] - q[1], q[0] - q[2]];
    let outward = sides.map(|d| d.cross(&n));
    let (mut edge_sep, mut edge, mut edge_normal) = (f32::NEG_INFINITY, (0, 0), Vector3::zeros());
    for (ei, e) in hull.edges().iter().enumerate() {
        // parry keeps an edge of a triangle it dropped as degenerate pointing at no face: the
        // topology is not to be trusted there.
        if e.faces.iter().any(|&f| f as usize >= faces.len()) {
            return false;
        }
        let (fa, fb) = (face_normal(e.faces[0] as usize), face_normal(e.faces[1] as usize));
        let cos = fa.dot(&fb);
        if cos > 1.0 - 1e-6 {
            continue; // an edge inside a face merged from coplanar triangles
        }
        let a = at(e.vertices[0]);
        let dir = at(e.vertices[1]) - a;
        for j in 0..3 {
            let mut l = dir.cross(&sides[j]);
            let len = l.norm();
            if len.is_nan() || len <= 1e-6 * dir.norm() * sides[j].norm() {
                continue; // parallel: the face axes cover it
            }
            l /= len;
            if l.dot(&(fa + fb)) < 0.0 {
                l = -l;
            }
            // On the hull edge's arc, and the triangle's lowest along it is edge j.
            if l.dot(&fa) < cos || l.dot(&fb) < cos || l.dot(&outward[j]) >= 0.0 {
                continue;
            }
            let sep = l.dot(&(q[j] - a));
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
    for (attempt, (sep, along, kept)) in [(best, normal, axis), strict].into_iter().enumerate() {
        if attempt == 1 && (!found.is_empty() || sep == best) {
            break;
        }
        (best, normal, axis) = (sep, along, kept);
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
                if r.len() > MAX_FACE {
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
                if r.len() > MAX_FACE {
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
                if best > 0.0 && ((on_hull - on_tri) - normal * dist).norm() > 1e-4 * (1.0 + size) {
                    return false;
                }
                keep(on_tri + normal * dist, dist, ((50 + j as u32) << 8) | (ei as u32 & 0xff), &mut found);
            }
        }
    }
    let nearest = depths[..found.len()].iter().copied().fold(f32::INFINITY, f32::min);
    if best > 0.0 && (nearest.is_nan() || nearest > best + 1e-4 * (1.0 + size)) {
        // Apart, and no point pair found at the axis's separation: the nearest points are
        // elsewhere (corner to corner), beyond what the axes measure.
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
    if found.is_empty() {
        // Clipping rounded everything away (penetrating): the hull's corner deepest along the
        // axis, over the triangle's nearest point.
        let deepest = (0..pts.len() as u32)
            .map(at)
            .min_by(|a, b| a.coords.dot(&normal).total_cmp(&b.coords.dot(&normal)))
            .unwrap_or(Point3::origin());
        let (foot, _) = point_triangle(&deepest, &q);
        push(foot + normal * best, best, 53 << 8);
        return true;
    }
    for (k, (p, t)) in found.iter().enumerate() {
        push(p, depths[k], t);
    }
    true
}
