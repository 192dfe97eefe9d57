//! Levels of detail for rendering. [`LodView`] is the clipmap a renderer keeps: render nodes
//! ([`LodNode`]) that grow with distance from the viewers, meshed so that nodes of any two levels
//! meet without cracks; each [`LodView::update`] hands out only the meshes to add, replace and
//! drop, and edits re-mesh the nodes that show them ([`LodView::mark_edited`]). Over a paged
//! terrain a node is drawn once the chunks it reads are resident ([`LodView::waiting`] names the
//! others), so a view of a world larger than memory is drawn as its chunks are paged in.
//!
//! ```
//! use voxterra::lod::{LodConfig, LodView};
//! use voxterra::mesher::Mesher;
//! use voxterra::prelude::*;
//! use voxterra::worldgen::GenParams;
//!
//! let mut terrain = Terrain::generate(&GenParams::new(5, [256, 64, 256]), TerrainConfig::default())?;
//! let mesher = Mesher::new(terrain.materials());
//! // Level 0 within 32 voxels of the viewer, 1 within 64, 2 beyond.
//! let mut view = LodView::new(LodConfig { distances: vec![32.0, 64.0], hysteresis: 0.25 })?;
//! let viewer = Point3::new(128.0, 40.0, 128.0);
//! let first = view.update(&terrain, &mesher, &[viewer])?;
//! assert!(!first.meshes.is_empty() && first.dropped.is_empty());
//! assert!(view.nodes().any(|n| n.level == 0) && view.nodes().any(|n| n.level == 2));
//! // A crater near the viewer: only the nodes showing it are meshed again.
//! let crater = BrushShape::Sphere { center: Point3::new(128.0, 30.0, 128.0), radius: 5.0 };
//! let report = terrain.apply_brush(&Brush { shape: crater, op: BrushOp::Subtract })?;
//! view.mark_edited(&report.dirty.expect("voxels changed"));
//! let next = view.update(&terrain, &mesher, &[viewer])?;
//! assert!(!next.meshes.is_empty() && next.meshes.len() < first.meshes.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A [`LodNode`] is a cube of [`NODE_CELLS`]³ voxels of its level `k`, each standing for a cube of
//! `2^k` voxels (the store's mips and what is merged from them, [`VoxelStore::level`]): far
//! terrain at a fraction of the triangles, with the materials the mips keep (the one holding the
//! most occupancy). Nodes of one level tile space and mesh seamlessly against each other, as
//! storage chunks do. Collision never reads these meshes: physics keeps full resolution.
//!
//! [`VoxelStore::level`]: voxterra_voxel_store::VoxelStore::level

use crate::terrain::Terrain;
use rayon::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;

type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;
type Set<K> = hashbrown::HashSet<K, foldhash::fast::FixedState>;
use thiserror::Error;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{CoreError, Region};
use voxterra_mesher::{
    BorderSummary, ChunkClusterMap, ChunkClusters, ClusterNode, ClusterPart, LevelMap, MAX_CLUSTER_LEVEL,
    MeshError, MeshWorkspace, Mesher, RenderMesh, cluster_chunks,
};
use voxterra_voxel_store::MAX_LEVEL;

mod node;
mod validate;

pub use node::LodNode;

pub use validate::InvalidLodView;

/// Voxels of its own level along a render node's side.
pub const NODE_CELLS: u32 = 32;

/// What can go wrong making a level-of-detail mesh.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LodError {
    /// A level past the coarsest one.
    #[error("level {level} is past the coarsest level {max}")]
    Level {
        /// The level asked for.
        level: u32,
        /// The coarsest level.
        max: u32,
    },
    /// A node whose voxels fall outside the voxel coordinate range.
    #[error(transparent)]
    Core(#[from] CoreError),
    /// The mesher refused the node.
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// A [`LodConfig`] with a distance or hysteresis that is negative or not finite.
    #[error("level distances and hysteresis must be finite and not negative")]
    Config,
    /// A viewer position that is not finite.
    #[error("a viewer's position is not finite")]
    Viewer,
}

