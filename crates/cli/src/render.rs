//! Pictures by ray casting: one ray per pixel through a [`World`] (bodies and terrain), shaded by
//! the surface normal, colored by material (bodies by a palette), with shadows from a second ray
//! toward the sun. Written as PNG.

use anyhow::Context;
use std::io::Write;
use std::path::Path;
use std::time::Instant;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{MaterialTable, Ray};
use voxterra::{HitTarget, World, WorldRayHit};

/// A pinhole camera.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Camera {
    pub(crate) eye: Point3<f32>,
    pub(crate) target: Point3<f32>,
    /// Vertical field of view, degrees.
    pub(crate) fov: f32,
    pub(crate) width: u32,
    pub(crate) height: u32,
}

/// A rendered picture and what it cost.
pub(crate) struct Picture {
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) rgb: Vec<u8>,
    /// Primary rays cast (one a pixel) and the seconds they took.
    pub(crate) primary_rays: usize,
    pub(crate) primary_seconds: f64,
    /// Shadow rays cast (one a pixel that hit something) and the seconds they took.
    pub(crate) shadow_rays: usize,
    pub(crate) shadow_seconds: f64,
}

impl Picture {
    /// Peak bytes a picture of `width` × `height` holds per pixel while it is made: the primary
    /// and shadow rays, each pixel's hit, the lit list, the shadow flags and the colors.
    pub(crate) fn bytes_per_pixel() -> u64 {
        let hit = size_of::<Option<WorldRayHit>>().max(size_of::<Option<voxterra::core::RayHit>>());
        (2 * size_of::<Ray>() + hit + size_of::<usize>() + 1 + 3) as u64
    }

    /// Refuses a picture whose estimated memory exceeds what is available.
    pub(crate) fn ensure_fits(width: u32, height: u32) -> anyhow::Result<()> {
        let bytes = u64::from(width) * u64::from(height) * Self::bytes_per_pixel();
        crate::limits::ensure_memory(bytes, &format!("a {width}x{height} picture"))
    }

    /// Primary rays per second.
    pub(crate) fn rays_per_second(&self) -> f64 {
        self.primary_rays as f64 / self.primary_seconds.max(1e-9)
    }

    /// Writes the picture as an 8-bit RGB PNG, atomically.
    pub(crate) fn save_png(&self, path: &Path) -> anyhow::Result<()> {
        let mut file =
            voxterra::AtomicFile::create(path).with_context(|| format!("creating {}", path.display()))?;
        {
            let mut encoder = png::Encoder::new(&mut file, self.width, self.height);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header().context("PNG header")?;
            writer.write_image_data(&self.rgb).context("PNG data")?;
            writer.finish().context("PNG end")?;
        }
        file.flush()?;
        file.commit().with_context(|| format!("saving {}", path.display()))?;
        Ok(())
    }
}

/// The sun's direction (toward it): high in the south-west, so slopes read clearly.
pub(crate) fn sun() -> Vector3<f32> {
    Vector3::new(-0.45, 0.8, 0.35).normalize()
}

/// A body's color: a small palette by handle.
fn body_color(index: u32) -> [f32; 3] {
    const PALETTE: [[f32; 3]; 6] = [
        [0.90, 0.30, 0.20],
        [0.95, 0.75, 0.20],
        [0.25, 0.55, 0.90],
        [0.55, 0.85, 0.35],
        [0.80, 0.40, 0.85],
        [0.95, 0.95, 0.95],
    ];
    PALETTE[index as usize % PALETTE.len()]
}

/// The primary rays of `camera`, row by row from the top.
pub(crate) fn primary_rays(camera: &Camera) -> Vec<Ray> {
    let forward = (camera.target - camera.eye).try_normalize(1e-9).unwrap_or(-Vector3::z());
    let right = forward.cross(&Vector3::y()).try_normalize(1e-9).unwrap_or(Vector3::x());
    let up = right.cross(&forward);
    let h = (camera.fov.to_radians() * 0.5).tan();
    let aspect = camera.width as f32 / camera.height.max(1) as f32;
    let mut rays = Vec::with_capacity(camera.width as usize * camera.height as usize);
    for py in 0..camera.height {
        for px in 0..camera.width {
            let u = ((px as f32 + 0.5) / camera.width as f32 * 2.0 - 1.0) * h * aspect;
            let v = (1.0 - (py as f32 + 0.5) / camera.height as f32 * 2.0) * h;
            rays.push(Ray::new(camera.eye, forward + right * u + up * v));
        }
    }
    rays
}

