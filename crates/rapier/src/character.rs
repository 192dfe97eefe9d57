//! [`CharacterController`]: rapier's kinematic character controller, grounded on the terrain.

use crate::dispatcher::dispatcher;
use rapier3d::control::{
    CharacterCollision, CharacterLength, EffectiveCharacterMovement, KinematicCharacterController,
};
use rapier3d::parry::bounding_volume::BoundingVolume;
use rapier3d::parry::math::{Pose, Real, Vector};
use rapier3d::parry::query::{ContactManifold, PersistentQueryDispatcher, ShapeCastOptions};
use rapier3d::parry::shape::Shape;
use rapier3d::pipeline::{QueryPipeline, QueryPipelineMut};
use std::ops::{Deref, DerefMut};

/// rapier's [`KinematicCharacterController`] for a world with a terrain collider: the same
/// settings and the same movement (walls, slopes, steps and sliding are rapier's own code), with
/// the two parts rapier computes outside the query pipeline redone through voxterra's
/// [`dispatcher`]: whether the character is **grounded**, and therefore **snap to ground**.
///
/// rapier's controller casts the character through the query pipeline (which answers the terrain
/// through the dispatcher), but decides `grounded` with parry's default dispatcher, which has no
/// routine for the terrain's custom shape: on the terrain alone it is never grounded, never
/// snaps, and a game that adds gravity while airborne pushes the character into every ramp until
/// it stops. This type answers `grounded` as rapier does (a contact within the controller's
/// offset plus 5 cm whose normal points less than 90° from `up`) for every collider, terrain or
/// not, and snaps when rapier would (grounded at the start, not moving up).
///
/// Use it where you would use `KinematicCharacterController`: it derefs to it for the settings,
/// and [`CharacterController::move_shape`] takes the same arguments. The query pipeline must use
/// voxterra's dispatcher, as `PhysicsWorld::query_pipeline` does when the narrow phase was built
/// with [`dispatcher`].
///
/// ```
/// use rapier3d::control::KinematicCharacterController;
/// use rapier3d::prelude::*;
/// use voxterra::core::nalgebra::{Point3, Vector3};
/// use voxterra::worldgen::GenParams;
/// use voxterra_rapier::{CharacterController, RapierTerrain, SharedTerrain, dispatcher};
///
/// let terrain = voxterra::Terrain::generate(&GenParams::new(3, [64, 48, 64]), voxterra::TerrainConfig::default())?;
/// let mut world = PhysicsWorld::default();
/// world.narrow_phase = NarrowPhase::with_query_dispatcher(dispatcher());
/// let ground = RapierTerrain::insert(SharedTerrain::new(terrain), &mut world.colliders);
///
/// // A capsule character a little above the ground.
/// let down = voxterra::core::Ray::new(Point3::new(32.0, 60.0, 32.0), -Vector3::y());
/// let hit = ground.terrain().read().cast_ray(&down, 100.0)?.expect("ground");
/// let start = Vector::new(32.0, hit.point.y + 1.0, 32.0);
/// let shape = SharedShape::capsule_y(0.45, 0.3);
/// let (body, _) = world.insert(
///     RigidBodyBuilder::kinematic_position_based().translation(start),
///     ColliderBuilder::new(shape.clone()),
/// );
/// let controller = CharacterController::new(KinematicCharacterController::default());
/// let dt = world.integration_parameters.dt;
/// let (mut pose, mut fall, mut grounded) = (Pose::from_translation(start), 0.0, 0);
/// for _ in 0..120 {
///     ground.prepare(&world.bodies, &world.colliders, &world.integration_parameters)?;
///     let walk = Vector::new(2.0, -fall, 0.0) * dt;
///     let queries = world.query_pipeline_with_filter(QueryFilter::default().exclude_rigid_body(body));
///     let moved = controller.move_shape(dt, &queries, &*shape, &pose, walk, |_| {});
///     pose.translation += moved.translation;
///     world.bodies[body].set_next_kinematic_translation(pose.translation);
///     // Gravity while airborne, none on the ground.
///     fall = if moved.grounded { 0.0 } else { fall + 9.81 * dt };
///     grounded += usize::from(moved.grounded);
///     world.step();
/// }
/// // It dropped to the ground within a few steps, then walked on it.
/// assert!(grounded > 100, "grounded {grounded} of 120 steps");
/// # Ok::<(), voxterra::TerrainError>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct CharacterController {
    /// rapier's controller: its settings and its movement.
    pub controller: KinematicCharacterController,
}

impl Default for CharacterController {
    fn default() -> Self {
        Self::new(KinematicCharacterController::default())
    }
}

impl From<KinematicCharacterController> for CharacterController {
    fn from(controller: KinematicCharacterController) -> Self {
        Self::new(controller)
    }
}

