//! # voxterra-narrowphase
//!
//! The layer between a triangle index and a physics solver: it turns candidate triangles into
//! contact points and manifolds. Use it to collide convex shapes with terrain chunks (or any
//! triangle set behind core's [`TriangleSource`](voxterra_core::TriangleSource) and
//! [`TriangleIndex`](voxterra_core::TriangleIndex) traits: the kD tree, a brute-force index, a
//! user mesh), and to test two triangle meshes against each other.
//!
//! - [`contacts`] / [`contact_points`]: a parry convex shape (ball, cuboid, capsule, cylinder,
//!   cone, convex polyhedron, round shapes, or a compound of these) at a pose against a
//!   [`TriangleSet`]. Candidates come from the set's AABB query (the shape's box grown by the
//!   prediction distance); each triangle gets a specialized routine where one exists (ball and
//!   capsule by closest points, cuboid and convex polyhedron by the separating axis theorem with
//!   face clipping) and parry's GJK/EPA otherwise. Every [`ContactPoint`] carries a [`FeatureId`] (triangle, its
//!   vertex/edge/face, compound part, shape-side index) stable while the triangles are, for warm
//!   starting.
//! - [`manifold::reduce`]: points grouped by normal (within 5°) and cut to at most four per
//!   group: the deepest, the farthest from it, and the farthest on each side of that line (the
//!   rule of Jolt's `PruneContactPoints`). A box resting on flat ground gets its four corners.
//! - [`cast_shape`]: the first time a convex shape moving linearly touches a triangle set
//!   (character movement, shape queries), with the triangle feature hit; balls, capsules and
//!   boxes in closed form, other shapes by parry's GJK cast.
//! - [`sweep_shape`]: continuous collision over a step's motion, rotation included, as rapier
//!   sweeps a body against a triangle mesh: the first time the shape comes within the linear
//!   slop, never stopping a body already resting on a triangle.
//! - [`ContactWorkspace`]: scratch memory, one per thread; steady-state queries allocate nothing
//!   in it.
//! - [`ContactCache`]: what one shape keeps between its contact queries (a physics engine's
//!   contact pair), as parry keeps a pair's workspace: the candidate triangles of its box grown
//!   by a slack, replayed while it moves less than that, skipping the triangles too far to touch;
//!   the same points as a fresh query, bit for bit.
//! - [`mesh_mesh`]: two triangle meshes at poses (models, debris, detached terrain), the Project
//!   Oort pipeline: bounding spheres, then [`Obb`]s (15-axis SAT), then a descent of both meshes'
//!   bounding-volume hierarchies, then Möller's [`triangles_intersect`] on the candidate pairs
//!   (in parallel past a threshold); [`collide`] returns the article's [`HitData`] and
//!   [`apply_impulse`] its impulse response.
//!
//! Bad input never panics: a non-finite pose, a degenerate shape or a negative prediction is a
//! [`NarrowphaseError`]; degenerate or non-finite triangles touch nothing.
//!
//! ## What the answers promise
//!
//! On a one-sided, edge-flagged surface (terrain), queried across all its sets at once
//! ([`ContactWorkspace::begin`], `collect`, `finish`):
//! - a shape touching the triangles gets a contact; one wholly in front of them beyond the
//!   prediction gets none;
//! - a ball's (and a capsule core's) distance, and its depth, equal the exact distance from its
//!   center (core) to the nearest triangle, within 0.4% of its radius (a contact on an inactive
//!   edge takes its face's normal, and creases under 5° are inactive) and the rounding of its
//!   coordinates; a ball whose center is in the solid is pushed out at least that deep, and no
//!   reported depth exceeds the deepest exact penetration of one triangle;
//! - a contact is pushed out through a triangle's front ([`Correction::Sunk`]) only while the
//!   shape is in the solid there: a shape beside a sharp crest or a thin wall, behind one face's
//!   plane but in the open, gets the contacts of the faces it is in front of;
//! - the internal-edge rules only turn a normal toward a face: they never take away the only
//!   contact of a penetrating shape, nor one deeper than every contact that covers its corners;
//! - [`cast_shape`] stops where the shape first comes within its target distance, never later
//!   and never while still apart; [`sweep_shape`] stops as rapier's CCD does (a polytope the
//!   linear slop apart, a ball or capsule overlapping by it), never after a first touch it does
//!   not skip by rapier's one-sided rules;
//! - the answer is the same, bit for bit, from a [`ContactCache`] as from a fresh query.
//!
//! voxterra's differential harness (`cargo xtask soak`) checks each of these against exact f64
//! geometry on random ground: ridges and crests of 20–90°, creases, bowls, overhangs, thin walls
//! and necks, at voxel sizes 0.5–2 and up to 50 000 voxels from the origin.
//!
//! ## Whose types
//!
//! The shapes, and the poses and velocities that place them, are parry 0.31's (glam: `Pose`,
//! `Vector`), re-exported here as [`parry3d`]: a rapier or parry user passes what they hold.
//! Everything voxterra owns is nalgebra 0.35 (re-exported by `voxterra_core::nalgebra`): triangle
//! sets, contact points, manifolds and cast hits, mesh colliders with their poses and rigid
//! bodies, boxes and rays. [`convert`] is the one place the two meet.
//!
//! ```
//! use voxterra_core::nalgebra::Point3;
//! use voxterra_core::{BruteForceTriangles, TriangleMesh};
//! use voxterra_narrowphase::{contacts, ContactWorkspace, TriangleSet};
//! use voxterra_narrowphase::parry3d::{math::Pose, shape::Ball};
//!
//! let ground = TriangleMesh {
//!     positions: vec![Point3::new(-5.0, 0.0, -5.0), Point3::new(5.0, 0.0, -5.0), Point3::new(0.0, 0.0, 5.0)],
//!     triangles: vec![[0, 2, 1]],
//! };
//! let index = BruteForceTriangles(&ground);
//! let mut manifolds = Vec::new();
//! let ball = Ball::new(0.5);
//! contacts(&ball, &Pose::translation(0.0, 0.45, 0.0), TriangleSet::new(&ground, &index), 0.0,
//!          &mut ContactWorkspace::new(), &mut manifolds)?;
//! let p = manifolds[0].points()[0];
//! assert!((p.dist + 0.05).abs() < 1e-6 && p.normal.y > 0.999);
//! # Ok::<(), voxterra_narrowphase::NarrowphaseError>(())
//! ```

