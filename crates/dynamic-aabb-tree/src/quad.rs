//! The tree: 4-wide nodes of two cache lines (Jolt's broadphase layout), each holding its four
//! children's boxes as 4-lane rows, so a visit decides among four subtrees from one node and a
//! descent has half a binary tree's levels. An index arena with a free list; leaves live in
//! their parent's slots, with each leaf's exact box kept by item.
//!
//! Builds split by binned SAH ([`crate::sah::split`]) taken four ways, in full (depth first) or
//! in the background a slice per pair update; insertion finds the cheapest free slot or sibling
//! by SAH branch and bound, and rotates nodes on its way back up; a moved leaf grows its
//! ancestors in place, and batches refit every node once. Box,
//! point and ray queries, and the pair traversal within the moving tree and against the static
//! one, with moved flags on the child references.

use crate::broadphase::Sink;
use crate::sah::{ITEM_MASK, Item, LEAF, LEAF_MOVED, NULL, split};
use voxterra_core::Aabb;
use voxterra_core::nalgebra::{Point3, Vector3};
use wide::{CmpEq, CmpLe, CmpLt, f32x4, i32x4};

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
/// PERF: children's boxes as exact floats. Session 21's byte-quantised node (64 bytes, each
/// box in steps of the node's frame) made queries as fast, but requantising every node on a
/// refit cost 8 ms of a 33 ms frame at 100k boxes all moving, and the pair traversal
/// dequantised both nodes of every visit; here a refit is a min and a max per slot.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct QNode {
    lo: [[f32; WIDTH]; 3],
    hi: [[f32; WIDTH]; 3],
    pub(crate) child: [u32; WIDTH],
}

const _: () = assert!(std::mem::size_of::<QNode>() == 128);

impl QNode {
    const EMPTY: QNode =
        QNode { lo: [[f32::MAX; WIDTH]; 3], hi: [[-f32::MAX; WIDTH]; 3], child: [NULL; WIDTH] };

