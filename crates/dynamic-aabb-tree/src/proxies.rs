//! [`DynamicAabbTree`]: proxies with fat boxes in two trees (moving and static), incremental pairs,
//! queries, and core's [`Broadphase`] trait.

use crate::quad::{InvalidTree, QuadTree, Task};
use crate::sah::{MAX_ITEMS, NULL, overlap};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Broadphase, ProxyError, ProxyId, ProxyMove, Ray};

/// The largest coordinate magnitude a proxy box may have. Far beyond any game world; it keeps
/// every surface area (the SAH's currency) finite in f32.
pub const MAX_COORD: f32 = 1.0e9;

/// How proxies' fat boxes are made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeConfig {
    /// Added on every side of a proxy's box when its fat box is (re)made, in world units.
    /// Default 0.04, the skin rapier gives its broadphase boxes (on the suite's scenes 0.1 made
    /// every cell's frames slower: more candidate pairs for no fewer tree updates). Negative or
    /// non-finite values are clamped to 0. Static proxies start with their tight box as their
    /// fat box: a margin only pays for motion.
    pub margin: f32,
    /// The fat box also reaches `displacement_factor × displacement` ahead along the motion
    /// hint given to [`Broadphase::move_proxy`], so fast movers leave it less often. Default 2.
    /// Negative or non-finite values are clamped to 0.
    pub displacement_factor: f32,
    /// [`DynamicAabbTree::update_pairs_parallel`] runs sequentially when fewer proxies than this
    /// moved since the last pair update: splitting the traversal into tasks and merging their
    /// pairs then costs more than the second thread saves. Default 262 144 (measured on 2 cores:
    /// with 100 000 boxes all moving the split traversal took 17.3 ms a frame, the sequential one
    /// 15.7). 0 always splits.
    pub parallel_min_moved: usize,
}

impl Default for TreeConfig {
    fn default() -> Self {
        TreeConfig { margin: 0.04, displacement_factor: 2.0, parallel_min_moved: 1 << 18 }
    }
}

/// Whether a proxy lives in the moving tree or the static one. Static–static pairs are never
/// visited: the static tree is only ever traversed against the moving one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProxyKind {
    /// A body that moves (the default of [`Broadphase::create_proxy`]).
    Dynamic,
    /// A body that rarely or never moves. It may still be moved; it then pairs with moving
    /// proxies as usual. Its leaf starts with its tight box, no margin (PERF: the suite's scenes
    /// with a tenth or a hundredth of the boxes moving, 7–10% less time a frame).
    Static,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    /// The user's data, or for a free slot the next free slot.
    pub(crate) user_data: u64,
    pub(crate) live: bool,
    pub(crate) kind: ProxyKind,
}

/// Statistics of one of the two trees.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeStats {
    /// Leaves (proxies).
    pub leaves: u32,
    /// Internal nodes in use (leaves live in their parents' child slots).
    pub nodes: usize,
    /// Height of the root (0 for a single leaf or an empty tree).
    pub height: u32,
    /// Sum of internal node surface areas over the root's: the SAH cost up to constants.
    pub sah_cost: f64,
    /// Bytes held by the node array and the leaf locations.
    pub bytes: usize,
}

/// Statistics of the whole broadphase.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DynamicTreeStats {
    /// Live proxies.
    pub proxies: u32,
    /// The moving tree.
    pub dynamic: TreeStats,
    /// The static tree.
    pub statics: TreeStats,
}

