//! Brushes: shapes in world units and what they do to the voxels they cover.
//!
//! A brush covers a voxel by `clamp(0.5 − d, 0, 1)`, where `d` is the signed distance (in voxels,
//! negative inside) from the voxel's center to the shape: the surface the brush leaves lies on the
//! shape's boundary, where occupancy crosses one half, with one voxel of smooth falloff.

use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Material, Region, Voxel, VoxelPos};

/// A brush's shape, in world units (the terrain's voxel size converts).
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum BrushShape {
    /// A ball.
    Sphere {
        /// Center.
        center: Point3<f32>,
        /// Radius (> 0).
        radius: f32,
    },
    /// An axis-aligned box.
    Box {
        /// Minimum corner.
        min: Point3<f32>,
        /// Maximum corner (≥ `min` on every axis).
        max: Point3<f32>,
    },
    /// A segment swept by a ball.
    Capsule {
        /// One end of the core segment.
        a: Point3<f32>,
        /// The other end.
        b: Point3<f32>,
        /// Radius (> 0).
        radius: f32,
    },
}

/// What a brush does where it covers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BrushOp {
    /// Adds matter of this material: occupancy rises to the brush's coverage; voxels the brush
    /// dominates take its material.
    Add(Material),
    /// Removes matter: occupancy falls to one minus the coverage.
    Subtract,
    /// Repaints the covered matter, occupancy unchanged.
    Paint(Material),
    /// Blends occupancy toward the mean of the 3×3×3 neighborhood, by half the coverage.
    Smooth,
}

/// A brush: a shape and an operation.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct Brush {
    /// Where it acts.
    pub shape: BrushShape,
    /// What it does.
    pub op: BrushOp,
}

impl BrushShape {
    /// The shape scaled from world units to voxels; `None` when a parameter is not finite, a
    /// radius not positive or a box inverted.
    pub(crate) fn in_voxels(&self, voxel_size: f32) -> Option<BrushShape> {
        let k = 1.0 / voxel_size;
        let finite = |p: &Point3<f32>| p.iter().all(|v| v.is_finite());
        let s = match *self {
            BrushShape::Sphere { center, radius } => (finite(&center) && radius.is_finite() && radius > 0.0)
                .then(|| BrushShape::Sphere { center: center * k, radius: radius * k }),
            BrushShape::Box { min, max } => {
                (finite(&min) && finite(&max) && (0..3).all(|i| min[i] <= max[i]))
                    .then(|| BrushShape::Box { min: min * k, max: max * k })
            }
            BrushShape::Capsule { a, b, radius } => {
                (finite(&a) && finite(&b) && radius.is_finite() && radius > 0.0)
                    .then(|| BrushShape::Capsule { a: a * k, b: b * k, radius: radius * k })
            }
        }?;
        // Scaling may overflow to infinity.
        s.bounds().iter().all(|v| v.is_finite()).then_some(s)
    }

    /// `[min x, min y, min z, max x, max y, max z]` in the shape's units.
    fn bounds(&self) -> [f32; 6] {
        let (lo, hi) = match *self {
            BrushShape::Sphere { center, radius } => {
                (center - Vector3::repeat(radius), center + Vector3::repeat(radius))
            }
            BrushShape::Box { min, max } => (min, max),
            BrushShape::Capsule { a, b, radius } => {
                (a.inf(&b) - Vector3::repeat(radius), a.sup(&b) + Vector3::repeat(radius))
            }
        };
        [lo.x, lo.y, lo.z, hi.x, hi.y, hi.z]
    }

