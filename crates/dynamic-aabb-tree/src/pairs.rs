//! Pairs: the proxies moved since the last update are flagged in their trees, and the two trees
//! are walked together from those flags (in parallel past [`TreeConfig::parallel_min_moved`]
//! moves) for the new overlapping pairs of fat boxes, kept where the tight boxes overlap.
//!
//! [`TreeConfig::parallel_min_moved`]: crate::TreeConfig::parallel_min_moved

use crate::proxies::{DynamicAabbTree, ProxyKind, Slot, check_box, is_set};
use crate::quad;
use crate::radix;
use crate::sah::overlap;
use crate::sink::Sink;
use rayon::prelude::*;
use voxterra_core::nalgebra::Vector3;
use voxterra_core::{Aabb, ProxyError, ProxyId};

impl DynamicAabbTree {
    /// Adds a proxy to the ones moved (or created) since the last pair update, once.
    #[inline]
    pub(crate) fn queue(&mut self, id: u32) {
        let (word, bit) = (id as usize / 64, 1u64 << (id % 64));
        if self.queued[word] & bit == 0 {
            self.queued[word] |= bit;
            self.moved.push(id);
        }
    }

    /// A move without the tree's part: the proxy's kind and new fat box when its leaf needs one.
    pub(crate) fn move_one(
        &mut self,
        id: ProxyId,
        aabb: Aabb,
        displacement: Vector3<f32>,
    ) -> Result<Option<(ProxyKind, Aabb)>, ProxyError> {
        let aabb = check_box(aabb)?;
        let s = self.slot(id)?;
        let i = id.0 as usize;
        self.tight[i] = aabb;
        let fat = self.fat[i];
        let new_fat = self.fatten(&aabb, &displacement);
        // Re-fatten when the box left its fat box, or when the fat box is far too big for it
        // (a fast mover that slowed down); otherwise the tree is not touched.
        let too_big = !new_fat.loosened(4.0 * self.config.margin).contains(&fat);
        self.queue(id.0);
        if !fat.contains(&aabb) || too_big {
            self.fat[i] = new_fat;
            return Ok(Some((s.kind, new_fat)));
        }
        Ok(None)
    }

    /// Collects every pair of overlapping proxies of which at least one moved, as sorted keys.
    pub(crate) fn collect_pairs(&mut self, parallel: bool) {
        let parallel = parallel && self.moved.len() >= self.config.parallel_min_moved;
        self.flush();
        self.flag_moved();
        let mut pairs = Sink::from(std::mem::take(&mut self.pairs));
        let mut stack = Sink::from(std::mem::take(&mut self.stack));
        let (dt, st, tight) = (&self.dynamic, Some(&self.statics), &self.tight[..]);
        quad::root_tasks(dt, st, &mut pairs, &mut stack);
        if parallel && rayon::current_num_threads() > 1 {
            // Split the top of the traversal into independent tasks, breadth first.
            let target = 16 * rayon::current_num_threads();
            let mut tasks = stack.kept().to_vec();
            let mut next = Sink::default();
            for _ in 0..12 {
                if tasks.len() >= target || tasks.is_empty() {
                    break;
                }
                next.len = 0;
                for &t in &tasks {
                    quad::visit(dt, st, tight, t, &mut next, &mut pairs);
                }
                tasks.clear();
                tasks.extend_from_slice(next.kept());
            }
            let parts: Vec<Vec<u64>> = tasks
                .par_iter()
                .map(|&t| {
                    let (mut stack, mut out) = (Sink::default(), Sink::default());
                    stack.room(1);
                    stack.put(t, true);
                    quad::run(dt, st, tight, &mut stack, &mut out);
                    keep_touching(&mut out, tight);
                    out.into_vec()
                })
                .collect();
            keep_touching(&mut pairs, tight);
            let mut pairs = pairs.into_vec();
            for p in parts {
                pairs.extend_from_slice(&p);
            }
            pairs.par_sort_unstable();
            self.pairs = pairs;
        } else {
            quad::run(dt, st, tight, &mut stack, &mut pairs);
            keep_touching(&mut pairs, tight);
            let mut pairs = pairs.into_vec();
            // Ids are slot indices.
            let id_bits = u32::BITS - (self.slots.len() as u32).saturating_sub(1).leading_zeros();
            radix::sort_pair_keys(&mut pairs, &mut self.sort_scratch, id_bits);
            self.pairs = pairs;
        }
        self.stack = stack.into_vec();
    }

    /// Flags the leaves of the proxies moved since the last pair update (and their ancestors).
    pub(crate) fn flag_moved(&mut self) {
        let [dynamic, statics] = &mut self.moved_kind;
        dynamic.clear();
        statics.clear();
        for &id in &self.moved {
            // Destroyed since (or destroyed and created again, already flagged): nothing to do.
            match self.slots[id as usize] {
                Slot { live: false, .. } => {}
                Slot { kind: ProxyKind::Dynamic, .. } => dynamic.push(id),
                Slot { kind: ProxyKind::Static, .. } => statics.push(id),
            }
        }
        let queued = &self.queued;
        let is_queued = |id: u32| is_set(queued, id);
        // A tree whose flags a whole refit set, with no proxy queued since (an insertion flags
        // its own leaf, a removal leaves flags that are only too many), is skipped.
        let flagged_at = std::mem::replace(&mut self.flagged_at, [usize::MAX; 2]);
        for (kind, tree, ids) in [
            (ProxyKind::Dynamic, &mut self.dynamic, dynamic),
            (ProxyKind::Static, &mut self.statics, statics),
        ] {
            if flagged_at[kind as usize] != self.moved.len() {
                tree.mark_moved_many(ids, is_queued);
            }
        }
        for &id in &self.moved {
            self.queued[id as usize / 64] &= !(1 << (id % 64));
        }
        self.moved.clear();
    }

    /// [`Broadphase::update_pairs`] on rayon's pool: the traversal's top is split into tasks run
    /// in parallel. The pairs and their order are identical to the sequential call's. Runs
    /// sequentially when fewer than [`TreeConfig::parallel_min_moved`] proxies moved.
    pub fn update_pairs_parallel(&mut self, report: &mut dyn FnMut(ProxyId, ProxyId)) {
        self.collect_pairs(true);
        for &k in &self.pairs {
            report(ProxyId((k >> 32) as u32), ProxyId(k as u32));
        }
    }
}

/// Keeps the candidate pairs whose tight boxes overlap, without a branch on the test: its loads
/// are independent, so they overlap (a prefetch a few pairs ahead measured no faster).
pub(crate) fn keep_touching(pairs: &mut Sink<u64>, tight: &[Aabb]) {
    let mut kept = 0;
    for i in 0..pairs.len {
        let k = pairs.buf[i];
        pairs.buf[kept] = k;
        kept += usize::from(overlap(&tight[(k >> 32) as usize], &tight[(k as u32) as usize]));
    }
    pairs.len = kept;
}
