//! 4-wide nodes of one cache line: the layout the tree is moving to (docs/architecture.md, issue
//! 6, "Session 21"). Each node holds its four children's boxes as bytes in its own frame
//! (`origin + q × scale` per axis, rounded outward), so a visit decides among four subtrees from
//! one line, and a descent has half the binary tree's levels.
//!
//! This first part is read-only: a tree built from leaves by binned SAH (the binary tree's split,
//! taken four ways), box, point and ray queries, and a validation. Updates, the pair traversal and
//! the swap into [`crate::DynamicAabbTree`] come next.

use crate::tree::{ITEM_MASK, Item, LEAF, NULL, split};
use voxterra_core::Aabb;
use voxterra_core::nalgebra::{Point3, Vector3};
use wide::{CmpLe, f32x4, i16x8, i32x8, u8x16};

/// Children a node has room for.
pub(crate) const WIDTH: usize = 4;

/// The highest step of a frame.
const TOP: u8 = u8::MAX;

/// A node: 64 bytes, one cache line.
///
/// `q[a]` holds, on axis `a`, the four children's low bounds (bytes 0–3) and high bounds (4–7) as
/// steps of the node's frame: step `k` is at `origin[a] + k × scale[a]`, computed in f32 exactly
/// so by quantiser and queries, and each child's steps bound its box from outside. `child[s]` is
/// an internal node, `LEAF | item`, or `NULL` for an empty slot (whose steps are 255 low, 0 high).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct QNode {
    q: [[u8; 8]; 3],
    origin: [f32; 3],
    scale: [f32; 3],
    pub(crate) child: [u32; WIDTH],
}

const _: () = assert!(std::mem::size_of::<QNode>() == 64);

/// A node's frame on one axis: where its steps are.
#[derive(Clone, Copy, Debug)]
struct Axis {
    origin: f32,
    scale: f32,
}

impl Axis {
    /// The frame spanning `[lo, hi]` (finite, `lo <= hi`): step 0 at `lo`, step 255 at or above
    /// `hi`.
    fn new(lo: f32, hi: f32) -> Self {
        if hi <= lo {
            return Axis { origin: lo, scale: 0.0 };
        }
        // Not `(hi - lo) / 255`: the difference of far-apart finite bounds may overflow.
        let mut scale = hi / f32::from(TOP) - lo / f32::from(TOP);
        while lo + f32::from(TOP) * scale < hi {
            scale = scale.next_up();
        }
        Axis { origin: lo, scale }
    }

    /// The coordinate of step `k`: the queries' dequantisation, bit for bit.
    #[inline(always)]
    fn value(self, k: u8) -> f32 {
        self.origin + f32::from(k) * self.scale
    }

    /// The highest step at or below `x` (`x` at or above the origin).
    fn down(self, x: f32) -> u8 {
        let mut k = self.estimate(x);
        while k > 0 && self.value(k) > x {
            k -= 1;
        }
        while k < TOP && self.value(k + 1) <= x {
            k += 1;
        }
        k
    }

    /// The lowest step at or above `x` (`x` at or below step 255).
    fn up(self, x: f32) -> u8 {
        let mut k = self.estimate(x);
        while k < TOP && self.value(k) < x {
            k += 1;
        }
        while k > 0 && self.value(k - 1) >= x {
            k -= 1;
        }
        k
    }

    /// About `(x - origin) / scale`, clamped to the steps (0 on a flat axis).
    fn estimate(self, x: f32) -> u8 {
        if self.scale > 0.0 {
            // `as` saturates (and maps NaN to 0).
            ((x - self.origin) / self.scale) as u8
        } else {
            0
        }
    }
}

impl QNode {
    const EMPTY: QNode = QNode {
        q: [[TOP, TOP, TOP, TOP, 0, 0, 0, 0]; 3],
        origin: [0.0; 3],
        scale: [0.0; 3],
        child: [NULL; WIDTH],
    };

