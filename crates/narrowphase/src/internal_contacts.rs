//! Internal contacts: where a shape touches a surface made of many triangles, the triangles
//! around its true contact also report their edges and vertices the shape comes near. Those
//! points carry normals of features inside the surface (a crease, a protruding corner a few
//! millimetres deep) and a solver reads them as steps: a rolling ball bounces. The rule is Jolt's
//! `InternalEdgeRemovingCollector`: face contacts first, then the rest deepest first; a face
//! contact claims its triangle's corners, and an edge or vertex contact whose corners are all
//! claimed already, by contacts at least as deep, is internal and dropped; one that is kept
//! claims its own. (A deeper one is where the shape presses hardest, on triangles much smaller
//! than the shape: dropping it would lose the depth.) Corners are matched
//! by position (chunks decode shared vertices bit for bit), so the rule works across chunks. Edge
//! witnesses (a shape over no part of a triangle, near an inactive edge of it) count only where
//! they are the part's deepest points: the shape straddles that crease.
//!
//! Two rules look at the whole query rather than one triangle. A contact pushed out through a
//! one-sided triangle's front ([`Correction::Sunk`]) stands only while the shape is in the solid
//! there, as the nearest candidate triangles say: a ball's center or a capsule's segment (the
//! point of it nearest the triangle); for other shapes their center, or their deepest point under
//! the triangle lying right behind it (nothing between them). A shape beside a thin wall or a
//! sharp crest, behind one face's plane but in the open, is held by the faces it is in front of.
//!
//! A contact dropped by these rules (or an edge or vertex contact whose normal leaves the
//! feature's normal cone) still stands in, turned toward its own face, when no kept contact of
//! its shape is as deep: the rules turn a normal toward a face but never take away the only
//! contact of a penetrating shape.

use crate::closest::{point_triangle, segment_triangle, triangle_normal};
use crate::contact::{ContactPoint, Correction, TriangleFeature};
use crate::manifold::key;
use voxterra_core::nalgebra::{Point3, Unit, Vector3};
use voxterra_core::{Culling, Ray, ray_triangle};

/// A contact point whose normal is its triangle's face normal (within this cosine) counts as a
/// face contact: a box clipped against the face has points on the face's edges and corners.
pub(crate) const FACE_COS: f32 = 0.9999;

/// How much shallower than its part's deepest point an edge witness may be and still hold the
/// part (voxel units): rounding between the two triangles of the crease it straddles.
const WITNESS_SLACK: f32 = 1e-3;

/// What the rules need to know of a point beyond the point itself.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) enum Note {
    #[default]
    None,
    /// A [`Correction::Sunk`] point: whether made from beside its triangle (no point of the
    /// shape over it is deepest), and the point that stands in for it when the shape proves to be
    /// in the open yet nothing else holds it that deep.
    Sunk { beside: bool, fallback: ContactPoint },
    /// A penetrating edge or vertex contact, and what it becomes along its own face's normal.
    Sideways(ContactPoint),
    /// A point that stands in only if nothing else holds its shape as deep (a box touching a
    /// triangle only across an inactive edge, whose neighbor usually holds it).
    Hidden,
}

/// Which rule dropped a point (one that may restore it when nothing else holds its shape).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Dropped {
    #[default]
    No,
    Cone,
    Sunk,
    Hidden,
}

/// Where a compound part is inside or outside the solid.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Core {
    /// A ball's center or a capsule's segment: the shape is inside where the core is, the radius
    /// around it in the open otherwise.
    Segment(Point3<f32>, Point3<f32>),
    /// Any other shape's center.
    Point(Point3<f32>),
}

/// Scratch for [`keep`].
#[derive(Debug, Default, Clone)]
pub(crate) struct InternalScratch {
    order: Vec<u32>,
    /// Corners claimed so far, each with the deepest distance of the contacts that claimed it.
    claimed: Vec<([u32; 3], f32)>,
    keep: Vec<bool>,
    face: Vec<bool>,
    /// Per point, which rule dropped it before the corners were claimed.
    dropped: Vec<Dropped>,
    /// Per part, whether its center is inside the solid (decided when first asked).
    inside: Vec<Option<bool>>,
}

/// Whether `deepest` lies in the solid right behind triangle `tri`, at `foot` on it: the segment
/// between them crosses no other triangle of `nearby` (a shape poking through a thin wall from its
/// far side, or reaching past a sharp crest, crosses the surface it is in front of on the way).
fn behind(
    deepest: &Point3<f32>,
    foot: &Point3<f32>,
    tri: &[Point3<f32>; 3],
    nearby: &[[Point3<f32>; 3]],
) -> bool {
    let ray = Ray::new(*deepest, foot - deepest);
    // Short of the foot: the triangles around it share its edges and corners.
    let end = 1.0 - 1e-3;
    !nearby.iter().any(|t| {
        !t.iter().zip(tri).all(|(a, b)| bits(a) == bits(b))
            && ray_triangle(&ray, t, end, Culling::None).is_some()
    })
}

