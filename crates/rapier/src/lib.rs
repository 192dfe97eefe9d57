//! # voxterra-rapier
//!
//! voxterra's terrain as a [rapier](https://rapier.rs) 0.31 collider. Use it when rapier
//! integrates your bodies and the ground is a voxterra [`Terrain`](voxterra::Terrain) that the
//! game edits while they rest on it: no triangle-mesh collider to rebuild after an edit, no bumps
//! on internal edges at chunk seams, and collision data built lazily per 8³ chunk.
//!
//! - [`TerrainShape`]: the terrain as a parry shape (`ShapeType::Custom`) over a
//!   [`SharedTerrain`]; it answers ray casts, point projections, its AABB and bounding sphere.
//! - [`TerrainDispatcher`] / [`dispatcher`]: a query dispatcher chained in front of parry's
//!   default one, so every contact, intersection test and shape cast between the terrain and any
//!   collider comes from voxterra's narrowphase. Install it with
//!   `NarrowPhase::with_query_dispatcher(dispatcher())` and pass it to rapier's query pipeline.
//! - [`RapierTerrain`]: the collider's handle with the two calls a frame loop needs:
//!   [`RapierTerrain::prepare`] before each step (builds the collision data around every awake
//!   body in parallel, so the step only reads) and [`RapierTerrain::apply_brush`] between steps
//!   (edits, then wakes the bodies whose ground changed).
//!
//! ## bevy_rapier
//!
//! bevy_rapier3d 0.32 and 0.33 use rapier 0.31, but their `Collider` wrapper matches
//! `TypedShape::Custom(_) => todo!()` in its `Debug` impl and in `set_scale`: printing a
//! terrain collider with `{:?}` (inspector plugins do) or giving its entity a scaled
//! `Transform` panics. Keep the terrain entity's scale at 1 (the terrain scales through its voxel
//! size) and keep it out of debug printing and inspectors.
//!
//! ```
//! use rapier3d::prelude::*;
//! use voxterra::worldgen::WorldParams;
//! use voxterra_rapier::{RapierTerrain, SharedTerrain, dispatcher};
//!
//! let terrain = voxterra::Terrain::generate(&WorldParams::new(3, [64, 48, 64]), 1.0, |_, _| {})?;
//! let (mut bodies, mut colliders) = (RigidBodySet::new(), ColliderSet::new());
//! let ground = RapierTerrain::insert(SharedTerrain::new(terrain), &mut colliders);
//! let ball = bodies.insert(RigidBodyBuilder::dynamic().translation(vector![32.0, 40.0, 32.0]));
//! colliders.insert_with_parent(ColliderBuilder::ball(0.5), ball, &mut bodies);
//!
//! let mut narrow_phase = NarrowPhase::with_query_dispatcher(dispatcher());
//! let (mut pipeline, mut islands, mut broad_phase) = (PhysicsPipeline::new(), IslandManager::new(), DefaultBroadPhase::new());
//! let (mut joints, mut multibody, mut ccd) = (ImpulseJointSet::new(), MultibodyJointSet::new(), CCDSolver::new());
//! let params = IntegrationParameters::default();
//! for _ in 0..240 {
//!     ground.prepare(&bodies, &colliders, &params);
//!     pipeline.step(&vector![0.0, -9.81, 0.0], &params, &mut islands, &mut broad_phase, &mut narrow_phase,
//!         &mut bodies, &mut colliders, &mut joints, &mut multibody, &mut ccd, &(), &());
//! }
//! // The ball has landed (and rolls down the slope): it rests on the ground under it.
//! let p = bodies[ball].translation();
//! let down = voxterra::core::Ray::new([p.x, 60.0, p.z].into(), -voxterra::core::nalgebra::Vector3::y());
//! let floor = ground.terrain().read().cast_ray_shared(&down, 100.0)?.expect("ground under the ball");
//! assert!((p.y - 0.5 - floor.point.y).abs() < 0.05, "{} vs {}", p.y, floor.point.y);
//! # Ok::<(), voxterra::TerrainError>(())
//! ```

#![forbid(unsafe_code)]

mod collider;
mod dispatcher;
mod shape;

pub use collider::RapierTerrain;
pub use dispatcher::{TerrainDispatcher, dispatcher};
pub use shape::{SharedTerrain, TerrainShape};
