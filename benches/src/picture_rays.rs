//! The demo picture's primary rays as the terrain suite reports them: a 1280×720 pinhole camera
//! over a corner of the world looking at its middle, one ray a pixel, cast through
//! [`Terrain::cast_rays`] on every thread (coherent rays, where a packet tracer would gain).

use crate::harness::Metric;
use std::time::Instant;
use voxterra::Terrain;
use voxterra::core::Ray;
use voxterra::core::nalgebra::{Point3, Vector3};

/// The picture's rays over a world of `size` voxels (voxel size 1).
pub fn rays(size: [u32; 3], width: u32, height: u32) -> Vec<Ray> {
    let s = size.map(|v| v as f32);
    let eye = Point3::new(-0.1 * s[0], 1.2 * s[1], -0.1 * s[2]);
    let target = Point3::new(0.5 * s[0], 0.3 * s[1], 0.5 * s[2]);
    let forward = (target - eye).normalize();
    let right = forward.cross(&Vector3::y()).normalize();
    let up = right.cross(&forward);
    let half = (50f32.to_radians() * 0.5).tan();
    let aspect = width as f32 / height as f32;
    let mut out = Vec::with_capacity((width * height) as usize);
    for j in 0..height {
        for i in 0..width {
            let x = (2.0 * (i as f32 + 0.5) / width as f32 - 1.0) * half * aspect;
            let y = (1.0 - 2.0 * (j as f32 + 0.5) / height as f32) * half;
            out.push(Ray::new(eye, (forward + right * x + up * y).normalize()));
        }
    }
    out
}

/// Primary rays a second for the picture over `t` (world `size`), median of `reps` frames after
/// one that builds what the rays need.
pub fn metric(t: &Terrain, size: [u32; 3], reps: usize) -> Metric {
    let rays = rays(size, 1280, 720);
    let mut hits = Vec::new();
    t.cast_rays(&rays, 1e4, &mut hits).expect("valid rays");
    let mut per_second: Vec<f64> = (0..reps.max(1))
        .map(|_| {
            let start = Instant::now();
            t.cast_rays(&rays, 1e4, &mut hits).expect("valid rays");
            rays.len() as f64 / start.elapsed().as_secs_f64()
        })
        .collect();
    per_second.sort_by(f64::total_cmp);
    let hit = hits.iter().filter(|h| h.is_some()).count();
    Metric {
        name: "picture: primary rays a second (1280x720), millions".into(),
        voxterra: per_second[per_second.len() / 2] / 1e6,
        peer: f64::NAN,
        peer_name: "-".into(),
        goal: format!("≥ 5 M/s; {hit} of {} rays hit, {} threads", rays.len(), rayon::current_num_threads()),
    }
}
