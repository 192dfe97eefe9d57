//! A case of the differential harness: a window of random ground as a terrain (edited across chunk
//! seams half the time), its triangles in f64 world units for the references, the shapes and
//! poses probed against it, and the tolerances every check shares.

use voxterra::core::nalgebra::{Isometry3, Point3, Translation3, UnitQuaternion, Vector3};
use voxterra::core::{Aabb, PhysicsChunkKey, TriangleSource};
use voxterra::parry3d::math::{Pose, Vector};
use voxterra::parry3d::shape::SharedShape;
use voxterra::prelude::ToParry;
use voxterra::store::VoxelStore;
use voxterra::{Brush, BrushOp, BrushShape, PrepareBudget, Terrain, TerrainConfig};
use voxterra_test_support::Rng;
use voxterra_test_support::ground::{Ground, GroundOptions, random_ground, table};
use voxterra_test_support::reference::{P, Polytope, Tri, V, normal, tri64};

/// Voxel sizes the cases use.
pub const VOXEL_SIZES: [f32; 3] = [0.5, 1.0, 2.0];

/// The tolerance of a length compared with its exact value (world units): 5 mm, plus 0.4% of the
/// shape's reach (the documented 5° inactive-edge correction moves a contact by at most
/// `r (1 − cos 5°)`), plus four f32 spacings of the coordinates involved (the queries run in f32
/// on coordinates up to `magnitude`).
pub fn tolerance(reach: f64, magnitude: f64) -> f64 {
    0.005 + 0.004 * reach + 4.0 * spacing(magnitude)
}

/// The f32 spacing at `magnitude`.
pub fn spacing(magnitude: f64) -> f64 {
    let m = magnitude.abs().max(1.0) as f32;
    f64::from(f32::from_bits(m.to_bits() + 1) - m)
}

/// One case: a terrain over random ground and its triangles.
pub struct Scene {
    /// The case's seed: everything below follows from it.
    pub seed: u64,
    /// World units per voxel.
    pub voxel_size: f32,
    /// The ground it was made from.
    pub ground: Ground,
    /// The terrain, its collision cache fully built (warm).
    pub terrain: Terrain,
    /// Every triangle of the terrain's physics meshes, world units, f64.
    pub tris: Vec<Tri>,
    /// Each triangle's box, for picking the ones near a probe.
    pub boxes: Vec<(P, P)>,
    /// Each triangle's position in `tris`, by its chunk and index in its mesh.
    index: std::collections::HashMap<(PhysicsChunkKey, u32), usize>,
    /// What edits were made after the ground was written (for reports).
    pub edits: Vec<Brush>,
    /// Triangles by the cells of a grid over X and Z they cover (for rays going up).
    columns: std::collections::HashMap<(i64, i64), Vec<u32>>,
    /// The grid's cell size (world units).
    cell: f64,
}

/// The same voxels as `scene`, its cache empty and kept small: every query builds what it meets.
pub fn cold_terrain(scene: &Scene) -> Terrain {
    build_terrain(&scene.ground, scene.voxel_size, &scene.edits, 64 << 10)
}

fn build_terrain(ground: &Ground, voxel_size: f32, edits: &[Brush], cache_bytes: usize) -> Terrain {
    let mut store = VoxelStore::new();
    store.write_box(&ground.region, &ground.voxels).expect("the window fits the store");
    let config = TerrainConfig { cache_bytes, ..TerrainConfig::with_voxel_size(voxel_size) };
    let mut t = Terrain::from_store(store, table(), config).expect("a valid terrain");
    for b in edits {
        t.apply_brush(b).expect("a valid brush");
    }
    t
}

