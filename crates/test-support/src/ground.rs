//! Random ground for differential tests: a box of voxels whose surface is a signed distance field
//! built from the shapes that break collision code — sharp ridges and crests (20–90°), creases,
//! bowls, slopes of 30–60°, overhangs, thin walls and thin necks — placed anywhere, far from the
//! origin too. The same seed gives the same ground everywhere.

use crate::Rng;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Material, MaterialTable, Region, Voxel, VoxelPos, materials as m};

/// One shape of the ground, in voxel units relative to the window's minimum corner. Distances are
/// negative inside the solid.
#[derive(Clone, Debug, PartialEq)]
pub enum Feature {
    /// Solid under a plane through `point` with upward unit `normal` (a slope of the normal's
    /// angle from vertical).
    Slope {
        /// A point on the plane.
        point: Point3<f32>,
        /// Its unit normal, out of the solid.
        normal: Vector3<f32>,
    },
    /// Solid added under two planes meeting at a crest through `apex` along `along`, the solid's
    /// angle between them `angle` degrees.
    Ridge {
        /// A point of the crest line.
        apex: Point3<f32>,
        /// The crest's horizontal unit direction.
        along: Vector3<f32>,
        /// The interior angle at the crest, degrees.
        angle: f32,
    },
    /// A V-shaped groove cut down to `apex`, its walls `angle` degrees apart (a concave crease).
    Crease {
        /// A point of the groove's bottom line.
        apex: Point3<f32>,
        /// The groove's horizontal unit direction.
        along: Vector3<f32>,
        /// The angle between the walls, degrees.
        angle: f32,
    },
    /// A spherical bowl cut out.
    Bowl {
        /// Center.
        center: Point3<f32>,
        /// Radius.
        radius: f32,
    },
    /// A sphere of solid added (a hill, or a knob on a neck).
    Hill {
        /// Center.
        center: Point3<f32>,
        /// Radius.
        radius: f32,
    },
    /// A box of solid added: a thin wall standing on the ground, or a slab reaching out over air
    /// (an overhang).
    Block {
        /// Minimum corner.
        min: Point3<f32>,
        /// Maximum corner.
        max: Point3<f32>,
    },
    /// A thin vertical post (a neck), a capsule of `radius` between two heights.
    Post {
        /// Bottom of its core.
        base: Point3<f32>,
        /// Height of its core.
        height: f32,
        /// Radius.
        radius: f32,
    },
}

impl Feature {
    /// The signed distance (or a bound on it with the right sign) at `p`.
    pub fn distance(&self, p: &Point3<f32>) -> f32 {
        let up = Vector3::y();
        match self {
            Feature::Slope { point, normal } => (p - point).dot(normal),
            Feature::Ridge { apex, along, angle } => {
                let side = up.cross(along);
                let (s, c) = (angle.to_radians() / 2.0).sin_cos();
                let (a, b) = (side * c + up * s, -side * c + up * s);
                (p - apex).dot(&a).max((p - apex).dot(&b))
            }
            Feature::Crease { apex, along, angle } => {
                let side = up.cross(along);
                let (s, c) = (angle.to_radians() / 2.0).sin_cos();
                // The walls face into the groove: solid under either wall's plane.
                let (a, b) = (side * c + up * s, -side * c + up * s);
                (p - apex).dot(&a).min((p - apex).dot(&b))
            }
            Feature::Bowl { center, radius } => radius - (p - center).norm(),
            Feature::Hill { center, radius } => (p - center).norm() - radius,
            Feature::Block { min, max } => {
                let c = (min.coords + max.coords) / 2.0;
                let h = (max.coords - min.coords) / 2.0;
                let q = (p.coords - c).abs() - h;
                q.map(|v| v.max(0.0)).norm() + q.max().min(0.0)
            }
            Feature::Post { base, height, radius } => {
                let y = (p.y - base.y).clamp(0.0, *height);
                (p - Point3::new(base.x, base.y + y, base.z)).norm() - radius
            }
        }
    }

