//! One binary AABB tree in *wide* nodes: each internal node holds its two children's boxes, so a
//! visit tests both children from one 64-byte cache line without loading them (parry's and
//! bepu's layout). Leaves are not nodes: a leaf is a child slot holding an item (a proxy id) and
//! its fat box. An index arena with a free list; SAH insertion with a branch-and-bound sibling
//! search, rotations, removal, in-place enlargement with partial binned-SAH rebuilds, refit, and
//! stack-based queries.

use voxterra_core::Aabb;
use voxterra_core::nalgebra::{Point3, Vector3};
use wide::CmpLe;

/// "No node" (and an empty slot).
pub(crate) const NULL: u32 = u32::MAX;
/// A child reference with this bit is a leaf holding item `r & ITEM_MASK`; without it, the index
/// of an internal node.
pub(crate) const LEAF: u32 = 1 << 31;
/// Set on a leaf reference in pair-traversal entries only: the leaf moved.
pub(crate) const LEAF_MOVED: u32 = 1 << 30;
/// The item bits of a leaf reference.
pub(crate) const ITEM_MASK: u32 = LEAF_MOVED - 1;
/// Items must stay below this (the two high bits tag references).
pub(crate) const MAX_ITEMS: u32 = ITEM_MASK;

/// The node is in use (not on the free list).
const ALLOCATED: u32 = 1;
/// `MOVED0 << slot`: that child is a leaf created or moved since the last pair update, or holds
/// one.
pub(crate) const MOVED0: u32 = 2;
/// Either child moved.
pub(crate) const MOVED_ANY: u32 = MOVED0 | (MOVED0 << 1);
/// `GREW0 << slot`: that child's box grew in place since the last rebuild (an internal child: a
/// partial rebuild starts at the highest such node), or that leaf is on the enlarged list.
const GREW0: u32 = 8;

/// An internal node: 64 bytes, one cache line. `child[s]` is an internal node, `LEAF | item`, or
/// `NULL` (only slot 1 of a root holding a single leaf); `boxes[s]` is that child's box (a
/// leaf's fat box, or a box holding the child node's two boxes).
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct Node {
    pub(crate) boxes: [Aabb; 2],
    /// The children; a free node keeps the next free node in `child[0]`.
    pub(crate) child: [u32; 2],
    pub(crate) parent: u32,
    pub(crate) flags: u32,
}

const _: () = assert!(std::mem::size_of::<Node>() == 64);

/// An empty slot's box: inverted, so no overlap test with a finite box passes. Ray casts and
/// user queries check for `NULL` instead (slab tests and infinite query boxes see through it).
const EMPTY_BOX: Aabb =
    Aabb::new(Point3::new(f32::MAX, f32::MAX, f32::MAX), Point3::new(-f32::MAX, -f32::MAX, -f32::MAX));

impl Node {
    const FREE: Node = Node { boxes: [EMPTY_BOX; 2], child: [NULL; 2], parent: NULL, flags: 0 };

    /// The child in slot `s` moved or holds a mover.
    #[inline(always)]
    pub(crate) fn moved(&self, s: usize) -> bool {
        self.flags & (MOVED0 << s) != 0
    }

    /// The box holding both children.
    #[inline]
    pub(crate) fn bounds(&self) -> Aabb {
        self.boxes[0].merged(&self.boxes[1])
    }
}

/// An internal node reference (not a leaf, not `NULL`).
#[inline(always)]
pub(crate) fn is_node(r: u32) -> bool {
    r & LEAF == 0
}

/// A child slot's content, moved around by insertion, removal, rotation and rebuilds.
#[derive(Clone, Copy, Debug)]
struct Child {
    r: u32,
    aabb: Aabb,
    moved: bool,
    grew: bool,
}

const NO_CHILD: Child = Child { r: NULL, aabb: EMPTY_BOX, moved: false, grew: false };

/// A rebuild item: a leaf or a kept subtree, with the box and moved bit its slot had.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Item {
    pub(crate) aabb: Aabb,
    pub(crate) r: u32,
    moved: bool,
    /// Scratch for [`split`]: the item's bin, so the partition need not compute it again.
    bin: u8,
}

impl Item {
    /// A leaf holding `item` with box `aabb`.
    pub(crate) fn leaf(aabb: Aabb, item: u32) -> Self {
        Item { aabb, r: LEAF | item, moved: false, bin: 0 }
    }

    /// Twice the box centre on `axis` (binning only compares, so the halving is skipped).
    #[inline]
    fn center2(&self, axis: usize) -> f32 {
        self.aabb.mins[axis] + self.aabb.maxs[axis]
    }

    /// The box as two 4-lane vectors, minima and maxima in lanes 0–2 (lane 3 repeats a
    /// coordinate and is never read).
    #[inline(always)]
    fn lanes(&self) -> (F4, F4) {
        let a = &self.aabb;
        (F4::new([a.mins.x, a.mins.y, a.mins.z, a.mins.z]), F4::new([a.maxs.x, a.maxs.y, a.maxs.z, a.maxs.z]))
    }
}

/// [`EMPTY_BOX`] as [`Item::lanes`] gives a box: minima and maxima that any union passes over.
#[inline(always)]
fn empty_lanes() -> (F4, F4) {
    (F4::splat(f32::MAX), F4::splat(-f32::MAX))
}

/// [`area`] of the box with minima `lo` and maxima `hi` in lanes 0–2 (bit for bit).
#[inline(always)]
fn area_lanes(lo: F4, hi: F4) -> f32 {
    let e = (hi - lo).to_array();
    2.0 * (e[0] * e[1] + e[1] * e[2] + e[2] * e[0])
}

const BINS: usize = 12;

/// When more than 1/REFIT_SHARE of the leaves grew out of their fat boxes, partial rebuilds
/// would cover most of the tree: one refit of every box is far cheaper. Quality is then kept by
/// a full rebuild spread over the following pair updates ([`Background`]).
const REFIT_SHARE: usize = 32;

/// A refitted tree whose normalised SAH cost exceeds this many times its cost after the last
/// full rebuild is rebuilt in full at once (when background rebuilds keep being cancelled by
/// insertions and removals).
const REBUILD_RATIO: f64 = 1.15;

/// A refitted tree whose normalised SAH cost exceeds this many times its cost after the last
/// full rebuild starts a background rebuild.
const BACKGROUND_RATIO: f64 = 1.04;

/// A tree that received more than 1/INSERTED_SHARE of its leaves by insertion since its last full
/// rebuild is rebuilt in the background. PERF: insertion (SAH sibling search and rotations)
/// builds trees about 13% above a binned-SAH build's cost; the suite's static tree of 9 900 boxes,
/// all inserted, was then 12% slower to traverse against 100 movers.
const INSERTED_SHARE: usize = 4;

/// Items split per pair update by a background rebuild, per leaf: a build splits every leaf
/// once per tree level, so it completes in about height / 2 updates.
const BACKGROUND_BUDGET: usize = 4;

/// A full rebuild spread over several pair updates, so no frame pays for it whole. It splits
/// the leaves into a new arena while the live tree keeps serving; leaf boxes and moved bits are
/// taken from the live tree when it completes. Insertions and removals cancel it.
#[derive(Clone, Debug, Default)]
struct Background {
    active: bool,
    nodes: Vec<Node>,
    items: Vec<Item>,
    /// Ranges of `items` (at least 2 long) still to split, with the node they go into.
    work: Vec<(u32, u32, u32)>,
}

