//! Convex polygons clipped by planes (Sutherland–Hodgman), on the stack: the contact manifolds of
//! boxes and hulls against triangles (a face clipped to the other shape's face).

use voxterra_core::nalgebra::{Point3, Vector3};

/// A convex polygon of at most `N` tagged corners, on the stack. PERF: no allocation per clip
/// (four a triangle with vectors).
#[derive(Clone, Copy)]
pub(crate) struct Poly<const N: usize> {
    pts: [(Point3<f32>, u32); N],
    len: usize,
}

impl<const N: usize> Poly<N> {
    /// The polygon of `corners` (at most `N`: more are dropped).
    pub(crate) fn new(corners: &[(Point3<f32>, u32)]) -> Self {
        let len = corners.len().min(N);
        let mut pts = [(Point3::origin(), 0); N];
        pts[..len].copy_from_slice(&corners[..len]);
        Poly { pts, len }
    }

    /// An empty polygon, filled with [`Poly::push`].
    pub(crate) fn empty() -> Self {
        Poly { pts: [(Point3::origin(), 0); N], len: 0 }
    }

    /// Adds a corner; false (dropping it) when full.
    pub(crate) fn push(&mut self, p: Point3<f32>, tag: u32) -> bool {
        if self.len == N {
            return false;
        }
        self.pts[self.len] = (p, tag);
        self.len += 1;
        true
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (Point3<f32>, u32)> + '_ {
        self.pts[..self.len].iter().copied()
    }
}

/// Sutherland–Hodgman: the part of polygon `poly` on the inner side of the plane through `o` with
/// inward normal `m` (plane number `plane`). Kept corners keep their tags; a new crossing point
/// gets `tag(plane, the tag of the edge's start)`, stable while the same edges cross. A polygon
/// of `k` corners gains at most one corner a plane: callers size `N` for that.
pub(crate) fn clip<const N: usize>(
    poly: &Poly<N>,
    o: &Point3<f32>,
    m: &Vector3<f32>,
    plane: u32,
    tag: impl Fn(u32, u32) -> u32,
) -> Poly<N> {
    let mut out = Poly::empty();
    for idx in 0..poly.len {
        let (p, tp) = poly.pts[idx];
        let (q, _) = poly.pts[(idx + 1) % poly.len];
        let (dp, dq) = ((p - o).dot(m), (q - o).dot(m));
        if dp >= 0.0 {
            out.push(p, tp);
        }
        if (dp >= 0.0) != (dq >= 0.0) {
            let t = dp / (dp - dq);
            out.push(p + (q - p) * t, tag(plane, tp));
        }
    }
    out
}
