//! The demo's scene, the same for both backends: the world (with a flat plaza across chunk seams),
//! the bodies, the edits, and the measures taken of them (fall-throughs, ghost bumps, state hash).

use rapier3d::prelude::*;
use voxterra::convert::FromParry;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{Ray as VRay, Region, StoreChunkKey, Voxel, VoxelPos, VoxelRead, materials};
use voxterra::parry3d::math::Vector;
use voxterra::{Brush, BrushOp, BrushShape, Terrain};

/// A small deterministic generator (SplitMix64): the scene depends on the seed only.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[lo, hi)`.
    pub(crate) fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * ((self.next_u64() >> 40) as f32 / (1u64 << 24) as f32)
    }
}

/// Bodies per group: a crater is dug under one group at a time.
pub(crate) const GROUP: usize = 30;
/// Crater radius, voxels.
pub(crate) const CRATER_RADIUS: f32 = 6.0;
/// Hill radius, voxels.
pub(crate) const HILL_RADIUS: f32 = 5.0;
/// How far past the plaza bodies and edits keep away, voxels: the course lies along its side.
const COURSE_MARGIN: f32 = 16.0;
/// Bodies' speed across the plaza (m/s).
const SLIDE_SPEED: f32 = 7.0;

/// The flat plaza: a level slab across store- and physics-chunk seams where sliding boxes show
/// ghost bumps if a collider has them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plaza {
    pub(crate) min: [f32; 2],
    pub(crate) max: [f32; 2],
    /// The top of the slab.
    pub(crate) height: f32,
}

impl Plaza {
    /// Inside the plaza, `margin` voxels from its edges.
    pub(crate) fn contains(&self, x: f32, z: f32, margin: f32) -> bool {
        x >= self.min[0] + margin
            && x <= self.max[0] - margin
            && z >= self.min[1] + margin
            && z <= self.max[1] - margin
    }
}

/// The surface height under `(x, z)` (a ray from high above), or `None` over a hole.
pub(crate) fn ground_at(t: &Terrain, x: f32, z: f32) -> Option<f32> {
    let top = t.extent().map_or(256.0, |e| t.scale().region_to_world(&e, 0.0).maxs.y + 8.0);
    let down = VRay::new(Point3::new(x, top, z), -Vector3::y());
    t.cast_ray(&down, top + 1024.0).ok().flatten().map(|h| h.point.y)
}

/// Pages in the terrain within `r` of (`x`, `z`) over the world's height (a paged terrain's
/// loading screen for a part of the scene; nothing for one held whole).
pub(crate) fn page_around(t: &mut Terrain, x: f32, z: f32, r: f32) -> anyhow::Result<()> {
    if let (true, Some(b)) = (t.is_paged(), t.world_bounds()) {
        let w = t.scale().region_to_world(&b, 0.0);
        let around = voxterra::core::Aabb::new(
            Point3::new(x - r, w.mins.y, z - r),
            Point3::new(x + r, w.maxs.y, z + r),
        );
        t.page_in(&[around])?;
    }
    Ok(())
}

/// Levels the plaza: rock up to its height, air above, over a rectangle centered on a store-chunk
/// corner near the world's center.
pub(crate) fn build_plaza(t: &mut Terrain, size: [u32; 3]) -> anyhow::Result<Plaza> {
    let s = StoreChunkKey::SIZE as u32;
    let cx = ((size[0] / 2) / s * s) as f32;
    let cz = ((size[2] / 2) / s * s) as f32;
    // The plaza, the course and the overhang lie within this of the centre.
    page_around(t, cx, cz, 160.0)?;
    let h = ground_at(t, cx, cz).unwrap_or(size[1] as f32 * 0.5).round().clamp(8.0, size[1] as f32 - 24.0);
    let (min, max) = ([cx - 28.0, cz - 14.0], [cx + 28.0, cz + 14.0]);
    let slab = Brush {
        shape: BrushShape::Box { min: Point3::new(min[0], 1.0, min[1]), max: Point3::new(max[0], h, max[1]) },
        op: BrushOp::Add(materials::CONCRETE),
    };
    let air = Brush {
        shape: BrushShape::Box {
            min: Point3::new(min[0], h, min[1]),
            max: Point3::new(max[0], h + 40.0, max[1]),
        },
        op: BrushOp::Subtract,
    };
    t.apply_brush(&slab)?;
    t.apply_brush(&air)?;
    let height = ground_at(t, cx + 0.5, cz + 0.5).unwrap_or(h);
    Ok(Plaza { min, max, height })
}

