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
//! theirs; the budget counts the voxels a search reaches). The search starts from the solid voxels
//! in and around the edited box and goes in bricks of 4³ voxels, lowest brick first (solid ground
//! reaches the anchor straight down), so its cost follows the budget, not the world.
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

use crate::anchor::holds;
pub use crate::config::Anchor;
use crate::config::DetachConfig;
pub use crate::piece::{
    DetachedPiece, MAX_SPLIT_DEPTH, MIN_SPLIT_VOXELS, POOR_HULL_RATIO, PieceMass, piece_mass,
};
use crate::terrain::Terrain;
use std::collections::VecDeque;
use voxterra_core::nalgebra::Vector3;
use voxterra_core::{Region, Voxel, VoxelPos, VoxelRead};

type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

pub use crate::config::DEFAULT_DETACH_BUDGET;

/// A solid piece that reaches no anchor: its voxels, in (y, z, x) order, and their bounding box.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DetachedRegion {
    /// The piece's voxels, sorted by (y, z, x).
    pub voxels: Vec<VoxelPos>,
    /// The box holding them.
    pub bounds: Region,
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
        let mut grid = Bricks::new(self);
        let mut pieces: Vec<Vec<VoxelPos>> = Vec::new();
        let mut queue: Layers<u32> = Layers::default();
        for seed in seeds {
            let (b, bit) = grid.at(seed);
            let here = grid.bricks[b];
            if (here.anchored | here.detached) & bit != 0 || here.holding & bit == 0 {
                continue;
            }
            // Brick by brick, bit-parallel within each (PERF: a voxel a step was most of a
            // search), lowest brick first from the seed, so solid ground finds the floor in about
            // its depth; stops at an anchor, at a voxel an earlier search settled, or past the
            // budget of voxels reached.
            queue.clear();
            let mut reached = 0usize;
            let mut anchored = grid.grow(b, bit, floor, &mut reached) || reached > budget;
            if !anchored {
                queue.push(grid.bricks[b].corner[1], b as u32);
            }
            while !anchored && let Some(b) = queue.pop() {
                let b = b as usize;
                let brick = grid.bricks[b];
                let fresh = brick.local & !brick.exported;
                grid.bricks[b].exported = brick.local;
                for (face, toward, moved) in FACE_BITS {
                    let out = fresh & face;
                    if out == 0 {
                        continue;
                    }
                    let c = brick.corner;
                    let q = VoxelPos::from(std::array::from_fn::<i32, 3, _>(|k| {
                        c[k].wrapping_add(4 * toward[k])
                    }));
                    let (n, _) = grid.at(q);
                    let seeds = moved(out);
                    let next = grid.bricks[n];
                    // Settled as anchored, or in a chunk not in memory (unknown: counted as
                    // holding on).
                    if !next.resident || next.anchored & seeds != 0 {
                        anchored = true;
                        break;
                    }
                    let seeds = seeds & next.holding & !next.local & !next.detached;
                    if seeds != 0 {
                        if grid.grow(n, seeds, floor, &mut reached) || reached > budget {
                            anchored = true;
                            break;
                        }
                        queue.push(next.corner[1], n as u32);
                    }
                }
            }
            // Everything reached is part of an anchored piece (or one too big to decide), or a
            // detached piece whole.
            let voxels = grid.settle(anchored);
            if !anchored {
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

/// What a search knows of the voxels, in bricks of 4³ read whole when first touched (PERF: a
/// voxel read and two hash sets of points a step were most of a search): which voxels hold,
/// which the current search reached, which earlier searches settled.
struct Bricks<'a> {
    terrain: &'a Terrain,
    index: Map<[i32; 3], u32>,
    bricks: Vec<Brick>,
    /// Bricks looked up lately, by their coordinates' low two bits (a brick and its neighbours
    /// each have a slot): PERF, a hash probe a step was a third of a search.
    recent: [([i32; 3], u32); 64],
    /// Bricks where the current search reached a voxel.
    touched: Vec<usize>,
    buf: Vec<Voxel>,
}

/// A brick's voxels, a bit each (x fastest, then z, then y).
#[derive(Clone, Copy, Default)]
struct Brick {
    holding: u64,
    local: u64,
    anchored: u64,
    detached: u64,
    /// The reached bits already handed to the neighbours.
    exported: u64,
    /// Its storage chunk is in memory (a brick lies in one).
    resident: bool,
    /// Its corner, for listing its voxels.
    corner: [i32; 3],
}

impl<'a> Bricks<'a> {
    fn new(terrain: &'a Terrain) -> Self {
        Bricks {
            terrain,
            // A typical search (down to the floor from a carve) reads a few hundred bricks.
            index: Map::with_capacity_and_hasher(512, Default::default()),
            bricks: Vec::with_capacity(512),
            recent: [([i32::MIN; 3], u32::MAX); 64],
            touched: Vec::new(),
            buf: vec![Voxel::AIR; 64],
        }
    }

    /// The brick holding `p` (read on first use) and `p`'s bit in it.
    fn at(&mut self, p: VoxelPos) -> (usize, u64) {
        let key = [p.x >> 2, p.y >> 2, p.z >> 2];
        let bit = 1u64 << ((p.x & 3) | (p.z & 3) << 2 | (p.y & 3) << 4);
        let slot = ((key[0] & 3) | (key[1] & 3) << 2 | (key[2] & 3) << 4) as usize;
        let (k, i) = self.recent[slot];
        if k == key && i != u32::MAX {
            return (i as usize, bit);
        }
        let i = match self.index.get(&key) {
            Some(&i) => i as usize,
            None => {
                let brick = self.read(key);
                self.bricks.push(brick);
                self.index.insert(key, self.bricks.len() as u32 - 1);
                self.bricks.len() - 1
            }
        };
        self.recent[slot] = (key, i as u32);
        (i, bit)
    }

    fn read(&mut self, key: [i32; 3]) -> Brick {
        let corner = key.map(|k| k.wrapping_mul(4));
        let lo = VoxelPos::new(corner[0], corner[1], corner[2]);
        let mut brick = Brick { corner, resident: self.terrain.is_resident(lo), ..Brick::default() };
        let region = Region::from_min_size(lo, [4, 4, 4]);
        let (store, table) = (self.terrain.store(), self.terrain.materials());
        if brick.resident
            && let Ok(region) = region
        {
            // PERF: a brick of one voxel throughout (deep ground, open air) is known from its
            // rows' kind, without reading them.
            if let Some(v) = store.uniform(&region) {
                brick.holding = if holds(table, v) { u64::MAX } else { 0 };
            } else if store.read_box(&region, &mut self.buf).is_ok() {
                for (i, v) in self.buf.iter().enumerate() {
                    // The buffer runs x fastest, then z, then y: the brick's bit order.
                    if holds(table, *v) {
                        brick.holding |= 1 << i;
                    }
                }
            }
        }
        brick
    }

    /// The current search reaches `seeds` of brick `b` and every holding voxel they join within
    /// it; adds them to `reached`. Whether that anchors the piece: a voxel at or under `floor`,
    /// or one an earlier search anchored.
    fn grow(&mut self, b: usize, seeds: u64, floor: i32, reached: &mut usize) -> bool {
        let brick = &mut self.bricks[b];
        let open = brick.holding & !brick.detached & !brick.local;
        let mut region = seeds & open;
        loop {
            let next = (region | spread(region)) & open;
            if next == region {
                break;
            }
            region = next;
        }
        if brick.local == 0 && region != 0 {
            self.touched.push(b);
        }
        brick.local |= region;
        *reached += region.count_ones() as usize;
        let below = (floor as i64 - brick.corner[1] as i64).clamp(-1, 3);
        let low = if below < 0 { 0 } else { u64::MAX >> (16 * (3 - below)) };
        region & (brick.anchored | low) != 0
    }

    /// Ends the current search: its voxels become anchored or detached; a detached piece's
    /// voxels come back sorted by (y, z, x).
    fn settle(&mut self, anchored: bool) -> Vec<VoxelPos> {
        let mut voxels = Vec::new();
        if !anchored {
            // In (y, z, x) order without sorting the voxels: the bricks by (y, z, x); in each
            // layer of bricks row by row, each row across the runs of bricks along x (PERF:
            // sorting the voxels was a seventh of a search).
            let bricks = &self.bricks;
            self.touched.sort_unstable_by_key(|&b| {
                let c = bricks[b].corner;
                (c[1], c[2], c[0])
            });
            let same = |a: usize, b: usize, axes: &[usize]| {
                axes.iter().all(|&k| bricks[a].corner[k] == bricks[b].corner[k])
            };
            for layer in self.touched.chunk_by(|&a, &b| same(a, b, &[1])) {
                for y in 0..4 {
                    for run in layer.chunk_by(|&a, &b| same(a, b, &[1, 2])) {
                        for z in 0..4 {
                            for &b in run {
                                let c = bricks[b].corner;
                                let mut bits = bricks[b].local >> (16 * y + 4 * z) & 0xf;
                                while bits != 0 {
                                    let x = bits.trailing_zeros() as i32;
                                    bits &= bits - 1;
                                    voxels.push(VoxelPos::new(c[0] + x, c[1] + y, c[2] + z));
                                }
                            }
                        }
                    }
                }
            }
        }
        for &b in &self.touched {
            let brick = &mut self.bricks[b];
            if anchored {
                brick.anchored |= brick.local;
            } else {
                brick.detached |= brick.local;
            }
            brick.local = 0;
            brick.exported = 0;
        }
        self.touched.clear();
        voxels
    }
}

/// A queue that hands out its lowest layer first (PERF: a binary heap over every voxel was a
/// third of a search), the latest voxel first within a layer.
struct Layers<T> {
    /// The layer of `layers[0]`.
    base: i32,
    layers: VecDeque<Vec<T>>,
    /// No layer below this index holds a voxel.
    lowest: usize,
}

impl<T> Default for Layers<T> {
    fn default() -> Self {
        Layers { base: 0, layers: VecDeque::new(), lowest: 0 }
    }
}

impl<T> Layers<T> {
    fn clear(&mut self) {
        for l in &mut self.layers {
            l.clear();
        }
        self.lowest = 0;
    }

    /// Adds `item` at layer `y`.
    fn push(&mut self, y: i32, item: T) {
        if self.layers.is_empty() {
            self.base = y;
        }
        while y < self.base {
            self.layers.push_front(Vec::new());
            self.base -= 1;
            self.lowest += 1;
        }
        let i = (y as i64 - self.base as i64) as usize;
        while self.layers.len() <= i {
            self.layers.push_back(Vec::new());
        }
        self.layers[i].push(item);
        self.lowest = self.lowest.min(i);
    }

    fn pop(&mut self) -> Option<T> {
        while self.lowest < self.layers.len() {
            if let Some(p) = self.layers[self.lowest].pop() {
                return Some(p);
            }
            self.lowest += 1;
        }
        None
    }
}

/// Bits with x = 0, x = 3, z = 0, z = 3, y = 0 and y = 3 in a brick.
const X0: u64 = 0x1111_1111_1111_1111;
const X3: u64 = 0x8888_8888_8888_8888;
const Z0: u64 = 0x000f_000f_000f_000f;
const Z3: u64 = 0xf000_f000_f000_f000;
const Y0: u64 = 0xffff;
const Y3: u64 = 0xffff << 48;

/// Each voxel of `bits` and its face neighbours within the brick.
fn spread(bits: u64) -> u64 {
    (bits << 1 & !X0) | (bits >> 1 & !X3) | (bits << 4 & !Z0) | (bits >> 4 & !Z3) | bits << 16 | bits >> 16
}

/// A brick's faces: its bits there, the way to the neighbour across, and where they land in it.
type FaceBits = (u64, [i32; 3], fn(u64) -> u64);
const FACE_BITS: [FaceBits; 6] = [
    (X0, [-1, 0, 0], |b| b << 3),
    (X3, [1, 0, 0], |b| b >> 3),
    (Y0, [0, -1, 0], |b| b << 48),
    (Y3, [0, 1, 0], |b| b >> 48),
    (Z0, [0, 0, -1], |b| b << 12),
    (Z3, [0, 0, 1], |b| b >> 12),
];
