//! The kD tree against brute force: every query, on triangle soups and terrain grids.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use proptest::prelude::*;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{
    Aabb, BruteForceTriangles, Culling, Positions, QuantizedPositions, Ray, RayHit, TriangleIndex,
    TriangleIndices, TriangleMesh, TriangleSource,
};
use voxterra_kdtree::{KdTree, KdTreeError};

/// The same mesh with u16 indices, to exercise that path.
struct Mesh16 {
    positions: Vec<Point3<f32>>,
    triangles: Vec<[u16; 3]>,
}

impl TriangleSource for Mesh16 {
    fn positions(&self) -> Positions<'_> {
        Positions::F32(&self.positions)
    }
    fn indices(&self) -> TriangleIndices<'_> {
        TriangleIndices::U16(&self.triangles)
    }
}

/// The same mesh with 16-bit quantized positions (as the mesher's physics meshes), u16 or u32
/// indices.
struct Quantized {
    points: Vec<[u16; 3]>,
    origin: Point3<f32>,
    step: f32,
    triangles: Vec<[u32; 3]>,
    short: bool,
    short_triangles: Vec<[u16; 3]>,
}

impl Quantized {
    /// Rounds `mesh`'s positions to the finest power-of-two grid that holds them in 16 bits.
    fn new(mesh: &TriangleMesh, short: bool) -> Self {
        let lo = |a: usize| mesh.positions.iter().map(|p| p[a]).fold(f32::INFINITY, f32::min).floor();
        let origin = Point3::new(lo(0), lo(1), lo(2));
        let extent = mesh.positions.iter().map(|p| (p - origin).amax()).fold(1.0f32, f32::max);
        let step = (extent / 65535.0).log2().ceil().exp2();
        let points =
            mesh.positions.iter().map(|p| ((p - origin) / step).map(|v| v.round() as u16).into()).collect();
        let short_triangles = mesh.triangles.iter().map(|t| t.map(|v| v as u16)).collect();
        Quantized { points, origin, step, triangles: mesh.triangles.clone(), short, short_triangles }
    }
}

impl TriangleSource for Quantized {
    fn positions(&self) -> Positions<'_> {
        Positions::Quantized(QuantizedPositions {
            points: &self.points,
            origin: self.origin,
            step: self.step,
        })
    }
    fn indices(&self) -> TriangleIndices<'_> {
        if self.short {
            TriangleIndices::U16(&self.short_triangles)
        } else {
            TriangleIndices::U32(&self.triangles)
        }
    }
}

/// A terrain-like grid of `n × n` unit quads with heights from `h`, offset by `origin`.
fn grid(n: u32, origin: Vector3<f32>, h: impl Fn(u32, u32) -> f32) -> TriangleMesh {
    let mut m = voxterra_test_support::grid_mesh(n, 1.0, |x, z| h(x as u32, z as u32));
    m.positions.iter_mut().for_each(|p| *p += origin);
    m
}

fn arb_soup() -> impl Strategy<Value = TriangleMesh> {
    let v = || proptest::array::uniform3(-10.0f32..10.0);
    proptest::collection::vec((v(), v(), v(), 0u8..8), 0..60).prop_map(|tris| {
        let mut m = TriangleMesh::default();
        for (a, b, c, kind) in tris {
            let base = m.positions.len() as u32;
            let (a, b, c) = (Point3::from(a), Point3::from(b), Point3::from(c));
            // Some small triangles, some degenerate (collinear, repeated vertex), some big.
            let (b, c) = match kind {
                0 => (a + (b - a) * 0.05, a + (c - a) * 0.05),
                1 => (b, a + (b - a) * 0.5),
                2 => (a, c),
                _ => (b, c),
            };
            m.positions.extend([a, b, c]);
            m.triangles.push([base, base + 1, base + 2]);
        }
        m
    })
}

