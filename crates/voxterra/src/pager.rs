//! A paged terrain's residency ([`Pager`]): which chunks are in memory and since when (an exact
//! LRU order), which are not written back, and the loader thread that builds chunks off the frame
//! thread. The `impl Terrain` that uses it is `paging.rs`.

use crate::chunk_record::CHUNK_VOXELS;
use crate::chunk_source::ChunkSource;
use crate::error::PageError;
use rayon::prelude::*;
use std::collections::VecDeque;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use voxterra_core::{StoreChunkKey, Voxel};
use voxterra_voxel_store::{StoredChunk, VoxelStore};

pub(crate) type Map<K, V> = hashbrown::HashMap<K, V, foldhash::fast::FixedState>;
pub(crate) type Set<K> = hashbrown::HashSet<K, foldhash::fast::FixedState>;

/// Columns of chunks the background loader holds requests for at once: enough to keep it busy,
/// few enough that what it loads next is still the nearest of what the viewers want.
pub(crate) const MAX_IN_FLIGHT: usize = 4;

pub(crate) struct Entry {
    /// The paging call that last needed the chunk (or edited it), to within [`RESTAMP`] calls.
    pub(crate) stamp: u64,
    pub(crate) bytes: usize,
}

/// Paging calls a chunk's stamp may lag: a chunk needed call after call moves in the LRU order
/// once per this many, not every call.
pub(crate) const RESTAMP: u64 = 30;

/// A chunk as it comes in: built off the frame thread (`None` when all Air), only moved in.
pub(crate) type Loaded = (StoreChunkKey, Option<StoredChunk>);
/// One column's chunks from the loader, tagged with the request that asked for them.
pub(crate) type Arrival = (u64, Result<Vec<Loaded>, PageError>);

pub(crate) struct Loader {
    pub(crate) requests: Sender<(u64, Vec<StoreChunkKey>)>,
    /// In a mutex only so that the terrain stays `Sync`: reached through `&mut`, never locked.
    pub(crate) arrivals: Mutex<Receiver<Arrival>>,
}

impl Loader {
    pub(crate) fn start(source: Arc<dyn ChunkSource>) -> Loader {
        let (requests, todo) = std::sync::mpsc::channel::<(u64, Vec<StoreChunkKey>)>();
        let (done, arrivals) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("voxterra-pager".into())
            .spawn(move || {
                // Ends when the terrain drops its sender.
                while let Ok((id, keys)) = todo.recv() {
                    if done.send((id, load_column(source.as_ref(), &keys))).is_err() {
                        break;
                    }
                }
            })
            .expect("a thread for the chunk loader");
        Loader { requests, arrivals: Mutex::new(arrivals) }
    }
}

/// The residency of a paged terrain.
pub(crate) struct Pager {
    pub(crate) source: Arc<dyn ChunkSource>,
    pub(crate) resident: Map<StoreChunkKey, Entry>,
    /// The resident chunks by stamp, least recently used first.
    pub(crate) order: std::collections::BTreeSet<(u64, StoreChunkKey)>,
    pub(crate) bytes: usize,
    pub(crate) dirty: Set<StoreChunkKey>,
    pub(crate) clock: u64,
    /// Chunks asked of the loader, with the request that asked: an arrival counts only if its
    /// request is still the chunk's (a chunk loaded, edited and evicted meanwhile is asked again).
    pub(crate) in_flight: Map<StoreChunkKey, u64>,
    pub(crate) next_request: u64,
    /// Requests sent to the loader and not yet taken in.
    pub(crate) requests_out: usize,
    pub(crate) arrived: VecDeque<Arrival>,
    pub(crate) loader: Option<Loader>,
    pub(crate) loaded_total: u64,
    pub(crate) evicted_total: u64,
    /// Measured cost of taking one chunk in (and out), to plan how many fit a frame's time.
    pub(crate) insert_cost: Duration,
    pub(crate) evict_cost: Duration,
}

/// What taking a chunk in costs, relative to one holding voxels: an all-Air one builds at most
/// the masks on its faces.
pub(crate) fn chunk_weight(chunk: &Option<StoredChunk>) -> f64 {
    if chunk.is_some() { 1.0 } else { 0.25 }
}