/// The tree. `pub(crate)`: users reach it through [`crate::DynamicAabbTree`].
#[derive(Clone, Debug)]
pub(crate) struct Tree {
    pub(crate) nodes: Vec<Node>,
    /// The root node, or `NULL` for an empty tree. A root may hold a single leaf (slot 1 empty).
    pub(crate) root: u32,
    free: u32,
    leaves: u32,
    /// Where each item's leaf is: `(node << 1) | slot`, or `NULL` when the item is not here.
    loc: Vec<u32>,
    /// Items whose fat boxes grew their ancestors since the last rebuild.
    enlarged: Vec<u32>,
    /// Scratch for rebuilds, kept to avoid allocating per frame.
    items: Vec<Item>,
    tops: Vec<u32>,
    stack: Vec<u32>,
    /// Nodes rebuilt since the last compaction: the node array drifts out of traversal order.
    churn: usize,
    /// Insertions since the last full rebuild (or the start of a background one).
    inserted: usize,
    /// The moved flags are from before the last pair update. They are left standing (consistent,
    /// only too many) until the next marking: recomputing them then costs nothing extra when
    /// many leaves moved, so the clearing pass is skipped.
    pub(crate) moved_flags_stale: bool,
    /// Normalised SAH cost right after the last full rebuild (0 before any).
    rebuilt_cost: f64,
    /// Sum of the areas of the nodes built (below the build's top) since it was last reset.
    built_area: f64,
    /// Scratch for compaction and background rebuilds.
    spare: Vec<Node>,
    background: Background,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: Vec::new(),
            root: NULL,
            free: NULL,
            leaves: 0,
            loc: Vec::new(),
            enlarged: Vec::new(),
            items: Vec::new(),
            tops: Vec::new(),
            stack: Vec::new(),
            churn: 0,
            inserted: 0,
            moved_flags_stale: false,
            rebuilt_cost: 0.0,
            built_area: 0.0,
            spare: Vec::new(),
            background: Background::default(),
        }
    }
}

/// Branch-free box overlap (the inner test of traversals and queries).
#[inline(always)]
pub(crate) fn overlap(a: &Aabb, b: &Aabb) -> bool {
    (a.mins.x <= b.maxs.x)
        & (b.mins.x <= a.maxs.x)
        & (a.mins.y <= b.maxs.y)
        & (b.mins.y <= a.maxs.y)
        & (a.mins.z <= b.maxs.z)
        & (b.mins.z <= a.maxs.z)
}

#[inline]
fn area(b: &Aabb) -> f32 {
    b.surface_area()
}

#[inline]
fn union(a: &Aabb, b: &Aabb) -> Aabb {
    a.merged(b)
}

#[inline]
fn split_loc(l: u32) -> (u32, usize) {
    (l >> 1, (l & 1) as usize)
}

impl Tree {
    pub(crate) fn leaf_count(&self) -> u32 {
        self.leaves
    }

    fn alloc(&mut self) -> u32 {
        let fresh = Node { flags: ALLOCATED, ..Node::FREE };
        if self.free == NULL {
            self.nodes.push(fresh);
            return self.nodes.len() as u32 - 1;
        }
        let i = self.free;
        self.free = self.nodes[i as usize].child[0];
        self.nodes[i as usize] = fresh;
        i
    }

    fn release(&mut self, i: u32) {
        self.nodes[i as usize] = Node { child: [self.free, NULL], ..Node::FREE };
        self.free = i;
    }

    #[inline]
    fn take(&self, node: u32, s: usize) -> Child {
        let n = &self.nodes[node as usize];
        Child {
            r: n.child[s],
            aabb: n.boxes[s],
            moved: n.flags & (MOVED0 << s) != 0,
            grew: n.flags & (GREW0 << s) != 0,
        }
    }

    /// Writes `c` into slot `s` of `node` and points the child back at it.
    #[inline]
    fn put(&mut self, node: u32, s: usize, c: Child) {
        let n = &mut self.nodes[node as usize];
        n.child[s] = c.r;
        n.boxes[s] = c.aabb;
        n.flags = (n.flags & !((MOVED0 | GREW0) << s))
            | (u32::from(c.moved) * (MOVED0 << s))
            | (u32::from(c.grew) * (GREW0 << s));
        if c.r == NULL {
        } else if is_node(c.r) {
            self.nodes[c.r as usize].parent = node;
        } else {
            self.loc[(c.r & ITEM_MASK) as usize] = (node << 1) | s as u32;
        }
    }

    /// The slot `node` occupies in `parent`.
    #[inline]
    fn slot_in(&self, parent: u32, node: u32) -> usize {
        usize::from(self.nodes[parent as usize].child[1] == node)
    }

    /// A node as its parent should record it: its exact box and moved bit.
    #[inline]
    fn as_child(&self, node: u32) -> Child {
        let n = &self.nodes[node as usize];
        Child { r: node, aabb: n.bounds(), moved: n.flags & MOVED_ANY != 0, grew: false }
    }

    /// Adds a leaf with box `aabb` holding `item` (below [`MAX_ITEMS`], not already here); it
    /// starts flagged as moved.
    pub(crate) fn insert(&mut self, aabb: Aabb, item: u32) {
        // Rotations could hang grown nodes under unflagged ones: settle pending growth first.
        self.rebuild_pending();
        self.background.active = false;
        if self.loc.len() <= item as usize {
            self.loc.resize(item as usize + 1, NULL);
        }
        self.leaves += 1;
        self.churn += 1;
        self.inserted += 1;
        let leaf = Child { r: LEAF | item, aabb, moved: true, grew: false };
        if self.root == NULL {
            self.root = self.alloc();
            self.put(self.root, 0, leaf);
            return;
        }
        let root = self.root;
        if self.nodes[root as usize].child[1] == NULL {
            self.put(root, 1, leaf);
            return;
        }
        let (parent, s) = self.best_sibling(&aabb);
        let sibling = if parent == NULL { self.as_child(root) } else { self.take(parent, s) };
        let n = self.alloc();
        self.put(n, 0, sibling);
        self.put(n, 1, leaf);
        if parent == NULL {
            self.root = n;
            self.nodes[n as usize].parent = NULL;
        } else {
            let joined = self.as_child(n);
            self.put(parent, s, joined);
        }
        self.refit_up(parent, true);
    }

    /// Where to pair a new box: the child slot `(node, slot)` whose pairing adds the least surface
    /// area to the tree, or `(NULL, 0)` for the root. A greedy descent that stops once the lower
    /// bound of going deeper cannot beat the best cost found.
    fn best_sibling(&self, d: &Aabb) -> (u32, usize) {
        let area_d = area(d);
        let root_box = self.nodes[self.root as usize].bounds();
        let mut best = (NULL, 0usize);
        let mut best_cost = area(&union(&root_box, d));
        // Growth of the ancestors of the slots being looked at.
        let mut inherited = best_cost - area(&root_box);
        let mut index = self.root;
        loop {
            let n = &self.nodes[index as usize];
            let mut grown = [0.0f32; 2];
            let mut low = [f32::INFINITY; 2];
            for s in 0..2 {
                let b = &n.boxes[s];
                let u = area(&union(b, d));
                if u + inherited < best_cost {
                    best = (index, s);
                    best_cost = u + inherited;
                }
                grown[s] = u - area(b);
                // Going below a child costs at least its growth plus a new node of area >= area_d.
                if is_node(n.child[s]) {
                    low[s] = inherited + grown[s] + area_d;
                }
            }
            if low[0].min(low[1]) >= best_cost {
                break;
            }
            let s = usize::from(low[1] < low[0]);
            inherited += grown[s];
            index = n.child[s];
        }
        best
    }

    /// Refits boxes and moved bits from node `i` to the root, rotating each node on the way when
    /// `rotate`. Boxes become exact unions; moved bits exact.
    fn refit_up(&mut self, mut i: u32, rotate: bool) {
        while i != NULL {
            if rotate {
                self.rotate(i);
            }
            let p = self.nodes[i as usize].parent;
            if p != NULL {
                let s = self.slot_in(p, i);
                let c = self.as_child(i);
                let pn = &mut self.nodes[p as usize];
                pn.boxes[s] = c.aabb;
                pn.flags = (pn.flags & !(MOVED0 << s)) | (u32::from(c.moved) * (MOVED0 << s));
            }
            i = p;
        }
    }

    /// Swaps a child of `a` with a grandchild under the other child when that shrinks the other
    /// child's box (a tree rotation; keeps quality as proxies come and go).
    fn rotate(&mut self, a: u32) {
        let na = self.nodes[a as usize];
        // (gain, slot of the child that stays, grandchild slot moved up)
        let mut best: Option<(f32, usize, usize)> = None;
        for keep in 0..2 {
            let k = na.child[keep];
            if !is_node(k) {
                continue;
            }
            let nk = &self.nodes[k as usize];
            let base = area(&na.boxes[keep]);
            for g in 0..2 {
                // Grandchild g goes up; keep then holds the other child of `a` and 1 - g.
                let gain = base - area(&union(&na.boxes[1 - keep], &nk.boxes[1 - g]));
                if gain > best.map_or(0.0, |b| b.0) {
                    best = Some((gain, keep, g));
                }
            }
        }
        let Some((_, keep, g)) = best else { return };
        let k = na.child[keep];
        let down = self.take(a, 1 - keep);
        let up = self.take(k, g);
        self.put(a, 1 - keep, up);
        self.put(k, g, down);
        let kc = Child { grew: na.flags & (GREW0 << keep) != 0, ..self.as_child(k) };
        self.put(a, keep, kc);
    }

