//! Cutting pieces loose: after an edit, the pieces it left without an anchor are taken out of the
//! terrain in the same step (one undo step, one delta) and built into [`DetachedPiece`]s.

use crate::anchor::{FACES, holds};
use crate::config::DetachConfig;
use crate::detach::DetachedRegion;
use crate::error::EditError;
use crate::piece::{DetachedPiece, bounds_of, build_piece};
use crate::terrain::Terrain;
use rayon::prelude::*;
use voxterra_codec::{Compression, Snapshot};
use voxterra_core::nalgebra::Vector3;
use voxterra_core::{DenseVoxels, Region, Voxel, VoxelPos, VoxelRead};
use voxterra_voxel_store::VoxelStore;

type Set<K> = hashbrown::HashSet<K, foldhash::fast::FixedState>;

/// What an edit cut loose: the undo snapshot covering the edit and the pieces, the dirty box of
/// both, and the pieces.
pub(crate) struct Cut {
    pub(crate) undo: Snapshot,
    pub(crate) dirty: Region,
    pub(crate) pieces: Vec<DetachedPiece>,
    pub(crate) debris: usize,
}

/// The store before an edit: `old` over `region` (the edit's box, as captured before the write),
/// the store elsewhere.
struct BeforeEdit<'a> {
    store: &'a VoxelStore,
    region: Region,
    old: &'a [Voxel],
}

impl VoxelRead for BeforeEdit<'_> {
    fn voxel(&self, p: VoxelPos) -> Voxel {
        if self.region.contains(p) { self.old[self.region.index_of(p)] } else { self.store.voxel(p) }
    }

    fn visit_rows(&self, region: &Region, visit: &mut dyn FnMut(VoxelPos, &[Voxel])) {
        let (lo, hi) = (self.region.min(), self.region.max());
        let mut row = Vec::new();
        self.store.visit_rows(region, &mut |start, seg| {
            let end = start.x + seg.len() as i32;
            let (x0, x1) = (start.x.max(lo.x), end.min(hi.x));
            let crosses = (lo.y..hi.y).contains(&start.y) && (lo.z..hi.z).contains(&start.z) && x0 < x1;
            if !crosses {
                return visit(start, seg);
            }
            row.clear();
            row.extend_from_slice(seg);
            let first = self.region.index_of(VoxelPos::new(x0, start.y, start.z));
            row[(x0 - start.x) as usize..(x1 - start.x) as usize]
                .copy_from_slice(&self.old[first..first + (x1 - x0) as usize]);
            visit(start, &row);
        });
    }
}

impl Terrain {
    /// After an edit wrote `dirty` inside the box `old` holds the voxels of from before the write:
    /// takes out every piece the edit cut loose (searched from the solid voxels next to those it
    /// emptied), within the edit limit (a piece that would take the edit's box past it stays, as
    /// one too big to decide).
    pub(crate) fn cut_loose(
        &mut self,
        old: &DenseVoxels,
        dirty: Region,
        cfg: DetachConfig,
    ) -> Result<Option<Cut>, EditError> {
        let region = *old.region();
        let table = self.materials();
        // The written box and a voxel around it as they are now, read once.
        let around = dirty.expanded(1);
        let mut now = vec![Voxel::AIR; around.len()?];
        self.store.read_box(&around, &mut now)?;
        let holding_now = |p: VoxelPos| holds(table, now[around.index_of(p)]);
        let mut seeds = Vec::new();
        for p in dirty.iter() {
            if holds(table, old.voxel(p)) && !holding_now(p) {
                for f in FACES {
                    let q = p + Vector3::from(f);
                    if around.contains(q) && holding_now(q) {
                        seeds.push((q.y, q.z, q.x));
                    }
                }
            }
        }
        if seeds.is_empty() {
            return Ok(None);
        }
        seeds.sort_unstable();
        seeds.dedup();
        let found = self.search_detached(seeds.into_iter().map(|(y, z, x)| VoxelPos::new(x, y, z)), &cfg);
        let limit = self.config().max_edit_voxels as u128;
        let mut union = region;
        let mut taken = Vec::new();
        for piece in &found {
            let removed = self.removal_of(piece);
            let grown = union.union(&bounds_of(&removed));
            if grown.volume() <= limit {
                union = grown;
                taken.push((removed, piece.voxels.len()));
            }
        }
        if taken.is_empty() {
            return Ok(None);
        }
        let undo = Snapshot::capture(
            &BeforeEdit { store: &self.store, region, old: old.as_slice() },
            &union,
            Compression::None,
        )?;
        let mut all_dirty = dirty;
        for (removed, _) in &taken {
            // One pass over the piece's box: the store rewrites each touched chunk once.
            let b = bounds_of(removed);
            let mut out = vec![false; b.len()?];
            for (p, _) in removed {
                out[b.index_of(*p)] = true;
            }
            if let Some(d) = self.store.brush(&b, |p, v| if out[b.index_of(p)] { Voxel::AIR } else { v })? {
                all_dirty = all_dirty.union(&d);
            }
        }
        let (kept, debris): (Vec<_>, Vec<_>) =
            taken.into_iter().partition(|(_, n)| *n >= cfg.min_piece_voxels);
        let (mesher, table, vs) = (&self.mesher, self.materials(), self.voxel_size());
        let pieces = kept
            .par_iter()
            .map(|(removed, n)| build_piece(removed, *n, mesher, table, vs))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(Cut { undo, dirty: all_dirty, pieces, debris: debris.len() }))
    }

    /// The voxels taking `piece` out removes, sorted by (y, z, x): its solid voxels and the solid
    /// surface voxels under half full beside them that touch no other solid voxel.
    fn removal_of(&self, piece: &DetachedRegion) -> Vec<(VoxelPos, Voxel)> {
        let inside: Set<VoxelPos> = piece.voxels.iter().copied().collect();
        let mut out: Vec<(VoxelPos, Voxel)> = piece.voxels.iter().map(|&p| (p, self.voxel(p))).collect();
        let mut seen: Set<VoxelPos> = Set::default();
        for p in &piece.voxels {
            for f in FACES {
                let q = p + Vector3::from(f);
                if inside.contains(&q) || !seen.insert(q) {
                    continue;
                }
                let v = self.voxel(q);
                if !self.materials().is_solid(v) {
                    continue;
                }
                let shared = FACES.iter().any(|g| {
                    let r = q + Vector3::from(*g);
                    !inside.contains(&r) && self.is_holding(r)
                });
                if !shared {
                    out.push((q, v));
                }
            }
        }
        out.sort_unstable_by_key(|(p, _)| (p.y, p.z, p.x));
        out
    }
}
