//! The tree type, its arena (nodes with a free list, leaves in their parent's slots, exact leaf
//! boxes by item), full builds, and the quality figures (SAH cost, height).

use super::node::*;
use crate::sah::{Item, LEAF, NULL, split};
use voxterra_core::Aabb;
use voxterra_core::nalgebra::Point3;

/// A 4-wide tree of leaves with boxes: an arena of nodes with a free list, a leaf in its parent's
/// slot. A node's *span* is the union of its slots' boxes; its parent's slot holds at least that
/// (more after a leaf moved away, until the next refit). Leaves' exact boxes are kept here by
/// item.
#[derive(Clone, Debug)]
pub(crate) struct QuadTree {
    pub(super) nodes: Vec<QNode>,
    /// Per node: its parent and slot, `(parent << 2) | slot`, or [`NULL`] for the root; a free
    /// node's next free node.
    pub(super) up: Vec<u32>,
    /// The root: a node, a single `LEAF | item`, or `NULL` when empty.
    pub(super) root: u32,
    pub(super) free: u32,
    /// Per item: where its leaf is, `(node << 2) | slot`; [`ROOT_LEAF`] when it is the root;
    /// [`NULL`] when it is not here.
    pub(super) loc: Vec<u32>,
    /// Per item: its leaf's exact box.
    pub(super) leaf_box: Vec<Aabb>,
    pub(super) leaves: u32,
    /// Insertions since the last full rebuild (or the start of a background one).
    pub(super) inserted: usize,
    /// Leaf box changes that reached past their node's frame since the SAH cost was last taken.
    pub(super) refilled: usize,
    /// SAH cost ([`QuadTree::sah_cost`]) right after the last full rebuild (0 before any).
    pub(super) rebuilt_cost: f64,
    pub(super) background: Background,
    /// Every node's children sit after it in the arena (true after a full or background
    /// rebuild), so a pass in reverse arena order is bottom up.
    pub(super) ordered: bool,
    /// Scratch: live nodes, children before parents.
    pub(super) order: Vec<u32>,
    /// Per node: its box grew in place since it was built ([`QuadTree::set_leaf_box`]).
    pub(super) grew: Vec<bool>,
    /// The highest node each in-place growth reached; below it, the grown nodes are rebuilt by
    /// [`QuadTree::rebuild_grown`].
    pub(super) grown_tops: Vec<u32>,
    /// Scratch for [`QuadTree::rebuild_below`].
    pub(super) partial: Vec<Item>,
}

/// A full rebuild spread over several pair updates, so no frame pays for it whole (as the binary
/// tree's). It splits the leaves into a new arena, parents before children, while the live tree
/// keeps serving; the nodes get their boxes when it completes, from the live leaf boxes, bottom up.
/// Insertions and removals cancel it.
#[derive(Clone, Debug, Default)]
pub(super) struct Background {
    pub(super) active: bool,
    /// Nodes with their child references only (boxes filled at the swap).
    pub(super) nodes: Vec<QNode>,
    pub(super) items: Vec<Item>,
    /// Ranges of `items` (at least 2 long) still to split, with the node they go into.
    pub(super) work: Vec<(u32, u32, u32)>,
}

/// When more than 1/REFIT_SHARE of the leaves changed boxes in one batch, every node is
/// refitted in one pass rather than walked up from each leaf.
pub(super) const REFIT_SHARE: usize = 32;

/// A tree whose SAH cost exceeds this many times its cost after the last full rebuild starts a
/// background rebuild.
pub(super) const BACKGROUND_RATIO: f64 = 1.04;

/// ... and is rebuilt at once past this when no background rebuild is under way (when they keep
/// being cancelled).
pub(super) const REBUILD_RATIO: f64 = 1.15;

/// A tree that received more than 1/INSERTED_SHARE of its leaves by insertion since its last full
/// rebuild is rebuilt in the background (insertion builds it about 30% above a bulk build's SAH
/// cost at 100k leaves).
pub(super) const INSERTED_SHARE: usize = 4;