/// The character's course: a strip along the plaza's far side, leveled at the plaza's height,
/// with a ramp up at 35°, a plateau and a ramp down, crossing store- and physics-chunk seams.
#[derive(Clone, Debug)]
pub(crate) struct Course {
    /// Where the character starts (the center of its capsule).
    pub(crate) start: Vector,
    /// The waypoints it walks through in turn, `(x, z)`, then back.
    pub(crate) route: Vec<(f32, f32)>,
    /// The ground raised across its way during the walk.
    pub(crate) mound: Brush,
}

/// The character's capsule: radius and half-height of its segment.
pub(crate) const CHARACTER: (f32, f32) = (0.3, 0.45);
/// The frame the mound rises across the course.
pub(crate) const MOUND_FRAME: usize = 150;

/// Builds the course next to the plaza (both runs build the same).
pub(crate) fn build_course(t: &mut Terrain, plaza: &Plaza) -> anyhow::Result<Course> {
    let (x0, z0, h) = (plaza.min[0], plaza.max[1], plaza.height.floor());
    let (x1, z1) = (plaza.max[0], z0 + 12.0);
    let level = Brush {
        shape: BrushShape::Box { min: Point3::new(x0, 1.0, z0), max: Point3::new(x1, h, z1) },
        op: BrushOp::Add(materials::CONCRETE),
    };
    // Open sky over the course, up to the world's top.
    let sky = t.extent().map_or(h + 40.0, |e| e.max().y as f32 + 1.0).max(h + 40.0);
    let air = Brush {
        shape: BrushShape::Box { min: Point3::new(x0, h, z0), max: Point3::new(x1, sky, z1) },
        op: BrushOp::Subtract,
    };
    t.apply_brush(&level)?;
    t.apply_brush(&air)?;
    // The ramps, a voxel column at a time: full rock under the surface, the top voxel filled to it.
    let rise = 35f32.to_radians().tan();
    let top = |x: f32| h + (x - 8.0).clamp(0.0, 8.0) * rise - (x - 24.0).clamp(0.0, 8.0) * rise;
    let (zmin, zmax) = (z0 as i32, z1 as i32 - 1);
    for i in 8..32 {
        let x = x0 as i32 + i;
        let surface = top(i as f32 + 0.5);
        let full = surface.floor() as i32;
        if full > h as i32 {
            let column = Region::new(VoxelPos::new(x, h as i32, zmin), VoxelPos::new(x, full - 1, zmax))?;
            t.fill(&column, Voxel::full(materials::ROCK))?;
        }
        let cap = Region::new(VoxelPos::new(x, full, zmin), VoxelPos::new(x, full, zmax))?;
        let part = surface - full as f32;
        t.fill(&cap, if part > 0.0 { Voxel::with_occupancy(materials::ROCK, part) } else { Voxel::AIR })?;
    }
    let zm = z0 + 6.0;
    let ground = ground_at(t, x0 + 2.0, zm).unwrap_or(h);
    Ok(Course {
        start: Vector::new(x0 + 2.0, ground + CHARACTER.0 + CHARACTER.1 + 0.2, zm),
        route: vec![(x1 - 2.0, zm), (x1 - 2.0, zm + 3.0), (x0 + 2.0, zm + 3.0), (x0 + 2.0, zm)],
        mound: Brush {
            shape: BrushShape::Sphere { center: Point3::new(x0 + 38.0, h - 4.8, zm), radius: 6.0 },
            op: BrushOp::Add(materials::ROCK),
        },
    })
}

/// A rock overhang beside the plaza: a pillar under a wide cap, on a pad at the plaza's height.
/// At [`OVERHANG_FRAME`] a crater cuts the pillar through, and the cap with the pillar's top
/// comes loose and falls.
#[derive(Clone, Debug)]
pub(crate) struct Overhang {
    /// The crater that cuts it loose.
    pub(crate) cut: Brush,
    /// The middle of the cap, where the picture looks from `--view overhang`.
    pub(crate) focus: Vector3<f32>,
}

/// The frame the overhang's pillar is cut.
pub(crate) const OVERHANG_FRAME: usize = 30;

