//! [`DynamicAabbTree`]: proxies with fat boxes in two trees (moving and static), incremental pairs,
//! queries, and core's [`Broadphase`] trait.

use crate::tree::{ITEM_MASK, LEAF_MOVED, MAX_ITEMS, MOVED_ANY, NULL, Node, Tree, is_node, overlap};
use rayon::prelude::*;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, Broadphase, CoreError, ProxyId, Ray};

/// The largest coordinate magnitude a proxy box may have. Far beyond any game world; it keeps
/// every surface area (the SAH's currency) finite in f32.
pub const MAX_COORD: f32 = 1.0e9;

/// How proxies' fat boxes are made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeConfig {
    /// Added on every side of a proxy's box when its fat box is (re)made, in world units.
    /// Default 0.1. Negative or non-finite values are clamped to 0.
    pub margin: f32,
    /// The fat box also reaches `displacement_factor × displacement` ahead along the motion
    /// hint given to [`Broadphase::move_proxy`], so fast movers leave it less often. Default 2.
    /// Negative or non-finite values are clamped to 0.
    pub displacement_factor: f32,
    /// [`DynamicAabbTree::update_pairs_parallel`] runs sequentially when fewer proxies than this
    /// moved since the last pair update: splitting the traversal into tasks and merging their
    /// pairs then costs more than the second thread saves. Default 32 768 (measured on 2 cores:
    /// the parallel path paid off only with 100 000 boxes all moving). 0 always splits.
    pub parallel_min_moved: usize,
}

impl Default for TreeConfig {
    fn default() -> Self {
        TreeConfig { margin: 0.1, displacement_factor: 2.0, parallel_min_moved: 1 << 15 }
    }
}

/// Whether a proxy lives in the moving tree or the static one. Static–static pairs are never
/// visited: the static tree is only ever traversed against the moving one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ProxyKind {
    /// A body that moves (the default of [`Broadphase::create_proxy`]).
    Dynamic,
    /// A body that rarely or never moves. It may still be moved; it then pairs with moving
    /// proxies as usual.
    Static,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The user's data, or for a free slot the next free slot.
    user_data: u64,
    live: bool,
    kind: ProxyKind,
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
pub struct Stats {
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
    config: TreeConfig,
    dynamic: Tree,
    statics: Tree,
    slots: Vec<Slot>,
    /// Tight boxes by proxy id: pairs are tested on these; fat boxes only prune.
    tight: Vec<Aabb>,
    /// Fat boxes by proxy id, as the trees' leaves hold them. PERF: a move that stays inside its
    /// fat box then reads and writes only arrays indexed by id, not the leaf's node (a cache miss
    /// per move on big trees).
    fat: Vec<Aabb>,
    /// Proxies moved since the last pair update, once each (`queued` bit by id); their leaves
    /// are flagged in the trees when pairs are next updated, all at once.
    moved: Vec<u32>,
    queued: Vec<u64>,
    /// Scratch: `moved` split by tree.
    moved_kind: [Vec<u32>; 2],
    free_slot: u32,
    live: u32,
    /// Scratch for pair updates.
    stack: Vec<(u32, u32)>,
    pairs: Vec<u64>,
}

impl Default for DynamicAabbTree {
    fn default() -> Self {
        Self::new()
    }
}

/// Every move goes through here, so the common case is one branch-free test: NaN fails every
/// comparison, and the bounds exclude infinities.
#[inline]
fn check_box(aabb: Aabb) -> Result<Aabb, CoreError> {
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
    Aabb::try_new(aabb.mins, aabb.maxs)?;
    Err(CoreError::InvalidAabb(format!("{lo:?}..{hi:?} reaches beyond ±{MAX_COORD:e}")))
}