    /// Removes an item's leaf.
    pub(crate) fn remove(&mut self, item: u32) {
        // The pending list may name this leaf: settle it first.
        self.rebuild_pending();
        self.background.active = false;
        let (p, s) = split_loc(self.loc[item as usize]);
        self.loc[item as usize] = NULL;
        self.leaves -= 1;
        let other = self.take(p, 1 - s);
        let parent = self.nodes[p as usize].parent;
        if parent == NULL {
            // `p` is the root.
            if other.r == NULL {
                self.release(p);
                self.root = NULL;
            } else if is_node(other.r) {
                self.release(p);
                self.root = other.r;
                self.nodes[other.r as usize].parent = NULL;
            } else {
                self.put(p, 0, other);
                self.put(p, 1, NO_CHILD);
            }
            return;
        }
        let t = self.slot_in(parent, p);
        self.put(parent, t, other);
        self.release(p);
        self.refit_up(parent, false);
    }

    /// Gives an item's leaf a new box in place: ancestors that no longer contain it grow and are
    /// marked for the next [`Tree::rebuild_pending`]. Nothing is reinserted.
    pub(crate) fn set_leaf_box(&mut self, item: u32, aabb: Aabb) {
        let (p, s) = split_loc(self.loc[item as usize]);
        self.nodes[p as usize].boxes[s] = aabb;
        let mut node = p;
        let mut grew = false;
        loop {
            let gp = self.nodes[node as usize].parent;
            if gp == NULL {
                break;
            }
            let t = self.slot_in(gp, node);
            let g = &mut self.nodes[gp as usize];
            if g.boxes[t].contains(&aabb) {
                break;
            }
            g.boxes[t] = union(&g.boxes[t], &aabb);
            g.flags |= GREW0 << t;
            grew = true;
            node = gp;
        }
        let n = &mut self.nodes[p as usize];
        if grew && n.flags & (GREW0 << s) == 0 {
            n.flags |= GREW0 << s;
            self.enlarged.push(item);
        }
    }

    /// Flags an item's leaf and its ancestors as moved.
    pub(crate) fn mark_moved(&mut self, item: u32) {
        let (mut node, mut s) = split_loc(self.loc[item as usize]);
        loop {
            let n = &mut self.nodes[node as usize];
            if n.flags & (MOVED0 << s) != 0 {
                // Flagged slots have flagged ancestors.
                break;
            }
            n.flags |= MOVED0 << s;
            let p = n.parent;
            if p == NULL {
                break;
            }
            s = self.slot_in(p, node);
            node = p;
        }
    }

    /// Flags the leaves of `items` (all in this tree) and their ancestors as moved, and no other:
    /// `items` must hold every leaf created or moved since the last pair update. `queued(item)`
    /// tells whether an item is among them. Few items walk up from each leaf (after clearing stale
    /// flags); many (a quarter of the leaves or more) take one pass over the tree instead that
    /// recomputes every flag, so their marks cost a streaming walk of the nodes rather than a
    /// cache miss each, and no clearing pass.
    pub(crate) fn mark_moved_many(&mut self, items: &[u32], queued: impl Fn(u32) -> bool) {
        let stale = std::mem::replace(&mut self.moved_flags_stale, false);
        if self.root == NULL {
            return;
        }
        if items.len() * 4 < self.leaves as usize {
            if stale {
                self.clear_moved();
            }
            for &item in items {
                self.mark_moved(item);
            }
            return;
        }
        // Post-order: a node's slots are flagged from its leaves' items and its children's flags.
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(self.root << 1);
        while let Some(e) = stack.pop() {
            let i = e >> 1;
            let n = self.nodes[i as usize];
            if e & 1 == 0 {
                stack.push(e | 1);
                for s in 0..2 {
                    if n.child[s] != NULL && is_node(n.child[s]) {
                        stack.push(n.child[s] << 1);
                    }
                }
                continue;
            }
            let mut flags = n.flags & !MOVED_ANY;
            for s in 0..2 {
                let c = n.child[s];
                let moved = if c == NULL {
                    false
                } else if is_node(c) {
                    self.nodes[c as usize].flags & MOVED_ANY != 0
                } else {
                    queued(c & !LEAF)
                };
                flags |= u32::from(moved) * (MOVED0 << s);
            }
            self.nodes[i as usize].flags = flags;
        }
        self.stack = stack;
    }

    /// Clears every moved flag (walks only the flagged part of the tree).
    fn clear_moved(&mut self) {
        if self.root == NULL {
            return;
        }
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(self.root);
        while let Some(i) = stack.pop() {
            let n = &mut self.nodes[i as usize];
            let f = n.flags;
            n.flags &= !MOVED_ANY;
            for s in 0..2 {
                if f & (MOVED0 << s) != 0 && is_node(n.child[s]) {
                    stack.push(n.child[s]);
                }
            }
        }
        self.stack = stack;
    }

    /// Whether node `i` has a box in its parent that grew in place.
    #[inline]
    fn grew(&self, i: u32) -> bool {
        let p = self.nodes[i as usize].parent;
        p != NULL && self.nodes[p as usize].flags & (GREW0 << self.slot_in(p, i)) != 0
    }

    /// Settles growth since the last call: few grown leaves get their grown subtrees rebuilt
    /// ([`Tree::rebuild_grown`]); many get every box refitted and a background rebuild started.
    /// Then advances the background rebuild, if any.
    pub(crate) fn rebuild_pending(&mut self) {
        if !self.enlarged.is_empty() {
            if self.enlarged.len() * REFIT_SHARE > self.leaves as usize {
                self.refit_and_schedule();
            } else {
                self.rebuild_grown();
            }
        }
        self.step_background();
    }

    /// Refits every box (settling all growth) and schedules a rebuild if quality calls for one.
    fn refit_and_schedule(&mut self) {
        self.enlarged.clear();
        let c = self.refit_all();
        if c > self.rebuilt_cost * REBUILD_RATIO {
            self.rebuild_full();
        } else if !self.background.active && c > self.rebuilt_cost * BACKGROUND_RATIO {
            self.start_background();
        }
    }

    /// [`Tree::set_leaf_box`] for many items at once. When so many that the next pair update
    /// would refit the whole tree anyway ([`REFIT_SHARE`]), the leaf boxes are written (their
    /// nodes prefetched a few items ahead) and the tree refitted now, with no walk up from each.
    pub(crate) fn set_leaf_boxes(&mut self, items: &[(u32, Aabb)]) {
        if items.len() * REFIT_SHARE <= self.leaves as usize {
            for &(item, aabb) in items {
                self.set_leaf_box(item, aabb);
            }
            return;
        }
        const AHEAD: usize = 8;
        for (k, &(item, aabb)) in items.iter().enumerate() {
            if let Some(&(next, _)) = items.get(k + AHEAD) {
                prefetch_index::prefetch_index(&self.nodes, (self.loc[next as usize] >> 1) as usize);
            }
            let (p, s) = split_loc(self.loc[item as usize]);
            self.nodes[p as usize].boxes[s] = aabb;
        }
        self.refit_and_schedule();
    }

    /// Starts a background rebuild when many leaves came by insertion since the last full
    /// rebuild ([`INSERTED_SHARE`]). For pair updates only: every insertion cancels it.
    pub(crate) fn rebuild_inserted(&mut self) {
        if !self.background.active && self.inserted * INSERTED_SHARE > self.leaves as usize {
            self.start_background();
        }
    }

