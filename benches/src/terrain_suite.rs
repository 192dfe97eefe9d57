//! The `terrain` suite: `voxterra::Terrain` against what a rapier or parry user does today —
//! re-mesh the chunks an edit touched and rebuild a parry `TriMesh` with `FIX_INTERNAL_EDGES`
//! for each.
//!
//! - Edit → collision-ready: a sphere brush of radius 4 voxels on the default world's surface
//!   (alternately carving and refilling), then the touched chunks' collision data rebuilt (ours:
//!   the edit, its masks, and `prepare` over the brush; the peer: the voxel write, then a
//!   physics mesh and a `TriMesh` per touched chunk). Checked first: both sides end with the same
//!   triangles in the touched chunks.
//! - Rays: down, oblique and from inside caves across the whole world, prepared (ours:
//!   `cast_rays`; the peer: a parry `Bvh` over the chunk TriMeshes, each leaf's TriMesh cast
//!   through its own BVH, in parallel with rayon). Checked first: the same hits at the same distances.
//! - Contacts: 1,000 bodies (ball, box, capsule, rock) resting on the world, every contact of
//!   one frame (ours: `contacts` per body; the peer: the `Bvh` picks the chunk TriMeshes under
//!   each body's box, then parry's `contact_manifolds` against each, fresh every frame as ours
//!   is). Checked first: the same bodies touch, at the same depth.
//! - First frame: 1,000 bodies on a fresh world (ours: a `Terrain` over the store, then
//!   `prepare` the bodies within a budget and one contacts pass; the peer: every chunk's TriMesh built up
//!   front, in parallel, then its `Bvh` and one contacts pass).
//! - Memory: the whole world prepared (masks + every chunk's physics mesh, edge flags and kD
//!   tree), bytes per triangle, against the peer's TriMeshes.

use crate::harness::{Budget, Metric, Report, compare_prechecked};
use crate::narrowphase_suite::{PREDICTION, check_contacts, shapes};
use crate::world::{Rng, bench_world};
use crate::{picture_rays, voxels_peer};
use parry3d::bounding_volume::BoundingVolume;
use parry3d::math::{Pose, Vector};
use parry3d::partitioning::{Bvh, BvhBuildStrategy};
use parry3d::query::RayCast;
use parry3d::query::{ContactManifold, DefaultQueryDispatcher, PersistentQueryDispatcher};
use parry3d::shape::SharedShape;
use parry3d::shape::{TriMesh, TriMeshFlags};
use rayon::prelude::*;
use std::cell::Cell;
use voxterra::TerrainConfig;
use voxterra::TerrainManifold;
use voxterra::TerrainRayHit;
use voxterra::convert::{FromParry, ToParry};
use voxterra::core::DenseVoxels;
use voxterra::core::VoxelRead;
use voxterra::core::nalgebra::UnitQuaternion;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{Aabb, MaterialTable, PhysicsChunkKey, Ray, Region, Voxel, VoxelPos, materials};
use voxterra::mesher::{MeshWorkspace, Mesher, PhysicsMesh};
use voxterra::store::VoxelStore;
use voxterra::{Brush, BrushOp, BrushShape, PrepareBudget, Terrain};

const RADIUS: f32 = 4.0;

/// Surface points to edit at: where downward rays first meet the terrain.
pub(crate) fn surface_points(t: &mut Terrain, area: &Region, n: usize) -> Vec<Point3<f32>> {
    let mut rng = Rng::new(21);
    let [sx, sy, sz] = area.size();
    let mut out = Vec::new();
    while out.len() < n {
        let x = area.min().x as f32 + 8.0 + rng.coord(sx - 16) as f32 + 0.5;
        let z = area.min().z as f32 + 8.0 + rng.coord(sz - 16) as f32 + 0.5;
        let ray = Ray::new(Point3::new(x, (area.min().y + sy as i32) as f32 + 1.0, z), -Vector3::y());
        if let Some(h) = t.cast_ray(&ray, 1000.0).expect("a valid ray") {
            out.push(h.point);
        }
    }
    out
}

