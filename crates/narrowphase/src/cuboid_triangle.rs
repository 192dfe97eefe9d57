//! Cuboid against triangle by the separating axis theorem: 13 axes (the triangle's normal, the
//! box's three face normals, nine edge cross products); the axis of least penetration (face axes
//! preferred within a tolerance) picks a reference face, and the other shape's incident polygon is
//! clipped against it, so a box resting on a triangle gets a point at each corner over it.

use crate::clip::{Poly, clip};
use crate::closest::{feature_of, point_triangle, segment_segment, triangle_normal};
use crate::contact::{ContactPoint, Correction, FeatureId, TriangleFeature};
use crate::convert::ToParry;
use crate::internal_edges::{ALL_ACTIVE, is_inactive};
use crate::triangle_set::TriangleRules;
use voxterra_core::nalgebra::{Isometry3, Point3, Unit, Vector3};

/// An edge axis wins over the best face axis only when it separates (or penetrates less) by more
/// than this, times the shapes' size: face contacts give stable manifolds.
pub(crate) const EDGE_BIAS: f32 = 1e-3;

/// The contacts of a box of half extents `half` at `pose` with triangle `tri` within `prediction`,
/// appended to `out`, and what stands beside them (see [`Routine`]).
pub(crate) fn cuboid_triangle(
    half: &Vector3<f32>,
    pose: &Isometry3<f32>,
    tri: &[Point3<f32>; 3],
    prediction: f32,
    id: FeatureId,
    surface: TriangleRules,
    out: &mut Vec<ContactPoint>,
) -> Routine {
    let Some(n) = triangle_normal(tri) else { return Routine::default() };
    let flags = surface.flags;
    let c = Point3::from(pose.translation.vector);
    let u = [0, 1, 2].map(|i| pose.rotation * Vector3::ith(i, 1.0));
    let h = [half.x, half.y, half.z];
    let scale = 1.0 + h.iter().fold(0.0f32, |a, &b| a.max(b));

    // Distance along axis `l` (unit): positive when separated. Returns (dist, normal from the
    // triangle toward the box).
    // The largest separation along any axis tested, ghost or not: positive when the shapes are
    // apart (SAT is exact for that test), a lower bound on their distance.
    let sat = std::cell::Cell::new(f32::NEG_INFINITY);
    let test = |l: Vector3<f32>| -> (f32, Vector3<f32>) {
        let rb: f32 = (0..3).map(|i| h[i] * u[i].dot(&l).abs()).sum();
        let cb = c.coords.dot(&l);
        let t = tri.map(|v| v.coords.dot(&l));
        let (tmin, tmax) = (t[0].min(t[1]).min(t[2]), t[0].max(t[1]).max(t[2]));
        // Pushing the box along +l clears the triangle by (cb - rb) - tmax; along -l by
        // tmin - (cb + rb). The better of the two is the axis's distance.
        let up = (cb - rb) - tmax;
        let down = tmin - (cb + rb);
        sat.set(sat.get().max(up).max(down));
        if up >= down { (up, l) } else { (down, -l) }
    };

    enum Axis {
        Triangle,
        Box(usize),
        Edge(usize, usize),
    }
    // An axis that pushes the box off this triangle across an inactive edge or vertex is a
    // ghost: the neighbor across that edge continues the surface. Such axes may still separate
    // (no contact), but never become the contact normal.
    let ghost = |l: &Vector3<f32>| -> bool {
        if flags == ALL_ACTIVE {
            return false;
        }
        // The triangle's feature reaching farthest toward the box along the axis: where the
        // contact this axis makes lies on the triangle.
        let depth = tri.map(|v| v.coords.dot(l));
        let top = depth[0].max(depth[1]).max(depth[2]);
        let tol = 1e-5 * scale;
        let at: Vec<usize> = (0..3).filter(|&k| depth[k] >= top - tol).collect();
        let feature = match at.as_slice() {
            [k] => TriangleFeature::Vertex(*k as u8),
            [a, b] => TriangleFeature::Edge(if (a + 1) % 3 == *b { *a as u8 } else { *b as u8 }),
            _ => TriangleFeature::Face,
        };
        is_inactive(feature, flags)
    };
    let (mut best_dist, mut best_normal) = test(n);
    let mut best = Axis::Triangle;
    let mut refused = false;
    // The largest separation along a refused axis (a lower bound on the distance all the same),
    // and that axis.
    let mut separated = f32::NEG_INFINITY;
    let mut refused_normal = n;
    for (i, ui) in u.iter().enumerate() {
        let (d, nn) = test(*ui);
        if d > prediction {
            return Routine::default();
        }
        // Prefer the triangle's face when the two are within the bias (terrain normals).
        if d > best_dist + EDGE_BIAS * scale {
            if ghost(&nn) {
                refused = true;
                if d > separated {
                    (separated, refused_normal) = (d, nn);
                }
            } else {
                (best_dist, best_normal, best) = (d, nn, Axis::Box(i));
            }
        }
    }
    let mut best_face = best_dist;
    if best_face > prediction {
        return Routine::default();
    }
    let edges = [tri[1] - tri[0], tri[2] - tri[1], tri[0] - tri[2]];
    for (i, ui) in u.iter().enumerate() {
        for (j, e) in edges.iter().enumerate() {
            let l = ui.cross(e);
            let len = l.norm();
            if len < 1e-6 * e.norm().max(1e-12) {
                continue; // parallel: the face axes cover it
            }
            let (d, nn) = test(l / len);
            if d > prediction {
                return Routine::default();
            }
            if d > best_face + EDGE_BIAS * scale {
                if flags & (1 << j) == 0 || ghost(&nn) {
                    refused = true;
                    if d > separated {
                        (separated, refused_normal) = (d, nn);
                    }
                } else {
                    (best_dist, best_normal, best) = (d, nn, Axis::Edge(i, j));
                    best_face = d;
                }
            }
        }
    }
    // One-sided triangles: an axis that would push the box out through the triangle's back (the
    // box sank past the surface, or the surface rose through it) gives way to the face itself: the
    // box's face is clipped to the triangle and pushed back up along its normal, however deep.
    let mut correction = Correction::None;
    let mut two_sided = None;
    if surface.one_sided && best_normal.dot(&n) < 0.0 {
        correction = Correction::Sunk;
        two_sided = Some(best_dist.max(floor_of(separated, best_dist)));
        let rb: f32 = (0..3).map(|i| h[i] * u[i].dot(&n).abs()).sum();
        (best, best_normal) = (Axis::Triangle, n);
        best_dist = (c.coords.dot(&n) - rb) - tri[0].coords.dot(&n);
        if best_dist > prediction {
            return Routine::default();
        }
    }
    // A refused axis that separates the shapes more than the kept one bounds the distance from
    // below: the points keep the kept axis's normal but come no nearer than that. Apart, the
    // Euclidean distance bounds it exactly (the best of 13 axes falls short of it where a box
    // corner faces a triangle edge or corner).
    let mut floor = floor_of(separated, best_dist);
    if correction == Correction::None && sat.get() > 0.0 {
        floor = floor.max(distance_apart(half, pose, tri).unwrap_or(sat.get()).max(sat.get()));
    }
    if floor > prediction {
        return Routine::default();
    }
    let normal = Unit::new_normalize(best_normal);
    let nv = normal.into_inner();
    let before = out.len();
    match best {
        Axis::Triangle => {
            // Reference: the triangle's plane, normal `nv`. Incident: the box face most against it.
            let (i, sign) = (0..3)
                .map(|i| (i, u[i].dot(&nv)))
                .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
                .map(|(i, d)| (i, if d > 0.0 { -1.0 } else { 1.0 }))
                .unwrap_or((1, -1.0));
            let (j, k) = ((i + 1) % 3, (i + 2) % 3);
            let center = c + u[i] * (sign * h[i]);
            let corners = [(1.0f32, 1.0f32), (-1.0, 1.0), (-1.0, -1.0), (1.0, -1.0)]
                .map(|(a, b)| center + u[j] * (a * h[j]) + u[k] * (b * h[k]));
            let mut poly =
                Poly::<8>::new(&[(corners[0], 0), (corners[1], 1), (corners[2], 2), (corners[3], 3)]);
            for e in 0..3 {
                let (a, b) = (tri[e], tri[(e + 1) % 3]);
                let inward = nv.cross(&(b - a));
                // Orient inward toward the third corner.
                let inward = if inward.dot(&(tri[(e + 2) % 3] - a)) < 0.0 { -inward } else { inward };
                poly = clip(&poly, &a, &inward, e as u32, box_tag);
            }
            let face = (i as u32 * 2 + u32::from(sign > 0.0)) << 8;
            for (p, tag) in poly.iter() {
                let dist = (p - tri[0]).dot(&nv);
                if dist <= prediction {
                    let on_tri = p - nv * dist;
                    let feature = feature_of(&on_tri, tri);
                    out.push(ContactPoint {
                        on_shape: p,
                        on_triangle: on_tri,
                        normal,
                        dist,
                        id: FeatureId { feature, sub: face | tag, ..id },
                        correction,
                    });
                }
            }
        }
        Axis::Box(i) => {
            // Reference: the box face facing the triangle (outward normal -nv). Incident: the
            // triangle, clipped to the face's four side planes.
            let mut poly = Poly::<8>::new(&[(tri[0], 0), (tri[1], 1), (tri[2], 2)]);
            for (s, k) in [(i + 1) % 3, (i + 2) % 3].into_iter().enumerate() {
                for (t, sign) in [1.0f32, -1.0].into_iter().enumerate() {
                    let o = c + u[k] * (sign * h[k]);
                    poly = clip(&poly, &o, &(u[k] * -sign), (s * 2 + t) as u32, box_tag);
                }
            }
            let face = (16 + i as u32) << 8;
            for (p, tag) in poly.iter() {
                let dist = (p - c).dot(&-nv) - h[i];
                if dist <= prediction {
                    let feature = feature_of(&p, tri);
                    out.push(ContactPoint {
                        on_shape: p + nv * dist,
                        on_triangle: p,
                        normal,
                        dist,
                        id: FeatureId { feature, sub: face | tag, ..id },
                        correction: Correction::None,
                    });
                }
            }
        }
        Axis::Edge(i, j) => {
            // The box edge along u[i] deepest toward the triangle, against the triangle's
            // feature reaching farthest toward the box: edge j, or the vertex opposite when it
            // reaches past that edge (the axis's overlap is then the vertex's).
            let mut mid = c;
            for k in (0..3).filter(|&k| k != i) {
                let s = if u[k].dot(&nv) > 0.0 { -1.0 } else { 1.0 };
                mid += u[k] * (s * h[k]);
            }
            let (a, b) = (mid - u[i] * h[i], mid + u[i] * h[i]);
            let (e0, e1, o) = (tri[j], tri[(j + 1) % 3], tri[(j + 2) % 3]);
            let (p, q) = if (o - e0).dot(&nv) > 0.0 { (o, o) } else { (e0, e1) };
            let (on_box, on_tri) = segment_segment(&a, &b, &p, &q);
            let dist = (on_box - on_tri).dot(&nv);
            if dist <= prediction {
                out.push(ContactPoint {
                    // Along the normal from the triangle's point (the closest points leave the
                    // axis only where a segment end clamps).
                    on_shape: on_tri + nv * dist,
                    on_triangle: on_tri,
                    normal,
                    dist,
                    id: FeatureId {
                        feature: feature_of(&on_tri, tri),
                        sub: (32 + i as u32 * 3 + j as u32) << 8,
                        ..id
                    },
                    correction: Correction::None,
                });
            }
        }
    }
    // Nothing over the triangle along the kept axis, after a shallower axis was refused as a
    // ghost: the box touches this triangle only across an inactive edge, where the neighbor's face
    // usually carries the contact. Whether one does is decided across the query: the box's
    // deepest corner along the refused axis, at that axis's distance but with the face's normal
    // (on the box's side), is handed back to stand in should nothing else hold the box.
    if out.len() == before && refused && separated <= prediction && correction == Correction::None {
        let mut p = c;
        for k in 0..3 {
            let s = if u[k].dot(&refused_normal) > 0.0 { -1.0 } else { 1.0 };
            p += u[k] * (s * h[k]);
        }
        let (on_tri, feature) = point_triangle(&p, tri);
        let face = if (c - tri[0]).dot(&n) >= 0.0 || surface.one_sided { n } else { -n };
        let separated = separated.max(floor);
        return Routine {
            two_sided,
            hidden: Some(ContactPoint {
                on_shape: on_tri + face * separated,
                on_triangle: on_tri,
                normal: Unit::new_unchecked(face),
                dist: separated,
                id: FeatureId { feature, sub: 49 << 8, ..id },
                correction: Correction::FaceNormal,
            }),
        };
    }
    if out.len() == before && best_dist <= prediction && (!refused || correction == Correction::Sunk) {
        // Clipping rounded everything away: the box's support corner alone.
        let mut p = c;
        for k in 0..3 {
            let s = if u[k].dot(&nv) > 0.0 { -1.0 } else { 1.0 };
            p += u[k] * (s * h[k]);
        }
        let (on_tri, feature) = point_triangle(&p, tri);
        out.push(ContactPoint {
            on_shape: on_tri + nv * best_dist,
            on_triangle: on_tri,
            normal,
            dist: best_dist,
            id: FeatureId { feature, sub: 48 << 8, ..id },
            correction,
        });
    }
    for p in &mut out[before..] {
        if p.dist < floor {
            p.dist = floor;
            p.on_shape = p.on_triangle + nv * floor;
        }
    }
    Routine { two_sided, hidden: None }
}