    /// Starts a background rebuild over the current leaves.
    fn start_background(&mut self) {
        if self.leaves < 2 {
            return;
        }
        let bg = &mut self.background;
        collect_leaves(&self.nodes, &mut bg.items);
        bg.nodes = std::mem::take(&mut self.spare);
        bg.nodes.clear();
        bg.nodes.push(Node { flags: ALLOCATED, ..Node::FREE });
        bg.work.clear();
        bg.work.push((0, 0, bg.items.len() as u32));
        bg.active = true;
        // Insertions cancel it: restart only after as many again.
        self.inserted = 0;
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
            budget = budget.saturating_sub(b - a);
            let mid = a + split(&mut bg.items[a..b]);
            for (s, (lo, hi)) in [(0, (a, mid)), (1, (mid, b))] {
                if hi - lo == 1 {
                    bg.nodes[node as usize].child[s] = bg.items[lo].r;
                } else {
                    // Children are allocated after their parents: the swap refits backwards.
                    let c = bg.nodes.len() as u32;
                    bg.nodes.push(Node { flags: ALLOCATED, parent: node, ..Node::FREE });
                    bg.nodes[node as usize].child[s] = c;
                    bg.work.push((c, lo as u32, hi as u32));
                }
            }
        }
        if bg.work.is_empty() {
            self.finish_background();
        }
    }

    /// Swaps the completed background tree in, with the live tree's current leaf boxes and
    /// moved bits, refitted bottom up.
    fn finish_background(&mut self) {
        let mut nodes = std::mem::take(&mut self.background.nodes);
        // PERF: leaves' live locations and slots are scattered (indexed by proxy id, over both
        // trees' proxies): prefetch all the locations, then all the slots, so their misses
        // overlap, before the pass that reads them.
        for n in &nodes {
            for c in n.child {
                if c != NULL && !is_node(c) {
                    prefetch_index::prefetch_index(&self.loc, (c & ITEM_MASK) as usize);
                }
            }
        }
        for n in &nodes {
            for c in n.child {
                if c != NULL && !is_node(c) {
                    let p = self.loc[(c & ITEM_MASK) as usize] >> 1;
                    prefetch_index::prefetch_index(&self.nodes, p as usize);
                }
            }
        }
        let mut sum = 0.0f64;
        for i in (0..nodes.len()).rev() {
            let mut n = nodes[i];
            n.flags = ALLOCATED;
            for s in 0..2 {
                let c = n.child[s];
                if is_node(c) {
                    let cn = &nodes[c as usize];
                    n.boxes[s] = cn.bounds();
                    n.flags |= u32::from(cn.flags & MOVED_ANY != 0) * (MOVED0 << s);
                    sum += f64::from(area(&n.boxes[s]));
                } else {
                    let item = c & ITEM_MASK;
                    let (p, t) = split_loc(self.loc[item as usize]);
                    let live = &self.nodes[p as usize];
                    n.boxes[s] = live.boxes[t];
                    n.flags |= u32::from(live.moved(t)) * (MOVED0 << s);
                    // In place: each leaf appears once, so its live location is read before
                    // this overwrites it. PERF: a fresh array had to be sized for every proxy
                    // id, both trees' (a 1 050-leaf moving tree beside 99k statics cleared
                    // 400 KB a swap).
                    self.loc[item as usize] = ((i as u32) << 1) | s as u32;
                }
            }
            nodes[i] = n;
        }
        self.spare = std::mem::replace(&mut self.nodes, nodes);
        self.root = 0;
        self.free = NULL;
        self.enlarged.clear();
        self.churn = 0;
        self.background.active = false;
        self.rebuilt_cost = self.normalised_cost(sum);
    }

    /// Rebuilds, by binned SAH, each maximal subtree of nodes that grew since the last rebuild,
    /// keeping the subtrees below them; then refits the ancestors (boxes may shrink).
    fn rebuild_grown(&mut self) {
        let mut tops = std::mem::take(&mut self.tops);
        tops.clear();
        for k in 0..self.enlarged.len() {
            let (p, s) = split_loc(self.loc[self.enlarged[k] as usize]);
            self.nodes[p as usize].flags &= !(GREW0 << s);
            let mut top = NULL;
            let mut i = p;
            while self.grew(i) {
                top = i;
                i = self.nodes[i as usize].parent;
            }
            if top != NULL {
                tops.push(top);
            }
        }
        self.enlarged.clear();
        tops.sort_unstable();
        tops.dedup();
        // Tops may nest (a grown node above an ungrown one above another grown one); either
        // order gives a valid tree, and index order keeps it deterministic.
        for &top in &tops {
            // A top may have been absorbed by an earlier rebuild (freed, or reused in a new
            // subtree whose slots are not grown): skip it.
            if self.nodes[top as usize].flags & ALLOCATED == 0 || !self.grew(top) {
                continue;
            }
            self.rebuild_subtree(top, false);
            let p = self.nodes[top as usize].parent;
            let s = self.slot_in(p, top);
            self.nodes[p as usize].flags &= !(GREW0 << s);
            self.refit_up(top, false);
        }
        self.tops = tops;
    }

    /// Whether enough of the tree was rebuilt since the last [`Tree::compact`] that its nodes are
    /// scattered through memory.
    pub(crate) fn wants_compaction(&self) -> bool {
        // A background rebuild under way will lay the tree out anew.
        self.churn > self.leaves as usize / 2 && self.enlarged.is_empty() && !self.background.active
    }

    /// Rewrites the node array in depth-first order (a node's first child right after it), so
    /// traversals walk memory forwards; drops the free list. Requires no pending growth.
    pub(crate) fn compact(&mut self) {
        debug_assert!(self.enlarged.is_empty());
        self.churn = 0;
        let mut out = std::mem::take(&mut self.spare);
        out.clear();
        self.free = NULL;
        if self.root == NULL {
            self.nodes.clear();
            self.spare = out;
            return;
        }
        // Stack of (old index, new parent, slot in it); a node's new index is its position in `out`.
        let mut stack: Vec<(u32, u32, usize)> = Vec::with_capacity(64);
        stack.push((self.root, NULL, 0));
        while let Some((old, parent, slot)) = stack.pop() {
            let new = out.len() as u32;
            let mut n = self.nodes[old as usize];
            n.parent = parent;
            if parent != NULL {
                out[parent as usize].child[slot] = new;
            }
            for s in (0..2).rev() {
                let c = n.child[s];
                if c == NULL {
                } else if is_node(c) {
                    stack.push((c, new, s));
                } else {
                    self.loc[(c & ITEM_MASK) as usize] = (new << 1) | s as u32;
                }
            }
            out.push(n);
        }
        self.root = 0;
        std::mem::swap(&mut self.nodes, &mut out);
        self.spare = out;
    }

    /// Rebuilds the whole tree by binned SAH over its leaves, into a fresh arena: nodes are
    /// allocated depth first, so the result needs no compaction.
    pub(crate) fn rebuild_full(&mut self) {
        // Pending growth is subsumed: every slot is rewritten.
        self.enlarged.clear();
        self.background.active = false;
        if self.leaves < 2 {
            return;
        }
        let mut items = std::mem::take(&mut self.items);
        collect_leaves(&self.nodes, &mut items);
        self.nodes.clear();
        self.free = NULL;
        self.root = self.alloc();
        self.built_area = 0.0;
        self.build_into(self.root, &mut items);
        self.items = items;
        self.churn = 0;
        self.inserted = 0;
        self.rebuilt_cost = self.normalised_cost(self.built_area);
    }

    /// Makes every internal box the exact union of its children, bottom up, and clears growth
    /// marks (the caller clears the enlarged list). Returns the normalised SAH cost.
    fn refit_all(&mut self) -> f64 {
        if self.leaves < 2 {
            return 0.0;
        }
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(self.root);
        let mut sum = 0.0f64;
        // Post-order: a node is pushed again, tagged, under its children.
        const DONE: u32 = LEAF;
        while let Some(e) = stack.pop() {
            let i = e & !DONE;
            let n = self.nodes[i as usize];
            if e & DONE == 0 {
                stack.push(i | DONE);
                for s in 0..2 {
                    if is_node(n.child[s]) {
                        stack.push(n.child[s]);
                    }
                }
                continue;
            }
            let mut boxes = n.boxes;
            for (b, &c) in boxes.iter_mut().zip(&n.child) {
                if is_node(c) {
                    *b = self.nodes[c as usize].bounds();
                    sum += f64::from(area(b));
                }
            }
            let m = &mut self.nodes[i as usize];
            m.boxes = boxes;
            m.flags &= !(GREW0 | (GREW0 << 1));
        }
        self.stack = stack;
        self.normalised_cost(sum)
    }

    /// The SAH cost (node areas, root included, over the root's) from the sum of the areas of
    /// the internal nodes below the root.
    fn normalised_cost(&self, below_root: f64) -> f64 {
        let root_area = f64::from(area(&self.nodes[self.root as usize].bounds()));
        (below_root + root_area) / root_area.max(f64::MIN_POSITIVE)
    }

    /// Collects the items under `top` (every leaf when `full`, else leaves and ungrown
    /// subtrees), frees the internal nodes above them, and builds a new subtree into `top`.
    fn rebuild_subtree(&mut self, top: u32, full: bool) {
        let mut items = std::mem::take(&mut self.items);
        let mut stack = std::mem::take(&mut self.stack);
        items.clear();
        stack.clear();
        stack.push(top);
        while let Some(i) = stack.pop() {
            let n = self.nodes[i as usize];
            for s in 0..2 {
                let c = n.child[s];
                if c == NULL {
                    continue;
                }
                if is_node(c) && (full || n.flags & (GREW0 << s) != 0) {
                    stack.push(c);
                } else {
                    items.push(Item { aabb: n.boxes[s], r: c, moved: n.moved(s), bin: 0 });
                }
            }
            if i != top {
                self.release(i);
            }
        }
        self.churn += items.len();
        self.build_into(top, &mut items);
        self.items = items;
        self.stack = stack;
    }

    /// Builds a subtree over `items` (at least 2) into node `dest`.
    fn build_into(&mut self, dest: u32, items: &mut [Item]) {
        let mid = split(items);
        let (left, right) = items.split_at_mut(mid);
        for (s, side) in [(0, left), (1, right)] {
            let c = if let [one] = side {
                Child { r: one.r, aabb: one.aabb, moved: one.moved, grew: false }
            } else {
                let n = self.alloc();
                self.build_into(n, side);
                let c = self.as_child(n);
                self.built_area += f64::from(area(&c.aabb));
                c
            };
            self.put(dest, s, c);
        }
    }

    /// Calls `f(node, its box)` for every internal node, depth first.
    fn each_node(&self, f: &mut dyn FnMut(u32, &Aabb, u32)) {
        if self.root == NULL {
            return;
        }
        let mut stack = vec![(self.root, self.nodes[self.root as usize].bounds(), 1u32)];
        while let Some((i, b, depth)) = stack.pop() {
            f(i, &b, depth);
            let n = &self.nodes[i as usize];
            for s in 0..2 {
                if n.child[s] != NULL && is_node(n.child[s]) {
                    stack.push((n.child[s], n.boxes[s], depth + 1));
                }
            }
        }
    }

    /// Height: 0 for an empty or single-leaf tree, else the internal node levels.
    pub(crate) fn height(&self) -> u32 {
        if self.leaves < 2 {
            return 0;
        }
        let mut h = 0;
        self.each_node(&mut |_, _, depth| h = h.max(depth));
        h
    }

    /// Sum of internal node areas over the root's (the SAH cost up to constants); 0 for < 2 leaves.
    pub(crate) fn sah_cost(&self) -> f64 {
        if self.leaves < 2 {
            return 0.0;
        }
        let mut sum = 0.0f64;
        self.each_node(&mut |i, b, _| {
            if i != self.root {
                sum += f64::from(area(b));
            }
        });
        self.normalised_cost(sum)
    }

    /// Internal nodes in use.
    pub(crate) fn node_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.flags & ALLOCATED != 0).count()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>() + self.loc.capacity() * 4
    }

    /// Checks every structural invariant; `leaf_ok(item, fat box)` checks a leaf against its
    /// owner's records.
    pub(crate) fn validate(
        &self,
        leaf_ok: &mut dyn FnMut(u32, &Aabb) -> Result<(), String>,
    ) -> Result<(), String> {
        let mut reached = 0usize;
        let mut leaves = 0u32;
        if self.root != NULL {
            if self.nodes[self.root as usize].parent != NULL {
                return Err("root has a parent".into());
            }
            let mut stack = vec![self.root];
            while let Some(i) = stack.pop() {
                reached += 1;
                let n = &self.nodes[i as usize];
                if n.flags & ALLOCATED == 0 {
                    return Err(format!("node {i} is reachable but free"));
                }
                for s in 0..2 {
                    let c = n.child[s];
                    if c == NULL {
                        if i != self.root || s != 1 || self.leaves != 1 {
                            return Err(format!("node {i}: slot {s} is empty"));
                        }
                        continue;
                    }
                    if !is_node(c) {
                        let item = c & ITEM_MASK;
                        if c & LEAF_MOVED != 0 || self.loc.get(item as usize) != Some(&((i << 1) | s as u32))
                        {
                            return Err(format!("node {i}: leaf {item} in slot {s} is not located there"));
                        }
                        leaves += 1;
                        leaf_ok(item, &n.boxes[s])?;
                        continue;
                    }
                    let cn = self.nodes.get(c as usize).ok_or(format!("node {i}: child {c} out of range"))?;
                    if cn.parent != i {
                        return Err(format!("node {c}: parent {} but is a child of {i}", cn.parent));
                    }
                    if !n.boxes[s].contains(&cn.boxes[0]) || !n.boxes[s].contains(&cn.boxes[1]) {
                        return Err(format!("node {i}: slot {s} box does not contain child {c}'s boxes"));
                    }
                    if n.moved(s) != (cn.flags & MOVED_ANY != 0) {
                        return Err(format!("node {i}: slot {s} moved bit disagrees with child {c}"));
                    }
                    stack.push(c);
                }
            }
        }
        if leaves != self.leaves {
            return Err(format!("{leaves} leaves reachable, {} counted", self.leaves));
        }
        let located = self.loc.iter().filter(|&&l| l != NULL).count();
        if located != leaves as usize {
            return Err(format!("{located} items located, {leaves} leaves"));
        }
        let mut free = 0usize;
        let mut f = self.free;
        while f != NULL {
            free += 1;
            if free > self.nodes.len() {
                return Err("free list has a cycle".into());
            }
            if self.nodes[f as usize].flags & ALLOCATED != 0 {
                return Err(format!("node {f} is on the free list but allocated"));
            }
            f = self.nodes[f as usize].child[0];
        }
        if reached + free != self.nodes.len() {
            return Err(format!("{reached} reachable + {free} free != {} nodes", self.nodes.len()));
        }
        Ok(())
    }

    /// Calls `visit(item)` for each leaf whose box overlaps `aabb`; false stops.
    ///
    /// Breadth first, through a ring of [`RING`] nodes: the next nodes are known long before they
    /// are tested, and each is prefetched as it enters the ring, so their cache misses overlap
    /// where a depth-first walk waits for one miss a level. PERF: on the `compare` suite's
    /// 100k-box tree (6.4 MB of nodes, past L2), box queries take about a fifth less time than
    /// depth first with a plain load as the prefetch, and 7% less again with a real one (a plain
    /// load holds up retirement until it arrives). A node's children enter the
    /// ring branch-free (which of them overlaps is unpredictable). When the ring has no room for
    /// both, they are searched depth first at once, so no query allocates, whatever its size.
    #[inline]
    pub(crate) fn query(&self, aabb: &Aabb, visit: &mut impl FnMut(u32) -> bool) -> bool {
        if self.root == NULL {
            return true;
        }
        let q = QueryBox::new(aabb);
        let mut ring = [0u32; RING];
        ring[0] = self.root;
        let (mut head, mut tail) = (0usize, 1usize);
        while head != tail {
            let i = ring[head % RING];
            head += 1;
            let hits = q.hits(&self.nodes[i as usize]);
            if tail - head <= RING - 2 {
                for (hit, c) in hits {
                    let node = hit & is_node(c);
                    // Without a child to load, the current node's lines again (branch-free).
                    self.prefetch_descent((if node { c } else { i }) as usize);
                    ring[tail % RING] = c;
                    tail += usize::from(node);
                }
            } else {
                for (hit, c) in hits {
                    if hit & is_node(c) && !self.query_depth_first(c, &q, visit) {
                        return false;
                    }
                }
            }
            for (hit, c) in hits {
                if hit & !is_node(c) && !visit(c & ITEM_MASK) {
                    return false;
                }
            }
        }
        true
    }

    /// [`Tree::query`] below `top`, depth first on the call's stack.
    #[inline(never)]
    fn query_depth_first(&self, top: u32, q: &QueryBox, visit: &mut impl FnMut(u32) -> bool) -> bool {
        let mut stack = Stack::new();
        stack.push(top);
        while let Some(i) = stack.pop() {
            for (hit, c) in q.hits(&self.nodes[i as usize]) {
                if !hit {
                    continue;
                }
                if is_node(c) {
                    stack.push(c);
                } else if !visit(c & ITEM_MASK) {
                    return false;
                }
            }
        }
        true
    }

    /// Prefetches node `c` and the [`DESCENT`] nodes after it, which the builds place among
    /// its first descendants: a full rebuild and a compaction lay nodes out depth first (its
    /// first child, that child's first child...), a background rebuild puts a right child's two
    /// children right after it. Their indices are otherwise known only once `c` arrives. An
    /// index past the arena's end is harmless: a prefetch never faults.
    ///
    /// PERF: with the `compare` suite's 100k-box tree out of L2 (another tree's queries ran in
    /// between, as in the suite's interleaving), point queries −23%, box queries −11%, rays
    /// −18% (`dyn_query_focus` with `POLLUTE=1`, medians of 7). Background rebuilds laying
    /// nodes out depth first too gained queries nothing more and cost 100k/100% frames 7%.
    #[inline(always)]
    fn prefetch_descent(&self, c: usize) {
        for k in 0..=DESCENT {
            prefetch_index::prefetch_index(&self.nodes, c + k);
        }
    }

    /// Ray traversal, near child first; `visit(item, limit)` returns the new limit (<= 0 stops).
    /// Returns the final limit.
    pub(crate) fn cast_ray(
        &self,
        origin: &Point3<f32>,
        inv_dir: &Vector3<f32>,
        mut limit: f32,
        visit: &mut impl FnMut(u32, f32) -> f32,
    ) -> f32 {
        if self.root == NULL || limit <= 0.0 {
            return limit;
        }
        let clip = RayClip::new(origin, inv_dir);
        let mut stack = Stack::new();
        stack.push_t(self.root, 0.0);
        while let Some((r, t_enter)) = stack.pop_t() {
            if t_enter > limit {
                continue;
            }
            if !is_node(r) {
                limit = visit(r & ITEM_MASK, limit);
                if limit <= 0.0 {
                    return limit;
                }
                continue;
            }
            let n = &self.nodes[r as usize];
            let ([h0, h1], [t0, t1]) = clip.both(n, limit);
            for (h, c) in [(h0, n.child[0]), (h1, n.child[1])] {
                if h & is_node(c) {
                    self.prefetch_descent(c as usize);
                }
            }
            // Only a root's slot 1 can be empty.
            match (h0, h1 & (n.child[1] != NULL)) {
                (true, true) => {
                    // Push the far one first so the near one is visited first.
                    if t0 <= t1 {
                        stack.push_t(n.child[1], t1);
                        stack.push_t(n.child[0], t0);
                    } else {
                        stack.push_t(n.child[0], t0);
                        stack.push_t(n.child[1], t1);
                    }
                }
                (true, false) => stack.push_t(n.child[0], t0),
                (false, true) => stack.push_t(n.child[1], t1),
                (false, false) => {}
            }
        }
        limit
    }
}

