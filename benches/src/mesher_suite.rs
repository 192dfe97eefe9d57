//! Suite `mesher`: the dual mesher against fast-surface-nets 0.2 on the default world's 32³ chunks.
//! Both get the same padded 34³ box per chunk: ours as 2-byte voxels, the peer as an f32 array of
//! `0.5 − occupancy` (solid materials; anything else counts as empty), built untimed.
//!
//! The two own chunk seams differently (we own an edge by its lower voxel; fast-surface-nets skips
//! quads on each chunk's positive boundary, so it owns edges one voxel lower along their own axis),
//! so per-chunk counts differ, and over the world the peer also meshes the faces against the air
//! below y = 0 and beside x = 0 and z = 0. Per-chunk time is the fair comparison. Each side is therefore checked, before timing, against a brute-force count of the
//! crossing edges its own rule owns: two triangles per edge.

use crate::harness::{Budget, Metric, Report, compare_prechecked};
use crate::world::bench_world;
use fast_surface_nets::ndshape::{ConstShape, ConstShape3u32};
use fast_surface_nets::{SurfaceNetsBuffer, surface_nets};
use std::time::Instant;
use voxterra_core::nalgebra::Point3;
use voxterra_core::{DenseVoxels, MaterialTable, Region, StoreChunkKey, VoxelRead};
use voxterra_kdtree::KdTree;
use voxterra_mesher::{MeshWorkspace, Mesher, PhysicsMesh, RenderMesh, ShapeMode};
use voxterra_voxel_store::VoxelStore;

const PEER: &str = "fast-surface-nets 0.2";
const N: u32 = 32;
const P: u32 = N + 2;
type PaddedShape = ConstShape3u32<P, P, P>;

/// One 32³ chunk in both representations.
struct Chunk {
    region: Region,
    voxels: DenseVoxels,
    sdf: Vec<f32>,
}

fn chunk(store: &VoxelStore, table: &MaterialTable, key: StoreChunkKey) -> Chunk {
    let region = key.region().expect("world chunks are in range");
    let padded = Mesher::padded_region(&region).expect("in range");
    let mut voxels = DenseVoxels::new(padded, 1 << 20).expect("small box");
    store.read_box(&padded, voxels.as_mut_slice()).expect("buffer sized from the region");
    let mut sdf = vec![0.5f32; PaddedShape::USIZE];
    for (i, s) in sdf.iter_mut().enumerate() {
        let [x, y, z] = PaddedShape::delinearize(i as u32);
        let v = voxels.voxel(padded.min() + Point3::new(x, y, z).coords.cast::<i32>());
        if table.is_solid(v) {
            *s = 0.5 - v.occupancy();
        }
    }
    Chunk { region, voxels, sdf }
}

/// Brute force: crossing edges along each axis whose lower voxel (padded coordinates) lies in the
/// per-axis ranges `own(edge_axis)`, times two.
fn owned_triangles(c: &Chunk, own: impl Fn(usize) -> [std::ops::Range<u32>; 3]) -> usize {
    let inside = |x: u32, y: u32, z: u32| c.sdf[PaddedShape::linearize([x, y, z]) as usize] < 0.0;
    let mut edges = 0;
    for axis in 0..3 {
        let [rx, ry, rz] = own(axis);
        for z in rz.clone() {
            for y in ry.clone() {
                for x in rx.clone() {
                    let mut q = [x, y, z];
                    q[axis] += 1;
                    edges += (inside(x, y, z) != inside(q[0], q[1], q[2])) as usize;
                }
            }
        }
    }
    2 * edges
}

fn peer_mesh(c: &Chunk, buf: &mut SurfaceNetsBuffer) -> usize {
    surface_nets(&c.sdf, &PaddedShape {}, [0; 3], [P - 1; 3], buf);
    buf.indices.len() / 3
}

fn ours(
    mesher: &Mesher,
    src: &(impl VoxelRead + ?Sized),
    r: &Region,
    ws: &mut MeshWorkspace,
    out: &mut RenderMesh,
) -> usize {
    mesher.mesh(src, r, ws, out).expect("chunks are small").triangles
}