impl Scene {
    /// The case of `seed`.
    pub fn new(seed: u64) -> Scene {
        let mut rng = Rng::new(seed ^ 0x005e_ed0f_9a11);
        let voxel_size = VOXEL_SIZES[rng.below(3) as usize];
        let ground = random_ground(seed, GroundOptions::default());
        // Half the cases are edited across chunk seams: craters and hills centred on a physics
        // chunk corner (multiples of 8 voxels), so their surfaces cross several chunks' meshes.
        let mut edits = Vec::new();
        if rng.below(2) == 0 {
            let min = ground.region.min();
            let size = ground.region.size();
            for _ in 0..1 + rng.below(3) {
                let mut seam = |a: usize| {
                    let lo = min[a] + 4;
                    let c = lo + rng.coord(size[a].saturating_sub(8).max(1));
                    ((c.div_euclid(8) * 8) as f32 + rng.range(-0.5, 0.5)) * voxel_size
                };
                let center = Point3::new(seam(0), seam(1), seam(2));
                let radius = rng.range(1.5, 5.0) * voxel_size;
                let op = if rng.below(2) == 0 { BrushOp::Subtract } else { BrushOp::Add(ground.material) };
                edits.push(Brush { shape: BrushShape::Sphere { center, radius }, op });
            }
        }
        Scene::from_ground(seed, ground, voxel_size, edits)
    }

    /// The case of `ground` at `voxel_size` with `edits` made after it (`seed` names it).
    pub fn from_ground(seed: u64, ground: Ground, voxel_size: f32, edits: Vec<Brush>) -> Scene {
        let terrain = build_terrain(&ground, voxel_size, &edits, 256 << 20);
        let extent = terrain.extent().expect("the window holds voxels");
        let world = Aabb::new(
            extent.min().map(|v| (v - 2) as f32 * voxel_size),
            extent.max().map(|v| (v + 2) as f32 * voxel_size),
        );
        terrain.prepare(&[world], PrepareBudget::UNLIMITED);
        let (mut tris, mut boxes, mut ids) = (Vec::new(), Vec::new(), Vec::new());
        for key in terrain.cached_chunks() {
            let Some(Some(c)) = terrain.cached_chunk(key) else { continue };
            for i in 0..c.mesh.triangle_count() {
                let t = tri64(&c.mesh.triangle(i), f64::from(voxel_size));
                let lo = P::new(
                    t[0].x.min(t[1].x).min(t[2].x),
                    t[0].y.min(t[1].y).min(t[2].y),
                    t[0].z.min(t[1].z).min(t[2].z),
                );
                let hi = P::new(
                    t[0].x.max(t[1].x).max(t[2].x),
                    t[0].y.max(t[1].y).max(t[2].y),
                    t[0].z.max(t[1].z).max(t[2].z),
                );
                tris.push(t);
                boxes.push((lo, hi));
                ids.push((key, i as u32));
            }
        }
        let cell = f64::from(voxel_size);
        let mut columns: std::collections::HashMap<(i64, i64), Vec<u32>> = std::collections::HashMap::new();
        for (i, (lo, hi)) in boxes.iter().enumerate() {
            for x in (lo.x / cell).floor() as i64..=(hi.x / cell).floor() as i64 {
                for z in (lo.z / cell).floor() as i64..=(hi.z / cell).floor() as i64 {
                    columns.entry((x, z)).or_default().push(i as u32);
                }
            }
        }
        let index = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
        Scene { seed, voxel_size, ground, terrain, tris, boxes, index, edits, columns, cell }
    }

    /// The position in [`Scene::tris`] of triangle `triangle` of `chunk`'s mesh.
    pub fn triangle_index(&self, chunk: PhysicsChunkKey, triangle: u32) -> Option<usize> {
        self.index.get(&(chunk, triangle)).copied()
    }

    /// Whether `p` lies inside the solid: by the parity of the surface crossings of three rays
    /// going up (the window's mesh is closed), the majority of them. Independent of any normal,
    /// so slivers and folded triangles do not sway it.
    pub fn inside(&self, p: &P) -> bool {
        let dirs = [V::new(1e-3, 1.0, 3e-4), V::new(-4e-4, 1.0, 7e-4), V::new(2e-4, 1.0, -9e-4)];
        let votes = dirs
            .iter()
            .filter(|d| {
                let mut seen = std::collections::HashSet::new();
                let (x0, z0) = ((p.x / self.cell).floor() as i64, (p.z / self.cell).floor() as i64);
                let mut crossings = 0;
                // The rays lean by at most 1e-3: over the window's height they stay within a cell.
                for x in x0 - 1..=x0 + 1 {
                    for z in z0 - 1..=z0 + 1 {
                        for &t in self.columns.get(&(x, z)).into_iter().flatten() {
                            if seen.insert(t)
                                && voxterra_test_support::reference::ray_triangle(
                                    p,
                                    d,
                                    &self.tris[t as usize],
                                )
                                .is_some_and(|(s, m)| s > 0.0 && m >= 0.0)
                            {
                                crossings += 1;
                            }
                        }
                    }
                }
                crossings % 2 == 1
            })
            .count();
        votes >= 2
    }