impl Deref for CharacterController {
    type Target = KinematicCharacterController;
    fn deref(&self) -> &KinematicCharacterController {
        &self.controller
    }
}

impl DerefMut for CharacterController {
    fn deref_mut(&mut self) -> &mut KinematicCharacterController {
        &mut self.controller
    }
}

impl CharacterController {
    /// Wraps rapier's controller with these settings.
    pub fn new(controller: KinematicCharacterController) -> Self {
        CharacterController { controller }
    }

    /// The movement of `character_shape` at `character_pos` asked to move by
    /// `desired_translation`, as [`KinematicCharacterController::move_shape`] computes it, with
    /// `grounded` and snap to ground answered on the terrain too. `events` hears every collision
    /// on the way (pass them to [`Self::solve_character_collision_impulses`] to push dynamic
    /// bodies).
    pub fn move_shape(
        &self,
        dt: Real,
        queries: &QueryPipeline<'_>,
        character_shape: &dyn Shape,
        character_pos: &Pose,
        desired_translation: Vector,
        events: impl FnMut(CharacterCollision),
    ) -> EffectiveCharacterMovement {
        let up_extent = up_extent(self.controller.up, character_shape);
        let grounded_at_start = self.grounded(queries, character_shape, character_pos, up_extent);
        let mut result = self.controller.move_shape(
            dt,
            queries,
            character_shape,
            character_pos,
            desired_translation,
            events,
        );
        let end = Pose::from_translation(result.translation) * *character_pos;
        if grounded_at_start && self.snap(queries, character_shape, &end, up_extent, &mut result) {
            result.grounded = true;
        } else if !result.grounded {
            result.grounded = self.grounded(queries, character_shape, &end, up_extent);
        }
        result
    }

    /// rapier's impulses on the dynamic bodies the character hit (the terrain is never one of
    /// them).
    pub fn solve_character_collision_impulses<'a>(
        &self,
        dt: Real,
        queries: &mut QueryPipelineMut<'_>,
        character_shape: &dyn Shape,
        character_mass: Real,
        collisions: impl IntoIterator<Item = &'a CharacterCollision>,
    ) {
        self.controller.solve_character_collision_impulses(
            dt,
            queries,
            character_shape,
            character_mass,
            collisions,
        );
    }

    /// rapier's ground test: some contact within the controller's offset plus 5 cm whose normal
    /// (from the ground to the character) is less than 90° from `up`.
    fn grounded(&self, queries: &QueryPipeline<'_>, shape: &dyn Shape, pos: &Pose, up_extent: Real) -> bool {
        let up = self.controller.up;
        let prediction = eval(self.controller.offset, up_extent) + 0.05;
        let aabb = shape.compute_aabb(pos).loosened(prediction);
        let mut manifolds: Vec<ContactManifold<(), ()>> = Vec::new();
        queries.intersect_aabb_conservative(aabb).any(|(_, collider)| {
            manifolds.clear();
            let pos12 = pos.inv_mul(collider.position());
            let found = dispatcher().contact_manifolds(
                &pos12,
                shape,
                collider.shape(),
                prediction,
                &mut manifolds,
                &mut None,
            );
            found.is_ok()
                && manifolds.iter().any(|m| {
                    let normal = -(pos.rotation * m.local_n1);
                    normal.dot(up) >= 1.0e-3 && m.points.iter().any(|p| p.dist <= prediction)
                })
        })
    }

    /// rapier's snap to ground: when the move does not go up, a cast down by the snap distance;
    /// true when it found ground (the move then ends on it).
    fn snap(
        &self,
        queries: &QueryPipeline<'_>,
        shape: &dyn Shape,
        pos: &Pose,
        up_extent: Real,
        result: &mut EffectiveCharacterMovement,
    ) -> bool {
        let c = &self.controller;
        let Some(distance) = c.snap_to_ground else { return false };
        if result.translation.dot(c.up) > 0.0 {
            return false;
        }
        let options = ShapeCastOptions {
            target_distance: eval(c.offset, up_extent),
            stop_at_penetration: false,
            max_time_of_impact: eval(distance, up_extent),
            compute_impact_geometry_on_penetration: true,
        };
        match queries.cast_shape(pos, -c.up, shape, options) {
            Some((_, hit)) => {
                result.translation -= c.up * hit.time_of_impact;
                true
            }
            None => false,
        }
    }
}

/// The shape's extent along `up`, which rapier's relative lengths scale with.
fn up_extent(up: Vector, shape: &dyn Shape) -> Real {
    shape.compute_local_aabb().extents().dot(up.abs())
}

fn eval(length: CharacterLength, up_extent: Real) -> Real {
    match length {
        CharacterLength::Relative(x) => x * up_extent,
        CharacterLength::Absolute(x) => x,
    }
}
