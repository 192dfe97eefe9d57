//! The ray index over the physics chunks: one box per chunk that may hold triangles, in a 4-wide
//! bounding volume hierarchy, so a ray reaches the chunks it can hit without stepping a grid or
//! looking each neighbor up.
//!
//! A built chunk's box is its triangles' bounds (a hair looser than the kD tree's clip margin, so
//! no hit is ever skipped); a chunk not built yet — or built and then edited — has the
//! conservative box its masks allow: the chunk grown by the geometry's spill. A chunk whose masks
//! show no solid, or whose padded read is all solid material on one side of the surface, or that
//! was built without triangles, has no box. So the index holds every chunk a ray could hit,
//! whatever the cache holds: an answer never depends on it, only the time does.
//!
//! The tree lives beside the cache's entries under the cache's lock: a chunk's insert tightens its
//! box, an edit's invalidation loosens it again (see `CollisionCache::refresh_tree`). A changed box
//! is written into its node and refitted up the tree; a few new chunks are inserted one by one (the
//! child that grows least, down to a free slot or a new node), many at once (a world's load, a
//! page of chunks) rebuild the tree by the surface-area heuristic, as do insertions and removals
//! reaching half its size. A box changed in place is only refitted: a rebuild each time half the
//! boxes moved (tightened by builds, loosened by edits) cost edits 12% and rays nothing.
//!
//! PERF: the workspace's dynamic AABB tree casts rays as fast, but keeps each box four times
//! (tight, fat, leaf and node) beside its slot: ~300 bytes a chunk on the default world, against
//! ~110 here, which the memory budget per triangle cannot carry.

use crate::reach::SURFACE_SPILL;
use voxterra_bit_broadphase::{BitBroadphase, ChunkState};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Aabb, PhysicsChunkKey, Ray, Region, VoxelRead};
use wide::f32x4;

/// A built chunk's box: its triangles' bounds grown by this much (voxels) and a few ulps of
/// their coordinates, past the kD tree's own clip margin.
const BOUNDS_SLACK: f32 = 1e-3;

/// Changes a tree absorbs beyond its size's share before a rebuild.
const EXTRA_MAX: usize = 64;

/// A child reference: a leaf (chunk) index with this bit, a node index without; `EMPTY` for none.
const LEAF: u32 = 1 << 31;
const EMPTY: u32 = u32::MAX;
/// A leaf's place: `node << 2 | slot`, or one of these.
const IN_EXTRA: u32 = u32::MAX - 1;
const FREE: u32 = u32::MAX;

type KeyMap<V> = hashbrown::HashMap<PhysicsChunkKey, V, foldhash::fast::FixedState>;

/// Four children's boxes as lanes (an empty slot: `lo` +∞, `hi` −∞, never entered).
#[derive(Clone, Copy)]
struct Node {
    lo: [[f32; 4]; 3],
    hi: [[f32; 4]; 3],
    child: [u32; 4],
    /// `parent << 2 | slot`; `EMPTY` for the root.
    up: u32,
}

impl Node {
    fn empty(up: u32) -> Self {
        Node { lo: [[f32::INFINITY; 4]; 3], hi: [[f32::NEG_INFINITY; 4]; 3], child: [EMPTY; 4], up }
    }

    fn set(&mut self, slot: usize, b: &Aabb) {
        for a in 0..3 {
            self.lo[a][slot] = b.mins[a];
            self.hi[a][slot] = b.maxs[a];
        }
    }

    fn clear(&mut self, slot: usize) {
        self.child[slot] = EMPTY;
        for a in 0..3 {
            self.lo[a][slot] = f32::INFINITY;
            self.hi[a][slot] = f32::NEG_INFINITY;
        }
    }

    fn get(&self, slot: usize) -> Aabb {
        Aabb::new(
            Point3::new(self.lo[0][slot], self.lo[1][slot], self.lo[2][slot]),
            Point3::new(self.hi[0][slot], self.hi[1][slot], self.hi[2][slot]),
        )
    }

    /// The union of the present slots (an inverted box when none is).
    fn union(&self) -> Aabb {
        let mut lo = Vector3::repeat(f32::INFINITY);
        let mut hi = Vector3::repeat(f32::NEG_INFINITY);
        for a in 0..3 {
            for s in 0..4 {
                if self.child[s] != EMPTY {
                    lo[a] = lo[a].min(self.lo[a][s]);
                    hi[a] = hi[a].max(self.hi[a][s]);
                }
            }
        }
        Aabb::new(lo.into(), hi.into())
    }
}

