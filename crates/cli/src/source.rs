//! Where a command's world comes from: a terrain file, or a world generated from a size and seed.

use crate::gen_cmd::{parse_size, progress_bar};
use anyhow::Context;
use std::path::PathBuf;
use voxterra::worldgen::GenParams;
use voxterra::{Terrain, TerrainConfig};

/// `--in FILE`, or `--size` and `--seed` for a generated world.
#[derive(clap::Args, Debug, Clone)]
pub(crate) struct WorldSource {
    /// Read this terrain file; without it (or --db) a world is generated from --size and --seed.
    #[arg(long = "in", value_name = "FILE")]
    pub(crate) input: Option<PathBuf>,
    /// Read the world from this chunk database (redb). `serve` commits every edit to it before
    /// answering; the other commands open it read-only (several at once, none beside a writer).
    #[arg(long, value_name = "DB", conflicts_with_all = ["input", "size", "seed"])]
    pub(crate) db: Option<PathBuf>,
    /// With --db on a lazily generated world (`gen --db --lazy`): the resident voxel budget, MiB,
    /// for what pages it (`render --lod`, `mesh --lod-from`).
    #[arg(long, default_value_t = 256, requires = "db")]
    pub(crate) budget_mb: usize,
    /// Size of the generated world, X×Y×Z.
    #[arg(long, default_value = "512x128x512", value_parser = parse_size, conflicts_with = "input")]
    pub(crate) size: [u32; 3],
    /// Seed of the generated world.
    #[arg(long, default_value_t = 1, conflicts_with = "input")]
    pub(crate) seed: u64,
}

impl WorldSource {
    /// The terrain, loaded or generated on the current rayon pool, with a progress bar (none when
    /// `quiet`).
    pub(crate) fn terrain(&self, quiet: bool) -> anyhow::Result<Terrain> {
        if let Some(path) = &self.db {
            return Ok(crate::db_cmd::open_read(path)?.into_parts().0);
        }
        let (what, unit) =
            if self.input.is_some() { ("loading   ", "chunks") } else { ("generating", "tiles") };
        let bar = progress_bar(0, what, unit, quiet)?;
        let progress = |done: u64, total: u64| {
            bar.set_length(total);
            bar.set_position(done);
        };
        let terrain = match &self.input {
            Some(path) => Terrain::load_with_progress(path, TerrainConfig::default(), progress)
                .with_context(|| format!("loading {}", path.display()))?,
            None => Terrain::generate_with_progress(
                &GenParams::new(self.seed, self.size),
                TerrainConfig::default(),
                progress,
            )
            .context("generating the world")?,
        };
        bar.finish_and_clear();
        Ok(terrain)
    }

    /// Like [`terrain`](Self::terrain), but a database made by `gen --db --lazy` is opened paged
    /// under `--budget-mb` (nothing loaded until used), for commands that page in what they read.
    pub(crate) fn terrain_paged(&self, quiet: bool) -> anyhow::Result<Terrain> {
        match &self.db {
            Some(path) => {
                let config = TerrainConfig {
                    resident_bytes: self.budget_mb.saturating_mul(1 << 20),
                    ..TerrainConfig::default()
                };
                crate::db_cmd::open_read_terrain(path, config)
            }
            None => self.terrain(quiet),
        }
    }
}
