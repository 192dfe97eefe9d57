//! Packets of rays through the chunk tree: up to [`PACKET`] coherent rays (a picture's
//! neighbouring pixels) descend it together, each node's four child boxes tested against every ray
//! still inside it, so the packet walks the tree once and each chunk is handed over once for all
//! the rays that enter it (one cache lookup, its mesh and kD tree warm for the next ray).

use super::{ChunkTree, EMPTY, LEAF, WalkStack};
use voxterra_core::nalgebra::Vector3;
use voxterra_core::{PhysicsChunkKey, Ray};
use wide::f32x4;

/// The most rays a packet holds: one bit each in a mask.
pub(crate) const PACKET: usize = 64;

/// One ray's slab-test constants, its origin and inverse direction in every lane.
#[derive(Clone, Copy)]
struct Lanes {
    o: [f32x4; 3],
    id: [f32x4; 3],
    neg: [bool; 3],
}

impl ChunkTree {
    /// Casts up to [`PACKET`] rays together (the rest of `rays` is left alone): calls
    /// `visit(chunk, mask, limits)` for each chunk whose box a ray of `mask` (bit `i`: `rays[i]`)
    /// entered within its limit `limits[i]`, which `visit` lowers as it finds hits (a negative
    /// limit stops the ray). A ray is handed every chunk the single-ray cast hands it, and maybe
    /// more (entered before its limit fell), in another order: what a closest-hit search keeps
    /// is the same.
    pub(crate) fn cast_packet(
        &self,
        rays: &[Ray],
        limits: &mut [f32],
        visit: &mut impl FnMut(PhysicsChunkKey, u64, &mut [f32]),
    ) {
        let n = rays.len().min(limits.len()).min(PACKET);
        let live = |limits: &[f32]| (0..n).filter(|&i| limits[i] >= 0.0).fold(0u64, |m, i| m | 1 << i);
        let mut all = live(limits);
        let inv: [Vector3<f32>; PACKET] =
            std::array::from_fn(|i| if i < n { rays[i].dir.map(|d| 1.0 / d) } else { Vector3::zeros() });
        for &(leaf, b) in &self.extra {
            let mut m = 0;
            for i in bits(all) {
                if limits[i] >= 0.0 && b.clip_ray_inv(&rays[i].origin, &inv[i], limits[i]).is_some() {
                    m |= 1 << i;
                }
            }
            if m != 0 {
                visit(self.leaves[leaf as usize].0, m, limits);
                all &= live(limits);
            }
        }
        if all == 0 || self.root == EMPTY {
            return;
        }
        let lanes: [Lanes; PACKET] = std::array::from_fn(|i| {
            let (o, d) =
                if i < n { (rays[i].origin, inv[i]) } else { (Default::default(), Vector3::zeros()) };
            Lanes {
                o: std::array::from_fn(|a| f32x4::splat(o[a])),
                id: std::array::from_fn(|a| f32x4::splat(d[a])),
                neg: std::array::from_fn(|a| d[a] < 0.0),
            }
        });
        let mut stack = WalkStack::new((self.root, all));
        loop {
            let Some((r, m)) = stack.pop() else { return };
            let m = m & live(limits);
            if m == 0 {
                continue;
            }
            if r & LEAF != 0 {
                visit(self.leaves[(r & !LEAF) as usize].0, m, limits);
                continue;
            }
            let node = &self.nodes[r as usize];
            let mut masks = [0u64; 4];
            let mut nearest = [f32::INFINITY; 4];
            for i in bits(m) {
                let l = &lanes[i];
                let (mut t0, mut t1) = (f32x4::ZERO, f32x4::splat(limits[i]));
                for a in 0..3 {
                    let (lo, hi) = (f32x4::from(node.lo[a]), f32x4::from(node.hi[a]));
                    let (near, far) = if l.neg[a] { (hi, lo) } else { (lo, hi) };
                    // As the single-ray cast: a NaN keeps the bound.
                    t0 = ((near - l.o[a]) * l.id[a]).fast_max(t0);
                    t1 = ((far - l.o[a]) * l.id[a]).fast_min(t1);
                }
                let hit = t0.simd_le(t1).to_bitmask();
                let t = t0.to_array();
                for s in 0..4 {
                    if hit & (1 << s) != 0 {
                        masks[s] |= 1 << i;
                        if t[s] < nearest[s] {
                            nearest[s] = t[s];
                        }
                    }
                }
            }
            // Farthest first onto the stack, so the nearest is popped next; ties by slot.
            let mut order = [0usize, 1, 2, 3];
            order.sort_unstable_by(|&x, &y| nearest[y].total_cmp(&nearest[x]).then(y.cmp(&x)));
            for s in order {
                if masks[s] == 0 || node.child[s] == EMPTY {
                    continue;
                }
                stack.push((node.child[s], masks[s]));
            }
        }
    }
}

/// The indices of `m`'s set bits, lowest first.
pub(crate) fn bits(mut m: u64) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (m != 0).then(|| {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            i
        })
    })
}