/// The boxes of the chunks a ray may hit (voxel units).
pub(crate) struct ChunkTree {
    nodes: Vec<Node>,
    /// The root node; `EMPTY` when no chunk is in the tree.
    root: u32,
    /// Per leaf: its chunk and place (`node << 2 | slot`, `IN_EXTRA` or `FREE`).
    leaves: Vec<(PhysicsChunkKey, u32)>,
    free: Vec<u32>,
    index: KeyMap<u32>,
    /// Leaves new in the current `set_many`, with their boxes (empty between calls).
    extra: Vec<(u32, Aabb)>,
    /// Tree slots emptied since the last build.
    dead: usize,
    /// Leaves inserted one by one since the last build.
    churn: usize,
}

impl Default for ChunkTree {
    fn default() -> Self {
        ChunkTree {
            nodes: Vec::new(),
            root: EMPTY,
            leaves: Vec::new(),
            free: Vec::new(),
            index: KeyMap::default(),
            extra: Vec::new(),
            dead: 0,
            churn: 0,
        }
    }
}

impl std::fmt::Debug for ChunkTree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkTree").field("chunks", &self.len()).finish_non_exhaustive()
    }
}

/// The box a chunk's triangles may fill before it is built: the chunk grown by the spill.
pub(crate) fn conservative_box(key: PhysicsChunkKey) -> Aabb {
    let size = PhysicsChunkKey::SIZE as f32;
    let spill = SURFACE_SPILL as f32;
    let lo = key.to_point().map(|v| v as f32 * size - spill);
    Aabb::new(lo, lo.map(|v| v + size + 2.0 * spill))
}

/// A built chunk's box from its triangles' bounds.
pub(crate) fn tight_box(bounds: &Aabb) -> Aabb {
    let reach = bounds.mins.coords.amax().max(bounds.maxs.coords.amax());
    bounds.loosened(BOUNDS_SLACK + reach * 8.0 * f32::EPSILON)
}

/// Whether chunk `key` may hold triangles, by its masks and, for a chunk whose 10³ neighborhood
/// (its padded read) is all solid material, whether the voxels there straddle the mesher's inside
/// (an occupancy byte of 128): if none does, no edge the chunk owns crosses the surface.
pub(crate) fn may_hold_surface(
    masks: &BitBroadphase,
    src: &(impl VoxelRead + ?Sized),
    key: PhysicsChunkKey,
) -> bool {
    match masks.chunk(key) {
        Some(ChunkState::Masks(m)) => m.solid.iter().any(|&w| w != 0),
        Some(ChunkState::Solid) => {
            let Ok(r) = key.region() else { return false };
            let padded: Region = r.expanded(1);
            if src.uniform(&padded).is_some() {
                return false;
            }
            // PERF: material layers keep most deep chunks from reading as uniform; a thousand
            // voxels read here keep their boxes out of the tree (a third of the default world's).
            let (mut inside, mut outside) = (false, false);
            src.visit_rows(&padded, &mut |_, row| {
                for v in row {
                    let i = v.occupancy_byte() >= 128;
                    inside |= i;
                    outside |= !i;
                }
            });
            inside && outside
        }
        _ => false,
    }
}

/// Half a box's surface area.
fn half_area(lo: &Vector3<f32>, hi: &Vector3<f32>) -> f32 {
    let d = (hi - lo).map(|v| v.max(0.0));
    d.x * d.y + d.y * d.z + d.z * d.x
}

/// Sorts `items` (at least two) along the axis of their centres' largest spread and returns where
/// the surface-area heuristic splits them (both sides non-empty). Ties keep the incoming order.
fn sah_split(items: &mut [(u32, Aabb)], scratch: &mut Vec<f32>) -> usize {
    let centre = |b: &Aabb| b.mins.coords + b.maxs.coords;
    let (mut lo, mut hi) = (Vector3::repeat(f32::INFINITY), Vector3::repeat(f32::NEG_INFINITY));
    for (_, b) in items.iter() {
        let c = centre(b);
        lo = lo.inf(&c);
        hi = hi.sup(&c);
    }
    let axis = (hi - lo).imax();
    items.sort_by(|x, y| centre(&x.1)[axis].total_cmp(&centre(&y.1)[axis]));
    let n = items.len();
    // Areas of the prefixes, then the best split against the suffixes swept from the right.
    scratch.clear();
    let (mut l, mut h) = (Vector3::repeat(f32::INFINITY), Vector3::repeat(f32::NEG_INFINITY));
    for (_, b) in items.iter() {
        l = l.inf(&b.mins.coords);
        h = h.sup(&b.maxs.coords);
        scratch.push(half_area(&l, &h));
    }
    let (mut l, mut h) = (Vector3::repeat(f32::INFINITY), Vector3::repeat(f32::NEG_INFINITY));
    let (mut best, mut best_cost) = (n / 2, f32::INFINITY);
    for i in (1..n).rev() {
        let b = &items[i].1;
        l = l.inf(&b.mins.coords);
        h = h.sup(&b.maxs.coords);
        let cost = scratch[i - 1] * i as f32 + half_area(&l, &h) * (n - i) as f32;
        if cost < best_cost {
            (best, best_cost) = (i, cost);
        }
    }
    best
}