fn arb_terrain() -> impl Strategy<Value = (TriangleMesh, f32)> {
    (1u32..24, any::<u32>(), prop_oneof![Just(0.0f32), Just(1.0e5), Just(-3.0e4)]).prop_map(
        |(n, seed, far)| {
            let s = seed as f32 * 1e-9;
            let m = grid(n, Vector3::new(far, 0.0, -far), |x, z| {
                ((x as f32 * 0.7 + s).sin() * 2.0 + (z as f32 * 0.4).cos()).round() * 0.5
            });
            (m, far)
        },
    )
}

fn arb_ray(center: f32) -> impl Strategy<Value = Ray> {
    let o = proptest::array::uniform3(-14.0f32..30.0);
    let axis = prop_oneof![
        Just(Vector3::new(0.0, -1.0, 0.0)),
        Just(Vector3::new(0.0, 1.0, 0.0)),
        Just(Vector3::new(1.0, 0.0, 0.0)),
        Just(Vector3::new(-1.0, 0.0, 0.0)),
        Just(Vector3::new(0.0, 0.0, 1.0)),
        Just(Vector3::new(0.0, 0.0, -1.0)),
    ];
    let dir = prop_oneof![
        axis,
        proptest::array::uniform3(-1.0f32..1.0).prop_map(Vector3::from),
        proptest::array::uniform3(-1000.0f32..1000.0).prop_map(Vector3::from),
    ];
    // Origins on the integer grid half the time: rays through shared edges and vertices.
    let origin = prop_oneof![
        o.prop_map(Point3::from),
        proptest::array::uniform3(-12i32..30).prop_map(|v| Point3::new(
            v[0] as f32,
            v[1] as f32,
            v[2] as f32
        ))
    ];
    (origin, dir).prop_map(move |(o, d)| Ray::new(Point3::new(o.x + center, o.y, o.z - center), d))
}

fn arb_box(center: f32) -> impl Strategy<Value = Aabb> {
    // Grid-aligned corners half the time (zero-size boxes too): boxes exactly on split planes.
    let corner = prop_oneof![
        proptest::array::uniform3(-14.0f32..30.0),
        proptest::array::uniform3((-14i32..30).prop_map(|v| v as f32 * 0.5)),
    ];
    let size = prop_oneof![
        proptest::array::uniform3(0.0f32..12.0),
        proptest::array::uniform3((0i32..6).prop_map(|v| v as f32 * 0.5))
    ];
    (corner, size).prop_map(move |(c, s)| {
        let lo = Point3::new(c[0] + center, c[1], c[2] - center);
        Aabb::new(lo, lo + Vector3::from(s))
    })
}