/// How far (voxels) a viewer can move toward a node before it splits with its chunks' finer
/// clusters already held.
const SPLIT_AHEAD: f32 = 64.0;

/// How a [`LodView`] picks levels around its viewers.
#[derive(Clone, Debug, PartialEq)]
pub struct LodConfig {
    /// `distances[k]`: out to this distance from a viewer (voxels) the terrain is drawn at level
    /// `k` or finer; a node of level `k + 1` nearer than it splits into its eight children. One
    /// entry per level below the coarsest, which is the length (at most [`MAX_LEVEL`]).
    pub distances: Vec<f32>,
    /// A split node merges back only once every viewer is farther than its distance times
    /// `1 + hysteresis`, so a viewer pacing across a boundary does not thrash.
    pub hysteresis: f32,
}

impl Default for LodConfig {
    /// Every level out to twice its node's side: 64, 128, ... 1024 voxels, coarsest level 5;
    /// hysteresis a quarter.
    fn default() -> Self {
        LodConfig { distances: (0..MAX_LEVEL).map(|k| (64u32 << k) as f32).collect(), hysteresis: 0.25 }
    }
}

/// A mesh a [`LodView`] hands out: one part of one node.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct LodMeshKey {
    /// The node.
    pub node: LodNode,
    /// [`ClusterPart::Interior`] (its own clusters) or [`ClusterPart::Border`] (the polygons that
    /// reach its neighbors, re-made when a neighbor changes level).
    pub part: ClusterPart,
}

/// What changed since the last [`LodView::update`], to apply in one go (no frame shows a gap):
/// meshes to add or replace, and meshes to drop, each in key order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LodUpdate {
    /// New and replaced meshes (positions in terrain voxel units).
    pub meshes: Vec<(LodMeshKey, RenderMesh)>,
    /// Meshes no longer drawn.
    pub dropped: Vec<LodMeshKey>,
}

/// A clipmap over a terrain for rendering: render nodes that grow with distance from one or more
/// viewers (an octree of [`LodNode`]s, each mesh a bounded size), meshed by clustering
/// ([`Mesher::mesh_clustered`]) so nodes of any two levels meet without cracks. Moving the
/// viewers hands out only the meshes to add and drop; an edit ([`LodView::mark_edited`])
/// re-meshes the nodes that show the edited voxels. Nodes of level 1 and coarser are meshed from
/// the storage chunks' clusters the view holds ([`ChunkClusters`]: each chunk's voxels meshed
/// once, again only when an edit reaches it; about 1.5 KB a chunk the surface crosses at the
/// levels kept, see [`LodView::cluster_bytes`]). Collision never reads these meshes.
#[derive(Clone, Debug)]
pub struct LodView {
    config: LodConfig,
    /// The drawn nodes (the octree's leaves) and the split ones.
    leaves: BTreeSet<LodNode>,
    split: BTreeSet<LodNode>,
    /// Voxel boxes edited since the last update.
    edited: Vec<Region>,
    /// Each drawn node's clusters and signs along its faces, for re-making borders.
    summaries: Map<LodNode, BorderSummary>,
    /// Storage chunks' clusters (at the levels drawn there and one finer) and signs: nodes of
    /// level 1 and coarser are meshed from them, so a chunk's voxels are meshed once, not once
    /// per node and level that reads it. Dropped by edits within reach.
    chunks: ChunkClusterMap,
    /// The entries every chunk the surface misses shares: all outside, all inside.
    uniform: [Option<Arc<ChunkClusters>>; 2],
    /// What chunks away from the stored voxels read as.
    outside: ChunkClusters,
    /// On a paged terrain, the nodes selected but not drawn: chunks they read are not resident.
    waiting: Vec<LodNode>,
}

