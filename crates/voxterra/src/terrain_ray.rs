//! Ray casts against the terrain: through the chunks' ray tree (`chunk_tree`), nearest box
//! first, each chunk's kD tree cast within the best hit so far. The tree holds a box for every
//! chunk that may hold triangles (tight where built), so the first hit is final once no box
//! remains entered before it.

use crate::collision_cache::ChunkCollision;
use crate::error::QueryError;
use crate::terrain::Terrain;
use crate::workspace::with_workspace;
use rayon::prelude::*;
use voxterra_core::nalgebra::{Point3, Unit, Vector3};
use voxterra_core::{Culling, Material, PhysicsChunkKey, Ray, TriangleIndex, TriangleSource};
use voxterra_mesher::MeshWorkspace;

/// Where a ray meets the terrain (world units).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TerrainRayHit {
    /// Ray parameter: the hit is at `origin + dir × t`.
    pub t: f32,
    /// The point hit.
    pub point: Point3<f32>,
    /// The triangle's face normal, on the side the ray came from.
    pub normal: Unit<Vector3<f32>>,
    /// The material of the triangle's nearest vertex.
    pub material: Material,
    /// The physics chunk whose triangle was hit.
    pub chunk: PhysicsChunkKey,
    /// The triangle's index in that chunk's physics mesh.
    pub triangle: u32,
}

impl Terrain {
    /// The first hit of `ray` (world units; `dir` need not be unit) with `t` in `[0, max_t]`, ties
    /// to the lowest chunk then triangle. Rays with a zero or non-finite direction, a non-finite
    /// origin or a negative or NaN `max_t` are errors. Builds the cache entries of the chunks it
    /// tests that the cache lacks (see [`Terrain::prepare`]).
    pub fn cast_ray(&self, ray: &Ray, max_t: f32) -> Result<Option<TerrainRayHit>, QueryError> {
        check_ray(ray, max_t)?;
        Ok(with_workspace(|ws| self.walk(ray, max_t, &mut ws.mesh)))
    }

    /// [`Terrain::cast_ray`] for many rays, in parallel on the current rayon pool: `hits[i]` gets
    /// ray `i`'s hit (`hits` is resized to `rays`). The hits are the same for any thread count.
    pub fn cast_rays(
        &self,
        rays: &[Ray],
        max_t: f32,
        hits: &mut Vec<Option<TerrainRayHit>>,
    ) -> Result<(), QueryError> {
        for r in rays {
            check_ray(r, max_t)?;
        }
        rays.par_iter()
            .map(|r| with_workspace(|ws| self.walk(r, max_t, &mut ws.mesh)))
            .collect_into_vec(hits);
        Ok(())
    }

    /// The chunks' ray tree, nearest box first (voxel units inside).
    fn walk(&self, ray: &Ray, max_t: f32, ws: &mut MeshWorkspace) -> Option<TerrainRayHit> {
        let scale = self.scale();
        // In voxel units: the same parameter t scales with the origin.
        let local = Ray::new(scale.point_to_voxels(&ray.origin), ray.dir * scale.length_to_voxels(1.0));
        let mut best: Option<TerrainRayHit> = None;
        self.reader().cast(&local, max_t, ws, |n, data, limit| {
            if let Some(h) = ray_chunk(&local, n, data, limit)
                && best.is_none_or(|b| h.t < b.t || (h.t == b.t && (n, h.triangle) < (b.chunk, b.triangle)))
            {
                best = Some(h);
            }
            best.map_or(limit, |b| b.t.min(limit))
        });
        // Back to world units: the parameter is the same, the point scales.
        best.map(|h| TerrainRayHit { point: scale.point_to_world(&h.point), ..h })
    }
}

/// The closest hit in chunk `n` (its collision data `c`) below `max_t` (voxel units).
fn ray_chunk(ray: &Ray, n: PhysicsChunkKey, c: &ChunkCollision, max_t: f32) -> Option<TerrainRayHit> {
    let h = c.tree.with(&c.mesh).cast_ray(ray, max_t, Culling::None)?;
    let tri = c.mesh.triangle(h.triangle as usize);
    let face = (tri[1] - tri[0]).cross(&(tri[2] - tri[0]));
    let face = if face.dot(&ray.dir) > 0.0 { -face } else { face };
    let normal = Unit::try_new(face, 0.0).unwrap_or(Vector3::y_axis());
    let corners = c.mesh.triangles().get(h.triangle as usize)?;
    // The nearest corner's material: by the barycentric weights.
    let w = [1.0 - h.u - h.v, h.u, h.v];
    let near = (0..3).max_by(|&i, &j| w[i].total_cmp(&w[j])).unwrap_or(0);
    let material = c.mesh.materials()[corners[near] as usize];
    Some(TerrainRayHit {
        t: h.t,
        point: ray.origin + ray.dir * h.t,
        normal,
        material,
        chunk: n,
        triangle: h.triangle,
    })
}

fn check_ray(ray: &Ray, max_t: f32) -> Result<(), QueryError> {
    if Ray::try_new(ray.origin, ray.dir).is_err() {
        return Err(QueryError::InvalidRay { origin: ray.origin.into(), dir: ray.dir.into() });
    }
    if max_t.is_nan() || max_t < 0.0 {
        return Err(QueryError::InvalidParameter { what: "max_t", value: max_t });
    }
    Ok(())
}
