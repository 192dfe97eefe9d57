//! Bodies dropped on a generated terrain, rapier stepping at 60 Hz, a crater dug under them after
//! one second: they fall into it and rest on its floor.
//!
//! `cargo run --release -p voxterra-rapier --example falling_bodies`

use rapier3d::prelude::*;
use voxterra::TerrainConfig;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, Terrain};
use voxterra_rapier::{RapierTerrain, SharedTerrain, dispatcher};

fn main() -> Result<(), voxterra::TerrainError> {
    let terrain = Terrain::generate(&GenParams::new(7, [96, 64, 96]), TerrainConfig::default())?;
    let (mut bodies, mut colliders) = (RigidBodySet::new(), ColliderSet::new());
    let ground = RapierTerrain::insert(SharedTerrain::new(terrain), &mut colliders);
    let surface = |x: f32, z: f32| {
        let down = voxterra::core::Ray::new(Point3::new(x, 100.0, z), -Vector3::y());
        ground.terrain().read().cast_ray(&down, 200.0).ok().flatten().map_or(0.0, |h| h.point.y)
    };
    let mut handles = Vec::new();
    for i in 0..64 {
        let (x, z) = (40.0 + (i % 8) as f32 * 2.0, 40.0 + (i / 8) as f32 * 2.0);
        let body =
            bodies.insert(RigidBodyBuilder::dynamic().translation(Vector::new(x, surface(x, z) + 4.0, z)));
        let shape =
            if i % 2 == 0 { ColliderBuilder::ball(0.5) } else { ColliderBuilder::cuboid(0.4, 0.4, 0.4) };
        colliders.insert_with_parent(shape, body, &mut bodies);
        handles.push(body);
    }

    let mut narrow_phase = NarrowPhase::with_query_dispatcher(dispatcher());
    let mut pipeline = PhysicsPipeline::new();
    let (mut islands, mut broad_phase) = (IslandManager::new(), DefaultBroadPhase::new());
    let mut soft_bodies = SoftBodySet::new();
    let (mut joints, mut multibody, mut ccd) =
        (ImpulseJointSet::new(), MultibodyJointSet::new(), CCDSolver::new());
    let params = IntegrationParameters::default();
    for frame in 0..300 {
        if frame == 60 {
            let crater = Brush {
                shape: BrushShape::Sphere {
                    center: Point3::new(47.0, surface(47.0, 47.0), 47.0),
                    radius: 8.0,
                },
                op: BrushOp::Subtract,
            };
            let report = ground.apply_brush(&crater, &mut bodies, &mut colliders)?.report;
            println!(
                "frame {frame}: crater dug, {} masks rebuilt in {:?}",
                report.masks_rebuilt, report.elapsed
            );
        }
        let built = ground.prepare(&bodies, &colliders, &params)?;
        pipeline.step(
            Vector::new(0.0, -9.81, 0.0),
            &params,
            &mut islands,
            &mut broad_phase,
            &mut narrow_phase,
            &mut bodies,
            &mut colliders,
            &mut joints,
            &mut multibody,
            &mut soft_bodies,
            &mut ccd,
            &(),
            &(),
        );
        if frame % 60 == 59 {
            let mean_y =
                handles.iter().map(|&h| bodies[h].translation().y).sum::<f32>() / handles.len() as f32;
            let asleep = handles.iter().filter(|&&h| bodies[h].is_sleeping()).count();
            println!(
                "frame {frame}: mean height {mean_y:.2}, {asleep} asleep, {built} chunks built this frame"
            );
        }
    }
    let stats = ground.terrain().read().cache_stats();
    println!(
        "collision cache: {} chunks, {} KiB, built in {:?}",
        stats.entries,
        stats.bytes / 1024,
        stats.build_time
    );
    Ok(())
}
