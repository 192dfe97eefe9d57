//! Levels of detail by clustering, as the dual-contouring octree simplifies: at level `k` the
//! cells of full resolution are clustered into cubes of `2^k` (octree nodes of that size), each
//! cluster's vertex placed from its cells' vertices (the point nearest their tangent planes,
//! pulled toward their mass point: `vertex`), and polygons come from the edges of the
//! `2^k` grid whose end voxels are one inside and one outside, joining the clusters around them.
//! Where a cluster's corners cut separate sheets of surface (both slopes under a ridge, both faces
//! of a thin wall) and the cluster lies clear of its node's faces, each sheet gets its own vertex
//! and each polygon the vertex of the sheet its edge crosses, so sheets never fold into each other.
//!
//! Render nodes of different levels meet without cracks: an edge is contoured at the finest level
//! of the cells around it (the octree's minimal edges), and each cell around it is replaced by the
//! cluster holding it at its own node's level. The surface is then the image of the closed
//! full-resolution surface under a map of its vertices, so every edge of it is matched by the same
//! edge the other way; a node whose neighbor changes level re-meshes only its border.
//!
//! The parts: `node` (nodes, keys, chunk arithmetic), `vertex` (where a cluster's vertex goes),
//! `store` (what chunks and borders keep), `contour` (polygons from clusters), `cell_mesh` (the
//! full-resolution cells clustering starts from), `mesh` (the [`Mesher`](crate::Mesher) calls).

mod cell_mesh;
mod contour;
mod mesh;
mod node;
mod store;
mod vertex;

pub use node::{ClusterNode, ClusterPart, ClusterVertex, LevelMap, MAX_CLUSTER_LEVEL, cluster_chunks};
pub use store::{BorderSummary, ChunkClusters};