/// Whether `core` lies inside the solid behind the one-sided triangles `nearby`: by the
/// angle-weighted pseudo-normal at its nearest surface point (Bærentzen and Aanæs): the face's
/// normal on a face, the sum of the two faces' normals on an edge, the normals weighted by their
/// corner angles at a corner, found among `nearby` by shared corners (chunks decode shared
/// vertices bit for bit). A core on the surface, or with no triangle near, counts as inside (its
/// contacts stand).
fn inside(core: &Point3<f32>, nearby: &[[Point3<f32>; 3]]) -> bool {
    // The nearest triangle, ties to the lowest corners (any order of `nearby` decides alike).
    let key = |t: &[Point3<f32>; 3]| t.map(|c| bits(&c));
    let mut best: Option<(f32, usize)> = None;
    for (i, t) in nearby.iter().enumerate() {
        if triangle_normal(t).is_none() {
            continue;
        }
        let d = (core - point_triangle(core, t).0).norm();
        if best.is_none_or(|(bd, bi)| d < bd || (d == bd && key(t) < key(&nearby[bi]))) {
            best = Some((d, i));
        }
    }
    let Some((d, i)) = best else { return true };
    let tri = &nearby[i];
    let (q, feature) = point_triangle(core, tri);
    if d == 0.0 {
        return true;
    }
    let has = |t: &[Point3<f32>; 3], c: &Point3<f32>| t.iter().any(|p| bits(p) == bits(c));
    // The weights' total, to tell a pseudo-normal whose faces nearly cancel.
    let mut total = 0.0f32;
    let pseudo = match feature {
        TriangleFeature::Face => {
            total = 1.0;
            triangle_normal(tri).unwrap_or_else(Vector3::zeros)
        }
        TriangleFeature::Edge(e) => {
            let (a, b) = (tri[e as usize], tri[(e as usize + 1) % 3]);
            let mut sum = Vector3::zeros();
            let mut seen: Vec<[[u32; 3]; 3]> = Vec::new();
            for t in nearby.iter().filter(|t| has(t, &a) && has(t, &b)) {
                if let Some(n) = triangle_normal(t)
                    && !seen.contains(&t.map(|c| bits(&c)))
                {
                    seen.push(t.map(|c| bits(&c)));
                    sum += n;
                    total += 1.0;
                }
            }
            sum
        }
        TriangleFeature::Vertex(v) => {
            let c = tri[v as usize];
            let mut sum = Vector3::zeros();
            let mut seen: Vec<[[u32; 3]; 3]> = Vec::new();
            for t in nearby.iter().filter(|t| has(t, &c)) {
                let Some(n) = triangle_normal(t) else { continue };
                if seen.contains(&t.map(|c| bits(&c))) {
                    continue;
                }
                seen.push(t.map(|c| bits(&c)));
                let i = (0..3).find(|&i| bits(&t[i]) == bits(&c)).unwrap_or(0);
                let (u, w) = (t[(i + 1) % 3] - c, t[(i + 2) % 3] - c);
                let angle = u.angle(&w);
                if angle.is_finite() {
                    sum += n * angle;
                    total += angle;
                }
            }
            sum
        }
    };
    let by_normal = (core - q).dot(&pseudo) <= 0.0;
    if pseudo.norm() >= 0.5 * total {
        return by_normal;
    }
    // The faces at the nearest feature nearly cancel: a sharp crest, or a fold where a sliver
    // faces the other way, which sways the pseudo-normal. Rays decide instead, each by the facing
    // of its first hit (the back of a triangle: inside); rays leaving `nearby` abstain, and a tie
    // goes to the faces at the feature weighted by their areas (a fold's sliver weighs little).
    let (mut yes, mut no) = (0u32, 0u32);
    for d in VOTING_RAYS {
        let dir = Vector3::from(d);
        let ray = Ray::new(*core, dir);
        let first = nearby
            .iter()
            .filter_map(|t| ray_triangle(&ray, t, f32::MAX, Culling::None).map(|(s, _, _)| (s, t)))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((_, t)) = first
            && let Some(n) = triangle_normal(t)
        {
            if n.dot(&dir) > 0.0 { yes += 1 } else { no += 1 }
        }
    }
    match yes.cmp(&no) {
        std::cmp::Ordering::Greater => true,
        std::cmp::Ordering::Less => false,
        std::cmp::Ordering::Equal => {
            let corners: &[Point3<f32>] = match feature {
                TriangleFeature::Face => tri,
                TriangleFeature::Edge(e) => &[tri[e as usize], tri[(e as usize + 1) % 3]],
                TriangleFeature::Vertex(v) => std::slice::from_ref(&tri[v as usize]),
            };
            let mut seen: Vec<[[u32; 3]; 3]> = Vec::new();
            let mut weighted = Vector3::zeros();
            for t in nearby.iter().filter(|t| corners.iter().all(|c| has(t, c))) {
                if !seen.contains(&t.map(|c| bits(&c))) {
                    seen.push(t.map(|c| bits(&c)));
                    // Twice the area along the normal.
                    weighted += (t[1] - t[0]).cross(&(t[2] - t[0]));
                }
            }
            (core - q).dot(&weighted) <= 0.0
        }
    }
}