    /// The voxels the brush (in voxel units) can change: its box grown by a voxel for the falloff,
    /// `None` if that leaves the i32 voxel space.
    pub(crate) fn region(&self) -> Option<Region> {
        let b = self.bounds();
        let lo = |v: f32| (v - 1.0).floor();
        let hi = |v: f32| (v + 1.0).ceil() + 1.0;
        let fits = |v: f32| (i32::MIN as f32..=i32::MAX as f32).contains(&v);
        let (mins, maxs) = ([lo(b[0]), lo(b[1]), lo(b[2])], [hi(b[3]), hi(b[4]), hi(b[5])]);
        if !mins.iter().chain(&maxs).all(|&v| fits(v)) {
            return None;
        }
        Region::new(
            VoxelPos::new(mins[0] as i32, mins[1] as i32, mins[2] as i32),
            VoxelPos::new(maxs[0] as i32, maxs[1] as i32, maxs[2] as i32),
        )
        .ok()
    }

    /// Signed distance (voxel units, negative inside) from `p`.
    fn distance(&self, p: &Point3<f32>) -> f32 {
        match *self {
            BrushShape::Sphere { center, radius } => (p - center).norm() - radius,
            BrushShape::Box { min, max } => {
                let c = nalgebra_center(&min, &max);
                let h = (max - min) * 0.5;
                let q = (p - c).abs() - h;
                q.sup(&Vector3::zeros()).norm() + q.max().min(0.0)
            }
            BrushShape::Capsule { a, b, radius } => {
                let ab = b - a;
                let t = if ab.norm_squared() > 0.0 {
                    ((p - a).dot(&ab) / ab.norm_squared()).clamp(0.0, 1.0)
                } else {
                    0.0
                };
                (p - (a + ab * t)).norm() - radius
            }
        }
    }

    /// How much the brush covers voxel `v`: 1 well inside, 0 well outside, linear across its
    /// boundary.
    pub(crate) fn coverage(&self, v: VoxelPos) -> f32 {
        let c = Point3::new(v.x as f32 + 0.5, v.y as f32 + 0.5, v.z as f32 + 0.5);
        (0.5 - self.distance(&c)).clamp(0.0, 1.0)
    }
}

fn nalgebra_center(a: &Point3<f32>, b: &Point3<f32>) -> Point3<f32> {
    voxterra_core::nalgebra::center(a, b)
}

/// The voxel `old` becomes under `op` at coverage `cover` (not for [`BrushOp::Smooth`], which needs
/// the neighborhood).
pub(crate) fn apply(op: BrushOp, old: Voxel, cover: f32) -> Voxel {
    if cover <= 0.0 {
        return old;
    }
    match op {
        BrushOp::Add(m) => {
            if cover > old.occupancy() {
                Voxel::with_occupancy(m, cover)
            } else {
                old
            }
        }
        BrushOp::Subtract => {
            let keep = 1.0 - cover;
            if keep < old.occupancy() { Voxel::with_occupancy(old.material(), keep) } else { old }
        }
        BrushOp::Paint(m) => {
            if old.is_air() {
                old
            } else {
                Voxel::new(m, old.occupancy_byte())
            }
        }
        BrushOp::Smooth => old,
    }
}

/// Smoothing: the voxel blended by half the coverage toward the mean occupancy of its 3×3×3
/// neighborhood (`around`), taking the neighborhood's most common matter where it was Air.
pub(crate) fn smooth(old: Voxel, around: &[Voxel; 27], cover: f32) -> Voxel {
    if cover <= 0.0 {
        return old;
    }
    let mean = around.iter().map(|v| v.occupancy()).sum::<f32>() / 27.0;
    let w = 0.5 * cover;
    let occ = old.occupancy() * (1.0 - w) + mean * w;
    let material = if old.is_air() {
        // The most common non-air material around (lowest id on ties), or nothing to grow.
        let mut counts = [0u8; Material::COUNT];
        for v in around.iter().filter(|v| !v.is_air()) {
            counts[v.material().id() as usize] += 1;
        }
        match (1..Material::COUNT).max_by_key(|&i| (counts[i], std::cmp::Reverse(i))) {
            Some(i) if counts[i] > 0 => Material::from_low_bits(i as u8),
            _ => return old,
        }
    } else {
        old.material()
    };
    Voxel::with_occupancy(material, occ)
}