/// A cost estimate that follows a dearer sample at once and a cheaper one slowly: planning by
/// it overshoots a frame's time rarely.
pub(crate) fn ewma(old: Duration, sample: Duration) -> Duration {
    if sample > old {
        old.mul_f64(0.25) + sample.mul_f64(0.75)
    } else {
        old.mul_f64(0.9) + sample.mul_f64(0.1)
    }
}

impl std::fmt::Debug for Pager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pager")
            .field("resident", &self.resident.len())
            .field("bytes", &self.bytes)
            .field("dirty", &self.dirty.len())
            .finish_non_exhaustive()
    }
}

impl Pager {
    pub(crate) fn new(source: Arc<dyn ChunkSource>) -> Pager {
        Pager {
            source,
            resident: Map::default(),
            order: std::collections::BTreeSet::new(),
            bytes: 0,
            dirty: Set::default(),
            clock: 0,
            in_flight: Map::default(),
            next_request: 0,
            requests_out: 0,
            arrived: VecDeque::new(),
            loader: None,
            loaded_total: 0,
            evicted_total: 0,
            insert_cost: Duration::from_micros(100),
            evict_cost: Duration::from_micros(100),
        }
    }

    pub(crate) fn is_resident(&self, key: StoreChunkKey) -> bool {
        self.resident.contains_key(&key)
    }

    /// Chunk `key` came in (or an edit made it resident) with `bytes`.
    pub(crate) fn add(&mut self, key: StoreChunkKey, bytes: usize) {
        let stamp = self.clock;
        if let Some(old) = self.resident.insert(key, Entry { stamp, bytes }) {
            self.order.remove(&(old.stamp, key));
            self.bytes -= old.bytes;
        }
        self.order.insert((stamp, key));
        self.bytes += bytes;
    }

    /// Chunk `key` is used now; `always` moves it even within [`RESTAMP`] calls.
    pub(crate) fn touch(&mut self, key: StoreChunkKey, always: bool) {
        let now = self.clock;
        let Some(e) = self.resident.get_mut(&key) else { return };
        if always || e.stamp + RESTAMP <= now {
            self.order.remove(&(e.stamp, key));
            e.stamp = now;
            self.order.insert((now, key));
        }
    }

    /// Chunk `key` left.
    pub(crate) fn remove(&mut self, key: StoreChunkKey) {
        if let Some(e) = self.resident.remove(&key) {
            self.order.remove(&(e.stamp, key));
            self.bytes -= e.bytes;
        }
    }
}

/// Loads the chunks of one column and builds each as the store holds it.
pub(crate) fn load_column(
    source: &dyn ChunkSource,
    keys: &[StoreChunkKey],
) -> Result<Vec<Loaded>, PageError> {
    let mut voxels = vec![Voxel::AIR; keys.len() * CHUNK_VOXELS];
    source.load(keys, &mut voxels)?;
    let mut scratch = VoxelStore::new();
    keys.iter()
        .zip(voxels.chunks_exact(CHUNK_VOXELS))
        .map(|(&k, v)| {
            scratch.write_box(&k.region().expect("keys come from regions"), v)?;
            Ok((k, scratch.take_chunk(k)))
        })
        .collect()
}

/// Loads `keys` (any chunks) from `source` in parallel, a column per task.
pub(crate) fn load_columns(
    source: &dyn ChunkSource,
    keys: &[StoreChunkKey],
) -> Result<Vec<Loaded>, PageError> {
    let loaded: Vec<Result<Vec<Loaded>, PageError>> =
        columns_of(keys).par_iter().map(|col| load_column(source, col)).collect();
    let mut out = Vec::with_capacity(keys.len());
    for r in loaded {
        out.extend(r?);
    }
    Ok(out)
}

/// `keys` grouped into columns (same x and z), each sorted by y; columns in (z, x) order.
pub(crate) fn columns_of(keys: &[StoreChunkKey]) -> Vec<Vec<StoreChunkKey>> {
    let mut sorted = keys.to_vec();
    sorted.sort_unstable_by_key(|k| (k.z, k.x, k.y));
    sorted.dedup();
    let mut columns: Vec<Vec<StoreChunkKey>> = Vec::new();
    for k in sorted {
        match columns.last_mut() {
            Some(c) if c[0].x == k.x && c[0].z == k.z => c.push(k),
            _ => columns.push(vec![k]),
        }
    }
    columns
}
