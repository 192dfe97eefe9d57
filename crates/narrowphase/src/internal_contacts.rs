//! Internal contacts: where a shape touches a surface made of many triangles, the triangles
//! around its true contact also report their edges and vertices the shape comes near. Those
//! points carry normals of features inside the surface (a crease, a protruding corner a few
//! millimetres deep) and a solver reads them as steps: a rolling ball bounces. The rule is Jolt's
//! `InternalEdgeRemovingCollector`: face contacts first, then the rest deepest first; a face
//! contact claims its triangle's corners, and an edge or vertex contact whose corners are all
//! claimed already is internal and dropped; one that is kept claims its own. Corners are matched
//! by position (chunks decode shared vertices bit for bit), so the rule works across chunks. Edge
//! witnesses (a shape over no part of a triangle, near an inactive edge of it) count only where
//! they are the part's deepest points: the shape straddles that crease.

use crate::closest::triangle_normal;
use crate::contact::{ContactPoint, Correction, TriangleFeature};
use crate::manifold::key;
use voxterra_core::nalgebra::{Point3, Vector3};

/// A contact point whose normal is its triangle's face normal (within this cosine) counts as a
/// face contact: a box clipped against the face has points on the face's edges and corners.
const FACE_COS: f32 = 0.9999;

/// How much shallower than its part's deepest point an edge witness may be and still hold the
/// part (voxel units): rounding between the two triangles of the crease it straddles.
const WITNESS_SLACK: f32 = 1e-3;

/// Scratch for [`keep`].
#[derive(Debug, Default, Clone)]
pub(crate) struct InternalScratch {
    order: Vec<u32>,
    claimed: Vec<[u32; 3]>,
    keep: Vec<bool>,
    face: Vec<bool>,
}

/// How far outside its feature's cone a contact normal may lean (sine of the angle): rounding.
const CONE_SLACK: f32 = 1e-3;

/// Whether `p`'s normal lies in the normal cone of its edge or vertex: between the faces around
/// it, found among the query's triangles by shared corners. A feature whose neighbors are not
/// among them (the mesh's rim, a chunk not queried) passes.
fn in_cone(p: &ContactPoint, tri: &[Point3<f32>; 3], nearby: &[[Point3<f32>; 3]]) -> bool {
    let m = p.normal.into_inner();
    let Some(own) = triangle_normal(tri) else { return true };
    let has = |t: &[Point3<f32>; 3], c: &Point3<f32>| t.iter().any(|q| bits(q) == bits(c));
    let same = |t: &[Point3<f32>; 3]| t.iter().all(|q| has(tri, q));
    match p.id.feature {
        TriangleFeature::Edge(e) => {
            let (a, b) = (tri[e as usize], tri[(e as usize + 1) % 3]);
            let Some(other) = nearby.iter().find(|t| !same(t) && has(t, &a) && has(t, &b)) else {
                return true;
            };
            let Some(n) = triangle_normal(other) else { return true };
            // On the arc from the own face's normal to the neighbor's (the edge is convex: active).
            let axis = own.cross(&n);
            own.cross(&m).dot(&axis) >= -CONE_SLACK && m.cross(&n).dot(&axis) >= -CONE_SLACK
        }
        TriangleFeature::Vertex(v) => {
            let c = tri[v as usize];
            let mut normals: Vec<(Vector3<f32>, [Point3<f32>; 3])> = Vec::new();
            for t in nearby.iter().filter(|t| has(t, &c)) {
                if let Some(n) = triangle_normal(t)
                    && !normals.iter().any(|(_, u)| u.iter().all(|q| has(t, q)))
                {
                    normals.push((n, *t));
                }
            }
            if normals.len() < 2 {
                return true;
            }
            // Inside every plane through two faces that share an edge at the vertex, on the side
            // of the faces' mean normal.
            let mean = normals.iter().fold(Vector3::zeros(), |acc, (n, _)| acc + n);
            for (i, (ni, ti)) in normals.iter().enumerate() {
                for (nj, tj) in &normals[i + 1..] {
                    let shared = ti.iter().filter(|q| has(tj, q)).count();
                    if shared < 2 {
                        continue;
                    }
                    let plane = ni.cross(nj);
                    if plane.norm() < 1e-6 {
                        continue;
                    }
                    let side = plane.dot(&mean);
                    if side.abs() > 1e-6 && plane.dot(&m) * side.signum() < -CONE_SLACK {
                        return false;
                    }
                }
            }
            true
        }
        TriangleFeature::Face => true,
    }
}

