//! # voxterra-dynamic-aabb-tree
//!
//! The broadphase between moving bodies: every step of a simulation asks it which bodies' boxes
//! overlap. It starts from the dynamic AABB tree of Ming-Lun Chou's article (fat boxes, leaves in
//! a binary tree of unions) and goes where Box2D v3 and bepu went since:
//!
//! - **Proxies** ([`DynamicAabbTree::create_proxy_of_kind`], [`Broadphase::move_proxy`], destroy) carry user
//!   data and a *fat* box: the tight box grown by a margin and stretched along the motion hint.
//!   A move that stays inside its fat box touches no node. [`Broadphase::move_proxies`] moves a
//!   batch: when many leave their fat boxes, the tree is refitted once rather than walked up from
//!   each leaf. [`DynamicAabbTree::create_proxies`] creates a batch (a scene's load): when it is a
//!   quarter or more of its tree, the tree is rebuilt in bulk instead of inserting each. Static
//!   proxies start with no margin.
//! - **The tree**: 4-wide 128-byte nodes (two cache lines, Jolt's layout) in an index arena
//!   with a free list; each node holds its four children's boxes as 4-lane rows and leaves live
//!   in their parent's slots, so a visit tests four children without loading them, and a descent
//!   has half a binary tree's levels. Insertion finds the cheapest place by the surface-area
//!   heuristic (a free slot, or a sibling to pair with) by branch and bound, then rotates nodes
//!   on its way back up (a grown child's child trades places with its sibling when that shrinks
//!   the grown child's box). A box that leaves its fat box grows its ancestors in place
//!   ([`DynamicAabbTree::rebuild_partial`] rebuilds the grown nodes over their untouched
//!   children, after a few proxies moved far); a batch
//!   in which many leave refits every node once and sets the moved flags in the same pass. When
//!   the tree's SAH cost drifts 4% above its last full rebuild's (or many leaves came by
//!   insertion), a full binned-SAH rebuild runs in the background, a slice per pair update, and
//!   is swapped in when done. [`DynamicAabbTree::rebuild`] rebuilds everything at once.
//! - **Pairs** ([`Broadphase::update_pairs`]): one self-traversal of the moving tree and one
//!   traversal against the static tree, both pruned to subtrees that hold a moved proxy; so only
//!   movers are queried and static–static pairs are never visited. A visit tests a node's four
//!   children against another node's four in 4-lane compares, and pairs are visited from a ring
//!   whose entries are prefetched as they enter. Pairs are tested on the tight boxes (fat boxes only prune) and reported once each in ascending `(low, high)` id order.
//!   [`DynamicAabbTree::update_pairs_parallel`] splits the traversal over rayon and gives the
//!   identical sequence (sequentially when fewer than [`TreeConfig::parallel_min_moved`] moved).
//! - **Queries**: AABB and point queries (depth first; results in that deterministic order), and
//!   ray casts, near child first, whose callback returns the new clip distance (closest hit with
//!   early termination, or all hits). Each node a query will visit is prefetched with the nodes
//!   the builds lay out after it (its first descendants). No heap allocation per query.
//! - [`DynamicAabbTree::validate`], [`DynamicAabbTree::stats`] and
//!   [`DynamicAabbTree::area_ratio`] (SAH cost against a fresh rebuild).
//!
//! ```
//! use voxterra_core::{Aabb, Broadphase, ProxyMove, Ray};
//! use voxterra_core::nalgebra::{Point3, Vector3};
//! use voxterra_dynamic_aabb_tree::DynamicAabbTree;
//!
//! let cube = |x: f32| Aabb::new(Point3::new(x, 0.0, 0.0), Point3::new(x + 1.0, 1.0, 1.0));
//! let mut tree = DynamicAabbTree::new();
//! let a = tree.create_proxy(cube(0.0), 10).unwrap();
//! let b = tree.create_proxy(cube(3.0), 11).unwrap();
//! let ground = tree.create_static_proxy(Aabb::new(Point3::new(-9.0, -1.0, -9.0), Point3::new(9.0, 0.0, 9.0)), 0).unwrap();
//!
//! let mut pairs = Vec::new();
//! tree.update_pairs(&mut |p, q| pairs.push((p, q)));
//! assert_eq!(pairs, [(a, ground), (b, ground)]);
//!
//! // b slides onto a (a batch of one move): only pairs with a mover are reported.
//! tree.move_proxies(&[ProxyMove { id: b, aabb: cube(0.5), displacement: Vector3::new(-2.5, 0.0, 0.0) }]).unwrap();
//! pairs.clear();
//! tree.update_pairs(&mut |p, q| pairs.push((p, q)));
//! assert_eq!(pairs, [(a, b), (b, ground)]);
//!
//! // The closest box along a ray: the callback clips the ray to each hit.
//! let mut first = None;
//! tree.cast_ray(&Ray::new(Point3::new(-5.0, 0.5, 0.5), Vector3::x()), 100.0, &mut |id, ray, limit| {
//!     let t = tree.aabb(id).unwrap().clip_ray(ray, limit).unwrap().0;
//!     first = Some(id);
//!     t
//! });
//! assert!(first == Some(a) || first == Some(b));
//! tree.validate().unwrap();
//! ```

#![forbid(unsafe_code)]

mod pairs;
mod proxies;
mod quad;
mod radix;
mod sah;
mod sink;

pub use proxies::{DynamicAabbTree, DynamicTreeStats, MAX_COORD, ProxyKind, TreeConfig, TreeStats};
pub use quad::InvalidTree;
pub use voxterra_core::ProxyError;
pub use voxterra_core::{Broadphase, ProxyId};
