//! Detached regions: after an edit removes terrain, which solid pieces near it no longer reach the
//! ground.
//!
//! A voxel holds terrain up when it is *solid*: a solid material at an occupancy byte of 128 or
//! more, over one half (the mesher's inside, so a piece is what the player sees as one; a voxel at
//! 127 does not hold). Pieces are face-connected: voxels touching only along an edge or at a corner
//! share no area, and a piece hanging by one would fall. Liquids hold nothing up. A piece is
//! anchored when it reaches an anchor layer ([`Anchor`]: by default the world's lowest solid layer,
//! so the answer depends on the voxels alone, not on how the terrain was made) or when its search
//! passes the budget (too big to decide: treated as attached, as godot_voxel and Voxel Play bound
//! theirs). The search starts from the solid voxels in and around the edited box, lowest voxel
//! first (solid ground reaches the anchor straight down), so its cost follows the budget, not the
//! world.
//!
//! With [`TerrainConfig::detach`](crate::TerrainConfig::detach) set, edits act on it: an edit that
//! empties solid voxels searches from their solid neighbours and takes every loose piece out in
//! the same step (one undo step puts it back; the edit's delta carries its removal), handing it
//! out by [`Terrain::take_detached`] as a [`DetachedPiece`]: its voxels, render mesh, collision
//! shape and mass. Pieces under [`DetachConfig::min_piece_voxels`](crate::DetachConfig) go as
//! debris.
//!
//! ```
//! use voxterra::prelude::*;
//! use voxterra::{DetachConfig, TerrainConfig};
//!
//! let config = TerrainConfig { detach: Some(DetachConfig::default()), ..TerrainConfig::default() };
//! let mut t = Terrain::new(MaterialTable::default(), config)?;
//! let rock = Voxel::full(materials::ROCK);
//! t.fill(&Region::from_min_size(VoxelPos::new(0, 0, 0), [16, 2, 16])?, rock)?; // the ground
//! t.fill(&Region::from_min_size(VoxelPos::new(7, 2, 7), [2, 6, 2])?, rock)?; // a post
//! t.fill(&Region::from_min_size(VoxelPos::new(4, 8, 4), [8, 2, 8])?, rock)?; // a table top
//! let cut = t.fill(&Region::from_min_size(VoxelPos::new(7, 4, 7), [2, 1, 2])?, Voxel::AIR)?;
//! assert_eq!(cut.detached, 1);
//! let piece = t.take_detached().remove(0);
//! assert_eq!(piece.solid_voxels, 8 * 8 * 2 + 2 * 2 * 3); // the top and the post above the cut
//! assert!(t.voxel(VoxelPos::new(5, 9, 5)).is_air()); // out of the terrain,
//! t.undo()?;
//! assert!(!t.voxel(VoxelPos::new(5, 9, 5)).is_air()); // and back in one step
//! # Ok::<(), voxterra::TerrainError>(())
//! ```

use crate::anchor::{FACES, holds};
pub use crate::config::Anchor;
use crate::config::DetachConfig;
pub use crate::piece::{
    DetachedPiece, MAX_SPLIT_DEPTH, MIN_SPLIT_VOXELS, POOR_HULL_RATIO, PieceMass, piece_mass,
};
use crate::terrain::Terrain;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use voxterra_core::nalgebra::Vector3;
use voxterra_core::{Region, VoxelPos};

type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;
type Set<K> = hashbrown::HashSet<K, foldhash::fast::FixedState>;

pub use crate::config::DEFAULT_DETACH_BUDGET;

/// A solid piece that reaches no anchor: its voxels, in (y, z, x) order, and their bounding box.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetachedRegion {
    /// The piece's voxels, sorted by (y, z, x).
    pub voxels: Vec<VoxelPos>,
    /// The box holding them.
    pub bounds: Region,
}

/// What the search found of a piece.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fate {
    Anchored,
    Detached,
}

impl Terrain {
    /// Whether voxel `p` holds terrain up (see the module docs).
    pub fn is_holding(&self, p: VoxelPos) -> bool {
        holds(self.materials(), self.voxel(p))
    }

