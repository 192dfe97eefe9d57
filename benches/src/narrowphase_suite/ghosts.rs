//! Ghost bumps and lost contacts: a box and a ball sliding across chunk columns of flat, sloped
//! and curved ground, on voxterra's terrain and on parry's per-chunk and merged TriMeshes.

use crate::harness::{Metric, Report};
use crate::narrowphase_suite::bodies::{PREDICTION, ParryManifold, chunks_of, overlapping, trimesh};
use parry3d::math::{Pose, Vector};
use parry3d::query::{DefaultQueryDispatcher, PersistentQueryDispatcher};
use parry3d::shape::{SharedShape, TriMesh, TriMeshFlags};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{
    Aabb, DenseVoxels, Region, TriangleMesh, TriangleSource, Voxel, VoxelPos, VoxelWrite, materials,
};
use voxterra_narrowphase::convert::{FromParry, ToParry};
use voxterra_narrowphase::{ContactWorkspace, TriangleSet, contacts};

/// Contact normals found at a pose, each with its triangle's face normal.
pub(crate) type Normals = Vec<(Vector3<f32>, Vector3<f32>)>;

/// A surface `y = height(x)`.
pub(crate) type Height = Box<dyn Fn(f32) -> f32>;

/// Voxel ground whose surface is `y = height(x)` over 24 chunk columns (see the seams test).
pub(crate) fn ground(height: &dyn Fn(f32) -> f32) -> (DenseVoxels, Region) {
    let region = Region::from_min_size(VoxelPos::new(-4, -4, -4), [24 * 8 + 8, 80, 24]).expect("small");
    let mut d = DenseVoxels::new(region, 1 << 24).expect("small");
    for p in region.iter() {
        let occ = (0.5 + 0.4 * (height(p.x as f32 + 0.5) - (p.y as f32 + 0.5))).clamp(0.0, 1.0);
        if occ * 256.0 >= 1.0 {
            let byte = (occ * 256.0 - 1.0).round().clamp(0.0, 255.0) as u8;
            d.fill(&Region::voxel(p).expect("in range"), Voxel::new(materials::ROCK, byte)).expect("inside");
        }
    }
    (d, Region::from_min_size(VoxelPos::new(0, 0, 0), [24 * 8, 72, 16]).expect("small"))
}

#[derive(Default, Clone, Copy)]
pub(crate) struct Ghosts {
    pub(crate) worst: f32,
    pub(crate) blocking: usize,
    pub(crate) lost: usize,
}

/// Slides a shape over the chunks, 60 Hz, 5 voxels/s, resting 5 mm in; measures ghost normals.
pub(crate) fn slide(
    height: &dyn Fn(f32) -> f32,
    shape: &SharedShape,
    bottom: f32,
    contacts_at: &mut dyn FnMut(&Pose, &mut Normals),
) -> Ghosts {
    let mut g = Ghosts::default();
    let mut found = Vec::new();
    for f in 0..(175.0f32 / 5.0 * 60.0) as usize {
        let x = 4.0 + f as f32 * 5.0 / 60.0;
        let slope = (height(x + 1e-3) - height(x - 1e-3)) / 2e-3;
        let up = Vector3::new(-slope, 1.0, 0.0).normalize();
        let center = Point3::new(x, height(x), 8.3) + up * (bottom - 0.005);
        let pose = Pose::new(center.coords.to_parry(), Vector::Z * slope.atan());
        found.clear();
        contacts_at(&pose, &mut found);
        let _ = shape;
        if found.is_empty() {
            g.lost += 1;
        }
        for (n, face) in &found {
            g.worst = g.worst.max(n.dot(face).clamp(-1.0, 1.0).acos().to_degrees());
            // Opposing the motion (+x) more than the surface itself does, by over 5°.
            if n.x < face.x - 5f32.to_radians().sin() {
                g.blocking += 1;
            }
        }
    }
    g
}

