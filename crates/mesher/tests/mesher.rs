//! The mesher against its contracts: closed and consistently oriented surfaces, chunked meshing equal
//! to whole meshing bit for bit, normals into air, determinism, the fast paths and the errors.

// Tests unwrap: a failure should stop the test right there.
#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use std::collections::HashMap;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{
    BruteForceTriangles, CoreError, Culling, DenseVoxels, Material, MaterialTable, Ray, Region,
    TriangleIndex, TriangleSource, Voxel, VoxelPos, VoxelRead, VoxelWrite, materials,
};
use voxterra_mesher::{MeshError, MeshWorkspace, Mesher, PhysicsMesh, RenderMesh, ShapeMode, Surface};
use voxterra_test_support::Rng;
use voxterra_voxel_store::VoxelStore;

fn region(min: [i32; 3], size: [u32; 3]) -> Region {
    Region::from_min_size(min.into(), size).unwrap()
}

/// Random blobs: a few balls with soft edges, random solid materials (smooth and sharp), some water,
/// and occasional random speckles, strictly inside `inner` so the surface is closed.
fn blobs(domain: Region, inner: Region, seed: u64) -> DenseVoxels {
    let mut rng = Rng::new(seed);
    let mut d = DenseVoxels::new(domain, 1 << 22).unwrap();
    let palette = [materials::ROCK, materials::GRASS, materials::BASALT, materials::BRICK, materials::WATER];
    let (lo, hi) = (inner.min(), inner.max());
    let balls: Vec<([f32; 3], f32, Material)> = (0..1 + rng.next_u64() % 4)
        .map(|_| {
            let c = [0, 1, 2]
                .map(|a| lo[a] as f32 + (rng.next_u64() % 1000) as f32 / 1000.0 * (hi[a] - lo[a]) as f32);
            let r = 1.0 + (rng.next_u64() % 1000) as f32 / 1000.0 * 5.0;
            (c, r, palette[(rng.next_u64() % palette.len() as u64) as usize])
        })
        .collect();
    for p in inner.iter() {
        let q = [p.x as f32 + 0.5, p.y as f32 + 0.5, p.z as f32 + 0.5];
        let mut best: Option<(f32, Material)> = None;
        for &(c, r, m) in &balls {
            let dist = ((q[0] - c[0]).powi(2) + (q[1] - c[1]).powi(2) + (q[2] - c[2]).powi(2)).sqrt();
            let occ = (r - dist + 0.5).clamp(0.0, 1.0);
            if occ > 0.0 && best.is_none_or(|b| occ > b.0) {
                best = Some((occ, m));
            }
        }
        let noise = rng.next_u64();
        let v = match best {
            Some((occ, m)) => Voxel::with_occupancy(m, occ),
            None if noise.is_multiple_of(23) => {
                Voxel::new(palette[(noise >> 8) as usize % 4], (noise >> 16) as u8)
            }
            None => Voxel::AIR,
        };
        d.set(p, v);
    }
    d
}

/// Each triangle as its three position bit patterns, rotated so the smallest comes first (keeps the
/// winding): a key that compares meshes independently of vertex numbering.
type TriKey = [[u32; 3]; 3];
fn tri_keys(mesh: &impl TriangleSource) -> Vec<TriKey> {
    let mut keys: Vec<TriKey> = (0..mesh.triangle_count())
        .map(|i| {
            let t = mesh.triangle(i).map(|p| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()]);
            let first = (0..3).min_by_key(|&k| t[k]).unwrap();
            [t[first], t[(first + 1) % 3], t[(first + 2) % 3]]
        })
        .collect();
    keys.sort_unstable();
    keys
}

/// Directed edge uses balance: every edge a→b is matched by as many b→a. Holds for every closed
/// surface, manifold or not (checkerboard faces give four triangles on one edge).
fn assert_closed(mesh: &RenderMesh) {
    let mut uses: HashMap<(u32, u32), i32> = HashMap::new();
    for t in &mesh.indices {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *uses.entry((a.min(b), a.max(b))).or_default() += if a < b { 1 } else { -1 };
        }
    }
    let open: Vec<_> = uses.iter().filter(|(_, n)| **n != 0).take(5).collect();
    assert!(open.is_empty(), "unbalanced edges (holes or flipped triangles): {open:?}");
}

