//! The `narrowphase` suite: voxterra's contacts, shape casts and mesh–mesh tests against what a
//! rapier or parry user has today — one parry `TriMesh` per physics chunk, built with
//! `FIX_INTERNAL_EDGES`, and parry's `contact_manifolds` through its `DefaultQueryDispatcher`.
//!
//! - Contacts: balls, character boxes, capsules and 32-point rocks resting on the default world's
//!   terrain, new manifolds (cold) and updated ones as they slide (warm, parry keeping its
//!   manifolds and workspace). Checked first: the same bodies touch, with the same deepest depth.
//! - Ghost bumps and lost contacts: a box and a ball sliding at 5 voxels/s, 60 Hz, across 24
//!   chunk columns of flat, sloped and curved voxel ground: the worst angle between a contact
//!   normal and its triangle's face normal, contacts opposing the motion more than the surface
//!   does, frames with no contact. Parry's figures beside ours, for per-chunk TriMeshes with and
//!   without `FIX_INTERNAL_EDGES` and for one merged TriMesh.
//! - Shape casts: the bodies cast down onto the terrain, times of impact checked within 1e-3.
//! - Mesh–mesh: two 5 000-triangle meshes in contact and in a near miss, the multi-pass test
//!   against Möller on every pair; parry's TriMesh–TriMesh intersection test beside it; 2 threads
//!   against 1 on the triangle pairs.

mod bodies;
mod casts;
mod contacts;
mod ghosts;
mod mesh_mesh;

use crate::harness::{Budget, Report};
use crate::narrowphase_suite::casts::cast_case;
use crate::narrowphase_suite::contacts::contact_cases;
use crate::narrowphase_suite::ghosts::ghost_metrics;
use crate::narrowphase_suite::mesh_mesh::mesh_mesh_cases;
use crate::world::bench_world;
pub use bodies::chunks_of;
pub(crate) use bodies::{PREDICTION, shapes};
pub use casts::profile_casts;
pub(crate) use contacts::check_contacts;
pub use contacts::{profile_contacts, profile_warm};
use parry3d::shape::TriMeshFlags;
use voxterra_core::Region;
use voxterra_core::nalgebra::Vector3;

/// Runs the suite.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let world = bench_world(quick);
    let side = if quick { 48 } else { 96 };
    let wr = world.params.region().expect("valid world");
    let area = Region::from_min_size(wr.min() + Vector3::new(64, 0, 64), [side, wr.size()[1], side])
        .expect("inside");
    let chunks = chunks_of(&world.store, &area, TriMeshFlags::FIX_INTERNAL_EDGES);
    let n = if quick { 200 } else { 1000 };
    let mut report = Report {
        suite: "narrowphase".into(),
        setup: format!(
            "default world, a {side}x{}x{side} area: {} physics chunks with surface; peer: parry3d 0.31 contact_manifolds (DefaultQueryDispatcher) against one TriMesh per chunk with FIX_INTERNAL_EDGES; prediction {PREDICTION}",
            wr.size()[1],
            chunks.len()
        ),
        ..Default::default()
    };
    contact_cases(&mut report, budget, &chunks, &area, n);
    cast_case(&mut report, budget, &chunks, &area, n);
    ghost_metrics(&mut report);
    mesh_mesh_cases(&mut report, quick);
    report
}