/// The dynamic AABB tree broadphase. See the crate docs.
#[derive(Clone, Debug)]
pub struct DynamicAabbTree {
    pub(crate) config: TreeConfig,
    pub(crate) dynamic: QuadTree,
    pub(crate) statics: QuadTree,
    pub(crate) slots: Vec<Slot>,
    /// Tight boxes by proxy id: pairs are tested on these; fat boxes only prune.
    pub(crate) tight: Vec<Aabb>,
    /// Fat boxes by proxy id, as the trees' leaves hold them. PERF: a move that stays inside its
    /// fat box then reads and writes only arrays indexed by id, not the leaf's node (a cache miss
    /// per move on big trees).
    pub(crate) fat: Vec<Aabb>,
    /// Proxies moved since the last pair update, once each (`queued` bit by id); their leaves
    /// are flagged in the trees when pairs are next updated, all at once.
    pub(crate) moved: Vec<u32>,
    pub(crate) queued: Vec<u64>,
    /// Scratch: `moved` split by tree.
    pub(crate) moved_kind: [Vec<u32>; 2],
    /// Per tree (by [`ProxyKind`]): `moved.len()` when a batch of moves refitted the whole tree
    /// and set its moved flags from `queued` ([`QuadTree::set_leaf_boxes`]); `usize::MAX` when
    /// none did since the last pair update.
    pub(crate) flagged_at: [usize; 2],
    pub(crate) free_slot: u32,
    pub(crate) live: u32,
    /// Scratch for [`Broadphase::move_proxies`]: new fat boxes by tree.
    pub(crate) refat: [Vec<(u32, Aabb)>; 2],
    /// Scratch for pair updates.
    pub(crate) stack: Vec<Task>,
    pub(crate) pairs: Vec<u64>,
    pub(crate) sort_scratch: Vec<u64>,
}

impl Default for DynamicAabbTree {
    fn default() -> Self {
        Self::new()
    }
}

/// Every move goes through here, so the common case is one branch-free test: NaN fails every
/// comparison, and the bounds exclude infinities.
#[inline]
pub(crate) fn check_box(aabb: Aabb) -> Result<Aabb, ProxyError> {
    let (lo, hi) = (&aabb.mins, &aabb.maxs);
    let ok = (-MAX_COORD <= lo.x)
        & (-MAX_COORD <= lo.y)
        & (-MAX_COORD <= lo.z)
        & (lo.x <= hi.x)
        & (lo.y <= hi.y)
        & (lo.z <= hi.z)
        & (hi.x <= MAX_COORD)
        & (hi.y <= MAX_COORD)
        & (hi.z <= MAX_COORD);
    if ok {
        return Ok(aabb);
    }
    // Say which rule failed.
    if !aabb.is_valid() {
        return Err(ProxyError::invalid(&aabb));
    }
    Err(ProxyError::OutOfRange { mins: aabb.mins.into(), maxs: aabb.maxs.into(), limit: MAX_COORD })
}

impl DynamicAabbTree {
    /// An empty broadphase with the default [`TreeConfig`].
    pub fn new() -> Self {
        Self::with_config(TreeConfig::default())
    }

    /// An empty broadphase; see [`TreeConfig`] for the clamps applied.
    pub fn with_config(config: TreeConfig) -> Self {
        let clamp = |v: f32| if v.is_finite() && v > 0.0 { v } else { 0.0 };
        let config = TreeConfig {
            margin: clamp(config.margin),
            displacement_factor: clamp(config.displacement_factor),
            ..config
        };
        DynamicAabbTree {
            config,
            dynamic: QuadTree::default(),
            statics: QuadTree::default(),
            slots: Vec::new(),
            tight: Vec::new(),
            fat: Vec::new(),
            moved: Vec::new(),
            queued: Vec::new(),
            moved_kind: [Vec::new(), Vec::new()],
            flagged_at: [usize::MAX; 2],
            free_slot: NULL,
            live: 0,
            refat: [Vec::new(), Vec::new()],
            stack: Vec::new(),
            pairs: Vec::new(),
            sort_scratch: Vec::new(),
        }
    }

    /// The configuration in use (after clamping).
    pub fn config(&self) -> TreeConfig {
        self.config
    }

    /// Live proxies.
    pub fn len(&self) -> usize {
        self.live as usize
    }

