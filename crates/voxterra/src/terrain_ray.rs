//! Ray casts against the terrain: through the chunks' ray tree (`chunk_tree`), nearest box
//! first, each chunk's kD tree cast within the best hit so far. The tree holds a box for every
//! chunk that may hold triangles (tight where built), so the first hit is final once no box
//! remains entered before it. Many rays from one origin within a few degrees (a camera's
//! neighbouring pixels) walk the tree in packets, each chunk handed once to every ray entering
//! it; each ray's hit is the one it gets alone (a hit's ties go to the lowest chunk then
//! triangle, whatever order the chunks come in).

use crate::chunk_tree::{PACKET, bits};
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
    /// Runs of up to 64 neighbouring rays from one origin within about 8° of each other (a
    /// camera's pixels, in the order of a row) are traced as packets: list a picture's rays row
    /// by row or tile by tile to gain from it.
    pub fn cast_rays(
        &self,
        rays: &[Ray],
        max_t: f32,
        hits: &mut Vec<Option<TerrainRayHit>>,
    ) -> Result<(), QueryError> {
        for r in rays {
            check_ray(r, max_t)?;
        }
        // Neighbouring rays that run together (a picture's row) in packets: each packet walks
        // the ray tree once. Scattered rays go one by one: a packet's nearest-first order is
        // none of theirs, so each would cast far chunks before its near hit cut its limit.
        hits.clear();
        hits.resize(rays.len(), None);
        hits.par_chunks_mut(PACKET).zip(rays.par_chunks(PACKET)).for_each(|(out, rays)| {
            with_workspace(|ws| {
                if coherent(rays) {
                    self.walk_packet(rays, max_t, &mut ws.mesh, out);
                } else {
                    for (o, r) in out.iter_mut().zip(rays) {
                        *o = self.walk(r, max_t, &mut ws.mesh);
                    }
                }
            })
        });
        Ok(())
    }

    /// [`Terrain::walk`] for up to [`PACKET`] rays together, into `out`: the same hits.
    fn walk_packet(
        &self,
        rays: &[Ray],
        max_t: f32,
        ws: &mut MeshWorkspace,
        out: &mut [Option<TerrainRayHit>],
    ) {
        let scale = self.scale();
        let n = rays.len().min(out.len()).min(PACKET);
        let local: [Ray; PACKET] = std::array::from_fn(|i| {
            let r = &rays[i.min(n.saturating_sub(1))];
            Ray::new(scale.point_to_voxels(&r.origin), r.dir * scale.length_to_voxels(1.0))
        });
        let mut limits = [max_t; PACKET];
        let mut best: [Option<TerrainRayHit>; PACKET] = [None; PACKET];
        self.reader().cast_packet(&local[..n], &mut limits[..n], ws, |key, data, mask, limits| {
            for i in bits(mask) {
                if let Some(h) = ray_chunk(&local[i], key, data, limits[i])
                    && best[i].is_none_or(|b| {
                        h.t < b.t || (h.t == b.t && (key, h.triangle) < (b.chunk, b.triangle))
                    })
                {
                    best[i] = Some(h);
                }
                if let Some(b) = best[i]
                    && b.t < limits[i]
                {
                    limits[i] = b.t;
                }
            }
        });
        for (o, b) in out[..n].iter_mut().zip(best) {
            *o = b.map(|h| TerrainRayHit { point: scale.point_to_world(&h.point), ..h });
        }
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

/// Whether `rays` run together: one origin, directions within about 8° of the first's (a
/// camera's neighbouring pixels). Only speed depends on it: packets answer as single rays do.
fn coherent(rays: &[Ray]) -> bool {
    let Some(first) = rays.first() else { return false };
    let d = first.dir.normalize();
    rays.iter().all(|r| r.origin == first.origin && r.dir.dot(&d) >= 0.99 * r.dir.norm())
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