/// Every edge in exactly two triangles, once each way: a closed, oriented 2-manifold.
fn assert_manifold(mesh: &RenderMesh) {
    let mut uses: HashMap<(u32, u32), u32> = HashMap::new();
    for t in &mesh.indices {
        for k in 0..3 {
            *uses.entry((t[k], t[(k + 1) % 3])).or_default() += 1;
        }
    }
    for (&(a, b), &n) in &uses {
        assert_eq!(n, 1, "directed edge {a}->{b} used {n} times");
        assert_eq!(uses.get(&(b, a)), Some(&1), "edge {a}->{b} has no twin");
    }
}

fn signed_volume(mesh: &impl TriangleSource) -> f64 {
    (0..mesh.triangle_count())
        .map(|i| {
            let [a, b, c] = mesh.triangle(i).map(|p| p.coords.cast::<f64>());
            a.dot(&b.cross(&c)) / 6.0
        })
        .sum()
}

fn mesh_render(mesher: &Mesher, src: &(impl VoxelRead + ?Sized), r: &Region) -> RenderMesh {
    let mut out = RenderMesh::default();
    mesher.mesh(src, r, &mut MeshWorkspace::new(), &mut out).unwrap();
    out
}

fn sphere(center: [f32; 3], radius: f32, material: Material, size: u32) -> (DenseVoxels, Region) {
    let r = region([0, 0, 0], [size; 3]);
    let mut d = DenseVoxels::new(r, 1 << 22).unwrap();
    for p in r.iter() {
        let q = Vector3::new(p.x as f32 + 0.5, p.y as f32 + 0.5, p.z as f32 + 0.5) - Vector3::from(center);
        d.set(p, Voxel::with_occupancy(material, radius - q.norm() + 0.5));
    }
    (d, r)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    /// Chunked meshing gives exactly the whole mesh's triangles, for chunk sizes that do and do not
    /// divide the box, in every shape mode; the whole mesh is closed and has positive volume.
    #[test]
    fn chunks_equal_whole_and_surfaces_close(seed in any::<u64>(), chunk in 3u32..17, mode in 0u8..3,
                                             offset in proptest::array::uniform3(-40i32..40)) {
        let table = MaterialTable::default();
        let mode = [ShapeMode::ByMaterial, ShapeMode::Smooth, ShapeMode::Sharp][mode as usize];
        let mesher = Mesher::new(&table).with_shape_mode(mode);
        let whole = region(offset, [30, 26, 34]);
        let inner = Region::new(whole.min() + Vector3::new(1, 1, 1), whole.max() - Vector3::new(1, 1, 1)).unwrap();
        let d = blobs(whole.expanded(1), inner, seed);
        let mesh = mesh_render(&mesher, &d, &whole);
        assert_closed(&mesh);
        prop_assert!(mesh.indices.is_empty() || signed_volume(&mesh) > 0.0);
        // Every vertex inside the cells the padded box spans.
        for p in &mesh.positions {
            for a in 0..3 {
                prop_assert!(p[a] >= whole.min()[a] as f32 - 0.5 && p[a] <= whole.max()[a] as f32 + 0.5);
            }
        }
        let mut physics = PhysicsMesh::default();
        mesher.mesh(&d, &whole, &mut MeshWorkspace::new(), &mut physics).unwrap();
        let (mut pieces, mut physics_pieces) = (Vec::new(), Vec::new());
        let (lo, hi) = (whole.min(), whole.max());
        let mut ws = MeshWorkspace::new();
        let (mut out, mut phys) = (RenderMesh::default(), PhysicsMesh::default());
        for y in (lo.y..hi.y).step_by(chunk as usize) {
            for z in (lo.z..hi.z).step_by(chunk as usize) {
                for x in (lo.x..hi.x).step_by(chunk as usize) {
                    let c = Region::new(Point3::new(x, y, z),
                        Point3::new((x + chunk as i32).min(hi.x), (y + chunk as i32).min(hi.y), (z + chunk as i32).min(hi.z))).unwrap();
                    mesher.mesh(&d, &c, &mut ws, &mut out).unwrap();
                    pieces.extend(tri_keys(&out));
                    mesher.mesh(&d, &c, &mut ws, &mut phys).unwrap();
                    physics_pieces.extend(tri_keys(&phys));
                }
            }
        }
        pieces.sort_unstable();
        prop_assert!(pieces == tri_keys(&mesh), "chunked triangles differ from whole ({} vs {})", pieces.len(), mesh.indices.len());
        // Quantized physics meshes decode every shared vertex to the same f32 in every chunk.
        physics_pieces.sort_unstable();
        prop_assert!(physics_pieces == tri_keys(&physics), "chunked physics triangles differ from whole");
    }

    /// The same voxels through the store (its own rows, its uniform fast path) mesh identically.
    #[test]
    fn store_and_dense_agree(seed in any::<u64>()) {
        let table = MaterialTable::default();
        let mesher = Mesher::new(&table);
        let whole = region([-20, -3, 5], [40, 20, 40]);
        let d = blobs(whole.expanded(1), whole, seed);
        let mut store = VoxelStore::new();
        let mut all = vec![Voxel::AIR; whole.expanded(1).len().unwrap()];
        d.read_box(&whole.expanded(1), &mut all).unwrap();
        store.write_box(&whole.expanded(1), &all).unwrap();
        let (a, b) = (mesh_render(&mesher, &d, &whole), mesh_render(&mesher, &store, &whole));
        prop_assert!(a == b);
    }
}