/// Renders `world` from `camera`. `progress(done, total)` after each band of rows.
pub(crate) fn render(
    world: &mut World,
    table: &MaterialTable,
    camera: &Camera,
    mut progress: impl FnMut(u64, u64),
) -> anyhow::Result<Picture> {
    let far = 4096.0;
    let rays = primary_rays(camera);
    let total = rays.len();
    let band = camera.width as usize * 32;
    let mut hits: Vec<Option<WorldRayHit>> = Vec::with_capacity(total);
    let mut part = Vec::new();
    let start = Instant::now();
    for (i, chunk) in rays.chunks(band.max(1)).enumerate() {
        world.cast_rays(chunk, far, &mut part)?;
        hits.extend_from_slice(&part);
        progress(((i + 1) * band).min(total) as u64, total as u64 * 2);
    }
    let primary_seconds = start.elapsed().as_secs_f64();

    let sun = sun();
    let lit: Vec<usize> = (0..total).filter(|&i| hits[i].is_some()).collect();
    let shadow_rays: Vec<Ray> = lit
        .iter()
        .filter_map(|&i| hits[i].map(|h| Ray::new(h.point + h.normal.into_inner() * 0.02, sun)))
        .collect();
    let mut shadowed = Vec::with_capacity(shadow_rays.len());
    let start = Instant::now();
    for (i, chunk) in shadow_rays.chunks(band.max(1)).enumerate() {
        world.cast_rays(chunk, far, &mut part)?;
        shadowed.extend(part.iter().map(Option::is_some));
        progress((total + ((i + 1) * band).min(shadow_rays.len())) as u64, total as u64 * 2);
    }
    let shadow_seconds = start.elapsed().as_secs_f64();

    let mut rgb: Vec<u8> = rays.iter().flat_map(|r| sky(&r.dir)).collect();
    for (&i, &dark) in lit.iter().zip(&shadowed) {
        let Some(h) = hits[i] else { continue };
        let base = match h.target {
            HitTarget::Body(b) => body_color(b.index()),
            HitTarget::Terrain { material, .. } => material_color(table, material),
        };
        // A little distance haze so far terrain reads as far.
        let haze = h.t / 900.0;
        rgb[i * 3..i * 3 + 3].copy_from_slice(&shade(base, &h.normal, dark, haze));
    }
    Ok(Picture {
        width: camera.width,
        height: camera.height,
        rgb,
        primary_rays: total,
        primary_seconds,
        shadow_rays: shadow_rays.len(),
        shadow_seconds,
    })
}

/// The sky's color along `dir`: a vertical gradient.
pub(crate) fn sky(dir: &Vector3<f32>) -> [u8; 3] {
    let t = (dir.normalize().y * 0.5 + 0.5).clamp(0.0, 1.0);
    [0.75 - 0.35 * t, 0.85 - 0.25 * t, 1.0 - 0.05 * t].map(|c| (c * 255.0) as u8)
}

/// A material's color from `table` (magenta for one it lacks).
pub(crate) fn material_color(table: &MaterialTable, material: voxterra::core::Material) -> [f32; 3] {
    table.get(material).map_or([1.0, 0.0, 1.0], |m| m.color.map(|c| c as f32 / 255.0))
}

/// A surface point's color: `base` lit by the sun across `normal`, darker in shadow, `haze`
/// (clamped to 0..0.6) of the way to the horizon's grey.
pub(crate) fn shade(base: [f32; 3], normal: &Vector3<f32>, shadowed: bool, haze: f32) -> [u8; 3] {
    let lambert = normal.dot(&sun()).max(0.0);
    let light = 0.28 + 0.72 * lambert * if shadowed { 0.25 } else { 1.0 };
    let haze = haze.clamp(0.0, 0.6);
    base.map(|c| ((c * light * (1.0 - haze) + 0.8 * haze).clamp(0.0, 1.0) * 255.0) as u8)
}
