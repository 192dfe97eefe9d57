//! Manifold reduction: contact points grouped by normal, each group cut to at most four points
//! that keep the deepest contact and span the largest area (the rule of Jolt's
//! `PruneContactPoints`), so a solver gets a stable support polygon from few points.

use crate::contact::{ContactPoint, Manifold};
use voxterra_core::nalgebra::{Point3, Vector3};

/// Points whose normals are within this angle of a group's normal join the group.
pub const NORMAL_TOLERANCE_DEGREES: f32 = 5.0;

/// Scratch for [`reduce`], reused between calls.
#[derive(Debug, Default, Clone)]
pub struct ReduceScratch {
    order: Vec<u32>,
    group_of: Vec<u32>,
    members: Vec<u32>,
}

/// Groups `points` by normal (within [`NORMAL_TOLERANCE_DEGREES`] of the group's deepest point)
/// and appends one manifold per group to `out`, each of at most four points. Deterministic: the
/// result depends only on the points, in order.
pub fn reduce(points: &[ContactPoint], scratch: &mut ReduceScratch, out: &mut Vec<Manifold>) {
    let cos_tol = NORMAL_TOLERANCE_DEGREES.to_radians().cos();
    let s = scratch;
    // Deepest first, ties by feature id, so groups take the deepest point's normal.
    s.order.clear();
    s.order.extend(0..points.len() as u32);
    s.order.sort_by(|&a, &b| {
        let (pa, pb) = (&points[a as usize], &points[b as usize]);
        pa.dist.total_cmp(&pb.dist).then_with(|| key(pa).cmp(&key(pb)))
    });
    s.group_of.clear();
    s.group_of.resize(points.len(), u32::MAX);
    let mut heads: Vec<u32> = Vec::new();
    for &i in &s.order {
        let n = points[i as usize].normal;
        let g = heads.iter().position(|&h| points[h as usize].normal.dot(&n) >= cos_tol);
        s.group_of[i as usize] = match g {
            Some(g) => g as u32,
            None => {
                heads.push(i);
                heads.len() as u32 - 1
            }
        };
    }
    for (g, &head) in heads.iter().enumerate() {
        s.members.clear();
        s.members.extend(s.order.iter().copied().filter(|&i| s.group_of[i as usize] == g as u32));
        let normal = points[head as usize].normal;
        let kept = prune(points, &s.members, &normal);
        let chosen: Vec<ContactPoint> = kept.iter().map(|&i| points[i as usize]).collect();
        out.push(Manifold::new(normal, &chosen));
    }
}

pub(crate) fn key(p: &ContactPoint) -> (u32, u32, u32, u8) {
    let f = match p.id.feature {
        crate::TriangleFeature::Vertex(i) => i,
        crate::TriangleFeature::Edge(i) => 3 + i,
        crate::TriangleFeature::Face => 6,
    };
    (p.id.triangle, p.id.part, p.id.sub, f)
}

/// At most four of `members` (deepest first): the deepest point, the point farthest from it, and
/// the points farthest on each side of the line through those two, measured in the plane
/// perpendicular to `normal`. Fewer when the group has fewer, or a side is empty.
fn prune(points: &[ContactPoint], members: &[u32], normal: &Vector3<f32>) -> Vec<u32> {
    if members.len() <= Manifold::MAX_POINTS {
        return members.to_vec();
    }
    let flat = |i: u32| {
        let p: Point3<f32> = points[i as usize].on_triangle;
        p.coords - normal * normal.dot(&p.coords)
    };
    let first = members[0];
    let f = flat(first);
    let farthest = |from: &Vector3<f32>| {
        let mut best = (members[0], -1.0f32);
        for &i in members {
            let d = (flat(i) - from).norm_squared();
            if d > best.1 {
                best = (i, d);
            }
        }
        best
    };
    let (second, spread) = farthest(&f);
    if spread <= 1e-12 {
        return vec![first];
    }
    let s = flat(second);
    let across = (s - f).cross(normal);
    let (mut left, mut right) = ((None, 0.0f32), (None, 0.0f32));
    for &i in members {
        let side = across.dot(&(flat(i) - f));
        if side > left.1 {
            left = (Some(i), side);
        }
        if side < right.1 {
            right = (Some(i), side);
        }
    }
    let mut kept = vec![first, second];
    kept.extend(left.0);
    kept.extend(right.0);
    kept
}
