//! Invariant checks for tests: every box within its slot, links, locations, flags, free list.

use super::node::*;
use super::tree::*;
use crate::sah::{ITEM_MASK, LEAF, NULL};
use voxterra_core::Aabb;

impl QuadTree {
    /// Checks the tree: every child's box (a leaf's exact box, a node's span) within the box its
    /// node's steps bound it by; slots packed, at least 2 children a node; parent links and leaf
    /// locations; every node reached once or free; the leaf count.
    pub(crate) fn validate(
        &self,
        leaf_ok: &mut dyn FnMut(u32, &Aabb) -> Result<(), InvalidTree>,
    ) -> Result<(), InvalidTree> {
        if self.root == NULL {
            return if self.leaves == 0 {
                Ok(())
            } else {
                Err(InvalidTree::LeafCount { reached: 0, counted: self.leaves })
            };
        }
        if self.root & LEAF != 0 {
            let ok = self.loc.get(index(self.root)) == Some(&ROOT_LEAF) && self.leaves == 1;
            if !ok {
                return Err(InvalidTree::RootLeaf);
            }
            return leaf_ok(index(self.root) as u32, &self.leaf_box[index(self.root)]);
        }
        if self.up[index(self.root)] != NULL {
            return Err(InvalidTree::RootHasParent);
        }
        let mut reached = vec![false; self.nodes.len()];
        let mut leaves = 0u32;
        let mut stack = vec![index(self.root) as u32];
        while let Some(i) = stack.pop() {
            let slot = reached.get_mut(i as usize).ok_or(InvalidTree::NodeOutOfRange { node: i })?;
            if std::mem::replace(slot, true) {
                return Err(InvalidTree::ReachedTwice { node: i });
            }
            let n = &self.nodes[i as usize];
            let len = n.len();
            if len < 2 || n.child[..len].contains(&NULL) {
                return Err(InvalidTree::Children { node: i, children: len });
            }
            for s in 0..len {
                let c = n.child[s];
                let at = i << 2 | s as u32;
                if c & LEAF != 0 {
                    leaves += 1;
                    if self.loc.get(index(c)) != Some(&at) {
                        return Err(InvalidTree::LeafLocation { item: c & ITEM_MASK, node: i, slot: s });
                    }
                    leaf_ok(index(c) as u32, &self.leaf_box[index(c)])?;
                } else {
                    if self.up[index(c)] != at {
                        return Err(InvalidTree::Parent { child: c, node: i, slot: s });
                    }
                    if self.ordered && index(c) <= i as usize {
                        return Err(InvalidTree::Order { child: c, node: i });
                    }
                    // Flags may stand after their movers left (only too many, as the binary
                    // tree's); a flagged child under an unflagged slot would hide pairs.
                    if c & MOVED == 0 && moved_mask(&self.nodes[index(c)]) != 0 {
                        return Err(InvalidTree::MovedUnflagged { child: c, node: i, slot: s });
                    }
                    stack.push(index(c) as u32);
                }
                let (b, held) = (self.box_of(c), n.child_box(s));
                if !held.contains(&b) {
                    return Err(InvalidTree::BoxNotHeld { node: i, slot: s });
                }
            }
        }
        if leaves != self.leaves {
            return Err(InvalidTree::LeafCount { reached: leaves, counted: self.leaves });
        }
        let mut free = 0;
        let mut f = self.free;
        while f != NULL {
            free += 1;
            if free > self.nodes.len() || reached[f as usize] {
                return Err(InvalidTree::FreeList { node: f });
            }
            f = self.up[f as usize];
        }
        if reached.iter().filter(|&&r| r).count() + free != self.nodes.len() {
            return Err(InvalidTree::Unaccounted);
        }
        Ok(())
    }
}

/// A tree invariant that does not hold, from the tree's `validate` (and, through it, the
/// broadphase's). Node and slot numbers are arena positions.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidTree {
    /// A tree whose root is one leaf holds exactly that leaf, located at the root.
    #[error("the root leaf's location or the leaf count is wrong")]
    RootLeaf,
    /// The root node has no parent.
    #[error("the root has a parent")]
    RootHasParent,
    /// A child reference points past the arena.
    #[error("node {node} is out of the arena")]
    NodeOutOfRange {
        /// The node.
        node: u32,
    },
    /// Every node has one parent.
    #[error("node {node} is reached twice")]
    ReachedTwice {
        /// The node.
        node: u32,
    },
    /// A node holds 2 to 4 children in its first slots.
    #[error("node {node} has {children} children, or a gap")]
    Children {
        /// The node.
        node: u32,
        /// Children before the first gap.
        children: usize,
    },
    /// A leaf's recorded location is the slot that holds it.
    #[error("leaf {item} at node {node} slot {slot}: wrong location")]
    LeafLocation {
        /// The leaf's item.
        item: u32,
        /// The node holding it.
        node: u32,
        /// The slot holding it.
        slot: usize,
    },
    /// A node's parent link is the slot that holds it.
    #[error("node {child} under node {node} slot {slot}: wrong parent")]
    Parent {
        /// The child node.
        child: u32,
        /// The node holding it.
        node: u32,
        /// The slot holding it.
        slot: usize,
    },
    /// In an arena marked ordered, children come after their parent.
    #[error("node {child} under node {node}: before its parent, arena marked ordered")]
    Order {
        /// The child node.
        child: u32,
        /// Its parent.
        node: u32,
    },
    /// A slot holding a subtree with a moved leaf carries the moved flag.
    #[error("node {child} under node {node} slot {slot}: moved child, unflagged")]
    MovedUnflagged {
        /// The child node.
        child: u32,
        /// Its parent.
        node: u32,
        /// The slot.
        slot: usize,
    },
    /// A slot's box holds its child's box.
    #[error("node {node} slot {slot}: the slot's box does not hold its child's")]
    BoxNotHeld {
        /// The node.
        node: u32,
        /// The slot.
        slot: usize,
    },
    /// The leaves reached equal the leaf count.
    #[error("{reached} leaves reached, {counted} counted")]
    LeafCount {
        /// Leaves reached from the root.
        reached: u32,
        /// The tree's count.
        counted: u32,
    },
    /// The free list holds only unreached nodes, once each.
    #[error("the free list reaches node {node} twice or in use")]
    FreeList {
        /// The node.
        node: u32,
    },
    /// Every node is reached or free.
    #[error("some nodes are neither reached nor free")]
    Unaccounted,
    /// A leaf's item is a live proxy of the tree's kind.
    #[error("proxy {proxy} has a leaf in a tree that does not hold it (live {live})")]
    ProxyNotHere {
        /// The proxy id.
        proxy: u32,
        /// Whether the proxy is live.
        live: bool,
    },
    /// A proxy's fat box (its leaf's box) holds its tight box.
    #[error("proxy {proxy}: the fat box does not hold the tight box")]
    FatMissesTight {
        /// The proxy id.
        proxy: u32,
    },
    /// A leaf's box is its proxy's fat box.
    #[error("proxy {proxy}: the leaf's box is not the proxy's fat box")]
    LeafNotFat {
        /// The proxy id.
        proxy: u32,
    },
    /// The live count matches the live slots and the leaves of both trees.
    #[error("{slots} live slots, {counted} counted")]
    LiveCount {
        /// Live slots.
        slots: usize,
        /// The broadphase's count.
        counted: u32,
    },
}