    /// A node over `children` (at most [`WIDTH`], at least one) with their exact boxes.
    fn new(children: &[(u32, Aabb)]) -> Self {
        debug_assert!((1..=WIDTH).contains(&children.len()));
        let bounds = children.iter().skip(1).fold(children[0].1, |b, c| b.merged(&c.1));
        let frame: [Axis; 3] = std::array::from_fn(|a| Axis::new(bounds.mins[a], bounds.maxs[a]));
        let mut n = QNode { origin: frame.map(|f| f.origin), scale: frame.map(|f| f.scale), ..QNode::EMPTY };
        for (s, (r, b)) in children.iter().enumerate() {
            n.child[s] = *r;
            for (a, f) in frame.iter().enumerate() {
                n.q[a][s] = f.down(b.mins[a]);
                n.q[a][WIDTH + s] = f.up(b.maxs[a]);
            }
        }
        n
    }

    /// The number of children.
    pub(crate) fn len(&self) -> usize {
        self.child.iter().filter(|&&c| c != NULL).count()
    }

    /// Bit `s`: slot `s` holds a child.
    #[inline(always)]
    fn present(&self) -> u32 {
        (0..WIDTH).fold(0, |m, s| m | u32::from(self.child[s] != NULL) << s)
    }

    /// Child `s`'s box as the node bounds it (dequantised; it contains the child's exact box).
    pub(crate) fn child_box(&self, s: usize) -> Aabb {
        let v = |a: usize, k: u8| Axis { origin: self.origin[a], scale: self.scale[a] }.value(k);
        Aabb::new(
            Point3::from(std::array::from_fn(|a| v(a, self.q[a][s]))),
            Point3::from(std::array::from_fn(|a| v(a, self.q[a][WIDTH + s]))),
        )
    }

    /// Per axis, the children's dequantised bounds: low bounds of slots 0–3, then high bounds.
    /// Lane-wise the same arithmetic as [`Axis::value`], so the same floats.
    #[inline(always)]
    fn lanes(&self) -> [([f32; 4], [f32; 4]); 3] {
        let xy = u8x16::from(std::array::from_fn::<u8, 16, _>(|i| self.q[i / 8][i % 8]));
        let z = u8x16::from(std::array::from_fn::<u8, 16, _>(|i| if i < 8 { self.q[2][i] } else { 0 }));
        let steps = [i16x8::from_u8x16_low(xy), i16x8::from_u8x16_high(xy), i16x8::from_u8x16_low(z)];
        std::array::from_fn(|a| {
            let f = i32x8::from_i16x8(steps[a]).round_float().to_array();
            let (o, s) = (f32x4::splat(self.origin[a]), f32x4::splat(self.scale[a]));
            let lo = o + f32x4::new([f[0], f[1], f[2], f[3]]) * s;
            let hi = o + f32x4::new([f[4], f[5], f[6], f[7]]) * s;
            (lo.to_array(), hi.to_array())
        })
    }
}

/// A query box, tested against a node's four children at once.
struct Probe {
    lo: [f32x4; 3],
    hi: [f32x4; 3],
}

impl Probe {
    fn new(b: &Aabb) -> Self {
        Probe {
            lo: std::array::from_fn(|a| f32x4::splat(b.mins[a])),
            hi: std::array::from_fn(|a| f32x4::splat(b.maxs[a])),
        }
    }

    /// Bit `s`: child `s`'s box overlaps the probe (touching counts; a NaN fails).
    #[inline(always)]
    fn hits(&self, n: &QNode) -> u32 {
        let lanes = n.lanes();
        let mut m = f32x4::splat(f32::from_bits(u32::MAX));
        for (a, (lo, hi)) in lanes.iter().enumerate() {
            m &= f32x4::from(*lo).cmp_le(self.hi[a]) & self.lo[a].cmp_le(f32x4::from(*hi));
        }
        m.move_mask() as u32 & n.present()
    }
}

/// Lines prefetched past a node about to be visited: the depth-first layout puts its first
/// descendants there.
const DESCENT: usize = 3;

