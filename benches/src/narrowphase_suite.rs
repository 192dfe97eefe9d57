//! The `narrowphase` suite: voxterra's contacts, shape casts and mesh–mesh tests against what a
//! rapier or parry user has today — one parry `TriMesh` per physics chunk, built with
//! `FIX_INTERNAL_EDGES`, and parry's `contact_manifolds` through its `DefaultQueryDispatcher`.
//!
//! - Contacts: balls, character boxes, capsules and 32-point rocks resting on the default world's
//!   terrain, new manifolds (cold) and updated ones as they slide (warm, parry keeping its
//!   manifolds and workspace). Checked first: the same bodies touch, with the same deepest depth.
//! - Ghost bumps and lost contacts: a box and a ball sliding at 5 voxels/s, 60 Hz, across 24
//!   chunk columns of flat, sloped and curved voxel ground: the worst angle between a contact
//!   normal and its triangle's face normal, contacts opposing the motion more than the surface
//!   does, frames with no contact. Parry's figures beside ours, for per-chunk TriMeshes with and
//!   without `FIX_INTERNAL_EDGES` and for one merged TriMesh.
//! - Shape casts: the bodies cast down onto the terrain, times of impact checked within 1e-3.
//! - Mesh–mesh: two 5 000-triangle meshes in contact and in a near miss, the multi-pass test
//!   against Möller on every pair; parry's TriMesh–TriMesh intersection test beside it; 2 threads
//!   against 1 on the triangle pairs.

use crate::harness::{Budget, CaseResult, Metric, Report, compare_prechecked};
use crate::world::{Rng, bench_world};
use parry3d::math::{Pose, Vector};
use parry3d::query::{
    ContactManifold, ContactManifoldsWorkspace, DefaultQueryDispatcher, PersistentQueryDispatcher,
};
use parry3d::shape::{ConvexPolyhedron, SharedShape, TriMesh, TriMeshFlags};
use std::collections::HashMap;
use voxterra_core::nalgebra::{Isometry3, Point3, UnitQuaternion, Vector3};
use voxterra_core::{
    Aabb, Culling, DenseVoxels, MaterialTable, PhysicsChunkKey, Ray, Region, TriangleIndex, TriangleMesh,
    TriangleSource, Voxel, VoxelPos, VoxelRead, VoxelWrite, materials,
};
use voxterra_kdtree::KdTree;
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh};
use voxterra_narrowphase::convert::{FromParry, ToParry};
use voxterra_narrowphase::mesh_mesh::{intersecting_pairs, intersecting_pairs_brute_force};
use voxterra_narrowphase::{
    CastOptions, ContactCache, ContactWorkspace, Manifold, MeshCollider, MeshMeshOptions, TriangleSet,
    cast_shape, contacts,
};

pub(crate) const PREDICTION: f32 = 0.02;
type ParryManifold = ContactManifold<(), ()>;
/// Contact normals found at a pose, each with its triangle's face normal.
type Normals = Vec<(Vector3<f32>, Vector3<f32>)>;
/// A surface `y = height(x)`.
type Height = Box<dyn Fn(f32) -> f32>;
/// parry's persistent state per (body, chunk): manifolds and workspace.
type ParryState = HashMap<(usize, usize), (Vec<ParryManifold>, Option<ContactManifoldsWorkspace>)>;

/// One physics chunk, both sides: our mesh (with edge flags) and kD tree, parry's TriMesh.
pub struct Chunk {
    mesh: PhysicsMesh,
    tree: KdTree,
    bounds: Aabb,
    peer: TriMesh,
}