#[test]
fn sphere_is_a_manifold_facing_out_with_the_right_volume() {
    let table = MaterialTable::default();
    for (mode, material) in
        [(ShapeMode::ByMaterial, materials::ROCK), (ShapeMode::ByMaterial, materials::BRICK)]
    {
        let mesher = Mesher::new(&table).with_shape_mode(mode);
        let c = [12.3, 11.8, 12.1];
        let (d, r) = sphere(c, 8.0, material, 24);
        let mesh = mesh_render(&mesher, &d, &r);
        assert_manifold(&mesh);
        let volume = signed_volume(&mesh);
        let exact = 4.0 / 3.0 * std::f64::consts::PI * 512.0;
        assert!((volume / exact - 1.0).abs() < 0.03, "volume {volume} vs {exact}");
        let center = Point3::from(c);
        for (i, t) in mesh.indices.iter().enumerate() {
            let [a, b, cc] = t.map(|v| mesh.positions[v as usize]);
            let n = (b - a).cross(&(cc - a));
            let mid = Point3::from((a.coords + b.coords + cc.coords) / 3.0);
            assert!(n.dot(&(mid - center)) > 0.0, "triangle {i} faces inward");
        }
        for (p, n) in mesh.positions.iter().zip(&mesh.normals) {
            assert!((n.norm() - 1.0).abs() < 1e-4);
            assert!(n.dot(&(p - center).normalize()) > 0.9, "normal {n:?} at {p:?}");
            assert!(((p - center).norm() - 8.0).abs() < 0.6, "vertex {p:?} off the sphere");
        }
    }
}

#[test]
fn meshing_is_deterministic_and_workspaces_are_reusable() {
    let table = MaterialTable::default();
    let mesher = Mesher::new(&table);
    let whole = region([0, 0, 0], [30, 30, 30]);
    let d = blobs(whole.expanded(1), whole, 7);
    let first = mesh_render(&mesher, &d, &whole);
    let mut ws = MeshWorkspace::new();
    let mut out = RenderMesh::default();
    // A different, larger box first, so the workspace holds stale data of another shape.
    let big = blobs(region([-5, -5, -5], [70, 40, 70]), region([-4, -4, -4], [68, 38, 68]), 3);
    mesher.mesh(&big, &region([-4, -4, -4], [68, 38, 68]), &mut ws, &mut out).unwrap();
    assert!(!out.indices.is_empty());
    mesher.mesh(&d, &whole, &mut ws, &mut out).unwrap();
    assert_eq!(first, out);
    // Steady state: meshing again grows no buffer.
    let (ws_bytes, caps) = (ws.heap_bytes(), (out.positions.capacity(), out.indices.capacity()));
    for _ in 0..3 {
        mesher.mesh(&d, &whole, &mut ws, &mut out).unwrap();
    }
    assert_eq!((ws.heap_bytes(), (out.positions.capacity(), out.indices.capacity())), (ws_bytes, caps));
    // Rows wider than 64 voxels (several bit words) agree with narrow chunks.
    let wide = region([-5, -5, -5], [70, 40, 70]);
    let whole_wide = mesh_render(&mesher, &big, &wide);
    assert_closed(&whole_wide);
    let mut pieces = Vec::new();
    for x in [-5, 59] {
        let r = Region::new(Point3::new(x, -5, -5), Point3::new((x + 64).min(65), 35, 65)).unwrap();
        pieces.extend(tri_keys(&mesh_render(&mesher, &big, &r)));
    }
    pieces.sort_unstable();
    assert!(pieces == tri_keys(&whole_wide));
}

