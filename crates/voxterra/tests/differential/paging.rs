//! A paged terrain against the same ground held whole: random ground (ridges, overhangs, thin
//! necks, far from the origin or near it) at voxel sizes 0.5, 1 and 2 behind a chunk source the
//! test owns, a resident budget of a few chunks, random boxes paged in (evicting the rest) and
//! random brushes on both. After each step every resident chunk holds the whole terrain's voxels,
//! the terrain's invariants hold (masks only over resident chunks), and rays and contacts inside
//! the paged box answer as the whole terrain's.

use crate::Tally;
use std::sync::Arc;
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::core::{Aabb, Ray, StoreChunkKey, Voxel, VoxelRead};
use voxterra::narrowphase::Correction;
use voxterra::paging::ChunkSource;
use voxterra::parry3d::math::Pose;
use voxterra::parry3d::shape::Ball;
use voxterra::store::VoxelStore;
use voxterra::{Brush, BrushOp, BrushShape, PageError, Terrain, TerrainConfig};
use voxterra_test_support::Rng;
use voxterra_test_support::ground::{GroundOptions, random_ground, table};

/// The world as first made, read by the paged terrain for chunks it does not hold.
struct StoreSource(VoxelStore);

impl ChunkSource for StoreSource {
    fn load(&self, keys: &[StoreChunkKey], out: &mut [Voxel]) -> Result<(), PageError> {
        for (k, dst) in keys.iter().zip(out.chunks_exact_mut(32 * 32 * 32)) {
            self.0.read_box(&k.region().expect("a key's region"), dst).expect("a chunk's buffer");
        }
        Ok(())
    }
}

fn chunk(t: &Terrain, k: StoreChunkKey) -> Vec<Voxel> {
    let mut v = vec![Voxel::AIR; 32 * 32 * 32];
    t.store().read_box(&k.region().expect("a key's region"), &mut v).expect("a chunk's buffer");
    v
}

pub(crate) fn run(seed: u64, steps: usize, tally: &mut Tally) {
    let mut rng = Rng::new(seed ^ 0x9a6e);
    let ground = random_ground(seed, GroundOptions { size: [72, 40, 72], far: 50_000 });
    let vs = [0.5f32, 1.0, 2.0][rng.below(3) as usize];
    let mut store = VoxelStore::new();
    store.write_box(&ground.region, &ground.voxels).expect("the window fits");
    let config = TerrainConfig { resident_bytes: 24 << 10, ..TerrainConfig::with_voxel_size(vs) };
    // The edits' mirror: brushes made on the paged terrain are made on this one too.
    let mut whole = Terrain::from_store(store.clone(), table(), config).expect("a terrain");
    let mut paged = Terrain::paged(Arc::new(StoreSource(store)), table(), config).expect("a terrain");
    let (lo, size) =
        (ground.region.min().map(|v| v as f32), Vector3::from(ground.region.size().map(|v| v as f32)));
    let at = |rng: &mut Rng| {
        lo + Vector3::new(rng.range(0.0, size.x), rng.range(0.0, size.y), rng.range(0.0, size.z))
    };
    for _ in 0..steps {
        let c = at(&mut rng) * vs;
        let half = rng.range(3.0, 14.0) * vs;
        let b = Aabb::new(c - Vector3::repeat(half), c + Vector3::repeat(half));
        let mut fails: Vec<(&'static str, String)> = Vec::new();
        if let Err(e) = paged.page_in(&[b]) {
            fails.push(("page_in", e.to_string()));
        }
        if rng.below(2) == 0 {
            let center = at(&mut rng) * vs;
            let op = if rng.below(2) == 0 { BrushOp::Subtract } else { BrushOp::Add(ground.material) };
            let brush = Brush { shape: BrushShape::Sphere { center, radius: rng.range(1.0, 5.0) * vs }, op };
            let (a, w) =
                (paged.apply_brush(&brush).map(|r| r.dirty), whole.apply_brush(&brush).map(|r| r.dirty));
            if a.as_ref().ok() != w.as_ref().ok() {
                fails.push(("edit", format!("{brush:?}: paged {a:?}, whole {w:?}")));
            }
        }
        for k in paged.store().chunk_keys() {
            if chunk(&paged, k) != chunk(&whole, k) {
                fails.push(("voxels", format!("chunk {k:?} at voxel size {vs}")));
            }
        }
        if let Err(e) = paged.validate() {
            fails.push(("invariants", e.to_string()));
        }
        // Inside the paged box (clear of its edge by the reach of a query).
        let inner = b.loosened(-4.0 * vs);
        if inner.mins.x < inner.maxs.x && paged.is_paged_in(&b) {
            for _ in 0..4 {
                let o = Point3::new(
                    rng.range(inner.mins.x, inner.maxs.x),
                    inner.maxs.y,
                    rng.range(inner.mins.z, inner.maxs.z),
                );
                let ray = Ray::new(o, Vector3::new(rng.range(-0.3, 0.3), -1.0, rng.range(-0.3, 0.3)));
                let max_t = (inner.maxs.y - inner.mins.y) * 0.9;
                let (a, w) = (paged.cast_ray(&ray, max_t), whole.cast_ray(&ray, max_t));
                let (a, w) =
                    (a.map(|h| h.map(|h| (h.t, h.material))), w.map(|h| h.map(|h| (h.t, h.material))));
                if a.as_ref().ok() != w.as_ref().ok() {
                    fails.push(("rays", format!("{ray:?} within {max_t}: paged {a:?}, whole {w:?}")));
                }
            }
            let r = rng.range(0.3, 1.5) * vs;
            let p = inner.center();
            let pose = Pose::translation(p.x, p.y, p.z);
            let (mut a, mut w) = (Vec::new(), Vec::new());
            let ra = paged.contacts(&Ball::new(r), &pose, 0.1, &mut a).map_err(|e| e.to_string());
            let rw = whole.contacts(&Ball::new(r), &pose, 0.1, &mut w).map_err(|e| e.to_string());
            // A ball buried in the solid is pushed toward the nearest surface wherever it lies
            // (a projection without a bound), which a paged terrain finds among what is resident:
            // those cases have no paged reference.
            let buried = w
                .iter()
                .chain(&a)
                .flat_map(|m| m.manifold.points())
                .any(|p| p.correction == Correction::Interior);
            let points = |m: &[voxterra::TerrainManifold]| {
                format!("{:?}", m.iter().map(|m| (m.chunk, format!("{:?}", m.manifold))).collect::<Vec<_>>())
            };
            if buried {
                tally.skip();
            } else if ra != rw || points(&a) != points(&w) {
                fails.push((
                    "contacts",
                    format!("ball {r} at {p:?}: paged {ra:?} {}, whole {rw:?} {}", points(&a), points(&w)),
                ));
            }
        }
        tally.record("paging", fails.into_iter());
    }
}
