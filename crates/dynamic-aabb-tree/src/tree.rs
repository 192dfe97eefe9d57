//! One binary AABB tree over leaf boxes: an index arena with a free list, SAH insertion with a
//! branch-and-bound sibling search, rotations, removal, in-place enlargement with partial binned-SAH
//! rebuilds, refit, and stack-based queries.
//!
//! Leaves keep their node index for life (the broadphase stores it per proxy); rebuilds only
//! reallocate internal nodes.

use voxterra_core::Aabb;
use voxterra_core::nalgebra::{Point3, Vector3};

/// "No node".
pub(crate) const NULL: u32 = u32::MAX;

/// The node is in use (not on the free list).
const ALLOCATED: u16 = 1;
/// The node or a leaf below it was created or moved since the last pair update.
pub(crate) const MOVED: u16 = 2;
/// The node's box grew in place since the last rebuild: a partial rebuild starts here.
const ENLARGED: u16 = 4;

/// A tree node: 40 bytes. Leaves have height 0 and hold their item in `child1`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) aabb: Aabb,
    pub(crate) parent: u32,
    /// First child, a leaf's item, or the next free node.
    pub(crate) child1: u32,
    pub(crate) child2: u32,
    pub(crate) height: u16,
    pub(crate) flags: u16,
}

const _: () = assert!(std::mem::size_of::<Node>() == 40);

impl Node {
    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.height == 0
    }

    #[inline]
    pub(crate) fn moved(&self) -> bool {
        self.flags & MOVED != 0
    }
}

const EMPTY_BOX: Aabb = Aabb::new(Point3::new(0.0, 0.0, 0.0), Point3::new(0.0, 0.0, 0.0));

/// A rebuild item: a node (leaf or kept subtree) and its box centre.
#[derive(Clone, Copy, Debug)]
struct Item {
    node: u32,
    center: [f32; 3],
}

const BINS: usize = 12;

/// When more than 1/FULL_REBUILD_SHARE of the leaves grew out of their fat boxes, one full
/// rebuild is cheaper than the partial ones and gives a better tree.
const FULL_REBUILD_SHARE: usize = 8;

/// The tree. `pub(crate)`: users reach it through [`crate::DynamicAabbTree`].
#[derive(Clone, Debug)]
pub(crate) struct Tree {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: u32,
    free: u32,
    leaves: u32,
    /// Leaves enlarged since the last rebuild.
    enlarged: Vec<u32>,
    /// Scratch for rebuilds, kept to avoid allocating per frame.
    items: Vec<Item>,
    tops: Vec<u32>,
    stack: Vec<u32>,
    /// Nodes rebuilt since the last compaction: the node array drifts out of traversal order.
    churn: usize,
    /// Scratch for compaction.
    spare: Vec<Node>,
}

impl Default for Tree {
    fn default() -> Self {
        Tree {
            nodes: Vec::new(),
            root: NULL,
            free: NULL,
            leaves: 0,
            enlarged: Vec::new(),
            items: Vec::new(),
            tops: Vec::new(),
            stack: Vec::new(),
            churn: 0,
            spare: Vec::new(),
        }
    }
}

#[inline]
fn area(b: &Aabb) -> f32 {
    b.surface_area()
}

#[inline]
fn union(a: &Aabb, b: &Aabb) -> Aabb {
    a.merged(b)
}

impl Tree {
    pub(crate) fn leaf_count(&self) -> u32 {
        self.leaves
    }

    pub(crate) fn height(&self) -> u32 {
        if self.root == NULL { 0 } else { u32::from(self.nodes[self.root as usize].height) }
    }

    fn alloc(&mut self) -> u32 {
        if self.free == NULL {
            self.nodes.push(Node {
                aabb: EMPTY_BOX,
                parent: NULL,
                child1: NULL,
                child2: NULL,
                height: 0,
                flags: ALLOCATED,
            });
            return self.nodes.len() as u32 - 1;
        }
        let i = self.free;
        self.free = self.nodes[i as usize].child1;
        self.nodes[i as usize] =
            Node { aabb: EMPTY_BOX, parent: NULL, child1: NULL, child2: NULL, height: 0, flags: ALLOCATED };
        i
    }