impl ChunkTree {
    /// Chunks with a box.
    pub(crate) fn len(&self) -> usize {
        self.index.len()
    }

    /// Heap bytes held.
    pub(crate) fn bytes(&self) -> usize {
        let key = std::mem::size_of::<PhysicsChunkKey>();
        // A hash map slot: the pair and a control byte.
        let slot = key + 4 + 1;
        self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.leaves.capacity() * (key + 4)
            + self.free.capacity() * 4
            + self.index.capacity() * slot
            + self.extra.capacity() * std::mem::size_of::<(u32, Aabb)>()
    }

    /// The chunks with a box, in no order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = PhysicsChunkKey> + '_ {
        self.index.keys().copied()
    }

    /// The box held for `key`, if any.
    pub(crate) fn get(&self, key: PhysicsChunkKey) -> Option<Aabb> {
        let &leaf = self.index.get(&key)?;
        match self.leaves[leaf as usize].1 {
            IN_EXTRA => self.extra.iter().find(|e| e.0 == leaf).map(|e| e.1),
            at => Some(self.nodes[(at >> 2) as usize].get((at & 3) as usize)),
        }
    }

    /// Sets each chunk's box (`None`: no box); rebuilds the tree after when many chunks came or
    /// went.
    pub(crate) fn set_many(&mut self, boxes: impl IntoIterator<Item = (PhysicsChunkKey, Option<Aabb>)>) {
        for (key, aabb) in boxes {
            match aabb {
                Some(b) => self.put(key, b),
                None => self.remove(key),
            }
        }
        // Many new chunks at once (a world's load, a page of chunks) are built over with the rest;
        // a few go in one by one, and the tree is rebuilt once as many changed as it holds
        // halves (amortized: a paging frame's chunks no longer rebuild the whole tree each).
        let live = self.index.len();
        if self.extra.len() > live / 4 + EXTRA_MAX {
            self.rebuild();
            return;
        }
        for (leaf, b) in std::mem::take(&mut self.extra) {
            self.insert(leaf, &b);
            self.churn += 1;
        }
        if self.dead + self.churn > live / 2 + EXTRA_MAX {
            self.rebuild();
        }
    }

    /// Puts `leaf` in the tree: into the first empty slot on its way down, each level taking the
    /// child whose box grows least, or beside the leaf it meets in a new node.
    fn insert(&mut self, leaf: u32, b: &Aabb) {
        if self.root == EMPTY {
            self.nodes.push(Node::empty(EMPTY));
            self.root = self.nodes.len() as u32 - 1;
        }
        let mut n = self.root as usize;
        loop {
            if let Some(s) = self.nodes[n].child.iter().position(|&c| c == EMPTY) {
                self.place(n, s, leaf, b);
                self.refit(n);
                return;
            }
            let node = &self.nodes[n];
            let growth = |s: usize| {
                let c = node.get(s);
                let (lo, hi) = (c.mins.coords.inf(&b.mins.coords), c.maxs.coords.sup(&b.maxs.coords));
                half_area(&lo, &hi) - half_area(&c.mins.coords, &c.maxs.coords)
            };
            let s = (0..4).min_by(|&x, &y| growth(x).total_cmp(&growth(y))).unwrap_or(0);
            let c = node.child[s];
            if c & LEAF != 0 {
                let old = node.get(s);
                let m = self.nodes.len();
                self.nodes.push(Node::empty((n as u32) << 2 | s as u32));
                self.place(m, 0, c & !LEAF, &old);
                self.place(m, 1, leaf, b);
                let u = self.nodes[m].union();
                self.nodes[n].child[s] = m as u32;
                self.nodes[n].set(s, &u);
                self.refit(n);
                return;
            }
            n = c as usize;
        }
    }

    fn place(&mut self, n: usize, s: usize, leaf: u32, b: &Aabb) {
        self.nodes[n].child[s] = LEAF | leaf;
        self.nodes[n].set(s, b);
        self.leaves[leaf as usize].1 = (n as u32) << 2 | s as u32;
    }

    fn put(&mut self, key: PhysicsChunkKey, b: Aabb) {
        let Some(&leaf) = self.index.get(&key) else {
            let leaf = match self.free.pop() {
                Some(l) => {
                    self.leaves[l as usize] = (key, IN_EXTRA);
                    l
                }
                None => {
                    self.leaves.push((key, IN_EXTRA));
                    self.leaves.len() as u32 - 1
                }
            };
            self.index.insert(key, leaf);
            self.extra.push((leaf, b));
            return;
        };
        match self.leaves[leaf as usize].1 {
            IN_EXTRA => {
                if let Some(e) = self.extra.iter_mut().find(|e| e.0 == leaf) {
                    e.1 = b;
                }
            }
            at => {
                let (n, s) = ((at >> 2) as usize, (at & 3) as usize);
                if self.nodes[n].get(s) != b {
                    self.nodes[n].set(s, &b);
                    self.refit(n);
                }
            }
        }
    }

    fn remove(&mut self, key: PhysicsChunkKey) {
        let Some(leaf) = self.index.remove(&key) else { return };
        match self.leaves[leaf as usize].1 {
            IN_EXTRA => self.extra.retain(|e| e.0 != leaf),
            at => {
                let (n, s) = ((at >> 2) as usize, (at & 3) as usize);
                self.nodes[n].clear(s);
                self.dead += 1;
                self.refit(n);
            }
        }
        self.leaves[leaf as usize].1 = FREE;
        self.free.push(leaf);
    }

    /// Brings the boxes above node `n` up to date with its slots.
    fn refit(&mut self, mut n: usize) {
        loop {
            let up = self.nodes[n].up;
            if up == EMPTY {
                return;
            }
            let u = self.nodes[n].union();
            let (p, s) = ((up >> 2) as usize, (up & 3) as usize);
            if self.nodes[p].get(s) == u {
                return;
            }
            self.nodes[p].set(s, &u);
            n = p;
        }
    }

    /// Rebuilds the tree over every chunk with a box, by the surface-area heuristic (two binary
    /// splits per node: four children).
    fn rebuild(&mut self) {
        let mut items: Vec<(u32, Aabb)> = Vec::with_capacity(self.index.len());
        for &leaf in self.index.values() {
            let at = self.leaves[leaf as usize].1;
            if at != IN_EXTRA {
                items.push((leaf, self.nodes[(at >> 2) as usize].get((at & 3) as usize)));
            }
        }
        items.append(&mut self.extra);
        // The map's order is arbitrary: start from key order, so the tree is the same whatever
        // order the chunks came in.
        let leaves = &self.leaves;
        items.sort_unstable_by_key(|&(leaf, _)| leaves[leaf as usize].0);
        self.nodes.clear();
        (self.dead, self.churn) = (0, 0);
        self.root = EMPTY;
        if !items.is_empty() {
            let mut scratch = Vec::with_capacity(items.len());
            self.root = self.build(&mut items, EMPTY, &mut scratch);
        }
        self.nodes.shrink_to_fit();
        self.extra.shrink_to_fit();
    }

    /// Builds the node over `items` (at least two) under `up`; returns its index.
    fn build(&mut self, items: &mut [(u32, Aabb)], up: u32, scratch: &mut Vec<f32>) -> u32 {
        let n = self.nodes.len();
        self.nodes.push(Node::empty(up));
        // Up to four runs: the items themselves when few, else two SAH splits.
        let mut runs: Vec<&mut [(u32, Aabb)]> = Vec::with_capacity(4);
        if items.len() <= 4 {
            runs.extend(items.chunks_mut(1));
        } else {
            let m = sah_split(items, scratch);
            let (l, r) = items.split_at_mut(m);
            for half in [l, r] {
                if half.len() >= 2 {
                    let m = sah_split(half, scratch);
                    let (a, b) = half.split_at_mut(m);
                    runs.push(a);
                    runs.push(b);
                } else {
                    runs.push(half);
                }
            }
        }
        for (s, run) in runs.into_iter().enumerate() {
            let place = (n as u32) << 2 | s as u32;
            if let [(leaf, b)] = run {
                self.nodes[n].child[s] = LEAF | *leaf;
                self.nodes[n].set(s, b);
                self.leaves[*leaf as usize].1 = place;
            } else {
                let c = self.build(run, place, scratch);
                let u = self.nodes[c as usize].union();
                self.nodes[n].child[s] = c;
                self.nodes[n].set(s, &u);
            }
        }
        n as u32
    }

    /// Calls `visit(chunk, limit)` for the chunks whose boxes `ray` enters within `[0, limit]`
    /// (by [`Aabb::clip_ray_inv`]'s arithmetic), those new since the last build first, then the
    /// tree's nearest box first; `visit` returns the new limit (a negative one stops: a limit of 0
    /// still visits the boxes holding the origin, for a hit at `t = 0`).
    pub(crate) fn cast(&self, ray: &Ray, max_t: f32, visit: &mut impl FnMut(PhysicsChunkKey, f32) -> f32) {
        let mut limit = max_t;
        let inv = ray.dir.map(|d| 1.0 / d);
        for &(leaf, b) in &self.extra {
            if limit >= 0.0 && b.clip_ray_inv(&ray.origin, &inv, limit).is_some() {
                limit = visit(self.leaves[leaf as usize].0, limit);
            }
        }
        if limit < 0.0 || self.root == EMPTY {
            return;
        }
        let o: [f32x4; 3] = std::array::from_fn(|a| f32x4::splat(ray.origin[a]));
        let id: [f32x4; 3] = std::array::from_fn(|a| f32x4::splat(inv[a]));
        let neg: [bool; 3] = std::array::from_fn(|a| inv[a] < 0.0);
        let mut stack = WalkStack::new((self.root, 0.0f32));
        loop {
            let Some((r, enter)) = stack.pop() else { return };
            if enter > limit {
                continue;
            }
            if r & LEAF != 0 && r != EMPTY {
                limit = visit(self.leaves[(r & !LEAF) as usize].0, limit);
                if limit < 0.0 {
                    return;
                }
                continue;
            }
            let n = &self.nodes[r as usize];
            let (mut t0, mut t1) = (f32x4::ZERO, f32x4::splat(limit));
            for a in 0..3 {
                let (lo, hi) = (f32x4::from(n.lo[a]), f32x4::from(n.hi[a]));
                let (near, far) = if neg[a] { (hi, lo) } else { (lo, hi) };
                // `maxps`/`minps` keep their second operand when the first is NaN: a NaN (the
                // origin on a face of a parallel ray) keeps the bound, as `clip_ray_inv` does.
                t0 = ((near - o[a]) * id[a]).fast_max(t0);
                t1 = ((far - o[a]) * id[a]).fast_min(t1);
            }
            let mut m = t0.simd_le(t1).to_bitmask();
            for (s, &c) in n.child.iter().enumerate() {
                if c == EMPTY {
                    m &= !(1 << s);
                }
            }
            let t = t0.to_array();
            // Farthest first onto the stack, so the nearest is popped next; ties by slot.
            let mut hits = [(0.0f32, 0usize); 4];
            let mut k = 0;
            while m != 0 {
                let s = m.trailing_zeros() as usize;
                m &= m - 1;
                hits[k] = (t[s], s);
                k += 1;
            }
            let hits = &mut hits[..k];
            hits.sort_unstable_by(|x, y| y.0.total_cmp(&x.0).then(y.1.cmp(&x.1)));
            for &(t, s) in hits.iter() {
                stack.push((n.child[s], t));
            }
        }
    }
}

/// A walk's stack of pending entries, on the stack, spilling to the heap past its depth (last in,
/// first out: the newest entries are on the spill while it holds any). PERF: no allocation per
/// cast in a tree of ordinary depth.
pub(crate) struct WalkStack<T> {
    fixed: [T; 48],
    len: usize,
    spill: Vec<T>,
}

impl<T: Copy> WalkStack<T> {
    /// A stack holding `first`.
    #[inline]
    pub(crate) fn new(first: T) -> Self {
        WalkStack { fixed: [first; 48], len: 1, spill: Vec::new() }
    }

    #[inline]
    pub(crate) fn push(&mut self, e: T) {
        if self.spill.is_empty() && self.len < self.fixed.len() {
            self.fixed[self.len] = e;
            self.len += 1;
        } else {
            self.spill.push(e);
        }
    }

    #[inline]
    pub(crate) fn pop(&mut self) -> Option<T> {
        if let Some(e) = self.spill.pop() {
            return Some(e);
        }
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.fixed[self.len])
    }
}

mod packet;
pub(crate) use packet::{PACKET, bits};

#[cfg(test)]
mod tests;