/// Builds the overhang off the plaza's near side (both runs build the same).
pub(crate) fn build_overhang(t: &mut Terrain, plaza: &Plaza) -> anyhow::Result<Overhang> {
    let (x, z, h) = ((plaza.min[0] + plaza.max[0]) * 0.5, plaza.min[1] - 10.0, plaza.height.floor());
    let cuboid = |min: [f32; 3], max: [f32; 3], op: BrushOp| Brush {
        shape: BrushShape::Box { min: Point3::from(min), max: Point3::from(max) },
        op,
    };
    let rock = BrushOp::Add(materials::SANDSTONE);
    for b in [
        cuboid([x - 12.0, 1.0, z - 8.0], [x + 12.0, h, z + 8.0], BrushOp::Add(materials::CONCRETE)),
        cuboid([x - 12.0, h, z - 8.0], [x + 12.0, h + 40.0, z + 8.0], BrushOp::Subtract),
        cuboid([x - 3.0, h, z - 3.0], [x + 3.0, h + 18.0, z + 3.0], rock),
        cuboid([x - 8.0, h + 18.0, z - 5.0], [x + 8.0, h + 22.0, z + 5.0], rock),
    ] {
        t.apply_brush(&b)?;
    }
    Ok(Overhang {
        cut: Brush {
            shape: BrushShape::Sphere { center: Point3::new(x, h + 6.0, z), radius: CRATER_RADIUS },
            op: BrushOp::Subtract,
        },
        focus: Vector3::new(x, h + 8.0, z),
    })
}

/// One body of the scene.
pub(crate) struct BodySpec {
    pub(crate) shape: SharedShape,
    pub(crate) position: Vector,
    pub(crate) rotation: Vector,
    pub(crate) velocity: Vector,
    pub(crate) group: usize,
}

/// A random convex rock of about `r` radius.
fn rock(rng: &mut Rng, r: f32) -> SharedShape {
    let pts: Vec<Vector> = (0..12)
        .map(|_| {
            let d = Vector::new(rng.range(-1.0, 1.0), rng.range(-0.7, 0.7), rng.range(-1.0, 1.0));
            d.try_normalize().unwrap_or(Vector::X) * r * rng.range(0.7, 1.0)
        })
        .collect();
    SharedShape::convex_hull(&pts).unwrap_or_else(|| SharedShape::ball(r))
}

/// The bodies: group 0 slides across the plaza; the others drop over the world in 6×5 grids.
pub(crate) fn bodies(
    t: &mut Terrain,
    size: [u32; 3],
    plaza: &Plaza,
    count: usize,
    rng: &mut Rng,
) -> anyhow::Result<Vec<BodySpec>> {
    let mut out = Vec::with_capacity(count);
    let groups = count.div_ceil(GROUP);
    for g in 0..groups {
        let n = GROUP.min(count - out.len());
        let (cx, cz) = if g == 0 {
            (plaza.min[0] + 8.0, (plaza.min[1] + plaza.max[1]) * 0.5)
        } else {
            // Clear of the plaza and the course; on a world too small for that, the last draw.
            let mut draw =
                || (rng.range(48.0, size[0] as f32 - 48.0), rng.range(48.0, size[2] as f32 - 48.0));
            let mut at = draw();
            for _ in 0..256 {
                if !plaza.contains(at.0, at.1, -(16.0 + COURSE_MARGIN)) {
                    break;
                }
                at = draw();
            }
            at
        };
        page_around(t, cx, cz, 48.0)?;
        for i in 0..n {
            let (gx, gz) = ((i % 6) as f32, (i / 6) as f32);
            let kind = (g + i) % 4;
            let shape = if g == 0 {
                // Boxes and flat-lying capsules slide; they show every bump.
                if i % 3 == 2 {
                    SharedShape::capsule_x(0.4, 0.3)
                } else {
                    SharedShape::cuboid(rng.range(0.3, 0.5), rng.range(0.25, 0.4), rng.range(0.3, 0.5))
                }
            } else {
                match kind {
                    0 => SharedShape::ball(rng.range(0.35, 0.6)),
                    1 => {
                        SharedShape::cuboid(rng.range(0.3, 0.55), rng.range(0.3, 0.55), rng.range(0.3, 0.55))
                    }
                    2 => SharedShape::capsule_y(rng.range(0.25, 0.45), rng.range(0.25, 0.4)),
                    _ => {
                        let r = rng.range(0.4, 0.65);
                        rock(rng, r)
                    }
                }
            };
            let (x, z) =
                if g == 0 { (cx + gz * 1.6, cz + (gx - 2.5) * 2.0) } else { (cx + gx * 2.2, cz + gz * 2.2) };
            let (y, rotation, velocity) = if g == 0 {
                let speed = SLIDE_SPEED * rng.range(0.8, 1.2);
                (plaza.height + 0.6, Vector::ZERO, Vector::new(speed, 0.0, 0.0))
            } else {
                let ground = ground_at(t, x, z).unwrap_or(size[1] as f32);
                let rot = Vector::new(rng.range(0.0, 3.0), rng.range(0.0, 3.0), rng.range(0.0, 3.0));
                (ground + 3.0 + rng.range(0.0, 1.5), rot, Vector::ZERO)
            };
            out.push(BodySpec { shape, position: Vector::new(x, y, z), rotation, velocity, group: g });
        }
    }
    Ok(out)
}