/// The peer's voxel write: the same sphere coverage rule as the brush.
fn peer_brush(store: &mut VoxelStore, center: Point3<f32>, carve: bool) -> Option<Region> {
    let r = RADIUS;
    let lo = VoxelPos::new(
        (center.x - r - 1.0).floor() as i32,
        (center.y - r - 1.0).floor() as i32,
        (center.z - r - 1.0).floor() as i32,
    );
    let region = Region::new(lo, lo + Vector3::repeat((2.0 * r + 3.0).ceil() as i32 + 1)).expect("small");
    store
        .brush(&region, |p, v| {
            let c = Point3::new(p.x as f32 + 0.5, p.y as f32 + 0.5, p.z as f32 + 0.5);
            let cover = (0.5 - ((c - center).norm() - r)).clamp(0.0, 1.0);
            if cover <= 0.0 {
                v
            } else if carve {
                let keep = 1.0 - cover;
                if keep < v.occupancy() { Voxel::with_occupancy(v.material(), keep) } else { v }
            } else if cover > v.occupancy() {
                Voxel::with_occupancy(materials::ROCK, cover)
            } else {
                v
            }
        })
        .expect("an edit within limits")
}

pub(crate) fn sphere(center: Point3<f32>, carve: bool) -> Brush {
    let op = if carve { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
    Brush { shape: BrushShape::Sphere { center, radius: RADIUS }, op }
}

pub(crate) fn brush_box(center: Point3<f32>) -> Aabb {
    let e = Vector3::repeat(RADIUS + 2.0);
    Aabb::new(center - e, center + e)
}

/// The edit case's next edit on our side (each point carved, then refilled; `count` edits so far)
/// and the rebuild of its chunks; returns what was built.
fn our_edit(terrain: &mut Terrain, points: &[Point3<f32>], count: &Cell<usize>) -> usize {
    let i = count.get();
    count.set(i + 1);
    let p = points[(i / 2) % points.len()];
    let r = terrain.apply_brush(&sphere(p, i.is_multiple_of(2))).expect("an edit");
    terrain.prepare(&[brush_box(p)], PrepareBudget::UNLIMITED).built + r.masks_rebuilt
}

/// The peer's rebuild of the chunks touched by `dirty`: a physics mesh and a `TriMesh` with
/// `FIX_INTERNAL_EDGES` each; returns the triangles built.
fn peer_rebuild(store: &VoxelStore, mesher: &Mesher, ws: &mut MeshWorkspace, dirty: &Region) -> usize {
    let mut tris = 0;
    for key in PhysicsChunkKey::range(&dirty.expanded(1)).expect("non-empty").iter() {
        let mut mesh = PhysicsMesh::default();
        mesher.mesh(store, &key.region().expect("in range"), ws, &mut mesh).expect("meshable");
        if mesh.triangles().is_empty() {
            continue;
        }
        let positions: Vec<Vector> = (0..mesh.vertex_count()).map(|i| mesh.position(i).to_parry()).collect();
        let indices: Vec<[u32; 3]> = mesh.triangles().iter().map(|t| t.map(u32::from)).collect();
        tris += indices.len();
        std::hint::black_box(
            TriMesh::with_flags(positions, indices, TriMeshFlags::FIX_INTERNAL_EDGES).expect("a mesh"),
        );
    }
    tris
}

/// The ray mix: a third straight down from above the world, a third oblique from above, a third
/// in random directions from empty voxels with solid above them (caves).
pub(crate) fn ray_mix(dense: &DenseVoxels, n: usize) -> Vec<Ray> {
    let r = *dense.region();
    let [sx, sy, sz] = r.size();
    let mut rng = Rng::new(77);
    let unit = |rng: &mut Rng| (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
    let top = (r.min().y + sy as i32) as f32 + 1.0;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let x = r.min().x as f32 + unit(&mut rng) * sx as f32;
        let z = r.min().z as f32 + unit(&mut rng) * sz as f32;
        match out.len() % 3 {
            0 => out.push(Ray::new(Point3::new(x, top, z), -Vector3::y())),
            1 => {
                let d = Vector3::new(unit(&mut rng) * 2.0 - 1.0, -1.0, unit(&mut rng) * 2.0 - 1.0);
                out.push(Ray::new(Point3::new(x, top, z), d.normalize()));
            }
            _ => {
                let y = r.min().y as f32 + unit(&mut rng) * sy as f32;
                let p = VoxelPos::new(x.floor() as i32, y.floor() as i32, z.floor() as i32);
                let solid_above = (p.y + 1..r.min().y + sy as i32)
                    .any(|y| dense.voxel(VoxelPos::new(p.x, y, p.z)).occupancy() > 0.0);
                if dense.voxel(p).occupancy() > 0.0 || !solid_above {
                    continue;
                }
                let d = Vector3::new(unit(&mut rng) - 0.5, unit(&mut rng) - 0.5, unit(&mut rng) - 0.5);
                if d.norm() < 1e-3 {
                    continue;
                }
                out.push(Ray::new(Point3::new(x, y, z), d.normalize()));
            }
        }
    }
    out
}

/// Whether our hit and parry's agree: both miss, or both hit at the same distance.
fn same_hit(ours: &Option<TerrainRayHit>, peer: &Option<f32>) -> bool {
    match (ours, peer) {
        (None, None) => true,
        (Some(h), Some(t)) => (h.t - t).abs() <= 1e-3 * t.max(1.0),
        _ => false,
    }
}

type ParryManifold = ContactManifold<(), ()>;

/// A body: which of [`shapes`] and where.
pub(crate) struct Body {
    pub(crate) shape: usize,
    pub(crate) pose: Pose,
}

/// Bodies resting on the terrain: each dropped along a ray to the ground, cast down onto it from
/// 3 voxels above, and sunk 1 cm.
pub(crate) fn place_bodies(
    t: &mut Terrain,
    all: &[(SharedShape, &str)],
    area: &Region,
    n: usize,
) -> Vec<Body> {
    let mut rng = Rng::new(5);
    let [sx, sy, sz] = area.size();
    let mut out = Vec::new();
    while out.len() < n {
        let x = area.min().x as f32 + 4.0 + rng.coord(sx - 8) as f32 + 0.37;
        let z = area.min().z as f32 + 4.0 + rng.coord(sz - 8) as f32 + 0.61;
        let top = (area.min().y + sy as i32) as f32 + 1.0;
        let Some(g) = t.cast_ray(&Ray::new(Point3::new(x, top, z), -Vector3::y()), 1000.0).expect("a ray")
        else {
            continue;
        };
        let shape = out.len() % all.len();
        let rot = UnitQuaternion::from_euler_angles(0.0, rng.coord(628) as f32 / 100.0, 0.0).to_parry();
        let local = all[shape].0.compute_local_aabb();
        let above = Pose::from_parts(Vector::new(x, g.point.y - local.mins.y + 3.0, z), rot);
        let hit = t
            .cast_shape(&*all[shape].0.0, &above, -Vector::Y, 8.0, Default::default())
            .expect("a valid cast");
        let Some((_, h)) = hit.filter(|(_, h)| h.toi >= 1e-3) else { continue };
        let mut pose = above;
        pose.translation.y -= h.toi + 0.01;
        out.push(Body { shape, pose });
    }
    out
}

/// Our frame: every body's contacts; returns the points and each body's deepest distance.
pub(crate) fn ours_frame(
    t: &mut Terrain,
    all: &[(SharedShape, &str)],
    bodies: &[Body],
    out: &mut Vec<TerrainManifold>,
) -> (usize, Vec<f32>) {
    let mut points = 0;
    let mut deepest = Vec::with_capacity(bodies.len());
    for b in bodies {
        out.clear();
        t.contacts(&*all[b.shape].0.0, &b.pose, PREDICTION, out).expect("a valid query");
        points += out.iter().map(|m| m.manifold.points().len()).sum::<usize>();
        deepest.push(out.iter().map(|m| m.manifold.min_dist()).fold(f32::INFINITY, f32::min));
    }
    (points, deepest)
}

/// The peer's frame: the `Bvh` picks chunk TriMeshes under each body's box, parry's
/// `contact_manifolds` runs against each.
fn peer_frame(
    parts: &[TriMesh],
    bvh: &Bvh,
    all: &[(SharedShape, &str)],
    bodies: &[Body],
    manifolds: &mut Vec<ParryManifold>,
) -> (usize, Vec<f32>) {
    let mut points = 0;
    let mut deepest = Vec::with_capacity(bodies.len());
    for b in bodies {
        let shape = &*all[b.shape].0.0;
        let bb = shape.compute_aabb(&b.pose).loosened(PREDICTION);
        let mut d = f32::INFINITY;
        for i in bvh.intersect_aabb(&bb) {
            manifolds.clear();
            DefaultQueryDispatcher
                .contact_manifolds(
                    &b.pose.inverse(),
                    shape,
                    &parts[i as usize],
                    PREDICTION,
                    manifolds,
                    &mut None,
                )
                .expect("a supported pair");
            for m in manifolds.iter() {
                points += m.points.len();
                d = m.points.iter().fold(d, |d, p| d.min(p.dist));
            }
        }
        deepest.push(d);
    }
    (points, deepest)
}

/// The peer's whole world: every physics chunk meshed and made a TriMesh with
/// `FIX_INTERNAL_EDGES`, in parallel, then the `Bvh` over them.
fn peer_world(store: &VoxelStore, mesher: &Mesher, region: &Region) -> (Vec<TriMesh>, Bvh) {
    let keys: Vec<PhysicsChunkKey> =
        PhysicsChunkKey::range(&region.expanded(1)).expect("non-empty").iter().collect();
    let parts: Vec<TriMesh> = keys
        .par_iter()
        .map_init(MeshWorkspace::new, |ws, key| {
            let mut mesh = PhysicsMesh::default();
            mesher.mesh(store, &key.region().expect("in range"), ws, &mut mesh).expect("meshable");
            if mesh.triangles().is_empty() {
                return None;
            }
            let positions: Vec<Vector> =
                (0..mesh.vertex_count()).map(|i| mesh.position(i).to_parry()).collect();
            let indices: Vec<[u32; 3]> = mesh.triangles().iter().map(|t| t.map(u32::from)).collect();
            Some(TriMesh::with_flags(positions, indices, TriMeshFlags::FIX_INTERNAL_EDGES).expect("a mesh"))
        })
        .flatten()
        .collect();
    let aabbs: Vec<_> = parts.iter().map(|m| m.local_aabb()).collect();
    let bvh = Bvh::from_leaves(BvhBuildStrategy::default(), &aabbs);
    (parts, bvh)
}

/// Runs the suite.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let world = bench_world(quick);
    let wr = world.params.region().expect("valid world");
    let mut report = Report {
        suite: "terrain".into(),
        setup: format!(
            "default world {:?}, seed {}; peer: re-mesh the touched chunks and rebuild a parry 0.31 TriMesh with FIX_INTERNAL_EDGES for each",
            world.params.size, world.params.seed
        ),
        ..Default::default()
    };
    let mut terrain =
        Terrain::from_store(world.store.clone(), MaterialTable::default(), TerrainConfig::default())
            .expect("a valid terrain");
    let mut peer_store = world.store.clone();
    let mesher = Mesher::new(&MaterialTable::default());
    let points = surface_points(&mut terrain, &wr, 16);
    // Both sides start with everything around the edits built (a running game has it).
    for p in &points {
        terrain.prepare(&[brush_box(*p)], PrepareBudget::UNLIMITED);
    }
    // Check once: one carve on each side leaves the same triangles in the touched chunks.
    {
        let mut t =
            Terrain::from_store(world.store.clone(), MaterialTable::default(), TerrainConfig::default())
                .expect("valid");
        let mut s = world.store.clone();
        let r = t.apply_brush(&sphere(points[0], true)).expect("an edit");
        let d = peer_brush(&mut s, points[0], true).expect("the peer's edit changes voxels");
        assert_eq!(r.dirty, Some(d), "the two voxel writes differ");
        let peer_tris = peer_rebuild(&s, &mesher, &mut MeshWorkspace::new(), &d);
        t.prepare(&[brush_box(points[0])], PrepareBudget::UNLIMITED);
        let ours: usize = PhysicsChunkKey::range(&d.expanded(1))
            .expect("non-empty")
            .iter()
            .filter_map(|k| t.cached_chunk(k).flatten().map(|c| c.mesh.triangles().len()))
            .sum();
        assert_eq!(ours, peer_tris, "triangles in the touched chunks differ");
    }
    let (i_ours, i_peer) = (Cell::new(0usize), Cell::new(0usize));
    let mut ws = MeshWorkspace::new();
    report.cases.push(compare_prechecked(
        budget,
        "edit -> collision-ready, r 4",
        "edit",
        1,
        "re-mesh + TriMesh",
        "≤ 0.5 ms, ≥ 4× the peer",
        || our_edit(&mut terrain, &points, &i_ours),
        || {
            let i = i_peer.get();
            i_peer.set(i + 1);
            let p = points[(i / 2) % points.len()];
            match peer_brush(&mut peer_store, p, i % 2 == 0) {
                Some(d) => peer_rebuild(&peer_store, &mesher, &mut ws, &d),
                None => 0,
            }
        },
    ));

    // Where an edit's time goes: the edit itself (voxels, masks, history, delta log) and the
    // rebuild of the touched chunks' collision data, medians over the points.
    let (mut edit, mut rebuild, mut chunks) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..64 {
        // Each point carved, then refilled, as in the timed case.
        let p = points[(i / 2) % points.len()];
        let r = terrain.apply_brush(&sphere(p, i % 2 == 0)).expect("an edit");
        let t = std::time::Instant::now();
        let built = terrain.prepare(&[brush_box(p)], PrepareBudget::UNLIMITED).built;
        rebuild.push(t.elapsed().as_secs_f64() * 1e3);
        edit.push(r.elapsed.as_secs_f64() * 1e3);
        chunks.push(built as f64);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    report.metrics.push(Metric {
        name: "edit alone, ms (voxels, masks, history, log)".into(),
        voxterra: median(&mut edit),
        peer: f64::NAN,
        peer_name: "-".into(),
        goal: "median of 64 edits".into(),
    });
    report.metrics.push(Metric {
        name: "rebuild of the touched chunks, ms".into(),
        voxterra: median(&mut rebuild),
        peer: f64::NAN,
        peer_name: "-".into(),
        goal: format!("median {} chunks (grown physics mesh with edge flags, kD tree)", median(&mut chunks)),
    });

    // Memory: the whole world prepared.
    let mut whole =
        Terrain::from_store(world.store.clone(), MaterialTable::default(), TerrainConfig::default())
            .expect("valid");
    let all = Aabb::new(wr.min().map(|v| v as f32 - 2.0), wr.max().map(|v| v as f32 + 2.0));
    whole.prepare(&[all], PrepareBudget::UNLIMITED);
    let stats = whole.cache_stats();
    let masks = whole.masks().stats().total_bytes();
    let mut tris = 0usize;
    let mut peer_bytes = 0usize;
    let mut parts = Vec::new();
    let mut part_keys = Vec::new();
    for key in whole.cached_chunks() {
        if let Some(Some(c)) = whole.cached_chunk(key) {
            tris += c.mesh.triangle_count();
            let positions: Vec<Vector> =
                (0..c.mesh.vertex_count()).map(|i| c.mesh.position(i).to_parry()).collect();
            let indices: Vec<[u32; 3]> = c.mesh.triangles().iter().map(|t| t.map(u32::from)).collect();
            let mesh =
                TriMesh::with_flags(positions, indices, TriMeshFlags::FIX_INTERNAL_EDGES).expect("a mesh");
            peer_bytes += mesh.total_memory_size();
            parts.push(mesh);
            part_keys.push(key);
        }
    }
    report.metrics.push(Metric {
        name: "memory, bytes/triangle all in".into(),
        voxterra: (stats.bytes + stats.ray_tree_bytes + masks) as f64 / tris as f64,
        peer: peer_bytes as f64 / tris as f64,
        peer_name: "TriMesh/chunk".into(),
        goal: format!(
            "≤ 20 (Roblox ships 24.5); {tris} triangles in {} chunks; cache {:.1} MiB + ray tree {:.1} MiB ({} boxes) + masks {:.1} MiB",
            stats.entries,
            stats.bytes as f64 / 1048576.0,
            stats.ray_tree_bytes as f64 / 1048576.0,
            stats.ray_boxes,
            masks as f64 / 1048576.0
        ),
    });

    // Rays across the prepared world.
    let aabbs: Vec<_> = parts.iter().map(|m| m.local_aabb()).collect();
    let bvh = Bvh::from_leaves(BvhBuildStrategy::default(), &aabbs);
    let rays = ray_mix(&world.dense, if quick { 30_000 } else { 1_000_000 });
    let max_t = 1000.0;
    // The peer's rays in its own type, made before timing.
    let peer_rays: Vec<parry3d::query::Ray> = rays.iter().map(|r| r.to_parry()).collect();
    let peer_cast = |ray: &parry3d::query::Ray| {
        bvh.cast_ray(ray, max_t, |i, best| parts[i as usize].cast_local_ray(ray, best, true)).map(|h| h.1)
    };
    let mut hits = Vec::new();
    whole.cast_rays(&rays, max_t, &mut hits).expect("valid rays");
    let peer_hits: Vec<Option<f32>> = peer_rays.par_iter().map(peer_cast).collect();
    let differ = hits.iter().zip(&peer_hits).filter(|(o, p)| !same_hit(o, p)).count();
    // A ray through a shared edge or vertex may hit on one side and miss on the other.
    assert!(differ * 100_000 <= rays.len(), "{differ} of {} rays differ from parry", rays.len());
    let hit_count = hits.iter().filter(|h| h.is_some()).count();
    report.cases.push(compare_prechecked(
        budget,
        "rays (down, oblique, caves)",
        "ray",
        rays.len() as u64,
        "Bvh of TriMesh",
        "≥ 2× the peer",
        || {
            whole.cast_rays(&rays, max_t, &mut hits).expect("valid rays");
            hits.iter().filter(|h| h.is_some()).count()
        },
        || peer_rays.par_iter().map(peer_cast).filter(|h| h.is_some()).count(),
    ));
    // Contacts of 1,000 resting bodies, the world prepared on both sides.
    let all = shapes();
    let bodies = place_bodies(&mut whole, &all, &wr, 1000);
    let (mut ours_out, mut peer_out) = (Vec::new(), Vec::new());
    let (op, od) = ours_frame(&mut whole, &all, &bodies, &mut ours_out);
    let (pp, pd) = peer_frame(&parts, &bvh, &all, &bodies, &mut peer_out);
    if std::env::var_os("NP_DEBUG").is_some() {
        for (i, b) in bodies.iter().enumerate() {
            if od[i].is_finite() != pd[i].is_finite() {
                let shape = &*all[b.shape].0.0;
                let bb = shape.compute_aabb(&b.pose).loosened(PREDICTION);
                let theirs: Vec<_> = bvh.intersect_aabb(&bb).map(|j| part_keys[j as usize]).collect();
                let ours = whole.solid_chunks(&Aabb::from_parry(&bb));
                eprintln!(
                    "body {i} {} at {:?}: ours {} chunks {ours:?}, parry {} chunks {theirs:?}",
                    all[b.shape].1, b.pose.translation, od[i], pd[i]
                );
            }
        }
    }
    let touching = check_contacts(&od, &pd, "terrain contacts");
    report.cases.push(compare_prechecked(
        budget,
        "contacts, 1,000 resting bodies",
        "frame",
        1,
        "Bvh + contact_manifolds",
        "≥ 2× the peer",
        || ours_frame(&mut whole, &all, &bodies, &mut ours_out).0,
        || peer_frame(&parts, &bvh, &all, &bodies, &mut peer_out).0,
    ));
    report.metrics.push(Metric {
        name: "contact points in the frame".into(),
        voxterra: op as f64,
        peer: pp as f64,
        peer_name: "parry".into(),
        goal: format!("{touching} of {} bodies touching on both sides", bodies.len()),
    });

    // First frame on a fresh world: readiness, then one contacts pass.
    let boxes: Vec<Aabb> = bodies
        .iter()
        .map(|b| Aabb::from_parry(&all[b.shape].0.compute_aabb(&b.pose)).loosened(PREDICTION))
        .collect();
    let first = Budget { reps: if quick { 1 } else { 3 } };
    report.cases.push(compare_prechecked(
        first,
        "first frame, 1,000 bodies",
        "frame",
        1,
        "every TriMesh up front",
        "report",
        || {
            let mut t =
                Terrain::from_store(world.store.clone(), MaterialTable::default(), TerrainConfig::default())
                    .expect("valid");
            let ready = t.prepare(&boxes, PrepareBudget::UNLIMITED).ready;
            assert!(ready);
            ours_frame(&mut t, &all, &bodies, &mut ours_out).0
        },
        || {
            let (parts, bvh) = peer_world(&world.store, &mesher, &wr);
            peer_frame(&parts, &bvh, &all, &bodies, &mut peer_out).0
        },
    ));

    // The second peer, parry's `Voxels` of the same solid voxels: the same edits, rays and
    // resting bodies, the work compared (its answers meet cubes, not our surface).
    let (mut voxels, solid) = voxels_peer::build(&world.dense);
    // Our edits go on from where the TriMesh case left them (each point carved, then refilled).
    let i_peer = Cell::new(0usize);
    report.cases.push(compare_prechecked(
        budget,
        "edit -> collision-ready, r 4, vs parry Voxels",
        "edit",
        1,
        "Voxels::set_voxel",
        "report",
        || our_edit(&mut terrain, &points, &i_ours),
        || {
            let i = i_peer.get();
            i_peer.set(i + 1);
            voxels_peer::brush(&mut voxels, points[(i / 2) % points.len()], RADIUS, i.is_multiple_of(2))
        },
    ));
    report.cases.push(compare_prechecked(
        budget,
        "rays vs parry Voxels",
        "ray",
        rays.len() as u64,
        "Voxels::cast_local_ray",
        "report",
        || {
            whole.cast_rays(&rays, max_t, &mut hits).expect("valid rays");
            hits.iter().filter(|h| h.is_some()).count()
        },
        || voxels_peer::cast(&voxels, &peer_rays, max_t),
    ));
    let resting: Vec<(&dyn parry3d::shape::Shape, Pose)> =
        bodies.iter().map(|b| (&*all[b.shape].0.0, b.pose)).collect();
    let mut voxel_out = Vec::new();
    report.cases.push(compare_prechecked(
        budget,
        "contacts, 1,000 resting bodies, vs parry Voxels",
        "frame",
        1,
        "Voxels contact_manifolds",
        "report",
        || ours_frame(&mut whole, &all, &bodies, &mut ours_out).0,
        || voxels_peer::frame(&voxels, &resting, PREDICTION, &mut voxel_out),
    ));
    report.metrics.push(Metric {
        name: "memory, bytes per solid voxel, vs parry Voxels".into(),
        voxterra: (stats.bytes + stats.ray_tree_bytes + masks + world.store.stats().total_bytes) as f64
            / solid as f64,
        peer: voxels.total_memory_size() as f64 / solid as f64,
        peer_name: "Voxels".into(),
        goal: format!("(report) {solid} solid voxels; ours: store, collision cache, ray tree and masks"),
    });
    report.metrics.push(picture_rays::metric(&whole, world.params.size, if quick { 3 } else { 9 }));
    report.metrics.push(Metric {
        name: "rays that disagree with parry".into(),
        voxterra: differ as f64,
        peer: f64::NAN,
        peer_name: "-".into(),
        goal: format!("≤ 1 in 100 000; {} rays, {hit_count} hits", rays.len()),
    });
    report
}
