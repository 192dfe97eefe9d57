//! Box, point and ray queries: breadth first through a prefetch ring for boxes, depth first with
//! descent prefetch for rays.

use super::node::*;
use super::tree::*;
use crate::sah::{ITEM_MASK, LEAF, NULL};
use voxterra_core::Aabb;
use voxterra_core::nalgebra::{Point3, Vector3};
use wide::f32x4;

/// Lines prefetched past a node about to be visited: the depth-first layout puts its first
/// descendants there.
pub(super) const DESCENT: usize = 3;

impl QuadTree {
    #[inline(always)]
    pub(super) fn prefetch_descent(&self, c: usize) {
        for k in 0..=DESCENT {
            prefetch_node(&self.nodes, c + k);
        }
    }

    /// Calls `visit(item)` for each leaf whose box (as its node bounds it) overlaps `aabb`; false
    /// stops. Returns false when stopped. Depth first, each node prefetched as it is pushed.
    pub(crate) fn query(&self, aabb: &Aabb, visit: &mut impl FnMut(u32) -> bool) -> bool {
        if self.root == NULL {
            return true;
        }
        if self.root & LEAF != 0 {
            let hit = crate::sah::overlap(&self.box_of(self.root), aabb);
            return !hit || visit(self.root & ITEM_MASK);
        }
        let probe = Probe::new(aabb);
        let mut stack: Vec<u32> = Vec::new();
        let mut inline = [0u32; 64];
        let mut len = 1;
        inline[0] = self.root;
        loop {
            let i = if len > 0 {
                len -= 1;
                inline[len]
            } else if let Some(i) = stack.pop() {
                i
            } else {
                return true;
            };
            let n = &self.nodes[index(i)];
            let mut m = probe.hits(n);
            while m != 0 {
                let s = m.trailing_zeros() as usize;
                m &= m - 1;
                let c = n.child[s];
                if c & LEAF != 0 {
                    if !visit(c & ITEM_MASK) {
                        return false;
                    }
                } else {
                    self.prefetch_descent(index(c));
                    if len < inline.len() {
                        inline[len] = c;
                        len += 1;
                    } else {
                        stack.push(c);
                    }
                }
            }
        }
    }

    /// Ray traversal, nearest child first: `visit(item, limit)` returns the new limit (<= 0
    /// stops). A child is entered when the ray meets its box (as its node bounds it) within
    /// `[0, limit]`, by [`Aabb::clip_ray_inv`]'s arithmetic. Returns the final limit.
    pub(crate) fn cast_ray(
        &self,
        origin: &Point3<f32>,
        inv: &Vector3<f32>,
        mut limit: f32,
        visit: &mut impl FnMut(u32, f32) -> f32,
    ) -> f32 {
        if self.root == NULL || limit <= 0.0 {
            return limit;
        }
        if self.root & LEAF != 0 {
            if self.box_of(self.root).clip_ray_inv(origin, inv, limit).is_some() {
                limit = visit(self.root & ITEM_MASK, limit);
            }
            return limit;
        }
        let o: [f32x4; 3] = std::array::from_fn(|a| f32x4::splat(origin[a]));
        let id: [f32x4; 3] = std::array::from_fn(|a| f32x4::splat(inv[a]));
        // Which bound each axis enters by: the low one, or the high one for a negative direction
        // (by its sign, as `clip_ray_inv`).
        let neg: [bool; 3] = std::array::from_fn(|a| inv[a] < 0.0);
        // PERF: a stack on the stack, spilling to the heap only past its depth (a ray into a
        // tree of chunks is cast per ray: an allocation each was a tenth of a short cast).
        let mut stack = RayStack::new((self.root, 0.0));
        while let Some((r, enter)) = stack.pop() {
            if enter > limit {
                continue;
            }
            if r & LEAF != 0 {
                limit = visit(r & ITEM_MASK, limit);
                if limit <= 0.0 {
                    return limit;
                }
                continue;
            }
            let n = &self.nodes[index(r)];
            let (mut t0, mut t1) = (f32x4::ZERO, f32x4::splat(limit));
            for (a, (lo, hi)) in n.lanes().iter().enumerate() {
                let (lo, hi) = (f32x4::from(*lo), f32x4::from(*hi));
                let (near, far) = if neg[a] { (hi, lo) } else { (lo, hi) };
                let (near, far) = ((near - o[a]) * id[a], (far - o[a]) * id[a]);
                // `maxps`/`minps` return their second operand when the first is NaN or not
                // beyond it: `clip_ray_inv`'s compares exactly.
                t0 = near.fast_max(t0);
                t1 = far.fast_min(t1);
            }
            let mut m = t0.simd_le(t1).to_bitmask() & n.present();
            let t = t0.to_array();
            // Hits sorted farthest first onto the stack, so the nearest is popped next.
            let mut hits = [(0.0f32, 0u32); WIDTH];
            let mut k = 0;
            while m != 0 {
                let s = m.trailing_zeros() as usize;
                m &= m - 1;
                hits[k] = (t[s], n.child[s]);
                k += 1;
            }
            let hits = &mut hits[..k];
            hits.sort_unstable_by(|x, y| y.0.total_cmp(&x.0).then(y.1.cmp(&x.1)));
            for &(t, c) in hits.iter() {
                if c & LEAF == 0 {
                    self.prefetch_descent(index(c));
                }
                stack.push((c, t));
            }
        }
        limit
    }
}

/// A LIFO of pending ray entries: a fixed array first, then a vector for what does not fit (the
/// newest entries are always on the vector while it holds any, so the order stays last in,
/// first out).
struct RayStack {
    inline: [(u32, f32); 48],
    len: usize,
    spill: Vec<(u32, f32)>,
}

impl RayStack {
    fn new(first: (u32, f32)) -> Self {
        let mut inline = [(0, 0.0); 48];
        inline[0] = first;
        RayStack { inline, len: 1, spill: Vec::new() }
    }

    #[inline]
    fn push(&mut self, e: (u32, f32)) {
        if self.spill.is_empty() && self.len < self.inline.len() {
            self.inline[self.len] = e;
            self.len += 1;
        } else {
            self.spill.push(e);
        }
    }

    #[inline]
    fn pop(&mut self) -> Option<(u32, f32)> {
        if let Some(e) = self.spill.pop() {
            return Some(e);
        }
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.inline[self.len])
    }
}
