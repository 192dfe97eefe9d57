//! Bodies sliding across chunk seams of voxel terrain meshed chunk by chunk: with the mesher's
//! edge flags no contact normal leaves the surface's; without them the same run shows the ghost
//! normals (so this test can fail).

#![allow(clippy::unwrap_used)] // a failed unwrap is a failed test

use parry3d::shape::SharedShape;
use voxterra_core::nalgebra::{Isometry3, Point3, Vector3};
use voxterra_core::{
    DenseVoxels, MaterialTable, PhysicsChunkKey, Region, TriangleSource, Voxel, VoxelPos, VoxelWrite,
    materials,
};
use voxterra_kdtree::KdTree;
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh};
use voxterra_narrowphase::convert::ToParry;
use voxterra_narrowphase::{ContactWorkspace, TriangleSet, contacts};

struct Chunk {
    mesh: PhysicsMesh,
    tree: KdTree,
}

/// Ground whose surface is `y = height(x)`, from fractional occupancy, meshed as 8³ physics
/// chunks.
fn ground(height: &dyn Fn(f32) -> f32, chunks_x: i32) -> Vec<Chunk> {
    // Tall enough for the slope's rise over the whole run.
    let size = [chunks_x as u32 * 8 + 8, 80, 24];
    let region = Region::from_min_size(VoxelPos::new(-4, -4, -4), size).unwrap();
    let mut d = DenseVoxels::new(region, 1 << 24).unwrap();
    for p in region.iter() {
        let surface = height(p.x as f32 + 0.5);
        // Occupancy of the voxel centered at y + 0.5: crosses one half at the surface, and a
        // gradient of 0.4 a voxel keeps both corners of every crossing edge off the clamp, so
        // the field is linear where it matters and the surface planar.
        let occ = (0.5 + 0.4 * (surface - (p.y as f32 + 0.5))).clamp(0.0, 1.0);
        let byte = (occ * 256.0 - 1.0).round().clamp(0.0, 255.0) as u8;
        if occ > 0.0 && (occ * 256.0) >= 1.0 {
            d.fill(&Region::voxel(p).unwrap(), Voxel::new(materials::ROCK, byte)).unwrap();
        }
    }
    let mesher = Mesher::new(&MaterialTable::default());
    let mut ws = MeshWorkspace::new();
    let mut out = Vec::new();
    for cx in 0..chunks_x {
        for cy in 0..9 {
            for cz in 0..2 {
                let r = PhysicsChunkKey::new(cx, cy, cz).region().unwrap();
                let mut mesh = PhysicsMesh::default();
                mesher.mesh_physics(&d, &r, &mut ws, &mut mesh).unwrap();
                if mesh.triangles().is_empty() {
                    continue;
                }
                let tree = KdTree::build(&mesh).unwrap();
                out.push(Chunk { mesh, tree });
            }
        }
    }
    out
}

/// Slides `shape` along +x across the chunks, resting 5 mm into the surface, at 5 voxels/s and
/// 60 Hz; returns the largest angle (degrees) between a contact normal and its triangle's face
/// normal (the mesh's own faceting is not a bump), and the frames with no contact.
fn slide(
    chunks: &[Chunk],
    height: &dyn Fn(f32) -> f32,
    shape: &SharedShape,
    bottom: f32,
    use_flags: bool,
) -> (f32, usize) {
    let mut ws = ContactWorkspace::new();
    let (mut worst, mut lost, mut facets) = (0.0f32, 0, 0.0f32);
    let mut out = Vec::new();
    let frames = ((chunks.len() as f32 / 8.0 * 8.0 - 10.0) / 5.0 * 60.0) as usize;
    for f in 0..frames.min(30 * 60) {
        let x = 4.0 + f as f32 * 5.0 / 60.0;
        let surface = height(x);
        let slope = (height(x + 1e-3) - height(x - 1e-3)) / 2e-3;
        let up = Vector3::new(-slope, 1.0, 0.0).normalize();
        // Rest the shape on the slope (turned to it), its lowest point 5 mm into the surface.
        let center = Point3::new(x, surface, 8.3) + up * (bottom - 0.005);
        let pose = Isometry3::new(center.coords, Vector3::z() * slope.atan()).to_parry();
        let mut touching = false;
        for c in chunks {
            let index = c.tree.with(&c.mesh);
            let mut set = TriangleSet::new(&c.mesh, &index);
            if use_flags {
                set = set.with_edge_flags(c.mesh.edge_flags());
            }
            out.clear();
            contacts(&*shape.0, &pose, set, 0.02, &mut ws, &mut out).unwrap();
            for m in &out {
                touching = true;
                for p in m.points() {
                    // Against the contact triangle's own face: the mesh's faceting is not a bump.
                    let t = c.mesh.triangle(p.id.triangle as usize);
                    let face = (t[1] - t[0]).cross(&(t[2] - t[0])).normalize();
                    worst = worst.max(p.normal.dot(&face).clamp(-1.0, 1.0).acos().to_degrees());
                    facets = facets.max(face.dot(&up).clamp(-1.0, 1.0).acos().to_degrees());
                }
            }
        }
        if !touching {
            lost += 1;
        }
    }
    eprintln!("worst {worst:.3}°, faceting {facets:.3}°, {lost} frames without contact");
    (worst, lost)
}

#[test]
fn no_ghost_normals_across_chunk_seams() {
    let boxy = SharedShape::cuboid(0.5, 1.0, 0.5);
    let ball = SharedShape::ball(0.5);
    let flat = |_: f32| 10.0f32;
    let sloped = |x: f32| 10.0 + 0.25 * x;
    let curved = |x: f32| 20.0 + 2.0 * (std::f32::consts::TAU * x / 64.0).sin();
    for (name, height) in [("flat", &flat as &dyn Fn(f32) -> f32), ("sloped", &sloped), ("curved", &curved)] {
        let chunks = ground(height, 24);
        // The box's bottom is 1.0 below its center, the ball's 0.5 (along the normal).
        let (box_worst, box_lost) = slide(&chunks, height, &boxy, 1.0, true);
        let (ball_worst, ball_lost) = slide(&chunks, height, &ball, 0.5, true);
        assert!(box_worst < 1.0, "{name}: box normals up to {box_worst}° off their faces");
        assert!(ball_worst < 1.0, "{name}: ball normals up to {ball_worst}° off their faces");
        assert_eq!((box_lost, ball_lost), (0, 0), "{name}: frames without contact");
        if name == "flat" {
            // Without the flags, the box catches chunk and triangle edges.
            let (unflagged, _) = slide(&chunks, height, &boxy, 1.0, false);
            assert!(unflagged > 30.0, "expected ghost normals without flags, worst {unflagged}°");
        }
    }
}