    /// A node over `children` (at most [`WIDTH`]) with their boxes.
    fn new(children: &[(u32, Aabb)]) -> Self {
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
    fn set_slot(&mut self, s: usize, b: &Aabb) {
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
    fn present(&self) -> u32 {
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
    fn lanes(&self) -> [([f32; 4], [f32; 4]); 3] {
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

/// A 4-wide tree of leaves with boxes: an arena of nodes with a free list, a leaf in its parent's
/// slot. A node's *span* is the union of its slots' boxes; its parent's slot holds at least that
/// (more after a leaf moved away, until the next refit). Leaves' exact boxes are kept here by
/// item.
#[derive(Clone, Debug)]
pub(crate) struct QuadTree {
    pub(crate) nodes: Vec<QNode>,
    /// Per node: its parent and slot, `(parent << 2) | slot`, or [`NULL`] for the root; a free
    /// node's next free node.
    up: Vec<u32>,
    /// The root: a node, a single `LEAF | item`, or `NULL` when empty.
    pub(crate) root: u32,
    free: u32,
    /// Per item: where its leaf is, `(node << 2) | slot`; [`ROOT_LEAF`] when it is the root;
    /// [`NULL`] when it is not here.
    loc: Vec<u32>,
    /// Per item: its leaf's exact box.
    leaf_box: Vec<Aabb>,
    leaves: u32,
    /// Insertions since the last full rebuild (or the start of a background one).
    inserted: usize,
    /// Leaf box changes that reached past their node's frame since the SAH cost was last taken.
    refilled: usize,
    /// SAH cost ([`QuadTree::sah_cost`]) right after the last full rebuild (0 before any).
    rebuilt_cost: f64,
    background: Background,
    /// Every node's children sit after it in the arena (true after a full or background
    /// rebuild), so a pass in reverse arena order is bottom up.
    ordered: bool,
    /// Scratch: live nodes, children before parents.
    order: Vec<u32>,
    /// Per node: its box grew in place since it was built ([`QuadTree::set_leaf_box`]).
    grew: Vec<bool>,
    /// The highest node each in-place growth reached; below it, the grown nodes are rebuilt by
    /// [`QuadTree::rebuild_grown`].
    grown_tops: Vec<u32>,
    /// Scratch for [`QuadTree::rebuild_below`].
    partial: Vec<Item>,
}

/// A full rebuild spread over several pair updates, so no frame pays for it whole (as the binary
/// tree's). It splits the leaves into a new arena, parents before children, while the live tree
/// keeps serving; the nodes get their boxes when it completes, from the live leaf boxes, bottom up.
/// Insertions and removals cancel it.
#[derive(Clone, Debug, Default)]
struct Background {
    active: bool,
    /// Nodes with their child references only (boxes filled at the swap).
    nodes: Vec<QNode>,
    items: Vec<Item>,
    /// Ranges of `items` (at least 2 long) still to split, with the node they go into.
    work: Vec<(u32, u32, u32)>,
}

/// When more than 1/REFIT_SHARE of the leaves changed boxes in one batch, every node is
/// refitted in one pass rather than walked up from each leaf.
const REFIT_SHARE: usize = 32;

/// A tree whose SAH cost exceeds this many times its cost after the last full rebuild starts a
/// background rebuild.
const BACKGROUND_RATIO: f64 = 1.04;

/// ... and is rebuilt at once past this when no background rebuild is under way (when they keep
/// being cancelled).
const REBUILD_RATIO: f64 = 1.15;

/// A tree that received more than 1/INSERTED_SHARE of its leaves by insertion since its last full
/// rebuild is rebuilt in the background (insertion builds it about 30% above a bulk build's SAH
/// cost at 100k leaves).
const INSERTED_SHARE: usize = 4;

/// [`QuadTree::insert_many`] rebuilds the tree when the new leaves are at least 1/BULK_SHARE
/// of the leaves after.
const BULK_SHARE: usize = 4;

/// A rotation is made only when it shrinks a box by more than this share of the node's area.
const ROTATION_GAIN: f32 = 1e-4;

/// Items split per pair update by a background rebuild, per leaf.
const BACKGROUND_BUDGET: usize = 2;

impl Default for QuadTree {
    fn default() -> Self {
        QuadTree {
            nodes: Vec::new(),
            up: Vec::new(),
            root: NULL,
            free: NULL,
            loc: Vec::new(),
            leaf_box: Vec::new(),
            leaves: 0,
            inserted: 0,
            refilled: 0,
            rebuilt_cost: 0.0,
            background: Background::default(),
            ordered: true,
            order: Vec::new(),
            grew: Vec::new(),
            grown_tops: Vec::new(),
            partial: Vec::new(),
        }
    }
}

/// [`QuadTree::loc`] of an item whose leaf is the root.
const ROOT_LEAF: u32 = NULL - 1;

impl QuadTree {
    /// The tree over `leaves` (boxes finite, items below [`ITEM_MASK`], each once), laid out
    /// depth first.
    #[cfg(test)]
    pub(crate) fn build(leaves: &[(Aabb, u32)]) -> Self {
        let mut t = QuadTree::default();
        let mut items: Vec<Item> = leaves.iter().map(|&(aabb, item)| Item::leaf(aabb, item)).collect();
        for &(aabb, item) in leaves {
            t.own(item, aabb);
        }
        t.leaves = items.len() as u32;
        match items.len() {
            0 => {}
            1 => t.set_root(items[0].r),
            _ => {
                let r = t.node(&mut items);
                t.set_root(r);
            }
        }
        t.ordered = true;
        t
    }

    /// Records `item`'s exact box, growing the per-item arrays.
    fn own(&mut self, item: u32, aabb: Aabb) {
        let i = item as usize;
        if self.loc.len() <= i {
            self.loc.resize(i + 1, NULL);
            self.leaf_box.resize(i + 1, Aabb::new(Point3::origin(), Point3::origin()));
        }
        self.leaf_box[i] = aabb;
    }

    /// Builds the node over `items` (at least 2) and its subtrees, depth first; returns it.
    fn node(&mut self, items: &mut [Item]) -> u32 {
        let me = self.alloc();
        let (groups, len) = groups(items);
        let mut children = [NULL; WIDTH];
        for (k, &(s, e)) in groups[..len].iter().enumerate() {
            children[k] = if e - s == 1 { items[s].r } else { self.node(&mut items[s..e]) };
        }
        self.fill(me, &children[..len]);
        // A subtree holding a moved leaf is flagged in its parent's slot too.
        if moved_mask(&self.nodes[me as usize]) != 0 { me | MOVED } else { me }
    }

    fn alloc(&mut self) -> u32 {
        // A new node may be placed above older ones (a new root, a sibling pair): no order.
        self.ordered = false;
        if self.free == NULL {
            self.nodes.push(QNode::EMPTY);
            self.up.push(NULL);
            self.grew.push(false);
            return self.nodes.len() as u32 - 1;
        }
        let i = self.free;
        self.free = self.up[i as usize];
        self.nodes[i as usize] = QNode::EMPTY;
        self.up[i as usize] = NULL;
        self.grew[i as usize] = false;
        i
    }

    fn release(&mut self, i: u32) {
        self.nodes[i as usize] = QNode::EMPTY;
        self.up[i as usize] = self.free;
        self.grew[i as usize] = false;
        self.free = i;
    }

    /// The box of child reference `r`: a leaf's exact box, or a node's span.
    fn box_of(&self, r: u32) -> Aabb {
        if r & LEAF != 0 { self.leaf_box[index(r)] } else { self.nodes[index(r)].span() }
    }

    /// Points `r` at its place: slot `s` of node `n`.
    fn link(&mut self, r: u32, n: u32, s: usize) {
        let at = n << 2 | s as u32;
        if r & LEAF != 0 {
            self.loc[index(r)] = at;
        } else {
            self.up[index(r)] = at;
        }
    }

    /// Makes `r` the root.
    fn set_root(&mut self, r: u32) {
        self.root = r;
        if r == NULL {
        } else if r & LEAF != 0 {
            self.loc[index(r)] = ROOT_LEAF;
        } else {
            self.up[index(r)] = NULL;
        }
    }

    /// Fills node `n` with `children` (1 to [`WIDTH`]) and their boxes, and links them.
    fn fill(&mut self, n: u32, children: &[u32]) {
        let boxes: [(u32, Aabb); WIDTH] =
            std::array::from_fn(|s| children.get(s).map_or((NULL, EMPTY), |&r| (r, self.box_of(r))));
        self.nodes[n as usize] = QNode::new(&boxes[..children.len()]);
        for (s, &r) in children.iter().enumerate() {
            self.link(r, n, s);
        }
    }

    /// Node `n`'s children, in slot order.
    fn children(&self, n: u32) -> ([u32; WIDTH], usize) {
        let c = self.nodes[n as usize].child;
        (c, c.iter().take_while(|&&r| r != NULL).count())
    }

    /// Fills node `n` with `children`, then refits its ancestors ([`QuadTree::refit_up`]).
    fn refill_up(&mut self, n: u32, children: &[u32]) {
        self.fill(n, children);
        self.refit_up(n);
    }

    /// Gives each ancestor of node `n` in turn its child's new box, up to the root or the first
    /// slot that already holds it exactly.
    fn refit_up(&mut self, n: u32) {
        self.climb(n, None);
    }

    /// Refits the ancestors of node `n` as [`QuadTree::refit_up`]; with `Some(s)`, first a
    /// rotation at each node ([`QuadTree::rotate`]) around its child on the way, starting with
    /// `n`'s slot `s`.
    fn climb(&mut self, mut n: u32, mut s: Option<usize>) {
        loop {
            if let Some(s) = s {
                self.rotate(n, s);
            }
            let p = self.up[n as usize];
            if p == NULL {
                return;
            }
            let (pn, ps) = (p >> 2, (p & 3) as usize);
            let b = self.nodes[n as usize].span();
            if self.nodes[pn as usize].child_box(ps) == b {
                return;
            }
            self.nodes[pn as usize].set_slot(ps, &b);
            (n, s) = (pn, s.map(|_| ps));
        }
    }

    /// Adds a leaf holding `item` (below [`ITEM_MASK`], not already here) with box `aabb`.
    /// Descends by the surface-area heuristic to the best place: a free slot of a node on the
    /// way, or a child to pair with under a new node.
    pub(crate) fn insert(&mut self, aabb: Aabb, item: u32) {
        self.insert_unmarked(aabb, item);
        self.mark_moved(item);
    }

    fn insert_unmarked(&mut self, aabb: Aabb, item: u32) {
        self.own(item, aabb);
        self.leaves += 1;
        self.inserted += 1;
        self.background.active = false;
        let leaf = LEAF | item;
        if self.root == NULL {
            return self.set_root(leaf);
        }
        if self.root & LEAF != 0 {
            let n = self.alloc();
            let old = self.root;
            self.fill(n, &[old, leaf]);
            return self.set_root(n);
        }
        let (node, slot) = self.best_place(&aabb);
        match (node, slot) {
            // A new root over the old one and the leaf.
            (NULL, _) => {
                let n = self.alloc();
                let old = self.root;
                self.fill(n, &[old, leaf]);
                self.set_root(n);
            }
            // Into a free slot.
            (n, None) => {
                let len = self.nodes[n as usize].len();
                self.put_child(n, len, leaf, &aabb);
                self.rotate_up(n, len);
            }
            // Paired with the child in slot `s` under a new node (the slots give both boxes, so
            // no child node is read).
            (n, Some(s)) => {
                let (sibling, b) = (self.nodes[n as usize].child[s], self.nodes[n as usize].child_box(s));
                let m = self.alloc();
                self.put_child(m, 0, sibling, &b);
                self.put_child(m, 1, leaf, &aabb);
                self.put_child(n, s, m, &b.merged(&aabb));
                self.rotate_up(n, s);
            }
        }
    }

    /// Puts child reference `r` with box `b` into slot `s` of node `n`, and links it.
    fn put_child(&mut self, n: u32, s: usize, r: u32, b: &Aabb) {
        let node = &mut self.nodes[n as usize];
        node.child[s] = r;
        node.set_slot(s, b);
        self.link(r, n, s);
    }

    /// From node `n`, whose slot `s` just received or grew a child (its other slots up to date),
    /// up: a rotation at each node ([`QuadTree::rotate`]) around the child on the way, then its
    /// parent's slot refitted to it, up to the root or the first slot the refit leaves as it was.
    fn rotate_up(&mut self, n: u32, s: usize) {
        self.climb(n, Some(s));
    }

    /// A tree rotation at node `a` around its child `b` in slot `j` (a child that just grew):
    /// one of `b`'s children trades places with another child of `a`, the trade that shrinks
    /// `b`'s box most, if any does. Box2D v3's rotation taken to four children, limited to the
    /// grown child: up to 4 × 3 trades, costed four at a time from `b`, which the insertion just
    /// visited (trading into the other children too doubled an insertion's cost for 3% of SAH
    /// cost). `a`'s leaves stay the same, so its span can only shrink and its ancestors' slots
    /// stay valid.
    fn rotate(&mut self, a: u32, j: usize) {
        let na = self.nodes[a as usize];
        let (present, _, leaf) = masks(&na);
        if leaf >> j & 1 != 0 {
            return;
        }
        let before = area(&na.child_box(j));
        let nb = &self.nodes[index(na.child[j])];
        // Lane `k`: `b`'s box without child `k`; an empty place's lane is ruled out.
        let rest = others_union(&lanes(nb));
        let filled = empty_lanes(masks(nb).0);
        // (gain, child of `a`, child of `b`)
        let mut best = (0.0f32, 0, 0);
        let mut others = present & !(1 << j);
        while others != 0 {
            let i = others.trailing_zeros() as usize;
            others &= others - 1;
            // Lane `k`: `b`'s area with child `i` of `a` in place of its child `k`.
            let after = merged_areas(&rest, &spread(&na, i)).max(filled).to_array();
            let k = lowest(&after);
            if before - after[k] > best.0 {
                best = (before - after[k], i, k);
            }
        }
        // A trade must win more than rounding: a box shrinking by a few ulps is not worth the
        // writes (and could trade back).
        let (gain, i, k) = best;
        if gain <= area(&na.span()) * ROTATION_GAIN {
            return;
        }
        let b = index(na.child[j]) as u32;
        let (x, xbox) = (na.child[i], na.child_box(i));
        let (y, ybox) = (self.nodes[b as usize].child[k], self.nodes[b as usize].child_box(k));
        self.nodes[b as usize].child[k] = x;
        self.nodes[b as usize].set_slot(k, &xbox);
        self.link(x, b, k);
        // `b` is a node: its flag comes from its children, `queued` is not asked.
        let bref = self.flagged(b, &|_| false);
        let span = self.nodes[b as usize].span();
        let an = &mut self.nodes[a as usize];
        an.child[i] = y;
        an.set_slot(i, &ybox);
        an.child[j] = bref;
        an.set_slot(j, &span);
        self.link(y, a, i);
        // A subtree may now hang below a node later in the arena.
        self.ordered = false;
    }

    /// Where a leaf with box `d` costs least by the surface-area heuristic: `(node, None)` for a
    /// free slot of `node`, `(node, Some(s))` to pair it with child `s` of `node` under a new
    /// node, or `(NULL, _)` for a new root over the old. The cost of a place is the area the
    /// ancestors grow by, plus the new node's area when paired.
    ///
    /// Branch and bound (Catto's): depth first, the cheapest child first (so the first dive is
    /// the greedy descent), a subtree skipped once its lower bound (its ancestors' growth and its
    /// own: a free slot below costs no more) reaches the best cost found, so the place found is
    /// the cheapest. On 100k boxes inserted in random order, the search visits about 17 nodes an
    /// insertion against the greedy descent's 9, and leaves the tree at 1.08× a bulk build's SAH
    /// cost against 1.26×.
    fn best_place(&self, d: &Aabb) -> (u32, Option<usize>) {
        let q = spread_box(d);
        let root_box = self.nodes[index(self.root)].span();
        let mut best = (NULL, None);
        let mut best_cost = area(&root_box.merged(d));
        // Nodes to look at, with their ancestors' growth. A stack that fills (a tree more than
        // 30 levels deep) drops the costlier candidates: the place found is still valid.
        let mut stack = [(0.0f32, 0u32); 96];
        let mut top = 1;
        stack[0] = (best_cost - area(&root_box), index(self.root) as u32);
        while top > 0 {
            top -= 1;
            let (here, n) = stack[top];
            if here >= best_cost {
                continue;
            }
            let node = &self.nodes[n as usize];
            let (present, _, leaf) = masks(node);
            if present != 0xF && here < best_cost {
                best = (n, None);
                best_cost = here;
            }
            let l = lanes(node);
            let joined = merged_areas(&l, &q);
            // Lane `s`: pairing with child `s`; the growth of the ancestors of child `s`'s
            // subtree, its lower bound. Empty places and leaves (nothing below) are ruled out.
            let pair = (f32x4::splat(here) + joined).max(empty_lanes(present)).to_array();
            let below = (f32x4::splat(here) + joined - areas(&l)).max(empty_lanes(present & !leaf));
            let s = lowest(&pair);
            if pair[s] < best_cost {
                best = (n, Some(s));
                best_cost = pair[s];
            }
            let mut open = below.cmp_lt(f32x4::splat(best_cost)).move_mask() as u32;
            if open == 0 {
                continue;
            }
            let below = below.to_array();
            // The cheapest last, popped first.
            let first = lowest(&below);
            open &= !(1 << first);
            for s in (0..WIDTH).filter(|&s| open >> s & 1 != 0).chain([first]) {
                if top < stack.len() {
                    let c = index(node.child[s]);
                    prefetch_node(&self.nodes, c);
                    stack[top] = (below[s], c as u32);
                    top += 1;
                }
            }
        }
        best
    }

    /// The cost [`QuadTree::best_place`] gives place `(n, slot)` for a leaf with box `d`, summed
    /// up the parent links. For tests.
    #[cfg(test)]
    fn place_cost(&self, d: &Aabb, (n, slot): (u32, Option<usize>)) -> f32 {
        let grow = |b: &Aabb| area(&b.merged(d)) - area(b);
        if n == NULL {
            return area(&self.box_of(self.root).merged(d));
        }
        let mut cost = slot.map_or(0.0, |s| area(&self.nodes[n as usize].child_box(s).merged(d)));
        let mut at = n;
        loop {
            let p = self.up[at as usize];
            if p == NULL {
                return cost + grow(&self.nodes[at as usize].span());
            }
            cost += grow(&self.nodes[(p >> 2) as usize].child_box((p & 3) as usize));
            at = p >> 2;
        }
    }

    /// Removes `item`'s leaf (it must be here).
    pub(crate) fn remove(&mut self, item: u32) {
        let at = self.loc[item as usize];
        self.loc[item as usize] = NULL;
        self.leaves -= 1;
        self.background.active = false;
        if at == ROOT_LEAF {
            return self.set_root(NULL);
        }
        let (n, s) = (at >> 2, (at & 3) as usize);
        let (mut c, len) = self.children(n);
        // The last child takes the freed slot: slots stay packed.
        c[s] = c[len - 1];
        c[len - 1] = NULL;
        if len > 2 {
            return self.refill_up(n, &c[..len - 1]);
        }
        // One child left: it takes the node's place.
        let only = c[0];
        let p = self.up[n as usize];
        self.release(n);
        self.put_at(p, only);
    }

    /// Puts `r` at place `at` (`parent << 2 | slot`, or `NULL` for the root) and refits the
    /// ancestors.
    fn put_at(&mut self, at: u32, r: u32) {
        if at == NULL {
            return self.set_root(r);
        }
        let (p, s) = (at >> 2, (at & 3) as usize);
        let (mut c, len) = self.children(p);
        c[s] = r;
        self.refill_up(p, &c[..len]);
    }

    /// Gives `item`'s leaf (it must be here) the box `aabb`. Its ancestors grow to hold it, up
    /// to the first whose box already does; none shrinks (a looser fit, as a fat box, until the
    /// next refit or rebuild). The nodes that grew are marked for [`QuadTree::rebuild_grown`].
    pub(crate) fn set_leaf_box(&mut self, item: u32, aabb: Aabb) {
        self.leaf_box[item as usize] = aabb;
        let at = self.loc[item as usize];
        if at == ROOT_LEAF {
            return;
        }
        let (mut n, s) = (at >> 2, (at & 3) as usize);
        let mut b = aabb;
        let mut held = self.nodes[n as usize].span();
        self.nodes[n as usize].set_slot(s, &b);
        // `n`'s box grows while it does not hold `b`; the last one that grew is the top.
        let mut top = NULL;
        while !held.contains(&b) {
            self.refilled += 1;
            self.grew[n as usize] = true;
            top = n;
            let p = self.up[n as usize];
            if p == NULL {
                break;
            }
            let (pn, ps) = (p >> 2, (p & 3) as usize);
            b = held.merged(&b);
            held = self.nodes[pn as usize].span();
            self.nodes[pn as usize].set_slot(ps, &b);
            n = pn;
        }
        // At most one top a leaf's worth, so a caller that never rebuilds holds bounded memory
        // (full and background rebuilds clear them).
        if top != NULL && self.grown_tops.len() < self.leaves as usize {
            self.grown_tops.push(top);
        }
    }

    /// Rebuilds the nodes that grew in place ([`QuadTree::set_leaf_box`]) since they were built:
    /// from each highest grown node, the grown nodes below it are opened, and their children that
    /// did not grow (leaves and whole subtrees, kept as they are) are split again by binned SAH
    /// into new nodes that take the old top's place (Box2D v3's partial rebuild). A leaf that
    /// moved far gets a place near its new neighbours this way, where growth in place would have
    /// stretched every ancestor up to the one holding both places.
    pub(crate) fn rebuild_grown(&mut self) {
        if self.grown_tops.is_empty() {
            return;
        }
        let mut tops = std::mem::take(&mut self.grown_tops);
        for &t in &tops {
            // Released since, or rebuilt from a higher top already.
            if !self.grew[t as usize] {
                continue;
            }
            // Growth from another leaf may have reached above this top.
            let mut t = t;
            while self.up[t as usize] != NULL && self.grew[(self.up[t as usize] >> 2) as usize] {
                t = self.up[t as usize] >> 2;
            }
            self.rebuild_below(t, |tree, c| tree.grew[c]);
        }
        tops.clear();
        self.grown_tops = tops;
    }

    /// Rebuilds node `top` and the internal nodes below it that `open` selects, by binned SAH over
    /// their other children (leaves and the subtrees not opened, kept as they are): the opened
    /// nodes go back to the free list, the new ones come off it, and the result takes `top`'s
    /// place. Moved flags are kept.
    fn rebuild_below(&mut self, top: u32, open: impl Fn(&Self, usize) -> bool) {
        let at = self.up[top as usize];
        let mut items = std::mem::take(&mut self.partial);
        items.clear();
        let mut stack = vec![top];
        while let Some(i) = stack.pop() {
            let (c, len) = self.children(i);
            for &c in &c[..len] {
                if c & LEAF == 0 && open(self, index(c)) {
                    stack.push(index(c) as u32);
                } else {
                    let mut it = Item::leaf(self.box_of(c), 0);
                    it.r = c;
                    items.push(it);
                }
            }
            self.release(i);
        }
        let new = if items.len() == 1 { items[0].r } else { self.node(&mut items) };
        self.put_at(at, new);
        self.partial = items;
    }

    /// [`QuadTree::set_leaf_box`] for many items at once. When more than 1/[`REFIT_SHARE`] of the
    /// leaves, the boxes are written and every node refitted in one pass
    /// ([`QuadTree::refit_nodes`]), which also takes the SAH cost (a rebuild is scheduled if it
    /// drifted) and sets every moved flag from `queued(item)`, exactly as
    /// [`QuadTree::mark_moved_many`] would; then it returns true, and a pair update with no other
    /// mover since can skip its own flag pass.
    pub(crate) fn set_leaf_boxes(&mut self, items: &[(u32, Aabb)], queued: impl Fn(u32) -> bool) -> bool {
        if items.len() * REFIT_SHARE <= self.leaves as usize {
            for &(item, aabb) in items {
                self.set_leaf_box(item, aabb);
            }
            return false;
        }
        // Each leaf's box goes into its slot now (its node prefetched a few items ahead), so the
        // refit reads only nodes.
        const AHEAD: usize = 8;
        for (k, &(item, aabb)) in items.iter().enumerate() {
            if let Some(&(next, _)) = items.get(k + AHEAD) {
                prefetch_node(&self.nodes, (self.loc[next as usize] >> 2) as usize);
            }
            self.leaf_box[item as usize] = aabb;
            let at = self.loc[item as usize];
            if at != ROOT_LEAF {
                self.nodes[(at >> 2) as usize].set_slot((at & 3) as usize, &aabb);
            }
        }
        let cost = self.refit_nodes(&queued);
        self.schedule(cost);
        true
    }

    /// Starts a rebuild when the SAH cost `cost` drifted from the last full rebuild's. A
    /// background rebuild under way is left to finish, however far the drift: it ends within a
    /// bounded number of updates unless an insertion or removal cancels it, and rebuilding at
    /// once instead cost a frame 2.5× the mean (100k boxes all moving, margin 0.04).
    fn schedule(&mut self, cost: f64) {
        self.refilled = 0;
        if self.background.active {
        } else if cost > self.rebuilt_cost * REBUILD_RATIO {
            self.rebuild_full();
        } else if cost > self.rebuilt_cost * BACKGROUND_RATIO {
            self.start_background();
        }
    }

    /// Refits every node's slots that hold nodes from those nodes' boxes, bottom up (leaves'
    /// slots must hold their boxes already), and sets every slot's moved flag: a leaf's from
    /// `queued(item)`, a node's from its children's (PERF: one pass over the nodes instead of
    /// two, as refit and [`QuadTree::mark_moved_many`] were). Returns the SAH cost.
    fn refit_nodes(&mut self, queued: &impl Fn(u32) -> bool) -> f64 {
        if self.root == NULL {
            return 1.0;
        }
        if self.root & LEAF != 0 {
            self.root = self.flagged(self.root, queued);
            return 1.0;
        }
        let mut order = std::mem::take(&mut self.order);
        self.bottom_up(&mut order);
        let mut sum = 0.0f64;
        for &i in &order {
            let mut n = self.nodes[i as usize];
            for s in 0..WIDTH {
                let c = n.child[s];
                if c == NULL {
                    continue;
                }
                if c & LEAF == 0 {
                    n.set_slot(s, &self.nodes[index(c)].span());
                }
                n.child[s] = self.flagged(c, queued);
            }
            sum += f64::from(area(&n.span()));
            self.nodes[i as usize] = n;
        }
        self.order = order;
        self.root = self.flagged(self.root, queued);
        let root = f64::from(area(&self.nodes[index(self.root)].span()));
        if root > 0.0 { sum / root } else { 1.0 }
    }

    /// Settles quality before a pair update: a tree that got many of its leaves by insertion,
    /// or whose boxes were refitted past their frames for half its leaves' worth since its cost
    /// was last taken, gets its SAH cost checked and a rebuild scheduled if it drifted; then the
    /// background rebuild, if any, advances by one slice.
    pub(crate) fn maintain(&mut self) {
        if !self.background.active && self.inserted * INSERTED_SHARE > self.leaves as usize {
            self.start_background();
        } else if self.refilled * 2 > self.leaves as usize {
            let cost = self.sah_cost();
            self.schedule(cost);
        }
        self.step_background();
    }

    /// The leaves as build items, each reference with its moved flag.
    fn collect_items(&self, items: &mut Vec<Item>) {
        items.clear();
        if self.root == NULL {
            return;
        }
        if self.root & LEAF != 0 {
            let mut it = Item::leaf(self.leaf_box[index(self.root)], index(self.root) as u32);
            it.r = self.root;
            items.push(it);
            return;
        }
        let mut stack = vec![index(self.root)];
        while let Some(i) = stack.pop() {
            for &c in self.nodes[i].child.iter().filter(|&&c| c != NULL) {
                if c & LEAF != 0 {
                    let mut it = Item::leaf(self.leaf_box[index(c)], index(c) as u32);
                    it.r = c;
                    items.push(it);
                } else {
                    stack.push(index(c));
                }
            }
        }
    }

    /// Starts a background rebuild over the current leaves.
    fn start_background(&mut self) {
        if self.leaves < 2 {
            return;
        }
        let mut bg = std::mem::take(&mut self.background);
        self.collect_items(&mut bg.items);
        bg.nodes.clear();
        bg.nodes.push(QNode::EMPTY);
        bg.work.clear();
        bg.work.push((0, 0, bg.items.len() as u32));
        bg.active = true;
        self.background = bg;
        // Insertions cancel it: restart only after as many again.
        self.inserted = 0;
        self.refilled = 0;
    }

    /// Splits up to the per-update budget of items; swaps the new tree in when it is complete.
    fn step_background(&mut self) {
        if !self.background.active {
            return;
        }
        let bg = &mut self.background;
        let mut budget = BACKGROUND_BUDGET * self.leaves as usize;
        while budget > 0 {
            let Some((node, a, b)) = bg.work.pop() else { break };
            let (a, b) = (a as usize, b as usize);
            budget = budget.saturating_sub(2 * (b - a));
            let (groups, len) = groups(&mut bg.items[a..b]);
            for (s, &(lo, hi)) in groups[..len].iter().enumerate() {
                let (lo, hi) = (a + lo, a + hi);
                bg.nodes[node as usize].child[s] = if hi - lo == 1 {
                    bg.items[lo].r
                } else {
                    // Children after their parents: the swap fills boxes backwards.
                    let c = bg.nodes.len() as u32;
                    bg.nodes.push(QNode::EMPTY);
                    bg.work.push((c, lo as u32, hi as u32));
                    c
                };
            }
        }
        if bg.work.is_empty() {
            self.finish_background();
        }
    }

    /// Swaps the completed background tree in: each node's boxes from its children (the live
    /// leaf boxes, moved flags as the live tree has them), last node first.
    fn finish_background(&mut self) {
        let mut nodes = std::mem::take(&mut self.background.nodes);
        self.background.active = false;
        let mut up = vec![NULL; nodes.len()];
        let mut sum = 0.0f64;
        // PERF: a leaf's live place and box are reads by item, in no order: cache misses. They
        // are prefetched two nodes ahead, and the live node holding the leaf one ahead.
        const AHEAD: usize = 2;
        let leaf_items = |n: &QNode| n.child.into_iter().filter(|&r| r != NULL && r & LEAF != 0).map(index);
        for i in (0..nodes.len()).rev() {
            if let Some(a) = i.checked_sub(2 * AHEAD) {
                for item in leaf_items(&nodes[a]) {
                    prefetch_index::prefetch_index(&self.loc, item);
                    prefetch_index::prefetch_index(&self.leaf_box, item);
                }
            }
            if let Some(a) = i.checked_sub(AHEAD) {
                for item in leaf_items(&nodes[a]) {
                    let live = self.loc[item];
                    if let Some(n) = self.nodes.get((live >> 2) as usize) {
                        prefetch_index::prefetch_index(n.child.as_slice(), 0);
                    }
                }
            }
            let c = nodes[i].child;
            let len = c.iter().take_while(|&&r| r != NULL).count();
            let mut kids = [(NULL, EMPTY); WIDTH];
            for s in 0..len {
                let at = (i as u32) << 2 | s as u32;
                kids[s] = if c[s] & LEAF != 0 {
                    let item = index(c[s]);
                    // The live flag; each leaf appears once, so its live place is read before
                    // this overwrites it.
                    let live = self.loc[item];
                    let was = if live == ROOT_LEAF {
                        self.root
                    } else {
                        self.nodes[(live >> 2) as usize].child[(live & 3) as usize]
                    };
                    self.loc[item] = at;
                    (LEAF | item as u32 | (was & MOVED), self.leaf_box[item])
                } else {
                    let cn = &nodes[index(c[s])];
                    up[index(c[s])] = at;
                    let span = cn.span();
                    sum += f64::from(area(&span));
                    (c[s] | if moved_mask(cn) != 0 { MOVED } else { 0 }, span)
                };
            }
            nodes[i] = QNode::new(&kids[..len]);
        }
        let spare = std::mem::replace(&mut self.nodes, nodes);
        self.background.nodes = spare;
        self.up = up;
        self.grew.clear();
        self.grew.resize(self.nodes.len(), false);
        self.grown_tops.clear();
        self.free = NULL;
        self.ordered = true;
        self.root = if moved_mask(&self.nodes[0]) != 0 { MOVED } else { 0 };
        let root = f64::from(area(&self.nodes[0].span()));
        self.rebuilt_cost = if root > 0.0 { (sum + root) / root } else { 1.0 };
        self.refilled = 0;
    }

    /// Flags `item`'s leaf and the slots above it as moved (flagged slots have flagged
    /// ancestors, so the walk stops at the first one).
    pub(crate) fn mark_moved(&mut self, item: u32) {
        let mut at = self.loc[item as usize];
        while at != NULL {
            if at == ROOT_LEAF {
                self.root |= MOVED;
                return;
            }
            let (n, s) = ((at >> 2) as usize, (at & 3) as usize);
            let c = &mut self.nodes[n].child[s];
            if *c & MOVED != 0 {
                return;
            }
            *c |= MOVED;
            at = self.up[n];
        }
        // Reached the root node: its reference carries the flag too.
        self.root |= MOVED;
    }

    /// Fills `order` with the live nodes, children before parents: reverse arena order when the
    /// arena is [`QuadTree::ordered`] (a streaming pass), else a post-order walk.
    fn bottom_up(&self, order: &mut Vec<u32>) {
        order.clear();
        if self.root == NULL || self.root & LEAF != 0 {
            return;
        }
        if self.ordered {
            // With no free node (a fresh arena) every node is live: no read to tell.
            if self.free == NULL {
                order.extend((0..self.nodes.len() as u32).rev());
            } else {
                order.extend(
                    (0..self.nodes.len() as u32).rev().filter(|&i| self.nodes[i as usize].child[0] != NULL),
                );
            }
            return;
        }
        let mut stack = vec![index(self.root) as u32];
        while let Some(i) = stack.pop() {
            order.push(i);
            stack.extend(
                self.nodes[i as usize]
                    .child
                    .iter()
                    .filter(|&&c| c != NULL && c & LEAF == 0)
                    .map(|&c| index(c) as u32),
            );
        }
        order.reverse();
    }

    /// Flags exactly the leaves of `items` and the slots above them as moved; `queued(item)` tells
    /// whether an item is among them. Many items (a quarter of the leaves or more) take one
    /// pass over the nodes in reverse arena order, which is bottom-up for a depth-first layout
    /// and otherwise repeated until settled; few clear the flags and walk up from each leaf.
    pub(crate) fn mark_moved_many(&mut self, items: &[u32], queued: impl Fn(u32) -> bool) {
        if self.root == NULL {
            return;
        }
        if items.len() * 4 < self.leaves as usize {
            self.clear_moved();
            for &item in items {
                self.mark_moved(item);
            }
            return;
        }
        let mut order = std::mem::take(&mut self.order);
        self.bottom_up(&mut order);
        for &i in &order {
            let mut c = self.nodes[i as usize].child;
            for c in c.iter_mut().filter(|c| **c != NULL) {
                *c = self.flagged(*c, &queued);
            }
            self.nodes[i as usize].child = c;
        }
        self.order = order;
        self.root = self.flagged(self.root, &queued);
    }

    /// Child reference `c` (not `NULL`) with its moved flag as it should be: a leaf's from
    /// `queued(item)`, a node's from its children's (set already).
    #[inline(always)]
    fn flagged(&self, c: u32, queued: &impl Fn(u32) -> bool) -> u32 {
        let moved =
            if c & LEAF != 0 { queued(index(c) as u32) } else { moved_mask(&self.nodes[index(c)]) != 0 };
        if moved { c | MOVED } else { c & !MOVED }
    }

    /// Clears every moved flag (walks only the flagged part).
    pub(crate) fn clear_moved(&mut self) {
        if self.root == NULL || self.root & MOVED == 0 {
            return;
        }
        self.root &= !MOVED;
        if self.root & LEAF != 0 {
            return;
        }
        let mut stack = vec![index(self.root)];
        while let Some(i) = stack.pop() {
            for c in self.nodes[i].child.iter_mut() {
                if *c != NULL && *c & MOVED != 0 {
                    *c &= !MOVED;
                    if *c & LEAF == 0 {
                        stack.push(index(*c));
                    }
                }
            }
        }
    }

    /// Rebuilds the subtree under node reference `r` (an internal node) from its leaves by binned
    /// SAH, in place: its nodes go back to the free list, the new ones come off it, and the new
    /// subtree takes `r`'s slot (or the root). The leaves keep their moved flags.
    #[cfg(test)]
    pub(crate) fn rebuild_subtree(&mut self, r: u32) {
        self.rebuild_below(index(r) as u32, |_, _| true);
    }

    /// Rebuilds the whole tree from its leaves into a fresh arena, laid out depth first.
    pub(crate) fn rebuild_full(&mut self) {
        self.rebuild_with(&[]);
    }

    /// Adds many leaves (items below [`ITEM_MASK`], distinct, none already here), flagged moved.
    /// When they are at least 1/[`BULK_SHARE`] of the tree they make, the tree is rebuilt over
    /// all its leaves by binned SAH instead of inserting each (PERF: `dyn_insert_probe`, see
    /// `docs/architecture.md`, session 24); otherwise each is inserted.
    pub(crate) fn insert_many(&mut self, new: &[(Aabb, u32)]) {
        if new.len() < 2 || new.len() * BULK_SHARE < self.leaves as usize + new.len() {
            for &(aabb, item) in new {
                self.insert(aabb, item);
            }
            return;
        }
        self.rebuild_with(new);
    }

    /// Rebuilds the whole tree from its leaves and `new` ones (flagged moved) into a fresh
    /// arena, laid out depth first.
    fn rebuild_with(&mut self, new: &[(Aabb, u32)]) {
        self.background.active = false;
        self.inserted = 0;
        self.refilled = 0;
        let mut items = std::mem::take(&mut self.background.items);
        self.collect_items(&mut items);
        for &(aabb, item) in new {
            self.own(item, aabb);
            let mut it = Item::leaf(aabb, item);
            it.r |= MOVED;
            items.push(it);
        }
        self.leaves += new.len() as u32;
        if items.len() < 2 {
            // No node: the tree is empty or one leaf, the root.
            if let Some(it) = items.first() {
                self.set_root(it.r);
            }
            self.rebuilt_cost = 1.0;
            self.background.items = items;
            return;
        }
        self.nodes.clear();
        self.up.clear();
        self.grew.clear();
        self.grown_tops.clear();
        self.free = NULL;
        let r = self.node(&mut items);
        self.set_root(r);
        // Depth first: parents before children.
        self.ordered = true;
        self.background.items = items;
        self.rebuilt_cost = self.sah_cost();
    }

    /// Internal nodes in use.
    pub(crate) fn node_count(&self) -> usize {
        let mut free = 0;
        let mut f = self.free;
        while f != NULL {
            free += 1;
            f = self.up[f as usize];
        }
        self.nodes.len() - free
    }

    /// Bytes held by the nodes, parent links, leaf locations and leaf boxes.
    pub(crate) fn bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<QNode>()
            + self.up.capacity() * 4
            + self.loc.capacity() * 4
            + self.leaf_box.capacity() * std::mem::size_of::<Aabb>()
    }

    /// The surface-area cost: the summed areas of the nodes' boxes over the root's (1 for a tree
    /// of one node or none).
    pub(crate) fn sah_cost(&self) -> f64 {
        if self.root == NULL || self.root & LEAF != 0 {
            return 1.0;
        }
        let root = f64::from(area(&self.nodes[index(self.root)].span())).max(f64::MIN_POSITIVE);
        let mut total = 0.0;
        let mut stack = vec![index(self.root)];
        while let Some(i) = stack.pop() {
            total += f64::from(area(&self.nodes[i].span()));
            stack.extend(
                self.nodes[i].child.iter().filter(|&&c| c != NULL && c & LEAF == 0).map(|&c| index(c)),
            );
        }
        total / root
    }

    /// Levels of nodes on the longest path from the root (0 when empty or a single leaf).
    pub(crate) fn height(&self) -> u32 {
        if self.root == NULL || self.root & LEAF != 0 {
            return 0;
        }
        let mut best = 0;
        let mut stack = vec![(index(self.root), 1u32)];
        while let Some((i, h)) = stack.pop() {
            best = best.max(h);
            stack.extend(
                self.nodes[i]
                    .child
                    .iter()
                    .filter(|&&c| c != NULL && c & LEAF == 0)
                    .map(|&c| (index(c), h + 1)),
            );
        }
        best
    }

    /// The number of leaves.
    pub(crate) fn leaf_count(&self) -> u32 {
        self.leaves
    }

    #[inline(always)]
    fn prefetch_descent(&self, c: usize) {
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
                    self.prefetch_descent(index(c));
                }
                stack.push((c, t));
            }
        }
        limit
    }

    /// Checks the tree: every child's box (a leaf's exact box, a node's span) within the box its
    /// node's steps bound it by; slots packed, at least 2 children a node; parent links and leaf
    /// locations; every node reached once or free; the leaf count.
    pub(crate) fn validate(
        &self,
        leaf_ok: &mut dyn FnMut(u32, &Aabb) -> Result<(), String>,
    ) -> Result<(), String> {
        if self.root == NULL {
            return if self.leaves == 0 {
                Ok(())
            } else {
                Err(format!("empty root, {} leaves", self.leaves))
            };
        }
        if self.root & LEAF != 0 {
            let ok = self.loc.get(index(self.root)) == Some(&ROOT_LEAF) && self.leaves == 1;
            if !ok {
                return Err("root leaf's location or count".into());
            }
            return leaf_ok(index(self.root) as u32, &self.leaf_box[index(self.root)]);
        }
        if self.up[index(self.root)] != NULL {
            return Err("the root has a parent".into());
        }
        let mut reached = vec![false; self.nodes.len()];
        let mut leaves = 0u32;
        let mut stack = vec![index(self.root) as u32];
        while let Some(i) = stack.pop() {
            let slot = reached.get_mut(i as usize).ok_or(format!("node {i} out of range"))?;
            if std::mem::replace(slot, true) {
                return Err(format!("node {i} reached twice"));
            }
            let n = &self.nodes[i as usize];
            let len = n.len();
            if len < 2 || n.child[..len].contains(&NULL) {
                return Err(format!("node {i}: {len} children, or a gap"));
            }
            for s in 0..len {
                let c = n.child[s];
                let at = i << 2 | s as u32;
                if c & LEAF != 0 {
                    leaves += 1;
                    if self.loc.get(index(c)) != Some(&at) {
                        return Err(format!("leaf {} at node {i} slot {s}: wrong location", c & ITEM_MASK));
                    }
                    leaf_ok(index(c) as u32, &self.leaf_box[index(c)])?;
                } else {
                    if self.up[index(c)] != at {
                        return Err(format!("node {c} under node {i} slot {s}: wrong parent"));
                    }
                    if self.ordered && index(c) <= i as usize {
                        return Err(format!(
                            "node {c} under node {i}: before its parent, arena marked ordered"
                        ));
                    }
                    // Flags may stand after their movers left (only too many, as the binary
                    // tree's); a flagged child under an unflagged slot would hide pairs.
                    if c & MOVED == 0 && moved_mask(&self.nodes[index(c)]) != 0 {
                        return Err(format!("node {c} under node {i} slot {s}: moved child, unflagged"));
                    }
                    stack.push(index(c) as u32);
                }
                let (b, held) = (self.box_of(c), n.child_box(s));
                if !held.contains(&b) {
                    return Err(format!("node {i} slot {s}: {held:?} does not hold {b:?}"));
                }
            }
        }
        if leaves != self.leaves {
            return Err(format!("{leaves} leaves reached, {} counted", self.leaves));
        }
        let mut free = 0;
        let mut f = self.free;
        while f != NULL {
            free += 1;
            if free > self.nodes.len() || reached[f as usize] {
                return Err(format!("free list reaches node {f} twice or in use"));
            }
            f = self.up[f as usize];
        }
        if reached.iter().filter(|&&r| r).count() + free != self.nodes.len() {
            return Err("nodes neither reached nor free".into());
        }
        Ok(())
    }
}

/// Prefetches both lines of node `i` (if it exists): the boxes span both, the child references
/// sit in the second.
#[inline(always)]
fn prefetch_node(nodes: &[QNode], i: usize) {
    if let Some(n) = nodes.get(i) {
        prefetch_index::prefetch_index(n.lo.as_slice(), 0);
        prefetch_index::prefetch_index(n.child.as_slice(), 0);
    }
}

/// Children's boxes of a node as lanes, per axis `(lows, highs)`, slot `s` in lane `s`.
type Lanes = [(f32x4, f32x4); 3];

#[inline(always)]
fn lanes(n: &QNode) -> Lanes {
    n.lanes().map(|(lo, hi)| (f32x4::from(lo), f32x4::from(hi)))
}

/// Slot `s`'s box, each coordinate in all four lanes (broadcast from the node: taken from lanes
/// in registers, they were spilled to the stack and reloaded).
#[inline(always)]
fn spread(n: &QNode, s: usize) -> Lanes {
    std::array::from_fn(|a| (f32x4::splat(n.lo[a][s]), f32x4::splat(n.hi[a][s])))
}

/// A box with each coordinate in all four lanes.
#[inline(always)]
fn spread_box(b: &Aabb) -> Lanes {
    std::array::from_fn(|a| (f32x4::splat(b.mins[a]), f32x4::splat(b.maxs[a])))
}

/// Lane `j`: the area ([`area`]) of child `j`'s box of `l` merged with the spread box `q`.
#[inline(always)]
fn merged_areas(l: &Lanes, q: &Lanes) -> f32x4 {
    let e: [f32x4; 3] = std::array::from_fn(|a| l[a].1.max(q[a].1) - l[a].0.min(q[a].0));
    e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
}

/// The lane of the least of `v` (the first of equals).
#[inline(always)]
fn lowest(v: &[f32; 4]) -> usize {
    (1..4).fold(0, |k, q| if v[q] < v[k] { q } else { k })
}

/// Lane `s`: 0 where bit `s` of `mask` is set, infinity where it is clear (the max of it and an
/// area rules the clear lanes out of a minimum).
#[inline(always)]
fn empty_lanes(mask: u32) -> f32x4 {
    f32x4::from(std::array::from_fn::<f32, 4, _>(|s| if mask >> s & 1 != 0 { 0.0 } else { f32::INFINITY }))
}

/// Lane `j`: the area ([`area`]) of child `j`'s box of `l`.
#[inline(always)]
fn areas(l: &Lanes) -> f32x4 {
    let e: [f32x4; 3] = std::array::from_fn(|a| l[a].1 - l[a].0);
    e[0] * e[1] + e[1] * e[2] + e[2] * e[0]
}

/// Lane `k`: the union of the boxes of `l` in every lane but `k`.
#[inline(always)]
fn others_union(l: &Lanes) -> Lanes {
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
fn touch(l: &Lanes, q: &Lanes) -> u32 {
    let m = (0..3).fold(f32x4::splat(f32::from_bits(u32::MAX)), |m, a| {
        m & l[a].0.cmp_le(q[a].1) & q[a].0.cmp_le(l[a].1)
    });
    m.move_mask() as u32
}

/// Per slot, as bits: `(holds a child, holds a moved child, holds a leaf)`. PERF: one 4-lane
/// compare and three sign masks (as scalar folds, 4% of a frame at 100k boxes all moving).
#[inline(always)]
fn masks(n: &QNode) -> (u32, u32, u32) {
    let v = i32x4::from(n.child.map(|c| c as i32));
    // `NULL` has every bit set, so it is excluded from the flag masks by `present`.
    let present = !(v.cmp_eq(i32x4::splat(-1)).move_mask() as u32) & 0xF;
    let leaf = v.move_mask() as u32 & present;
    let moved = (v << 1i32).move_mask() as u32 & present;
    (present, moved, leaf)
}

/// Bit `s`: slot `s` holds a moved child.
#[inline(always)]
fn moved_mask(n: &QNode) -> u32 {
    masks(n).1
}

/// Tasks taken off the stack ahead of their visit, each prefetched as it enters (as the binary
/// tree's traversal).
const AHEAD: usize = 32;

/// A unit of the pair traversal: `(x in a, y in a or b, cross)`. Either a node against itself
/// (`x == y`, not cross), or two references whose boxes overlap, one of which moved; never two
/// leaves (those are candidates on the spot).
pub(crate) type Task = (u32, u32, bool);

/// Collects into `out` the pair keys `(low << 32) | high` of leaves whose boxes (as their nodes
/// bound them; a leaf met against a node, its tight box) overlap, at least one of them moved:
/// within `a`, and between `a` and `b` when given. Candidates only: the caller tests tight boxes.
#[cfg(test)]
pub(crate) fn candidate_pairs(a: &QuadTree, b: Option<&QuadTree>, tight: &[Aabb], out: &mut Vec<u64>) {
    let mut found = Sink::from(std::mem::take(out));
    let mut stack = Sink::default();
    root_tasks(a, b, &mut found, &mut stack);
    run(a, b, tight, &mut stack, &mut found);
    *out = found.into_vec();
}

/// The traversal's first tasks, onto `stack`: `a`'s root against itself and against `b`'s (a
/// pair of leaf roots goes to `found` instead).
pub(crate) fn root_tasks(a: &QuadTree, b: Option<&QuadTree>, found: &mut Sink<u64>, stack: &mut Sink<Task>) {
    stack.room(2);
    found.room(1);
    if a.root != NULL && a.root & LEAF == 0 && a.root & MOVED != 0 {
        stack.put((a.root, a.root, false), true);
    }
    if let Some(b) = b
        && a.root != NULL
        && b.root != NULL
        && (a.root | b.root) & MOVED != 0
        && crate::sah::overlap(&a.box_of(a.root), &b.box_of(b.root))
    {
        let leaves = a.root & b.root & LEAF != 0;
        found.put(pair_key(a.root, b.root), leaves);
        stack.put((a.root, b.root, true), !leaves);
    }
}

/// Runs the tasks on `stack` and all they lead to, candidates into `found`. Tasks leave the stack
/// into a ring of [`AHEAD`] and are visited from its far end, each prefetched as it enters.
pub(crate) fn run(
    a: &QuadTree,
    b: Option<&QuadTree>,
    tight: &[Aabb],
    stack: &mut Sink<Task>,
    out: &mut Sink<u64>,
) {
    // Locals for the loop, so the sinks' fields stay in registers.
    let (mut stack_, mut found) = (std::mem::take(stack), std::mem::take(out));
    let fetch = |t: &QuadTree, r: u32| {
        if r & LEAF == 0 {
            prefetch_node(&t.nodes, index(r));
        } else {
            prefetch_index::prefetch_index(tight, index(r));
        }
    };
    let mut ring = [(0u32, 0u32, false); AHEAD];
    let (mut head, mut queued) = (0usize, 0usize);
    loop {
        while queued < AHEAD
            && let Some(t) = stack_.pop()
        {
            fetch(a, t.0);
            fetch(if t.2 { b.unwrap_or(a) } else { a }, t.1);
            ring[(head + queued) % AHEAD] = t;
            queued += 1;
        }
        if queued == 0 {
            break;
        }
        let t = ring[head];
        head = (head + 1) % AHEAD;
        queued -= 1;
        visit(a, b, tight, t, &mut stack_, &mut found);
    }
    (*stack, *out) = (stack_, found);
}

/// Visits one task: its child pairs that pass their tests become candidates (two leaves) or
/// tasks.
#[inline(always)]
pub(crate) fn visit(
    a: &QuadTree,
    b: Option<&QuadTree>,
    tight: &[Aabb],
    (x, y, cross): Task,
    stack: &mut Sink<Task>,
    found: &mut Sink<u64>,
) {
    let bt = if cross { b.unwrap_or(a) } else { a };
    stack.room(WIDTH * WIDTH + WIDTH);
    found.room(WIDTH * WIDTH);
    // The child pairs of `ci` with the slots `m` of `n` passed: leaf pairs are candidates,
    // the rest tasks. Only the set bits are visited (most node pairs pass few).
    if !cross && x == y {
        let n = &a.nodes[index(x)];
        let (l, moved, present) = (lanes(n), moved_mask(n), n.present());
        for i in 0..n.len() {
            let ci = n.child[i];
            if ci & LEAF == 0 && ci & MOVED != 0 {
                stack.put((ci, ci, false), true);
            }
            // Later slots only, each pair once; at least one of the two moved.
            let with = if ci & MOVED != 0 { present } else { moved };
            emit(found, stack, ci, n, touch(&l, &spread(n, i)) & with & !((2 << i) - 1), cross);
        }
        return;
    }
    match (x & LEAF != 0, y & LEAF != 0) {
        (true, true) => found.put(pair_key(x, y), true),
        (true, false) => {
            let ny = &bt.nodes[index(y)];
            let with = if x & MOVED != 0 { ny.present() } else { moved_mask(ny) };
            emit(found, stack, x, ny, touch(&lanes(ny), &spread_box(&tight[index(x)])) & with, cross);
        }
        (false, true) => {
            // Node against leaf: the same with the sides' roles swapped (`emit` orders the
            // key; the task keeps `x` in `a`).
            let nx = &a.nodes[index(x)];
            let with = if y & MOVED != 0 { nx.present() } else { moved_mask(nx) };
            let mut m = touch(&lanes(nx), &spread_box(&tight[index(y)])) & with;
            while m != 0 {
                let i = m.trailing_zeros() as usize;
                m &= m - 1;
                let ci = nx.child[i];
                if ci & LEAF != 0 {
                    found.put(pair_key(ci, y), true);
                } else {
                    stack.put((ci, y, cross), true);
                }
            }
        }
        (false, false) => {
            let (nx, ny) = (&a.nodes[index(x)], &bt.nodes[index(y)]);
            let (ly, my, py) = (lanes(ny), moved_mask(ny), ny.present());
            for i in 0..nx.len() {
                let ci = nx.child[i];
                let with = if ci & MOVED != 0 { py } else { my };
                emit(found, stack, ci, ny, touch(&ly, &spread(nx, i)) & with, cross);
            }
        }
    }
}

/// The pair key `(low << 32) | high` of two leaf references.
#[inline(always)]
fn pair_key(x: u32, y: u32) -> u64 {
    let (x, y) = (x & ITEM_MASK, y & ITEM_MASK);
    u64::from(x.min(y)) << 32 | u64::from(x.max(y))
}

/// The child pairs of `ci` with the slots `m` of node `n` that passed their tests: leaf pairs go
/// to `found` as candidates, the rest to `stack` as tasks. Only the set bits are visited (most
/// node pairs pass few).
#[inline(always)]
fn emit(found: &mut Sink<u64>, stack: &mut Sink<(u32, u32, bool)>, ci: u32, n: &QNode, m: u32, cross: bool) {
    let leaves = if ci & LEAF != 0 { leaf_mask(n) } else { 0 };
    let (mut c, mut t) = (m & leaves, m & !leaves);
    while c != 0 {
        let j = c.trailing_zeros() as usize;
        c &= c - 1;
        found.put(pair_key(ci, n.child[j]), true);
    }
    while t != 0 {
        let j = t.trailing_zeros() as usize;
        t &= t - 1;
        stack.put((ci, n.child[j], cross), true);
    }
}

/// Bit `s`: slot `s` holds a leaf.
#[inline(always)]
fn leaf_mask(n: &QNode) -> u32 {
    masks(n).2
}

const EMPTY: Aabb = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(0.0, 0.0, 0.0));

/// Splits `items` (at least 2) into up to four groups, as ranges: the binary SAH split applied
/// to the group of largest area (2 items or more) until there are four. The areas come from the
/// splits themselves (PERF: folding each group's boxes again was a quarter of a background
/// rebuild's time).
fn groups(items: &mut [Item]) -> ([(usize, usize); WIDTH], usize) {
    // (start, end, area); the first group's area is never compared.
    let mut g = [(0, 0, 0.0f32); WIDTH];
    g[0] = (0, items.len(), 0.0);
    let mut len = 1;
    while len < WIDTH {
        let Some(k) = (0..len).filter(|&k| g[k].1 - g[k].0 >= 2).max_by(|&k, &j| g[k].2.total_cmp(&g[j].2))
        else {
            break;
        };
        let (s, e, _) = g[k];
        let cut = split(&mut items[s..e]);
        let m = s + cut.at;
        g.copy_within(k + 1..len, k + 2);
        g[k] = (s, m, cut.areas[0]);
        g[k + 1] = (m, e, cut.areas[1]);
        len += 1;
    }
    (g.map(|(s, e, _)| (s, e)), len)
}

fn area(b: &Aabb) -> f32 {
    let e = b.maxs - b.mins;
    e.x * e.y + e.y * e.z + e.z * e.x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sah::overlap;
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
    fn nodes_fill_two_lines() {
        assert_eq!(std::mem::size_of::<QNode>(), 128);
        assert_eq!(std::mem::align_of::<QNode>(), 64);
    }

    proptest! {
        /// The branch and bound finds a cheapest place: none of all the places (each node's free
        /// slot, each child to pair with, a new root) costs less.
        #[test]
        fn insertion_finds_the_cheapest_place(boxes in arb_boxes(60), d in arb_boxes(2)) {
            prop_assume!(boxes.len() >= 3 && !d.is_empty());
            let mut t = QuadTree::default();
            for (i, b) in boxes.iter().enumerate() {
                t.insert(*b, i as u32);
            }
            let d = d[0];
            let found = t.place_cost(&d, t.best_place(&d));
            let mut least = t.place_cost(&d, (NULL, None));
            let mut stack = vec![index(t.root) as u32];
            while let Some(n) = stack.pop() {
                let node = t.nodes[n as usize];
                if node.len() < WIDTH {
                    least = least.min(t.place_cost(&d, (n, None)));
                }
                for s in 0..node.len() {
                    least = least.min(t.place_cost(&d, (n, Some(s))));
                    if node.child[s] & LEAF == 0 {
                        stack.push(index(node.child[s]) as u32);
                    }
                }
            }
            prop_assert!(found <= least * (1.0 + 1e-5) + 1e-3, "found {found}, cheapest {least}");
        }
    }

    /// Boxes inserted in a sweep along x, the order that grows a chain without rotations: the
    /// rotations keep the tree within 2× a bulk build's SAH cost and shallow (with them: 1.66×,
    /// height 11; without: 5.4×, height 29).
    #[test]
    fn rotations_keep_a_sweep_shallow() {
        let mut t = QuadTree::default();
        for i in 0..4000u32 {
            let (x, y, z) = (i as f32 * 0.25, (i * 7 % 31) as f32, (i * 13 % 29) as f32);
            t.insert(Aabb::new(Point3::new(x, y, z), Point3::new(x + 1.0, y + 1.0, z + 1.0)), i);
        }
        t.validate(&mut |_, _| Ok(())).unwrap();
        let mut fresh = t.clone();
        fresh.rebuild_full();
        let ratio = t.sah_cost() / fresh.sah_cost();
        assert!(ratio < 2.0, "SAH cost {ratio} times a bulk build's");
        assert!(t.height() <= 13, "height {}", t.height());
    }

    /// A leaf moved across the world grows every ancestor below the one holding both places;
    /// rebuilding the grown nodes puts it among its new neighbours, near a fresh build's cost.
    #[test]
    fn grown_nodes_are_rebuilt() {
        let cube = |i: u32| {
            let lo = Point3::new((i % 16) as f32 * 2.0, (i / 16 % 16) as f32 * 2.0, (i / 256) as f32 * 2.0);
            Aabb::new(lo, lo + Vector3::new(1.0, 1.0, 1.0))
        };
        let mut t = QuadTree::build(&leaves(&(0..1024).map(cube).collect::<Vec<_>>()));
        let fresh = t.sah_cost();
        // Item 0 goes to the far corner, next to item 1023.
        let far = Aabb::new(
            cube(1023).mins + Vector3::new(1.5, 0.0, 0.0),
            cube(1023).maxs + Vector3::new(1.5, 0.0, 0.0),
        );
        t.set_leaf_box(0, far);
        let grown = t.sah_cost();
        assert!(!t.grown_tops.is_empty());
        t.rebuild_grown();
        t.validate(&mut |i, b| {
            if *b == if i == 0 { far } else { cube(i) } { Ok(()) } else { Err(format!("leaf {i}")) }
        })
        .unwrap();
        let rebuilt = t.sah_cost();
        let mut best = t.clone();
        best.rebuild_full();
        assert!(grown > fresh * 1.2, "the move stretched the tree: {grown} against {fresh}");
        // Measured: 1.36× the cost before the move when grown, 1.06× a full rebuild's after.
        assert!(
            rebuilt < best.sah_cost() * 1.1,
            "rebuilt {rebuilt}, grown {grown}, fresh build {}",
            best.sah_cost()
        );
        assert!(t.grew.iter().all(|&g| !g) && t.grown_tops.is_empty());
    }

    /// A background rebuild under way is left to finish when a batch refit finds the drift past
    /// [`REBUILD_RATIO`] (an at-once rebuild then made the frames 2.5× the mean); with none under
    /// way, the same drift rebuilds at once.
    #[test]
    fn drift_waits_for_the_background_rebuild() {
        let cube = |i: u32, spread: f32| {
            let (x, y, z) = ((i % 16) as f32, (i / 16 % 16) as f32, (i / 256) as f32);
            let lo = Point3::new(x * spread, y, z * spread);
            Aabb::new(lo, lo + Vector3::new(1.0, 1.0, 1.0))
        };
        let boxes: Vec<Aabb> = (0..1024).map(|i| cube(i, 1.0)).collect();
        // Every leaf moved so that the old structure's nodes span far more than a fresh one's.
        let scattered: Vec<(u32, Aabb)> = (0..1024u32).map(|i| (i, cube((i * 389) % 1024, 8.0))).collect();
        for under_way in [true, false] {
            let mut t = QuadTree::build(&leaves(&boxes));
            if under_way {
                t.start_background();
            }
            let before = t.rebuilt_cost;
            assert!(t.set_leaf_boxes(&scattered, |_| true));
            assert!(t.sah_cost() > before * REBUILD_RATIO || !under_way);
            if under_way {
                assert!(t.background.active, "the background rebuild was dropped");
                while t.background.active {
                    t.step_background();
                }
            } else {
                assert!(t.rebuilt_cost != before, "no rebuild at once");
            }
            t.validate(&mut |i, b| {
                if scattered[i as usize].1 == *b { Ok(()) } else { Err(format!("leaf {i}")) }
            })
            .unwrap();
            assert!(t.sah_cost() <= t.rebuilt_cost * BACKGROUND_RATIO, "the rebuild left the drift");
        }
    }

    /// A ray in a child's face plane with no motion across it: the slab's `0 × ∞` is NaN and must
    /// keep the bound (as `clip_ray_inv`), on the far plane as on the near one. The plane is on
    /// the last axis tested (z), so no later axis can mask the NaN.
    #[test]
    fn rays_in_a_face_plane_hit() {
        let b = |lo: [f32; 3], hi: [f32; 3]| Aabb::new(Point3::from(lo), Point3::from(hi));
        let boxes = [b([0.0, 0.0, 0.0], [1.0, 1.0, 255.0]), b([5.0, 0.0, 0.0], [255.0, 255.0, 3.0])];
        let t = QuadTree::build(&leaves(&boxes));
        for z in [0.0f32, 255.0] {
            let (o, inv) = (Point3::new(-1.0, 0.5, z), Vector3::new(1.0, 1.0 / 0.0, 1.0 / 0.0));
            let want = boxes[0].clip_ray_inv(&o, &inv, 10.0).map(|c| c.0);
            let mut got = None;
            t.cast_ray(&o, &inv, 10.0, &mut |i, lim| {
                if i == 0 {
                    got = boxes[0].clip_ray_inv(&o, &inv, lim).map(|c| c.0);
                }
                lim
            });
            assert!(want.is_some());
            assert_eq!(got, want, "z = {z}");
        }
    }

    proptest! {
        /// The build is valid: every box within its node's steps, every node and leaf once.
        #[test]
        fn builds_validate(boxes in arb_boxes(80)) {
            let t = QuadTree::build(&leaves(&boxes));
            prop_assert_eq!(t.validate(&mut |_, _| Ok(())), Ok(()));
        }

        /// Random inserts, removals and box changes keep the tree valid, and queries then find
        /// the brute force's set over the live leaves.
        #[test]
        fn updates_keep_the_tree_valid(
            start in arb_boxes(40),
            ops in prop::collection::vec((0u8..8, 0usize..64, arb_boxes(2)), 0..120),
            q in arb_boxes(4),
        ) {
            let mut t = QuadTree::build(&leaves(&start));
            let mut live: Vec<Option<Aabb>> = start.iter().map(|b| Some(*b)).collect();
            live.resize(64.max(live.len()), None);
            for (op, i, b) in ops {
                let Some(&b) = b.first() else { continue };
                match (op, live[i]) {
                    (0, None) => {
                        t.insert(b, i as u32);
                        live[i] = Some(b);
                    }
                    (1, Some(_)) => {
                        t.remove(i as u32);
                        live[i] = None;
                    }
                    (2, Some(_)) => {
                        t.set_leaf_box(i as u32, b);
                        live[i] = Some(b);
                    }
                    // The subtree above a live leaf, or (4) the whole tree, rebuilt.
                    (3, Some(_)) if t.loc[i] != ROOT_LEAF => t.rebuild_subtree(t.loc[i] >> 2),
                    (4, _) => {
                        let before = t.leaf_count();
                        t.rebuild_full();
                        prop_assert_eq!(t.leaf_count(), before);
                    }
                    // Every live leaf moved in one batch (the refit-all path), each by its own
                    // offset from `b`.
                    (5, _) => {
                        let moves: Vec<(u32, Aabb)> = (0..live.len())
                            .filter(|&j| live[j].is_some())
                            .map(|j| {
                                let d = Vector3::new(0.5 * (j % 5) as f32, 0.0, -0.5 * (j % 3) as f32);
                                (j as u32, Aabb::new(b.mins + d, b.maxs + d))
                            })
                            .collect();
                        // Flags from a rule of the item (any rule: they are checked against
                        // the children's).
                        t.set_leaf_boxes(&moves, |j| j % 3 == 0);
                        for &(j, nb) in &moves {
                            live[j as usize] = Some(nb);
                        }
                    }
                    // A background rebuild started, or advanced by a slice (the other operations
                    // interleave with it: box changes are taken at the swap, insertions and
                    // removals cancel it).
                    (6, _) => {
                        if t.background.active {
                            t.step_background();
                        } else {
                            t.start_background();
                        }
                    }
                    // The nodes grown in place since (op 2) rebuilt.
                    (7, _) => t.rebuild_grown(),
                    _ => continue,
                }
                let mut leaf_ok = |i: u32, b: &Aabb| {
                    if live[i as usize] == Some(*b) { Ok(()) } else { Err(format!("leaf {i}: box {b:?}")) }
                };
                prop_assert_eq!(t.validate(&mut leaf_ok), Ok(()));
            }
            for q in &q {
                let mut found = vec![0u32; live.len()];
                t.query(q, &mut |i| {
                    found[i as usize] += 1;
                    true
                });
                for (i, b) in live.iter().enumerate() {
                    prop_assert!(found[i] <= 1 && (found[i] == 0 || b.is_some()));
                    if b.is_some_and(|b| overlap(&b, q)) {
                        prop_assert_eq!(found[i], 1, "item {} missed", i);
                    }
                }
            }
        }

        /// The candidate pairs, filtered by tight boxes, are the brute force's: every pair of
        /// overlapping tight boxes with a mover, within the moving tree and across to the static
        /// one (never static with static), each once.
        #[test]
        fn pairs_match_the_brute_force(
            tight in arb_boxes(70),
            statics in prop::collection::vec(any::<bool>(), 70),
            moved in prop_oneof![prop::collection::vec(prop::bool::weighted(0.05), 70), prop::collection::vec(prop::bool::weighted(0.5), 70)],
            batch: bool,
        ) {
            let n = tight.len();
            let fat: Vec<Aabb> = tight.iter().map(|b| b.loosened(0.25)).collect();
            let is_static = |i: usize| statics[i];
            let pick = |st: bool| -> Vec<(Aabb, u32)> {
                (0..n).filter(|&i| is_static(i) == st).map(|i| (fat[i], i as u32)).collect()
            };
            let mut a = QuadTree::build(&pick(false));
            let mut b = QuadTree::build(&pick(true));
            // Both ways of flagging: one walk per mover, and the batch form (a walk each for
            // few movers, one pass for many).
            let (ma, mb): (Vec<u32>, Vec<u32>) = (0..n as u32).filter(|&i| moved[i as usize]).partition(|&i| !is_static(i as usize));
            if batch {
                a.mark_moved_many(&ma, |i| moved[i as usize]);
                b.mark_moved_many(&mb, |i| moved[i as usize]);
            } else {
                ma.iter().for_each(|&i| a.mark_moved(i));
                mb.iter().for_each(|&i| b.mark_moved(i));
            }
            let mut got = Vec::new();
            candidate_pairs(&a, Some(&b), &tight, &mut got);
            got.retain(|&k| overlap(&tight[(k >> 32) as usize], &tight[(k as u32) as usize]));
            got.sort_unstable();
            let mut want = Vec::new();
            for i in 0..n {
                for j in i + 1..n {
                    if (moved[i] || moved[j]) && !(is_static(i) && is_static(j)) && overlap(&tight[i], &tight[j]) {
                        want.push((i as u64) << 32 | j as u64);
                    }
                }
            }
            prop_assert_eq!(&got, &want);
            a.clear_moved();
            b.clear_moved();
            got.clear();
            candidate_pairs(&a, Some(&b), &tight, &mut got);
            prop_assert!(got.is_empty());
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
