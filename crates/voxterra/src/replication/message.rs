//! The message format (the table is in the module docs and `docs/format.md`): encoding, and a
//! parse that checks everything but the packet's voxels before anything is sized from it.

use super::{BlockBox, RegionKey, ReplicationError};
use voxterra_codec::{decode_packet, encode_packet};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Region, StoreChunkKey, Voxel};

pub(super) const MAGIC: &[u8; 4] = b"VXR2";
/// Magic, number, as-of sequence, kind, key, level.
pub(super) const HEADER: usize = 4 + 8 + 8 + 1 + 12 + 1;
const CRC: usize = 4;

/// What a message carries.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(super) enum Kind {
    /// A whole 16³ region at full resolution.
    Region(RegionKey),
    /// A 32³ chunk's mip at a level (1–3).
    Mip(StoreChunkKey, u32),
    /// A box inside a 16³ region the client holds (what edits changed there).
    Patch(RegionKey, BlockBox),
    /// Regions the client must stop calling ready (edits changed them; patches follow).
    Stale,
    /// Forget every region and mip held (the server could no longer tell what changed).
    Forget,
}

impl Kind {
    /// The box of voxels a message's packet holds (in the level's voxels for a mip).
    pub(super) fn region(&self) -> Option<Region> {
        let (min, size) = match *self {
            Kind::Region(k) => (Point3::new(k.x, k.y, k.z) * 16, [16; 3]),
            Kind::Patch(k, b) => {
                (Point3::new(k.x, k.y, k.z) * 16 + b.min.cast::<i32>().coords, b.size.map(u32::from))
            }
            Kind::Mip(k, level) => {
                let side = 32 >> level;
                (Point3::new(k.x, k.y, k.z) * side, [side as u32; 3])
            }
            Kind::Stale | Kind::Forget => return None,
        };
        Some(Region::from_min_size(min, size).expect("parsed keys keep their boxes in the i32 range"))
    }
}

/// A parsed message: its numbers, kind and payload (a packet, or a stale list), checksum checked.
pub(super) struct Parsed<'a> {
    pub(super) number: u64,
    pub(super) as_of: u64,
    pub(super) kind: Kind,
    pub(super) payload: &'a [u8],
}

/// Whether `key` scaled by `side` keeps its box inside the i32 voxel space.
fn in_range(key: [i32; 3], side: i64) -> bool {
    key.iter().all(|&c| {
        let lo = c as i64 * side;
        lo >= i32::MIN as i64 && lo + side <= i32::MAX as i64
    })
}