/// A read-only 4-wide tree over leaves with boxes.
#[derive(Clone, Debug, Default)]
pub(crate) struct QuadTree {
    pub(crate) nodes: Vec<QNode>,
    /// The root: a node, a single `LEAF | item`, or `NULL` when empty.
    pub(crate) root: u32,
    /// The root's exact box (the root has no parent to hold it).
    root_box: Option<Aabb>,
}

impl QuadTree {
    /// The tree over `leaves` (boxes finite, items below [`ITEM_MASK`]), laid out depth first.
    pub(crate) fn build(leaves: &[(Aabb, u32)]) -> Self {
        let mut items: Vec<Item> = leaves.iter().map(|&(aabb, item)| Item::leaf(aabb, item)).collect();
        let mut t = QuadTree { nodes: Vec::new(), root: NULL, root_box: None };
        match items.len() {
            0 => {}
            1 => {
                t.root = items[0].r;
                t.root_box = Some(items[0].aabb);
            }
            _ => {
                let (r, b) = t.node(&mut items);
                t.root = r;
                t.root_box = Some(b);
            }
        }
        t
    }

    /// Builds the node over `items` (at least 2) and its subtrees; returns it and its exact box.
    fn node(&mut self, items: &mut [Item]) -> (u32, Aabb) {
        let me = self.nodes.len() as u32;
        self.nodes.push(QNode::EMPTY);
        // Up to four groups: split the group of 2 or more with the largest area until there are
        // four (the binary SAH split, collapsed two levels at a time).
        let bounds = |it: &[Item]| it.iter().skip(1).fold(it[0].aabb, |b, x| b.merged(&x.aabb));
        let mut groups: Vec<(usize, usize, Aabb)> = vec![(0, items.len(), bounds(items))];
        while groups.len() < WIDTH {
            let Some(g) = (0..groups.len())
                .filter(|&g| groups[g].1 - groups[g].0 >= 2)
                .max_by(|&g, &h| area(&groups[g].2).total_cmp(&area(&groups[h].2)))
            else {
                break;
            };
            let (s, e, _) = groups[g];
            let m = s + split(&mut items[s..e]);
            groups[g] = (s, m, bounds(&items[s..m]));
            groups.insert(g + 1, (m, e, bounds(&items[m..e])));
        }
        let mut children = [(NULL, groups[0].2); WIDTH];
        for (k, &(s, e, b)) in groups.iter().enumerate() {
            children[k] = if e - s == 1 { (items[s].r, b) } else { (self.node(&mut items[s..e]).0, b) };
        }
        let node = QNode::new(&children[..groups.len()]);
        let b = groups.iter().skip(1).fold(groups[0].2, |b, g| b.merged(&g.2));
        self.nodes[me as usize] = node;
        (me, b)
    }

    #[inline(always)]
    fn prefetch_descent(&self, c: usize) {
        for k in 0..=DESCENT {
            prefetch_index::prefetch_index(&self.nodes, c + k);
        }
    }

