//! [`RapierTerrain`]: the terrain collider's handle and what a frame loop calls around a step.

use crate::shape::{SharedTerrain, TerrainShape};
use rapier3d::prelude::{
    Collider, ColliderBuilder, ColliderHandle, ColliderSet, IntegrationParameters, RigidBodySet, SharedShape,
};
use std::sync::Arc;
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::Aabb;
use voxterra::core::nalgebra::Vector3;
use voxterra::reach::CONTACT_REACH;
use voxterra::{Brush, EditReport, Terrain, TerrainError};

/// The terrain's collider in a rapier `ColliderSet`, and the shared terrain it reads.
#[derive(Clone, Debug)]
pub struct RapierTerrain {
    terrain: SharedTerrain,
    collider: ColliderHandle,
}

/// How far around each awake body [`RapierTerrain::prepare`] readies the terrain beyond its
/// box swept over the step, in voxels: the solver may push a body a little past its predicted
/// motion.
const PREPARE_MARGIN_VOXELS: f32 = 1.0;

impl RapierTerrain {
    /// Adds a fixed collider for `terrain` (no parent body) to `colliders`.
    pub fn insert(terrain: SharedTerrain, colliders: &mut ColliderSet) -> Self {
        Self::insert_with(terrain, colliders, |b| b)
    }

    /// As [`RapierTerrain::insert`], letting `build` set the collider's friction, restitution,
    /// position, groups and so on.
    pub fn insert_with(
        terrain: SharedTerrain,
        colliders: &mut ColliderSet,
        build: impl FnOnce(ColliderBuilder) -> ColliderBuilder,
    ) -> Self {
        let shape = SharedShape(Arc::new(TerrainShape::new(terrain.clone())));
        let collider = colliders.insert(build(ColliderBuilder::new(shape)).build());
        RapierTerrain { terrain, collider }
    }

    /// The collider's handle.
    pub fn collider(&self) -> ColliderHandle {
        self.collider
    }

    /// The shared terrain.
    pub fn terrain(&self) -> &SharedTerrain {
        &self.terrain
    }

    /// Readies the terrain's collision data around every awake dynamic or kinematic body, in
    /// parallel, so the step that follows only reads the cache (a step run without it is still
    /// correct, but builds what it misses on every query). Call it before each step. Returns how
    /// many chunks were built.
    pub fn prepare(
        &self,
        bodies: &RigidBodySet,
        colliders: &ColliderSet,
        params: &IntegrationParameters,
    ) -> usize {
        let Some(frame) = colliders.get(self.collider).map(|c| *c.position()) else { return 0 };
        let terrain = self.terrain.read();
        let margin = params.prediction_distance() + PREPARE_MARGIN_VOXELS * terrain.voxel_size();
        let mut boxes = Vec::new();
        for (_, co) in colliders.iter() {
            let Some(body) = co.parent().and_then(|p| bodies.get(p)) else { continue };
            if !body.is_dynamic_or_kinematic() || body.is_sleeping() {
                continue;
            }
            let step = Vector3::from_parry(body.linvel() * params.dt);
            let b = Aabb::from_parry(&co.compute_aabb()).swept(&step);
            // Into the terrain's frame: the box holding the rotated box.
            let local = Aabb::from_parry(&b.to_parry().transform_by(&frame.inverse()));
            boxes.push(local.loosened(margin + co.contact_skin()));
        }
        terrain.prepare_boxes(&boxes)
    }

    /// Applies a brush between steps, then wakes every body near the change and has rapier
    /// recompute its contacts at the next step (rapier 0.36 otherwise reuses the contacts of a pair
    /// that has barely moved), and updates the collider's box if the terrain grew.
    pub fn apply_brush(
        &self,
        brush: &Brush,
        bodies: &mut RigidBodySet,
        colliders: &mut ColliderSet,
    ) -> Result<EditReport, TerrainError> {
        self.edit(bodies, colliders, |t| t.apply_brush(brush))
    }

    /// Runs any edit (`undo`, `redo`, `fill`, `apply_delta`...) between steps, with the same
    /// follow-up as [`RapierTerrain::apply_brush`].
    pub fn edit(
        &self,
        bodies: &mut RigidBodySet,
        colliders: &mut ColliderSet,
        edit: impl FnOnce(&mut Terrain) -> Result<EditReport, TerrainError>,
    ) -> Result<EditReport, TerrainError> {
        let (report, vs, grew) = {
            let mut t = self.terrain.write();
            let before = t.extent();
            let report = edit(&mut t)?;
            (report, t.voxel_size(), t.extent() != before)
        };
        let Some(dirty) = report.dirty else { return Ok(report) };
        let Some(frame) = colliders.get(self.collider).map(|c| *c.position()) else { return Ok(report) };
        // Every contact the change can alter lies this close to it. The box goes to the world
        // frame through its corners.
        let reach = CONTACT_REACH as f32;
        let lo = dirty.min().map(|v| (v as f32 - reach) * vs);
        let hi = dirty.max().map(|v| (v as f32 + reach) * vs);
        let world = Aabb::from_parry(&Aabb::new(lo, hi).to_parry().transform_by(&frame));
        let near: Vec<ColliderHandle> = colliders
            .iter()
            .filter(|(h, co)| *h != self.collider && overlaps(co, &world))
            .map(|(h, _)| h)
            .collect();
        for h in near {
            let Some(co) = colliders.get_mut(h) else { continue };
            // rapier keeps (recycles) the contacts of a pair that barely moved, and a sleeping
            // body's: re-setting the shape marks the collider changed, so its contacts with the
            // new terrain are computed at the next step.
            co.set_shape(co.shared_shape().clone());
            if let Some(b) = co.parent().and_then(|p| bodies.get_mut(p)) {
                b.wake_up(true);
            }
        }
        if grew && let Some(co) = colliders.get_mut(self.collider) {
            // A new shape handle makes rapier recompute the collider's box.
            co.set_shape(co.shared_shape().clone());
        }
        Ok(report)
    }
}

fn overlaps(co: &Collider, b: &Aabb) -> bool {
    Aabb::from_parry(&co.compute_aabb()).intersects(b)
}
