//! Worlds in a chunk database: `import`, `export`, `edit-soak` (the writer a crash test kills),
//! `verify`, and `info` on a database.

use crate::gen_cmd::parse_size;
use anyhow::{Context, bail};
use std::io::Write;
use std::path::{Path, PathBuf};
use voxterra::chunk_db::{ChunkDb, Durability, RedbChunkDb};
use voxterra::core::nalgebra::Point3;
use voxterra::core::{StoreChunkKey, Voxel, materials};
use voxterra::decode_chunk;
use voxterra::worldgen::GenParams;
use voxterra::{Brush, BrushOp, BrushShape, DurableTerrain, META_SEQUENCE, Terrain, TerrainConfig};

/// Metadata of `edit-soak`: the edits made so far (u64), and the generated world they started
/// from (size and seed, JSON).
const META_EDITS: &str = "soak_edits";
const META_SOAK_WORLD: &str = "soak_world";

/// The first bytes of a redb file.
const REDB_MAGIC: &[u8] = b"redb\x1a\x0a\xa9\x0d\x0a";

/// Whether `path` holds a chunk database (rather than a terrain file).
pub(crate) fn is_db(path: &Path) -> bool {
    let mut head = [0u8; 9];
    std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head)).is_ok()
        && head == REDB_MAGIC
}

/// `voxterra import`.
#[derive(clap::Args, Debug)]
pub(crate) struct ImportArgs {
    /// The terrain file to read.
    file: PathBuf,
    /// The chunk database to create (it must not exist).
    #[arg(long)]
    db: PathBuf,
}

pub(crate) fn import(args: &ImportArgs) -> anyhow::Result<()> {
    let terrain = Terrain::load(&args.file, TerrainConfig::default())
        .with_context(|| format!("loading {}", args.file.display()))?;
    let db = RedbChunkDb::create(&args.db)?;
    let d = DurableTerrain::create(terrain, db, Durability::Immediate)?;
    println!("{} chunks into {} ({} bytes)", d.db().keys()?.len(), args.db.display(), d.db().file_len()?);
    Ok(())
}

/// `voxterra export`.
#[derive(clap::Args, Debug)]
pub(crate) struct ExportArgs {
    /// The chunk database to read.
    db: PathBuf,
    /// The terrain file to write (atomically).
    #[arg(long)]
    out: PathBuf,
}

pub(crate) fn export(args: &ExportArgs) -> anyhow::Result<()> {
    let d = open_read(&args.db)?;
    d.terrain().save(&args.out).with_context(|| format!("writing {}", args.out.display()))?;
    println!("{} chunks into {}", d.terrain().store().chunk_count(), args.out.display());
    Ok(())
}

pub(crate) fn open(path: &Path) -> anyhow::Result<DurableTerrain<RedbChunkDb>> {
    let db = RedbChunkDb::open(path).with_context(|| format!("opening {}", path.display()))?;
    DurableTerrain::open(db, TerrainConfig::default(), Durability::Immediate)
        .with_context(|| format!("loading the world in {}", path.display()))
}

/// The database at `path` for reading only (several readers may share it); one its writer left
/// uncleanly is opened for writing once, which repairs it from its last commit.
fn open_db_read(path: &Path) -> anyhow::Result<RedbChunkDb> {
    let db = match RedbChunkDb::open_read_only(path) {
        Err(voxterra::chunk_db::ChunkDbError::NeedsRepair(_)) => {
            drop(RedbChunkDb::open(path)?);
            RedbChunkDb::open_read_only(path)
        }
        other => other,
    };
    db.with_context(|| format!("opening {}", path.display()))
}

/// The world in the database at `path`, opened for reading only.
pub(crate) fn open_read(path: &Path) -> anyhow::Result<DurableTerrain<RedbChunkDb>> {
    let db = open_db_read(path)?;
    DurableTerrain::open(db, TerrainConfig::default(), Durability::Immediate)
        .with_context(|| format!("loading the world in {}", path.display()))
}

/// The terrain in database `path`, read-only: paged (nothing loaded until used, under `config`'s
/// resident budget) when the database names a world generator (`gen --db --lazy`), else loaded
/// whole.
pub(crate) fn open_read_terrain(path: &Path, config: TerrainConfig) -> anyhow::Result<voxterra::Terrain> {
    let db = open_db_read(path)?;
    let lazy = voxterra::stored_generator(&db)?.is_some();
    let d = if lazy {
        DurableTerrain::open_paged(db, config, Durability::Immediate)
    } else {
        DurableTerrain::open(db, config, Durability::Immediate)
    };
    Ok(d.with_context(|| format!("opening the world in {}", path.display()))?.into_parts().0)
}

/// `voxterra edit-soak`.
#[derive(clap::Args, Debug)]
pub(crate) struct EditSoakArgs {
    /// The chunk database: created with a generated world if absent, else edited further.
    #[arg(long)]
    db: PathBuf,
    /// Size of the world to create, X×Y×Z.
    #[arg(long, default_value = "128x64x128", value_parser = parse_size)]
    size: [u32; 3],
    /// Seed of the world to create and of the edits.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Edits to make.
    #[arg(long, default_value_t = 100)]
    edits: u64,
    /// Instead of editing: rebuild the world from its seed plus the edits the database says it
    /// holds, and fail unless it equals the database's.
    #[arg(long)]
    check: bool,
}

