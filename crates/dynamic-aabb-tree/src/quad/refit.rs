//! Leaf boxes that change: growth in place, batched refits, and the moved flags the pair
//! traversal prunes by.

use super::node::*;
use super::tree::*;
use crate::sah::{LEAF, NULL};
use voxterra_core::Aabb;

impl QuadTree {
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

    /// Refits every node's slots that hold nodes from those nodes' boxes, bottom up (leaves'
    /// slots must hold their boxes already), and sets every slot's moved flag: a leaf's from
    /// `queued(item)`, a node's from its children's (PERF: one pass over the nodes instead of
    /// two, as refit and [`QuadTree::mark_moved_many`] were). Returns the SAH cost.
    pub(super) fn refit_nodes(&mut self, queued: &impl Fn(u32) -> bool) -> f64 {
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
    pub(super) fn bottom_up(&self, order: &mut Vec<u32>) {
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
    pub(super) fn flagged(&self, c: u32, queued: &impl Fn(u32) -> bool) -> u32 {
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
}