    /// The signed distance from `p` to the surface (negative inside): the nearest of `near`, the
    /// side by [`Scene::inside`]. `None` without triangles.
    pub fn signed_distance(&self, p: &P, near: &[Tri]) -> Option<f64> {
        let d = near
            .iter()
            .filter(|t| normal(t).is_some())
            .map(|t| voxterra_test_support::reference::point_triangle_distance(p, t))
            .reduce(f64::min)?;
        Some(if self.inside(p) { -d } else { d })
    }

    /// The triangles whose boxes come within `reach` of `center` (world units).
    pub fn near(&self, center: &P, reach: f64) -> Vec<Tri> {
        self.tris
            .iter()
            .zip(&self.boxes)
            .filter(|(_, (lo, hi))| (0..3).all(|a| center[a] >= lo[a] - reach && center[a] <= hi[a] + reach))
            .map(|(t, _)| *t)
            .collect()
    }

    /// A random point on a random triangle with the triangle's unit normal (world units), away
    /// from degenerate slivers.
    pub fn surface_point(&self, rng: &mut Rng) -> (P, V) {
        loop {
            let t = &self.tris[rng.below(self.tris.len() as u64) as usize];
            let Some(n) = normal(t) else { continue };
            let (mut u, mut v) = (f64::from(rng.range(0.0, 1.0)), f64::from(rng.range(0.0, 1.0)));
            if u + v > 1.0 {
                (u, v) = (1.0 - u, 1.0 - v);
            }
            return (t[0] + (t[1] - t[0]) * u + (t[2] - t[0]) * v, n);
        }
    }

    /// A one-line description for a disagreement report.
    pub fn describe(&self) -> String {
        format!(
            "seed {} (voxel size {}, window at {:?}, material {:?}, {} features, {} edits)",
            self.seed,
            self.voxel_size,
            self.ground.region.min(),
            self.ground.material,
            self.ground.features.len(),
            self.edits.len()
        )
    }
}

/// The kinds of shape every capability is checked with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Ball,
    Capsule,
    Cuboid,
    Hull,
}

impl Kind {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Ball => "ball",
            Kind::Capsule => "capsule",
            Kind::Cuboid => "cuboid",
            Kind::Hull => "hull",
        }
    }
}

/// Every kind, in order.
pub const KINDS: [Kind; 4] = [Kind::Ball, Kind::Capsule, Kind::Cuboid, Kind::Hull];

/// A shape for the queries and its exact f64 description at a pose (world units).
pub struct Probe {
    pub kind: Kind,
    pub shape: SharedShape,
    pub pose: Pose,
    /// The shape's bounding radius about its pose's origin.
    pub reach: f64,
}

/// The exact shape at its pose.
pub enum Exact {
    /// A ball: centre and radius.
    Ball(P, f64),
    /// A capsule: core segment and radius.
    Capsule(P, P, f64),
    /// A convex polytope (cuboids and hulls).
    Polytope(Polytope),
}

/// A random shape of `kind`, sized 0.15–2 voxels, at `center` with a random rotation.
pub fn random_probe(rng: &mut Rng, kind: Kind, voxel_size: f32, center: &P) -> Probe {
    let s = |rng: &mut Rng| rng.range(0.15, 2.0) * voxel_size;
    let shape = match kind {
        Kind::Ball => SharedShape::ball(s(rng)),
        Kind::Capsule => SharedShape::capsule_y(s(rng) * 0.8, s(rng) * 0.5),
        Kind::Cuboid => SharedShape::cuboid(s(rng) * 0.7, s(rng) * 0.7, s(rng) * 0.7),
        Kind::Hull => {
            // 14 points on an ellipsoid: a rock.
            let axes = [s(rng), s(rng) * 0.8, s(rng)];
            let points: Vec<Vector> = (0..14)
                .map(|_| {
                    let d = Vector3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
                    let d = d.try_normalize(1e-3).unwrap_or_else(Vector3::x);
                    Vector::new(d.x * axes[0], d.y * axes[1], d.z * axes[2])
                })
                .collect();
            SharedShape::convex_hull(&points).expect("a hull of points spread on an ellipsoid")
        }
    };
    let rotation = match kind {
        Kind::Ball => UnitQuaternion::identity(),
        _ => UnitQuaternion::from_euler_angles(
            rng.range(-3.2, 3.2),
            rng.range(-3.2, 3.2),
            rng.range(-3.2, 3.2),
        ),
    };
    let at = center.map(|v| v as f32);
    let pose = Isometry3::from_parts(Translation3::from(at.coords), rotation).to_parry();
    let sphere = shape.compute_local_bounding_sphere();
    let reach = f64::from(sphere.center.length() + sphere.radius);
    Probe { kind, shape, pose, reach }
}

