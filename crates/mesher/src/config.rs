//! The mesher's configuration ([`Mesher`]: which materials are matter, which are sharp, how
//! vertices are placed, how large a box it reads), what a call reports ([`MeshStats`]) and its
//! errors ([`MeshError`]).

use crate::keys::{Key, key_inside};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{MaterialTable, Region, SurfaceShape, Voxel};

/// Which matter the mesher wraps in a surface.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum Surface {
    /// Solid materials (collision and terrain rendering); liquids and air are outside.
    #[default]
    Solid,
    /// Liquid materials (a water surface for rendering); solids and air are outside.
    Liquid,
}

/// How vertices are placed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum ShapeMode {
    /// By the dominant material's [`SurfaceShape`] in the table.
    #[default]
    ByMaterial,
    /// Every cell smooth (mass point of the crossings).
    Smooth,
    /// Every cell sharp (QEF minimizer).
    Sharp,
}

/// Errors of [`Mesher::mesh`].
#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum MeshError {
    /// The region grown by its padding leaves the i32 coordinate space.
    #[error("region {0:?} plus one voxel of padding leaves the i32 coordinate space")]
    OutOfRange(Region),
    /// The padded box is bigger than the mesher's limit; mesh it in chunks.
    #[error("the padded box holds {voxels} voxels, over the mesher's limit of {limit}; mesh it in chunks")]
    TooLarge {
        /// Voxels in the padded box.
        voxels: u128,
        /// [`Mesher::max_voxels`].
        limit: usize,
    },
    /// The region is wider than the output's positions reach ([`PhysicsMesh::MAX_SIDE`](crate::PhysicsMesh::MAX_SIDE)
    /// voxels for a physics mesh).
    #[error(
        "the region is {side} voxels wide, over the {limit} the output's positions reach; mesh it in chunks"
    )]
    TooWide {
        /// The region's widest side, in voxels.
        side: u32,
        /// What the output reaches.
        limit: u32,
    },
    /// The source failed to read the padded box.
    #[error("reading the padded box failed: {0}")]
    Read(#[from] voxterra_core::CoreError),
    /// The mesh needs more vertices than the output's indices address (65536 for a physics mesh).
    #[error(
        "the mesh needs {vertices} vertices, over the {limit} its index type addresses; mesh a smaller region"
    )]
    TooManyVertices {
        /// Vertices the region needs.
        vertices: usize,
        /// What the output addresses.
        limit: usize,
    },
    /// A level of detail past the coarsest clusters ([`MAX_CLUSTER_LEVEL`](crate::MAX_CLUSTER_LEVEL)).
    #[error("level {level} is past the coarsest level {max}")]
    Level {
        /// The level asked for.
        level: u32,
        /// The coarsest level.
        max: u32,
    },
    /// A clustered node read from chunk clusters that a chunk it needs lacks (or a level-0 node,
    /// which chunk clusters never serve).
    #[error(
        "storage chunk {chunk:?} has no clusters for a level-{level} node; make them with Mesher::chunk_clusters"
    )]
    MissingClusters {
        /// The chunk (voxels `32·chunk` to `32·chunk + 32`).
        chunk: [i32; 3],
        /// The node's level.
        level: u32,
    },
    /// A node region that is empty or not aligned to its level's cluster size.
    #[error("node region {region:?} is empty or not aligned to 2^{level} voxels")]
    Unaligned {
        /// The region.
        region: Region,
        /// Its level.
        level: u32,
    },
}

/// What one call produced.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct MeshStats {
    /// Vertices added.
    pub vertices: usize,
    /// Triangles added.
    pub triangles: usize,
    /// True when the reader reported the padded box uniform and no voxel was read.
    pub uniform: bool,
}

/// A voxel as a cell corner ([`Mesher::corner`]): its material when matter for the mesher's
/// surface, and its occupancy; every voxel that is not matter reads as the same corner.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Corner(Key);

impl Corner {
    /// Inside the surface: matter with a density over one half (occupancy byte 128 or more).
    #[inline]
    pub fn is_inside(self) -> bool {
        key_inside(self.0) == 1
    }
}