fn trimesh(mesh: &PhysicsMesh, flags: TriMeshFlags) -> TriMesh {
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

fn rock() -> ConvexPolyhedron {
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
struct Body {
    shape: usize,
    pose: Pose,
    chunks: Vec<usize>,
}

fn overlapping(chunks: &[Chunk], b: &Aabb) -> Vec<usize> {
    let g = b.loosened(PREDICTION);
    (0..chunks.len()).filter(|&i| chunks[i].bounds.intersects(&g)).collect()
}

/// Bodies resting on the terrain at random places: each dropped along a ray to the surface, then
/// sunk 1 cm.
fn bodies(chunks: &[Chunk], area: &Region, n: usize, rng: &mut Rng) -> Vec<Body> {
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

fn ours_frame(
    chunks: &[Chunk],
    bodies: &[Body],
    ws: &mut ContactWorkspace,
    out: &mut Vec<Manifold>,
) -> (usize, Vec<f32>) {
    let all = shapes();
    let mut points = 0;
    let mut deepest = Vec::with_capacity(bodies.len());
    for b in bodies {
        let mut d = f32::INFINITY;
        for &c in &b.chunks {
            let ch = &chunks[c];
            let index = ch.tree.with(&ch.mesh);
            let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
            out.clear();
            contacts(&*all[b.shape].0.0, &b.pose, set, PREDICTION, ws, out).expect("valid query");
            for m in out.iter() {
                points += m.points().len();
                d = d.min(m.min_dist());
            }
        }
        deepest.push(d);
    }
    (points, deepest)
}

/// [`ours_frame`] keeping each body–chunk pair's contact candidates between frames (as parry keeps
/// its pairs' workspaces): replayed while the body moves less than the cache's slack.
fn ours_frame_kept(
    chunks: &[Chunk],
    bodies: &[Body],
    ws: &mut ContactWorkspace,
    caches: &mut HashMap<(usize, usize), ContactCache>,
    out: &mut Vec<Manifold>,
) -> (usize, Vec<f32>) {
    let all = shapes();
    let mut points = 0;
    let mut deepest = Vec::with_capacity(bodies.len());
    for (i, b) in bodies.iter().enumerate() {
        let shape = &*all[b.shape].0.0;
        let mut d = f32::INFINITY;
        for &c in &b.chunks {
            let cache = caches.entry((i, c)).or_insert_with(|| ContactCache::for_shape(shape));
            out.clear();
            ws.begin();
            let kept = ws.collect_kept(shape, &b.pose, PREDICTION, cache).expect("valid query");
            if !kept {
                let ch = &chunks[c];
                let index = ch.tree.with(&ch.mesh);
                let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
                cache.start(shape, &b.pose, PREDICTION).expect("valid query");
                ws.collect_keeping(shape, set, 0, cache).expect("valid query");
            }
            ws.finish(|_, m| out.push(*m));
            for m in out.iter() {
                points += m.points().len();
                d = d.min(m.min_dist());
            }
        }
        deepest.push(d);
    }
    (points, deepest)
}

fn parry_frame(chunks: &[Chunk], bodies: &[Body], state: &mut ParryState, warm: bool) -> (usize, Vec<f32>) {
    let all = shapes();
    let mut points = 0;
    let mut deepest = Vec::with_capacity(bodies.len());
    for (i, b) in bodies.iter().enumerate() {
        let mut d = f32::INFINITY;
        for &c in &b.chunks {
            let entry = state.entry((i, c)).or_default();
            if !warm {
                *entry = (Vec::new(), None);
            }
            let pos12 = b.pose.inverse();
            DefaultQueryDispatcher
                .contact_manifolds(
                    &pos12,
                    &*all[b.shape].0.0,
                    &chunks[c].peer,
                    PREDICTION,
                    &mut entry.0,
                    &mut entry.1,
                )
                .expect("supported pair");
            for m in &entry.0 {
                points += m.points.len();
                for p in &m.points {
                    d = d.min(p.dist);
                }
            }
        }
        deepest.push(d);
    }
    (points, deepest)
}

/// The same bodies touch on both sides, at the same deepest depth (within 5 mm: parry's EPA and
/// its internal-edge fix move depths a little); returns how many bodies touch.
pub(crate) fn check_contacts(ours: &[f32], theirs: &[f32], what: &str) -> usize {
    let mut touching = 0;
    let mut off = 0;
    for (o, t) in ours.iter().zip(theirs) {
        match (o.is_finite(), t.is_finite()) {
            (true, true) => {
                touching += 1;
                if (o - t).abs() > 5e-3 {
                    off += 1;
                    if std::env::var_os("NP_DEBUG").is_some() {
                        eprintln!("{what}: ours {o}, parry {t}");
                    }
                }
            }
            (false, false) => {}
            _ => {
                off += 1;
                if std::env::var_os("NP_DEBUG").is_some() {
                    eprintln!("{what}: ours {o}, parry {t}");
                }
            }
        }
    }
    assert!(off * 100 <= ours.len(), "{what}: {off} of {} bodies disagree with parry", ours.len());
    touching
}

fn debug_disagreements(chunks: &[Chunk], bodies: &[Body], od: &[f32], pd: &[f32]) {
    let mut ws = ContactWorkspace::new();
    if std::env::var_os("NP_DEBUG").is_some() {
        for (i, b) in bodies.iter().enumerate() {
            if (od[i] - pd[i]).abs() > 5e-3 {
                eprintln!("body {i} shape {} pose {:?}", b.shape, b.pose.translation);
                for &c in &b.chunks {
                    let ch = &chunks[c];
                    let index = ch.tree.with(&ch.mesh);
                    let mut pts = Vec::new();
                    let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
                    voxterra_narrowphase::contact_points(
                        &*shapes()[b.shape].0.0,
                        &b.pose,
                        set,
                        PREDICTION,
                        &mut ws,
                        &mut pts,
                    )
                    .expect("valid query");
                    let mut raw = Vec::new();
                    voxterra_narrowphase::contact_points(
                        &*shapes()[b.shape].0.0,
                        &b.pose,
                        TriangleSet::new(&ch.mesh, &index),
                        PREDICTION,
                        &mut ws,
                        &mut raw,
                    )
                    .expect("valid query");
                    for p in pts.iter().filter(|p| p.dist < -0.02) {
                        let t = ch.mesh.triangle(p.id.triangle as usize);
                        let n = (t[1] - t[0]).cross(&(t[2] - t[0])).normalize();
                        eprintln!(
                            "  flagged {:?} dist {} normal {:?} face {:?} flags {:03b}",
                            p.id,
                            p.dist,
                            p.normal.into_inner(),
                            n,
                            ch.mesh.edge_flags().get(p.id.triangle as usize).unwrap_or(0)
                        );
                    }
                    let rmin = raw.iter().map(|p| p.dist).fold(f32::INFINITY, f32::min);
                    eprintln!("  chunk {c}: unflagged min {rmin}");
                }
            }
        }
    }
}

fn contact_cases(report: &mut Report, budget: Budget, chunks: &[Chunk], area: &Region, n: usize) {
    let mut rng = Rng::new(7);
    let mut resting = bodies(chunks, area, n, &mut rng);
    let mut ws = ContactWorkspace::new();
    let mut out = Vec::new();
    let mut state = HashMap::new();
    let (_, od) = ours_frame(chunks, &resting, &mut ws, &mut out);
    let (_, pd) = parry_frame(chunks, &resting, &mut state, false);
    debug_disagreements(chunks, &resting, &od, &pd);
    let touching = check_contacts(&od, &pd, "resting");
    let goal = "≥ 2× parry";
    report.cases.push(compare_prechecked(
        budget,
        "contacts, resting, cold",
        "body",
        resting.len() as u64,
        "parry TriMesh/chunk",
        goal,
        || ours_frame(chunks, &resting, &mut ws, &mut out).0,
        || parry_frame(chunks, &resting, &mut state, false).0,
    ));
    // Warm: the same bodies sliding 5 voxels/s at 60 Hz, every frame a step on from the last
    // (back and forth between two poses a step apart); parry keeps its manifolds and workspaces
    // from frame to frame, ours each pair's contact candidates.
    let slide = |bodies: &mut [Body], chunks: &[Chunk], dt: f32| {
        for b in bodies.iter_mut() {
            b.pose.translation.x += 5.0 * dt;
            b.chunks = overlapping(chunks, &Aabb::from_parry(&shapes()[b.shape].0.compute_aabb(&b.pose)));
        }
    };
    let mut state = HashMap::new();
    let mut caches = HashMap::new();
    parry_frame(chunks, &resting, &mut state, true);
    ours_frame_kept(chunks, &resting, &mut ws, &mut caches, &mut out);
    slide(&mut resting, chunks, 1.0 / 60.0);
    let (_, od) = ours_frame_kept(chunks, &resting, &mut ws, &mut caches, &mut out);
    // Kept candidates answer as a fresh query does, bit for bit.
    assert_eq!(od, ours_frame(chunks, &resting, &mut ws, &mut out).1, "kept contacts differ from fresh ones");
    let (_, pd) = parry_frame(chunks, &resting, &mut state, true);
    debug_disagreements(chunks, &resting, &od, &pd);
    check_contacts(&od, &pd, "sliding");
    let mut stepped = resting.clone();
    slide(&mut stepped, chunks, 1.0 / 60.0);
    let poses = [&resting, &stepped];
    let (ours_frames, peer_frames) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
    report.cases.push(compare_prechecked(
        budget,
        "contacts, sliding, warm",
        "body",
        resting.len() as u64,
        "parry TriMesh/chunk",
        goal,
        || {
            ours_frames.set(ours_frames.get() + 1);
            ours_frame_kept(chunks, poses[ours_frames.get() % 2], &mut ws, &mut caches, &mut out).0
        },
        || {
            peer_frames.set(peer_frames.get() + 1);
            parry_frame(chunks, poses[peer_frames.get() % 2], &mut state, true).0
        },
    ));
    // Per shape, cold.
    for (s, (_, name)) in shapes().iter().enumerate() {
        let these: Vec<Body> =
            bodies(chunks, area, n, &mut Rng::new(11)).into_iter().filter(|b| b.shape == s).collect();
        let mut st = HashMap::new();
        report.cases.push(compare_prechecked(
            budget,
            &format!("contacts cold, {name}"),
            "body",
            these.len() as u64,
            "parry TriMesh/chunk",
            goal,
            || ours_frame(chunks, &these, &mut ws, &mut out).0,
            || parry_frame(chunks, &these, &mut st, false).0,
        ));
    }
    report.metrics.push(Metric {
        name: "bodies touching (resting set)".into(),
        voxterra: touching as f64,
        peer: touching as f64,
        peer_name: "parry (checked)".into(),
        goal: format!("{} bodies, deepest depths equal within 5 mm", n),
    });
}

fn cast_case(report: &mut Report, budget: Budget, chunks: &[Chunk], area: &Region, n: usize) {
    let lifted = lifted_bodies(chunks, area, n);
    let all = shapes();
    let vel = Vector::new(0.3, -1.0, 0.2);
    let ours = |bodies: &[Body]| ours_casts(chunks, &all, bodies, vel);
    let theirs = |bodies: &[Body]| -> Vec<f32> {
        bodies
            .iter()
            .map(|b| {
                let mut best = f32::INFINITY;
                for &c in &b.chunks {
                    let opts =
                        parry3d::query::ShapeCastOptions { max_time_of_impact: 4.0, ..Default::default() };
                    if let Some(h) = parry3d::query::cast_shapes(
                        &b.pose,
                        vel,
                        &*all[b.shape].0.0,
                        &Pose::IDENTITY,
                        Vector::ZERO,
                        &chunks[c].peer,
                        opts,
                    )
                    .expect("supported cast")
                    {
                        best = best.min(h.time_of_impact);
                    }
                }
                best
            })
            .collect()
    };
    let (o, t) = (ours(&lifted), theirs(&lifted));
    let off = o
        .iter()
        .zip(&t)
        .filter(|(a, b)| !((a.is_infinite() && b.is_infinite()) || (*a - *b).abs() < 1e-3))
        .count();
    assert!(off * 100 <= o.len(), "shape casts: {off} of {} disagree with parry beyond 1e-3", o.len());
    report.metrics.push(Metric {
        name: "shape casts whose time of impact differs from parry's by 1e-3 or more".into(),
        voxterra: off as f64,
        peer: o.len() as f64,
        peer_name: "casts".into(),
        goal: "≤ 1%".into(),
    });
    report.cases.push(compare_prechecked(
        budget,
        "shape casts down onto terrain",
        "cast",
        lifted.len() as u64,
        "parry TriMesh/chunk",
        "≥ 1.5× parry; TOI within 1e-3",
        || ours(&lifted),
        || theirs(&lifted),
    ));
}

/// Voxel ground whose surface is `y = height(x)` over 24 chunk columns (see the seams test).
fn ground(height: &dyn Fn(f32) -> f32) -> (DenseVoxels, Region) {
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
struct Ghosts {
    worst: f32,
    blocking: usize,
    lost: usize,
}

/// Slides a shape over the chunks, 60 Hz, 5 voxels/s, resting 5 mm in; measures ghost normals.
fn slide(
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

fn ghost_metrics(report: &mut Report) {
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

/// A closed UV sphere of about `2 · n²` triangles.
fn sphere(radius: f32, n: u32) -> TriangleMesh {
    let mut m = TriangleMesh::default();
    for j in 0..=n {
        let theta = std::f32::consts::PI * j as f32 / n as f32;
        for i in 0..n {
            let phi = std::f32::consts::TAU * i as f32 / n as f32;
            m.positions
                .push(Point3::new(theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()) * radius);
        }
    }
    for j in 0..n {
        for i in 0..n {
            let (a, b) = (j * n + i, j * n + (i + 1) % n);
            let (c, d) = (a + n, b + n);
            m.triangles.extend([[a, b, d], [a, d, c]]);
        }
    }
    m
}

fn mesh_mesh_cases(report: &mut Report, quick: bool) {
    let n = if quick { 30 } else { 50 };
    let mesh_a = sphere(1.0, n);
    let mesh_b = sphere(0.8, n);
    let (a, b) = (MeshCollider::new(&mesh_a).expect("finite"), MeshCollider::new(&mesh_b).expect("finite"));
    let pa = Isometry3::identity();
    let budget = Budget { reps: 3 };
    let opts = MeshMeshOptions::default();
    for (what, pb) in [
        ("in contact", Isometry3::new(Vector3::new(1.7, 0.1, 0.05), Vector3::new(0.3, 0.2, 0.1))),
        ("near miss", Isometry3::new(Vector3::new(1.81, 0.0, 0.0), Vector3::new(0.3, 0.2, 0.1))),
    ] {
        let fast = intersecting_pairs(&a, &pa, &b, &pb, &opts).0;
        let brute = intersecting_pairs_brute_force(&a, &pa, &b, &pb);
        assert_eq!(fast, brute, "mesh-mesh {what}: multi-pass and brute force disagree");
        report.cases.push(compare_prechecked(
            budget,
            &format!("mesh-mesh {}k tris, {what}", (a.triangle_count() + 500) / 1000),
            "test",
            1,
            "Möller, all pairs",
            "≥ 500× the brute force",
            || intersecting_pairs(&a, &pa, &b, &pb, &opts).0.len(),
            || intersecting_pairs_brute_force(&a, &pa, &b, &pb).len(),
        ));
        // parry's TriMesh–TriMesh intersection test, where it supports the pair.
        let parry_mesh = |m: &TriangleMesh| {
            TriMesh::new(m.positions.iter().map(|p| p.to_parry()).collect(), m.triangles.clone())
                .expect("a mesh")
        };
        let (ta, tb) = (parry_mesh(&mesh_a), parry_mesh(&mesh_b));
        let (ppa, ppb) = (pa.to_parry(), pb.to_parry());
        match parry3d::query::intersection_test(&ppa, &ta, &ppb, &tb) {
            Ok(hit) => {
                assert_eq!(hit.intersecting, !brute.is_empty(), "parry's TriMesh test disagrees ({what})");
                report.cases.push(compare_prechecked(
                    Budget { reps: 7 },
                    &format!("mesh-mesh {what}, boolean"),
                    "test",
                    1,
                    "parry TriMesh-TriMesh",
                    "(beside)",
                    || voxterra_narrowphase::meshes_intersect(&a, &pa, &b, &pb),
                    || {
                        parry3d::query::intersection_test(&ppa, &ta, &ppb, &tb)
                            .expect("supported")
                            .intersecting
                    },
                ));
            }
            Err(_) => report.metrics.push(Metric {
                name: format!("parry TriMesh-TriMesh intersection test ({what})"),
                voxterra: 1.0,
                peer: 0.0,
                peer_name: "parry".into(),
                goal: "unsupported by parry 0.31's DefaultQueryDispatcher".into(),
            }),
        }
        // 2 threads against 1 on the triangle pairs (every candidate pair on the pool).
        let all_parallel = MeshMeshOptions { parallel_threshold: 0 };
        let pool = |k| rayon::ThreadPoolBuilder::new().num_threads(k).build().expect("a pool");
        let (one, two) = (pool(1), pool(2));
        let r: CaseResult = compare_prechecked(
            Budget { reps: 7 },
            &format!("mesh-mesh {what}, 2 threads"),
            "test",
            1,
            "1 thread",
            "(speed-up)",
            || two.install(|| intersecting_pairs(&a, &pa, &b, &pb, &all_parallel).0.len()),
            || one.install(|| intersecting_pairs(&a, &pa, &b, &pb, &all_parallel).0.len()),
        );
        report.cases.push(r);
        let (_, stats) = intersecting_pairs(&a, &pa, &b, &pb, &opts);
        report.metrics.push(Metric {
            name: format!("mesh-mesh {what}: triangle pairs tested"),
            voxterra: stats.triangle_pairs as f64,
            peer: (a.triangle_count() * b.triangle_count()) as f64,
            peer_name: "all pairs".into(),
            goal: format!("{} node pairs; {} intersecting", stats.node_pairs, fast.len()),
        });
    }
}

/// The quick suite's area and its chunks: what the profiling targets run on.
fn profile_area() -> (Region, Vec<Chunk>) {
    let world = bench_world(true);
    let wr = world.params.region().expect("valid world");
    let area =
        Region::from_min_size(wr.min() + Vector3::new(64, 0, 64), [48, wr.size()[1], 48]).expect("inside");
    let chunks = chunks_of(&world.store, &area, TriMeshFlags::FIX_INTERNAL_EDGES);
    (area, chunks)
}

/// The resting-contact case, ours only, `rounds` times over (for profilers); returns the points.
pub fn profile_contacts(rounds: usize) -> usize {
    let (area, chunks) = profile_area();
    let resting = bodies(&chunks, &area, 200, &mut Rng::new(7));
    let (mut ws, mut out) = (ContactWorkspace::new(), Vec::new());
    (0..rounds).map(|_| ours_frame(&chunks, &resting, &mut ws, &mut out).0).sum()
}

/// The suite's warm case for voxterra alone: 200 bodies keeping their contact candidates, back and
/// forth a step, `rounds` frames; returns the contact points.
pub fn profile_warm(rounds: usize) -> usize {
    let (area, chunks) = profile_area();
    let resting = bodies(&chunks, &area, 200, &mut Rng::new(7));
    let mut stepped = resting.clone();
    for b in &mut stepped {
        b.pose.translation.x += 5.0 / 60.0;
        b.chunks = overlapping(&chunks, &Aabb::from_parry(&shapes()[b.shape].0.compute_aabb(&b.pose)));
    }
    let (mut ws, mut out, mut caches) = (ContactWorkspace::new(), Vec::new(), HashMap::new());
    let poses = [&resting, &stepped];
    (0..rounds).map(|r| ours_frame_kept(&chunks, poses[r % 2], &mut ws, &mut caches, &mut out).0).sum()
}

/// The suite's shape-cast case for voxterra alone, `rounds` times over 200 bodies; returns the
/// hits. The other profiling target.
pub fn profile_casts(rounds: usize) -> usize {
    let (area, chunks) = profile_area();
    let lifted = lifted_bodies(&chunks, &area, 200);
    let all = shapes();
    let vel = Vector::new(0.3, -1.0, 0.2);
    (0..rounds)
        .map(|_| ours_casts(&chunks, &all, &lifted, vel).iter().filter(|t| t.is_finite()).count())
        .sum()
}

/// Resting bodies raised 2.5 voxels, each with the chunks its cast down may reach.
fn lifted_bodies(chunks: &[Chunk], area: &Region, n: usize) -> Vec<Body> {
    let mut lifted = bodies(chunks, area, n, &mut Rng::new(13));
    for b in &mut lifted {
        b.pose.translation.y += 2.5;
        let bb = Aabb::from_parry(&shapes()[b.shape].0.compute_aabb(&b.pose));
        let down = Aabb::new(bb.mins - Vector3::new(0.0, 4.0, 0.0), bb.maxs);
        b.chunks = overlapping(chunks, &down);
    }
    lifted
}

/// Each body's earliest time of impact over its chunks (infinity for none), casting by `vel`.
fn ours_casts(chunks: &[Chunk], all: &[(SharedShape, &str)], bodies: &[Body], vel: Vector) -> Vec<f32> {
    bodies
        .iter()
        .map(|b| {
            let mut best = f32::INFINITY;
            for &c in &b.chunks {
                let ch = &chunks[c];
                let index = ch.tree.with(&ch.mesh);
                let set = TriangleSet::new(&ch.mesh, &index).with_edge_flags(ch.mesh.edge_flags());
                if let Some(h) =
                    cast_shape(&*all[b.shape].0.0, &b.pose, vel, 4.0, set, CastOptions::default())
                        .expect("valid cast")
                {
                    best = best.min(h.toi);
                }
            }
            best
        })
        .collect()
}

/// Runs the suite.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let world = bench_world(quick);
    let side = if quick { 48 } else { 96 };
    let wr = world.params.region().expect("valid world");
    let area = Region::from_min_size(wr.min() + Vector3::new(64, 0, 64), [side, wr.size()[1], side])
        .expect("inside");
    let chunks = chunks_of(&world.store, &area, TriMeshFlags::FIX_INTERNAL_EDGES);
    let n = if quick { 200 } else { 1000 };
    let mut report = Report {
        suite: "narrowphase".into(),
        setup: format!(
            "default world, a {side}x{}x{side} area: {} physics chunks with surface; peer: parry3d 0.31 contact_manifolds (DefaultQueryDispatcher) against one TriMesh per chunk with FIX_INTERNAL_EDGES; prediction {PREDICTION}",
            wr.size()[1],
            chunks.len()
        ),
        ..Default::default()
    };
    contact_cases(&mut report, budget, &chunks, &area, n);
    cast_case(&mut report, budget, &chunks, &area, n);
    ghost_metrics(&mut report);
    mesh_mesh_cases(&mut report, quick);
    report
}
