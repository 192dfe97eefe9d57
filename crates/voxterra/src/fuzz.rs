//! Fuzz target bodies, here so the tests can replay the committed corpus on stable
//! (`fuzz/fuzz_targets/*` call these).

use crate::replication::{Applied, ReplicaClient};
use crate::{DeltaError, Terrain, TerrainConfig};

use voxterra_core::{MaterialTable, Region, Voxel, VoxelPos, VoxelRead, materials};

/// The terrain every `apply_delta` input lands on: rock below y = 4 and a brick block, 48³.
pub fn delta_target() -> Terrain {
    let config = TerrainConfig { max_edit_voxels: 1 << 18, ..TerrainConfig::default() };
    let mut t = Terrain::new(MaterialTable::default(), config).expect("a valid voxel size");
    let ground = Region::from_min_size(VoxelPos::new(0, 0, 0), [48, 4, 48]).expect("small");
    t.fill(&ground, Voxel::full(materials::ROCK)).expect("a small fill");
    let block = Region::from_min_size(VoxelPos::new(10, 4, 10), [6, 6, 6]).expect("small");
    t.fill(&block, Voxel::full(materials::BRICK)).expect("a small fill");
    t
}

fn state(t: &Terrain) -> (Vec<Voxel>, usize, u64) {
    let area = Region::from_min_size(VoxelPos::new(-8, -8, -8), [64, 64, 64]).expect("small");
    let mut v = vec![Voxel::AIR; area.len().expect("small")];
    t.store().read_box(&area, &mut v).expect("a sized buffer");
    (v, t.store().chunk_count(), t.sequence())
}

/// `apply_delta` on arbitrary bytes: a typed error leaves the terrain exactly as it was (voxels,
/// chunks, masks, sequence); nothing panics or allocates past the edit limit. A well-formed delta
/// for another sequence number is refused as out of order, then tried again on the target made a
/// replica at that number, so every decodable input reaches the write path.
pub fn check_apply_delta(data: &[u8]) {
    let mut t = delta_target();
    if let Err(DeltaError::Stale { delta, .. } | DeltaError::Gap { delta, .. }) =
        applied_or_unchanged(&mut t, data)
    {
        t.set_sequence(delta);
        let _ = applied_or_unchanged(&mut t, data);
    }
}

/// Applies `data` to `t`, checking that a refusal changed nothing and that an accepted delta undoes
/// bit for bit.
fn applied_or_unchanged(t: &mut Terrain, data: &[u8]) -> Result<(), DeltaError> {
    let before = state(t);
    let masks = t.masks().chunks();
    match t.apply_delta(data) {
        Err(e) => {
            assert!(state(t) == before, "a refused delta changed the terrain");
            assert!(t.masks().chunks() == masks, "a refused delta changed the masks");
            Err(e)
        }
        Ok(_) => {
            // An accepted delta is an ordinary edit: it can be undone, bit for bit.
            if t.history().undo > 2 {
                t.undo().expect("the delta's undo");
                assert!(state(t).0 == before.0, "undoing a delta did not restore the voxels");
            }
            Ok(())
        }
    }
}

/// A replication client fed arbitrary bytes: as they are, then framed as its next message with a
/// valid checksum (so the packet decoder and the writes run). A refused or ignored message leaves
/// the client as it was; nothing panics.
pub fn check_apply_message(data: &[u8]) {
    let config = TerrainConfig { max_edit_voxels: 1 << 18, ..TerrainConfig::default() };
    let mut c =
        ReplicaClient::new(Terrain::new(MaterialTable::default(), config).expect("a valid voxel size"));
    let check = |c: &mut ReplicaClient, msg: &[u8]| {
        let (next, revision) = (c.expected(), c.terrain().revision());
        match c.apply(msg) {
            Ok(Applied::Ignored(_) | Applied::Held(_)) | Err(_) => {
                assert!(
                    c.expected() == next && c.terrain().revision() == revision,
                    "a refused message changed the client"
                );
            }
            Ok(_) => assert_eq!(c.expected(), next + 1),
        }
    };
    check(&mut c, data);
    if data.len() >= 34 {
        let mut framed = data.to_vec();
        framed[..4].copy_from_slice(b"VXR2");
        framed[4..12].copy_from_slice(&c.expected().to_le_bytes());
        let crc = crc32fast::hash(&framed);
        framed.extend_from_slice(&crc.to_le_bytes());
        check(&mut c, &framed);
    }
}

/// A chunk record read from a database, arbitrary bytes: refused with a typed error, or decoded to
/// voxels the world's table knows that encode to a record decoding to the same voxels.
pub fn check_chunk_record(data: &[u8]) {
    use crate::chunk_record::{CHUNK_VOXELS, decode_chunk, encode_chunk};
    let key = voxterra_core::StoreChunkKey::new(0, 0, 0);
    let table = MaterialTable::default();
    let known = table.solid_mask() | table.liquid_mask() | 1;
    let mut out = vec![Voxel::AIR; CHUNK_VOXELS];
    if decode_chunk(key, data, &mut out, known).is_ok() {
        assert!(out.iter().all(|v| known >> v.material().id() & 1 == 1), "only known materials");
        let mut again = vec![Voxel::AIR; CHUNK_VOXELS];
        decode_chunk(key, &encode_chunk(&out), &mut again, known).expect("a fresh record decodes");
        assert!(again == out, "a decoded record re-encodes to the same voxels");
    }
}
