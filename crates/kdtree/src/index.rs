//! The kD tree as core's [`TriangleIndex`]: the query a tree's size calls for.

use crate::fetch::{Fetch, with_fetch};
use crate::tree::{KdTreeView, LARGE_TREE};
use voxterra_core::{Aabb, Culling, Ray, RayHit, TriangleIndex, TriangleSource};

impl<S: TriangleSource> TriangleIndex for KdTreeView<'_, S> {
    fn triangles_in_aabb(&self, aabb: &Aabb, visit: &mut dyn FnMut(u32)) {
        if self.tree.triangles >= LARGE_TREE {
            self.aabb_query_deferred(aabb, visit)
        } else {
            with_fetch!(self, fetch, ahead, corners => self.aabb_query::<false>(aabb, fetch, ahead, corners, visit))
        }
    }

    fn cast_ray(&self, ray: &Ray, max_t: f32, culling: Culling) -> Option<RayHit> {
        self.cast_one(ray, max_t, culling, false)
    }

    fn ray_hits_any(&self, ray: &Ray, max_t: f32, culling: Culling) -> bool {
        self.cast_one(ray, max_t, culling, true).is_some()
    }
}