    /// The solid pieces around `dirty` (an edit's dirty box) that reach neither `config`'s anchor
    /// nor its budget (voxels visited per piece), in the order of their first voxel (y, z, x).
    /// Every solid voxel in `dirty` grown by one starts a search unless an earlier one reached it.
    pub fn find_detached(&self, dirty: &Region, config: &DetachConfig) -> Vec<DetachedRegion> {
        self.search_detached(dirty.expanded(1).iter(), config)
    }

    /// The layer (voxel Y) at or below which solid voxels hold under `anchor`; `None` when
    /// nothing holds (no solid voxel at all under [`Anchor::LowestSolid`]).
    pub fn anchor_layer(&self, anchor: Anchor) -> Option<i32> {
        match anchor {
            Anchor::Floor(y) => Some(y),
            Anchor::LowestSolid => self.lowest_solid.get(self.store(), self.materials()),
        }
    }

    /// The pieces of the solid voxels among `seeds` that reach no anchor, in the order of the
    /// seeds that found them; a seed an earlier search reached starts none.
    pub(crate) fn search_detached(
        &self,
        seeds: impl IntoIterator<Item = VoxelPos>,
        config: &DetachConfig,
    ) -> Vec<DetachedRegion> {
        let budget = config.budget;
        let floor = self.anchor_layer(config.anchor).unwrap_or(i32::MIN);
        let mut fate: Map<VoxelPos, Fate> = Map::default();
        let mut pieces: Vec<Vec<VoxelPos>> = Vec::new();
        let mut queue = BinaryHeap::new();
        for seed in seeds {
            if fate.contains_key(&seed) || !self.is_holding(seed) {
                continue;
            }
            // Lowest voxel first from the seed, so solid ground finds the floor in about its depth
            // in steps; stops at an anchor, at a voxel an earlier search settled, or past the
            // budget.
            queue.clear();
            queue.push(Reverse((seed.y, seed.z, seed.x)));
            let mut visited = 0usize;
            let mut local: Set<VoxelPos> = Set::default();
            local.insert(seed);
            let mut anchored = false;
            while let Some(Reverse((y, z, x))) = queue.pop() {
                let p = VoxelPos::new(x, y, z);
                visited += 1;
                if p.y <= floor || visited > budget {
                    anchored = true;
                    break;
                }
                for f in FACES {
                    let q = p + Vector3::from(f);
                    if local.contains(&q) {
                        continue;
                    }
                    match fate.get(&q) {
                        Some(Fate::Anchored) => {
                            anchored = true;
                            break;
                        }
                        // A detached piece was searched whole: nothing outside it reaches it.
                        Some(Fate::Detached) => continue,
                        None => {}
                    }
                    // What lies in a chunk not in memory is unknown: count it as holding on.
                    if !self.is_resident(q) {
                        anchored = true;
                        break;
                    }
                    if self.is_holding(q) {
                        local.insert(q);
                        queue.push(Reverse((q.y, q.z, q.x)));
                    }
                }
                if anchored {
                    break;
                }
            }
            if anchored {
                // Everything visited is part of an anchored piece (or one too big to decide).
                for p in local {
                    fate.insert(p, Fate::Anchored);
                }
            } else {
                let mut voxels: Vec<VoxelPos> = local.into_iter().collect();
                voxels.sort_unstable_by_key(|p| (p.y, p.z, p.x));
                for p in &voxels {
                    fate.insert(*p, Fate::Detached);
                }
                pieces.push(voxels);
            }
        }
        pieces
            .into_iter()
            .filter_map(|voxels| {
                let (mut lo, mut hi) = (voxels[0], voxels[0]);
                for p in &voxels {
                    lo = lo.inf(p);
                    hi = hi.sup(p);
                }
                let bounds = Region::new(lo, hi + Vector3::new(1, 1, 1)).ok()?;
                Some(DetachedRegion { voxels, bounds })
            })
            .collect()
    }
}