#[test]
fn uniform_boxes_and_the_padding() {
    let table = MaterialTable::default();
    let mesher = Mesher::new(&table);
    let r = region([0, 0, 0], [8, 8, 8]);
    let mut d = DenseVoxels::new(r.expanded(1), 1 << 20).unwrap();
    assert_eq!(mesh_render(&mesher, &d, &r).indices.len(), 0, "all air");
    d.fill(&r.expanded(1), Voxel::full(materials::ROCK)).unwrap();
    assert_eq!(mesh_render(&mesher, &d, &r).indices.len(), 0, "all solid");
    d.fill(&r.expanded(1), Voxel::full(materials::WATER)).unwrap();
    assert_eq!(mesh_render(&mesher, &d, &r).indices.len(), 0, "all water");

    // One voxel in the low padding: its edges belong to the lower neighbor chunks.
    d.fill(&r.expanded(1), Voxel::AIR).unwrap();
    d.set(Point3::new(-1, 3, 3), Voxel::full(materials::ROCK));
    assert_eq!(mesh_render(&mesher, &d, &r).indices.len(), 0, "low padding voxel");
    // One voxel in the high padding: the one edge from inside the region to it is ours.
    d.set(Point3::new(-1, 3, 3), Voxel::AIR);
    d.set(Point3::new(8, 3, 3), Voxel::full(materials::ROCK));
    let m = mesh_render(&mesher, &d, &r);
    assert_eq!(m.indices.len(), 2, "high padding voxel: one quad");
    let n = (m.positions[m.indices[0][1] as usize] - m.positions[m.indices[0][0] as usize])
        .cross(&(m.positions[m.indices[0][2] as usize] - m.positions[m.indices[0][0] as usize]));
    assert!(n.x < 0.0, "the quad faces the air at -x");

    // The store reports uniform chunks without a voxel read.
    let mut store = VoxelStore::new();
    store.fill(&region([0, 0, 0], [96, 32, 96]), Voxel::full(materials::ROCK)).unwrap();
    let mut out = PhysicsMesh::default();
    let mut ws = MeshWorkspace::new();
    let s = mesher.mesh(&store, &region([32, 8, 32], [32, 16, 32]), &mut ws, &mut out).unwrap();
    assert!(s.uniform && s.triangles == 0);
    let s = mesher.mesh(&store, &region([32, 300, 32], [32, 32, 32]), &mut ws, &mut out).unwrap();
    assert!(s.uniform && s.triangles == 0, "missing chunks are air");
    let s = mesher.mesh(&store, &region([32, 16, 32], [32, 32, 32]), &mut ws, &mut out).unwrap();
    assert!(!s.uniform && s.triangles == 2 * 32 * 32, "the top face");
}

#[test]
fn surfaces_select_their_matter() {
    let table = MaterialTable::default();
    let r = region([0, 0, 0], [10, 10, 10]);
    let mut d = DenseVoxels::new(r.expanded(1), 1 << 20).unwrap();
    d.fill(&region([1, 1, 1], [8, 3, 8]), Voxel::full(materials::ROCK)).unwrap();
    d.fill(&region([1, 4, 1], [8, 2, 8]), Voxel::full(materials::WATER)).unwrap();
    let solid = mesh_render(&Mesher::new(&table), &d, &r);
    let water = mesh_render(&Mesher::new(&table).with_surface(Surface::Liquid), &d, &r);
    assert_manifold(&solid);
    assert_manifold(&water);
    assert!(solid.materials.iter().all(|&m| m == materials::ROCK));
    assert!(water.materials.iter().all(|&m| m == materials::WATER));
    assert!((signed_volume(&solid) - signed_volume(&water) * 1.5).abs() < 8.0);
}

