//! A query dispatcher that times the contact manifolds rapier asks of the terrain collider,
//! whichever dispatcher answers them: it splits rapier's step into its own work and the
//! terrain's contacts, for voxterra and for the baselines alike.

use rapier3d::parry::query::{
    ClosestPoints, Contact, ContactManifold, ContactManifoldsWorkspace, NonlinearRigidMotion,
    PersistentQueryDispatcher, QueryDispatcher, ShapeCastHit, ShapeCastOptions, ShapeDistance,
    ShapeIntersection, Unsupported,
};
use rapier3d::parry::shape::{Shape, ShapeType};
use rapier3d::prelude::{Pose, Real, Vector};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// Wraps `D`, adding the time of every terrain pair's `contact_manifolds` to `nanos`.
pub(crate) struct Timed<D> {
    pub(crate) inner: D,
    pub(crate) nanos: Arc<AtomicU64>,
}

/// The terrain is the custom shape (voxterra), a triangle mesh or voxels (the baselines).
fn is_terrain(g: &dyn Shape) -> bool {
    matches!(g.shape_type(), ShapeType::Custom | ShapeType::TriMesh | ShapeType::Voxels)
}

impl<D: QueryDispatcher> QueryDispatcher for Timed<D> {
    fn intersection_test(
        &self,
        pos12: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
    ) -> Result<ShapeIntersection, Unsupported> {
        self.inner.intersection_test(pos12, g1, g2)
    }
    fn distance(&self, pos12: &Pose, g1: &dyn Shape, g2: &dyn Shape) -> Result<ShapeDistance, Unsupported> {
        self.inner.distance(pos12, g1, g2)
    }
    fn contact(
        &self,
        pos12: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
        prediction: Real,
    ) -> Result<Option<Contact>, Unsupported> {
        self.inner.contact(pos12, g1, g2, prediction)
    }
    fn closest_points(
        &self,
        pos12: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
        max_dist: Real,
    ) -> Result<ClosestPoints, Unsupported> {
        self.inner.closest_points(pos12, g1, g2, max_dist)
    }
    fn cast_shapes(
        &self,
        pos12: &Pose,
        vel12: Vector,
        g1: &dyn Shape,
        g2: &dyn Shape,
        options: ShapeCastOptions,
    ) -> Result<Option<ShapeCastHit>, Unsupported> {
        self.inner.cast_shapes(pos12, vel12, g1, g2, options)
    }
    fn cast_shapes_nonlinear(
        &self,
        motion1: &NonlinearRigidMotion,
        g1: &dyn Shape,
        motion2: &NonlinearRigidMotion,
        g2: &dyn Shape,
        start_time: Real,
        end_time: Real,
        stop_at_penetration: bool,
    ) -> Result<Option<ShapeCastHit>, Unsupported> {
        self.inner.cast_shapes_nonlinear(motion1, g1, motion2, g2, start_time, end_time, stop_at_penetration)
    }
}

impl<M, C, D: PersistentQueryDispatcher<M, C>> PersistentQueryDispatcher<M, C> for Timed<D> {
    fn contact_manifolds(
        &self,
        pos12: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
        prediction: Real,
        manifolds: &mut Vec<ContactManifold<M, C>>,
        workspace: &mut Option<ContactManifoldsWorkspace>,
    ) -> Result<(), Unsupported> {
        if !(is_terrain(g1) || is_terrain(g2)) {
            return self.inner.contact_manifolds(pos12, g1, g2, prediction, manifolds, workspace);
        }
        let start = Instant::now();
        let r = self.inner.contact_manifolds(pos12, g1, g2, prediction, manifolds, workspace);
        self.nanos.fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        r
    }

    fn contact_manifold_convex_convex(
        &self,
        pos12: &Pose,
        g1: &dyn Shape,
        g2: &dyn Shape,
        normal_constraints1: Option<&dyn rapier3d::parry::query::details::NormalConstraints>,
        normal_constraints2: Option<&dyn rapier3d::parry::query::details::NormalConstraints>,
        prediction: Real,
        manifold: &mut ContactManifold<M, C>,
    ) -> Result<(), Unsupported> {
        self.inner.contact_manifold_convex_convex(
            pos12,
            g1,
            g2,
            normal_constraints1,
            normal_constraints2,
            prediction,
            manifold,
        )
    }
}
