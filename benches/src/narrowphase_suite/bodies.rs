//! The suite's world as both sides see it: per-chunk parry `TriMesh`es, the shapes (ball, box,
//! capsule, rock) and bodies resting on the terrain.

use crate::world::{Rng, bench_world};
use parry3d::math::{Pose, Vector};
use parry3d::query::{ContactManifold, ContactManifoldsWorkspace};
use parry3d::shape::{ConvexPolyhedron, SharedShape, TriMesh, TriMeshFlags};
use std::collections::HashMap;
use voxterra_core::nalgebra::{Point3, UnitQuaternion, Vector3};
use voxterra_core::{Aabb, Culling, MaterialTable, PhysicsChunkKey, Ray, Region, TriangleIndex, VoxelRead};
use voxterra_kdtree::KdTree;
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh};
use voxterra_narrowphase::convert::{FromParry, ToParry};
use voxterra_narrowphase::{CastOptions, TriangleSet, cast_shape};

pub(crate) const PREDICTION: f32 = 0.02;

pub(crate) type ParryManifold = ContactManifold<(), ()>;

/// parry's persistent state per (body, chunk): manifolds and workspace.
pub(crate) type ParryState = HashMap<(usize, usize), (Vec<ParryManifold>, Option<ContactManifoldsWorkspace>)>;

/// One physics chunk, both sides: our mesh (with edge flags) and kD tree, parry's TriMesh.
pub struct Chunk {
    pub(crate) mesh: PhysicsMesh,
    pub(crate) tree: KdTree,
    pub(crate) bounds: Aabb,
    pub(crate) peer: TriMesh,
}

pub(crate) fn trimesh(mesh: &PhysicsMesh, flags: TriMeshFlags) -> TriMesh {
    let positions: Vec<Vector> = (0..mesh.vertex_count()).map(|i| mesh.position(i).to_parry()).collect();
    let indices: Vec<[u32; 3]> = mesh.triangles().iter().map(|t| t.map(u32::from)).collect();
    TriMesh::with_flags(positions, indices, flags).expect("a non-empty chunk mesh")
}

/// Meshes every physics chunk of `region` of `src` that has a surface.
pub fn chunks_of(src: &(impl VoxelRead + ?Sized), region: &Region, flags: TriMeshFlags) -> Vec<Chunk> {
    let mesher = Mesher::new(&MaterialTable::default());
    let mut ws = MeshWorkspace::new();
    let mut out = Vec::new();
    for key in PhysicsChunkKey::range(region).expect("non-empty region").iter() {
        let r = key.region().expect("in range");
        let mut mesh = PhysicsMesh::default();
        mesher.mesh_physics(src, &r, &mut ws, &mut mesh).expect("meshable chunk");
        if mesh.triangles().is_empty() {
            continue;
        }
        mesh.shrink_to_fit();
        let tree = KdTree::build(&mesh).expect("finite mesh");
        let bounds = *tree.bounds();
        let peer = trimesh(&mesh, flags);
        out.push(Chunk { mesh, tree, bounds, peer });
    }
    out
}

pub(crate) fn rock() -> ConvexPolyhedron {
    let pts: Vec<Vector> = (0..32)
        .map(|i| {
            let (a, b) = (i as f32 * 2.399_963, (i as f32 + 0.5) / 32.0);
            let z = 1.0 - 2.0 * b;
            let r = (1.0 - z * z).sqrt();
            Vector::new(r * a.cos() * 0.7, z * 0.45, r * a.sin() * 0.55)
        })
        .collect();
    ConvexPolyhedron::from_convex_hull(&pts).expect("a hull")
}