/// Every leaf of the arena as a rebuild item, in arena order.
fn collect_leaves(nodes: &[Node], items: &mut Vec<Item>) {
    items.clear();
    for n in nodes {
        if n.flags & ALLOCATED == 0 {
            continue;
        }
        for s in 0..2 {
            if n.child[s] != NULL && !is_node(n.child[s]) {
                items.push(Item { aabb: n.boxes[s], r: n.child[s], moved: n.moved(s), bin: 0 });
            }
        }
    }
}

/// Partitions `items` by binned SAH on the centres (longest centroid axis); returns the split
/// point, always in `1..len`. Falls back to halving when the centres coincide or SAH finds nothing.
pub(crate) fn split(items: &mut [Item]) -> usize {
    let n = items.len();
    if n == 2 {
        return 1;
    }
    let (axis, lo, ext) = centroid_axis(items);
    if n <= SMALL {
        return split_small(items, axis);
    }
    if ext <= 0.0 || !ext.is_finite() {
        return n / 2;
    }
    let scale = BINS as f32 / ext;
    // PERF: boxes as 4-lane vectors, a union two instructions (`fast_min`/`fast_max`, without
    // `min`/`max`'s NaN blend: boxes are finite, checked when given); each item keeps its bin
    // for the partition.
    let (empty_lo, empty_hi) = empty_lanes();
    let (mut bin_lo, mut bin_hi) = ([empty_lo; BINS], [empty_hi; BINS]);
    let mut counts = [0u32; BINS];
    for it in items.iter_mut() {
        let b = (((it.center2(axis) - lo) * scale) as usize).min(BINS - 1);
        it.bin = b as u8;
        counts[b] += 1;
        let (l, h) = it.lanes();
        bin_lo[b] = bin_lo[b].fast_min(l);
        bin_hi[b] = bin_hi[b].fast_max(h);
    }
    // Sweep from the right, then from the left, for the cost of each of the BINS-1 planes.
    // Empty bins keep the inverted box: unions skip it, and its area is never used (a plane
    // is only costed with items on both sides).
    let mut right_cost = [0.0f32; BINS];
    let (mut acc_lo, mut acc_hi) = empty_lanes();
    let mut cnt = 0u32;
    for b in (1..BINS).rev() {
        acc_lo = acc_lo.fast_min(bin_lo[b]);
        acc_hi = acc_hi.fast_max(bin_hi[b]);
        cnt += counts[b];
        if cnt > 0 {
            right_cost[b] = area_lanes(acc_lo, acc_hi) * cnt as f32;
        }
    }
    let mut best = (f32::INFINITY, 0usize);
    (acc_lo, acc_hi) = empty_lanes();
    cnt = 0;
    for b in 0..BINS - 1 {
        acc_lo = acc_lo.fast_min(bin_lo[b]);
        acc_hi = acc_hi.fast_max(bin_hi[b]);
        cnt += counts[b];
        if cnt == 0 || cnt as usize == n {
            continue;
        }
        let cost = area_lanes(acc_lo, acc_hi) * cnt as f32 + right_cost[b + 1];
        if cost < best.0 {
            best = (cost, b);
        }
    }
    if !best.0.is_finite() {
        return n / 2;
    }
    // Partition in place: bins <= best.1 to the left. (Branch-free, every item swapped with
    // the first one right of the split, took 40% longer: arena order is spatial, so the sides
    // come in runs the branch predicts.)
    let best = best.1 as u8;
    let mut i = 0;
    let mut j = n;
    while i < j {
        if items[i].bin <= best {
            i += 1;
        } else {
            j -= 1;
            items.swap(i, j);
        }
    }
    if i == 0 || i == n { n / 2 } else { i }
}