/// Runs the suite.
pub fn run(quick: bool) -> Report {
    let budget = Budget::new(quick);
    let world = bench_world(quick);
    let table = MaterialTable::default();
    let region = world.params.region().expect("valid world");
    let range = StoreChunkKey::range(&region).expect("non-empty world");
    let mut surface = Vec::new();
    let mut uniform = Vec::new();
    {
        {
            for key in range.iter() {
                let padded = Mesher::padded_region(&key.region().expect("in range")).expect("in range");
                if world.store.uniform(&padded).is_some() {
                    uniform.push(chunk(&world.store, &table, key));
                } else {
                    surface.push(chunk(&world.store, &table, key));
                }
            }
        }
    }
    let mut report = Report {
        suite: "mesher".into(),
        setup: format!(
            "default world {:?} (seed {}): {} 32³ chunks with surface, {} uniform; padded 34³ boxes; peer: {PEER} on f32 0.5 − occupancy",
            world.params.size,
            world.params.seed,
            surface.len(),
            uniform.len()
        ),
        ..Report::default()
    };

    // Check both sides against their brute-force edge counts, untimed.
    let smooth = Mesher::new(&table).with_shape_mode(ShapeMode::Smooth);
    let sharp = Mesher::new(&table).with_shape_mode(ShapeMode::Sharp);
    let (mut ws, mut out, mut buf) =
        (MeshWorkspace::new(), RenderMesh::default(), SurfaceNetsBuffer::default());
    let (mut ours_total, mut peer_total) = (0usize, 0usize);
    for c in &surface {
        let a = ours(&smooth, &c.voxels, &c.region, &mut ws, &mut out);
        assert_eq!(a, owned_triangles(c, |_| [1..P - 1, 1..P - 1, 1..P - 1]), "voxterra's triangles");
        assert_eq!(ours(&smooth, &world.store, &c.region, &mut ws, &mut out), a, "store and dense differ");
        let b = peer_mesh(c, &mut buf);
        let peer_own = |axis: usize| {
            let mut r = [1..P - 1, 1..P - 1, 1..P - 1];
            r[axis] = 0..P - 2;
            r
        };
        assert_eq!(b, owned_triangles(c, peer_own), "{PEER}'s triangles");
        ours_total += a;
        peer_total += b;
    }
    let chunks = surface.len() as u64;

    let run_ours = |m: &Mesher, ws: &mut MeshWorkspace, out: &mut RenderMesh| {
        surface.iter().map(|c| ours(m, &c.voxels, &c.region, ws, out)).sum::<usize>()
    };
    report.cases.push(compare_prechecked(
        budget,
        "smooth, 32³ surface chunks",
        "chunk",
        chunks,
        PEER,
        ">= 2x",
        || run_ours(&smooth, &mut ws, &mut out),
        || surface.iter().map(|c| peer_mesh(c, &mut buf)).sum::<usize>(),
    ));
    let (mut ws2, mut out2) = (MeshWorkspace::new(), RenderMesh::default());
    report.cases.push(compare_prechecked(
        budget,
        "smooth, 32³ chunks read from the store",
        "chunk",
        chunks,
        PEER,
        ">= 2x (ours includes the store reads)",
        || surface.iter().map(|c| ours(&smooth, &world.store, &c.region, &mut ws, &mut out)).sum::<usize>(),
        || surface.iter().map(|c| peer_mesh(c, &mut buf)).sum::<usize>(),
    ));
    report.cases.push(compare_prechecked(
        budget,
        "sharp (QEF) vs smooth, 32³ surface chunks",
        "chunk",
        chunks,
        "voxterra smooth",
        "sharp within 1.5x of smooth (ratio >= 0.67)",
        || run_ours(&sharp, &mut ws, &mut out),
        || run_ours(&smooth, &mut ws2, &mut out2),
    ));
    if !uniform.is_empty() {
        report.cases.push(compare_prechecked(
            budget,
            "uniform 32³ chunks, from the store",
            "chunk",
            uniform.len() as u64,
            PEER,
            "<= 5 µs a chunk",
            || {
                uniform
                    .iter()
                    .map(|c| ours(&smooth, &world.store, &c.region, &mut ws, &mut out))
                    .sum::<usize>()
            },
            || uniform.iter().map(|c| peer_mesh(c, &mut buf)).sum::<usize>(),
        ));
        report.cases.push(compare_prechecked(
            budget,
            "uniform 32³ chunks, from dense boxes (no fast path)",
            "chunk",
            uniform.len() as u64,
            PEER,
            "(reads every voxel)",
            || uniform.iter().map(|c| ours(&smooth, &c.voxels, &c.region, &mut ws, &mut out)).sum::<usize>(),
            || uniform.iter().map(|c| peer_mesh(c, &mut buf)).sum::<usize>(),
        ));
    }

    // Throughput in triangles per second, from the first case's medians.
    let case = &report.cases[0];
    let (ours_tps, peer_tps) = (
        ours_total as f64 / (case.voxterra_ns * chunks as f64) * 1e3,
        peer_total as f64 / (case.peer_ns * chunks as f64) * 1e3,
    );
    report.metrics.push(Metric {
        name: "smooth throughput, M triangles/s".into(),
        voxterra: ours_tps,
        peer: peer_tps,
        peer_name: PEER.into(),
        goal: format!(
            ">= 2x; {ours_total} vs {peer_total} triangles: the peer's rule also meshes the world's bottom and low side faces"
        ),
    });

    // Physics meshes of 8³ chunks over the surface chunks.
    let mut phys = PhysicsMesh::default();
    let (mut bytes, mut tris, mut meshes) = (0usize, 0usize, 0usize);
    // Every 16th mesh is kept, to size the kD trees built over them after the timing.
    let mut kept = Vec::new();
    let t = Instant::now();
    for c in &surface {
        let lo = c.region.min();
        for y in (0..N as i32).step_by(8) {
            for z in (0..N as i32).step_by(8) {
                for x in (0..N as i32).step_by(8) {
                    let r =
                        Region::from_min_size(lo + Point3::new(x, y, z).coords, [8; 3]).expect("in range");
                    let s = smooth.mesh(&world.store, &r, &mut ws, &mut phys).expect("8³ fits u16");
                    if s.triangles > 0 {
                        bytes += phys.data_bytes();
                        tris += s.triangles;
                        meshes += 1;
                        if meshes % 16 == 0 {
                            kept.push(phys.clone());
                        }
                    }
                }
            }
        }
    }
    let physics_secs = t.elapsed().as_secs_f64();
    report.metrics.push(Metric {
        name: "physics mesh bytes/triangle (8³ chunks)".into(),
        voxterra: bytes as f64 / tris.max(1) as f64,
        peer: 12.5,
        peer_name: "Roblox raw mesh (article)".into(),
        goal: format!(
            "<= 12.5; {meshes} chunk meshes, {:.0} triangles each, {:.1} µs each from the store",
            tris as f64 / meshes.max(1) as f64,
            physics_secs * 1e6 / meshes.max(1) as f64
        ),
    });
    let (mut both, mut kept_tris) = (0usize, 0usize);
    for m in &kept {
        let tree = KdTree::build(m).expect("physics meshes are valid");
        both += m.data_bytes() + tree.stats().bytes;
        kept_tris += m.triangles().len();
    }
    report.metrics.push(Metric {
        name: "physics mesh + kD tree bytes/triangle (8³ chunks)".into(),
        voxterra: both as f64 / kept_tris.max(1) as f64,
        peer: 24.5,
        peer_name: "Roblox mesh + tree (article)".into(),
        goal: format!("<= 24.5 (Roblox's shipped figure); every 16th chunk mesh, {} of them", kept.len()),
    });
    report
}