    /// Calls `visit(item)` for each leaf whose box (as its node bounds it) overlaps `aabb`; false
    /// stops. Returns false when stopped. Depth first, each node prefetched as it is pushed.
    pub(crate) fn query(&self, aabb: &Aabb, visit: &mut impl FnMut(u32) -> bool) -> bool {
        if self.root == NULL {
            return true;
        }
        if self.root & LEAF != 0 {
            let hit = self.root_box.is_some_and(|b| crate::tree::overlap(&b, aabb));
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
            let n = &self.nodes[i as usize];
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
                    self.prefetch_descent(c as usize);
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
            if self.root_box.is_some_and(|b| b.clip_ray_inv(origin, inv, limit).is_some()) {
                limit = visit(self.root & ITEM_MASK, limit);
            }
            return limit;
        }
        let o: [f32x4; 3] = std::array::from_fn(|a| f32x4::splat(origin[a]));
        let id: [f32x4; 3] = std::array::from_fn(|a| f32x4::splat(inv[a]));
        // Which bound each axis enters by: the low one, or the high one for a negative direction
        // (by its sign, as `clip_ray_inv`).
        let neg: [bool; 3] = std::array::from_fn(|a| inv[a] < 0.0);
        let mut stack: Vec<(u32, f32)> = vec![(self.root, 0.0)];
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
            let n = &self.nodes[r as usize];
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
            let mut m = t0.cmp_le(t1).move_mask() as u32 & n.present();
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
                    self.prefetch_descent(c as usize);
                }
                stack.push((c, t));
            }
        }
        limit
    }

    /// Checks that every child's exact box lies within the box its node bounds it by, that
    /// empty slots come last, and that every node and item is reached once. `exact(item)` is a
    /// leaf's box.
    pub(crate) fn validate(&self, exact: &impl Fn(u32) -> Aabb) -> Result<(), String> {
        let Some(root_box) = self.root_box else {
            return if self.root == NULL { Ok(()) } else { Err("root without a box".into()) };
        };
        if self.root & LEAF != 0 {
            return if exact(self.root & ITEM_MASK) == root_box {
                Ok(())
            } else {
                Err("root leaf box".into())
            };
        }
        let mut reached = vec![false; self.nodes.len()];
        // (node, its exact box as computed from below)
        fn walk(
            t: &QuadTree,
            i: u32,
            reached: &mut [bool],
            exact: &impl Fn(u32) -> Aabb,
        ) -> Result<Aabb, String> {
            let slot = reached.get_mut(i as usize).ok_or(format!("node {i} out of range"))?;
            if std::mem::replace(slot, true) {
                return Err(format!("node {i} reached twice"));
            }
            let n = &t.nodes[i as usize];
            let len = n.len();
            if len < 2 || n.child[..len].contains(&NULL) {
                return Err(format!("node {i}: {len} children, or a gap"));
            }
            let mut total: Option<Aabb> = None;
            for s in 0..len {
                let c = n.child[s];
                let b = if c & LEAF != 0 { exact(c & ITEM_MASK) } else { walk(t, c, reached, exact)? };
                if !n.child_box(s).contains(&b) {
                    return Err(format!("node {i} slot {s}: {:?} does not hold {b:?}", n.child_box(s)));
                }
                total = Some(total.map_or(b, |t| t.merged(&b)));
            }
            total.ok_or_else(|| format!("node {i} is empty"))
        }
        let b = walk(self, self.root, &mut reached, exact)?;
        if b != root_box {
            return Err(format!("root box {root_box:?}, children's union {b:?}"));
        }
        if let Some(i) = reached.iter().position(|r| !r) {
            return Err(format!("node {i} is not reached"));
        }
        Ok(())
    }
}

