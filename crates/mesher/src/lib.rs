//! # voxterra-mesher
//!
//! Turns voxels into triangles: the dual mesher both rendering and physics take their geometry
//! from. Density is occupancy (design.md): the surface lies where it crosses one half between
//! neighboring voxel centers. Each *cell* — the cube between 8 voxel centers — that the surface
//! crosses gets one vertex; each voxel edge the surface crosses gets one quad (two triangles, wound
//! so normals face the air) joining the 4 cells around it.
//!
//! - Vertex placement by the cell's dominant material ([`ShapeMode`]): *smooth* materials put the
//!   vertex at the mass point of the edge crossings (surface nets); *sharp* ones at the minimizer of
//!   the crossings' tangent planes, with normals from the occupancy gradient (dual contouring's
//!   QEF), clamped to the cell. Vertex material: the dominant matter material of the 8 corners
//!   (most frequent; ties to the larger occupancy, then the lower id). Vertex normal: the gradient.
//! - Seamless chunks: a region owns the edges whose lower voxel lies in it, and reads one voxel of
//!   padding on each side ([`Mesher::padded_region`]). Meshing a box chunk by chunk gives exactly
//!   the triangles of meshing it whole, bit for bit; nothing is duplicated or missing.
//! - Two outputs: [`RenderMesh`] (positions, normals, materials, u32 indices) and [`PhysicsMesh`]
//!   (positions as three u16 steps of 1/1024 voxel, a material byte per vertex, a triangle's three
//!   9-bit indices and edge flags in 4 bytes up to 512 vertices, else u16 indices and a flag byte:
//!   7 bytes per vertex and 4 per triangle, about 8.6 per triangle on an 8³ chunk), which the kD tree
//!   reads directly as a [`TriangleSource`](voxterra_core::TriangleSource). Each vertex's offset is
//!   rounded within its own cell, so chunks sharing a vertex decode it to the same f32.
//! - Internal-edge flags ([`Mesher::mesh_physics`], [`edge_flags`]): 3 bits a physics-mesh
//!   triangle, set for edges that are real convex creases (over 5°). Neighbors across a chunk
//!   border come from the mesh of the region grown by a voxel, read through the same source, so
//!   chunk-by-chunk flags equal whole-region flags; the narrowphase uses them to keep contacts on
//!   flat and concave seams from bumping.
//! - Levels of detail ([`Mesher::mesh_clustered`]): cells clustered into `2^k` cubes as the
//!   dual-contouring octree simplifies, a cluster's vertex from its cells' tangent planes (one per
//!   sheet where separate sheets cross a cluster, so ridges and thin walls do not fold); render
//!   nodes of any two levels meet without cracks, and a node's border is re-made from
//!   [`BorderSummary`]s ([`Mesher::stitch_border`]) when a neighbor changes level. A storage
//!   chunk's clusters at every level and its even voxels' signs ([`ChunkClusters`],
//!   [`Mesher::chunk_clusters`], held in a [`ChunkClusterMap`]) are made once; nodes of level 1
//!   and coarser are then meshed from them alone ([`Mesher::mesh_cluster_node_from`]), bit for
//!   bit what the voxels give.
//! - Fast paths: a padded box the reader reports uniform
//!   ([`VoxelRead::uniform`](voxterra_core::VoxelRead::uniform), answered by the store from its
//!   packed rows) returns without reading a voxel; the box is converted from one slice, lent by
//!   dense sources ([`VoxelRead::as_dense`](voxterra_core::VoxelRead::as_dense)) or copied with
//!   `read_box`; surface edges are found a row of 64 at a time with
//!   bit operations; vertices are placed 8 cells at a time in vector lanes (explicit `wide` vectors,
//!   bit-identical to placing them one by one); a [`MeshWorkspace`] keeps every buffer, so steady
//!   state allocates nothing.
//!   [`Mesher`] is `Send + Sync`: share it, give each thread a workspace.
//!
//! ```
//! use voxterra_core::{materials, DenseVoxels, MaterialTable, Region, Voxel, VoxelWrite};
//! use voxterra_core::nalgebra::Point3;
//! use voxterra_mesher::{Mesher, MeshWorkspace, PhysicsMesh, RenderMesh};
//!
//! // A 4³ block of rock in the middle of an 8³ box.
//! let table = MaterialTable::default();
//! let region = Region::from_min_size(Point3::new(0, 0, 0), [8, 8, 8]).unwrap();
//! let mut voxels = DenseVoxels::new(region, 1 << 20).unwrap();
//! let block = Region::from_min_size(Point3::new(2, 2, 2), [4, 4, 4]).unwrap();
//! voxels.fill(&block, Voxel::full(materials::ROCK)).unwrap();
//!
//! let mesher = Mesher::new(&table);
//! let mut ws = MeshWorkspace::new();
//! let mut render = RenderMesh::default();
//! let summary = mesher.mesh(&voxels, &region, &mut ws, &mut render).unwrap();
//! assert_eq!(summary.triangles, 2 * 6 * 4 * 4); // one quad per crossed voxel edge
//! assert!(render.materials.iter().all(|&m| m == materials::ROCK));
//!
//! let mut physics = PhysicsMesh::default();
//! mesher.mesh(&voxels, &region, &mut ws, &mut physics).unwrap();
//! assert_eq!(physics.triangles().len(), render.indices.len());
//! ```

#![forbid(unsafe_code)]

mod cell;
mod chunk_map;
mod clusters;
mod config;
pub mod edge_flags;
mod extract;
mod keys;
mod output;
mod workspace;

pub use chunk_map::ChunkClusterMap;
pub use clusters::{
    BorderSummary, ChunkClusters, ClusterNode, ClusterPart, ClusterVertex, LevelMap, MAX_CLUSTER_LEVEL,
    cluster_chunks,
};
pub use config::{Corner, DEFAULT_MAX_VOXELS, MeshError, MeshStats, Mesher, ShapeMode, Surface};
pub use output::{MeshOutput, PhysicsMesh, RenderMesh};
pub use workspace::MeshWorkspace;

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Mesher>();
    send_sync::<MeshWorkspace>();
};
