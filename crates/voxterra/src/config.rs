//! [`TerrainConfig`]: a terrain's voxel size and budgets, set when it is made.

/// Default collision cache budget: 256 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 256 << 20;
/// Default history budget: 64 MiB of undo and redo snapshots.
pub const DEFAULT_HISTORY_BYTES: usize = 64 << 20;
/// Default delta log budget: 16 MiB.
pub const DEFAULT_DELTA_LOG_BYTES: usize = 16 << 20;
/// Default largest edit: 2^24 voxels (a 256³ box).
pub const DEFAULT_MAX_EDIT_VOXELS: usize = 1 << 24;
/// Default resident voxel budget of a paged terrain: 256 MiB.
pub const DEFAULT_RESIDENT_BYTES: usize = 256 << 20;
/// The default detached-piece search budget: voxels visited per piece before it counts as
/// attached.
pub const DEFAULT_DETACH_BUDGET: usize = 1 << 18;

/// How a terrain is set up: the voxel size (the one place world units meet voxels) and what it
/// may hold. [`Terrain::reconfigure`](crate::Terrain::reconfigure) changes the budgets later.
///
/// ```
/// use voxterra::{Terrain, TerrainConfig};
/// use voxterra::core::MaterialTable;
///
/// let config = TerrainConfig { cache_bytes: 64 << 20, ..TerrainConfig::with_voxel_size(0.5) };
/// let terrain = Terrain::new(MaterialTable::default(), config)?;
/// assert_eq!(terrain.voxel_size(), 0.5);
/// # Ok::<(), voxterra::TerrainError>(())
/// ```
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TerrainConfig {
    /// World units per voxel: finite and positive.
    pub voxel_size: f32,
    /// The collision cache's byte budget; least recently used chunks go first.
    pub cache_bytes: usize,
    /// The edit history's byte budget; the oldest undo snapshots go first.
    pub history_bytes: usize,
    /// The delta log's byte budget ([`Terrain::edits_since`](crate::Terrain::edits_since)); the
    /// oldest deltas go first.
    pub delta_log_bytes: usize,
    /// The largest edit, in voxels; larger edits (and deltas) are refused.
    pub max_edit_voxels: usize,
    /// A paged terrain's ([`Terrain::paged`](crate::Terrain::paged)) budget for resident voxels
    /// (heap bytes of its storage chunks): past it, the least recently used clean chunks leave.
    /// A terrain held whole ignores it.
    pub resident_bytes: usize,
    /// Whether edits that remove terrain cut loose what no longer reaches the ground, and how
    /// ([`DetachConfig`]); `None` (the default) leaves floating terrain where it is.
    pub detach: Option<DetachConfig>,
}

/// How edits detach terrain ([`TerrainConfig::detach`]): after an edit that removed solid
/// voxels, the pieces around it that reach neither an [`Anchor`] nor `budget` voxels are taken
/// out of the terrain in the same edit and handed out by
/// [`Terrain::take_detached`](crate::Terrain::take_detached).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct DetachConfig {
    /// What holds terrain up.
    pub anchor: Anchor,
    /// Voxels one piece's search may visit before the piece counts as attached (too big to
    /// decide).
    pub budget: usize,
    /// Pieces of fewer solid voxels are removed as debris and not handed out.
    pub min_piece_voxels: usize,
}

impl Default for DetachConfig {
    /// Anchored at the lowest solid layer, [`DEFAULT_DETACH_BUDGET`] and pieces
    /// of at least 8 voxels.
    fn default() -> Self {
        DetachConfig { anchor: Anchor::LowestSolid, budget: DEFAULT_DETACH_BUDGET, min_piece_voxels: 8 }
    }
}

/// What holds terrain up ([`DetachConfig::anchor`]): a solid piece with a voxel on an anchor layer
/// stays; one reaching none falls. Both rules read only the voxels (and the rule itself), so every
/// copy of a world decides alike however it was made: by edits, generated, loaded from a file or
/// received by a replica.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Anchor {
    /// Solid voxels in the lowest layer (voxel Y) that has any solid voxel hold: a generated or
    /// loaded world's ground holds wherever its origin and its chunks lie. Carving that layer
    /// away entirely raises the anchor to the next solid layer.
    #[default]
    LowestSolid,
    /// Solid voxels in layer `y` (voxel Y) or below hold: a fixed bedrock. `Floor(i32::MIN)`
    /// anchors nothing, so every piece within the budget falls.
    Floor(i32),
}

impl Default for TerrainConfig {
    /// Voxels of one world unit and the default budgets.
    fn default() -> Self {
        TerrainConfig {
            voxel_size: 1.0,
            cache_bytes: DEFAULT_CACHE_BYTES,
            history_bytes: DEFAULT_HISTORY_BYTES,
            delta_log_bytes: DEFAULT_DELTA_LOG_BYTES,
            max_edit_voxels: DEFAULT_MAX_EDIT_VOXELS,
            resident_bytes: DEFAULT_RESIDENT_BYTES,
            detach: None,
        }
    }
}

impl TerrainConfig {
    /// The default budgets with voxels of `voxel_size` world units.
    pub fn with_voxel_size(voxel_size: f32) -> Self {
        TerrainConfig { voxel_size, ..TerrainConfig::default() }
    }
}