    /// Whether the feature removes solid (cut) rather than adds it.
    fn cuts(&self) -> bool {
        matches!(self, Feature::Crease { .. } | Feature::Bowl { .. })
    }
}

/// A window of random ground: its voxels and how they were made.
#[derive(Clone, Debug)]
pub struct Ground {
    /// The voxels' box (world voxel coordinates).
    pub region: Region,
    /// One voxel per position of `region`, in its buffer order.
    pub voxels: Vec<Voxel>,
    /// What shapes it, in order: the first is the base slope, the rest are added or cut.
    pub features: Vec<Feature>,
    /// The solid's material.
    pub material: Material,
}

impl Ground {
    /// The signed distance at `p` (voxel units relative to the window's minimum corner).
    pub fn distance(&self, p: &Point3<f32>) -> f32 {
        let mut d = f32::INFINITY;
        for (i, f) in self.features.iter().enumerate() {
            let e = f.distance(p);
            d = if i == 0 {
                e
            } else if f.cuts() {
                d.max(e)
            } else {
                d.min(e)
            };
        }
        d
    }
}

/// What a window may hold.
#[derive(Clone, Copy, Debug)]
pub struct GroundOptions {
    /// The window's size in voxels.
    pub size: [u32; 3],
    /// How far from the world's origin its corner may be (voxels, per horizontal axis).
    pub far: i32,
}

impl Default for GroundOptions {
    fn default() -> Self {
        GroundOptions { size: [40, 36, 40], far: 50_000 }
    }
}

/// A random unit horizontal direction.
fn heading(rng: &mut Rng) -> Vector3<f32> {
    let a = rng.range(0.0, std::f32::consts::TAU);
    Vector3::new(a.cos(), 0.0, a.sin())
}

/// A window of ground from `seed`: a base slope (flat to 60°) and one to four features on it,
/// at a corner near the origin or up to `options.far` voxels from it.
pub fn random_ground(seed: u64, options: GroundOptions) -> Ground {
    let mut rng = Rng::new(seed);
    let [sx, sy, sz] = options.size.map(|v| v as f32);
    let far = if rng.below(3) == 0 { 0 } else { options.far.max(0) as u32 };
    let mut corner = |n: u32| if n == 0 { rng.coord(64) - 32 } else { rng.coord(2 * n + 1) - n as i32 };
    let min = VoxelPos::new(corner(far), corner(far.min(4000)), corner(far));
    let region = Region::from_min_size(min, options.size).expect("a window inside the i32 space");
    let middle = Point3::new(sx / 2.0, sy * 0.45, sz / 2.0);
    // Flat to 60°: half the windows slope 30–60°, as steep ground is where bodies slide.
    let tilt = if rng.below(2) == 0 { rng.range(0.0, 30.0) } else { rng.range(30.0, 60.0) }.to_radians();
    let dir = heading(&mut rng);
    let normal = Vector3::y() * tilt.cos() + dir * tilt.sin();
    let base = Feature::Slope { point: middle, normal };
    let mut features = vec![base.clone()];
    // Where the base surface is over (x, z): on the plane.
    let ground_y =
        |x: f32, z: f32| middle.y - ((x - middle.x) * normal.x + (z - middle.z) * normal.z) / normal.y;
    let count = 1 + rng.below(4);
    for _ in 0..count {
        let (x, z) = (rng.range(sx * 0.2, sx * 0.8), rng.range(sz * 0.2, sz * 0.8));
        let y = ground_y(x, z).clamp(sy * 0.2, sy * 0.7);
        let at = Point3::new(x, y, z);
        let f = match rng.below(7) {
            0 => Feature::Ridge {
                apex: at + Vector3::y() * rng.range(3.0, 9.0),
                along: heading(&mut rng),
                angle: rng.range(20.0, 90.0),
            },
            1 => Feature::Crease {
                apex: at - Vector3::y() * rng.range(2.0, 6.0),
                along: heading(&mut rng),
                angle: rng.range(40.0, 150.0),
            },
            2 => Feature::Bowl {
                center: at + Vector3::y() * rng.range(-1.0, 3.0),
                radius: rng.range(3.0, 8.0),
            },
            3 => {
                Feature::Hill { center: at - Vector3::y() * rng.range(0.0, 3.0), radius: rng.range(2.0, 6.0) }
            }
            4 => {
                // A thin wall standing on the ground.
                let (long, thin) = (rng.range(4.0, 14.0), rng.range(0.8, 2.0));
                let (hx, hz) = if rng.below(2) == 0 { (long, thin) } else { (thin, long) };
                let h = rng.range(3.0, 9.0);
                Feature::Block {
                    min: Point3::new(x - hx / 2.0, y - 3.0, z - hz / 2.0),
                    max: Point3::new(x + hx / 2.0, y + h, z + hz / 2.0),
                }
            }
            5 => {
                // A slab over air: an overhang reaching out from a hill.
                let h = rng.range(3.0, 7.0);
                let (w, t) = (rng.range(4.0, 10.0), rng.range(1.0, 3.0));
                features.push(Feature::Hill { center: at, radius: rng.range(2.5, 4.0) });
                Feature::Block {
                    min: Point3::new(x - w / 2.0, y + h, z - w / 2.0),
                    max: Point3::new(x + w / 2.0, y + h + t, z + w / 2.0),
                }
            }
            _ => {
                // A knob on a thin neck.
                let (r, h) = (rng.range(0.6, 1.3), rng.range(3.0, 8.0));
                features.push(Feature::Post { base: at - Vector3::y() * 2.0, height: h + 2.0, radius: r });
                Feature::Hill { center: at + Vector3::y() * h, radius: rng.range(1.5, 3.0) }
            }
        };
        features.push(f);
    }
    let material = [m::ROCK, m::GRASS, m::BASALT, m::BRICK][rng.below(4) as usize];
    ground_from(region, features, material)
}

