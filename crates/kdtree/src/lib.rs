//! # voxterra-kdtree
//!
//! The loose kD tree from the Roblox terrain-physics article: the spatial index every collision and
//! ray cast against terrain goes through. Each branch holds *two* split planes on one axis — all left
//! children lie below one, all right children above the other — so triangles are never cut. The
//! leaf tag lives in the axis field and children are adjacent, so a branch stores one child index.
//! Leaves hold up to 2 triangles, so there is about one node per triangle; in trees of at most
//! 16 384 triangles (chunk meshes) up to 4, as 14-bit indices: two thirds of a node a triangle.
//!
//! Two additions to the article, both measured (docs/architecture.md has the figures):
//! - **8-byte nodes**: planes are 16-bit steps of one grid per tree (the article's named next
//!   step), rounded outward so they still bound their triangles. The tree costs 8.4–8.8 bytes per
//!   triangle on large meshes and about 5 on chunk meshes, against the article's 12 and ~100 for
//!   parry3d's `TriMesh` BVH.
//! - **slab** nodes, which bound a subtree on an axis its ancestors leave loose (height, over
//!   terrain), so rays passing over the ground skip whole subtrees. Subtrees of 16 triangles or
//!   more get them, or of 8 in trees large enough that their mesh is out of cache, where each leaf
//!   a ray skips saves cache misses.
//!
//! - [`KdTree::build`]: from any [`TriangleSource`](voxterra_core::TriangleSource) (f32 or 16-bit
//!   quantized positions, packed 9-bit, u16 or u32 indices, so compact chunk meshes plug in without copying). Split at the mean midpoint, planes
//!   fitted to all 3 vertices, halves of the midpoint order when a side would get under 25%; the
//!   axis by surface-area cost (sampled on large nodes, estimated from the box on nodes of up to 32
//!   triangles; Y needing a 25% margin), small nodes at the median so leaves come out full.
//!   O(n log n), one scratch buffer.
//! - [`KdTree::with`] pairs the tree with its mesh: a [`KdTreeView`] implementing
//!   [`TriangleIndex`](voxterra_core::TriangleIndex) — triangles overlapping an AABB, the closest ray
//!   hit by segment traversal (near child first, early exit, planes widened against float error), and
//!   an any-hit ray. No heap allocation per query: traversal stacks are fixed arrays sized by the
//!   depth bound the build guarantees. On large trees, box queries test the leaves they reach in
//!   batches, their triangles' indices and vertices prefetched, so those cache misses overlap.
//! - [`KdTreeView::cast_rays`] and [`KdTreeView::rays_hit_any`]: many rays at once, up to 16 in
//!   flight so their cache misses overlap; the same results as one call per ray, faster on large
//!   meshes out of cache (1.9× downward, 1.15× oblique on a cold 200k-triangle terrain) and slower
//!   on meshes in L2 (see their docs).
//! - [`KdTree::stats`] and [`KdTree::validate`].
//!
//! ```
//! use voxterra_core::{Culling, Ray, TriangleIndex, TriangleMesh};
//! use voxterra_core::nalgebra::{Point3, Vector3};
//! use voxterra_kdtree::KdTree;
//!
//! // A 10 x 10 grid of quads at y = 0.
//! let mut mesh = TriangleMesh::default();
//! for z in 0..11 { for x in 0..11 { mesh.positions.push(Point3::new(x as f32, 0.0, z as f32)); } }
//! for z in 0..10 { for x in 0..10 {
//!     let i = z * 11 + x;
//!     mesh.triangles.push([i, i + 11, i + 1]);
//!     mesh.triangles.push([i + 1, i + 11, i + 12]);
//! } }
//! let tree = KdTree::build(&mesh).unwrap();
//! tree.validate(&mesh).unwrap();
//! let hit = tree.with(&mesh).cast_ray(&Ray::new(Point3::new(3.3, 5.0, 7.6), Vector3::new(0.0, -1.0, 0.0)), 100.0, Culling::None).unwrap();
//! assert_eq!(hit.t, 5.0);
//! assert!(tree.stats().bytes < 14 * 200);
//! ```

#![forbid(unsafe_code)]

mod batch;
mod bounds;
mod box_query;
mod build;
mod fetch;
mod index;
mod node;
mod ray_query;
mod split;
mod tree;

pub use tree::{InvalidKdTree, KdTree, KdTreeError, KdTreeStats, KdTreeView, MAX_TRIANGLES};

#[cfg(test)]
mod test_util {
    use voxterra_core::TriangleMesh;

    /// A `side × side` grid of unit quads (two triangles each) at heights `h(x, z)`.
    pub(crate) fn grid(side: u32, h: impl Fn(u32, u32) -> f32) -> TriangleMesh {
        voxterra_test_support::grid_mesh(side, 1.0, |x, z| h(x as u32, z as u32))
    }
}
