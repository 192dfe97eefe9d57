//! [`World`]'s queries: the manifolds of every live contact, and rays and shape casts against the
//! bodies and the terrain together.

use crate::error::QueryError;
use crate::terrain_query::TerrainManifold;
use crate::terrain_ray::TerrainRayHit;
use crate::workspace::map_shared;
use crate::world::{Body, BodyHandle, World, WorldError};
use rayon::prelude::*;
use voxterra_bit_broadphase::ContactKind;
use voxterra_core::nalgebra::{Point3, Unit, Vector3};
use voxterra_core::{Aabb, Broadphase, Material, PhysicsChunkKey, Ray};
use voxterra_narrowphase::CastOptions;
use voxterra_narrowphase::convert::{FromParry, ToParry};
use voxterra_narrowphase::parry3d::math::{Pose, Vector};
use voxterra_narrowphase::parry3d::query::{
    self, ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher, ShapeCastOptions,
};
use voxterra_narrowphase::parry3d::shape::Shape;

/// A manifold between two bodies, in world space: one per parry manifold (a compound body touching
/// with several parts has one per part, each with its own normal).
#[derive(Clone, Debug)]
pub struct BodyManifold {
    /// The first body (`a < b`).
    pub a: BodyHandle,
    /// The second body.
    pub b: BodyHandle,
    /// The part of `a`'s shape touching (its index in a compound; 0 for a plain shape).
    pub part_a: u32,
    /// The part of `b`'s shape touching.
    pub part_b: u32,
    /// Unit normal from `a` toward `b`.
    pub normal: Unit<Vector3<f32>>,
    /// Points: (on `a`, on `b`, signed distance; negative when penetrating).
    pub points: Vec<(Point3<f32>, Point3<f32>, f32)>,
}

/// Every manifold of one [`World::contacts`] call.
#[derive(Clone, Debug, Default)]
pub struct WorldContacts {
    /// Body–terrain manifolds, by body then chunk.
    pub terrain: Vec<(BodyHandle, TerrainManifold)>,
    /// Body–body manifolds, by pair.
    pub bodies: Vec<BodyManifold>,
}

impl WorldContacts {
    /// Empties both lists, keeping their buffers.
    pub fn clear(&mut self) {
        self.terrain.clear();
        self.bodies.clear();
    }
}

/// What a ray or shape cast hit.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum HitTarget {
    /// A body.
    Body(BodyHandle),
    /// The terrain: the physics chunk, the triangle's index in its physics mesh, and (for rays) the
    /// material of the triangle's nearest vertex.
    Terrain {
        /// The physics chunk.
        chunk: PhysicsChunkKey,
        /// The triangle in its physics mesh.
        triangle: u32,
        /// The material of the triangle's vertex nearest the hit.
        material: Material,
    },
}

/// A ray's first hit in a [`World`] (world units).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct WorldRayHit {
    /// Ray parameter of the hit.
    pub t: f32,
    /// The point hit.
    pub point: Point3<f32>,
    /// The surface normal there, on the side the ray came from.
    pub normal: Unit<Vector3<f32>>,
    /// What was hit.
    pub target: HitTarget,
}

impl From<TerrainRayHit> for WorldRayHit {
    fn from(h: TerrainRayHit) -> Self {
        WorldRayHit {
            t: h.t,
            point: h.point,
            normal: h.normal,
            target: HitTarget::Terrain { chunk: h.chunk, triangle: h.triangle, material: h.material },
        }
    }
}

/// A shape cast's first hit in a [`World`] (world units).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct WorldShapeHit {
    /// Time of impact, in units of the velocity.
    pub toi: f32,
    /// The cast shape's point of first contact.
    pub on_shape: Point3<f32>,
    /// The point it meets on the target.
    pub on_target: Point3<f32>,
    /// The target's normal at the contact, toward the cast shape.
    pub normal: Unit<Vector3<f32>>,
    /// What was hit.
    pub target: HitTarget,
}