impl LodView {
    /// A view drawing nothing yet.
    pub fn new(config: LodConfig) -> Result<Self, LodError> {
        let levels = config.distances.len() as u32;
        if levels > MAX_LEVEL {
            return Err(LodError::Level { level: levels, max: MAX_LEVEL });
        }
        if config.distances.iter().any(|d| !d.is_finite() || *d < 0.0)
            || !(config.hysteresis.is_finite() && config.hysteresis >= 0.0)
        {
            return Err(LodError::Config);
        }
        Ok(LodView {
            config,
            leaves: BTreeSet::new(),
            split: BTreeSet::new(),
            edited: Vec::new(),
            summaries: Map::default(),
            chunks: ChunkClusterMap::new(),
            uniform: [None, None],
            outside: ChunkClusters::outside(),
            waiting: Vec::new(),
        })
    }

    /// The coarsest level: the roots'.
    pub fn top_level(&self) -> u32 {
        self.config.distances.len() as u32
    }

    /// The nodes drawn now, in key order.
    pub fn nodes(&self) -> impl Iterator<Item = LodNode> + '_ {
        self.leaves.iter().copied()
    }

    /// On a paged terrain, the nodes the last update selected but could not draw, in key order:
    /// some chunk their meshes read ([`LodNode::reads`]) is not resident. Page those in
    /// ([`Terrain::page_in`], [`Terrain::page`]) and update again; until then the level around
    /// them is the coarsest. Empty for a terrain held whole.
    pub fn waiting(&self) -> &[LodNode] {
        &self.waiting
    }

    /// The level the view draws voxel `p` at (the coarsest level outside the terrain).
    pub fn level_at(&self, p: Point3<i32>) -> u32 {
        level_in(&self.leaves, self.top_level(), p)
    }

    /// Notes voxels an edit changed (an [`EditReport`](crate::EditReport)'s `dirty`): the next
    /// update re-meshes every drawn node whose mesh reads them.
    pub fn mark_edited(&mut self, dirty: &Region) {
        self.edited.push(*dirty);
    }

    /// Re-selects the nodes around `viewers` (terrain voxel units) and meshes what changed in
    /// parallel: new nodes, nodes whose neighbors changed level (their border), nodes showing
    /// edited voxels. The result is the same for any thread count.
    pub fn update(
        &mut self,
        terrain: &Terrain,
        mesher: &Mesher,
        viewers: &[Point3<f32>],
    ) -> Result<LodUpdate, LodError> {
        if viewers.iter().any(|v| !v.iter().all(|c| c.is_finite())) {
            return Err(LodError::Viewer);
        }
        let top = self.top_level();
        let (mut leaves, mut split) = (BTreeSet::new(), BTreeSet::new());
        // Nodes wholly past the world's voxels (and the margin a surface there reaches) hold no
        // surface: they stay whole, however near a viewer.
        let stored = terrain.world_bounds().map(|e| e.expanded(2));
        for root in roots(terrain, top)? {
            self.select(root, viewers, stored.as_ref(), &mut leaves, &mut split);
        }
        if terrain.is_paged() {
            // A paged terrain's node is drawn once every chunk its mesh reads is in memory, so
            // chunks coming in never re-mesh a drawn node; an edited one not resident waits.
            let edited = &self.edited;
            let mut waiting = Vec::new();
            leaves.retain(|n| {
                let Ok(reads) = n.reads(terrain) else { return false };
                let Some(r) = reads else { return true };
                let marked = edited.iter().any(|e| e.intersection(&r).is_some());
                let drawn = (self.leaves.contains(n) && !marked) || terrain.is_region_resident(&r);
                if !drawn {
                    waiting.push(*n);
                }
                drawn
            });
            self.waiting = waiting;
        }
        let added: Vec<LodNode> = leaves.difference(&self.leaves).copied().collect();
        let removed: Vec<LodNode> = self.leaves.difference(&leaves).copied().collect();
        // New nodes and nodes showing edited voxels are meshed whole; kept nodes beside a node
        // that came or went re-make their border from the summaries alone.
        let mut whole: BTreeSet<LodNode> = added.iter().copied().collect();
        let changed: Vec<Region> = added
            .iter()
            .chain(&removed)
            .map(|n| n.region().map(|r| r.expanded(1)))
            .collect::<Result<_, _>>()?;
        let edited: Vec<Region> = std::mem::take(&mut self.edited);
        let mut borders: BTreeSet<LodNode> = BTreeSet::new();
        for n in leaves.intersection(&self.leaves) {
            let r = n.region()?;
            // A node's meshes read its voxels, a voxel past them, and its neighbors' clusters
            // along its border (at most a coarsest cluster deep).
            let reach = r.expanded(node::READ_MARGIN);
            if edited.iter().any(|e| e.intersection(&reach).is_some()) || !self.summaries.contains_key(n) {
                whole.insert(*n);
            } else if changed.iter().any(|c| c.intersection(&r).is_some()) {
                borders.insert(*n);
            }
        }
        let lookup: Set<LodNode> = leaves.iter().copied().collect();
        let levels = |p: Point3<i32>| level_in(&lookup, top, p);
        let whole: Vec<LodNode> = whole.into_iter().collect();
        let moved = !(added.is_empty() && removed.is_empty());
        self.refresh_chunks(terrain, mesher, &whole, &levels, viewers, &edited, moved)?;
        let (chunks, outside) = (&self.chunks, &self.outside);
        let made = whole
            .par_iter()
            .map_init(MeshWorkspace::new, |ws, n| {
                let node = ClusterNode { region: n.region()?, level: n.level };
                let (mut interior, mut border) = (RenderMesh::default(), RenderMesh::default());
                // Level 0 reads every voxel's sign: from the voxels. Coarser nodes read the
                // chunks' clusters, the same meshes bit for bit.
                let summary = if n.level == 0 {
                    mesher.mesh_cluster_node(
                        terrain.store(),
                        node,
                        &levels,
                        ws,
                        &mut interior,
                        &mut border,
                    )?
                } else {
                    // Chunks beyond the stored voxels (and a voxel more) are air: not held.
                    let from = chunks.reader(Some(outside));
                    mesher.mesh_cluster_node_from(&from, node, &levels, &mut interior, &mut border)?
                };
                Ok((*n, interior, border, summary))
            })
            .collect::<Result<Vec<_>, LodError>>()?;
        for n in &removed {
            self.summaries.remove(n);
        }
        let mut meshes = Vec::with_capacity(made.len() * 2 + borders.len());
        for (n, interior, border, summary) in made {
            self.summaries.insert(n, summary);
            meshes.push((LodMeshKey { node: n, part: ClusterPart::Interior }, interior));
            meshes.push((LodMeshKey { node: n, part: ClusterPart::Border }, border));
        }
        let summaries = &self.summaries;
        let others = |k: (u32, [i32; 3])| {
            let cell = Point3::from(k.1).map(|v| v << k.0);
            let holder = LodNode::containing(level_in(&lookup, top, cell), cell);
            summaries.get(&holder).and_then(|s| s.vertex(k))
        };
        let borders: Vec<LodNode> = borders.into_iter().collect();
        let stitched: Vec<(LodMeshKey, RenderMesh)> = borders
            .par_iter()
            .map(|n| {
                let mut mesh = RenderMesh::default();
                if let Some(own) = summaries.get(n) {
                    mesher.stitch_border(own, &levels, &others, &mut mesh);
                }
                (LodMeshKey { node: *n, part: ClusterPart::Border }, mesh)
            })
            .collect();
        meshes.extend(stitched);
        meshes.sort_unstable_by_key(|(k, _)| *k);
        let dropped = removed
            .iter()
            .flat_map(|n| {
                [ClusterPart::Interior, ClusterPart::Border].map(|part| LodMeshKey { node: *n, part })
            })
            .collect();
        self.leaves = leaves;
        self.split = split;
        Ok(LodUpdate { meshes, dropped })
    }

    /// Bytes the view's chunk clusters hold (beside the meshes it hands out).
    pub fn cluster_bytes(&self) -> usize {
        // Each allocation once: the `Arc`'s counts and the struct, then its arrays.
        let alloc = |t: &ChunkClusters| 16 + std::mem::size_of::<ChunkClusters>() + t.heap_bytes();
        let shared = |t: &Arc<ChunkClusters>| self.uniform.iter().flatten().any(|u| Arc::ptr_eq(u, t));
        let own: usize = self.chunks.values().filter(|t| !shared(t)).map(|t| alloc(t)).sum();
        let uniform: usize = self.uniform.iter().flatten().map(|t| alloc(t)).sum();
        self.chunks.heap_bytes() + own + uniform
    }

    /// Brings the chunk clusters up to date for meshing `whole` at `levels`: drops those an edit
    /// reaches, makes the missing ones in parallel, and, when the nodes changed, trims the others.
    /// A chunk keeps the level drawn there, and one finer where a viewer is within
    /// [`SPLIT_AHEAD`] of splitting its node (moving on, it splits without meshing the chunk
    /// again).
    #[allow(clippy::too_many_arguments)]
    fn refresh_chunks(
        &mut self,
        terrain: &Terrain,
        mesher: &Mesher,
        whole: &[LodNode],
        levels: &(dyn LevelMap + Sync),
        viewers: &[Point3<f32>],
        edited: &[Region],
        moved: bool,
    ) -> Result<(), LodError> {
        let side = 1i32 << MAX_CLUSTER_LEVEL;
        let level_of =
            |c: [i32; 3]| levels.level_at(Point3::from(c).map(|v| v * side)).min(MAX_CLUSTER_LEVEL);
        let distances = &self.config.distances;
        let keep = |c: [i32; 3]| {
            let k = level_of(c);
            let Some(split) = (k as usize).checked_sub(1).and_then(|i| distances.get(i)) else { return k };
            // The node splits once a viewer comes within `split` of it.
            let soon = split + SPLIT_AHEAD;
            let node = LodNode::containing(k, Point3::from(c).map(|v| v * side)).region();
            let near = node.is_ok_and(|r| viewers.iter().any(|v| distance_to(&r, v) < soon));
            if near { k - 1 } else { k }
        };
        // A chunk's cells read its voxels and one past them; its normals one more.
        let reach: Vec<Region> = edited.iter().map(|e| e.expanded(2)).collect();
        if !reach.is_empty() {
            self.chunks.retain(|c, _| {
                let r = Region::from_min_size(Point3::from(c).map(|v| v * side), [side as u32; 3]);
                r.is_ok_and(|r| !reach.iter().any(|e| e.intersection(&r).is_some()))
            });
        }
        if terrain.is_paged() && !whole.is_empty() {
            // Clusters follow the resident voxels' budget: a node is meshed only once what it
            // reads is resident, so clusters of chunks that left would be read again only after
            // their chunks come back, and are made again then.
            self.chunks.retain(|c, _| terrain.is_resident(Point3::from(c).map(|v| v * side)));
        }
        if moved {
            self.chunks.retain(|c, t| {
                // Shared entries (chunks the surface misses) hold no levels.
                if let Some(t) = Arc::get_mut(t) {
                    t.keep_from(keep(c));
                }
                true
            });
        }
        // Chunks whose voxels, a voxel around them, lie beyond the stored ones read as outside.
        let stored = terrain.world_bounds().map(|e| e.expanded(2));
        let near = |c: [i32; 3]| {
            let r = Region::from_min_size(Point3::from(c).map(|v| v * side), [side as u32; 3]);
            r.is_ok_and(|r| stored.is_some_and(|e| e.intersection(&r).is_some()))
        };
        let mut wanted: BTreeSet<[i32; 3]> = BTreeSet::new();
        for n in whole.iter().filter(|n| n.level > 0) {
            let node = ClusterNode { region: n.region()?, level: n.level };
            for c in cluster_chunks(&node, levels)? {
                if near(c) && !self.chunks.get(c).is_some_and(|t| t.holds(level_of(c))) {
                    wanted.insert(c);
                }
            }
        }
        let wanted: Vec<[i32; 3]> = wanted.into_iter().collect();
        let built = wanted
            .par_iter()
            .map_init(MeshWorkspace::new, |ws, &c| {
                let mut t = mesher.chunk_clusters(terrain.store(), c, ws)?;
                t.keep_from(keep(c));
                Ok((c, t))
            })
            .collect::<Result<Vec<_>, LodError>>()?;
        for (c, t) in built {
            let t = match t.uniform_side() {
                Some(side) => self.uniform[usize::from(side)].get_or_insert_with(|| Arc::new(t)).clone(),
                None => Arc::new(t),
            };
            self.chunks.insert(c, t);
        }
        Ok(())
    }

    /// Splits `node` down to leaves around the viewers.
    fn select(
        &self,
        node: LodNode,
        viewers: &[Point3<f32>],
        stored: Option<&Region>,
        leaves: &mut BTreeSet<LodNode>,
        split: &mut BTreeSet<LodNode>,
    ) {
        let has_voxels = node.region().is_ok_and(|r| stored.is_some_and(|s| s.intersection(&r).is_some()));
        if node.level > 0 && has_voxels {
            let d = self.config.distances[node.level as usize - 1];
            // A split node stays split out to its hysteresis band.
            let reach = if self.split.contains(&node) { d * (1.0 + self.config.hysteresis) } else { d };
            let near = node.region().is_ok_and(|r| viewers.iter().any(|v| distance_to(&r, v) < reach));
            if near {
                split.insert(node);
                for child in node.children() {
                    self.select(child, viewers, stored, leaves, split);
                }
                return;
            }
        }
        leaves.insert(node);
    }
}

