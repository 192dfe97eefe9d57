//! Chunk clusters by storage chunk, in dense blocks: what a level-of-detail view holds and what
//! [`Mesher::mesh_cluster_node_from`](crate::Mesher::mesh_cluster_node_from) reads.

use crate::clusters::ChunkClusters;
use std::cell::Cell;
use std::sync::Arc;

type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;

/// Chunks along a block's side.
const BLOCK: i32 = 16;
const SLOTS: usize = (BLOCK * BLOCK * BLOCK) as usize;

/// One block of `BLOCK³` chunks' entries (x fastest, then z, then y).
type Block = [Option<Arc<ChunkClusters>>; SLOTS];

/// [`ChunkClusters`] by storage chunk. PERF: blocks of 16³ chunks found by hash, the chunks in a
/// block by index, and a reader that keeps its last block: a level-4 node reads about 5 000
/// chunks, and a hash probe each was a third of its time.
#[derive(Clone, Default)]
pub struct ChunkClusterMap {
    blocks: Map<[i32; 3], Box<Block>>,
    len: usize,
}

impl std::fmt::Debug for ChunkClusterMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkClusterMap")
            .field("chunks", &self.len)
            .field("blocks", &self.blocks.len())
            .finish()
    }
}

/// The block holding chunk `c` and the chunk's slot in it.
#[inline]
fn place(c: [i32; 3]) -> ([i32; 3], usize) {
    let b = c.map(|v| v.div_euclid(BLOCK));
    let q = c.map(|v| v.rem_euclid(BLOCK) as usize);
    (b, q[0] + BLOCK as usize * (q[2] + BLOCK as usize * q[1]))
}

/// The chunk at slot `i` of block `b`.
#[inline]
fn chunk_at(b: [i32; 3], i: usize) -> [i32; 3] {
    let i = i as i32;
    [b[0] * BLOCK + i % BLOCK, b[1] * BLOCK + i / (BLOCK * BLOCK), b[2] * BLOCK + (i / BLOCK) % BLOCK]
}

impl ChunkClusterMap {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    /// Chunks held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no chunk is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Chunk `c`'s clusters, if held.
    pub fn get(&self, c: [i32; 3]) -> Option<&Arc<ChunkClusters>> {
        let (b, i) = place(c);
        self.blocks.get(&b).and_then(|block| block[i].as_ref())
    }

    /// Holds `t` for chunk `c`, returning what was held.
    pub fn insert(&mut self, c: [i32; 3], t: Arc<ChunkClusters>) -> Option<Arc<ChunkClusters>> {
        let (b, i) = place(c);
        let block = self.blocks.entry(b).or_insert_with(|| Box::new(std::array::from_fn(|_| None)));
        let old = block[i].replace(t);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Keeps the chunks for which `keep` says so; blocks left empty are freed.
    pub fn retain(&mut self, mut keep: impl FnMut([i32; 3], &mut Arc<ChunkClusters>) -> bool) {
        let mut len = 0;
        self.blocks.retain(|b, block| {
            let mut any = false;
            for (i, slot) in block.iter_mut().enumerate() {
                if let Some(t) = slot {
                    if keep(chunk_at(*b, i), t) {
                        any = true;
                        len += 1;
                    } else {
                        *slot = None;
                    }
                }
            }
            any
        });
        self.len = len;
    }

    /// Every chunk held with its clusters, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = ([i32; 3], &Arc<ChunkClusters>)> + '_ {
        self.blocks.iter().flat_map(|(b, block)| {
            block.iter().enumerate().filter_map(move |(i, slot)| slot.as_ref().map(|t| (chunk_at(*b, i), t)))
        })
    }

    /// Every chunk's clusters, in no particular order.
    pub fn values(&self) -> impl Iterator<Item = &Arc<ChunkClusters>> + '_ {
        self.blocks.values().flat_map(|block| block.iter().flatten())
    }

    /// Bytes the map itself holds (its blocks and their table), beside the clusters.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.capacity() * (std::mem::size_of::<([i32; 3], Box<Block>)>() + 1)
            + self.blocks.len() * std::mem::size_of::<Block>()
    }

    /// A lookup for [`Mesher::mesh_cluster_node_from`](crate::Mesher::mesh_cluster_node_from)
    /// that remembers its last block, with `otherwise` for the chunks not held.
    pub fn reader<'a>(
        &'a self,
        otherwise: Option<&'a ChunkClusters>,
    ) -> impl Fn([i32; 3]) -> Option<&'a ChunkClusters> + 'a {
        let last: Cell<Option<([i32; 3], &'a Block)>> = Cell::new(None);
        move |c| {
            let (b, i) = place(c);
            let block = match last.get() {
                Some((k, block)) if k == b => Some(block),
                _ => {
                    let block = self.blocks.get(&b).map(|x| &**x);
                    if let Some(block) = block {
                        last.set(Some((b, block)));
                    }
                    block
                }
            };
            block.and_then(|block| block[i].as_deref()).or(otherwise)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[derive(Clone, Debug)]
    enum Op {
        Insert([i32; 3], bool),
        Remove([i32; 3]),
        Keep(i32),
    }

    fn chunk() -> impl Strategy<Value = [i32; 3]> {
        // Around block borders, negative coordinates included.
        proptest::array::uniform3(-40i32..40)
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (chunk(), any::<bool>()).prop_map(|(c, s)| Op::Insert(c, s)),
            chunk().prop_map(Op::Remove),
            (0i32..3).prop_map(Op::Keep),
        ]
    }

    proptest! {
        /// Inserts, removals and retains agree with a hash map; the reader finds what `get` finds,
        /// and `otherwise` elsewhere.
        #[test]
        fn agrees_with_a_hash_map(ops in proptest::collection::vec(op(), 1..120), probes in proptest::collection::vec(chunk(), 40)) {
            let (inside, outside) = (Arc::new(ChunkClusters::uniform(true)), Arc::new(ChunkClusters::outside()));
            let mut map = ChunkClusterMap::new();
            let mut want: HashMap<[i32; 3], bool> = HashMap::new();
            for op in ops {
                match op {
                    Op::Insert(c, s) => {
                        let t = if s { inside.clone() } else { outside.clone() };
                        prop_assert_eq!(map.insert(c, t).is_some(), want.insert(c, s).is_some());
                    }
                    Op::Remove(c) => {
                        map.retain(|k, _| k != c);
                        want.remove(&c);
                    }
                    Op::Keep(axis) => {
                        map.retain(|k, _| k[axis as usize] % 2 == 0);
                        want.retain(|k, _| k[axis as usize] % 2 == 0);
                    }
                }
                prop_assert_eq!(map.len(), want.len());
            }
            let mut held: Vec<([i32; 3], bool)> =
                map.iter().map(|(c, t)| (c, t.uniform_side() == Some(true))).collect();
            held.sort();
            let mut expected: Vec<([i32; 3], bool)> = want.iter().map(|(c, s)| (*c, *s)).collect();
            expected.sort();
            prop_assert_eq!(held, expected);
            let fallback = ChunkClusters::uniform(false);
            let read = map.reader(Some(&fallback));
            for c in probes.into_iter().chain(want.keys().copied()) {
                let got = read(c).and_then(ChunkClusters::uniform_side);
                prop_assert_eq!(got, Some(want.get(&c).copied().unwrap_or(false)));
                prop_assert_eq!(map.get(c).and_then(|t| t.uniform_side()), want.get(&c).copied());
            }
        }
    }
}