    /// Points `parent`'s link from child `old` to `new` (the root link when `parent` is NULL).
    fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        if parent == NULL {
            self.root = new;
            return;
        }
        let p = &mut self.nodes[parent as usize];
        if p.child1 == old {
            p.child1 = new;
        } else {
            p.child2 = new;
        }
    }

    fn release(&mut self, i: u32) {
        let n = &mut self.nodes[i as usize];
        n.flags = 0;
        n.height = 0;
        n.parent = NULL;
        n.child2 = NULL;
        n.child1 = self.free;
        self.free = i;
    }

    /// Adds a leaf with box `aabb` holding `item`; it starts flagged as moved.
    pub(crate) fn insert(&mut self, aabb: Aabb, item: u32) -> u32 {
        // Rotations could hang enlarged nodes under unflagged ones: settle pending growth first.
        self.rebuild_pending();
        let leaf = self.alloc();
        self.nodes[leaf as usize] =
            Node { aabb, parent: NULL, child1: item, child2: NULL, height: 0, flags: ALLOCATED | MOVED };
        self.leaves += 1;
        self.churn += 1;
        self.insert_leaf(leaf);
        leaf
    }

    fn insert_leaf(&mut self, leaf: u32) {
        if self.root == NULL {
            self.root = leaf;
            self.nodes[leaf as usize].parent = NULL;
            return;
        }
        let b = self.nodes[leaf as usize].aabb;
        let sibling = self.best_sibling(&b);
        let old_parent = self.nodes[sibling as usize].parent;
        let parent = self.alloc();
        let s = self.nodes[sibling as usize];
        let l = self.nodes[leaf as usize];
        self.nodes[parent as usize] = Node {
            aabb: union(&s.aabb, &b),
            parent: old_parent,
            child1: sibling,
            child2: leaf,
            height: s.height + 1,
            flags: ALLOCATED | ((s.flags | l.flags) & MOVED),
        };
        self.nodes[sibling as usize].parent = parent;
        self.nodes[leaf as usize].parent = parent;
        self.replace_child(old_parent, sibling, parent);
        self.refit_up(old_parent, true);
    }

    /// The node whose pairing with a new box adds the least surface area to the tree: a greedy
    /// descent that stops once the lower bound of going deeper cannot beat the best cost found.
    fn best_sibling(&self, d: &Aabb) -> u32 {
        let area_d = area(d);
        let mut index = self.root;
        let node = &self.nodes[index as usize];
        let mut area_base = area(&node.aabb);
        let mut direct = area(&union(&node.aabb, d));
        // Growth of the ancestors of `index` (and of `index` itself once we descend past it).
        let mut inherited = 0.0f32;
        let mut best = index;
        let mut best_cost = direct;
        loop {
            let node = &self.nodes[index as usize];
            if node.is_leaf() {
                break;
            }
            let cost = direct + inherited;
            if cost < best_cost {
                best = index;
                best_cost = cost;
            }
            inherited += direct - area_base;
            let (c1, c2) = (node.child1, node.child2);
            let (n1, n2) = (&self.nodes[c1 as usize], &self.nodes[c2 as usize]);
            let (u1, u2) = (area(&union(&n1.aabb, d)), area(&union(&n2.aabb, d)));
            let (a1, a2) = (area(&n1.aabb), area(&n2.aabb));
            let (cost1, cost2) = (u1 + inherited, u2 + inherited);
            if cost1 < best_cost {
                best = c1;
                best_cost = cost1;
            }
            if cost2 < best_cost {
                best = c2;
                best_cost = cost2;
            }
            // Going below a child costs at least its growth plus a new node of area >= area_d.
            let low1 = if n1.is_leaf() { f32::INFINITY } else { inherited + u1 - a1 + area_d };
            let low2 = if n2.is_leaf() { f32::INFINITY } else { inherited + u2 - a2 + area_d };
            if low1.min(low2) >= best_cost {
                break;
            }
            if low1 <= low2 {
                index = c1;
                area_base = a1;
                direct = u1;
            } else {
                index = c2;
                area_base = a2;
                direct = u2;
            }
        }
        best
    }

    /// Refits boxes, heights and moved flags from `i` to the root, rotating each node on the way
    /// when `rotate`.
    fn refit_up(&mut self, mut i: u32, rotate: bool) {
        while i != NULL {
            if rotate {
                self.rotate(i);
            }
            self.refit_node(i);
            i = self.nodes[i as usize].parent;
        }
    }

    #[inline]
    fn refit_node(&mut self, i: u32) {
        let n = self.nodes[i as usize];
        let (a, b) = (&self.nodes[n.child1 as usize], &self.nodes[n.child2 as usize]);
        let aabb = union(&a.aabb, &b.aabb);
        let height = 1 + a.height.max(b.height);
        let moved = (a.flags | b.flags) & MOVED;
        let n = &mut self.nodes[i as usize];
        n.aabb = aabb;
        n.height = height;
        n.flags |= moved;
    }

    /// Swaps a child of `a` with a grandchild under the other child when that shrinks the
    /// changed node's area (a tree rotation; keeps quality as proxies come and go).
    fn rotate(&mut self, a: u32) {
        let na = self.nodes[a as usize];
        if na.height < 2 {
            return;
        }
        let (b, c) = (na.child1, na.child2);
        let (nb, nc) = (self.nodes[b as usize], self.nodes[c as usize]);
        // (gain, the child that stays, the child moved down, the grandchild moved up)
        let mut best: (f32, u32, u32, u32) = (0.0, NULL, NULL, NULL);
        let mut consider = |keep: u32, nk: &Node, down: u32, nd: &Node, tree: &Tree| {
            if nk.is_leaf() {
                return;
            }
            let (f, g) = (nk.child1, nk.child2);
            let (nf, ng) = (&tree.nodes[f as usize], &tree.nodes[g as usize]);
            let base = area(&nk.aabb);
            // Swap `down` with f: keep's new box holds down and g.
            let gain_f = base - area(&union(&nd.aabb, &ng.aabb));
            let gain_g = base - area(&union(&nd.aabb, &nf.aabb));
            if gain_f > best.0 {
                best = (gain_f, keep, down, f);
            }
            if gain_g > best.0 {
                best = (gain_g, keep, down, g);
            }
        };
        consider(c, &nc, b, &nb, self);
        consider(b, &nb, c, &nc, self);
        let (gain, keep, down, up) = best;
        if gain <= 0.0 || keep == NULL {
            return;
        }
        // `up` takes `down`'s place under `a`; `down` takes `up`'s place under `keep`.
        self.replace_child(a, down, up);
        self.replace_child(keep, up, down);
        self.nodes[up as usize].parent = a;
        self.nodes[down as usize].parent = keep;
        // `keep` may have lost its only moved grandchild: its flag is recomputed, not OR-ed.
        self.refit_node_exact(keep);
    }

    /// Removes a leaf; its node index is freed.
    pub(crate) fn remove(&mut self, leaf: u32) {
        // The pending list may name this leaf or its parent: settle it first.
        self.rebuild_pending();
        self.detach(leaf);
        self.release(leaf);
        self.leaves -= 1;
    }

    fn detach(&mut self, leaf: u32) {
        if leaf == self.root {
            self.root = NULL;
            return;
        }
        let parent = self.nodes[leaf as usize].parent;
        let p = self.nodes[parent as usize];
        let sibling = if p.child1 == leaf { p.child2 } else { p.child1 };
        let grand = p.parent;
        self.nodes[sibling as usize].parent = grand;
        self.replace_child(grand, parent, sibling);
        // An enlarged parent disappears: its sibling subtree keeps its own flags.
        self.release(parent);
        let mut i = grand;
        while i != NULL {
            self.refit_node_exact(i);
            i = self.nodes[i as usize].parent;
        }
    }

    /// Like `refit_node`, but the moved flag is recomputed rather than OR-ed in.
    fn refit_node_exact(&mut self, i: u32) {
        self.refit_node(i);
        let n = self.nodes[i as usize];
        let exact = (self.nodes[n.child1 as usize].flags | self.nodes[n.child2 as usize].flags) & MOVED;
        self.nodes[i as usize].flags = (n.flags & !MOVED) | exact;
    }

    /// Gives a leaf a new box in place: ancestors that no longer contain it grow and are marked
    /// for the next [`Tree::rebuild_pending`]. Nothing is reinserted.
    pub(crate) fn set_leaf_box(&mut self, leaf: u32, aabb: Aabb) {
        self.nodes[leaf as usize].aabb = aabb;
        let mut i = self.nodes[leaf as usize].parent;
        let mut grew = false;
        while i != NULL {
            let n = &mut self.nodes[i as usize];
            if n.aabb.contains(&aabb) {
                break;
            }
            n.aabb = union(&n.aabb, &aabb);
            n.flags |= ENLARGED;
            grew = true;
            i = n.parent;
        }
        if grew && self.nodes[leaf as usize].flags & ENLARGED == 0 {
            self.nodes[leaf as usize].flags |= ENLARGED;
            self.enlarged.push(leaf);
        }
    }

    /// Flags a leaf and its ancestors as moved.
    pub(crate) fn mark_moved(&mut self, leaf: u32) {
        let mut i = leaf;
        while i != NULL {
            let n = &mut self.nodes[i as usize];
            if n.flags & MOVED != 0 && i != leaf {
                break;
            }
            n.flags |= MOVED;
            i = n.parent;
        }
    }

    /// Clears every moved flag (walks only the flagged part of the tree).
    pub(crate) fn clear_moved(&mut self) {
        if self.root == NULL {
            return;
        }
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        stack.push(self.root);
        while let Some(i) = stack.pop() {
            let n = &mut self.nodes[i as usize];
            if n.flags & MOVED == 0 {
                continue;
            }
            n.flags &= !MOVED;
            if !n.is_leaf() {
                stack.push(n.child1);
                stack.push(n.child2);
            }
        }
        self.stack = stack;
    }

    /// Rebuilds, by binned SAH, each maximal subtree of nodes that grew since the last rebuild,
    /// keeping the subtrees below them; then refits the ancestors (boxes may shrink).
    pub(crate) fn rebuild_pending(&mut self) {
        if self.enlarged.is_empty() {
            return;
        }
        if self.enlarged.len() * FULL_REBUILD_SHARE > self.leaves as usize {
            self.rebuild_full();
            return;
        }
        let mut tops = std::mem::take(&mut self.tops);
        tops.clear();
        for k in 0..self.enlarged.len() {
            let leaf = self.enlarged[k];
            self.nodes[leaf as usize].flags &= !ENLARGED;
            let mut top = NULL;
            let mut i = self.nodes[leaf as usize].parent;
            while i != NULL && self.nodes[i as usize].flags & ENLARGED != 0 {
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
        // Deeper tops first would not change the result; index order keeps it deterministic.
        for &top in &tops {
            // A top may have been absorbed by an earlier rebuild (freed or cleared): skip it.
            let n = self.nodes[top as usize];
            if n.flags & ALLOCATED == 0 || n.flags & ENLARGED == 0 || n.is_leaf() {
                continue;
            }
            self.rebuild_subtree(top, false);
            let mut i = self.nodes[top as usize].parent;
            while i != NULL {
                self.refit_node_exact(i);
                i = self.nodes[i as usize].parent;
            }
        }
        self.tops = tops;
    }

    /// Whether enough of the tree was rebuilt since the last [`Tree::compact`] that its nodes are
    /// scattered through memory.
    pub(crate) fn wants_compaction(&self) -> bool {
        self.churn > self.leaves as usize / 2 && self.enlarged.is_empty()
    }

    /// Rewrites the node array in depth-first order (a node's first child right after it), so
    /// traversals walk memory forwards; drops the free list. Leaves move too: `moved_leaf(item,
    /// new index)` is called for each. Requires no pending growth.
    pub(crate) fn compact(&mut self, moved_leaf: &mut dyn FnMut(u32, u32)) {
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
        // Stack of (old index, new parent); a node's new index is its position in `out`.
        let mut stack: Vec<(u32, u32)> = Vec::with_capacity(64);
        stack.push((self.root, NULL));
        while let Some((old, parent)) = stack.pop() {
            let new = out.len() as u32;
            let mut n = self.nodes[old as usize];
            n.parent = parent;
            if parent != NULL {
                // The parent's children are fixed up when they are placed.
                let p = &mut out[parent as usize];
                if p.child1 == old {
                    p.child1 = new;
                } else {
                    p.child2 = new;
                }
            }
            if n.is_leaf() {
                moved_leaf(n.child1, new);
            } else {
                stack.push((n.child2, new));
                stack.push((n.child1, new));
            }
            out.push(n);
        }
        self.root = 0;
        std::mem::swap(&mut self.nodes, &mut out);
        self.spare = out;
    }

    /// Rebuilds the whole tree by binned SAH over its leaves.
    pub(crate) fn rebuild_full(&mut self) {
        // Pending growth is subsumed: only the leaves' flags need clearing.
        for k in 0..self.enlarged.len() {
            let leaf = self.enlarged[k];
            self.nodes[leaf as usize].flags &= !ENLARGED;
        }
        self.enlarged.clear();
        if self.root != NULL && !self.nodes[self.root as usize].is_leaf() {
            self.rebuild_subtree(self.root, true);
        }
    }

    /// Collects the items under `top` (every leaf when `full`, else leaves and unenlarged
    /// subtrees), frees the internal nodes above them, and builds a new subtree rooted at `top`.
    fn rebuild_subtree(&mut self, top: u32, full: bool) {
        let mut items = std::mem::take(&mut self.items);
        let mut stack = std::mem::take(&mut self.stack);
        items.clear();
        stack.clear();
        stack.push(top);
        while let Some(i) = stack.pop() {
            let n = self.nodes[i as usize];
            let descend = !n.is_leaf() && (i == top || full || n.flags & ENLARGED != 0);
            if descend {
                stack.push(n.child2);
                stack.push(n.child1);
                if i != top {
                    self.release(i);
                }
            } else {
                self.nodes[i as usize].flags &= !ENLARGED;
                let c = n.aabb.center();
                items.push(Item { node: i, center: [c.x, c.y, c.z] });
            }
        }
        let parent = self.nodes[top as usize].parent;
        self.churn += items.len();
        self.build_into(top, parent, &mut items);
        self.items = items;
        self.stack = stack;
    }

    /// Builds a subtree over `items` (at least 2) into node `dest`.
    fn build_into(&mut self, dest: u32, parent: u32, items: &mut [Item]) {
        let mid = split(items, &self.nodes);
        let (left, right) = items.split_at_mut(mid);
        let c1 = self.build_child(dest, left);
        let c2 = self.build_child(dest, right);
        let (a, b) = (&self.nodes[c1 as usize], &self.nodes[c2 as usize]);
        let node = Node {
            aabb: union(&a.aabb, &b.aabb),
            parent,
            child1: c1,
            child2: c2,
            height: 1 + a.height.max(b.height),
            flags: ALLOCATED | ((a.flags | b.flags) & MOVED),
        };
        self.nodes[dest as usize] = node;
    }

    fn build_child(&mut self, parent: u32, items: &mut [Item]) -> u32 {
        if items.len() == 1 {
            let i = items[0].node;
            self.nodes[i as usize].parent = parent;
            return i;
        }
        let n = self.alloc();
        self.build_into(n, parent, items);
        n
    }

    /// Sum of internal node areas over the root's (the SAH cost up to constants); 0 for < 2 leaves.
    pub(crate) fn sah_cost(&self) -> f64 {
        if self.root == NULL || self.nodes[self.root as usize].is_leaf() {
            return 0.0;
        }
        let root_area = f64::from(area(&self.nodes[self.root as usize].aabb)).max(f64::MIN_POSITIVE);
        let mut sum = 0.0f64;
        let mut stack = vec![self.root];
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i as usize];
            if !n.is_leaf() {
                sum += f64::from(area(&n.aabb));
                stack.push(n.child1);
                stack.push(n.child2);
            }
        }
        sum / root_area
    }

    pub(crate) fn node_count(&self) -> usize {
        self.nodes.iter().filter(|n| n.flags & ALLOCATED != 0).count()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.nodes.capacity() * std::mem::size_of::<Node>()
    }

    /// Checks every structural invariant; `leaf_ok(item, leaf box)` checks a leaf against its
    /// owner's records.
    pub(crate) fn validate(
        &self,
        leaf_ok: &mut dyn FnMut(u32, u32) -> Result<(), String>,
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
                if n.is_leaf() {
                    leaves += 1;
                    leaf_ok(n.child1, i)?;
                    continue;
                }
                for c in [n.child1, n.child2] {
                    let cn = self.nodes.get(c as usize).ok_or(format!("node {i}: child {c} out of range"))?;
                    if cn.parent != i {
                        return Err(format!("node {c}: parent {} but is a child of {i}", cn.parent));
                    }
                    if !n.aabb.contains(&cn.aabb) {
                        return Err(format!("node {i}: box does not contain child {c}"));
                    }
                    if cn.moved() && !n.moved() {
                        return Err(format!("node {i}: child {c} moved but the node is not flagged"));
                    }
                    stack.push(c);
                }
                let h = 1 + self.nodes[n.child1 as usize].height.max(self.nodes[n.child2 as usize].height);
                if n.height != h {
                    return Err(format!("node {i}: height {} but children give {h}", n.height));
                }
            }
        }
        if leaves != self.leaves {
            return Err(format!("{leaves} leaves reachable, {} counted", self.leaves));
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
            f = self.nodes[f as usize].child1;
        }
        if reached + free != self.nodes.len() {
            return Err(format!("{reached} reachable + {free} free != {} nodes", self.nodes.len()));
        }
        Ok(())
    }

    /// Calls `visit(item, leaf)` for each leaf whose box overlaps `aabb`; false stops.
    #[inline]
    pub(crate) fn query(&self, aabb: &Aabb, visit: &mut impl FnMut(u32) -> bool) -> bool {
        if self.root == NULL {
            return true;
        }
        let mut stack = Stack::new(self.height());
        stack.push(self.root);
        while let Some(i) = stack.pop() {
            let n = &self.nodes[i as usize];
            if !n.aabb.intersects(aabb) {
                continue;
            }
            if n.is_leaf() {
                if !visit(n.child1) {
                    return false;
                }
            } else {
                stack.push(n.child2);
                stack.push(n.child1);
            }
        }
        true
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
        let mut stack = Stack::new(self.height());
        let root = &self.nodes[self.root as usize];
        match root.aabb.clip_ray_inv(origin, inv_dir, limit) {
            Some((t0, _)) => stack.push_t(self.root, t0),
            None => return limit,
        }
        while let Some((i, t_enter)) = stack.pop_t() {
            if t_enter > limit {
                continue;
            }
            let n = &self.nodes[i as usize];
            if n.is_leaf() {
                limit = visit(n.child1, limit);
                if limit <= 0.0 {
                    return limit;
                }
                continue;
            }
            let (c1, c2) = (n.child1, n.child2);
            let h1 = self.nodes[c1 as usize].aabb.clip_ray_inv(origin, inv_dir, limit);
            let h2 = self.nodes[c2 as usize].aabb.clip_ray_inv(origin, inv_dir, limit);
            match (h1, h2) {
                (Some((t1, _)), Some((t2, _))) => {
                    // Push the far one first so the near one is visited first.
                    if t1 <= t2 {
                        stack.push_t(c2, t2);
                        stack.push_t(c1, t1);
                    } else {
                        stack.push_t(c1, t1);
                        stack.push_t(c2, t2);
                    }
                }
                (Some((t1, _)), None) => stack.push_t(c1, t1),
                (None, Some((t2, _))) => stack.push_t(c2, t2),
                (None, None) => {}
            }
        }
        limit
    }
}