#[test]
fn physics_mesh_matches_render_mesh_and_feeds_the_kd_tree() {
    let table = MaterialTable::default();
    let mesher = Mesher::new(&table);
    // Far from the origin and below it: the steps count from the chunk, not the world.
    for min in [[0, 0, 0], [-3000, -24, 5000]] {
        let whole = region(min, [8, 8, 8]);
        let d = blobs(whole.expanded(1), whole, 11);
        let render = mesh_render(&mesher, &d, &whole);
        let mut physics = PhysicsMesh::default();
        mesher.mesh(&d, &whole, &mut MeshWorkspace::new(), &mut physics).unwrap();
        assert!(render.indices.len() > 100);
        assert_eq!(physics.vertex_count(), render.positions.len());
        // Within half a step, plus the render position's own rounding far from the origin.
        let slack = PhysicsMesh::STEP / 2.0 + 5000.0 * f32::EPSILON;
        for (i, r) in render.positions.iter().enumerate() {
            let p = physics.position(i);
            assert!((p - r).amax() <= slack, "vertex {i}: physics {p:?} render {r:?}");
        }
        assert_eq!(physics.materials(), &render.materials[..]);
        assert!(physics.triangles().iter().zip(&render.indices).all(|(a, b)| a.map(u32::from) == *b));
        // Packed triangles (4 bytes) up to 512 vertices, else u16 triples (6).
        let per_triangle = if physics.vertex_count() <= PhysicsMesh::PACKED_VERTICES { 4 } else { 6 };
        assert_eq!(
            physics.data_bytes(),
            12 + 7 * physics.vertex_count() + per_triangle * physics.triangles().len()
        );
        assert!((physics.data_bytes() as f64 / physics.triangles().len() as f64) < 12.5);
        let tree = voxterra_kdtree::KdTree::build(&physics).unwrap();
        tree.validate(&physics).unwrap();
        // The tree over quantized positions answers as brute force over the same positions.
        let (view, brute) = (tree.with(&physics), BruteForceTriangles(&physics));
        let c = whole.min().map(|v| v as f32) + Vector3::new(4.0, 4.0, 4.0);
        for k in 0..50 {
            let a = k as f32 * 0.37;
            let ray = Ray::new(
                c + Vector3::new(a.sin() * 9.0, 9.0, a.cos() * 9.0),
                Vector3::new(-a.sin(), -1.0, -a.cos()),
            );
            assert_eq!(view.cast_ray(&ray, 40.0, Culling::None), brute.cast_ray(&ray, 40.0, Culling::None));
        }
    }
}

#[test]
fn errors_are_typed() {
    let table = MaterialTable::default();
    let mesher = Mesher::new(&table);
    let d = DenseVoxels::new(region([0, 0, 0], [1, 1, 1]), 8).unwrap();
    let mut ws = MeshWorkspace::new();
    let mut out = RenderMesh::default();
    let edge = Region::new(Point3::new(0, 0, i32::MAX - 4), Point3::new(4, 4, i32::MAX)).unwrap();
    assert!(matches!(mesher.mesh(&d, &edge, &mut ws, &mut out), Err(MeshError::OutOfRange(_))));
    let small = mesher.clone().with_max_voxels(1000);
    assert!(matches!(
        small.mesh(&d, &region([0, 0, 0], [10, 10, 10]), &mut ws, &mut out),
        Err(MeshError::TooLarge { voxels: 1728, limit: 1000 })
    ));
    // A speckled box needs more vertices than u16 indices address.
    let r = region([0, 0, 0], [44, 44, 44]);
    let mut speckle = DenseVoxels::new(r.expanded(1), 1 << 20).unwrap();
    let mut rng = Rng::new(5);
    for p in r.iter() {
        if rng.next_u64().is_multiple_of(2) {
            speckle.set(p, Voxel::full(materials::ROCK));
        }
    }
    let mut physics = PhysicsMesh::default();
    assert!(matches!(
        mesher.mesh(&speckle, &r, &mut ws, &mut physics),
        Err(MeshError::TooManyVertices { limit: 65536, .. })
    ));
    assert!(mesher.mesh(&speckle, &r, &mut ws, &mut out).is_ok());
    // Physics positions reach PhysicsMesh::MAX_SIDE voxels a side, checked before any read.
    let side = PhysicsMesh::MAX_SIDE;
    assert_eq!(side, 62);
    assert_eq!(
        mesher.mesh(&d, &region([0, 0, 0], [4, side + 1, 4]), &mut ws, &mut physics),
        Err(MeshError::TooWide { side: side + 1, limit: side })
    );
    assert!(mesher.mesh(&d, &region([0, 0, 0], [4, side, 4]), &mut ws, &mut physics).is_ok());
    // A source whose reads fail: the error comes back, typed.
    struct Failing;
    impl VoxelRead for Failing {
        fn voxel(&self, _: VoxelPos) -> Voxel {
            Voxel::AIR
        }
        fn visit_rows(&self, _: &Region, _: &mut dyn FnMut(VoxelPos, &[Voxel])) {}
        fn read_box(&self, _: &Region, _: &mut [Voxel]) -> Result<(), CoreError> {
            Err(CoreError::BufferSize { expected: 1, got: 2 })
        }
    }
    assert_eq!(
        mesher.mesh(&Failing, &region([0, 0, 0], [4, 4, 4]), &mut ws, &mut out),
        Err(MeshError::Read(CoreError::BufferSize { expected: 1, got: 2 }))
    );
}

