//! [`LodView::validate`]: the octree of drawn and split nodes.

use super::{LodNode, LodView};
use thiserror::Error;

/// A broken invariant of a [`LodView`], found by [`LodView::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("level-of-detail node {node:?}: {what}")]
pub struct InvalidLodView {
    /// The node at fault.
    pub node: LodNode,
    /// Which invariant.
    pub what: &'static str,
}

impl LodView {
    /// Checks the octree: no node both drawn and split, every split node's eight children drawn or
    /// split, every node below the top level under a split parent, levels within the top, and a
    /// border summary for each drawn node. For tests, after updates.
    pub fn validate(&self) -> Result<(), InvalidLodView> {
        let top = self.top_level();
        let bad = |node: LodNode, what| Err(InvalidLodView { node, what });
        for &n in self.leaves.iter().chain(&self.split) {
            if n.level > top {
                return bad(n, "past the top level");
            }
            if n.level < top && !self.split.contains(&n.parent()) {
                return bad(n, "its parent is not split");
            }
        }
        for &n in &self.split {
            if self.leaves.contains(&n) {
                return bad(n, "both drawn and split");
            }
            if n.level == 0 {
                return bad(n, "split at level 0");
            }
            for c in n.children() {
                if !self.leaves.contains(&c) && !self.split.contains(&c) && !self.waiting.contains(&c) {
                    return bad(c, "a split node's child is neither drawn, split nor waiting");
                }
            }
        }
        if self.summaries.len() != self.leaves.len()
            || self.leaves.iter().any(|n| !self.summaries.contains_key(n))
        {
            let n = self.leaves.iter().find(|&n| !self.summaries.contains_key(n)).copied();
            return bad(
                n.unwrap_or(LodNode { level: 0, x: 0, y: 0, z: 0 }),
                "border summaries differ from the drawn nodes",
            );
        }
        Ok(())
    }
}
