//! Ray casts against the terrain: a walk over the physics chunks in ray order that skips chunks
//! whose masks show no solid and stops at the first hit.
//!
//! A chunk's triangles may reach one voxel past its box, so the walk (a 3D DDA over the 8³ chunk
//! grid) considers, at each chunk it passes, that chunk's 26 neighbors too, ordered by where the
//! ray enters their grown boxes. Any chunk not yet seen is entered after the current cell's exit
//! (it is adjacent to no cell passed so far), so a hit nearer than that exit and than every pending
//! entry is final.

use crate::collision_cache::ChunkCollision;
use crate::error::QueryError;
use crate::reach::SURFACE_SPILL;
use crate::terrain::Terrain;
use crate::workspace::with_workspace;
use rayon::prelude::*;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use voxterra_bit_broadphase::ChunkState;
use voxterra_core::nalgebra::{Point3, Unit, Vector3};
use voxterra_core::{Aabb, Culling, Material, PhysicsChunkKey, Ray, TriangleIndex, TriangleSource};
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

/// Held chunks are entered at their triangles' bounds grown by this much (voxels) and a few ulps
/// of their coordinates: past the kD tree's own clip margin, so no hit is ever skipped.
const BOUNDS_SLACK: f32 = 1e-3;

/// A pending chunk, ordered by where the ray enters its triangles' bounds (its grown box while
/// not built), then key, for a deterministic order.
#[derive(PartialEq, Clone, Copy)]
struct Pending(f32, PhysicsChunkKey);

impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    fn cmp(&self, other: &Self) -> Ordering {
        // Min-heap on entry, then on (y, z, x).
        other.0.total_cmp(&self.0).then_with(|| other.1.cmp(&self.1))
    }
}

impl Terrain {
    fn has_solid(&self, key: PhysicsChunkKey) -> bool {
        match self.masks().chunk(key) {
            Some(ChunkState::Solid) => true,
            Some(ChunkState::Masks(m)) => m.solid.iter().any(|&w| w != 0),
            _ => false,
        }
    }

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

