//! Rebuilds: partial (grown subtrees, on request), background (a slice per pair update, swapped
//! in when done) and bulk (a batch of new leaves).

use super::node::*;
use super::tree::*;
use crate::sah::{Item, LEAF, NULL};
use voxterra_core::Aabb;

impl QuadTree {
    /// Rebuilds the nodes that grew in place ([`QuadTree::set_leaf_box`]) since they were built:
    /// from each highest grown node, the grown nodes below it are opened, and their children that
    /// did not grow (leaves and whole subtrees, kept as they are) are split again by binned SAH
    /// into new nodes that take the old top's place (Box2D v3's partial rebuild). A leaf that
    /// moved far gets a place near its new neighbors this way, where growth in place would have
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
    pub(super) fn rebuild_below(&mut self, top: u32, open: impl Fn(&Self, usize) -> bool) {
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

    /// Starts a rebuild when the SAH cost `cost` drifted from the last full rebuild's. A
    /// background rebuild under way is left to finish, however far the drift: it ends within a
    /// bounded number of updates unless an insertion or removal cancels it, and rebuilding at
    /// once instead cost a frame 2.5× the mean (100k boxes all moving, margin 0.04).
    pub(super) fn schedule(&mut self, cost: f64) {
        self.refilled = 0;
        if self.background.active {
        } else if cost > self.rebuilt_cost * REBUILD_RATIO {
            self.rebuild_full();
        } else if cost > self.rebuilt_cost * BACKGROUND_RATIO {
            self.start_background();
        }
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
    pub(super) fn collect_items(&self, items: &mut Vec<Item>) {
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
    pub(super) fn start_background(&mut self) {
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
    pub(super) fn step_background(&mut self) {
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
    pub(super) fn finish_background(&mut self) {
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
    /// all its leaves by binned SAH instead of inserting each (PERF: loading 10k–100k boxes this
    /// way takes half the time or less, `dynamic_tree_insert`); otherwise each is inserted.
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
    pub(super) fn rebuild_with(&mut self, new: &[(Aabb, u32)]) {
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
}