pub(crate) fn ghost_metrics(report: &mut Report) {
    let surfaces: [(&str, Height); 3] = [
        ("flat", Box::new(|_| 10.0)),
        ("sloped 1:4", Box::new(|x| 10.0 + 0.25 * x)),
        ("curved 2 sin(2πx/64)", Box::new(|x| 20.0 + 2.0 * (std::f32::consts::TAU * x / 64.0).sin())),
    ];
    for (name, height) in &surfaces {
        let (d, region) = ground(&**height);
        let ours = chunks_of(&d, &region, TriMeshFlags::FIX_INTERNAL_EDGES);
        let plain: Vec<TriMesh> = ours.iter().map(|c| trimesh(&c.mesh, TriMeshFlags::empty())).collect();
        let merged = {
            let mut m = TriangleMesh::default();
            for c in &ours {
                let base = m.positions.len() as u32;
                m.positions.extend((0..c.mesh.vertex_count()).map(|i| c.mesh.position(i)));
                m.triangles.extend(c.mesh.triangles().iter().map(|t| t.map(|v| base + u32::from(v))));
            }
            let positions = m.positions.iter().map(|p| p.to_parry()).collect();
            TriMesh::with_flags(positions, m.triangles, TriMeshFlags::FIX_INTERNAL_EDGES).expect("a mesh")
        };
        for (shape, bottom, sname) in
            [(SharedShape::cuboid(0.5, 1.0, 0.5), 1.0, "box"), (SharedShape::ball(0.5), 0.5, "ball")]
        {
            let mut ws = ContactWorkspace::new();
            let mut out = Vec::new();
            let v = slide(&**height, &shape, bottom, &mut |pose, found| {
                for c in overlapping(&ours, &Aabb::from_parry(&shape.compute_aabb(pose))) {
                    let ch = &ours[c];
                    let index = ch.tree.with(&ch.mesh);
                    let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
                    out.clear();
                    contacts(&*shape.0, pose, set, PREDICTION, &mut ws, &mut out).expect("valid");
                    for m in &out {
                        for p in m.points() {
                            let t = ch.mesh.triangle(p.id.triangle as usize);
                            found.push((
                                p.normal.into_inner(),
                                (t[1] - t[0]).cross(&(t[2] - t[0])).normalize(),
                            ));
                        }
                    }
                }
            });
            let parry_side = |meshes: &[&TriMesh]| {
                slide(&**height, &shape, bottom, &mut |pose, found| {
                    for mesh in meshes {
                        let mut manifolds: Vec<ParryManifold> = Vec::new();
                        let mut ws = None;
                        let b = Aabb::from_parry(&shape.compute_aabb(pose));
                        if !b.loosened(PREDICTION).intersects(&Aabb::from_parry(&mesh.local_aabb())) {
                            continue;
                        }
                        DefaultQueryDispatcher
                            .contact_manifolds(
                                &pose.inverse(),
                                &*shape.0,
                                *mesh,
                                PREDICTION,
                                &mut manifolds,
                                &mut ws,
                            )
                            .expect("supported");
                        for m in &manifolds {
                            if m.points.is_empty() {
                                continue;
                            }
                            // Normal from the terrain toward the shape, world space.
                            let n = -(pose.rotation * m.local_n1);
                            let t = mesh.triangle(m.subshape2);
                            found.push((
                                Vector3::from_parry(n),
                                Vector3::from_parry(t.scaled_normal().normalize()),
                            ));
                        }
                    }
                })
            };
            let fixed: Vec<&TriMesh> = ours.iter().map(|c| &c.peer).collect();
            let unfixed: Vec<&TriMesh> = plain.iter().collect();
            let p_fixed = parry_side(&fixed);
            let p_plain = parry_side(&unfixed);
            let p_merged = parry_side(&[&merged]);
            let row = |what: &str, ours: f64, peer: f64, peer_name: &str, goal: &str| Metric {
                name: format!("{sname} on {name}: {what}"),
                voxterra: ours,
                peer,
                peer_name: peer_name.into(),
                goal: goal.into(),
            };
            report.metrics.push(row(
                "worst normal, degrees off face",
                v.worst as f64,
                p_fixed.worst as f64,
                "parry FIX/chunk",
                &format!("≤ 1; parry without FIX {:.1}, merged FIX {:.1}", p_plain.worst, p_merged.worst),
            ));
            report.metrics.push(row(
                "blocking normals",
                v.blocking as f64,
                p_fixed.blocking as f64,
                "parry FIX/chunk",
                &format!("0; parry without FIX {}, merged FIX {}", p_plain.blocking, p_merged.blocking),
            ));
            report.metrics.push(row(
                "frames without contact",
                v.lost as f64,
                p_fixed.lost as f64,
                "parry FIX/chunk",
                &format!("0; parry without FIX {}, merged FIX {}", p_plain.lost, p_merged.lost),
            ));
        }
    }
}