    /// The walk over the chunks in ray order (voxel units inside).
    fn walk(&self, ray: &Ray, max_t: f32, ws: &mut MeshWorkspace) -> Option<TerrainRayHit> {
        let scale = self.scale();
        // In voxel units: the same parameter t scales with the origin.
        let local = Ray::new(scale.point_to_voxels(&ray.origin), ray.dir * scale.length_to_voxels(1.0));
        // Only the stored world can be hit: clip the ray to it (grown by the geometry's spill).
        let bounds = self.extent()?;
        let spill = SURFACE_SPILL as f32;
        let world = Aabb::new(bounds.min().map(|v| v as f32 - spill), bounds.max().map(|v| v as f32 + spill));
        let (t_start, t_end) = world.clip_ray(&local, max_t)?;
        let size = PhysicsChunkKey::SIZE as f32;
        let inv = local.dir.map(|d| 1.0 / d);
        let start = local.origin + local.dir * t_start;
        let mut cell = PhysicsChunkKey::containing(
            start.map(|v| v.floor().clamp(i32::MIN as f32, i32::MAX as f32) as i32),
        );
        // A 3D DDA over the chunk grid (Amanatides and Woo), in the ray's own parameter.
        let step = local.dir.map(|d| {
            if d > 0.0 {
                1
            } else if d < 0.0 {
                -1
            } else {
                0
            }
        });
        let boundary = |c: i32, a: usize| -> f32 {
            if step[a] == 0 {
                return f32::INFINITY;
            }
            let edge = if step[a] > 0 { (c as f32 + 1.0) * size } else { c as f32 * size };
            (edge - local.origin[a]) * inv[a]
        };
        let mut t_max = Vector3::new(boundary(cell.x, 0), boundary(cell.y, 1), boundary(cell.z, 2));
        let t_delta = inv.map(|i| (size * i).abs());
        let mut heap = BinaryHeap::new();
        let mut best: Option<TerrainRayHit> = None;
        let mut best_t = t_end;
        // The previous cell's reach (below) and the step from it: a chunk it already considered
        // is skipped (testing a chunk twice would only cost time).
        let mut previous: Option<([[bool; 3]; 3], usize, i32)> = None;
        let mut t_in = t_start;
        let mut reader = self.reader();
        loop {
            let t_out = t_max.x.min(t_max.y).min(t_max.z);
            // Which neighbors the segment in this cell can reach: across a face only where it
            // comes within the spill of that face (their grown boxes reach no further in).
            let t_last = t_out.min(best_t);
            let mut near = [[false, true, false]; 3];
            for (a, near) in near.iter_mut().enumerate() {
                let (p0, p1) =
                    (local.origin[a] + local.dir[a] * t_in, local.origin[a] + local.dir[a] * t_last);
                let lo = cell.to_array()[a] as f32 * size;
                near[0] = p0.min(p1) < lo + spill;
                near[2] = p0.max(p1) > lo + size - spill;
            }
            let reaches = |near: &[[bool; 3]; 3], d: [i32; 3]| {
                near[0][(d[0] + 1) as usize] && near[1][(d[1] + 1) as usize] && near[2][(d[2] + 1) as usize]
            };
            // Per axis, the offsets the segment reaches (PERF: looping over all 27 neighbors
            // and testing each was a sixth of a ray's time).
            let offsets = |a: usize| {
                let mut o = [0i32; 3];
                let mut n = 0;
                for (i, d) in [-1, 0, 1].into_iter().enumerate() {
                    if near[a][i] {
                        o[n] = d;
                        n += 1;
                    }
                }
                (o, n)
            };
            let ((ox, nx), (oy, ny), (oz, nz)) = (offsets(0), offsets(1), offsets(2));
            // The chunks around this cell, by where the ray enters their grown boxes.
            for &dy in &oy[..ny] {
                for &dz in &oz[..nz] {
                    for &dx in &ox[..nx] {
                        let d = [dx, dy, dz];
                        if let Some((prev, a, s)) = previous {
                            let mut from_prev = d;
                            from_prev[a] += s;
                            if from_prev[a].abs() <= 1 && reaches(&prev, from_prev) {
                                continue;
                            }
                        }
                        let n = PhysicsChunkKey::new(
                            cell.x.saturating_add(dx),
                            cell.y.saturating_add(dy),
                            cell.z.saturating_add(dz),
                        );
                        // Where the ray enters the chunk's grown box first (cheap); then whether
                        // its masks show solid (most chunks a ray passes are air); then, for a
                        // chunk the cache holds, its triangles' bounds (a chunk without surface,
                        // or whose bounds the ray misses, is never visited); one not built yet
                        // is built when visited.
                        let lo = n.to_point().map(|v| v as f32 * size - spill);
                        let hi = lo.map(|v| v + size + 2.0 * spill);
                        let Some((te, _)) = Aabb::new(lo, hi).clip_ray(&local, best_t) else { continue };
                        if !self.has_solid(n) {
                            continue;
                        }
                        let entry = match reader.bounds(n) {
                            Some(Some(b)) => {
                                let reach = b.mins.coords.amax().max(b.maxs.coords.amax());
                                let slack = BOUNDS_SLACK + reach * 8.0 * f32::EPSILON;
                                b.loosened(slack).clip_ray(&local, best_t).map(|(t, _)| t)
                            }
                            Some(None) => None,
                            None => Some(te),
                        };
                        if let Some(te) = entry {
                            heap.push(Pending(te, n));
                        }
                    }
                }
            }
            // Every chunk not seen yet is entered after `t_out`: test the pending ones entered
            // before it (and before the best hit), nearest first.
            while let Some(&Pending(te, heap_key)) = heap.peek() {
                if te > t_out.min(best_t) {
                    break;
                }
                heap.pop();
                let n = heap_key;
                if let Some(Some(h)) = reader.with(n, ws, |data| ray_chunk(&local, n, data, best_t))
                    && best
                        .is_none_or(|b| h.t < b.t || (h.t == b.t && (n, h.triangle) < (b.chunk, b.triangle)))
                {
                    best_t = h.t;
                    best = Some(h);
                }
            }
            // Past the best hit (or the world's end), nothing nearer remains.
            if t_out >= best_t || !t_out.is_finite() {
                break;
            }
            let a = if t_max.x <= t_max.y && t_max.x <= t_max.z {
                0
            } else if t_max.y <= t_max.z {
                1
            } else {
                2
            };
            match a {
                0 => cell.x = cell.x.saturating_add(step[0]),
                1 => cell.y = cell.y.saturating_add(step[1]),
                _ => cell.z = cell.z.saturating_add(step[2]),
            }
            previous = Some((near, a, step[a]));
            t_in = t_out;
            t_max[a] += t_delta[a];
        }
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