/// [`QuadTree::insert_many`] rebuilds the tree when the new leaves are at least 1/BULK_SHARE
/// of the leaves after.
pub(super) const BULK_SHARE: usize = 4;

/// A rotation is made only when it shrinks a box by more than this share of the node's area.
pub(super) const ROTATION_GAIN: f32 = 1e-4;

/// Items split per pair update by a background rebuild, per leaf.
pub(super) const BACKGROUND_BUDGET: usize = 2;

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
pub(super) const ROOT_LEAF: u32 = NULL - 1;

/// Splits `items` (at least 2) into up to four groups, as ranges: the binary SAH split applied
/// to the group of largest area (2 items or more) until there are four. The areas come from the
/// splits themselves (PERF: folding each group's boxes again was a quarter of a background
/// rebuild's time).
pub(super) fn groups(items: &mut [Item]) -> ([(usize, usize); WIDTH], usize) {
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
    pub(super) fn own(&mut self, item: u32, aabb: Aabb) {
        let i = item as usize;
        if self.loc.len() <= i {
            self.loc.resize(i + 1, NULL);
            self.leaf_box.resize(i + 1, Aabb::new(Point3::origin(), Point3::origin()));
        }
        self.leaf_box[i] = aabb;
    }

    /// Builds the node over `items` (at least 2) and its subtrees, depth first; returns it.
    pub(super) fn node(&mut self, items: &mut [Item]) -> u32 {
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

    pub(super) fn alloc(&mut self) -> u32 {
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

    pub(super) fn release(&mut self, i: u32) {
        self.nodes[i as usize] = QNode::EMPTY;
        self.up[i as usize] = self.free;
        self.grew[i as usize] = false;
        self.free = i;
    }

    /// The box of child reference `r`: a leaf's exact box, or a node's span.
    pub(super) fn box_of(&self, r: u32) -> Aabb {
        if r & LEAF != 0 { self.leaf_box[index(r)] } else { self.nodes[index(r)].span() }
    }

    /// Points `r` at its place: slot `s` of node `n`.
    pub(super) fn link(&mut self, r: u32, n: u32, s: usize) {
        let at = n << 2 | s as u32;
        if r & LEAF != 0 {
            self.loc[index(r)] = at;
        } else {
            self.up[index(r)] = at;
        }
    }

    /// Makes `r` the root.
    pub(super) fn set_root(&mut self, r: u32) {
        self.root = r;
        if r == NULL {
        } else if r & LEAF != 0 {
            self.loc[index(r)] = ROOT_LEAF;
        } else {
            self.up[index(r)] = NULL;
        }
    }

    /// Fills node `n` with `children` (1 to [`WIDTH`]) and their boxes, and links them.
    pub(super) fn fill(&mut self, n: u32, children: &[u32]) {
        let boxes: [(u32, Aabb); WIDTH] =
            std::array::from_fn(|s| children.get(s).map_or((NULL, EMPTY), |&r| (r, self.box_of(r))));
        self.nodes[n as usize] = QNode::new(&boxes[..children.len()]);
        for (s, &r) in children.iter().enumerate() {
            self.link(r, n, s);
        }
    }

    /// Node `n`'s children, in slot order.
    pub(super) fn children(&self, n: u32) -> ([u32; WIDTH], usize) {
        let c = self.nodes[n as usize].child;
        (c, c.iter().take_while(|&&r| r != NULL).count())
    }

    /// Fills node `n` with `children`, then refits its ancestors ([`QuadTree::refit_up`]).
    pub(super) fn refill_up(&mut self, n: u32, children: &[u32]) {
        self.fill(n, children);
        self.refit_up(n);
    }

    /// Gives each ancestor of node `n` in turn its child's new box, up to the root or the first
    /// slot that already holds it exactly.
    pub(super) fn refit_up(&mut self, n: u32) {
        self.climb(n, None);
    }

    /// Refits the ancestors of node `n` as [`QuadTree::refit_up`]; with `Some(s)`, first a
    /// rotation at each node ([`QuadTree::rotate`]) around its child on the way, starting with
    /// `n`'s slot `s`.
    pub(super) fn climb(&mut self, mut n: u32, mut s: Option<usize>) {
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
}