    /// No live proxy.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    fn tree_mut(&mut self, kind: ProxyKind) -> &mut QuadTree {
        match kind {
            ProxyKind::Dynamic => &mut self.dynamic,
            ProxyKind::Static => &mut self.statics,
        }
    }

    pub(crate) fn slot(&self, id: ProxyId) -> Result<Slot, ProxyError> {
        match self.slots.get(id.0 as usize) {
            Some(s) if s.live => Ok(*s),
            _ => Err(ProxyError::UnknownProxy(id.0)),
        }
    }

    pub(crate) fn fatten(&self, aabb: &Aabb, displacement: &Vector3<f32>) -> Aabb {
        let mut fat = aabb.loosened(self.config.margin);
        // Branch-free: the sign of each component is a coin flip to a branch predictor.
        for k in 0..3 {
            let d = displacement[k] * self.config.displacement_factor;
            let d = if d.is_finite() { d.clamp(-MAX_COORD, MAX_COORD) } else { 0.0 };
            fat.mins[k] += d.min(0.0);
            fat.maxs[k] += d.max(0.0);
        }
        fat
    }

    /// Adds a proxy of the given kind; [`ProxyError::InvalidAabb`] for NaN, infinite, inverted or
    /// absurdly large boxes (beyond [`MAX_COORD`]).
    pub fn create_proxy_of_kind(
        &mut self,
        aabb: Aabb,
        user_data: u64,
        kind: ProxyKind,
    ) -> Result<ProxyId, ProxyError> {
        let aabb = check_box(aabb)?;
        if self.free_slot == NULL && self.slots.len() >= MAX_ITEMS as usize {
            return Err(ProxyError::CapacityExceeded { limit: MAX_ITEMS as u64 });
        }
        let (id, fat) = self.claim(aabb, user_data, kind);
        self.tree_mut(kind).insert(fat, id);
        Ok(ProxyId(id))
    }

    /// Adds many proxies of one kind, `(box, user data)` each, and returns their ids in order:
    /// the ids, pairs and queries are those of calling [`DynamicAabbTree::create_proxy_of_kind`] for each in
    /// turn. When the batch is at least a quarter of its tree after, the tree is rebuilt over
    /// all its leaves at once (a bulk binned-SAH build) rather than inserting each: loading a
    /// scene of 10k–100k boxes this way took half the time or less, and the tree is then a
    /// fresh build's. All or
    /// nothing: on an invalid box ([`ProxyError::InBatch`] naming the box) or
    /// when live proxies would exceed 2^30 − 1 ([`ProxyError::CapacityExceeded`]), nothing is
    /// created.
    pub fn create_proxies(
        &mut self,
        proxies: &[(Aabb, u64)],
        kind: ProxyKind,
    ) -> Result<Vec<ProxyId>, ProxyError> {
        for (i, &(aabb, _)) in proxies.iter().enumerate() {
            check_box(aabb).map_err(|e| ProxyError::InBatch { index: i, source: Box::new(e) })?;
        }
        // Ids come off the free list first, then new slots: live + batch bounds the slots.
        if self.live as usize + proxies.len() > MAX_ITEMS as usize {
            return Err(ProxyError::CapacityExceeded { limit: MAX_ITEMS as u64 });
        }
        let mut leaves = Vec::with_capacity(proxies.len());
        let ids = proxies
            .iter()
            .map(|&(aabb, user_data)| {
                let (id, fat) = self.claim(aabb, user_data, kind);
                leaves.push((fat, id));
                ProxyId(id)
            })
            .collect();
        self.tree_mut(kind).insert_many(&leaves);
        Ok(ids)
    }

    /// Takes a slot for a proxy with a checked box (capacity checked by the caller), records
    /// it and queues it as moved; returns its id and fat box, for the caller to put in its tree.
    fn claim(&mut self, aabb: Aabb, user_data: u64, kind: ProxyKind) -> (u32, Aabb) {
        let id = if self.free_slot != NULL {
            let id = self.free_slot;
            self.free_slot = self.slots[id as usize].user_data as u32;
            id
        } else {
            self.slots.push(Slot { user_data: 0, live: false, kind });
            self.tight.push(aabb);
            self.fat.push(aabb);
            if self.slots.len() > self.queued.len() * 64 {
                self.queued.push(0);
            }
            self.slots.len() as u32 - 1
        };
        let fat = match kind {
            ProxyKind::Static => aabb,
            ProxyKind::Dynamic => self.fatten(&aabb, &Vector3::zeros()),
        };
        self.fat[id as usize] = fat;
        self.slots[id as usize] = Slot { user_data, live: true, kind };
        self.tight[id as usize] = aabb;
        self.live += 1;
        self.queue(id);
        (id, fat)
    }

    /// Adds a static proxy: see [`ProxyKind::Static`].
    pub fn create_static_proxy(&mut self, aabb: Aabb, user_data: u64) -> Result<ProxyId, ProxyError> {
        self.create_proxy_of_kind(aabb, user_data, ProxyKind::Static)
    }

    /// The proxy's kind.
    pub fn kind(&self, id: ProxyId) -> Option<ProxyKind> {
        self.slot(id).ok().map(|s| s.kind)
    }

    /// The proxy's tight box, as last given.
    pub fn aabb(&self, id: ProxyId) -> Option<Aabb> {
        self.slot(id).ok().map(|_| self.tight[id.0 as usize])
    }

    /// The proxy's fat box: the leaf box the tree holds.
    pub fn fat_aabb(&self, id: ProxyId) -> Option<Aabb> {
        self.slot(id).ok().map(|_| self.fat[id.0 as usize])
    }

    /// Calls `visit` for every proxy whose box contains `p`; false stops.
    pub fn query_point(&self, p: &Point3<f32>, visit: &mut dyn FnMut(ProxyId) -> bool) {
        let probe = Aabb::new(*p, *p);
        self.query_aabb(&probe, visit);
    }

    /// Rebuilds both trees from scratch by binned SAH (proxy ids and fat boxes are kept).
    pub fn rebuild(&mut self) {
        for tree in [&mut self.dynamic, &mut self.statics] {
            tree.rebuild_full();
        }
    }

    /// Does the trees' pending upkeep now: a rebuild's next slice, or a rebuild started when
    /// their quality drifted. Pair updates do this themselves; call it to measure or validate the
    /// trees between them.
    pub fn flush(&mut self) {
        for tree in [&mut self.dynamic, &mut self.statics] {
            tree.maintain();
        }
    }

    /// Rebuilds, in both trees, the nodes that grew in place since they were built (a partial
    /// rebuild, Box2D v3's): a move that left its fat box grew the leaf's ancestors up to the
    /// first that held it, and here each such grown region is split again by binned SAH over its
    /// untouched children (leaves and whole subtrees). Call it after moving a few proxies far
    /// (teleports, respawns): in a test, a box moved across a 1024-box tree had raised its SAH
    /// cost 1.36×, and after this it was 1.06× a full rebuild's. Pair updates do not run it on
    /// their own: where many boxes move, the background full rebuilds keep quality, and rebuilt
    /// nodes leave the depth-first layout that refits and the pair traversal rely on (run before
    /// every pair update it cost the suite's 100k-box all-moving frame 7–15%).
    pub fn rebuild_partial(&mut self) {
        self.dynamic.rebuild_grown();
        self.statics.rebuild_grown();
    }

    /// Tree statistics.
    pub fn stats(&self) -> DynamicTreeStats {
        let t = |tree: &QuadTree| TreeStats {
            leaves: tree.leaf_count(),
            nodes: tree.node_count(),
            height: tree.height(),
            sah_cost: tree.sah_cost(),
            bytes: tree.bytes(),
        };
        DynamicTreeStats { proxies: self.live, dynamic: t(&self.dynamic), statics: t(&self.statics) }
    }

    /// The moving tree's SAH cost over that of a fresh full binned-SAH rebuild of the same fat
    /// boxes: 1 is as good as a rebuild; the tree may also beat it (ratios below 1).
    pub fn area_ratio(&self) -> f64 {
        let mut fresh = self.dynamic.clone();
        fresh.rebuild_full();
        let (now, best) = (self.dynamic.sah_cost(), fresh.sah_cost());
        if best > 0.0 { now / best } else { 1.0 }
    }

    /// Checks every invariant: parent links, boxes containing their children, heights, moved
    /// flags, the free lists, and each leaf against its proxy (id, kind, fat box holding the tight
    /// box). For tests; O(n).
    pub fn validate(&self) -> Result<(), InvalidTree> {
        for (kind, tree) in [(ProxyKind::Dynamic, &self.dynamic), (ProxyKind::Static, &self.statics)] {
            tree.validate(&mut |item, fat| {
                let s = self
                    .slots
                    .get(item as usize)
                    .ok_or(InvalidTree::ProxyNotHere { proxy: item, live: false })?;
                if !s.live || s.kind != kind {
                    return Err(InvalidTree::ProxyNotHere { proxy: item, live: s.live });
                }
                if !fat.contains(&self.tight[item as usize]) {
                    return Err(InvalidTree::FatMissesTight { proxy: item });
                }
                if *fat != self.fat[item as usize] {
                    return Err(InvalidTree::LeafNotFat { proxy: item });
                }
                Ok(())
            })?;
        }
        let live = self.slots.iter().filter(|s| s.live).count();
        if live != self.live as usize
            || live != (self.dynamic.leaf_count() + self.statics.leaf_count()) as usize
        {
            return Err(InvalidTree::LiveCount { slots: live, counted: self.live });
        }
        Ok(())
    }
}

