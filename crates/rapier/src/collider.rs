//! [`RapierTerrain`]: the terrain collider's handle and what a frame loop calls around a step.

use crate::shape::{SharedTerrain, TerrainShape};
use rapier3d::prelude::{
    Collider, ColliderBuilder, ColliderHandle, ColliderSet, IntegrationParameters, MassProperties, Pose,
    RigidBodyBuilder, RigidBodyHandle, RigidBodySet, SharedShape, Vector,
};
use std::sync::Arc;
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::Aabb;
use voxterra::core::nalgebra::Vector3;
use voxterra::detach::DetachedPiece;
use voxterra::{Brush, EditError, EditReport, PrepareBudget, Terrain};

/// A piece of terrain an edit cut loose, spawned as a dynamic body.
#[derive(Clone, Debug)]
pub struct SpawnedPiece {
    /// Its rigid body: at the piece's centre of mass, at rest, with the piece's mass properties.
    pub body: RigidBodyHandle,
    /// Its collider (the piece's shape, its material's friction and restitution, no density: the
    /// body's mass comes from the voxels).
    pub collider: ColliderHandle,
    /// The piece: voxels, render mesh (in the body's frame) and the rest.
    pub piece: DetachedPiece,
}

/// What an edit through [`RapierTerrain`] did.
#[derive(Clone, Debug)]
pub struct RapierEdit {
    /// The terrain's report.
    pub report: EditReport,
    /// The bodies spawned for the pieces the edit (or any edit since the last one through
    /// [`RapierTerrain`]) cut loose, in the terrain's order.
    pub pieces: Vec<SpawnedPiece>,
}

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
    /// correct, but builds what it misses on every query). Call it before each step. A paged
    /// terrain ([`Terrain::paged`]) pages the chunks around the bodies in first; that is the one
    /// way it fails. Returns how many chunks were built.
    pub fn prepare(
        &self,
        bodies: &RigidBodySet,
        colliders: &ColliderSet,
        params: &IntegrationParameters,
    ) -> Result<usize, voxterra::PageError> {
        let Some(frame) = colliders.get(self.collider).map(|c| *c.position()) else { return Ok(0) };
        let paged = self.terrain.read().is_paged();
        if paged {
            let boxes = self.body_boxes(bodies, colliders, params, &frame, &self.terrain.read());
            self.terrain.write().page_in(&boxes)?;
        }
        let terrain = self.terrain.read();
        let boxes = self.body_boxes(bodies, colliders, params, &frame, &terrain);
        Ok(terrain.prepare(&boxes, PrepareBudget::UNLIMITED).built)
    }

    /// The boxes (terrain frame) around every awake dynamic or kinematic body that a step reads.
    fn body_boxes(
        &self,
        bodies: &RigidBodySet,
        colliders: &ColliderSet,
        params: &IntegrationParameters,
        frame: &Pose,
        terrain: &Terrain,
    ) -> Vec<Aabb> {
        let margin = params.prediction_distance() + terrain.scale().length_to_world(PREPARE_MARGIN_VOXELS);
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
        boxes
    }

    /// Applies a brush between steps, then wakes every body near the change and has rapier
    /// recompute its contacts at the next step (rapier 0.36 otherwise reuses the contacts of a pair
    /// that has barely moved), and updates the collider's box if the terrain grew. With the
    /// terrain's [`TerrainConfig::detach`](voxterra::TerrainConfig::detach) set, each piece the
    /// edit cut loose becomes a dynamic body where it was ([`RapierEdit::pieces`]).
    pub fn apply_brush(
        &self,
        brush: &Brush,
        bodies: &mut RigidBodySet,
        colliders: &mut ColliderSet,
    ) -> Result<RapierEdit, EditError> {
        self.edit(bodies, colliders, |t| t.apply_brush(brush))
    }

    /// Runs any edit (`undo`, `redo`, `fill`, a delta...) between steps, its error passed through, with the same
    /// follow-up as [`RapierTerrain::apply_brush`].
    pub fn edit<E>(
        &self,
        bodies: &mut RigidBodySet,
        colliders: &mut ColliderSet,
        edit: impl FnOnce(&mut Terrain) -> Result<EditReport, E>,
    ) -> Result<RapierEdit, E> {
        let (report, grew, detached, table) = {
            let mut t = self.terrain.write();
            let before = t.extent();
            let report = edit(&mut t)?;
            let detached = t.take_detached();
            let table = if detached.is_empty() { None } else { Some(t.materials().clone()) };
            (report, t.extent() != before, detached, table)
        };
        let Some(frame) = colliders.get(self.collider).map(|c| *c.position()) else {
            return Ok(RapierEdit { report, pieces: Vec::new() });
        };
        self.wake_near(&report, grew, frame, bodies, colliders);
        let pieces = match table {
            Some(table) => {
                detached.into_iter().map(|p| spawn_piece(p, &table, frame, bodies, colliders)).collect()
            }
            None => Vec::new(),
        };
        Ok(RapierEdit { report, pieces })
    }

    /// Wakes the bodies an edit's change can reach and has rapier recompute their contacts.
    fn wake_near(
        &self,
        report: &EditReport,
        grew: bool,
        frame: Pose,
        bodies: &mut RigidBodySet,
        colliders: &mut ColliderSet,
    ) {
        let Some(reach) = report.reach else { return };
        // Every contact the change can alter lies in its reach. The box goes to the world frame
        // through its corners.
        let world = Aabb::from_parry(&reach.to_parry().transform_by(&frame));
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
    }
}

/// Adds a piece as a dynamic body at rest where it was in a terrain whose collider sits at
/// `frame`, with its collider (its material's friction and restitution from `table`; its mass
/// properties from its voxels). [`RapierTerrain`]'s edits call it for every piece they cut loose; a
/// game calls it for pieces it takes from a [`Terrain`] itself.
pub fn spawn_piece(
    piece: DetachedPiece,
    table: &voxterra::core::MaterialTable,
    frame: Pose,
    bodies: &mut RigidBodySet,
    colliders: &mut ColliderSet,
) -> SpawnedPiece {
    let (friction, restitution) =
        table.get(piece.material).map_or((0.5, 0.0), |m| (m.friction, m.restitution));
    let m = &piece.mass;
    let mass = MassProperties::with_inertia_matrix(Vector::ZERO, m.mass, m.inertia.to_parry());
    let pose = frame * Pose::from_translation(m.center.to_parry());
    let body = bodies.insert(RigidBodyBuilder::dynamic().pose(pose).additional_mass_properties(mass));
    let collider =
        ColliderBuilder::new(piece.shape.clone()).density(0.0).friction(friction).restitution(restitution);
    let collider = colliders.insert_with_parent(collider, body, bodies);
    SpawnedPiece { body, collider, piece }
}

fn overlaps(co: &Collider, b: &Aabb) -> bool {
    Aabb::from_parry(&co.compute_aabb()).intersects(b)
}