#[inline]
fn pair_key(a: u32, b: u32) -> u64 {
    let (lo, hi) = if a < b { (a, b) } else { (b, a) };
    (u64::from(lo) << 32) | u64::from(hi)
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
            dynamic: Tree::default(),
            statics: Tree::default(),
            slots: Vec::new(),
            tight: Vec::new(),
            fat: Vec::new(),
            moved: Vec::new(),
            queued: Vec::new(),
            moved_kind: [Vec::new(), Vec::new()],
            free_slot: NULL,
            live: 0,
            stack: Vec::new(),
            pairs: Vec::new(),
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

    fn tree_mut(&mut self, kind: ProxyKind) -> &mut Tree {
        match kind {
            ProxyKind::Dynamic => &mut self.dynamic,
            ProxyKind::Static => &mut self.statics,
        }
    }

    fn slot(&self, id: ProxyId) -> Result<Slot, CoreError> {
        match self.slots.get(id.0 as usize) {
            Some(s) if s.live => Ok(*s),
            _ => Err(CoreError::UnknownProxy(id.0)),
        }
    }

    fn fatten(&self, aabb: &Aabb, displacement: &Vector3<f32>) -> Aabb {
        let mut fat = aabb.loosened(self.config.margin);
        for k in 0..3 {
            let d = displacement[k] * self.config.displacement_factor;
            let d = if d.is_finite() { d.clamp(-MAX_COORD, MAX_COORD) } else { 0.0 };
            if d < 0.0 {
                fat.mins[k] += d;
            } else {
                fat.maxs[k] += d;
            }
        }
        fat
    }

    /// Adds a proxy of the given kind; [`CoreError::InvalidAabb`] for NaN, infinite, inverted or
    /// absurdly large boxes (beyond [`MAX_COORD`]).
    pub fn create(&mut self, aabb: Aabb, user_data: u64, kind: ProxyKind) -> Result<ProxyId, CoreError> {
        let aabb = check_box(aabb)?;
        let id = if self.free_slot != NULL {
            let id = self.free_slot;
            self.free_slot = self.slots[id as usize].user_data as u32;
            id
        } else {
            if self.slots.len() >= MAX_ITEMS as usize {
                return Err(CoreError::CapacityExceeded(format!("at most {MAX_ITEMS} proxies")));
            }
            self.slots.push(Slot { user_data: 0, live: false, kind });
            self.tight.push(aabb);
            self.fat.push(aabb);
            if self.slots.len() > self.queued.len() * 64 {
                self.queued.push(0);
            }
            self.slots.len() as u32 - 1
        };
        let fat = self.fatten(&aabb, &Vector3::zeros());
        self.tree_mut(kind).insert(fat, id);
        self.fat[id as usize] = fat;
        self.slots[id as usize] = Slot { user_data, live: true, kind };
        self.tight[id as usize] = aabb;
        self.live += 1;
        Ok(ProxyId(id))
    }

    /// Adds a static proxy: see [`ProxyKind::Static`].
    pub fn create_static_proxy(&mut self, aabb: Aabb, user_data: u64) -> Result<ProxyId, CoreError> {
        self.create(aabb, user_data, ProxyKind::Static)
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

    /// Collects every pair of overlapping proxies of which at least one moved, as sorted keys.
    fn collect_pairs(&mut self, parallel: bool) {
        let parallel = parallel && self.moved.len() >= self.config.parallel_min_moved;
        self.flush();
        self.flag_moved();
        let mut pairs = std::mem::take(&mut self.pairs);
        pairs.clear();
        let (dn, sn, tight) = (&self.dynamic.nodes[..], &self.statics.nodes[..], &self.tight[..]);
        let mut tasks: Vec<Task> = Vec::new();
        // Roots are always internal nodes (a root may hold a single leaf): start there.
        if self.dynamic.root != NULL {
            let root = self.dynamic.root;
            tasks.push(Task { a: root, b: root, cross: false });
            if self.statics.root != NULL {
                tasks.push(Task { a: root, b: self.statics.root, cross: true });
            }
        }
        if parallel && rayon::current_num_threads() > 1 {
            // Split the top of the traversal into independent tasks, breadth first.
            let target = 16 * rayon::current_num_threads();
            let mut next = Vec::new();
            for _ in 0..12 {
                if tasks.len() >= target || tasks.is_empty() {
                    break;
                }
                next.clear();
                for t in &tasks {
                    let bn = if t.cross { sn } else { dn };
                    visit(
                        t.a,
                        t.b,
                        t.cross,
                        dn,
                        bn,
                        tight,
                        &mut |a, b| next.push(Task { a, b, ..*t }),
                        &mut pairs,
                    );
                }
                std::mem::swap(&mut tasks, &mut next);
            }
            let parts: Vec<Vec<u64>> = tasks
                .par_iter()
                .map(|&t| {
                    let (mut stack, mut out) = (Vec::new(), Vec::new());
                    run(t, dn, sn, tight, &mut stack, &mut out);
                    out
                })
                .collect();
            for p in parts {
                pairs.extend_from_slice(&p);
            }
            pairs.par_sort_unstable();
        } else {
            let mut stack = std::mem::take(&mut self.stack);
            for &t in &tasks {
                run(t, dn, sn, tight, &mut stack, &mut pairs);
            }
            self.stack = stack;
            pairs.sort_unstable();
        }
        self.pairs = pairs;
        self.dynamic.clear_moved();
        self.statics.clear_moved();
    }

    /// Flags the leaves of the proxies moved since the last pair update (and their ancestors).
    fn flag_moved(&mut self) {
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
        let is_queued = |id: u32| queued[id as usize / 64] >> (id % 64) & 1 != 0;
        self.dynamic.mark_moved_many(dynamic, is_queued);
        self.statics.mark_moved_many(statics, is_queued);
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

    /// Rebuilds both trees from scratch by binned SAH (proxy ids and fat boxes are kept).
    pub fn rebuild(&mut self) {
        for tree in [&mut self.dynamic, &mut self.statics] {
            tree.rebuild_full();
            tree.compact();
        }
    }

    /// Settles pending in-place growth now (partial rebuilds). Pair updates do this themselves;
    /// call it to measure or validate the tree between them.
    pub fn flush(&mut self) {
        self.dynamic.rebuild_pending();
        self.statics.rebuild_pending();
        // Once rebuilds have scattered a tree's nodes, lay it out again in traversal order.
        for tree in [&mut self.dynamic, &mut self.statics] {
            if tree.wants_compaction() {
                tree.compact();
            }
        }
    }

    /// Tree statistics.
    pub fn stats(&self) -> Stats {
        let t = |tree: &Tree| TreeStats {
            leaves: tree.leaf_count(),
            nodes: tree.node_count(),
            height: tree.height(),
            sah_cost: tree.sah_cost(),
            bytes: tree.bytes(),
        };
        Stats { proxies: self.live, dynamic: t(&self.dynamic), statics: t(&self.statics) }
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
    pub fn validate(&self) -> Result<(), String> {
        for (kind, tree) in [(ProxyKind::Dynamic, &self.dynamic), (ProxyKind::Static, &self.statics)] {
            tree.validate(&mut |item, fat| {
                let s = self.slots.get(item as usize).ok_or(format!("proxy {item} out of range"))?;
                if !s.live || s.kind != kind {
                    return Err(format!(
                        "proxy {item} (live {}, {:?}) has a leaf in the {kind:?} tree",
                        s.live, s.kind
                    ));
                }
                if !fat.contains(&self.tight[item as usize]) {
                    return Err(format!("proxy {item}: fat box does not contain the tight box"));
                }
                if *fat != self.fat[item as usize] {
                    return Err(format!("proxy {item}: the leaf's box is not the proxy's fat box"));
                }
                Ok(())
            })?;
        }
        let live = self.slots.iter().filter(|s| s.live).count();
        if live != self.live as usize
            || live != (self.dynamic.leaf_count() + self.statics.leaf_count()) as usize
        {
            return Err(format!("{live} live slots, {} counted", self.live));
        }
        Ok(())
    }
}

/// One unit of pair traversal: a subtree against itself (`a == b`, same tree, an internal node),
/// or two references whose boxes overlap and one of which moved (`cross`: `a` in the moving tree,
/// `b` in the static one). A reference is an internal node, or `LEAF | item` with `LEAF_MOVED`
/// when that leaf moved; two leaves are never a unit (they are tested on the spot).
#[derive(Clone, Copy, Debug)]
struct Task {
    a: u32,
    b: u32,
    cross: bool,
}

/// Slot `s` of `n` as a traversal reference (a leaf carries its moved bit).
#[inline(always)]
fn child_ref(n: &Node, s: usize) -> u32 {
    let c = n.child[s];
    if !is_node(c) && n.moved(s) { c | LEAF_MOVED } else { c }
}

/// Runs a task to the end (its pair already checked, as every pair on the stack is).
fn run(t: Task, dn: &[Node], sn: &[Node], tight: &[Aabb], stack: &mut Vec<(u32, u32)>, out: &mut Vec<u64>) {
    let bn = if t.cross { sn } else { dn };
    stack.clear();
    stack.push((t.a, t.b));
    while let Some((a, b)) = stack.pop() {
        visit(
            a,
            b,
            t.cross,
            dn,
            bn,
            tight,
            &mut |x, y| {
                // Pairs wait on the stack: their nodes' lines arrive meanwhile (PERF: 100k boxes,
                // all moving or a tenth, 5–7% less time a frame).
                if is_node(x) {
                    prefetch_index::prefetch_index(dn, x as usize);
                }
                if is_node(y) {
                    prefetch_index::prefetch_index(bn, y as usize);
                }
                stack.push((x, y))
            },
            out,
        );
    }
}

/// Visits one unit (see [`Task`]). Every child pair is tested (moved bits, overlap) before it is
/// `push`ed, and leaf–leaf pairs are tested on the spot, so only pairs worth a visit are pushed.
/// Both children's boxes sit in their parent node, so a visit loads at most two nodes.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn visit(
    a: u32,
    b: u32,
    cross: bool,
    dn: &[Node],
    bn: &[Node],
    tight: &[Aabb],
    push: &mut impl FnMut(u32, u32),
    out: &mut Vec<u64>,
) {
    // A child pair that passed its test: descend later, or decide two leaves now.
    macro_rules! pair {
        ($x:expr, $y:expr) => {{
            let (x, y) = ($x, $y);
            if is_node(x) || is_node(y) {
                push(x, y);
            } else {
                emit(x, y, tight, out);
            }
        }};
    }
    if !cross && a == b {
        let n = &dn[a as usize];
        // Only moved inner children can hold pairs within themselves.
        for s in 0..2 {
            if n.moved(s) && is_node(n.child[s]) {
                push(n.child[s], n.child[s]);
            }
        }
        if n.flags & MOVED_ANY != 0 && overlap(&n.boxes[0], &n.boxes[1]) {
            pair!(child_ref(n, 0), child_ref(n, 1));
        }
        return;
    }
    match (is_node(a), is_node(b)) {
        (true, true) => {
            let (na, nb) = (&dn[a as usize], &bn[b as usize]);
            for i in 0..2 {
                for j in 0..2 {
                    if (na.moved(i) | nb.moved(j)) && overlap(&na.boxes[i], &nb.boxes[j]) {
                        pair!(child_ref(na, i), child_ref(nb, j));
                    }
                }
            }
        }
        (false, true) => {
            // A leaf prunes with its tight box: pairs are decided on tight boxes anyway.
            let (moved, ta, nb) = (a & LEAF_MOVED != 0, &tight[(a & ITEM_MASK) as usize], &bn[b as usize]);
            for j in 0..2 {
                if (moved | nb.moved(j)) && overlap(ta, &nb.boxes[j]) {
                    pair!(a, child_ref(nb, j));
                }
            }
        }
        (true, false) => {
            let (moved, tb, na) = (b & LEAF_MOVED != 0, &tight[(b & ITEM_MASK) as usize], &dn[a as usize]);
            for i in 0..2 {
                if (moved | na.moved(i)) && overlap(&na.boxes[i], tb) {
                    pair!(child_ref(na, i), b);
                }
            }
        }
        (false, false) => debug_assert!(false, "leaf pairs are never pushed"),
    }
}

/// Two leaves (traversal references) whose boxes overlap: report them if their tight boxes do.
#[inline(always)]
fn emit(a: u32, b: u32, tight: &[Aabb], out: &mut Vec<u64>) {
    let (p, q) = (a & ITEM_MASK, b & ITEM_MASK);
    if overlap(&tight[p as usize], &tight[q as usize]) {
        out.push(pair_key(p, q));
    }
}

impl Broadphase for DynamicAabbTree {
    fn create_proxy(&mut self, aabb: Aabb, user_data: u64) -> Result<ProxyId, CoreError> {
        self.create(aabb, user_data, ProxyKind::Dynamic)
    }

    fn destroy_proxy(&mut self, id: ProxyId) -> Result<(), CoreError> {
        let s = self.slot(id)?;
        self.tree_mut(s.kind).remove(id.0);
        self.slots[id.0 as usize] = Slot { user_data: u64::from(self.free_slot), live: false, kind: s.kind };
        self.free_slot = id.0;
        self.live -= 1;
        Ok(())
    }

    fn move_proxy(&mut self, id: ProxyId, aabb: Aabb, displacement: Vector3<f32>) -> Result<(), CoreError> {
        let aabb = check_box(aabb)?;
        let s = self.slot(id)?;
        let i = id.0 as usize;
        self.tight[i] = aabb;
        let fat = self.fat[i];
        let new_fat = self.fatten(&aabb, &displacement);
        // Re-fatten when the box left its fat box, or when the fat box is far too big for it
        // (a fast mover that slowed down); otherwise the tree is not touched.
        let too_big = !new_fat.loosened(4.0 * self.config.margin).contains(&fat);
        if !fat.contains(&aabb) || too_big {
            self.tree_mut(s.kind).set_leaf_box(id.0, new_fat);
            self.fat[i] = new_fat;
        }
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        if self.queued[word] & bit == 0 {
            self.queued[word] |= bit;
            self.moved.push(id.0);
        }
        Ok(())
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