/// One key of a stale list, read from 12 bytes.
fn key_at(bytes: &[u8]) -> [i32; 3] {
    [0, 4, 8].map(|at| i32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes")))
}

pub(super) fn encode(number: u64, as_of: u64, kind: Kind, voxels: &[Voxel], stale: &[RegionKey]) -> Vec<u8> {
    let body = match kind.region() {
        Some(_) => packet(kind, voxels),
        None => stale.iter().flat_map(|k| [k.x, k.y, k.z]).flat_map(i32::to_le_bytes).collect(),
    };
    frame(number, as_of, kind, &body)
}

/// The packet of a box message's voxels: the part of a message every client sent the same box
/// shares.
pub(super) fn packet(kind: Kind, voxels: &[Voxel]) -> Vec<u8> {
    let mut out = Vec::new();
    if let Some(r) = kind.region() {
        encode_packet(voxels, r.size().map(|s| s as usize), &mut out);
    }
    out
}

/// The length of the message [`frame`] makes of a body of `body` bytes.
pub(super) fn framed_len(kind: Kind, body: usize) -> usize {
    HEADER + if matches!(kind, Kind::Patch(..)) { 6 } else { 0 } + body + CRC
}

/// A message: header, `body` (a packet, or a stale list), checksum.
pub(super) fn frame(number: u64, as_of: u64, kind: Kind, body: &[u8]) -> Vec<u8> {
    let (code, key, level) = match kind {
        Kind::Region(k) => (0u8, [k.x, k.y, k.z], 0u8),
        Kind::Mip(k, l) => (1, [k.x, k.y, k.z], l as u8),
        Kind::Patch(k, _) => (2, [k.x, k.y, k.z], 0),
        Kind::Stale => (3, [0; 3], 0),
        Kind::Forget => (3, [0; 3], 1),
    };
    let mut out = Vec::with_capacity(framed_len(kind, body.len()));
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&number.to_le_bytes());
    out.extend_from_slice(&as_of.to_le_bytes());
    out.push(code);
    for c in key {
        out.extend_from_slice(&c.to_le_bytes());
    }
    out.push(level);
    if let Kind::Patch(_, b) = kind {
        out.extend_from_slice(&[b.min.x, b.min.y, b.min.z, b.size[0], b.size[1], b.size[2]]);
    }
    out.extend_from_slice(body);
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks the frame: length, magic, checksum, kind and level, keys (the box a key names must lie
/// in the i32 voxel space: a mip's chunk, not only its coarse box), a patch's box inside its
/// region, a stale list of whole keys.
pub(super) fn parse(msg: &[u8]) -> Result<Parsed<'_>, ReplicationError> {
    if msg.len() < HEADER + CRC || &msg[..4] != MAGIC {
        return Err(ReplicationError::Malformed("too short or not a voxterra replication message"));
    }
    let (body, crc) = msg.split_at(msg.len() - CRC);
    if crc32fast::hash(body).to_le_bytes() != crc {
        return Err(ReplicationError::Malformed("checksum mismatch"));
    }
    let u64_at = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().expect("eight bytes"));
    let (number, as_of) = (u64_at(4), u64_at(12));
    let key = key_at(&body[21..33]);
    let level = body[33] as u32;
    let mut payload = &body[HEADER..];
    let kind = match (body[20], level) {
        (0, 0) if in_range(key, 16) => Kind::Region(RegionKey::new(key[0], key[1], key[2])),
        (1, 1..=3) if in_range(key, 32) => Kind::Mip(StoreChunkKey::new(key[0], key[1], key[2]), level),
        (2, 0) if in_range(key, 16) => {
            let b = payload.get(..6).ok_or(ReplicationError::Malformed("a patch without its box"))?;
            let (min, size) = ([b[0], b[1], b[2]], [b[3], b[4], b[5]]);
            if (0..3).any(|a| size[a] == 0 || min[a] as u32 + size[a] as u32 > 16) {
                return Err(ReplicationError::Malformed("a patch box outside its region"));
            }
            payload = &payload[6..];
            Kind::Patch(RegionKey::new(key[0], key[1], key[2]), BlockBox { min: Point3::from(min), size })
        }
        (3, 0) if key == [0; 3] => {
            if payload.len() % 12 != 0 || !payload.chunks(12).all(|k| in_range(key_at(k), 16)) {
                return Err(ReplicationError::Malformed("a stale list of partial or out-of-range keys"));
            }
            Kind::Stale
        }
        (3, 1) if key == [0; 3] && payload.is_empty() => Kind::Forget,
        (0..=3, _) => return Err(ReplicationError::Malformed("key out of range or bad level")),
        _ => return Err(ReplicationError::Malformed("unknown kind")),
    };
    Ok(Parsed { number, as_of, kind, payload })
}

/// The stale list's keys (a parsed [`Kind::Stale`] payload).
pub(super) fn stale_keys(payload: &[u8]) -> impl Iterator<Item = RegionKey> + '_ {
    payload.chunks_exact(12).map(|k| {
        let [x, y, z] = key_at(k);
        RegionKey::new(x, y, z)
    })
}

/// Decodes a parsed message's packet against the client's `known` materials.
pub(super) fn voxels(
    parsed: &Parsed<'_>,
    known: u64,
) -> Result<Option<(Region, Vec<Voxel>)>, ReplicationError> {
    let Some(r) = parsed.kind.region() else { return Ok(None) };
    let size = r.size().map(|s| s as usize);
    // At most a 32³ box (a 16³ region or patch, or a mip of one chunk).
    let mut v = vec![Voxel::AIR; size.iter().product()];
    decode_packet(parsed.payload, size, known, &mut v)?;
    Ok(Some((r, v)))
}