impl Broadphase for DynamicAabbTree {
    fn create_proxy(&mut self, aabb: Aabb, user_data: u64) -> Result<ProxyId, ProxyError> {
        self.create_proxy_of_kind(aabb, user_data, ProxyKind::Dynamic)
    }

    fn destroy_proxy(&mut self, id: ProxyId) -> Result<(), ProxyError> {
        let s = self.slot(id)?;
        self.tree_mut(s.kind).remove(id.0);
        self.slots[id.0 as usize] = Slot { user_data: u64::from(self.free_slot), live: false, kind: s.kind };
        self.free_slot = id.0;
        self.live -= 1;
        Ok(())
    }

    fn move_proxy(&mut self, id: ProxyId, aabb: Aabb, displacement: Vector3<f32>) -> Result<(), ProxyError> {
        if let Some((kind, fat)) = self.move_one(id, aabb, displacement)? {
            self.tree_mut(kind).set_leaf_box(id.0, fat);
        }
        Ok(())
    }

    /// Many moves settle the trees once: when many leaves leave their fat boxes, their new boxes
    /// are written with prefetches and every internal box refitted in one pass, instead of each
    /// leaf walking up its ancestors (a cache miss a level on big trees). The pair update would
    /// have refitted the tree anyway.
    fn move_proxies(&mut self, moves: &[ProxyMove]) -> Result<(), ProxyError> {
        let mut refat = std::mem::take(&mut self.refat);
        refat.iter_mut().for_each(Vec::clear);
        let mut result = Ok(());
        for m in moves {
            match self.move_one(m.id, m.aabb, m.displacement) {
                Ok(Some((kind, fat))) => refat[kind as usize].push((m.id.0, fat)),
                Ok(None) => {}
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        // Applied on error too: the moves before it stand. A tree refitted whole also took its
        // moved flags from the proxies queued so far.
        let queued = &self.queued;
        let is_queued = |id: u32| is_set(queued, id);
        for (kind, tree) in [(ProxyKind::Dynamic, &mut self.dynamic), (ProxyKind::Static, &mut self.statics)]
        {
            if tree.set_leaf_boxes(&refat[kind as usize], is_queued) {
                self.flagged_at[kind as usize] = self.moved.len();
            }
        }
        self.refat = refat;
        result
    }

    fn user_data(&self, id: ProxyId) -> Option<u64> {
        self.slot(id).ok().map(|s| s.user_data)
    }

    fn update_pairs(&mut self, report: &mut dyn FnMut(ProxyId, ProxyId)) {
        self.collect_pairs(false);
        for &k in &self.pairs {
            report(ProxyId((k >> 32) as u32), ProxyId(k as u32));
        }
    }

    fn query_aabb(&self, aabb: &Aabb, visit: &mut dyn FnMut(ProxyId) -> bool) {
        let tight = &self.tight;
        let mut f = |item: u32| !overlap(&tight[item as usize], aabb) || visit(ProxyId(item));
        if self.dynamic.query(aabb, &mut f) {
            self.statics.query(aabb, &mut f);
        }
    }

    fn cast_ray(&self, ray: &Ray, max_t: f32, visit: &mut dyn FnMut(ProxyId, &Ray, f32) -> f32) {
        let inv = ray.dir.map(|d| 1.0 / d);
        let tight = &self.tight;
        let mut f = |item: u32, limit: f32| match tight[item as usize].clip_ray_inv(&ray.origin, &inv, limit)
        {
            Some(_) => visit(ProxyId(item), ray, limit),
            None => limit,
        };
        let limit = self.dynamic.cast_ray(&ray.origin, &inv, max_t, &mut f);
        if limit > 0.0 {
            self.statics.cast_ray(&ray.origin, &inv, limit, &mut f);
        }
    }
}

/// Bit `id` of a bit set stored as 64-bit words.
#[inline(always)]
pub(crate) fn is_set(bits: &[u64], id: u32) -> bool {
    bits[id as usize / 64] >> (id % 64) & 1 != 0
}
