//! What the demo is asked ([`DemoArgs`]) and what it reports: frame times as spreads, the counts
//! of bodies at rest and through the ground, the picture, the state hash.

use crate::gen_cmd::parse_size;
use crate::render_cmd::parse_resolution;
use std::path::PathBuf;

/// What the terrain is to rapier.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Baseline {
    /// One rapier TriMesh collider (FIX_INTERNAL_EDGES) per 32³ chunk, rebuilt for every chunk an
    /// edit touches.
    Trimesh,
    /// One rapier voxels collider (parry's `Voxels`: cubes, not the smooth surface) over the
    /// world's solid voxels, edited in place voxel by voxel.
    Voxels,
}

/// What the picture looks at.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub(crate) enum View {
    /// The bodies of the last crater dug.
    Crater,
    /// The overhang, cut loose at frame 30, where its piece came to rest.
    Overhang,
}

/// Arguments of `voxterra demo`.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct DemoArgs {
    /// Bodies dropped (balls, boxes, capsules, convex rocks; the first 30 slide across a plaza).
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) bodies: u32,
    /// Frames at 60 Hz; every 30th digs a crater under a group of bodies and raises hills (one
    /// under the next group).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub(crate) frames: u32,
    /// Seed of the world and the scene.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// World size, X×Y×Z voxels (at least 128×64×128: the plaza, the course, the drop zones and
    /// the craters dug under them).
    #[arg(long, default_value = "512x128x512", value_parser = parse_size)]
    pub(crate) size: [u32; 3],
    /// Start from the world in this chunk database (redb) instead of generating one; its size
    /// replaces --size. Read only: the scene, the bodies and the craters live in memory and are
    /// not written into the database. A lazily generated world (`gen --db --lazy`) is paged:
    /// only the chunks around the scene come into memory.
    #[arg(long, value_name = "DB")]
    pub(crate) db: Option<PathBuf>,
    /// Worker threads (default: all cores; at most 256). The final state is the same for any count.
    #[arg(long, value_parser = crate::limits::parse_threads)]
    pub(crate) threads: Option<usize>,
    /// Also run the scene on this baseline and print both side by side.
    #[arg(long, value_enum)]
    pub(crate) baseline: Option<Baseline>,
    /// Print the report as one JSON object on stdout (no progress bar).
    #[arg(long)]
    pub(crate) json: bool,
    /// The picture of the last frame (PNG).
    #[arg(long, default_value = "demo.png")]
    pub(crate) out: PathBuf,
    /// Picture size, W×H pixels.
    #[arg(long, default_value = "1280x720", value_parser = parse_resolution)]
    pub(crate) resolution: [u32; 2],
    /// Skip the picture.
    #[arg(long)]
    pub(crate) no_picture: bool,
    /// What the picture looks at.
    #[arg(long, value_enum, default_value = "crater")]
    pub(crate) view: View,
}

/// Median, 99th percentile and maximum of per-frame times, milliseconds.
#[derive(serde::Serialize, Debug, Clone, Copy, Default)]
pub(crate) struct Spread {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
}

pub(crate) fn spread(ms: &[f64]) -> Spread {
    if ms.is_empty() {
        return Spread::default();
    }
    let mut v = ms.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    Spread { p50: at(0.5), p99: at(0.99), max: v[v.len() - 1] }
}

/// One run's report.
#[derive(serde::Serialize, Debug)]
pub(crate) struct RunReport {
    pub(crate) collider: &'static str,
    pub(crate) frame_ms: Spread,
    pub(crate) rapier_step_ms: Spread,
    pub(crate) terrain_contacts_ms: Spread,
    pub(crate) edits_ms: Spread,
    pub(crate) cache_builds_ms: Spread,
    /// (contacts + edits + builds) over the whole frame time, summed over frames.
    pub(crate) terrain_share: f64,
    pub(crate) worst_edit_stall_ms: f64,
    pub(crate) contacts_per_frame: f64,
    pub(crate) terrain_collision_bytes: usize,
    pub(crate) bodies_at_rest: usize,
    /// Pieces of terrain edits cut loose, spawned as bodies (the overhang's among them).
    pub(crate) detached_pieces: usize,
    /// Of those, settled at the end: asleep, or their centre kept within one voxel over the
    /// last second (a piece rocking on a rounded underside counts; one still sliding or falling
    /// does not).
    pub(crate) pieces_at_rest: usize,
    /// Of those, under the surface at any time (their centre deeper in the solid than their
    /// bounding radius) or under the world: 0 expected.
    pub(crate) pieces_fell_through: usize,
    /// Share of the character's steps on which its controller reported it grounded.
    pub(crate) character_grounded: f64,
    /// The character's steps that moved less than a tenth of the way asked.
    pub(crate) character_stuck_steps: usize,
    /// Queries with the terrain the dispatcher refused (rapier drops such pairs): 0 expected.
    pub(crate) refused_queries: u64,
    pub(crate) fell_through: usize,
    pub(crate) ghost_bumps: usize,
    /// Contacts checked for ghost bumps (on the plaza, away from its edges).
    pub(crate) flat_contacts: usize,
    pub(crate) setup_ms: f64,
    pub(crate) total_seconds: f64,
    pub(crate) state_hash: String,
}

/// The picture's report.
#[derive(serde::Serialize, Debug)]
pub(crate) struct PictureReport {
    pub(crate) file: String,
    pub(crate) width: u32,
    pub(crate) height: u32,
    pub(crate) primary_rays_per_second: f64,
    pub(crate) shadow_rays: usize,
    pub(crate) seconds: f64,
}

#[derive(serde::Serialize, Debug)]
pub(crate) struct Report {
    pub(crate) bodies: u32,
    pub(crate) frames: u32,
    pub(crate) seed: u64,
    pub(crate) size: [u32; 3],
    pub(crate) threads: usize,
    pub(crate) voxterra: RunReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) baseline: Option<RunReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) picture: Option<PictureReport>,
}

/// The smallest world the demo's scene fits in.
pub(crate) const MIN_SIZE: [u32; 3] = [128, 64, 128];
