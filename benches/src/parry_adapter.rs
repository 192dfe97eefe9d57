//! parry3d behind core's [`TriangleIndex`]: the peer of the kD tree, on the same triangles.

use parry3d::query::RayCast;
use parry3d::shape::{FeatureId, TriMesh};
use voxterra_core::{Aabb, Culling, Ray, RayHit, TriangleIndex, TriangleSource};
use voxterra_narrowphase::convert::ToParry;

/// A parry `TriMesh` (with its BVH) built from a triangle source.
pub struct ParryTriangles {
    /// The parry mesh.
    pub mesh: TriMesh,
}

impl ParryTriangles {
    /// `TriMesh::new` on a copy of the source's vertices and (u32) indices; parry takes ownership.
    pub fn build(source: &impl TriangleSource) -> Self {
        let vertices = source.positions().iter().map(|p| p.to_parry()).collect();
        let idx = source.indices();
        let indices = (0..idx.len()).map(|i| idx.get(i)).collect();
        ParryTriangles {
            mesh: TriMesh::new(vertices, indices).expect("benchmark meshes are valid for parry"),
        }
    }

    /// Bytes of the mesh and its BVH, as parry counts them.
    pub fn bytes(&self) -> usize {
        self.mesh.total_memory_size()
    }
}

impl TriangleIndex for ParryTriangles {
    fn triangles_in_aabb(&self, b: &Aabb, visit: &mut dyn FnMut(u32)) {
        let q = b.to_parry();
        for t in self.mesh.bvh().intersect_aabb(&q) {
            visit(t);
        }
    }

    /// Double-sided only (parry's default); culling is not forwarded.
    fn cast_ray(&self, ray: &Ray, max_t: f32, _culling: Culling) -> Option<RayHit> {
        let r = ray.to_parry();
        self.mesh.cast_local_ray_and_get_normal(&r, max_t, true).map(|hit| {
            let n = self.mesh.indices().len() as u32;
            let triangle = match hit.feature {
                FeatureId::Face(f) => f % n, // parry numbers back faces from n
                _ => u32::MAX,
            };
            RayHit { t: hit.time_of_impact, triangle, u: f32::NAN, v: f32::NAN }
        })
    }

    fn ray_hits_any(&self, ray: &Ray, max_t: f32, _culling: Culling) -> bool {
        self.mesh.intersects_local_ray(&ray.to_parry(), max_t)
    }
}