/// Partitions `items` by binned SAH on the centres (longest centroid axis); returns the split
/// point, always in `1..len`. Falls back to halving when the centres coincide or SAH finds nothing.
fn split(items: &mut [Item], nodes: &[Node]) -> usize {
    let n = items.len();
    if n == 2 {
        return 1;
    }
    let (mut lo, mut hi) = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);
    for it in items.iter() {
        for k in 0..3 {
            lo[k] = lo[k].min(it.center[k]);
            hi[k] = hi[k].max(it.center[k]);
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
    if ext[axis] <= 0.0 || !ext[axis].is_finite() {
        return n / 2;
    }
    let scale = BINS as f32 / ext[axis];
    let bin_of = |c: f32| (((c - lo[axis]) * scale) as usize).min(BINS - 1);
    let mut boxes: [Option<Aabb>; BINS] = [None; BINS];
    let mut counts = [0u32; BINS];
    for it in items.iter() {
        let b = bin_of(it.center[axis]);
        counts[b] += 1;
        let nb = &nodes[it.node as usize].aabb;
        boxes[b] = Some(match boxes[b] {
            Some(x) => union(&x, nb),
            None => *nb,
        });
    }
    // Sweep from the right, then from the left, for the cost of each of the BINS-1 planes.
    let mut right_cost = [0.0f32; BINS];
    let mut acc: Option<Aabb> = None;
    let mut cnt = 0u32;
    for b in (1..BINS).rev() {
        if let Some(x) = boxes[b] {
            acc = Some(acc.map_or(x, |a| union(&a, &x)));
        }
        cnt += counts[b];
        right_cost[b] = acc.map_or(0.0, |a| area(&a)) * cnt as f32;
    }
    let mut best = (f32::INFINITY, 0usize);
    acc = None;
    cnt = 0;
    for b in 0..BINS - 1 {
        if let Some(x) = boxes[b] {
            acc = Some(acc.map_or(x, |a| union(&a, &x)));
        }
        cnt += counts[b];
        if cnt == 0 || cnt as usize == n {
            continue;
        }
        let cost = acc.map_or(0.0, |a| area(&a)) * cnt as f32 + right_cost[b + 1];
        if cost < best.0 {
            best = (cost, b);
        }
    }
    if !best.0.is_finite() {
        return n / 2;
    }
    // Partition in place: bins <= best.1 to the left.
    let mut i = 0;
    let mut j = n;
    while i < j {
        if bin_of(items[i].center[axis]) <= best.1 {
            i += 1;
        } else {
            j -= 1;
            items.swap(i, j);
        }
    }
    if i == 0 || i == n { n / 2 } else { i }
}

/// A traversal stack on the call's stack frame: 128 entries cover any tree of height < 127
/// (rotations and SAH rebuilds keep real trees far below that); a taller tree spills to the heap.
struct Stack {
    inline: [(u32, f32); 128],
    len: usize,
    spill: Vec<(u32, f32)>,
}

impl Stack {
    #[inline]
    fn new(height: u32) -> Self {
        let spill =
            if height as usize + 2 > 128 { Vec::with_capacity(height as usize + 2) } else { Vec::new() };
        Stack { inline: [(0, 0.0); 128], len: 0, spill }
    }

    #[inline]
    fn push_t(&mut self, i: u32, t: f32) {
        if self.len < 128 {
            self.inline[self.len] = (i, t);
            self.len += 1;
        } else {
            self.spill.push((i, t));
        }
    }

    #[inline]
    fn pop_t(&mut self) -> Option<(u32, f32)> {
        if let Some(x) = self.spill.pop() {
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
