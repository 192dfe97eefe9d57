//! Far terrain in pictures and files: the clipmap ([`LodView`]) around a viewer, its meshes merged,
//! and a picture ray cast through one kD tree over them (the project's own), shaded like
//! `voxterra render`'s, each level optionally tinted.

use crate::render::{Camera, Picture, material_color, primary_rays, shade, sky, sun};
use rayon::prelude::*;
use std::time::Instant;
use voxterra::Terrain;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{Culling, MaterialTable, Ray, RayHit};
use voxterra::kdtree::KdTree;
use voxterra::lod::{LodConfig, LodView};
use voxterra::mesher::{Mesher, RenderMesh};

/// The clipmap's meshes around `eye`, merged, with each triangle's level.
pub(crate) struct LodScene {
    pub(crate) mesh: RenderMesh,
    pub(crate) levels: Vec<u8>,
    /// Nodes drawn per level, finest first.
    pub(crate) nodes_per_level: Vec<usize>,
    pub(crate) seconds: f64,
}

/// Selects and meshes the clipmap around `eye` (terrain voxel units).
pub(crate) fn lod_scene(terrain: &Terrain, mesher: &Mesher, eye: Point3<f32>) -> anyhow::Result<LodScene> {
    let start = Instant::now();
    let mut view = LodView::new(LodConfig::default())?;
    let update = view.update(terrain, mesher, &[eye])?;
    let mut nodes_per_level = vec![0; view.top_level() as usize + 1];
    for n in view.nodes() {
        nodes_per_level[n.level as usize] += 1;
    }
    let mut mesh = RenderMesh::default();
    let mut levels = Vec::new();
    for (key, m) in &update.meshes {
        let base = mesh.positions.len() as u32;
        mesh.positions.extend(&m.positions);
        mesh.normals.extend(&m.normals);
        mesh.materials.extend(&m.materials);
        mesh.indices.extend(m.indices.iter().map(|t| t.map(|i| i + base)));
        levels.extend(std::iter::repeat_n(key.node.level as u8, m.indices.len()));
    }
    Ok(LodScene { mesh, levels, nodes_per_level, seconds: start.elapsed().as_secs_f64() })
}

/// A level's tint: finest red through coarsest violet.
fn tint(level: u8) -> [f32; 3] {
    const TINTS: [[f32; 3]; 6] = [
        [0.95, 0.35, 0.30],
        [0.95, 0.70, 0.25],
        [0.55, 0.85, 0.35],
        [0.30, 0.80, 0.85],
        [0.35, 0.50, 0.95],
        [0.75, 0.45, 0.95],
    ];
    TINTS[level as usize % TINTS.len()]
}

/// Renders `scene` from `camera`: one ray a pixel and one toward the sun from each hit, through a
/// kD tree over the scene's triangles, in parallel (the same picture for any thread count).
pub(crate) fn render_lod(
    scene: &LodScene,
    table: &MaterialTable,
    camera: &Camera,
    tint_levels: bool,
    mut progress: impl FnMut(u64, u64),
) -> anyhow::Result<Picture> {
    let tree = KdTree::build(&scene.mesh)?;
    let view = tree.with(&scene.mesh);
    let far = 1e5;
    let rays = primary_rays(camera);
    let total = rays.len();
    let band = (camera.width as usize * 16).max(1);
    let mut hits: Vec<Option<RayHit>> = vec![None; total];
    let start = Instant::now();
    for (i, (rs, hs)) in rays.chunks(band).zip(hits.chunks_mut(band)).enumerate() {
        rs.par_chunks(256)
            .zip(hs.par_chunks_mut(256))
            .for_each(|(r, h)| view.cast_rays(r, far, Culling::None, h));
        progress(((i + 1) * band).min(total) as u64, total as u64 * 2);
    }
    let primary_seconds = start.elapsed().as_secs_f64();

    let sun = sun();
    let mesh = &scene.mesh;
    let normal_at = |h: &RayHit| -> Vector3<f32> {
        let t = mesh.indices[h.triangle as usize];
        let n = mesh.normals[t[0] as usize] * (1.0 - h.u - h.v)
            + mesh.normals[t[1] as usize] * h.u
            + mesh.normals[t[2] as usize] * h.v;
        n.try_normalize(1e-9).unwrap_or(Vector3::y())
    };
    let lit: Vec<usize> = (0..total).filter(|&i| hits[i].is_some()).collect();
    let shadow_rays: Vec<Ray> = lit
        .iter()
        .filter_map(|&i| {
            hits[i].map(|h| {
                let p: Point3<f32> = rays[i].origin + rays[i].dir * h.t;
                Ray::new(p + normal_at(&h) * 0.05, sun)
            })
        })
        .collect();
    let mut shadowed = vec![false; shadow_rays.len()];
    let start = Instant::now();
    for (i, (rs, hs)) in shadow_rays.chunks(band).zip(shadowed.chunks_mut(band)).enumerate() {
        rs.par_chunks(256)
            .zip(hs.par_chunks_mut(256))
            .for_each(|(r, h)| view.rays_hit_any(r, far, Culling::None, h));
        progress((total + ((i + 1) * band).min(shadow_rays.len())) as u64, total as u64 * 2);
    }
    let shadow_seconds = start.elapsed().as_secs_f64();

    let mut rgb: Vec<u8> = rays.iter().flat_map(|r| sky(&r.dir)).collect();
    let dist = ((camera.target - camera.eye).norm() * 4.0).max(1.0);
    for (&i, &dark) in lit.iter().zip(&shadowed) {
        let Some(h) = hits[i] else { continue };
        let tri = mesh.indices[h.triangle as usize];
        let base = if tint_levels {
            tint(scene.levels[h.triangle as usize])
        } else {
            material_color(table, mesh.materials[tri[0] as usize])
        };
        let haze = h.t * rays[i].dir.norm() / dist;
        rgb[i * 3..i * 3 + 3].copy_from_slice(&shade(base, &normal_at(&h), dark, haze));
    }
    Ok(Picture {
        width: camera.width,
        height: camera.height,
        rgb,
        primary_rays: total,
        primary_seconds,
        shadow_rays: shadow_rays.len(),
        shadow_seconds,
    })
}
