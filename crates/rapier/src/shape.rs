//! [`TerrainShape`]: the terrain as a parry shape (`ShapeType::Custom`).

use rapier3d::parry::bounding_volume::{Aabb as ParryAabb, BoundingSphere};
use rapier3d::parry::mass_properties::MassProperties;
use rapier3d::parry::math::{Real, Vector};
use rapier3d::parry::query::{PointProjection, PointQuery, Ray as ParryRay, RayCast, RayIntersection};
use rapier3d::parry::shape::{FeatureId, Shape, ShapeType, TypedShape};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};
use voxterra::Terrain;
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::Ray;
use voxterra::core::nalgebra::Point3;
use voxterra::reach::SURFACE_SPILL;

/// A terrain shared between the game (which edits it between steps) and rapier (which reads it
/// during a step, from any of its threads).
#[derive(Clone, Debug)]
pub struct SharedTerrain(Arc<RwLock<Terrain>>);

impl SharedTerrain {
    /// Shares `terrain`.
    pub fn new(terrain: Terrain) -> Self {
        SharedTerrain(Arc::new(RwLock::new(terrain)))
    }

    /// Reads the terrain. A lock poisoned by a panic elsewhere is still read: the terrain's
    /// edits are all-or-nothing, so it is never left half-written.
    pub fn read(&self) -> RwLockReadGuard<'_, Terrain> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The terrain back, when this is its last holder (drop the colliders and rapier's narrow
    /// phase first: the terrain shape holds a clone); otherwise `self`.
    pub fn try_into_inner(self) -> Result<Terrain, Self> {
        match Arc::try_unwrap(self.0) {
            Ok(lock) => Ok(lock.into_inner().unwrap_or_else(|e| e.into_inner())),
            Err(arc) => Err(SharedTerrain(arc)),
        }
    }

    /// Writes the terrain (between steps: rapier reads it during one).
    pub fn write(&self) -> RwLockWriteGuard<'_, Terrain> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// The terrain as a parry shape, for a fixed rapier collider. Its local frame is the terrain's
/// world units; the collider's position moves it like any shape.
///
/// Contacts, intersection tests and shape casts against it come from voxterra's narrowphase
/// through [`TerrainDispatcher`](crate::TerrainDispatcher); the shape itself answers ray casts,
/// point projections, its AABB and its bounding sphere. It has no mass: give it a fixed body (or
/// no body).
#[derive(Clone, Debug)]
pub struct TerrainShape {
    terrain: SharedTerrain,
}

impl TerrainShape {
    /// The shape of `terrain`.
    pub fn new(terrain: SharedTerrain) -> Self {
        TerrainShape { terrain }
    }

    /// The terrain it reads.
    pub fn terrain(&self) -> &SharedTerrain {
        &self.terrain
    }
}

/// The box holding the world (world units: every stored voxel, and a paged terrain's whole
/// world), grown by the voxel the geometry may spill; an empty terrain has a degenerate box at the
/// origin.
fn terrain_aabb(t: &Terrain) -> ParryAabb {
    match t.world_bounds() {
        Some(e) => t.scale().region_to_world(&e, SURFACE_SPILL as f32).to_parry(),
        None => ParryAabb::new(Vector::ZERO, Vector::ZERO),
    }
}

impl Shape for TerrainShape {
    fn compute_local_aabb(&self) -> ParryAabb {
        terrain_aabb(&self.terrain.read())
    }

    fn compute_local_bounding_sphere(&self) -> BoundingSphere {
        let b = self.compute_local_aabb();
        BoundingSphere::new(b.center(), b.half_extents().length())
    }

    fn clone_dyn(&self) -> Box<dyn Shape> {
        Box::new(self.clone())
    }

    /// The terrain scales through its voxel size, not through parry: `None`.
    fn scale_dyn(&self, _scale: Vector, _num_subdivisions: u32) -> Option<Box<dyn Shape>> {
        None
    }

    fn mass_properties(&self, _density: Real) -> MassProperties {
        MassProperties::new(Vector::ZERO, 0.0, Vector::ZERO)
    }

    fn shape_type(&self) -> ShapeType {
        ShapeType::Custom
    }

    fn as_typed_shape(&self) -> TypedShape<'_> {
        TypedShape::Custom(self)
    }

    fn ccd_thickness(&self) -> Real {
        self.terrain.read().voxel_size()
    }

    fn ccd_angular_thickness(&self) -> Real {
        std::f32::consts::FRAC_PI_4
    }

    fn is_convex(&self) -> bool {
        false
    }
}

impl RayCast for TerrainShape {
    /// The first hit through the terrain's chunk walk. The terrain is a surface seen from either
    /// side: `solid` changes nothing, a ray starting under the ground hits it from below.
    fn cast_local_ray_and_get_normal(
        &self,
        ray: &ParryRay,
        max_time_of_impact: Real,
        _solid: bool,
    ) -> Option<RayIntersection> {
        let t = self.terrain.read();
        let hit = t.cast_ray(&Ray::from_parry(ray), max_time_of_impact).ok()??;
        Some(RayIntersection::new(hit.t, hit.normal.to_parry(), FeatureId::Face(hit.triangle)))
    }
}

impl PointQuery for TerrainShape {
    /// The nearest surface point; `is_inside` when `pt` is under the surface. With `solid`, a point
    /// under the surface projects onto itself. An empty terrain projects every point onto itself,
    /// outside.
    fn project_local_point(&self, pt: Vector, solid: bool) -> PointProjection {
        let (p, _) = self.project_local_point_and_get_feature(pt);
        if solid && p.is_inside { PointProjection::new(true, pt) } else { p }
    }

    fn project_local_point_and_get_feature(&self, pt: Vector) -> (PointProjection, FeatureId) {
        let t = self.terrain.read();
        match t.project_point(&Point3::from_parry(pt), f32::INFINITY) {
            Ok(Some(p)) => (PointProjection::new(p.inside, p.point.to_parry()), FeatureId::Face(p.triangle)),
            _ => (PointProjection::new(false, pt), FeatureId::Unknown),
        }
    }
}