/// The frame's edits, if it is an edit frame: a crater under the centroid of the next group (not
/// the plaza's), a hill rising through the group after it, and a hill where no body is within
/// reach.
pub(crate) fn edits(
    frame: usize,
    t: &Terrain,
    positions: &[(usize, Vector)],
    plaza: &Plaza,
    size: [u32; 3],
    rng: &mut Rng,
) -> Vec<Brush> {
    if frame == 0 || !frame.is_multiple_of(30) {
        return Vec::new();
    }
    let groups = positions.iter().map(|p| p.0).max().unwrap_or(0);
    let mut out = Vec::new();
    let centroid = |g: usize| {
        let members: Vec<Vector3<f32>> =
            positions.iter().filter(|p| p.0 == g).map(|p| Vector3::from_parry(p.1)).collect();
        (!members.is_empty()).then(|| members.iter().sum::<Vector3<f32>>() / members.len() as f32)
    };
    if groups >= 1 {
        let g = 1 + (frame / 30 - 1) % groups;
        if let Some(c) = centroid(g) {
            // Craters dug again and again under a group sink; the world's bottom keeps a floor
            // of 4 voxels under the deepest, so no size the demo accepts is dug through.
            let bottom = t.extent().map_or(0.0, |e| t.scale().region_to_world(&e, 0.0).mins.y);
            let y = ground_at(t, c.x, c.z).unwrap_or(c.y).max(bottom + CRATER_RADIUS + 4.0);
            out.push(Brush {
                shape: BrushShape::Sphere { center: Point3::new(c.x, y, c.z), radius: CRATER_RADIUS },
                op: BrushOp::Subtract,
            });
        }
        // The next group's ground rises under it: the hill's top comes up through the bodies (with
        // one group, through the crater just dug, which keeps craters from sinking through the
        // world).
        if let Some(c) = centroid(1 + (frame / 30) % groups) {
            let y = ground_at(t, c.x, c.z).unwrap_or(c.y);
            out.push(Brush {
                shape: BrushShape::Sphere {
                    center: Point3::new(c.x, y - 0.5 * HILL_RADIUS, c.z),
                    radius: HILL_RADIUS,
                },
                op: BrushOp::Add(materials::ROCK),
            });
        }
    }
    for _ in 0..64 {
        let (x, z) = (rng.range(24.0, size[0] as f32 - 24.0), rng.range(24.0, size[2] as f32 - 24.0));
        let clear = positions.iter().all(|p| (p.1.x - x).hypot(p.1.z - z) > HILL_RADIUS + 8.0);
        if clear && !plaza.contains(x, z, -(HILL_RADIUS + COURSE_MARGIN)) {
            if let Some(y) = ground_at(t, x, z) {
                out.push(Brush {
                    shape: BrushShape::Sphere { center: Point3::new(x, y, z), radius: HILL_RADIUS },
                    op: BrushOp::Add(materials::ROCK),
                });
            }
            break;
        }
    }
    out
}

/// True when a body lies under the surface: its center deeper inside the solid than its own
/// bounding radius (the whole body is below the ground).
pub(crate) fn under_surface(t: &Terrain, p: Vector, radius: f32) -> bool {
    matches!(t.project_point(&Point3::from_parry(p), 64.0), Ok(Some(pr)) if pr.inside && pr.distance > radius)
}

/// FNV-1a, 64 bits: the state hash, stable across platforms and runs.
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= x as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    pub(crate) fn finish(&self) -> u64 {
        self.0
    }
}

/// Hashes every stored voxel, chunk by chunk in key order.
pub(crate) fn hash_voxels(t: &Terrain, h: &mut Fnv) -> anyhow::Result<()> {
    let keys = t.store().chunk_keys();
    let mut buf = Vec::new();
    for k in keys {
        let region: Region = k.region()?;
        buf.resize(region.len()?, voxterra::core::Voxel::AIR);
        t.store().read_box(&region, &mut buf)?;
        h.bytes(&[k.x, k.y, k.z].map(i32::to_le_bytes).concat());
        for v in &buf {
            h.bytes(&v.to_bits().to_le_bytes());
        }
    }
    Ok(())
}