/// The mesher's configuration: which materials are matter, which are sharp. Immutable and
/// `Send + Sync`: share one across threads, give each thread its own [`MeshWorkspace`](crate::MeshWorkspace).
#[derive(Clone, Debug)]
pub struct Mesher {
    /// Bit `m` set: material `m` is matter for the chosen surface.
    pub(crate) matter: u64,
    /// Bit `m` set: material `m` places sharp vertices.
    pub(crate) sharp: u64,
    /// The table's solid, liquid and sharp-surface masks, so the builders need no table.
    solid: u64,
    liquid: u64,
    sharp_by_material: u64,
    pub(crate) max_voxels: usize,
}

/// The default limit on padded-box voxels: 128 M (about 300 MB of scratch; 256 MB more when the
/// source cannot lend the box as one slice).
pub const DEFAULT_MAX_VOXELS: usize = 1 << 27;

impl Mesher {
    /// A mesher for solid surfaces, vertices shaped by each material's [`SurfaceShape`].
    pub fn new(table: &MaterialTable) -> Self {
        let mut sharp = 0u64;
        for (m, info) in table.iter() {
            if info.surface == SurfaceShape::Sharp {
                sharp |= 1 << m.id();
            }
        }
        Mesher {
            matter: table.solid_mask(),
            sharp,
            solid: table.solid_mask(),
            liquid: table.liquid_mask(),
            sharp_by_material: sharp,
            max_voxels: DEFAULT_MAX_VOXELS,
        }
    }

    /// Another surface of the same table: [`Surface::Liquid`] meshes water for rendering.
    pub fn with_surface(mut self, surface: Surface) -> Self {
        self.matter = match surface {
            Surface::Solid => self.solid,
            Surface::Liquid => self.liquid,
        };
        self
    }

    /// Overrides vertex placement for every material ([`ShapeMode::ByMaterial`] restores it).
    pub fn with_shape_mode(mut self, mode: ShapeMode) -> Self {
        self.sharp = match mode {
            ShapeMode::ByMaterial => self.sharp_by_material,
            ShapeMode::Smooth => 0,
            ShapeMode::Sharp => u64::MAX,
        };
        self
    }

    /// Sets the limit on voxels in a padded box (memory: about 2.4 bytes of scratch per voxel, 2 more
    /// when the source cannot lend the box as one slice).
    pub fn with_max_voxels(mut self, max_voxels: usize) -> Self {
        self.max_voxels = max_voxels;
        self
    }

    /// The limit on voxels in a padded box.
    pub fn max_voxels(&self) -> usize {
        self.max_voxels
    }

    /// `v` as this mesher reads it at a cell's corner. Meshes depend on voxels only through their
    /// corners: a voxel rewritten to one with the same corner changes no mesh, and a voxel whose
    /// 26 neighbors share its [`Corner::is_inside`] (before and after a change) is read by no cell
    /// that places a vertex.
    ///
    /// ```
    /// use voxterra_core::{MaterialTable, Voxel, materials};
    /// use voxterra_mesher::Mesher;
    ///
    /// let mesher = Mesher::new(&MaterialTable::default());
    /// assert!(mesher.corner(Voxel::full(materials::ROCK)).is_inside());
    /// // Water is not matter for the solid surface: it reads as air does.
    /// assert_eq!(mesher.corner(Voxel::AIR), mesher.corner(Voxel::new(materials::WATER, 200)));
    /// ```
    #[inline]
    pub fn corner(&self, v: Voxel) -> Corner {
        let bits = v.to_bits();
        let id = bits & 63;
        Corner(if self.matter >> id & 1 == 0 { 0 } else { (id << 9 | 1) + (bits >> 8) })
    }

    /// The box meshing `region` reads: one voxel of padding on every side. The low side holds the
    /// cells shared with the lower neighbors; the high side the far ends of the edges `region` owns.
    pub fn padded_region(region: &Region) -> Result<Region, MeshError> {
        let grow = |v: i32, d: i64| i32::try_from(v as i64 + d).map_err(|_| MeshError::OutOfRange(*region));
        let (lo, hi) = (region.min(), region.max());
        Region::new(
            Point3::new(grow(lo.x, -1)?, grow(lo.y, -1)?, grow(lo.z, -1)?),
            Point3::new(grow(hi.x, 1)?, grow(hi.y, 1)?, grow(hi.z, 1)?),
        )
        .map_err(|_| MeshError::OutOfRange(*region))
    }
}
