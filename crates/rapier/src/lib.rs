//! # voxterra-rapier
//!
//! voxterra's terrain as a [rapier](https://rapier.rs) 0.36 collider. Use it when rapier
//! integrates your bodies and the ground is a voxterra [`Terrain`](voxterra::Terrain) that the
//! game edits while they rest on it: no triangle-mesh collider to rebuild after an edit, no bumps
//! on internal edges at chunk seams, and collision data built lazily per 8³ chunk.
//!
//! - [`TerrainShape`]: the terrain as a parry shape (`ShapeType::Custom`) over a
//!   [`SharedTerrain`]; it answers ray casts, point projections, its AABB and bounding sphere.
//! - [`TerrainDispatcher`] / [`dispatcher`]: a query dispatcher chained in front of parry's
//!   default one, so every contact, intersection test and shape cast between the terrain and any
//!   collider comes from voxterra's narrowphase. Install it with
//!   `NarrowPhase::with_query_dispatcher(dispatcher())`; rapier's query pipeline takes it from
//!   the narrow phase. A pair keeps its last query's contact points and, while the body moves
//!   less than a quarter of the prediction over an unchanged terrain, moves them with the body
//!   instead of querying again; its queries replay the candidate triangles it kept
//!   ([`voxterra::TerrainContactCache`]) while it moves little.
//! - [`RapierTerrain`]: the collider's handle with the two calls a frame loop needs:
//!   [`RapierTerrain::prepare`] before each step (builds the collision data around every awake
//!   body in parallel, so the step only reads) and [`RapierTerrain::apply_brush`] between steps
//!   (edits, then wakes the bodies whose ground changed). With the terrain's
//!   `TerrainConfig::detach` set, the terrain an edit cuts loose comes back as dynamic bodies
//!   ([`RapierEdit::pieces`], made by [`spawn_piece`]).
//! - [`CharacterController`]: rapier's `KinematicCharacterController` for a world with the
//!   terrain (see below).
//! - [`refused_queries`]: how many queries with the terrain the dispatcher refused (see below).
//!
//! ## When a query is refused
//!
//! rapier drops a pair whose query fails, silently: the bodies of that pair get no contact with
//! the terrain. The dispatcher refuses a pair with a shape it cannot collide (a `TriMesh`, a
//! heightfield, a half-space: anything neither convex nor a compound of convex parts), a pose that
//! is not finite, and the queries voxterra does not answer (`distance`, `closest_points`). Each
//! refusal is counted ([`refused_queries`]; the demo prints it) and logged through the `log` crate
//! (the first as a warning). Forgetting [`dispatcher`] in the narrow phase leaves every pair with
//! the terrain to parry's default dispatcher, which refuses them all without a count: the terrain's
//! collider then has no contacts at all.
//!
//! ## Characters
//!
//! rapier's kinematic character controller moves through the query pipeline, which answers the
//! terrain through [`dispatcher`], but it decides whether the character is grounded (and so
//! whether it snaps to the ground) with parry's default dispatcher, which cannot read a custom
//! shape: on the terrain alone it is never grounded, and a game that falls while airborne pushes
//! its character into every ramp until it stops. Move characters with [`CharacterController`]
//! instead: the same settings and the same movement (it runs rapier's), with `grounded` and snap
//! to ground answered on the terrain too. It climbs to the controller's slope limit and slides
//! beyond it as on a triangle mesh.
//!
//! ## Whose types
//!
//! Everything rapier hands you or takes from you is rapier 0.36's own (glam: `Vector`, `Pose`,
//! colliders and bodies). The terrain's own calls ([`voxterra::Terrain`]'s edits, rays and
//! queries) take voxterra's types: brushes, boxes and rays in nalgebra 0.35, the version rapier
//! uses inside, so a build has one nalgebra. [`voxterra::convert`] turns one into the other.
//!
//! ## bevy_rapier
//!
//! bevy_rapier3d 0.37 (on rapier 0.36) takes the terrain as any `Collider` wrapping a
//! `SharedShape`. Its debug renderer and its mesh conversion draw nothing for a custom shape, and
//! a scaled `Transform` on the terrain's entity leaves the terrain unscaled (bevy_rapier logs
//! "Failed to create the scaled convex hull geometry"): keep that entity's scale at 1 and scale
//! the terrain through its voxel size.
//!
//! ```
//! use rapier3d::prelude::*;
//! use voxterra::worldgen::GenParams;
//! use voxterra_rapier::{RapierTerrain, SharedTerrain, dispatcher};
//!
//! let terrain = voxterra::Terrain::generate(&GenParams::new(3, [64, 48, 64]), voxterra::TerrainConfig::default())?;
//! let mut world = PhysicsWorld::default();
//! world.narrow_phase = NarrowPhase::with_query_dispatcher(dispatcher());
//! let ground = RapierTerrain::insert(SharedTerrain::new(terrain), &mut world.colliders);
//! let (ball, _) = world.insert(
//!     RigidBodyBuilder::dynamic().translation(Vector::new(32.0, 40.0, 32.0)),
//!     ColliderBuilder::ball(0.5),
//! );
//! for _ in 0..240 {
//!     ground.prepare(&world.bodies, &world.colliders, &world.integration_parameters)?;
//!     world.step();
//! }
//! // The ball has landed (and rolls down the slope): it rests on the ground under it, which
//! // rapier's own ray cast finds on the terrain collider.
//! let p = world.bodies[ball].translation();
//! let down = Ray::new(Vector::new(p.x, 60.0, p.z), -Vector::Y);
//! let filter = QueryFilter::default().exclude_rigid_body(ball);
//! let (hit, t) = world.cast_ray(&down, 100.0, true, filter).expect("ground under the ball");
//! assert_eq!(hit, ground.collider());
//! assert!((p.y - 0.5 - (60.0 - t)).abs() < 0.05, "{} vs {}", p.y, 60.0 - t);
//! # Ok::<(), voxterra::TerrainError>(())
//! ```

#![forbid(unsafe_code)]

mod character;
mod collider;
mod dispatcher;
mod shape;

pub use character::CharacterController;
pub use collider::{RapierEdit, RapierTerrain, SpawnedPiece, spawn_piece};
pub use dispatcher::{TerrainDispatcher, dispatcher, refused_queries};
pub use shape::{SharedTerrain, TerrainShape};