fn check(mesh: &impl TriangleSource, rays: &[Ray], boxes: &[Aabb]) -> Result<(), TestCaseError> {
    let tree = KdTree::build(mesh).unwrap();
    tree.validate(mesh).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let (fast, slow) = (tree.with(mesh), BruteForceTriangles(mesh));
    for ray in rays {
        for culling in [Culling::None, Culling::BackFaces] {
            // A `max_t` exactly at the hit's own `t`: the interval is closed.
            let exact = slow.cast_ray(ray, f32::INFINITY, culling).map_or(1.0, |h| h.t);
            for max_t in [f32::INFINITY, 7.5, exact] {
                prop_assert_eq!(
                    fast.cast_ray(ray, max_t, culling),
                    slow.cast_ray(ray, max_t, culling),
                    "ray {:?}",
                    ray
                );
                prop_assert_eq!(
                    fast.ray_hits_any(ray, max_t, culling),
                    slow.ray_hits_any(ray, max_t, culling)
                );
            }
        }
    }
    for b in boxes {
        let (mut a, mut s) = (vec![], vec![]);
        fast.triangles_in_aabb(b, &mut |t| a.push(t));
        slow.triangles_in_aabb(b, &mut |t| s.push(t));
        a.sort_unstable();
        prop_assert_eq!(a, s, "box {:?}", b);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn soups_match_brute_force(mesh in arb_soup(), rays in proptest::collection::vec(arb_ray(0.0), 24), boxes in proptest::collection::vec(arb_box(0.0), 12)) {
        check(&mesh, &rays, &boxes)?;
        check(&Quantized::new(&mesh, false), &rays, &boxes)?;
    }

    #[test]
    fn terrain_grids_match_brute_force((mesh, far) in arb_terrain(), seeds in proptest::collection::vec((arb_ray(0.0), arb_box(0.0)), 24)) {
        // Rays and boxes around the (possibly far-away) grid.
        let shift = Vector3::new(far, 0.0, -far);
        let rays: Vec<Ray> = seeds.iter().map(|(r, _)| Ray::new(r.origin + shift, r.dir)).collect();
        let boxes: Vec<Aabb> = seeds.iter().map(|(_, b)| Aabb::new(b.mins + shift, b.maxs + shift)).collect();
        check(&mesh, &rays, &boxes)?;
        let m16 = Mesh16 { positions: mesh.positions.clone(), triangles: mesh.triangles.iter().map(|t| t.map(|v| v as u16)).collect() };
        check(&m16, &rays, &boxes)?;
        check(&Quantized::new(&mesh, true), &rays, &boxes)?;
    }
}

#[test]
fn shared_edges_and_vertices_are_hit() {
    let mesh = grid(8, Vector3::zeros(), |_, _| 0.0);
    let tree = KdTree::build(&mesh).unwrap();
    let view = tree.with(&mesh);
    for z in 0..=16 {
        for x in 0..=16 {
            // Every grid vertex, edge midpoint and face center, straight down.
            let ray =
                Ray::new(Point3::new(x as f32 * 0.5, 3.0, z as f32 * 0.5), Vector3::new(0.0, -1.0, 0.0));
            assert_eq!(view.cast_ray(&ray, 10.0, Culling::None).map(|h| h.t), Some(3.0), "{ray:?}");
            assert_eq!(
                view.cast_ray(&ray, 10.0, Culling::None),
                BruteForceTriangles(&mesh).cast_ray(&ray, 10.0, Culling::None)
            );
        }
    }
}

#[test]
fn small_and_degenerate_inputs() {
    for n in 0..4 {
        let mut m = TriangleMesh::default();
        for i in 0..n {
            let b = m.positions.len() as u32;
            m.positions.extend([
                Point3::new(i as f32, 0.0, 0.0),
                Point3::new(i as f32 + 1.0, 0.0, 0.0),
                Point3::new(i as f32, 0.0, 1.0),
            ]);
            m.triangles.push([b, b + 1, b + 2]);
        }
        let tree = KdTree::build(&m).unwrap();
        tree.validate(&m).unwrap();
        let v = tree.with(&m);
        let down = Ray::new(Point3::new(0.25, 1.0, 0.25), Vector3::new(0.0, -1.0, 0.0));
        assert_eq!(v.cast_ray(&down, 5.0, Culling::None).is_some(), n > 0);
        // Zero and NaN directions, NaN max_t: no panic, no hit (as `ray_triangle`).
        for bad in [Vector3::zeros(), Vector3::new(f32::NAN, -1.0, 0.0)] {
            let r = Ray::new(Point3::new(0.25, 0.0, 0.25), bad);
            assert_eq!(v.cast_ray(&r, 5.0, Culling::None), None);
            assert!(!v.ray_hits_any(&r, 5.0, Culling::None));
            assert_eq!(BruteForceTriangles(&m).cast_ray(&r, 5.0, Culling::None), None);
        }
        assert_eq!(v.cast_ray(&down, f32::NAN, Culling::None), None);
        let mut got = vec![];
        v.triangles_in_aabb(
            &Aabb::new(Point3::new(f32::NAN, 0.0, 0.0), Point3::new(1.0, 1.0, 1.0)),
            &mut |t| got.push(t),
        );
        assert!(got.is_empty());
        assert_eq!(tree.stats().triangles, n);
    }
}

#[test]
fn bad_meshes_are_typed_errors() {
    let mut m = TriangleMesh::default();
    m.positions.extend([Point3::origin(), Point3::new(1.0, 0.0, 0.0), Point3::new(0.0, f32::NAN, 1.0)]);
    m.triangles.push([0, 1, 2]);
    assert_eq!(KdTree::build(&m).unwrap_err(), KdTreeError::NonFiniteVertex { triangle: 0, vertex: 2 });
    m.positions[2].y = 0.0;
    m.triangles.push([0, 1, 9]);
    assert_eq!(KdTree::build(&m).unwrap_err(), KdTreeError::IndexOutOfRange { triangle: 1, vertex: 9 });
}

#[test]
fn extreme_extents_keep_the_planes_sound() {
    // Coordinates near f32::MAX on both sides: the bounds' extent overflows f32, so the plane grid
    // must be built without it. Small triangles at the origin share the tree.
    let mut m = grid(6, Vector3::new(-3.0, 0.0, -3.0), |x, z| (x * z) as f32 * 0.1);
    let b = m.positions.len() as u32;
    let big = 3.0e38f32;
    m.positions.extend([
        Point3::new(-big, -1.0, -big),
        Point3::new(big, -1.0, -big),
        Point3::new(-big, -1.0, big),
        Point3::new(big, 2.0, big),
    ]);
    m.triangles.push([b, b + 2, b + 1]);
    m.triangles.push([b + 1, b + 2, b + 3]);
    let tree = KdTree::build(&m).unwrap();
    tree.validate(&m).unwrap();
    let (fast, slow) = (tree.with(&m), BruteForceTriangles(&m));
    for (x, z) in [(0.5f32, 0.5f32), (-2.3, 1.7), (1e30, -1e30), (2.9e38, 2.9e38)] {
        let down = Ray::new(Point3::new(x, 10.0, z), Vector3::new(0.0, -1.0, 0.0));
        assert_eq!(
            fast.cast_ray(&down, f32::INFINITY, Culling::None),
            slow.cast_ray(&down, f32::INFINITY, Culling::None)
        );
    }
    for bx in [
        Aabb::new(Point3::new(-1.0, -2.0, -1.0), Point3::new(1.0, 1.0, 1.0)),
        Aabb::new(Point3::new(1e37, -5.0, 1e37), Point3::new(2e38, 5.0, 2e38)),
    ] {
        let (mut a, mut s) = (vec![], vec![]);
        fast.triangles_in_aabb(&bx, &mut |t| a.push(t));
        slow.triangles_in_aabb(&bx, &mut |t| s.push(t));
        a.sort_unstable();
        assert_eq!(a, s, "{bx:?}");
    }
}

#[test]
fn large_grid_is_shallow_and_small() {
    let mesh = grid(200, Vector3::zeros(), |x, z| ((x * 7 + z * 13) % 5) as f32 * 0.3);
    let tree = KdTree::build(&mesh).unwrap();
    tree.validate(&mesh).unwrap();
    let s = tree.stats();
    assert_eq!(s.triangles, 80_000);
    // 8-byte nodes, about one per triangle, plus a few slabs.
    assert!(s.bytes as f32 / s.triangles as f32 <= 9.0, "{s:?}");
    assert!(s.depth <= 40, "{s:?}");
    assert!(s.triangles_per_leaf > 1.95, "{s:?}");
    // Past the size where rays prefetch leaves' triangles: the same hits as brute force.
    let rays: Vec<Ray> = (0..32)
        .flat_map(|i| {
            let o = Point3::new(i as f32 * 6.1 + 0.3, 5.0, i as f32 * 5.3 + 0.7);
            [Ray::new(o, Vector3::new(0.0, -1.0, 0.0)), Ray::new(o, Vector3::new(0.6, -0.2, 0.3))]
        })
        .collect();
    // Box queries there test their leaves in deferred batches: boxes from one quad to the whole
    // grid, so batches fill and flush mid-walk.
    let boxes: Vec<Aabb> = [0.3f32, 2.5, 9.0, 500.0]
        .iter()
        .enumerate()
        .map(|(i, &s)| {
            let c = Point3::new(37.3 + i as f32 * 41.0, 0.6, 151.9 - i as f32 * 29.0);
            Aabb::new(c - Vector3::repeat(s / 2.0), c + Vector3::repeat(s / 2.0))
        })
        .collect();
    check(&mesh, &rays, &boxes).unwrap();
    // Batched, through the public calls (past the size where they batch): each ray's result as
    // cast alone, with extra slots left alone and rays past the slots ignored.
    let view = tree.with(&mesh);
    let mut hits = vec![None; rays.len() + 3];
    let untouched = Some(RayHit { t: -1.0, triangle: 7, u: 0.0, v: 0.0 });
    hits[rays.len()..].fill(untouched);
    view.cast_rays(&rays, f32::MAX, Culling::None, &mut hits);
    let alone: Vec<_> = rays.iter().map(|r| view.cast_ray(r, f32::MAX, Culling::None)).collect();
    assert_eq!(hits[..rays.len()], alone[..]);
    assert!(hits[rays.len()..].iter().all(|h| *h == untouched));
    assert!(alone.iter().filter(|h| h.is_some()).count() > rays.len() / 2, "the rays should mostly hit");
    let mut any = vec![false; rays.len() - 5];
    // Heights up to 1.2 under origins at 5: a limit of 4.4 lets some rays reach the surface.
    view.rays_hit_any(&rays, 4.4, Culling::None, &mut any);
    for (r, a) in rays.iter().zip(&any) {
        assert_eq!(*a, view.ray_hits_any(r, 4.4, Culling::None), "{r:?}");
    }
    assert!(any.contains(&true) && any.contains(&false), "{any:?}");
}

#[test]
fn heightfields_get_height_slabs_that_cull_rays_passing_over() {
    // Hills: subtrees far narrower in height than the whole grid, so slabs bound them on Y.
    let mesh = grid(64, Vector3::zeros(), |x, z| ((x as f32 * 0.3).sin() + (z as f32 * 0.2).cos()) * 8.0);
    let tree = KdTree::build(&mesh).unwrap();
    tree.validate(&mesh).unwrap();
    assert!(tree.stats().slabs > 0, "{:?}", tree.stats());
    let (view, brute) = (tree.with(&mesh), BruteForceTriangles(&mesh));
    // Shallow rays skimming the hills, both ways along each axis, and steep ones.
    for i in 0..400 {
        let f = i as f32;
        let dir = Vector3::new((f * 0.7).cos(), -0.05 - (i % 5) as f32 * 0.3, (f * 0.7).sin());
        let ray = Ray::new(Point3::new(32.0 - dir.x * 40.0, 9.0, 32.0 - dir.z * 40.0), dir);
        for culling in [Culling::None, Culling::BackFaces] {
            assert_eq!(
                view.cast_ray(&ray, f32::INFINITY, culling),
                brute.cast_ray(&ray, f32::INFINITY, culling)
            );
            let up = Ray::new(Point3::new(ray.origin.x, -20.0, ray.origin.z), -dir);
            assert_eq!(
                view.cast_ray(&up, f32::INFINITY, culling),
                brute.cast_ray(&up, f32::INFINITY, culling)
            );
        }
    }
}

/// A hit exactly at `max_t` far from the origin: the ray enters the tree's bounds through the
/// face its triangle lies in, where the bounds' crossing rounds past the triangle's `t` by more
/// than a margin relative to the extent alone (a wall of a terrain chunk at voxel x −9538.75).
#[test]
fn a_hit_at_max_t_far_from_the_origin_is_found() {
    let p = |x: f32, y: f32, z: f32| Point3::new(x, y, z);
    let mesh = TriangleMesh {
        positions: vec![
            p(-9538.75, 3701.25, -25382.0),
            p(-9538.75, 3701.8564, -25382.0),
            p(-9538.75, 3701.25, -25383.0),
        ],
        triangles: vec![[0, 1, 2]],
    };
    let tree = KdTree::build(&mesh).unwrap();
    let ray =
        Ray::new(p(-9540.537, 3701.918, -25382.654), Vector3::new(0.47199625, -0.036318973, 0.16093634));
    let (fast, slow) = (tree.with(&mesh), BruteForceTriangles(&mesh));
    let hit = slow.cast_ray(&ray, f32::INFINITY, Culling::None).unwrap();
    assert_eq!(fast.cast_ray(&ray, hit.t, Culling::None), Some(hit));
    assert!(fast.ray_hits_any(&ray, hit.t, Culling::None));
}
