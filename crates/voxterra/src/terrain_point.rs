//! The terrain point nearest to a point: a search over the physics chunks around it, in growing
//! boxes, through each chunk's kD tree.

use crate::error::QueryError;
use crate::reach::SURFACE_SPILL;
use crate::terrain::Terrain;
use crate::terrain_query::TerrainManifold;
use voxterra_core::nalgebra::{Point3, Unit, Vector3};
use voxterra_core::{Aabb, TriangleIndex, TriangleSource};
use voxterra_narrowphase::convert::{FromParry, ToParry};
use voxterra_narrowphase::parry3d::math::Pose;
use voxterra_narrowphase::parry3d::query::PointQuery;
use voxterra_narrowphase::parry3d::shape::Shape;
use voxterra_narrowphase::parry3d::shape::Triangle;
use voxterra_narrowphase::{ContactPoint, Correction, FeatureId, Manifold, TriangleFeature};

/// The terrain point nearest to a query point (world units).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct TerrainProjection {
    /// The nearest point on the terrain's surface.
    pub point: Point3<f32>,
    /// Its distance from the query point.
    pub distance: f32,
    /// The face normal of its triangle, toward the air.
    pub normal: Unit<Vector3<f32>>,
    /// True when the query point is under the surface (on the solid side of that triangle).
    pub inside: bool,
    /// The physics chunk of the triangle.
    pub chunk: voxterra_core::PhysicsChunkKey,
    /// The triangle's index in that chunk's physics mesh.
    pub triangle: u32,
}

impl Terrain {
    /// The terrain point nearest to `p` within `max_dist` (world units), or `None` when the
    /// surface is farther. Reads the cache and builds what it lacks for this call only (see
    /// [`Terrain::prepare`]). `inside` is decided by rays from the point (see
    /// [`Terrain::cast_ray`]): the side of the first triangle each of three meets, the majority
    /// deciding, so the slivers and folds of sharp corners cannot sway it.
    pub fn project_point(
        &self,
        p: &Point3<f32>,
        max_dist: f32,
    ) -> Result<Option<TerrainProjection>, QueryError> {
        if let Some(bad) = p.iter().find(|v| !v.is_finite()) {
            return Err(QueryError::InvalidParameter { what: "point", value: *bad });
        }
        if max_dist.is_nan() || max_dist < 0.0 {
            return Err(QueryError::InvalidParameter { what: "max_dist", value: max_dist });
        }
        let scale = self.scale();
        let local = scale.point_to_voxels(p);
        let limit = scale.length_to_voxels(max_dist);
        // Grow the search box until the best point found lies inside it: nothing outside can be
        // nearer. Bounded by the limit and by the stored world.
        let reach = self.extent().map_or(0.0, |e| {
            let spill = SURFACE_SPILL as f32;
            let lo = e.min().map(|v| v as f32 - spill);
            let hi = e.max().map(|v| v as f32 + spill);
            let d = Vector3::new(
                (lo.x - local.x).max(local.x - hi.x).max(0.0),
                (lo.y - local.y).max(local.y - hi.y).max(0.0),
                (lo.z - local.z).max(local.z - hi.z).max(0.0),
            );
            d.norm() + (hi - lo).norm()
        });
        let mut ws = voxterra_mesher::MeshWorkspace::new();
        let mut r = 2.0f32;
        loop {
            let r_now = r.min(limit).min(reach.max(0.0));
            let b = Aabb::new(local - Vector3::repeat(r_now), local + Vector3::repeat(r_now));
            let world_box = scale.box_to_world(&b);
            let mut best: Option<(f32, TerrainProjection)> = None;
            let mut reader = self.reader();
            for key in self.solid_chunks(&world_box) {
                reader.with(key, &mut ws, |c| {
                    c.tree.with(&c.mesh).triangles_in_aabb(&b, &mut |t| {
                        let [a, bb, cc] = c.mesh.triangle(t as usize);
                        let face = (bb - a).cross(&(cc - a));
                        let normal = Unit::try_new(face, 0.0).unwrap_or(Vector3::y_axis());
                        let tri = Triangle::new(a.to_parry(), bb.to_parry(), cc.to_parry());
                        let proj = tri.project_local_point(local.to_parry(), false);
                        let q = Point3::from_parry(proj.point);
                        let d = (q - local).norm();
                        if best.as_ref().is_none_or(|(bd, bp)| {
                            d < *bd
                                || (d == *bd
                                    && (key.y, key.z, key.x, t)
                                        < (bp.chunk.y, bp.chunk.z, bp.chunk.x, bp.triangle))
                        }) {
                            best = Some((
                                d,
                                TerrainProjection {
                                    point: scale.point_to_world(&q),
                                    distance: scale.length_to_world(d),
                                    normal,
                                    inside: false,
                                    chunk: key,
                                    triangle: t,
                                },
                            ));
                        }
                    })
                });
            }
            // The rays below read the cache too.
            drop(reader);
            match best {
                Some((d, mut proj)) if d <= r_now => {
                    proj.inside = if d > 0.0 { self.encloses(p) } else { true };
                    return Ok((d <= limit).then_some(proj));
                }
                _ if r_now >= limit || r_now >= reach => return Ok(None),
                _ => r *= 2.0,
            }
        }
    }

