//! Coarse levels keep the surface's side: over a sharp ridge, under an overhanging shelf and on
//! both sides of a wall one cluster thick, turned every way about the vertical, no triangle of a
//! level turns its back on the surface it stands for (a fold: its normal more than 120° from the
//! surface's at its centroid).

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{DenseVoxels, MaterialTable, Region, Voxel, materials};
use voxterra_mesher::{ClusterNode, ClusterPart, MeshWorkspace, Mesher, RenderMesh};

/// The node's side, voxels.
const SIDE: u32 = 64;

/// A scene's signed distance (negative inside), in voxels.
type Sdf = dyn Fn(Vector3<f32>) -> f32;

/// The distance to a box of half-sizes `h` centered at the origin.
fn boxed(p: Vector3<f32>, h: Vector3<f32>) -> f32 {
    let q = p.abs() - h;
    q.map(|v| v.max(0.0)).norm() + q.x.max(q.y).max(q.z).min(0.0)
}

/// The union of two distances with a rounded seam (a plain minimum's gradient inside the seam
/// points at the buried face).
fn smooth_min(a: f32, b: f32, k: f32) -> f32 {
    let h = (0.5 + 0.5 * (b - a) / k).clamp(0.0, 1.0);
    b + (a - b) * h - k * h * (1.0 - h)
}

/// `p` in the frame turned `angle` radians about the vertical through the node's middle.
fn turned(p: Vector3<f32>, angle: f32) -> Vector3<f32> {
    let (s, c) = angle.sin_cos();
    let (x, z) = (p.x - 32.0, p.z - 32.0);
    Vector3::new(c * x + s * z, p.y, -s * x + c * z)
}

/// The scenes turned `angle`, with the finest level each is drawn at and the coarsest: a wall
/// two voxels thick is one level-1 cluster thick and below the sampling of coarser levels (it
/// breaks into separate pieces there).
fn scenes(angle: f32) -> Vec<(&'static str, Box<Sdf>, u32)> {
    let ground = |p: Vector3<f32>| p.y - 12.0;
    vec![
        // A ridge of slopes 2:1 meeting at a sharp crest.
        (
            "ridge",
            Box::new(move |p: Vector3<f32>| {
                let q = turned(p, angle);
                let s = 2.0f32;
                (q.y - (44.0 - s * q.x.abs())) / (1.0 + s * s).sqrt()
            }),
            4,
        ),
        // A cliff with a shelf four voxels thick sticking out of it.
        (
            "overhang",
            Box::new(move |p: Vector3<f32>| {
                let q = turned(p, angle * 1.3);
                let cliff = boxed(q - Vector3::new(-40.0, 0.0, 0.0), Vector3::new(40.0, 44.0, 80.0));
                let shelf = boxed(q - Vector3::new(8.0, 32.0, 0.0), Vector3::new(8.0, 2.0, 80.0));
                smooth_min(smooth_min(ground(p), cliff, 1.0), shelf, 1.0)
            }),
            4,
        ),
        // A wall two voxels thick standing on the ground.
        (
            "thin wall",
            Box::new(move |p: Vector3<f32>| {
                let q = turned(p, angle * 0.7);
                smooth_min(ground(p), boxed(q, Vector3::new(1.0, 44.0, 80.0)), 1.0)
            }),
            1,
        ),
    ]
}

fn voxels(sdf: &Sdf) -> DenseVoxels {
    let r = Region::from_min_size(Point3::new(-8, -8, -8), [SIDE + 16; 3]).unwrap();
    let mut d = DenseVoxels::new(r, 1 << 22).unwrap();
    for p in r.iter() {
        let c = Vector3::new(p.x as f32 + 0.5, p.y as f32 + 0.5, p.z as f32 + 0.5);
        d.set(p, Voxel::with_occupancy(materials::ROCK, (0.5 - sdf(c)).clamp(0.0, 1.0)));
    }
    d
}

/// The surface's outward normal near `p` (voxel units; the mesh's positions sit half a voxel
/// past the voxel grid, where the distance is sampled at voxel centers).
fn normal_at(sdf: &Sdf, p: Vector3<f32>) -> Vector3<f32> {
    let h = 0.25;
    let d = |a: usize| {
        let mut e = Vector3::zeros();
        e[a] = h;
        sdf(p + e) - sdf(p - e)
    };
    Vector3::new(d(0), d(1), d(2)).normalize()
}

/// The triangles of `m` clear of the node's faces by a cluster (clusters on a node's faces draw
/// one vertex, so that nodes meet without cracks), and the folded ones among them.
fn folds(m: &RenderMesh, sdf: &Sdf, level: u32) -> (usize, Vec<[Vector3<f32>; 3]>) {
    let margin = (1u32 << level) as f32 + 0.5;
    let clear = |p: &Vector3<f32>| p.iter().all(|&v| v > margin && v < SIDE as f32 - margin);
    let (mut n, mut folded) = (0, Vec::new());
    for t in &m.indices {
        let corners = t.map(|i| m.positions[i as usize].coords);
        let [a, b, c] = corners;
        let face = (b - a).cross(&(c - a));
        if face.norm() < 1e-6 || !corners.iter().all(clear) {
            continue;
        }
        n += 1;
        if face.normalize().dot(&normal_at(sdf, (a + b + c) / 3.0)) < -0.5 {
            folded.push(corners);
        }
    }
    (n, folded)
}

#[test]
fn no_level_folds_over_ridges_overhangs_or_thin_walls() {
    let mesher = Mesher::new(&MaterialTable::default());
    let mut ws = MeshWorkspace::new();
    for k in 0..12 {
        let angle = 0.05 + k as f32 * 0.13;
        for (name, sdf, coarsest) in scenes(angle) {
            let d = voxels(&*sdf);
            for level in 1..=coarsest {
                let region = Region::from_min_size(Point3::new(0, 0, 0), [SIDE; 3]).unwrap();
                let mut m = RenderMesh::default();
                let levels = move |_| level;
                let node = ClusterNode { region, level };
                mesher.mesh_clustered(&d, node, &levels, ClusterPart::Whole, &mut ws, &mut m).unwrap();
                let (n, folded) = folds(&m, &*sdf, level);
                assert!(n > 0, "{name} turned {angle}: level {level} draws the scene");
                assert!(
                    folded.is_empty(),
                    "{name} turned {angle}: level {level} folds {} of {n} triangles, first {:?}",
                    folded.len(),
                    folded[0]
                );
            }
        }
    }
}