/// Up to this many items are split by exact SAH over their sorted centres: cheaper than 12 bins
/// (about half of all nodes of a tree have this few leaves below them).
const SMALL: usize = 8;

/// The axis along which the items' centres spread most, with the centres' low end and extent
/// on it (in `center2` units).
fn centroid_axis(items: &[Item]) -> (usize, f32, f32) {
    let (mut lo, mut hi) = (F4::splat(f32::INFINITY), F4::splat(f32::NEG_INFINITY));
    for it in items.iter() {
        let (l, h) = it.lanes();
        let c = l + h;
        lo = lo.fast_min(c);
        hi = hi.fast_max(c);
    }
    let (lo, hi) = (lo.to_array(), hi.to_array());
    let ext = [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]];
    let axis = if ext[0] >= ext[1] && ext[0] >= ext[2] {
        0
    } else if ext[1] >= ext[2] {
        1
    } else {
        2
    };
    (axis, lo[axis], ext[axis])
}

/// Exact SAH split of a few items along `axis`; returns the split point.
fn split_small(items: &mut [Item], axis: usize) -> usize {
    let n = items.len();
    // Insertion sort: stable, deterministic, and fast at this size.
    for i in 1..n {
        let mut j = i;
        while j > 0 && items[j - 1].center2(axis) > items[j].center2(axis) {
            items.swap(j - 1, j);
            j -= 1;
        }
    }
    let mut right = [0.0f32; SMALL];
    let mut acc = EMPTY_BOX;
    for i in (1..n).rev() {
        acc = union(&acc, &items[i].aabb);
        right[i] = area(&acc) * (n - i) as f32;
    }
    let (mut best, mut at) = (f32::INFINITY, n / 2);
    acc = EMPTY_BOX;
    for i in 1..n {
        acc = union(&acc, &items[i - 1].aabb);
        let cost = area(&acc) * i as f32 + right[i];
        if cost < best {
            best = cost;
            at = i;
        }
    }
    at
}