/// The ground `features` make in `region` (the first a base, the rest added or cut, as
/// [`Ground::distance`] says), of `material`: each voxel covered by `clamp(0.5 − d, 0, 1)` of its
/// center's signed distance `d`, so the surface lies where the distance is zero.
pub fn ground_from(region: Region, features: Vec<Feature>, material: Material) -> Ground {
    let min = region.min();
    let mut ground = Ground { region, voxels: Vec::new(), features, material };
    ground.voxels = region
        .iter()
        .map(|p: VoxelPos| {
            let local = (p - min).map(|v| v as f32 + 0.5);
            let occupancy = 0.5 - ground.distance(&Point3::from(local));
            if occupancy > 0.0 { Voxel::with_occupancy(material, occupancy.min(1.0)) } else { Voxel::AIR }
        })
        .collect();
    ground
}

/// The default table knows every material the ground uses.
pub fn table() -> MaterialTable {
    MaterialTable::default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_ground() {
        let o = GroundOptions { size: [16, 16, 16], far: 1000 };
        let (a, b) = (random_ground(5, o), random_ground(5, o));
        assert_eq!((a.region, &a.voxels, &a.features), (b.region, &b.voxels, &b.features));
        assert_ne!(random_ground(6, o).voxels, a.voxels);
    }

    #[test]
    fn a_ridge_has_the_flank_normals_of_its_angle() {
        let r = Feature::Ridge { apex: Point3::origin(), along: Vector3::z(), angle: 50.0 };
        // One unit up the left flank's normal from a point on the flank.
        let n = Vector3::new(-0.9063, 0.4226, 0.0);
        let on = Point3::new(-0.4226, -0.9063, 0.0);
        assert!(r.distance(&on).abs() < 1e-3);
        assert!((r.distance(&(on + n)) - 1.0).abs() < 1e-3);
        assert!(r.distance(&Point3::new(0.0, -1.0, 0.0)) < 0.0);
    }

    #[test]
    fn windows_hold_solid_and_air() {
        for seed in 0..20 {
            let g = random_ground(seed, GroundOptions::default());
            let solid = g.voxels.iter().filter(|v| !v.is_air()).count();
            assert!(solid > g.voxels.len() / 10 && solid < g.voxels.len(), "seed {seed}: {solid}");
        }
    }
}