fn area(b: &Aabb) -> f32 {
    let e = b.maxs - b.mins;
    e.x * e.y + e.y * e.z + e.z * e.x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tree::overlap;
    use proptest::prelude::*;

    fn arb_boxes(max: usize) -> impl Strategy<Value = Vec<Aabb>> {
        // Coordinates on a coarse grid (touching boxes and shared bounds are common), some far
        // from the origin.
        let c = prop_oneof![8 => (-8i16..8).prop_map(|v| f32::from(v) * 0.5), 1 => (-8i16..8).prop_map(|v| 1.0e6 + f32::from(v))];
        let b = (proptest::array::uniform3(c), proptest::array::uniform3(0u8..6)).prop_map(|(lo, e)| {
            let lo = Point3::from(lo);
            Aabb::new(lo, lo + Vector3::from(e.map(|e| f32::from(e) * 0.5)))
        });
        prop::collection::vec(b, 0..max)
    }

    fn leaves(boxes: &[Aabb]) -> Vec<(Aabb, u32)> {
        boxes.iter().enumerate().map(|(i, b)| (*b, i as u32)).collect()
    }

    #[test]
    fn nodes_fill_one_line() {
        assert_eq!(std::mem::size_of::<QNode>(), 64);
        assert_eq!(std::mem::align_of::<QNode>(), 64);
    }

    #[test]
    fn frames_bound_their_span() {
        for (lo, hi) in [(0.0f32, 1.0f32), (-3.5, 7.25), (1.0e6, 1.0e6 + 3.0), (2.0, 2.0), (-1.0e30, 1.0e30)]
        {
            let f = Axis::new(lo, hi);
            assert_eq!(f.value(0), lo);
            assert!(f.value(TOP) >= hi, "{lo} {hi}");
            for x in [lo, hi, (lo + hi) / 2.0] {
                let (d, u) = (f.down(x), f.up(x));
                assert!(f.value(d) <= x && f.value(u) >= x);
                assert!(d == TOP || f.value(d + 1) > x);
                assert!(u == 0 || f.value(u - 1) < x);
            }
        }
    }

    proptest! {
        /// The build is valid: every box within its node's steps, every node and leaf once.
        #[test]
        fn builds_validate(boxes in arb_boxes(80)) {
            let t = QuadTree::build(&leaves(&boxes));
            prop_assert_eq!(t.validate(&|i| boxes[i as usize]), Ok(()));
        }

        /// Box and point queries find every leaf whose box overlaps, each once (the tree may add
        /// leaves whose outward-rounded box touches; a caller tests the exact box).
        #[test]
        fn box_queries_find_the_brute_force_set(boxes in arb_boxes(80), q in arb_boxes(4)) {
            let t = QuadTree::build(&leaves(&boxes));
            for q in q.iter().chain(q.iter().map(|b| Aabb::new(b.mins, b.mins)).collect::<Vec<_>>().iter()) {
                let mut found = vec![0u32; boxes.len()];
                t.query(q, &mut |i| {
                    found[i as usize] += 1;
                    true
                });
                for (i, b) in boxes.iter().enumerate() {
                    prop_assert!(found[i] <= 1, "item {} reported {} times", i, found[i]);
                    if overlap(b, q) {
                        prop_assert_eq!(found[i], 1, "item {} missed", i);
                    }
                }
            }
        }

        /// The closest hit of a ray is the brute force's (over the exact boxes), and a callback
        /// that never shortens the ray sees every box the ray meets.
        #[test]
        fn rays_find_the_closest_box(
            boxes in arb_boxes(80),
            // Origins on the boxes' grid too: a zero direction component in a box's face plane
            // makes a NaN that must keep the bound.
            o in proptest::array::uniform3(prop_oneof![(-12i8..12).prop_map(|v| f32::from(v) * 0.5), -6.0f32..6.0]),
            d in proptest::array::uniform3(prop_oneof![4 => -1.0f32..1.0, 1 => Just(0.0f32)]),
            limit in prop_oneof![Just(f32::INFINITY), 0.0f32..20.0],
        ) {
            let t = QuadTree::build(&leaves(&boxes));
            let (o, inv) = (Point3::from(o), Vector3::from(d.map(|d| 1.0 / d)));
            let want = boxes
                .iter()
                .filter_map(|b| b.clip_ray_inv(&o, &inv, limit).map(|c| c.0))
                .fold(f32::INFINITY, f32::min);
            let mut best = f32::INFINITY;
            t.cast_ray(&o, &inv, limit, &mut |i, lim| match boxes[i as usize].clip_ray_inv(&o, &inv, lim) {
                Some((e, _)) => {
                    best = best.min(e);
                    e
                }
                None => lim,
            });
            prop_assert_eq!(best.to_bits(), want.to_bits());
            let mut seen = vec![false; boxes.len()];
            t.cast_ray(&o, &inv, limit, &mut |i, lim| {
                seen[i as usize] = true;
                lim
            });
            for (i, b) in boxes.iter().enumerate() {
                if b.clip_ray_inv(&o, &inv, limit).is_some() {
                    prop_assert!(seen[i], "item {} not visited", i);
                }
            }
        }
    }
}