/// The Euclidean distance between a box of half extents `half` at `pose` and a triangle that SAT
/// found apart, by GJK in the box's frame (far from the origin, world coordinates round by more
/// than the gap). `None` where GJK gives no finite answer.
fn distance_apart(half: &Vector3<f32>, pose: &Isometry3<f32>, tri: &[Point3<f32>; 3]) -> Option<f32> {
    let local = tri.map(|v| pose.inverse_transform_point(&v).to_parry());
    let t = parry3d::shape::Triangle::new(local[0], local[1], local[2]);
    let b = parry3d::shape::Cuboid::new(half.to_parry());
    let id = parry3d::math::Pose::IDENTITY;
    parry3d::query::distance(&id, &b, &id, &t).ok().map(|d| d.distance).filter(|d| d.is_finite())
}

/// What a routine hands back beside its points.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Routine {
    /// For points it pushed out through a one-sided triangle's front itself: the two-sided
    /// distance it found first.
    pub(crate) two_sided: Option<f32>,
    /// A point that stands in only if nothing else holds the shape (the internal-contact rules
    /// decide across the query).
    pub(crate) hidden: Option<ContactPoint>,
}

/// The lower bound a refused axis separating by `separated` puts on the distance, over the kept
/// axis's `best`.
fn floor_of(separated: f32, best: f32) -> f32 {
    if separated > 0.0 && separated > best { separated } else { f32::NEG_INFINITY }
}

/// A clipped corner's tag: kept corners keep theirs, new crossing points get `16 + plane * 8 +
/// the tag of the edge's start` (stable while the same edges cross).
fn box_tag(plane: u32, start: u32) -> u32 {
    16 + plane * 8 + (start & 7)
}