/// A query box prepared to test both children of a node at once, in three 4-lane compares.
///
/// A node's boxes are 12 floats, `min0 max0 min1 max1` (xyz each). Read as three 4-lane vectors,
/// each lane must be `<=` the matching query bound: a minimum against the query's maximum, a
/// maximum against the query's minimum with both negated (`-max <= -qmin`). PERF: the scalar
/// form, 12 compares with their results gathered, was half a query's instructions.
pub(crate) struct QueryBox {
    bound: [F4; 3],
    sign: [F4; 3],
}

pub(crate) type F4 = wide::f32x4;

impl QueryBox {
    #[inline]
    pub(crate) fn new(q: &Aabb) -> Self {
        let (lo, hi) = (q.mins, q.maxs);
        let (m, p) = (-0.0f32, 0.0f32); // sign masks: flip, keep
        QueryBox {
            bound: [
                F4::new([hi.x, hi.y, hi.z, -lo.x]),
                F4::new([-lo.y, -lo.z, hi.x, hi.y]),
                F4::new([hi.z, -lo.x, -lo.y, -lo.z]),
            ],
            sign: [F4::new([p, p, p, m]), F4::new([m, m, p, p]), F4::new([p, m, m, m])],
        }
    }

    /// Whether each of `n`'s two boxes overlaps the query box (as [`overlap`]: touching counts, a
    /// NaN fails).
    #[inline(always)]
    pub(crate) fn overlaps(&self, n: &Node) -> [bool; 2] {
        let [a, b] = &n.boxes;
        let v = [
            F4::new([a.mins.x, a.mins.y, a.mins.z, a.maxs.x]),
            F4::new([a.maxs.y, a.maxs.z, b.mins.x, b.mins.y]),
            F4::new([b.mins.z, b.maxs.x, b.maxs.y, b.maxs.z]),
        ];
        let lanes = |k: usize| (v[k] ^ self.sign[k]).cmp_le(self.bound[k]).move_mask() as u32;
        let all = lanes(0) | lanes(1) << 4 | lanes(2) << 8;
        [all & 0x3f == 0x3f, all >> 6 == 0x3f]
    }

    /// [`QueryBox::overlaps`] paired with the children, an empty slot (only a root's slot 1 can
    /// be one, and an infinite query box overlaps its box) never hit.
    #[inline(always)]
    fn hits(&self, n: &Node) -> [(bool, u32); 2] {
        let [h0, h1] = self.overlaps(n);
        [(h0, n.child[0]), (h1 & (n.child[1] != NULL), n.child[1])]
    }
}

/// A ray prepared to clip both children of a node at once.
///
/// A node's boxes are 12 floats, `min0 max0 min1 max1` (xyz each). Four 4-lane vectors, from
/// floats 0, 3, 5 and 8, put each box's minima and maxima in matching lanes (box 0 in lanes 0-2,
/// box 1 in lanes 1-3; the spare lanes hold other box floats and are multiplied by zero). Each
/// slab's entry and exit are then the lane-wise minimum and maximum of its two plane distances.
/// PERF: the scalar form was 138 instructions a node, half of them reloads; this is 70.
///
/// Bit for bit [`Aabb::clip_ray_inv`] when no distance can be NaN: a finite origin and a direction
/// with no zero, infinite or NaN component. Other rays (axis-parallel ones among them, where a ray
/// in a slab's plane makes `0 × ∞`) take the scalar form at every node.
pub(crate) struct RayClip {
    origin: [F4; 2],
    inv: [F4; 2],
    scalar: Option<(Point3<f32>, Vector3<f32>)>,
}

impl RayClip {
    #[inline]
    pub(crate) fn new(o: &Point3<f32>, inv: &Vector3<f32>) -> Self {
        let fast = o.iter().all(|v| v.is_finite()) && inv.iter().all(|v| v.is_normal());
        let (p, i) = if fast { (*o, *inv) } else { (Point3::origin(), Vector3::zeros()) };
        RayClip {
            origin: [F4::new([p.x, p.y, p.z, 0.0]), F4::new([0.0, p.x, p.y, p.z])],
            inv: [F4::new([i.x, i.y, i.z, 0.0]), F4::new([0.0, i.x, i.y, i.z])],
            scalar: (!fast).then_some((*o, *inv)),
        }
    }

    /// Whether the ray meets each of `n`'s boxes within `[0, limit]`, and where it enters them.
    #[inline(always)]
    pub(crate) fn both(&self, n: &Node, limit: f32) -> ([bool; 2], [f32; 2]) {
        if let Some((o, inv)) = &self.scalar {
            let clip = |b: &Aabb| b.clip_ray_inv(o, inv, limit);
            let [c0, c1] = [clip(&n.boxes[0]), clip(&n.boxes[1])];
            return ([c0.is_some(), c1.is_some()], [c0.map_or(0.0, |c| c.0), c1.map_or(0.0, |c| c.0)]);
        }
        let [a, b] = &n.boxes;
        let lo0 = F4::new([a.mins.x, a.mins.y, a.mins.z, a.maxs.x]);
        let hi0 = F4::new([a.maxs.x, a.maxs.y, a.maxs.z, b.mins.x]);
        let lo1 = F4::new([a.maxs.z, b.mins.x, b.mins.y, b.mins.z]);
        let hi1 = F4::new([b.mins.z, b.maxs.x, b.maxs.y, b.maxs.z]);
        let t = |v: F4, k: usize| (v - self.origin[k]) * self.inv[k];
        let (l0, h0, l1, h1) = (t(lo0, 0), t(hi0, 0), t(lo1, 1), t(hi1, 1));
        let (near0, far0) = (l0.fast_min(h0), l0.fast_max(h0));
        let (near1, far1) = (l1.fast_min(h1), l1.fast_max(h1));
        // Lanes 0-2 of box 0 and 1-3 of box 1 reduced to lane 0 (box 0) and lane 2 (box 1).
        let reduce = |x: F4, y: F4, max: bool| {
            let (x, y) = (x.to_array(), y.to_array());
            let m1 = F4::new([x[0], x[1], y[2], y[3]]);
            let m2 = F4::new([x[2], x[2], y[1], y[1]]);
            let m = if max { m1.fast_max(m2) } else { m1.fast_min(m2) };
            let a = m.to_array();
            let sw = F4::new([a[1], a[0], a[3], a[2]]);
            if max { m.fast_max(sw) } else { m.fast_min(sw) }
        };
        let enter = reduce(near0, near1, true).fast_max(F4::ZERO);
        let exit = reduce(far0, far1, false).fast_min(F4::splat(limit));
        let mask = enter.cmp_le(exit).move_mask();
        let e = enter.to_array();
        ([mask & 1 != 0, mask & 4 != 0], [e[0], e[2]])
    }
}

/// A traversal stack on the call's stack frame: 32 entries cover the traversals of any tree of
/// height below 31 (a million balanced leaves; rotations and SAH rebuilds keep real trees near
/// balanced); a deeper traversal spills to the heap rather than fail. PERF: clearing 128 entries
/// per query cost as much as visiting two nodes.
struct Stack {
    inline: [(u32, f32); STACK_INLINE],
    len: usize,
    spill: Vec<(u32, f32)>,
}

const STACK_INLINE: usize = 32;

/// Nodes in flight in a breadth-first box query: on the `compare` suite's 100k-box tree, 2 m query
/// boxes keep at most 15 in flight, 4 m ones 32.
const RING: usize = 64;

/// Lines prefetched past a node about to be visited ([`Tree::prefetch_descent`]): 2 measured
/// between 0 and 3 on point queries, 5 the same as 3.
const DESCENT: usize = 3;

impl Stack {
    #[inline]
    fn new() -> Self {
        Stack { inline: [(0, 0.0); STACK_INLINE], len: 0, spill: Vec::new() }
    }

    #[inline]
    fn push_t(&mut self, i: u32, t: f32) {
        if self.len < STACK_INLINE {
            self.inline[self.len] = (i, t);
            self.len += 1;
        } else {
            self.spill.push((i, t));
        }
    }

