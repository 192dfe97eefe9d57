//! Scratch memory of the mesher ([`MeshWorkspace`]), kept between calls so steady-state meshing
//! allocates nothing.

use crate::keys::Key;
use voxterra_core::Voxel;
use voxterra_core::nalgebra::Point3;

/// Scratch memory for [`Mesher::mesh`](crate::Mesher::mesh); reuse one per thread so steady-state meshing allocates
/// nothing.
#[derive(Default, Debug)]
pub struct MeshWorkspace {
    /// The padded box's voxels, when the source cannot lend them ([`VoxelRead::as_dense`](voxterra_core::VoxelRead::as_dense)).
    pub(crate) voxels: Vec<Voxel>,
    /// One corner key per voxel of the padded box (see `keys`).
    pub(crate) keys: Vec<Key>,
    pub(crate) inside: Vec<u64>,
    pub(crate) cells: Vec<u64>,
    pub(crate) cell_vertex: Vec<u32>,
    /// `Grid::owned_x` of each word, computed once per call.
    pub(crate) own: Vec<u64>,
    pub(crate) row_x: Vec<u64>,
    pub(crate) row_y: Vec<u64>,
    pub(crate) row_z: Vec<u64>,
    /// The grown region's mesh, for edge flags ([`Mesher::mesh_physics`](crate::Mesher::mesh_physics)).
    pub(crate) neighborhood: crate::PhysicsMesh,
    /// When set, [`Mesher::mesh`](crate::Mesher::mesh) records per quad whether its edge's lower end lies in the region
    /// shrunk by one voxel (`inner_quads`): [`Mesher::mesh_physics`](crate::Mesher::mesh_physics) meshes a chunk's grown region
    /// once and keeps the quads the chunk itself owns.
    pub(crate) record_inner: bool,
    pub(crate) inner_quads: Vec<bool>,
    pub(crate) edges: EdgeScratch,
}

impl MeshWorkspace {
    /// An empty workspace; buffers grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        (self.voxels.capacity() + self.keys.capacity()) * 2
            + (self.inside.capacity() + self.cells.capacity()) * 8
            + self.cell_vertex.capacity() * 4
    }
}

/// Scratch of the edge buckets, kept in the [`MeshWorkspace`].
#[derive(Default, Debug)]
pub(crate) struct EdgeScratch {
    /// Per vertex, where its bucket starts (and, last, the end).
    pub(crate) start: Vec<u32>,
    pub(crate) fill: Vec<u32>,
    /// Per edge, in its lower vertex's bucket: (higher vertex, far corner).
    pub(crate) entries: Vec<[u16; 2]>,
    /// Per vertex of the grown mesh, its number in the kept mesh.
    pub(crate) renumber: Vec<u32>,
    /// Per vertex of the grown mesh, its position decoded.
    pub(crate) points: Vec<Point3<f32>>,
    /// Per quad, the edge of each of its triangles that is the diagonal.
    pub(crate) diagonals: Vec<[usize; 2]>,
    /// The grown mesh's triangles, unpacked.
    pub(crate) tris: Vec<[u16; 3]>,
}
