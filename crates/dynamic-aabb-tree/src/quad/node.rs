//! The node: four children's boxes as 4-lane rows and four child references, and the lane
//! helpers that test, merge and cost a node's children at once.

use crate::sah::{ITEM_MASK, LEAF_MOVED, NULL};
use voxterra_core::Aabb;
use voxterra_core::nalgebra::Point3;
use wide::{f32x4, i32x4};

/// On a child reference: the leaf moved since the last pair update, or the subtree holds one
/// that did.
pub(crate) const MOVED: u32 = LEAF_MOVED;

/// The arena index (internal node) or item (leaf) of a child reference.
#[inline(always)]
pub(crate) fn index(r: u32) -> usize {
    (r & ITEM_MASK) as usize
}

/// Children a node has room for.
pub(crate) const WIDTH: usize = 4;

/// A node: 128 bytes, two cache lines (the layout of Jolt's broadphase quad tree). Per axis, the
/// four children's low bounds as one 4-lane row, then their high bounds; then four child
/// references. `child[s]` is an internal node, `LEAF | item`, or `NULL` for an empty slot, whose
/// bounds are an empty box (lows `f32::MAX`, highs `-f32::MAX`): no overlap test passes it and
/// every union skips it.
///
/// PERF: children's boxes as exact floats. A byte-quantized node (64 bytes, each box in steps
/// of the node's frame) made queries as fast, but requantizing every node on a
/// refit cost 8 ms of a 33 ms frame at 100k boxes all moving, and the pair traversal
/// dequantized both nodes of every visit; here a refit is a min and a max per slot.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct QNode {
    pub(super) lo: [[f32; WIDTH]; 3],
    pub(super) hi: [[f32; WIDTH]; 3],
    pub(super) child: [u32; WIDTH],
}

const _: () = assert!(std::mem::size_of::<QNode>() == 128);

impl QNode {
    pub(super) const EMPTY: QNode =
        QNode { lo: [[f32::MAX; WIDTH]; 3], hi: [[-f32::MAX; WIDTH]; 3], child: [NULL; WIDTH] };

    /// A node over `children` (at most [`WIDTH`]) with their boxes.
    pub(super) fn new(children: &[(u32, Aabb)]) -> Self {
        debug_assert!(children.len() <= WIDTH);
        let mut n = QNode::EMPTY;
        for (s, (r, b)) in children.iter().enumerate() {
            n.child[s] = *r;
            n.set_slot(s, b);
        }
        n
    }

    /// Gives slot `s` the box `b`.
    #[inline(always)]
    pub(super) fn set_slot(&mut self, s: usize, b: &Aabb) {
        for a in 0..3 {
            self.lo[a][s] = b.mins[a];
            self.hi[a][s] = b.maxs[a];
        }
    }

    /// The number of children.
    pub(crate) fn len(&self) -> usize {
        self.child.iter().filter(|&&c| c != NULL).count()
    }

    /// Bit `s`: slot `s` holds a child.
    #[inline(always)]
    pub(super) fn present(&self) -> u32 {
        masks(self).0
    }

    /// Child `s`'s box.
    pub(crate) fn child_box(&self, s: usize) -> Aabb {
        Aabb::new(
            Point3::from(std::array::from_fn(|a| self.lo[a][s])),
            Point3::from(std::array::from_fn(|a| self.hi[a][s])),
        )
    }

    /// Per axis, the children's low bounds (slots 0–3), then their high bounds.
    #[inline(always)]
    pub(super) fn lanes(&self) -> [([f32; 4], [f32; 4]); 3] {
        std::array::from_fn(|a| (self.lo[a], self.hi[a]))
    }

    /// The node's box: the union of its children's (empty slots drop out of the min and max).
    #[inline]
    pub(crate) fn span(&self) -> Aabb {
        let lo = |a: usize| {
            let l = self.lo[a];
            l[0].min(l[1]).min(l[2].min(l[3]))
        };
        let hi = |a: usize| {
            let h = self.hi[a];
            h[0].max(h[1]).max(h[2].max(h[3]))
        };
        Aabb::new(Point3::new(lo(0), lo(1), lo(2)), Point3::new(hi(0), hi(1), hi(2)))
    }
}

/// A query box, tested against a node's four children at once.
pub(super) struct Probe {
    pub(super) lo: [f32x4; 3],
    pub(super) hi: [f32x4; 3],
}

impl Probe {
    pub(super) fn new(b: &Aabb) -> Self {
        Probe {
            lo: std::array::from_fn(|a| f32x4::splat(b.mins[a])),
            hi: std::array::from_fn(|a| f32x4::splat(b.maxs[a])),
        }
    }

    /// Bit `s`: child `s`'s box overlaps the probe (touching counts; a NaN fails).
    #[inline(always)]
    pub(super) fn hits(&self, n: &QNode) -> u32 {
        let lanes = n.lanes();
        let mut m = f32x4::splat(f32::from_bits(u32::MAX));
        for (a, (lo, hi)) in lanes.iter().enumerate() {
            m &= f32x4::from(*lo).simd_le(self.hi[a]) & self.lo[a].simd_le(f32x4::from(*hi));
        }
        m.to_bitmask() & n.present()
    }
}