    #[inline]
    fn pop_t(&mut self) -> Option<(u32, f32)> {
        // Entries spill only once the inline part is full, so only then can the spill be non-empty.
        if self.len == STACK_INLINE
            && let Some(x) = self.spill.pop()
        {
            return Some(x);
        }
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.inline[self.len])
    }

    #[inline]
    fn push(&mut self, i: u32) {
        self.push_t(i, 0.0);
    }

    #[inline]
    fn pop(&mut self) -> Option<u32> {
        self.pop_t().map(|x| x.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_box() -> impl Strategy<Value = Aabb> {
        // Coordinates on a coarse grid, so touching boxes are common.
        let c = prop_oneof![15 => (-4i8..4).prop_map(|v| v as f32 * 0.5), 1 => Just(f32::NAN)];
        (proptest::array::uniform3(c.clone()), proptest::array::uniform3(0u8..4)).prop_map(|(lo, e)| {
            let lo = Point3::from(lo);
            Aabb::new(lo, lo + Vector3::from(e.map(|e| e as f32 * 0.5)))
        })
    }

    proptest! {
        /// The 4-lane test of both children agrees with [`overlap`] box by box.
        #[test]
        fn query_boxes_test_both_children_as_overlap(a in arb_box(), b in arb_box(), q in arb_box()) {
            let n = Node { boxes: [a, b], ..Node::FREE };
            prop_assert_eq!(QueryBox::new(&q).overlaps(&n), [overlap(&a, &q), overlap(&b, &q)]);
        }

        /// The 4-lane clip of both children agrees with [`Aabb::clip_ray_inv`] box by box, bit for
        /// bit: hits and entry distances, for rays along axes, in box faces' planes, with signed
        /// zeros, infinite or NaN components.
        #[test]
        fn rays_clip_both_children_as_clip_ray_inv(
            a in arb_box(),
            b in arb_box(),
            o in proptest::array::uniform3(prop_oneof![
                6 => (-6i8..6).prop_map(|v| v as f32 * 0.5),
                3 => -4.0f32..4.0,
                1 => prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(-1e38f32)],
            ]),
            d in proptest::array::uniform3(prop_oneof![
                1 => Just(0.0f32), 1 => Just(-0.0f32), 1 => Just(1.0f32), 1 => Just(-0.5f32),
                5 => -1.0f32..1.0,
                1 => prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(1e-39f32)],
            ]),
            limit in prop_oneof![Just(f32::INFINITY), Just(0.5f32), 0.0f32..10.0],
        ) {
            prop_assume!(a.mins.iter().chain(b.mins.iter()).all(|v| v.is_finite()));
            let (o, inv) = (Point3::from(o), Vector3::from(d.map(|d| 1.0 / d)));
            let n = Node { boxes: [a, b], ..Node::FREE };
            let (hits, t) = RayClip::new(&o, &inv).both(&n, limit);
            for (s, bx) in [a, b].iter().enumerate() {
                let want = bx.clip_ray_inv(&o, &inv, limit);
                prop_assert_eq!(hits[s], want.is_some(), "box {}", s);
                if let Some((enter, _)) = want {
                    prop_assert_eq!(t[s].to_bits(), enter.to_bits(), "box {} entry", s);
                }
            }
        }
    }

    /// The binned SAH split written plainly (scalar boxes, bins recomputed in the partition):
    /// the reference for [`split`]'s 4-lane form. Returns the split point and the items' order.
    fn split_reference(items: &mut [Item]) -> usize {
        let n = items.len();
        if n == 2 {
            return 1;
        }
        let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
        for it in items.iter() {
            for k in 0..3 {
                lo[k] = lo[k].min(it.center2(k));
                hi[k] = hi[k].max(it.center2(k));
            }
        }
        let ext = [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]];
        let axis = if ext[0] >= ext[1] && ext[0] >= ext[2] {
            0
        } else if ext[1] >= ext[2] {
            1
        } else {
            2
        };
        if n <= SMALL {
            return split_small(items, axis);
        }
        let (lo, ext) = (lo[axis], ext[axis]);
        if ext <= 0.0 || !ext.is_finite() {
            return n / 2;
        }
        let scale = BINS as f32 / ext;
        let bin_of = |c: f32| (((c - lo) * scale) as usize).min(BINS - 1);
        let mut boxes = [EMPTY_BOX; BINS];
        let mut counts = [0u32; BINS];
        for it in items.iter() {
            let b = bin_of(it.center2(axis));
            counts[b] += 1;
            boxes[b] = union(&boxes[b], &it.aabb);
        }
        let cost = |range: std::ops::Range<usize>| {
            let (bx, cnt) = range.fold((EMPTY_BOX, 0u32), |(a, c), b| (union(&a, &boxes[b]), c + counts[b]));
            (area(&bx) * cnt as f32, cnt)
        };
        let mut best = (f32::INFINITY, 0usize);
        for b in 0..BINS - 1 {
            let ((l, lc), (r, rc)) = (cost(0..b + 1), cost(b + 1..BINS));
            if lc > 0 && rc > 0 && l + r < best.0 {
                best = (l + r, b);
            }
        }
        if !best.0.is_finite() {
            return n / 2;
        }
        let (mut i, mut j) = (0, n);
        while i < j {
            if bin_of(items[i].center2(axis)) <= best.1 {
                i += 1;
            } else {
                j -= 1;
                items.swap(i, j);
            }
        }
        if i == 0 || i == n { n / 2 } else { i }
    }

    proptest! {
        /// [`split`] splits as the plain scalar reference does: the same point and the same items
        /// on each side, in the same order (few items, many, coinciding centres).
        #[test]
        fn split_is_the_plain_binned_sah(
            boxes in proptest::collection::vec(
                (proptest::array::uniform3(-50.0f32..50.0), proptest::array::uniform3(0.0f32..4.0)),
                2..200,
            ),
            same in any::<bool>(),
        ) {
            let mut items: Vec<Item> = boxes
                .iter()
                .enumerate()
                .map(|(i, &(lo, e))| {
                    let (lo, e) = if same { ([1.0, 2.0, 3.0], [0.5; 3]) } else { (lo, e) };
                    let lo = Point3::from(lo);
                    Item { aabb: Aabb::new(lo, lo + Vector3::from(e)), r: LEAF | i as u32, moved: false, bin: 0 }
                })
                .collect();
            let mut want = items.clone();
            let mid = split(&mut items);
            prop_assert_eq!(mid, split_reference(&mut want));
            prop_assert!(mid >= 1 && mid < items.len());
            prop_assert_eq!(items.iter().map(|it| it.r).collect::<Vec<_>>(), want.iter().map(|it| it.r).collect::<Vec<_>>());
        }
    }

    #[test]
    fn stacks_spill_past_their_inline_part_and_stay_lifo() {
        let mut s = Stack::new();
        for round in 0..2 {
            for i in 0..100u32 {
                s.push_t(i, i as f32 * 0.5);
            }
            // Pop part of the way down, push again across the inline boundary.
            for i in (60..100u32).rev() {
                assert_eq!(s.pop_t(), Some((i, i as f32 * 0.5)), "round {round}");
            }
            for i in 60..100u32 {
                s.push(i);
            }
            for i in (60..100u32).rev() {
                assert_eq!(s.pop(), Some(i));
            }
            for i in (0..60u32).rev() {
                assert_eq!(s.pop_t(), Some((i, i as f32 * 0.5)));
            }
            assert_eq!(s.pop(), None);
        }
    }

    /// A tree built by insertion is rebuilt by binned SAH in the background once asked, and its
    /// cost ends where a full rebuild's does.
    #[test]
    fn inserted_trees_are_rebuilt_in_the_background() {
        let mut tree = Tree::default();
        let mut x = 0x9e37_79b9u32;
        for item in 0..3000 {
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                (x >> 8) as f32 / (1 << 24) as f32 * 50.0
            };
            let lo = Point3::new(next(), next(), next());
            tree.insert(Aabb::new(lo, lo + Vector3::repeat(1.0)), item);
        }
        let mut fresh = tree.clone();
        fresh.rebuild_full();
        let inserted = tree.sah_cost();
        assert!(inserted > fresh.sah_cost() * 1.02, "{inserted} vs {}", fresh.sah_cost());
        tree.rebuild_inserted();
        assert!(tree.background.active);
        for _ in 0..64 {
            tree.rebuild_pending();
        }
        assert!(!tree.background.active);
        assert!((tree.sah_cost() - fresh.sah_cost()).abs() <= fresh.sah_cost() * 1e-6);
        tree.validate(&mut |_, _| Ok(())).unwrap();
        assert_eq!(tree.leaf_count(), 3000);
        // Not again until as many leaves come by insertion again.
        tree.rebuild_inserted();
        assert!(!tree.background.active);
    }
}
