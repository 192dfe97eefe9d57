//! Far terrain in pictures and files: the clipmap ([`LodView`]) around a viewer, its meshes merged,
//! and a picture ray cast through one kD tree over them (the project's own), shaded like
//! `voxterra render`'s, each level optionally tinted.

use crate::render::{Camera, Picture, material_color, primary_rays, shade, sky, sun};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::time::Instant;
use voxterra::Terrain;
use voxterra::core::StoreChunkKey;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{Culling, MaterialTable, Ray, RayHit};
use voxterra::kdtree::KdTree;
use voxterra::lod::{LodConfig, LodMeshKey, LodNode, LodView};
use voxterra::mesher::{Mesher, RenderMesh};

/// The clipmap's meshes around `eye`, merged, with each triangle's level.
pub(crate) struct LodScene {
    pub(crate) mesh: RenderMesh,
    pub(crate) levels: Vec<u8>,
    /// Nodes drawn per level, finest first.
    pub(crate) nodes_per_level: Vec<usize>,
    pub(crate) seconds: f64,
    /// For a paged terrain, what drawing the view read.
    pub(crate) paging: Option<ScenePaging>,
}

/// What a view over a paged terrain read: chunk loads (a chunk evicted and read again counts
/// twice), the world's storage chunks it touched and how many the world has.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub(crate) struct ScenePaging {
    pub(crate) chunks_loaded: u64,
    pub(crate) world_touched: u64,
    pub(crate) world_chunks: u64,
    pub(crate) page_calls: usize,
    /// Bytes the view's chunk clusters held at the end.
    pub(crate) cluster_bytes: usize,
}

impl ScenePaging {
    pub(crate) fn line(&self) -> String {
        format!(
            "paged      {} chunk loads in {} calls, {:.1}% of the world's {} chunks touched, view clusters {:.0} MiB, peak resident {:.0} MiB",
            self.chunks_loaded,
            self.page_calls,
            self.world_touched as f64 * 100.0 / self.world_chunks.max(1) as f64,
            self.world_chunks,
            self.cluster_bytes as f64 / (1 << 20) as f64,
            crate::fly::peak_rss_mib()
        )
    }
}

/// A clipmap drawn: its meshes in key order, the view, and what paging it read.
pub(crate) type DrawnView = (Vec<(LodMeshKey, RenderMesh)>, LodView, Option<ScenePaging>);

/// The clipmap around `eye` (terrain voxel units): its meshes in key order and the view. On a
/// paged terrain the nodes are drawn nearest first, each once the chunks it reads are paged in
/// (the least recently used leaving past the terrain's budget), so a view over a world far
/// larger than memory is drawn within the budget; the bar counts nodes drawn.
pub(crate) fn lod_meshes(
    terrain: &mut Terrain,
    mesher: &Mesher,
    eye: Point3<f32>,
    quiet: bool,
) -> anyhow::Result<DrawnView> {
    let mut view = LodView::new(LodConfig::default())?;
    let update = view.update(terrain, mesher, &[eye])?;
    if !terrain.is_paged() {
        return Ok((update.meshes, view, None));
    }
    let loaded_before = terrain.page_stats().map_or(0, |s| s.loaded_total);
    let mut meshes: BTreeMap<LodMeshKey, RenderMesh> = update.meshes.into_iter().collect();
    let bar = crate::gen_cmd::progress_bar(0, "paging    ", "nodes", quiet)?;
    let mut page_calls = 0;
    let world = terrain.world_bounds();
    let mut touched: std::collections::HashSet<StoreChunkKey> = Default::default();
    while let Some(next) = nearest(view.waiting(), &eye) {
        bar.set_length((view.nodes().count() + view.waiting().len()) as u64);
        bar.set_position(view.nodes().count() as u64);
        if let Some(reads) = next.reads(terrain)? {
            terrain.page_in(&[terrain.scale().region_to_world(&reads, 0.0)])?;
            let inside = world.and_then(|w| w.intersection(&reads));
            touched.extend(inside.and_then(|r| StoreChunkKey::range(&r)).into_iter().flat_map(|r| r.iter()));
        }
        page_calls += 1;
        let update = view.update(terrain, mesher, &[eye])?;
        for k in &update.dropped {
            meshes.remove(k);
        }
        meshes.extend(update.meshes);
        anyhow::ensure!(
            !view.waiting().contains(&next),
            "node {next:?} is still not drawable after paging in what it reads"
        );
    }
    bar.finish_and_clear();
    let loaded = terrain.page_stats().map_or(0, |s| s.loaded_total) - loaded_before;
    let world_chunks = world.and_then(|w| StoreChunkKey::range(&w)).map_or(0, |r| r.count() as u64);
    let paging = ScenePaging {
        chunks_loaded: loaded,
        world_touched: touched.len() as u64,
        world_chunks,
        page_calls,
        cluster_bytes: view.cluster_bytes(),
    };
    Ok((meshes.into_iter().collect(), view, Some(paging)))
}