/// Prefetches both lines of node `i` (if it exists): the boxes span both, the child references
/// sit in the second.
#[inline(always)]
pub(super) fn prefetch_node(nodes: &[QNode], i: usize) {
    if let Some(n) = nodes.get(i) {
        prefetch_index::prefetch_index(n.lo.as_slice(), 0);
        prefetch_index::prefetch_index(n.child.as_slice(), 0);
    }
}

/// Children's boxes of a node as lanes, per axis `(lows, highs)`, slot `s` in lane `s`.
pub(super) type Lanes = [(f32x4, f32x4); 3];

#[inline(always)]
pub(super) fn lanes(n: &QNode) -> Lanes {
    n.lanes().map(|(lo, hi)| (f32x4::from(lo), f32x4::from(hi)))
}

/// Slot `s`'s box, each coordinate in all four lanes (broadcast from the node: taken from lanes
/// in registers, they were spilled to the stack and reloaded).
#[inline(always)]
pub(super) fn spread(n: &QNode, s: usize) -> Lanes {
    std::array::from_fn(|a| (f32x4::splat(n.lo[a][s]), f32x4::splat(n.hi[a][s])))
}

/// A box with each coordinate in all four lanes.
#[inline(always)]
pub(super) fn spread_box(b: &Aabb) -> Lanes {
    std::array::from_fn(|a| (f32x4::splat(b.mins[a]), f32x4::splat(b.maxs[a])))
}

/// Lane `j`: the area ([`area`]) of child `j`'s box of `l` merged with the spread box `q`.
#[inline(always)]
pub(super) fn merged_areas(l: &Lanes, q: &Lanes) -> f32x4 {
    let e: [f32x4; 3] = std::array::from_fn(|a| l[a].1.max(q[a].1) - l[a].0.min(q[a].0));
    e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
}

/// The lane of the least of `v` (the first of equals).
#[inline(always)]
pub(super) fn lowest(v: &[f32; 4]) -> usize {
    (1..4).fold(0, |k, q| if v[q] < v[k] { q } else { k })
}

/// Lane `s`: 0 where bit `s` of `mask` is set, infinity where it is clear (the max of it and an
/// area rules the clear lanes out of a minimum).
#[inline(always)]
pub(super) fn empty_lanes(mask: u32) -> f32x4 {
    f32x4::from(std::array::from_fn::<f32, 4, _>(|s| if mask >> s & 1 != 0 { 0.0 } else { f32::INFINITY }))
}

/// Lane `j`: the area ([`area`]) of child `j`'s box of `l`.
#[inline(always)]
pub(super) fn areas(l: &Lanes) -> f32x4 {
    let e: [f32x4; 3] = std::array::from_fn(|a| l[a].1 - l[a].0);
    e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
}

/// Lane `k`: the union of the boxes of `l` in every lane but `k`.
#[inline(always)]
pub(super) fn others_union(l: &Lanes) -> Lanes {
    // The other three lanes, as three rotations of the four.
    let turn = |v: f32x4, r: usize| {
        let v = v.to_array();
        f32x4::from(std::array::from_fn::<f32, 4, _>(|k| v[(k + r) & 3]))
    };
    l.map(|(lo, hi)| {
        (turn(lo, 1).min(turn(lo, 2)).min(turn(lo, 3)), turn(hi, 1).max(turn(hi, 2)).max(turn(hi, 3)))
    })
}

/// Bit `j`: child `j` of `l` overlaps the spread box `q` (touching counts).
#[inline(always)]
pub(super) fn touch(l: &Lanes, q: &Lanes) -> u32 {
    let m = (0..3).fold(f32x4::splat(f32::from_bits(u32::MAX)), |m, a| {
        m & l[a].0.simd_le(q[a].1) & q[a].0.simd_le(l[a].1)
    });
    m.to_bitmask()
}

/// Per slot, as bits: `(holds a child, holds a moved child, holds a leaf)`. PERF: one 4-lane
/// compare and three sign masks (as scalar folds, 4% of a frame at 100k boxes all moving).
#[inline(always)]
pub(super) fn masks(n: &QNode) -> (u32, u32, u32) {
    let v = i32x4::from(n.child.map(|c| c as i32));
    // `NULL` has every bit set, so it is excluded from the flag masks by `present`.
    let present = !v.simd_eq(i32x4::splat(-1)).to_bitmask() & 0xF;
    let leaf = v.to_bitmask() & present;
    let moved = (v << 1i32).to_bitmask() & present;
    (present, moved, leaf)
}

/// Bit `s`: slot `s` holds a moved child.
#[inline(always)]
pub(super) fn moved_mask(n: &QNode) -> u32 {
    masks(n).1
}

/// Bit `s`: slot `s` holds a leaf.
#[inline(always)]
pub(super) fn leaf_mask(n: &QNode) -> u32 {
    masks(n).2
}

pub(super) const EMPTY: Aabb = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(0.0, 0.0, 0.0));

pub(super) fn area(b: &Aabb) -> f32 {
    let e = b.maxs - b.mins;
    e.x * e.y + e.y * e.z + e.z * e.x
}