#![forbid(unsafe_code)]

mod clip;
mod closest;
mod contact;
mod contact_cache;
pub mod convert;
mod convex_triangles;
mod core_cast;
mod cuboid_triangle;
mod error;
mod hull_triangle;
mod internal_contacts;
mod internal_edges;
pub mod manifold;
pub mod mesh_mesh;
mod obb;
mod part;
mod routines;
mod shape_cast;
mod sweep;
mod tri_tri;
mod triangle_set;

pub use contact::{ContactPoint, Correction, FeatureId, Manifold, TriangleFeature};
pub use contact_cache::{ContactCache, InvalidContactCache};
pub use convex_triangles::{ContactWorkspace, contact_points, contacts};
pub use error::NarrowphaseError;
pub use mesh_mesh::{
    HitData, MeshCollider, MeshMeshOptions, RigidBody, SideHit, apply_impulse, collide, meshes_intersect,
};
pub use obb::{BoundingSphere, Obb};
/// parry3d, re-exported so users name the version voxterra collides with.
pub use parry3d;
pub use part::check_supported;
pub use shape_cast::{CastOptions, ShapeCastHit, cast_shape};
pub use sweep::{SweepHit, sweep_shape};
pub use tri_tri::{triangles_intersect, triangles_intersect_f64};
pub use triangle_set::TriangleSet;