/// The node of `nodes` nearest `eye`, the first in key order among equals.
fn nearest(nodes: &[LodNode], eye: &Point3<f32>) -> Option<LodNode> {
    let d = |n: &LodNode| {
        n.region().map_or(f32::INFINITY, |r| {
            let c = r.min().map(|v| v as f32) + (r.max() - r.min()).map(|v| v as f32) * 0.5;
            (c - eye).norm()
        })
    };
    nodes.iter().copied().min_by(|a, b| d(a).total_cmp(&d(b)))
}

/// Selects and meshes the clipmap around `eye` (terrain voxel units), merged.
pub(crate) fn lod_scene(
    terrain: &mut Terrain,
    mesher: &Mesher,
    eye: Point3<f32>,
    quiet: bool,
) -> anyhow::Result<LodScene> {
    let start = Instant::now();
    let (meshes, view, paging) = lod_meshes(terrain, mesher, eye, quiet)?;
    let mut nodes_per_level = vec![0; view.top_level() as usize + 1];
    for n in view.nodes() {
        nodes_per_level[n.level as usize] += 1;
    }
    let mut mesh = RenderMesh::default();
    let mut levels = Vec::new();
    for (key, m) in &meshes {
        let base = mesh.positions.len() as u32;
        mesh.positions.extend(&m.positions);
        mesh.normals.extend(&m.normals);
        mesh.materials.extend(&m.materials);
        mesh.indices.extend(m.indices.iter().map(|t| t.map(|i| i + base)));
        levels.extend(std::iter::repeat_n(key.node.level as u8, m.indices.len()));
    }
    Ok(LodScene { mesh, levels, nodes_per_level, seconds: start.elapsed().as_secs_f64(), paging })
}

/// `p` on the triangle of hit `h` lifted onto the curved surface its vertex normals describe
/// (Hanika, "Hacking the Shadow Terminator", Ray Tracing Gems II, 2021): below a vertex's tangent
/// plane it moves out to it, weighted by the barycentric coordinates. A shadow ray from the flat
/// triangle itself would find the coarse facets beside it in the way wherever the smooth normals
/// lean toward the sun more than the facet does, darkening whole facets that shading lights.
fn terminator_lift(mesh: &RenderMesh, h: &RayHit, p: Point3<f32>) -> Point3<f32> {
    let t = mesh.indices[h.triangle as usize];
    let weights = [1.0 - h.u - h.v, h.u, h.v];
    let mut out = p;
    for (&i, w) in t.iter().zip(weights) {
        let (corner, n) = (mesh.positions[i as usize], mesh.normals[i as usize]);
        let below = (p - corner).dot(&n).min(0.0);
        out -= n * (below * w);
    }
    out
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
/// kD tree over the scene's triangles, in parallel (the same picture for any thread count); and
/// how many of its pixels see a triangle from behind.
pub(crate) fn render_lod(
    scene: &LodScene,
    table: &MaterialTable,
    camera: &Camera,
    tint_levels: bool,
    mut progress: impl FnMut(u64, u64),
) -> anyhow::Result<(Picture, FoldedPixels)> {
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
    // Triangles are wound to face the air: a ray from the air that meets one from behind sees
    // through a fold in the surface.
    let back_faces = lit
        .iter()
        .filter(|&&i| {
            hits[i].is_some_and(|h| {
                let [a, b, c] = mesh.indices[h.triangle as usize].map(|v| mesh.positions[v as usize]);
                (b - a).cross(&(c - a)).dot(&rays[i].dir) > 0.0
            })
        })
        .count();
    let shadow_rays: Vec<Ray> = lit
        .iter()
        .filter_map(|&i| {
            hits[i].map(|h| {
                let p: Point3<f32> = rays[i].origin + rays[i].dir * h.t;
                Ray::new(terminator_lift(mesh, &h, p) + normal_at(&h) * 0.05, sun)
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
    let picture = Picture {
        width: camera.width,
        height: camera.height,
        rgb,
        primary_rays: total,
        primary_seconds,
        shadow_rays: shadow_rays.len(),
        shadow_seconds,
    };
    let shadowed = shadowed.iter().filter(|&&d| d).count();
    Ok((picture, FoldedPixels { back_faces, terrain: lit.len(), shadowed }))
}

/// Pixels of a levels-of-detail picture that show terrain, those of them that see a triangle
/// from behind (through a folded facet), and those in shadow.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FoldedPixels {
    pub(crate) back_faces: usize,
    pub(crate) terrain: usize,
    pub(crate) shadowed: usize,
}