impl Probe {
    /// The probe moved to `pose`.
    pub fn at(&self, pose: Pose) -> Probe {
        Probe { kind: self.kind, shape: self.shape.clone(), pose, reach: self.reach }
    }

    /// Where its pose puts its origin, in f64.
    pub fn center(&self) -> P {
        let t = self.pose.translation;
        P::new(f64::from(t.x), f64::from(t.y), f64::from(t.z))
    }

    /// The exact shape at its pose, in f64 (from the f32 pose, exactly as the queries read it).
    pub fn exact(&self) -> Exact {
        let place = |v: Vector| -> P {
            // The rotation applied in f64 from the f32 quaternion.
            let q = self.pose.rotation;
            let q = voxterra::core::nalgebra::Quaternion::new(
                f64::from(q.w),
                f64::from(q.x),
                f64::from(q.y),
                f64::from(q.z),
            );
            let q = UnitQuaternion::from_quaternion(q);
            self.center() + q * V::new(f64::from(v.x), f64::from(v.y), f64::from(v.z))
        };
        match self.kind {
            Kind::Ball => Exact::Ball(self.center(), f64::from(self.shape.as_ball().expect("a ball").radius)),
            Kind::Capsule => {
                let c = self.shape.as_capsule().expect("a capsule");
                Exact::Capsule(place(c.segment.a), place(c.segment.b), f64::from(c.radius))
            }
            Kind::Cuboid => {
                let h = self.shape.as_cuboid().expect("a cuboid").half_extents;
                let corners = (0..8)
                    .map(|i| {
                        let sign = |bit: u32| if i >> bit & 1 == 1 { 1.0 } else { -1.0 };
                        place(Vector::new(h.x * sign(0), h.y * sign(1), h.z * sign(2)))
                    })
                    .collect();
                Exact::Polytope(Polytope::new(corners))
            }
            Kind::Hull => {
                let hull = self.shape.as_convex_polyhedron().expect("a hull");
                Exact::Polytope(Polytope::new(hull.points().iter().map(|&p| place(p)).collect()))
            }
        }
    }

    /// The largest coordinate magnitude the probe's queries compute with.
    pub fn magnitude(&self) -> f64 {
        self.center().coords.amax() + self.reach
    }
}

impl Exact {
    /// A short description for reports.
    pub fn describe(&self) -> String {
        match self {
            Exact::Ball(c, r) => format!("ball {c:?} r {r}"),
            Exact::Capsule(a, b, r) => format!("capsule {a:?}–{b:?} r {r}"),
            Exact::Polytope(p) => format!("polytope {:?}", p.points),
        }
    }

    /// The distance to triangle `t` (0 when touching or overlapping).
    pub fn distance(&self, t: &Tri) -> f64 {
        use voxterra_test_support::reference::{point_triangle_distance, segment_triangle_distance};
        match self {
            Exact::Ball(c, r) => (point_triangle_distance(c, t) - r).max(0.0),
            Exact::Capsule(a, b, r) => (segment_triangle_distance(a, b, t) - r).max(0.0),
            Exact::Polytope(p) => p.distance(t),
        }
    }

    /// The shape's core point: where it is inside or outside the solid.
    pub fn core(&self) -> P {
        match self {
            Exact::Ball(c, _) => *c,
            Exact::Capsule(a, b, _) => Point3::from((a.coords + b.coords) / 2.0),
            Exact::Polytope(p) => Point3::from(
                p.points.iter().fold(V::zeros(), |acc, q| acc + q.coords) / p.points.len() as f64,
            ),
        }
    }
}