/// Small cases, pinned: positions to 1/1000, materials, triangles.
fn snapshot(mesh: &RenderMesh) -> String {
    let mut s = String::new();
    for ((p, n), m) in mesh.positions.iter().zip(&mesh.normals).zip(&mesh.materials) {
        s += &format!(
            "v {:.3} {:.3} {:.3}  n {:.3} {:.3} {:.3}  m {}\n",
            p.x,
            p.y,
            p.z,
            n.x,
            n.y,
            n.z,
            m.id()
        );
    }
    for t in &mesh.indices {
        s += &format!("f {} {} {}\n", t[0], t[1], t[2]);
    }
    s
}

#[test]
fn snapshots() {
    let table = MaterialTable::default();
    let mesher = Mesher::new(&table);
    let r = region([0, 0, 0], [4, 4, 4]);
    let mut d = DenseVoxels::new(r.expanded(1), 1 << 20).unwrap();

    d.set(Point3::new(1, 1, 1), Voxel::full(materials::ROCK));
    insta::assert_snapshot!("one_voxel", snapshot(&mesh_render(&mesher, &d, &r)));

    d.fill(&r.expanded(1), Voxel::AIR).unwrap();
    d.fill(&region([-1, -1, -1], [6, 2, 6]), Voxel::full(materials::GRASS)).unwrap();
    d.fill(&region([-1, 1, -1], [6, 1, 6]), Voxel::new(materials::GRASS, 100)).unwrap();
    insta::assert_snapshot!("plane", snapshot(&mesh_render(&mesher, &d, &region([0, 0, 0], [2, 3, 2]))));

    d.fill(&r.expanded(1), Voxel::AIR).unwrap();
    d.fill(&region([1, 1, 1], [2, 2, 2]), Voxel::full(materials::BRICK)).unwrap();
    insta::assert_snapshot!("sharp_cube", snapshot(&mesh_render(&mesher, &d, &r)));

    d.fill(&r.expanded(1), Voxel::AIR).unwrap();
    d.fill(&region([0, 0, 1], [2, 2, 2]), Voxel::full(materials::ROCK)).unwrap();
    d.fill(&region([2, 0, 1], [2, 2, 2]), Voxel::full(materials::SAND)).unwrap();
    insta::assert_snapshot!("two_materials", snapshot(&mesh_render(&mesher, &d, &r)));

    let (s, sr) = sphere([3.0, 3.0, 3.0], 2.2, materials::ROCK, 6);
    insta::assert_snapshot!("sphere", snapshot(&mesh_render(&mesher, &s, &sr)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Edge flags chunk by chunk equal those of meshing the region whole: every triangle of every
    /// chunk mesh carries the flags the same triangle has in the whole mesh.
    #[test]
    fn edge_flags_chunked_equal_whole(seed in any::<u64>(), chunk in 4u32..9, sharp: bool) {
        let domain = region([-4, -4, -4], [32, 32, 32]);
        let inner = region([0, 0, 0], [24, 24, 24]);
        let d = blobs(domain, inner, seed);
        let table = MaterialTable::default();
        let mode = if sharp { ShapeMode::Sharp } else { ShapeMode::Smooth };
        let mesher = Mesher::new(&table).with_shape_mode(mode);
        let mut ws = MeshWorkspace::new();
        let whole_region = region([0, 0, 0], [24, 24, 24]);
        let mut whole = PhysicsMesh::default();
        mesher.mesh_physics(&d, &whole_region, &mut ws, &mut whole).unwrap();
        prop_assert_eq!(whole.edge_flags().len(), whole.triangles().len());
        let tri = |m: &PhysicsMesh, t: usize| m.triangles().get(t).unwrap().map(|v| { let p = m.position(v as usize); [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()] });
        let mut flags_of: HashMap<[[u32; 3]; 3], u8> = HashMap::new();
        for t in 0..whole.triangles().len() {
            flags_of.insert(tri(&whole, t), whole.edge_flags().get(t).unwrap());
        }
        let mut seen = 0;
        let n = 24 / chunk as i32 + 1;
        for cz in 0..n { for cy in 0..n { for cx in 0..n {
            let r = region([cx * chunk as i32, cy * chunk as i32, cz * chunk as i32], [chunk; 3]);
            let Some(r) = r.intersection(&whole_region) else { continue };
            let mut m = PhysicsMesh::default();
            mesher.mesh_physics(&d, &r, &mut ws, &mut m).unwrap();
            for t in 0..m.triangles().len() {
                let want = flags_of.get(&tri(&m, t));
                prop_assert_eq!(want.copied(), m.edge_flags().get(t), "chunk {:?} triangle {}", r, t);
                seen += 1;
            }
        }}}
        prop_assert_eq!(seen, whole.triangles().len());
    }

    /// The physics mesh (made from the grown region's mesh) is the region's own mesh, bit for bit.
    #[test]
    fn physics_mesh_equals_plain_mesh(seed in any::<u64>(), sharp: bool, min in prop::array::uniform3(0i32..12), size in prop::array::uniform3(1u32..13)) {
        let domain = region([-4, -4, -4], [32, 32, 32]);
        let d = blobs(domain, region([0, 0, 0], [24, 24, 24]), seed);
        let mode = if sharp { ShapeMode::Sharp } else { ShapeMode::Smooth };
        let mesher = Mesher::new(&MaterialTable::default()).with_shape_mode(mode);
        let mut ws = MeshWorkspace::new();
        let r = region(min, size);
        let (mut physics, mut plain) = (PhysicsMesh::default(), PhysicsMesh::default());
        mesher.mesh_physics(&d, &r, &mut ws, &mut physics).unwrap();
        mesher.mesh(&d, &r, &mut ws, &mut plain).unwrap();
        prop_assert_eq!(physics.triangles(), plain.triangles());
        prop_assert_eq!(physics.quantized().points, plain.quantized().points);
        prop_assert_eq!(physics.quantized().origin, plain.quantized().origin);
        prop_assert_eq!(physics.materials(), plain.materials());
        prop_assert_eq!(physics.edge_flags().len(), physics.triangles().len());
    }

    /// The flags equal the rule applied by brute force to the grown region's mesh: every edge of
    /// every triangle against every edge of every triangle, vertices compared by index (one per
    /// cell; two cells' vertices may coincide, as sharp vertices clamped to a shared face do, and
    /// stay two vertices). Each of the region's triangles is found in the grown mesh by its corners.
    #[test]
    fn edge_flags_equal_brute_force(seed in any::<u64>(), sharp: bool) {
        let domain = region([-4, -4, -4], [24, 24, 24]);
        let d = blobs(domain, region([0, 0, 0], [16, 16, 16]), seed);
        let mode = if sharp { ShapeMode::Sharp } else { ShapeMode::Smooth };
        let mesher = Mesher::new(&MaterialTable::default()).with_shape_mode(mode);
        let mut ws = MeshWorkspace::new();
        let r = region([4, 4, 4], [8, 8, 8]);
        let (mut own, mut around) = (PhysicsMesh::default(), PhysicsMesh::default());
        mesher.mesh_physics(&d, &r, &mut ws, &mut own).unwrap();
        mesher.mesh(&d, &r.expanded(1), &mut ws, &mut around).unwrap();
        let bits = |p: Point3<f32>| [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()];
        let tri = |m: &PhysicsMesh, t: usize| m.triangles().get(t).unwrap().map(|v| m.position(v as usize));
        let face = |t: [Point3<f32>; 3]| (t[1] - t[0]).cross(&(t[2] - t[0]));
        let normal = |t: [Point3<f32>; 3]| face(t).try_normalize(0.0);
        let cos_limit = voxterra_mesher::edge_flags::ACTIVE_EDGE_DEGREES.to_radians().cos();
        let convex_crease = voxterra_mesher::edge_flags::convex_crease;
        let brute = |u: usize| -> Result<u8, TestCaseError> {
            let p = tri(&around, u);
            let v = around.triangles().get(u).unwrap();
            let Some(n) = normal(p) else { return Ok(0b111) };
            let mut flags = 0u8;
            for i in 0..3 {
                let (a, b, c) = (v[i], v[(i + 1) % 3], v[(i + 2) % 3]);
                let mut far = Vec::new();
                for w in around.triangles().iter() {
                    for j in 0..3 {
                        let (qa, qb, qc) = (w[j], w[(j + 1) % 3], w[(j + 2) % 3]);
                        if ((qa == a && qb == b) || (qa == b && qb == a)) && qc != c {
                            far.push(around.position(qc as usize));
                        }
                    }
                }
                let (pa, pb) = (p[i], p[(i + 1) % 3]);
                let active = match far.as_slice() {
                    [dd] => {
                        let crease = convex_crease(&face(p), &pa, &pb, dd);
                        // The predicate against its plain form (unit normals), away from its limits.
                        let m = normal([pb, pa, *dd]);
                        let below = (dd - pa).dot(&n);
                        let plain = below < 0.0 && m.is_none_or(|m| m.dot(&n) < cos_limit);
                        let margin = m.map_or(1.0, |m| (m.dot(&n) - cos_limit).abs()).min(below.abs());
                        prop_assert!(crease == plain || margin < 1e-5, "edge {} of {}", i, u);
                        crease
                    }
                    _ => true,
                };
                if active {
                    flags |= 1 << i;
                }
            }
            Ok(flags)
        };
        for t in 0..own.triangles().len() {
            let key = tri(&own, t).map(bits);
            let wants = (0..around.triangles().len())
                .filter(|&u| tri(&around, u).map(bits) == key)
                .map(brute)
                .collect::<Result<Vec<u8>, _>>()?;
            prop_assert!(!wants.is_empty(), "triangle {} missing from the grown mesh", t);
            prop_assert!(wants.contains(&own.edge_flags().get(t).unwrap()), "triangle {}: {} not in {:?}", t, own.edge_flags().get(t).unwrap(), wants);
        }
    }
}

/// On a flat floor every edge inside the floor is flat, so inactive, however it is chunked; a
/// box's creases are active; the top of a pit's wall is active, its floor seam concave, inactive.
#[test]
fn edge_flags_flat_floor_and_creases() {
    let domain = region([-4, -4, -4], [40, 24, 40]);
    let mut d = DenseVoxels::new(domain, 1 << 22).unwrap();
    d.fill(&region([-4, -4, -4], [40, 8, 40]), Voxel::full(materials::ROCK)).unwrap();
    let table = MaterialTable::default();
    let mesher = Mesher::new(&table);
    let mut ws = MeshWorkspace::new();
    for chunk in [8u32, 5] {
        for cx in 0..3 {
            let r = region([cx * chunk as i32, 0, 8], [chunk, 8, chunk]);
            let mut m = PhysicsMesh::default();
            mesher.mesh_physics(&d, &r, &mut ws, &mut m).unwrap();
            assert!(!m.triangles().is_empty());
            assert!(m.edge_flags().iter().all(|f| f == 0), "flat floor, chunk {chunk}: {:?}", m.edge_flags());
        }
    }
    // A sharp-material block standing on the floor: its top rim edges are convex creases.
    d.fill(&region([10, 4, 10], [6, 6, 6]), Voxel::full(materials::BRICK)).unwrap();
    let mut m = PhysicsMesh::default();
    mesher
        .with_shape_mode(ShapeMode::Sharp)
        .mesh_physics(&d, &region([8, 0, 8], [10, 12, 10]), &mut ws, &mut m)
        .unwrap();
    let active = m.edge_flags().iter().filter(|&f| f != 0).count();
    assert!(active > 0 && active < m.triangles().len(), "{active} of {}", m.triangles().len());
}
