//! Ground the narrowphase tests share.

#![allow(dead_code)] // each test file uses part of it

use voxterra_core::TriangleMesh;
use voxterra_core::nalgebra::Point3;

/// An `n` × `n` grid of half-unit cells whose corner `(i, j)` stands at `height(i, j)`, two
/// triangles a cell, counter-clockwise from above (their fronts face +y).
pub(crate) fn rolling_ground(n: u32, height: impl Fn(f32, f32) -> f32) -> TriangleMesh {
    let mut mesh = TriangleMesh::default();
    for z in 0..=n {
        for x in 0..=n {
            mesh.positions.push(Point3::new(x as f32 * 0.5, height(x as f32, z as f32), z as f32 * 0.5));
        }
    }
    for z in 0..n {
        for x in 0..n {
            let i = z * (n + 1) + x;
            mesh.triangles.push([i, i + n + 1, i + 1]);
            mesh.triangles.push([i + 1, i + n + 1, i + n + 2]);
        }
    }
    mesh
}