impl World {
    /// The manifolds of every live contact as of the last step, in parallel (the same result on
    /// any thread count): each body against the chunks of its solid terrain contacts, and each
    /// live pair through parry. Chunks the cache lacks are built as the queries meet them.
    pub fn contacts(&self, out: &mut WorldContacts) -> Result<(), WorldError> {
        out.clear();
        let prediction = self.config.prediction;
        let terrain = &self.terrain;
        let touching: Vec<(u32, &Body)> = self
            .slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.body.as_ref().map(|b| (i as u32, b)))
            .filter(|(_, b)| b.terrain.contacts().iter().any(|c| c.kind == ContactKind::Solid))
            .collect();
        let per_body: Vec<Result<Vec<TerrainManifold>, QueryError>> = map_shared(&touching, |(_, b)| {
            let keys: Vec<PhysicsChunkKey> = b
                .terrain
                .contacts()
                .iter()
                .filter(|c| c.kind == ContactKind::Solid)
                .map(|c| c.chunk)
                .collect();
            let mut m = Vec::new();
            terrain.contacts_in(b.shape(), b.pose(), prediction, &keys, &mut m, None)?;
            Ok(m)
        });
        for ((i, _), r) in touching.iter().zip(per_body) {
            let h = self.handle(*i);
            out.terrain.extend(r?.into_iter().map(|m| (h, m)));
        }

        let pairs: Vec<(u32, u32)> = self.pairs.iter().copied().collect();
        let slots = &self.slots;
        let per_pair: Vec<Result<Vec<BodyManifold>, WorldError>> = map_shared(&pairs, |&(a, b)| {
            let (Some(ba), Some(bb)) = (slots[a as usize].body.as_ref(), slots[b as usize].body.as_ref())
            else {
                return Ok(Vec::new());
            };
            let ha = BodyHandle { index: a, generation: slots[a as usize].generation };
            let hb = BodyHandle { index: b, generation: slots[b as usize].generation };
            body_manifolds(ha, ba, hb, bb, prediction)
        });
        for r in per_pair {
            out.bodies.extend(r?);
        }
        Ok(())
    }

    /// The first hit of `ray` (world units) with `t` in `[0, max_t]` among the bodies and the
    /// terrain; a tie goes to the terrain.
    pub fn cast_ray(&self, ray: &Ray, max_t: f32) -> Result<Option<WorldRayHit>, WorldError> {
        let terrain = self.terrain.cast_ray(ray, max_t)?;
        let limit = terrain.map_or(max_t, |h| h.t);
        Ok(match self.cast_ray_bodies(ray, limit) {
            Some(b) if terrain.is_none_or(|t| b.t < t.t) => Some(b),
            _ => terrain.map(WorldRayHit::from),
        })
    }

    /// [`World::cast_ray`] for many rays, in parallel (the same hits on any thread count).
    pub fn cast_rays(
        &self,
        rays: &[Ray],
        max_t: f32,
        hits: &mut Vec<Option<WorldRayHit>>,
    ) -> Result<(), WorldError> {
        let mut terrain = Vec::new();
        self.terrain.cast_rays(rays, max_t, &mut terrain)?;
        let this = self;
        rays.par_iter()
            .zip(terrain)
            .map(|(r, t)| {
                let limit = t.map_or(max_t, |h| h.t);
                match this.cast_ray_bodies(r, limit) {
                    Some(b) if t.is_none_or(|t| b.t < t.t) => Some(b),
                    _ => t.map(WorldRayHit::from),
                }
            })
            .collect_into_vec(hits);
        Ok(())
    }

    /// The nearest body a ray hits with `t` in `[0, limit]`; ties to the lowest handle.
    fn cast_ray_bodies(&self, ray: &Ray, limit: f32) -> Option<WorldRayHit> {
        let pray = ray.to_parry();
        let mut best: Option<WorldRayHit> = None;
        self.tree.cast_ray(ray, limit, &mut |id, _, lim| {
            let Some(i) = self.tree.user_data(id) else { return lim };
            let h = self.handle(i as u32);
            let Some(body) = self.slots[i as usize].body.as_ref() else { return lim };
            match body.shape().cast_ray_and_get_normal(body.pose(), &pray, lim, true) {
                Some(hit)
                    if best.is_none_or(|b| {
                        hit.time_of_impact < b.t || (hit.time_of_impact == b.t && h < body_of(&b))
                    }) =>
                {
                    let normal = Unit::try_new(Vector3::from_parry(hit.normal), 1e-12)
                        .unwrap_or(-Unit::new_normalize(ray.dir));
                    best = Some(WorldRayHit {
                        t: hit.time_of_impact,
                        point: ray.point_at(hit.time_of_impact),
                        normal,
                        target: HitTarget::Body(h),
                    });
                    hit.time_of_impact
                }
                _ => lim,
            }
        });
        best
    }

    /// The first time `shape`, starting at `pose` and moving by `velocity` per unit time (world
    /// units), touches a body or the terrain with time of impact in `[0, max_toi]`; a tie goes to
    /// the terrain, then the lowest handle. `exclude` names a body to ignore (the caster itself).
    pub fn cast_shape(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
        velocity: Vector,
        max_toi: f32,
        exclude: Option<BodyHandle>,
    ) -> Result<Option<WorldShapeHit>, WorldError> {
        let terrain = self.terrain.cast_shape(shape, pose, velocity, max_toi, CastOptions::default())?;
        let mut best: Option<WorldShapeHit> = terrain.map(|(chunk, h)| WorldShapeHit {
            toi: h.toi,
            on_shape: h.on_shape,
            on_target: h.on_triangle,
            normal: h.normal,
            target: HitTarget::Terrain {
                chunk,
                triangle: h.id.triangle,
                material: self.terrain.material_near(chunk, h.id.triangle, &h.on_triangle),
            },
        });
        let start = Aabb::from_parry(&shape.compute_aabb(pose));
        let swept = start.swept(&Vector3::from_parry(velocity * max_toi));
        let mut candidates = Vec::new();
        self.tree.query_aabb(&swept, &mut |id| {
            candidates.extend(self.tree.user_data(id).map(|u| u as u32));
            true
        });
        candidates.sort_unstable();
        for i in candidates {
            let h = self.handle(i);
            if Some(h) == exclude {
                continue;
            }
            let Some(body) = self.slots[i as usize].body.as_ref() else { continue };
            let limit = best.map_or(max_toi, |b| b.toi);
            let options = ShapeCastOptions { max_time_of_impact: limit, ..ShapeCastOptions::default() };
            let hit =
                query::cast_shapes(pose, velocity, shape, body.pose(), Vector::ZERO, body.shape(), options)
                    .map_err(|_| WorldError::Unsupported)?;
            if let Some(hit) = hit
                && best.is_none_or(|b| hit.time_of_impact < b.toi)
            {
                let cast_pose = pose.append_translation(velocity * hit.time_of_impact);
                let at_body = body.pose();
                best = Some(WorldShapeHit {
                    toi: hit.time_of_impact,
                    on_shape: Point3::from_parry(cast_pose * hit.witness1),
                    on_target: Point3::from_parry(at_body * hit.witness2),
                    normal: Unit::from_parry(at_body.rotation * hit.normal2),
                    target: HitTarget::Body(h),
                });
            }
        }
        Ok(best)
    }
}