/// The four body shapes and the distance from each one's center to its lowest point.
pub(crate) fn shapes() -> [(SharedShape, &'static str); 4] {
    [
        (SharedShape::ball(0.5), "ball r 0.5"),
        (SharedShape::cuboid(0.5, 1.0, 0.5), "box 1x2x1"),
        (SharedShape::capsule_y(0.5, 0.4), "capsule"),
        (SharedShape::new(rock()), "32-point rock"),
    ]
}

#[derive(Clone)]
pub(crate) struct Body {
    pub(crate) shape: usize,
    pub(crate) pose: Pose,
    pub(crate) chunks: Vec<usize>,
}

pub(crate) fn overlapping(chunks: &[Chunk], b: &Aabb) -> Vec<usize> {
    let g = b.loosened(PREDICTION);
    (0..chunks.len()).filter(|&i| chunks[i].bounds.intersects(&g)).collect()
}

/// Bodies resting on the terrain at random places: each dropped along a ray to the surface, then
/// sunk 1 cm.
pub(crate) fn bodies(chunks: &[Chunk], area: &Region, n: usize, rng: &mut Rng) -> Vec<Body> {
    let all = shapes();
    let mut out = Vec::new();
    let [sx, _, sz] = area.size();
    let mut tries = 0;
    while out.len() < n && tries < n * 20 {
        tries += 1;
        let x = area.min().x as f32 + 2.0 + rng.coord(sx - 4) as f32 + 0.37;
        let z = area.min().z as f32 + 2.0 + rng.coord(sz - 4) as f32 + 0.61;
        let ray = Ray::new(Point3::new(x, area.max().y as f32, z), -Vector3::y());
        let mut best = f32::INFINITY;
        for c in chunks {
            if c.bounds.mins.x <= x
                && x <= c.bounds.maxs.x
                && c.bounds.mins.z <= z
                && z <= c.bounds.maxs.z
                && let Some(h) = c.tree.with(&c.mesh).cast_ray(&ray, 500.0, Culling::None)
            {
                best = best.min(h.t);
            }
        }
        if !best.is_finite() {
            continue;
        }
        let shape = out.len() % all.len();
        let yaw = (rng.coord(628) as f32) / 100.0;
        let rot = UnitQuaternion::from_euler_angles(0.0, yaw, 0.0).to_parry();
        let local = all[shape].0.compute_local_aabb();
        let ground = ray.origin.y - best;
        // From 3 voxels above the ground under its center, cast the body down onto the terrain
        // and sink it 1 cm: resting, whatever the slope under its footprint.
        let above = Pose::from_parts(Vector::new(x, ground - local.mins.y + 3.0, z), rot);
        let bb = Aabb::from_parry(&all[shape].0.compute_aabb(&above));
        let swept = Aabb::new(bb.mins - Vector3::new(0.0, 8.0, 0.0), bb.maxs);
        let mut toi = f32::INFINITY;
        for c in overlapping(chunks, &swept) {
            let ch = &chunks[c];
            let index = ch.tree.with(&ch.mesh);
            let set = TriangleSet::new(&ch.mesh, &index);
            if let Ok(Some(h)) =
                cast_shape(&*all[shape].0.0, &above, -Vector::Y, 8.0, set, CastOptions::default())
            {
                toi = toi.min(h.toi);
            }
        }
        if !toi.is_finite() || toi < 1e-3 {
            continue; // no ground below, or started inside an overhang
        }
        let mut pose = above;
        pose.translation.y -= toi + 0.01;
        let chunks = overlapping(chunks, &Aabb::from_parry(&all[shape].0.compute_aabb(&pose)));
        out.push(Body { shape, pose, chunks });
    }
    out
}

/// The quick suite's area and its chunks: what the profiling targets run on.
pub(crate) fn profile_area() -> (Region, Vec<Chunk>) {
    let world = bench_world(true);
    let wr = world.params.region().expect("valid world");
    let area =
        Region::from_min_size(wr.min() + Vector3::new(64, 0, 64), [48, wr.size()[1], 48]).expect("inside");
    let chunks = chunks_of(&world.store, &area, TriMeshFlags::FIX_INTERNAL_EDGES);
    (area, chunks)
}

/// Resting bodies raised 2.5 voxels, each with the chunks its cast down may reach.
pub(crate) fn lifted_bodies(chunks: &[Chunk], area: &Region, n: usize) -> Vec<Body> {
    let mut lifted = bodies(chunks, area, n, &mut Rng::new(13));
    for b in &mut lifted {
        b.pose.translation.y += 2.5;
        let bb = Aabb::from_parry(&shapes()[b.shape].0.compute_aabb(&b.pose));
        let down = Aabb::new(bb.mins - Vector3::new(0.0, 4.0, 0.0), bb.maxs);
        b.chunks = overlapping(chunks, &down);
    }
    lifted
}