    /// The contact that pushes `shape` at `pose` (world units) out of the solid when its center is
    /// inside it: toward the surface point nearest the center, deep enough to bring the shape's
    /// deepest point along that direction to the surface. For a shape the narrowphase finds no
    /// penetration for (wholly under the surface, or inside all-solid chunks). `None` when the
    /// center is not in solid or no surface is found.
    pub(crate) fn interior_contact(
        &self,
        shape: &dyn Shape,
        pose: &Pose,
    ) -> Result<Option<TerrainManifold>, QueryError> {
        let center = Point3::from_parry(pose.translation);
        // No solid voxel center around it: in the open (a cheap first test for the shapes in the
        // air that touch nothing). The mesh decides the rest: its surface and the occupancy
        // field's differ by up to a fraction of a voxel around creases and sharp corners.
        if self.occupancy_at(&self.scale().point_to_voxels(&center)) <= 0.0 {
            return Ok(None);
        }
        let Some(surface) = self.project_point(&center, f32::INFINITY)? else { return Ok(None) };
        if !surface.inside {
            return Ok(None);
        }
        let normal = Unit::try_new(surface.point - center, 1e-6).unwrap_or(surface.normal);
        let deepest = match shape.as_support_map() {
            Some(s) => Point3::from_parry(s.support_point(pose, (-normal.into_inner()).to_parry())),
            None => center - normal.into_inner() * shape.compute_local_bounding_sphere().radius,
        };
        let dist = (deepest - surface.point).dot(&normal);
        if dist >= 0.0 {
            return Ok(None); // a shape that does not hold its own center reaches out of the solid
        }
        let point = ContactPoint {
            on_shape: deepest,
            on_triangle: surface.point,
            normal,
            dist,
            id: FeatureId { triangle: surface.triangle, feature: TriangleFeature::Face, part: 0, sub: 0 },
            correction: Correction::Interior,
        };
        Ok(Some(TerrainManifold { chunk: surface.chunk, manifold: Manifold::single(point) }))
    }
}

impl Terrain {
    /// Whether `p` (world units) lies inside the solid: by three rays from it in fixed directions,
    /// each voting inside when the first triangle it meets faces away from it (it leaves the solid
    /// there), the majority deciding. Unlike the nearest triangle's side, it does not depend on
    /// the normals of the slivers and folded triangles around sharp corners.
    fn encloses(&self, p: &Point3<f32>) -> bool {
        const DIRS: [[f32; 3]; 3] = [[0.267, 0.802, 0.535], [-0.577, 0.412, -0.706], [0.651, -0.361, -0.668]];
        let far = self.extent().map_or(0.0, |e| {
            let size = e.size().map(|v| v as f32);
            self.scale().length_to_world(size[0] + size[1] + size[2] + 4.0)
        });
        let far = far + p.coords.amax().abs() * 2.0;
        let votes = DIRS
            .iter()
            .filter(|d| {
                let dir = Vector3::from(**d);
                let Ok(Some(hit)) = self.cast_ray(&voxterra_core::Ray::new(*p, dir), far) else {
                    return false;
                };
                self.front_normal(hit.chunk, hit.triangle).is_some_and(|n| n.dot(&dir) > 0.0)
            })
            .count();
        votes >= 2
    }

    /// Triangle `triangle` of `chunk`'s physics mesh's front normal (unnormalized), when the chunk
    /// holds it.
    fn front_normal(&self, chunk: voxterra_core::PhysicsChunkKey, triangle: u32) -> Option<Vector3<f32>> {
        crate::workspace::with_workspace(|ws| {
            self.reader()
                .with(chunk, &mut ws.mesh, |c| {
                    (triangle < c.mesh.triangle_count() as u32).then(|| {
                        let t = c.mesh.triangle(triangle as usize);
                        (t[1] - t[0]).cross(&(t[2] - t[0]))
                    })
                })
                .flatten()
        })
    }

    /// The solid occupancy field at `p` (voxel units; liquids count as empty, as in the physics
    /// mesh): trilinear between the 8 nearest voxel centers.
    fn occupancy_at(&self, p: &Point3<f32>) -> f32 {
        let b = p.map(|v| v - 0.5);
        let base = b.map(|v| v.floor());
        let f = b - base;
        let mut sum = 0.0;
        for corner in 0..8 {
            let d = [corner & 1, (corner >> 1) & 1, (corner >> 2) & 1];
            let at = voxterra_core::VoxelPos::new(
                (base.x as i32).saturating_add(d[0]),
                (base.y as i32).saturating_add(d[1]),
                (base.z as i32).saturating_add(d[2]),
            );
            let w = (0..3).map(|a| if d[a] == 1 { f[a] } else { 1.0 - f[a] }).product::<f32>();
            let v = self.voxel(at);
            if self.materials().is_solid(v) {
                sum += w * v.occupancy();
            }
        }
        sum
    }
}
