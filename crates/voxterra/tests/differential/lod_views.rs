//! Levels-of-detail views against fresh meshes: on random ground with structures (floating
//! islands, bridges, thin necks, blocks touching by an edge or a corner), far from the origin or
//! near it, at voxel sizes 0.5, 1 and 2, a viewer moving and edits landing; after every update the
//! meshes handed out so far are exactly the view's nodes, each equal to a fresh mesh of it,
//! together they are closed (every edge matched the other way), and every vertex of a level-k
//! node lies within a level-k cell's diagonal (√3 · 2^k voxels) of the full-resolution surface (a
//! border, stitched to neighbors up to a level coarser, within the next level's).

use crate::Tally;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::lod::{LodConfig, LodMeshKey, LodView};
use voxterra::mesher::{ClusterNode, ClusterPart, MeshWorkspace, Mesher, RenderMesh};
use voxterra::parry3d::math::Vector;
use voxterra::parry3d::query::PointQuery;
use voxterra::parry3d::shape::TriMesh;
use voxterra::{Brush, BrushOp, BrushShape, Terrain, TerrainConfig};
use voxterra_test_support::Rng;
use voxterra_test_support::ground::table;

/// Edges not matched by the same edge the other way (vertices named by position).
fn open_edges(meshes: &BTreeMap<LodMeshKey, RenderMesh>) -> usize {
    let mut count: HashMap<([u32; 3], [u32; 3]), i64> = HashMap::new();
    for m in meshes.values() {
        let key = |i: u32| -> [u32; 3] { m.positions[i as usize].coords.map(|v| v.to_bits()).into() };
        for t in &m.indices {
            for e in 0..3 {
                let (a, b) = (key(t[e]), key(t[(e + 1) % 3]));
                if a < b {
                    *count.entry((a, b)).or_default() += 1;
                } else if b < a {
                    *count.entry((b, a)).or_default() -= 1;
                }
            }
        }
    }
    count.values().filter(|&&c| c != 0).count()
}

/// The full-resolution surface of every stored chunk (voxel units), for distances.
fn full_surface(t: &Terrain, mesher: &Mesher) -> Option<TriMesh> {
    let (mut positions, mut indices) = (Vec::new(), Vec::new());
    for (_, m) in t.render_meshes_of(mesher, &t.render_chunks()).ok()? {
        let base = positions.len() as u32;
        positions.extend(m.positions.iter().map(|p| Vector::new(p.x, p.y, p.z)));
        indices.extend(m.indices.iter().map(|tri| tri.map(|i| i + base)));
    }
    TriMesh::new(positions, indices).ok()
}

/// What differs between the held meshes and a fresh view of `view`'s nodes.
fn check(
    t: &Terrain,
    view: &LodView,
    held: &BTreeMap<LodMeshKey, RenderMesh>,
    full: Option<&TriMesh>,
    step: usize,
) -> Vec<(&'static str, String)> {
    let mut fails = Vec::new();
    let want: BTreeSet<LodMeshKey> = view
        .nodes()
        .flat_map(|n| [ClusterPart::Interior, ClusterPart::Border].map(|part| LodMeshKey { node: n, part }))
        .collect();
    if held.keys().copied().collect::<BTreeSet<_>>() != want {
        fails.push((
            "handed out",
            format!("step {step}: {} meshes held, the view has {}", held.len(), want.len()),
        ));
    }
    let mesher = Mesher::new(t.materials());
    let mut ws = MeshWorkspace::new();
    let levels = |p: voxterra::core::VoxelPos| view.level_at(p);
    for (k, m) in held {
        let Ok(region) = k.node.region() else { continue };
        let mut fresh = RenderMesh::default();
        let node = ClusterNode { region, level: k.node.level };
        if mesher.mesh_clustered(t.store(), node, &levels, k.part, &mut ws, &mut fresh).is_err()
            || fresh != *m
        {
            fails.push(("fresh", format!("step {step}: {k:?} is not a fresh mesh of it")));
            break;
        }
    }
    let open = open_edges(held);
    if open > 0 {
        fails.push(("open edges", format!("step {step}: {open}")));
    }
    if let Some(full) = full {
        'nodes: for (k, m) in held {
            // A border stitches to neighbors up to a level coarser.
            let level = k.node.level + u32::from(k.part == ClusterPart::Border);
            let reach = 3f32.sqrt() * (1u32 << level) as f32;
            for p in &m.positions {
                let q = Vector::new(p.x, p.y, p.z);
                let d = (full.project_local_point(q, false).point - q).length();
                if d > reach {
                    fails.push((
                        "far from the surface",
                        format!("step {step}: {k:?} vertex {p:?} is {d:.2} voxels off"),
                    ));
                    break 'nodes;
                }
            }
        }
    }
    fails
}

/// One world of `seed`, `steps` moves or edits.
pub fn run(seed: u64, steps: usize, tally: &mut Tally) {
    let mut rng = Rng::new(seed ^ 0x0010_d5ee);
    let voxel_size = [0.5f32, 1.0, 2.0][rng.below(3) as usize];
    let (store, window, material) = crate::pieces::world(seed, &mut rng);
    let config = TerrainConfig::with_voxel_size(voxel_size);
    let mut t = Terrain::from_store(store, table(), config).expect("a terrain");
    let mesher = Mesher::new(t.materials());
    let d = 12.0 * voxel_size;
    let mut view = LodView::new(LodConfig { distances: vec![d, 2.0 * d, 4.0 * d], hysteresis: 0.25 })
        .expect("a valid config");
    let mut held: BTreeMap<LodMeshKey, RenderMesh> = BTreeMap::new();
    let corner = window.min().cast::<f32>();
    let at = |rng: &mut Rng| {
        Point3::from(
            (corner.coords
                + Vector3::new(rng.range(-8.0, 56.0), rng.range(0.0, 48.0), rng.range(-8.0, 56.0)))
                * voxel_size,
        )
    };
    let describe = |f: Vec<(&'static str, String)>| {
        f.into_iter().map(move |(r, s)| {
            (r, format!("{s} | seed {seed}, voxel size {voxel_size}, window {:?}", window.min()))
        })
    };
    for step in 0..steps {
        if rng.below(3) == 0 {
            let center = at(&mut rng);
            let radius = rng.range(1.5, 5.0) * voxel_size;
            let op = if rng.below(2) == 0 { BrushOp::Subtract } else { BrushOp::Add(material) };
            if let Ok(r) = t.apply_brush(&Brush { shape: BrushShape::Sphere { center, radius }, op })
                && let Some(dirty) = r.dirty
            {
                view.mark_edited(&dirty);
            }
        }
        let viewer = at(&mut rng);
        let full = full_surface(&t, &mesher);
        let mut fails = Vec::new();
        match view.update(&t, &mesher, &[viewer]) {
            Ok(u) => {
                for k in u.dropped {
                    if held.remove(&k).is_none() {
                        fails.push(("dropped", format!("step {step}: {k:?} dropped but never handed out")));
                    }
                }
                held.extend(u.meshes);
                fails.extend(check(&t, &view, &held, full.as_ref(), step));
            }
            Err(e) => fails.push(("update", e.to_string())),
        }
        tally.record("view", describe(fails));
    }
}