#[derive(serde::Serialize, serde::Deserialize, Debug, Clone, Copy)]
struct SoakWorld {
    size: [u32; 3],
    seed: u64,
}

/// Edit `i` of a soak on a world of `size` from `seed`: a small sphere, carved or filled.
fn soak_brush(world: SoakWorld, i: u64) -> Brush {
    // splitmix64 of (seed, i): the same edits on every run.
    let mut z = world.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ i.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let mut next = || {
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut x = z;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((x ^ (x >> 31)) >> 11) as f32 / (1u64 << 53) as f32
    };
    let [sx, sy, sz] = world.size.map(|s| s as f32);
    let center = Point3::new(4.0 + next() * (sx - 8.0), 2.0 + next() * (sy - 4.0), 4.0 + next() * (sz - 8.0));
    let radius = 1.5 + 2.5 * next();
    let op = if next() < 0.5 { BrushOp::Subtract } else { BrushOp::Add(materials::ROCK) };
    Brush { shape: BrushShape::Sphere { center, radius }, op }
}

fn meta_u64(db: &RedbChunkDb, name: &str) -> anyhow::Result<Option<u64>> {
    db.meta(name)?
        .map(|v| Ok(u64::from_le_bytes(v.as_slice().try_into().context("a u64 entry of 8 bytes")?)))
        .transpose()
}

pub(crate) fn edit_soak(args: &EditSoakArgs) -> anyhow::Result<()> {
    if args.check {
        return soak_check(&args.db);
    }
    let mut d = if args.db.exists() {
        open(&args.db)?
    } else {
        let world = SoakWorld { size: args.size, seed: args.seed };
        let terrain = Terrain::generate(&GenParams::new(args.seed, args.size), TerrainConfig::default())?;
        // Created beside and renamed into place: a crash while creating leaves no database.
        let part = args.db.with_extension("redb.part");
        let _ = std::fs::remove_file(&part);
        let d = DurableTerrain::create(terrain, RedbChunkDb::create(&part)?, Durability::Immediate)?;
        let (terrain, db) = d.into_parts();
        let meta = vec![
            (META_SOAK_WORLD.to_string(), serde_json::to_vec(&world)?),
            (META_EDITS.to_string(), 0u64.to_le_bytes().to_vec()),
        ];
        db.commit(voxterra::chunk_db::Batch { meta, ..Default::default() }, Durability::Immediate)?;
        drop((terrain, db));
        std::fs::rename(&part, &args.db)?;
        open(&args.db)?
    };
    let world: SoakWorld = serde_json::from_slice(
        &d.db().meta(META_SOAK_WORLD)?.context("not a database edit-soak made (no soak_world entry)")?,
    )?;
    let done = meta_u64(d.db(), META_EDITS)?.unwrap_or(0);
    let mut out = std::io::stdout().lock();
    for i in done..done + args.edits {
        let meta = vec![(META_EDITS.to_string(), (i + 1).to_le_bytes().to_vec())];
        d.apply_brush_with(&soak_brush(world, i), meta)?;
        // Durable now: say so.
        writeln!(out, "{}", d.committed())?;
        out.flush()?;
    }
    Ok(())
}

/// Rebuilds the soak's world plus the edits the database holds, and compares every chunk.
fn soak_check(path: &Path) -> anyhow::Result<()> {
    // For writing: after a crash the database repairs itself on its first open, as at a restart.
    let d = open(path)?;
    let world: SoakWorld =
        serde_json::from_slice(&d.db().meta(META_SOAK_WORLD)?.context("no soak_world entry")?)?;
    let edits = meta_u64(d.db(), META_EDITS)?.context("no soak_edits entry")?;
    let mut expected = Terrain::generate(&GenParams::new(world.seed, world.size), TerrainConfig::default())?;
    for i in 0..edits {
        expected.apply_brush(&soak_brush(world, i))?;
    }
    if expected.sequence() != d.committed() {
        bail!("sequence {} in the database, {} after its {edits} edits", d.committed(), expected.sequence());
    }
    let keys: std::collections::BTreeSet<StoreChunkKey> =
        expected.store().chunk_keys().into_iter().chain(d.terrain().store().chunk_keys()).collect();
    let (mut a, mut b) = (vec![Voxel::AIR; 32 * 32 * 32], vec![Voxel::AIR; 32 * 32 * 32]);
    for k in keys {
        let r = k.region()?;
        use voxterra::core::VoxelRead;
        expected.store().read_box(&r, &mut a)?;
        d.terrain().store().read_box(&r, &mut b)?;
        if a != b {
            bail!("chunk {k:?} differs from the world plus its {edits} edits");
        }
    }
    println!("ok: {edits} edits, sequence {}", d.committed());
    Ok(())
}