fn body_of(hit: &WorldRayHit) -> BodyHandle {
    match hit.target {
        HitTarget::Body(h) => h,
        HitTarget::Terrain { .. } => BodyHandle { index: u32::MAX, generation: u32::MAX },
    }
}

/// The manifolds of two bodies through parry's dispatcher (world space), one per parry manifold
/// with a point within `prediction`, each with its own normal.
fn body_manifolds(
    ha: BodyHandle,
    a: &Body,
    hb: BodyHandle,
    b: &Body,
    prediction: f32,
) -> Result<Vec<BodyManifold>, WorldError> {
    let pos12 = a.pose().inv_mul(b.pose());
    let mut manifolds: Vec<ContactManifold<(), ()>> = Vec::new();
    DefaultQueryDispatcher
        .contact_manifolds(&pos12, a.shape(), b.shape(), prediction, &mut manifolds, &mut None)
        .map_err(|_| WorldError::Unsupported)?;
    let mut out = Vec::new();
    for m in &manifolds {
        let pa = m.subshape_pos1().map_or(*a.pose(), |p| *a.pose() * *p);
        let pb = m.subshape_pos2().map_or(*b.pose(), |p| *b.pose() * *p);
        let points: Vec<_> = m
            .points
            .iter()
            .filter(|c| c.dist <= prediction)
            .map(|c| (Point3::from_parry(pa * c.local_p1), Point3::from_parry(pb * c.local_p2), c.dist))
            .collect();
        let normal = Unit::try_new(Vector3::from_parry(pa.rotation * m.local_n1), 1e-12);
        if let (false, Some(normal)) = (points.is_empty(), normal) {
            out.push(BodyManifold { a: ha, b: hb, part_a: m.subshape1, part_b: m.subshape2, normal, points });
        }
    }
    Ok(out)
}