fn bits(p: &Point3<f32>) -> [u32; 3] {
    [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()]
}

/// Whether each point stays: `false` for internal contacts. `corners[i]` is point `i`'s triangle.
/// Compound parts are decided apart. Deterministic: depends on the points only, not their order.
pub(crate) fn keep<'s>(
    points: &[ContactPoint],
    corners: &[[Point3<f32>; 3]],
    nearby: &[[Point3<f32>; 3]],
    s: &'s mut InternalScratch,
) -> &'s [bool] {
    // An edge witness takes its face's normal but is not over the face: an edge contact.
    // PERF: decided once a point, not in every comparison of the sort.
    s.face.clear();
    s.face.extend(points.iter().zip(corners).map(|(p, tri)| {
        p.correction != Correction::EdgeWitness
            && (p.id.feature == TriangleFeature::Face
                || p.correction == Correction::FaceNormal
                || triangle_normal(tri).is_some_and(|n| p.normal.dot(&n) > FACE_COS))
    }));
    let face = &s.face;
    let is_face = |i: usize| face[i];
    s.order.clear();
    s.order.extend(0..points.len() as u32);
    s.order.sort_by(|&a, &b| {
        let (pa, pb) = (&points[a as usize], &points[b as usize]);
        (pa.id.part, !is_face(a as usize))
            .cmp(&(pb.id.part, !is_face(b as usize)))
            .then(pa.dist.total_cmp(&pb.dist))
            .then_with(|| bits(&corners[a as usize][0]).cmp(&bits(&corners[b as usize][0])))
            .then_with(|| key(pa).cmp(&key(pb)))
    });
    s.keep.clear();
    s.keep.resize(points.len(), true);
    for (i, p) in points.iter().enumerate() {
        // An edge witness holds the shape only where it is the deepest point of its part (the
        // shape straddles a slight crease); beside a deeper contact it is a phantom step.
        if p.correction == Correction::EdgeWitness {
            let deepest = points
                .iter()
                .filter(|q| q.id.part == p.id.part)
                .map(|q| q.dist)
                .fold(f32::INFINITY, f32::min);
            s.keep[i] = p.dist <= deepest + WITNESS_SLACK;
        }
        // An edge or vertex contact whose normal leaves its feature's normal cone comes from a
        // shape beside the feature, over a neighbor's face: that face holds it.
        if p.correction == Correction::None && !is_face(i) && !in_cone(p, &corners[i], nearby) {
            s.keep[i] = false;
        }
    }
    s.claimed.clear();
    let mut part = None;
    for &i in &s.order {
        let i = i as usize;
        if !s.keep[i] {
            continue;
        }
        let p = &points[i];
        if part != Some(p.id.part) {
            part = Some(p.id.part);
            s.claimed.clear();
        }
        let tri = &corners[i];
        let feature: &[Point3<f32>] = match p.id.feature {
            _ if is_face(i) => tri,
            TriangleFeature::Edge(e) => &[tri[e as usize], tri[(e as usize + 1) % 3]],
            TriangleFeature::Vertex(v) => std::slice::from_ref(&tri[v as usize]),
            TriangleFeature::Face => tri,
        };
        if !is_face(i) && feature.iter().all(|c| s.claimed.contains(&bits(c))) {
            s.keep[i] = false;
            continue;
        }
        for c in feature {
            if !s.claimed.contains(&bits(c)) {
                s.claimed.push(bits(c));
            }
        }
    }
    &s.keep
}