/// Directions of [`inside`]'s voting rays: spread over the sphere, none along an axis (the mesh's
/// vertices sit on voxel-aligned edges).
const VOTING_RAYS: [[f32; 3]; 5] = [
    [0.1817, 0.9718, 0.1502],
    [0.8412, -0.3164, 0.4386],
    [-0.6270, -0.2318, 0.7437],
    [-0.4583, 0.3961, -0.7957],
    [0.3345, -0.6978, -0.6334],
];

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

/// Whether each point stays: `false` for internal contacts. `corners[i]` is point `i`'s triangle,
/// `notes[i]` what else is known of it, `cores[part]` each compound part's center; `nearby` every
/// candidate triangle. A point turned toward its face is written over in `points`. Compound parts
/// are decided apart.
/// Deterministic: depends on the points only, not their order.
pub(crate) fn keep<'s>(
    points: &mut [ContactPoint],
    corners: &[[Point3<f32>; 3]],
    nearby: &[[Point3<f32>; 3]],
    notes: &[Note],
    cores: &[Core],
    s: &'s mut InternalScratch,
) -> &'s [bool] {
    // An edge witness takes its face's normal but is not over the face: an edge contact.
    // PERF: decided once a point, not in every comparison of the sort.
    s.face.clear();
    s.face.extend(points.iter().zip(corners).map(|(p, tri)| {
        p.correction != Correction::EdgeWitness
            && (p.id.feature == TriangleFeature::Face
                || matches!(p.correction, Correction::FaceNormal | Correction::Sunk)
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
    s.dropped.clear();
    s.dropped.resize(points.len(), Dropped::No);
    s.inside.clear();
    // Pushed out through a triangle's front: only a shape in the solid there is, by its center or
    // by its deepest point over the triangle (a capsule lying along the ground with one end dipped
    // in it). One pushed out from beside the triangle measures a chord of the shape, not its
    // depth: it stands only for a shape whose center is in the solid and that nothing pushes out
    // from over a face.
    let mut over_face = false;
    for (i, p) in points.iter().enumerate() {
        if p.correction != Correction::Sunk {
            continue;
        }
        let part = p.id.part as usize;
        if s.inside.len() <= part {
            s.inside.resize(part + 1, None);
        }
        let beside = matches!(notes[i], Note::Sunk { beside: true, .. });
        s.keep[i] = match cores.get(part) {
            // A ball or capsule is in the solid exactly where its core is: its core's point nearest
            // the triangle decides (a ball beside a crest or a thin wall, its center in the open,
            // is held by the faces it is in front of).
            Some(Core::Segment(a, b)) => inside(&segment_triangle(a, b, &corners[i]).0, nearby),
            Some(Core::Point(c)) => {
                let c = *c;
                *s.inside[part].get_or_insert_with(|| inside(&c, nearby))
                    || (!beside && behind(&p.on_shape, &p.on_triangle, &corners[i], nearby))
            }
            None => true,
        };
        over_face |= s.keep[i] && !beside;
    }
    if over_face {
        for (i, p) in points.iter().enumerate() {
            if s.keep[i]
                && matches!(notes[i], Note::Sunk { beside: true, .. })
                && points.iter().zip(notes).zip(&s.keep).any(|((q, n), &k)| {
                    k && q.id.part == p.id.part && matches!(n, Note::Sunk { beside: false, .. })
                })
            {
                s.keep[i] = false;
            }
        }
    }
    for (i, p) in points.iter().enumerate() {
        if p.correction == Correction::Sunk && !s.keep[i] {
            s.dropped[i] = Dropped::Sunk;
        }
        if matches!(notes[i], Note::Hidden) {
            (s.keep[i], s.dropped[i]) = (false, Dropped::Hidden);
        }
    }
    for (i, p) in points.iter().enumerate() {
        // An edge witness holds the shape only where it is the deepest point of its part still
        // standing (the shape straddles a slight crease); beside a deeper contact it is a phantom
        // step.
        if p.correction == Correction::EdgeWitness {
            let deepest = points
                .iter()
                .zip(&s.keep)
                .filter(|(q, k)| **k && q.id.part == p.id.part)
                .map(|(q, _)| q.dist)
                .fold(f32::INFINITY, f32::min);
            s.keep[i] = p.dist <= deepest + WITNESS_SLACK;
        }
        // An edge or vertex contact whose normal leaves its feature's normal cone comes from a
        // shape beside the feature, over a neighbor's face: that face holds it.
        if p.correction == Correction::None && !is_face(i) && !in_cone(p, &corners[i], nearby) {
            s.keep[i] = false;
            s.dropped[i] = Dropped::Cone;
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
        // Internal: every corner claimed by a contact at least as deep. A deeper edge or vertex
        // contact is where the shape truly presses (a crease between triangles whose faces it
        // touches only farther out), and stays.
        let held =
            |c: &Point3<f32>| s.claimed.iter().any(|&(b, d)| b == bits(c) && d <= p.dist + WITNESS_SLACK);
        if !is_face(i) && feature.iter().all(held) {
            s.keep[i] = false;
            continue;
        }
        for c in feature {
            match s.claimed.iter_mut().find(|(b, _)| *b == bits(c)) {
                Some((_, d)) => *d = d.min(p.dist),
                None => s.claimed.push((bits(c), p.dist)),
            }
        }
    }
    // Per part, the deepest stand-in of a dropped contact, when no kept contact of the part is as
    // deep: nothing else holds the shape there (EPA's way out of one triangle past its edge where
    // the neighbor is not touched; a shape in the open still pressing into a triangle from behind
    // its plane; a box across an inactive edge whose neighbor misses it).
    let mut i = 0;
    while i < s.order.len() {
        let part = points[s.order[i] as usize].id.part;
        let end = i + s.order[i..].iter().take_while(|&&j| points[j as usize].id.part == part).count();
        let run = &s.order[i..end];
        let stand_in = |j: usize| match (s.dropped[j], notes[j]) {
            (Dropped::Cone, Note::Sideways(r)) => Some(r),
            (Dropped::Sunk, Note::Sunk { fallback, .. }) => Some(fallback),
            (Dropped::Hidden, _) => Some(points[j]),
            _ => None,
        };
        let deepest = run
            .iter()
            .map(|&j| j as usize)
            .filter_map(|j| stand_in(j).map(|r| (j, r)))
            .min_by(|a, b| a.1.dist.total_cmp(&b.1.dist).then(a.0.cmp(&b.0)));
        if let Some((j, r)) = deepest
            && !run.iter().any(|&k| s.keep[k as usize] && points[k as usize].dist <= r.dist + WITNESS_SLACK)
        {
            points[j] = r;
            s.keep[j] = true;
        }
        // A part left with nothing, its edge and vertex contacts all judged beside their features
        // (a neighbor face too thin to make its own, or rounding at the cone's rim): its deepest
        // such contact stands, as near as the shape comes.
        if !run.iter().any(|&k| s.keep[k as usize])
            && let Some(j) = run
                .iter()
                .map(|&j| j as usize)
                .filter(|&j| s.dropped[j] == Dropped::Cone)
                .min_by(|&a, &b| points[a].dist.total_cmp(&points[b].dist).then(a.cmp(&b)))
        {
            s.keep[j] = true;
        }
        i = end;
    }
    // A ball whose center is in the solid is as deep as its radius plus the center's distance to
    // the nearest surface point. Contacts pushed out along faces measure their planes' distances,
    // which fall short where that point is on an edge or a corner: the deepest such contact
    // becomes the push toward it.
    for (part, core) in cores.iter().enumerate() {
        let Core::Segment(c, end) = *core else { continue };
        if c != end {
            continue;
        }
        let deepest = (0..points.len())
            .filter(|&j| {
                s.keep[j] && points[j].id.part as usize == part && points[j].correction == Correction::Sunk
            })
            .min_by(|&x, &y| points[x].dist.total_cmp(&points[y].dist).then(x.cmp(&y)));
        let Some(j) = deepest else { continue };
        let p = points[j];
        let radius = (p.on_shape - c).norm();
        let nearest = nearby
            .iter()
            .filter(|t| triangle_normal(t).is_some())
            .map(|t| point_triangle(&c, t).0)
            .min_by(|x, y| (x - c).norm_squared().total_cmp(&(y - c).norm_squared()));
        let Some(q) = nearest else { continue };
        let exact = -(radius + (q - c).norm());
        if let Some(n) = Unit::try_new(q - c, 1e-6)
            && exact < p.dist
        {
            points[j] = ContactPoint {
                on_shape: c - n.into_inner() * radius,
                on_triangle: q,
                normal: n,
                dist: exact,
                ..p
            };
        }
    }
    &s.keep
}