/// `voxterra verify`.
#[derive(clap::Args, Debug)]
pub(crate) struct VerifyArgs {
    /// A terrain file or a chunk database.
    path: PathBuf,
}

pub(crate) fn verify(args: &VerifyArgs) -> anyhow::Result<()> {
    if is_db(&args.path) {
        let mut db =
            RedbChunkDb::open(&args.path).with_context(|| format!("opening {}", args.path.display()))?;
        if !db.check_integrity()? {
            bail!("{}: damaged pages (repaired from the last good commit)", args.path.display());
        }
        if let Some(g) = voxterra::stored_generator(&db)? {
            // A lazily generated world is not materialized: every stored record decoded, the
            // metadata read, the stored chunks paged in and the terrain's invariants checked.
            let table: voxterra::core::MaterialTable =
                serde_json::from_slice(&db.meta(voxterra::META_MATERIALS)?.context("no material table")?)?;
            let known = table.solid_mask() | table.liquid_mask() | 1;
            let keys = db.keys()?;
            let mut v = vec![Voxel::AIR; 32 * 32 * 32];
            for &k in &keys {
                decode_chunk(k, &db.chunk(k)?.context("a listed chunk")?, &mut v, known)?;
            }
            let mut d = DurableTerrain::open_paged(db, TerrainConfig::default(), Durability::Immediate)?;
            let scale = d.terrain().scale();
            for part in keys.chunks(256) {
                let boxes: Vec<_> = part
                    .iter()
                    .filter_map(|k| k.region().ok())
                    .map(|r| scale.region_to_world(&r, 0.0))
                    .collect();
                d.page_in(&boxes)?;
            }
            d.terrain().validate()?;
            let [x, y, z] = g.size;
            println!(
                "ok: {} chunks stored over a generated {x}x{y}x{z} world, sequence {}",
                keys.len(),
                d.committed()
            );
        } else {
            let d = DurableTerrain::open(db, TerrainConfig::default(), Durability::Immediate)?;
            d.terrain().validate()?;
            println!("ok: {} chunks, sequence {}", d.db().keys()?.len(), d.committed());
        }
    } else {
        let t = Terrain::load(&args.path, TerrainConfig::default())
            .with_context(|| format!("loading {}", args.path.display()))?;
        t.validate()?;
        println!("ok: {} chunks", t.store().chunk_count());
    }
    Ok(())
}

#[derive(serde::Serialize, Debug)]
struct DbInfo {
    file: String,
    bytes: u64,
    chunks: usize,
    non_empty_voxels: u64,
    bytes_per_non_empty_voxel: f64,
    /// The terrain's sequence as of the last durable commit.
    sequence: u64,
    /// A lazily generated world's generator (chunks not stored are made by it).
    #[serde(skip_serializing_if = "Option::is_none")]
    generator: Option<GeneratorInfo>,
}

#[derive(serde::Serialize, Debug)]
struct GeneratorInfo {
    seed: u64,
    size: [u32; 3],
    origin: [i32; 3],
}

/// `voxterra info` on a chunk database.
pub(crate) fn info(path: &Path, json: bool) -> anyhow::Result<()> {
    let db = open_db_read(path)?;
    let table: voxterra::core::MaterialTable =
        serde_json::from_slice(&db.meta(voxterra::META_MATERIALS)?.context("no material table")?)?;
    let known = table.solid_mask() | table.liquid_mask() | 1;
    let keys = db.keys()?;
    let mut v = vec![Voxel::AIR; 32 * 32 * 32];
    let mut non_empty = 0u64;
    for &k in &keys {
        decode_chunk(k, &db.chunk(k)?.context("a listed chunk")?, &mut v, known)?;
        non_empty += v.iter().filter(|x| !x.is_air()).count() as u64;
    }
    let bytes = db.file_len()?;
    let info = DbInfo {
        file: path.display().to_string(),
        bytes,
        chunks: keys.len(),
        non_empty_voxels: non_empty,
        bytes_per_non_empty_voxel: if non_empty == 0 { 0.0 } else { bytes as f64 / non_empty as f64 },
        sequence: meta_u64(&db, META_SEQUENCE)?.context("no sequence entry")?,
        generator: voxterra::stored_generator(&db)?.map(|g| GeneratorInfo {
            seed: g.seed,
            size: g.size,
            origin: [g.origin.x, g.origin.y, g.origin.z],
        }),
    };
    if json {
        println!("{}", serde_json::to_string(&info)?);
    } else {
        println!("database   {} ({} bytes)", info.file, info.bytes);
        println!("chunks     {}", info.chunks);
        println!(
            "non-empty  {} voxels, {:.4} bytes each on disk",
            info.non_empty_voxels, info.bytes_per_non_empty_voxel
        );
        println!("sequence   {} (the last durable edit's)", info.sequence);
        if let Some(g) = &info.generator {
            let [x, y, z] = g.size;
            println!("generated  {x}x{y}x{z} voxels, seed {}: chunks not stored are made when used", g.seed);
        }
    }
    Ok(())
}