/// The level drawn at `p` among `leaves` (the coarsest where none covers it).
fn level_in<S: NodeSet>(leaves: &S, top: u32, p: Point3<i32>) -> u32 {
    (0..=top).find(|&k| leaves.has(LodNode::containing(k, p))).unwrap_or(top)
}

/// Set membership over the two set types the view keeps.
trait NodeSet {
    fn has(&self, n: LodNode) -> bool;
}

impl NodeSet for BTreeSet<LodNode> {
    fn has(&self, n: LodNode) -> bool {
        self.contains(&n)
    }
}

impl NodeSet for Set<LodNode> {
    fn has(&self, n: LodNode) -> bool {
        self.contains(&n)
    }
}

/// The coarsest nodes over the terrain's voxels, a voxel of margin around them (a surface facing
/// down out of the stored box belongs to the node under it).
fn roots(terrain: &Terrain, top: u32) -> Result<Vec<LodNode>, LodError> {
    let Some(extent) = terrain.world_bounds() else { return Ok(Vec::new()) };
    let e = extent.expanded(1);
    let (lo, hi) = (LodNode::containing(top, e.min()), LodNode::containing(top, e.max().map(|v| v - 1)));
    let mut out = Vec::new();
    for y in lo.y..=hi.y {
        for z in lo.z..=hi.z {
            for x in lo.x..=hi.x {
                out.push(LodNode { level: top, x, y, z });
            }
        }
    }
    Ok(out)
}

/// Distance from `v` to the box of voxels `r` (0 inside).
fn distance_to(r: &Region, v: &Point3<f32>) -> f32 {
    let (lo, hi) = (r.min(), r.max());
    let mut d2 = 0.0f32;
    for a in 0..3 {
        let gap = (lo[a] as f32 - v[a]).max(v[a] - hi[a] as f32).max(0.0);
        d2 += gap * gap;
    }
    d2.sqrt()
}
