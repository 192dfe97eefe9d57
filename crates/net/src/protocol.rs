//! The wire protocol: length-prefixed frames (a little-endian u32 counting the kind byte and the
//! payload, then the kind, then the payload), checked against a size cap before anything is
//! allocated. Clients send [`ClientFrame`]s, the server [`ServerFrame`]s; every field is bounded
//! and a frame that does not decode is a typed [`ProtocolError`].

use voxterra::core::Material;
use voxterra::core::nalgebra::Point3;
use voxterra::replication::{RegionKey, ResendRequest};
use voxterra::{Brush, BrushOp, BrushShape};

/// The protocol version a client states first; the server refuses any other, naming both.
pub const PROTOCOL_VERSION: u16 = 2;
/// The largest frame a client may send (bytes after the length prefix): the server reads no more.
pub const CLIENT_FRAME_MAX: u32 = 64 * 1024;
/// The largest frame the server sends: a stale notice of many regions, or a region's hashes.
pub const SERVER_FRAME_MAX: u32 = 16 << 20;
/// Most viewers a client states.
pub const MAX_VIEWERS: usize = 16;
/// Longest token a client presents.
pub const MAX_TOKEN: usize = 256;
/// Most regions one hash request names.
pub const MAX_HASHED_REGIONS: usize = 4096;

/// What a client sends.
#[derive(Clone, Debug, PartialEq)]
pub enum ClientFrame {
    /// The first frame: the protocol version, the secret token, and the session to resume (0 for a
    /// new one).
    Hello {
        /// [`PROTOCOL_VERSION`] of the client.
        version: u16,
        /// The server's secret.
        token: Vec<u8>,
        /// A session id from an earlier [`ServerFrame::Welcome`], or 0.
        resume: u64,
    },
    /// Where the client's viewers are (world units).
    Viewers(Vec<Point3<f32>>),
    /// An edit request, answered by [`ServerFrame::EditReply`] with the same id.
    Edit {
        /// The client's number for it.
        id: u32,
        /// The edit.
        brush: Brush,
    },
    /// Messages to send again (the replica client's [`ResendRequest`]).
    Resend(ResendRequest),
    /// The hashes of the server's voxels in these regions, for the client to compare with its own.
    HashRequest(Vec<RegionKey>),
}

/// Why the server refused a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefusedWhy {
    /// Another protocol version.
    Version,
    /// A wrong or missing token.
    Token,
    /// The server holds as many clients as it takes.
    Full,
    /// The first frame was not a hello, or came too late.
    Handshake,
}

/// Why an edit request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EditRefused {
    /// A NaN or infinite parameter, a radius not positive, an inverted box, an unknown material.
    Invalid,
    /// Outside the world the server serves.
    OutsideWorld,
    /// A brush larger than the server allows.
    TooLarge,
    /// More requests a second than the server allows this client.
    RateLimited,
    /// The terrain refused it (limits).
    Terrain,
}

/// What the server sends.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerFrame {
    /// The handshake's answer: the server's version, the session id (resume with it), and what
    /// the client's terrain needs: the voxel size and the material table (JSON, as in terrain
    /// files).
    Welcome {
        /// [`PROTOCOL_VERSION`] of the server.
        version: u16,
        /// This client's session.
        session: u64,
        /// True when the hello's session was resumed: the client keeps what it holds and asks
        /// for what it missed; false for a new session (it starts afresh).
        resumed: bool,
        /// The terrain's voxel size.
        voxel_size: f32,
        /// The material table, JSON.
        table: Vec<u8>,
    },
    /// The client is refused and disconnected.
    Refused {
        /// Why.
        why: RefusedWhy,
        /// The server's protocol version.
        version: u16,
    },
    /// One replication message ([`voxterra::replication::ReplicaClient::apply`]).
    Replication(Vec<u8>),
    /// The answer to [`ClientFrame::Edit`]: the terrain's sequence after it, or why not.
    EditReply {
        /// The request's id.
        id: u32,
        /// The sequence the edit made, or why it was refused.
        result: Result<u64, EditRefused>,
    },
    /// Region hashes ([`region_hash`] of the server's voxels), in the order asked, as of the
    /// server terrain's sequence `as_of`: a client compares them once it has applied the
    /// replication messages up to that sequence (so it knows which of its regions edits made
    /// stale before the hashing).
    Hashes {
        /// The terrain's sequence when hashed.
        as_of: u64,
        /// Per region asked, its hash.
        hashes: Vec<(RegionKey, u64)>,
    },
}

/// A frame that does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// A length prefix over the cap (checked before reading the frame).
    #[error("a frame of {len} bytes is over the cap of {cap}")]
    TooLarge {
        /// The prefix's length.
        len: u32,
        /// The cap.
        cap: u32,
    },
    /// An empty frame (no kind byte).
    #[error("an empty frame")]
    Empty,
    /// A kind byte no frame has.
    #[error("unknown frame kind {0:#04x}")]
    UnknownKind(u8),
    /// The payload ends early or runs on past its fields.
    #[error("frame kind {kind:#04x}: the payload is {len} bytes, not what its fields say")]
    Length {
        /// The frame's kind.
        kind: u8,
        /// Its payload's length.
        len: usize,
    },
    /// A field out of its range (a count over its cap, a code no variant has, a bad brush).
    #[error("frame kind {kind:#04x}: {what}")]
    Field {
        /// The frame's kind.
        kind: u8,
        /// Which field.
        what: &'static str,
    },
}

/// FNV-1a over the voxels of a region (their 16-bit forms, little-endian, in buffer order): what
/// both sides hash to compare a region.
pub fn region_hash(voxels: &[voxterra::core::Voxel]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for v in voxels {
        for b in v.to_bits().to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// [`region_hash`] of `terrain`'s voxels in region `k`; 0 for a key outside the voxel space. What
/// the server answers a hash request with and what the client compares it to.
pub fn terrain_region_hash(terrain: &voxterra::Terrain, k: &RegionKey) -> u64 {
    use voxterra::core::VoxelRead;
    let Ok(r) = k.region() else { return 0 };
    let mut v = vec![voxterra::core::Voxel::AIR; r.len().unwrap_or(0)];
    match terrain.store().read_box(&r, &mut v) {
        Ok(()) => region_hash(&v),
        Err(_) => 0,
    }
}

/// Appends `kind` and `payload` as one frame.
fn frame(out: &mut Vec<u8>, kind: u8, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32 + 1).to_le_bytes());
    out.push(kind);
    out.extend_from_slice(payload);
}

/// A reader over a payload that fails with the frame's kind.
struct Fields<'a> {
    kind: u8,
    bytes: &'a [u8],
    len: usize,
}

impl<'a> Fields<'a> {
    fn new(kind: u8, bytes: &'a [u8]) -> Self {
        Fields { kind, bytes, len: bytes.len() }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtocolError> {
        if self.bytes.len() < n {
            return Err(ProtocolError::Length { kind: self.kind, len: self.len });
        }
        let (a, b) = self.bytes.split_at(n);
        self.bytes = b;
        Ok(a)
    }
    fn u8(&mut self) -> Result<u8, ProtocolError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, ProtocolError> {
        Ok(u16::from_le_bytes(self.take(2)?.try_into().expect("2 bytes")))
    }
    fn u32(&mut self) -> Result<u32, ProtocolError> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn u64(&mut self) -> Result<u64, ProtocolError> {
        Ok(u64::from_le_bytes(self.take(8)?.try_into().expect("8 bytes")))
    }
    fn i32(&mut self) -> Result<i32, ProtocolError> {
        Ok(i32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn f32(&mut self) -> Result<f32, ProtocolError> {
        Ok(f32::from_le_bytes(self.take(4)?.try_into().expect("4 bytes")))
    }
    fn point(&mut self) -> Result<Point3<f32>, ProtocolError> {
        Ok(Point3::new(self.f32()?, self.f32()?, self.f32()?))
    }
    fn key(&mut self) -> Result<RegionKey, ProtocolError> {
        Ok(RegionKey::new(self.i32()?, self.i32()?, self.i32()?))
    }
    /// A count, refused past `cap`, and that many items of `size` bytes must follow.
    fn count(&mut self, cap: usize, size: usize, what: &'static str) -> Result<usize, ProtocolError> {
        let n = self.u32()? as usize;
        if n > cap {
            return Err(ProtocolError::Field { kind: self.kind, what });
        }
        if self.bytes.len() < n * size {
            return Err(ProtocolError::Length { kind: self.kind, len: self.len });
        }
        Ok(n)
    }
    fn rest(self) -> &'a [u8] {
        self.bytes
    }
    fn end(self) -> Result<(), ProtocolError> {
        if self.bytes.is_empty() {
            Ok(())
        } else {
            Err(ProtocolError::Length { kind: self.kind, len: self.len })
        }
    }
}

fn put_point(out: &mut Vec<u8>, p: &Point3<f32>) {
    for c in [p.x, p.y, p.z] {
        out.extend_from_slice(&c.to_le_bytes());
    }
}

fn put_key<const S: u32>(out: &mut Vec<u8>, k: &voxterra::core::ChunkKey<S>) {
    for c in [k.x, k.y, k.z] {
        out.extend_from_slice(&c.to_le_bytes());
    }
}

impl ClientFrame {
    /// Appends the frame's bytes (length prefix included) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut p = Vec::new();
        let kind = match self {
            ClientFrame::Hello { version, token, resume } => {
                p.extend_from_slice(&version.to_le_bytes());
                p.extend_from_slice(&resume.to_le_bytes());
                p.push(token.len().min(MAX_TOKEN) as u8);
                p.extend_from_slice(&token[..token.len().min(MAX_TOKEN)]);
                0x01
            }
            ClientFrame::Viewers(v) => {
                p.extend_from_slice(&(v.len() as u32).to_le_bytes());
                v.iter().for_each(|q| put_point(&mut p, q));
                0x02
            }
            ClientFrame::Edit { id, brush } => {
                p.extend_from_slice(&id.to_le_bytes());
                let (shape, pts, r): (u8, [Point3<f32>; 2], f32) = match brush.shape {
                    BrushShape::Sphere { center, radius } => (0, [center, center], radius),
                    BrushShape::Box { min, max } => (1, [min, max], 0.0),
                    BrushShape::Capsule { a, b, radius } => (2, [a, b], radius),
                };
                let (op, m) = match brush.op {
                    BrushOp::Add(m) => (0u8, m.id()),
                    BrushOp::Subtract => (1, 0),
                    BrushOp::Paint(m) => (2, m.id()),
                    BrushOp::Smooth => (3, 0),
                };
                p.push(shape);
                pts.iter().for_each(|q| put_point(&mut p, q));
                p.extend_from_slice(&r.to_le_bytes());
                p.push(op);
                p.push(m);
                0x03
            }
            ClientFrame::Resend(r) => {
                p.extend_from_slice(&r.from.to_le_bytes());
                p.extend_from_slice(&(r.missing.len() as u32).to_le_bytes());
                r.missing.iter().for_each(|n| p.extend_from_slice(&n.to_le_bytes()));
                0x04
            }
            ClientFrame::HashRequest(keys) => {
                p.extend_from_slice(&(keys.len() as u32).to_le_bytes());
                keys.iter().for_each(|k| put_key(&mut p, k));
                0x05
            }
        };
        frame(out, kind, &p);
    }

    /// Decodes one frame's body (the bytes after the length prefix).
    pub fn decode(body: &[u8]) -> Result<Self, ProtocolError> {
        let (&kind, payload) = body.split_first().ok_or(ProtocolError::Empty)?;
        let mut f = Fields::new(kind, payload);
        let frame = match kind {
            0x01 => {
                let version = f.u16()?;
                let resume = f.u64()?;
                let n = f.u8()? as usize;
                if n > MAX_TOKEN {
                    return Err(ProtocolError::Field { kind, what: "token length" });
                }
                let token = f.take(n)?.to_vec();
                ClientFrame::Hello { version, token, resume }
            }
            0x02 => {
                let n = f.count(MAX_VIEWERS, 12, "viewer count")?;
                ClientFrame::Viewers((0..n).map(|_| f.point()).collect::<Result<_, _>>()?)
            }
            0x03 => {
                let id = f.u32()?;
                let shape = f.u8()?;
                let (a, b, r) = (f.point()?, f.point()?, f.f32()?);
                let (op, m) = (f.u8()?, f.u8()?);
                let material =
                    Material::new(m).map_err(|_| ProtocolError::Field { kind, what: "material" })?;
                let shape = match shape {
                    0 => BrushShape::Sphere { center: a, radius: r },
                    1 => BrushShape::Box { min: a, max: b },
                    2 => BrushShape::Capsule { a, b, radius: r },
                    _ => return Err(ProtocolError::Field { kind, what: "brush shape" }),
                };
                let op = match op {
                    0 => BrushOp::Add(material),
                    1 => BrushOp::Subtract,
                    2 => BrushOp::Paint(material),
                    3 => BrushOp::Smooth,
                    _ => return Err(ProtocolError::Field { kind, what: "brush op" }),
                };
                ClientFrame::Edit { id, brush: Brush { shape, op } }
            }
            0x04 => {
                let from = f.u64()?;
                let n = f.count(CLIENT_FRAME_MAX as usize / 8, 8, "missing count")?;
                let missing = (0..n).map(|_| f.u64()).collect::<Result<_, _>>()?;
                ClientFrame::Resend(ResendRequest { missing, from })
            }
            0x05 => {
                let n = f.count(MAX_HASHED_REGIONS, 12, "region count")?;
                ClientFrame::HashRequest((0..n).map(|_| f.key()).collect::<Result<_, _>>()?)
            }
            _ => return Err(ProtocolError::UnknownKind(kind)),
        };
        f.end()?;
        Ok(frame)
    }
}

impl ServerFrame {
    /// Appends the frame's bytes (length prefix included) to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut p = Vec::new();
        let kind = match self {
            ServerFrame::Welcome { version, session, resumed, voxel_size, table } => {
                p.extend_from_slice(&version.to_le_bytes());
                p.extend_from_slice(&session.to_le_bytes());
                p.push(u8::from(*resumed));
                p.extend_from_slice(&voxel_size.to_le_bytes());
                p.extend_from_slice(table);
                0x81
            }
            ServerFrame::Refused { why, version } => {
                p.push(*why as u8);
                p.extend_from_slice(&version.to_le_bytes());
                0x82
            }
            ServerFrame::Replication(msg) => {
                p.extend_from_slice(msg);
                0x83
            }
            ServerFrame::EditReply { id, result } => {
                p.extend_from_slice(&id.to_le_bytes());
                match result {
                    Ok(seq) => {
                        p.push(0);
                        p.extend_from_slice(&seq.to_le_bytes());
                    }
                    Err(e) => p.push(*e as u8 + 1),
                }
                0x84
            }
            ServerFrame::Hashes { as_of, hashes } => {
                p.extend_from_slice(&as_of.to_le_bytes());
                p.extend_from_slice(&(hashes.len() as u32).to_le_bytes());
                for (k, hash) in hashes {
                    put_key(&mut p, k);
                    p.extend_from_slice(&hash.to_le_bytes());
                }
                0x85
            }
        };
        frame(out, kind, &p);
    }

    /// Decodes one frame's body (the bytes after the length prefix).
    pub fn decode(body: &[u8]) -> Result<Self, ProtocolError> {
        let (&kind, payload) = body.split_first().ok_or(ProtocolError::Empty)?;
        let mut f = Fields::new(kind, payload);
        let frame = match kind {
            0x81 => {
                let version = f.u16()?;
                let session = f.u64()?;
                let resumed = match f.u8()? {
                    0 => false,
                    1 => true,
                    _ => return Err(ProtocolError::Field { kind, what: "resumed" }),
                };
                let voxel_size = f.f32()?;
                return Ok(ServerFrame::Welcome {
                    version,
                    session,
                    resumed,
                    voxel_size,
                    table: f.rest().to_vec(),
                });
            }
            0x82 => {
                let why = match f.u8()? {
                    0 => RefusedWhy::Version,
                    1 => RefusedWhy::Token,
                    2 => RefusedWhy::Full,
                    3 => RefusedWhy::Handshake,
                    _ => return Err(ProtocolError::Field { kind, what: "refusal" }),
                };
                ServerFrame::Refused { why, version: f.u16()? }
            }
            0x83 => return Ok(ServerFrame::Replication(f.rest().to_vec())),
            0x84 => {
                let id = f.u32()?;
                let result = match f.u8()? {
                    0 => Ok(f.u64()?),
                    1 => Err(EditRefused::Invalid),
                    2 => Err(EditRefused::OutsideWorld),
                    3 => Err(EditRefused::TooLarge),
                    4 => Err(EditRefused::RateLimited),
                    5 => Err(EditRefused::Terrain),
                    _ => return Err(ProtocolError::Field { kind, what: "edit result" }),
                };
                ServerFrame::EditReply { id, result }
            }
            0x85 => {
                let as_of = f.u64()?;
                let n = f.count(MAX_HASHED_REGIONS, 20, "region count")?;
                let hashes = (0..n).map(|_| Ok((f.key()?, f.u64()?))).collect::<Result<_, _>>()?;
                ServerFrame::Hashes { as_of, hashes }
            }
            _ => return Err(ProtocolError::UnknownKind(kind)),
        };
        f.end()?;
        Ok(frame)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn point() -> impl Strategy<Value = Point3<f32>> {
        (-1e6f32..1e6, -1e6f32..1e6, -1e6f32..1e6).prop_map(|(x, y, z)| Point3::new(x, y, z))
    }

    fn client_frame() -> impl Strategy<Value = ClientFrame> {
        prop_oneof![
            (any::<u16>(), proptest::collection::vec(any::<u8>(), 0..MAX_TOKEN), any::<u64>())
                .prop_map(|(version, token, resume)| ClientFrame::Hello { version, token, resume }),
            proptest::collection::vec(point(), 0..MAX_VIEWERS).prop_map(ClientFrame::Viewers),
            (any::<u32>(), point(), 0.1f32..50.0, 0u8..3).prop_map(|(id, c, r, op)| ClientFrame::Edit {
                id,
                brush: Brush {
                    shape: BrushShape::Sphere { center: c, radius: r },
                    op: [BrushOp::Subtract, BrushOp::Smooth, BrushOp::Add(voxterra::core::materials::ROCK)]
                        [op as usize],
                },
            }),
            (any::<u64>(), proptest::collection::vec(any::<u64>(), 0..64))
                .prop_map(|(from, missing)| ClientFrame::Resend(ResendRequest { missing, from })),
            proptest::collection::vec((any::<i32>(), any::<i32>(), any::<i32>()), 0..64).prop_map(|k| {
                ClientFrame::HashRequest(k.into_iter().map(|(x, y, z)| RegionKey::new(x, y, z)).collect())
            }),
        ]
    }

    proptest! {
        /// Every client frame decodes to itself; its length prefix counts its body.
        #[test]
        fn client_frames_round_trip(f in client_frame()) {
            let mut bytes = Vec::new();
            f.encode(&mut bytes);
            let len = u32::from_le_bytes(bytes[..4].try_into().unwrap()) as usize;
            prop_assert_eq!(len, bytes.len() - 4);
            prop_assert_eq!(ClientFrame::decode(&bytes[4..]).unwrap(), f);
        }

        /// Arbitrary bytes decode or give a typed error, never a panic, on either side.
        #[test]
        fn arbitrary_bytes_are_refused_or_decoded(body in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = ClientFrame::decode(&body);
            let _ = ServerFrame::decode(&body);
        }

        /// Server frames round-trip too.
        #[test]
        fn server_frames_round_trip(id in any::<u32>(), seq in any::<u64>(), hashes in proptest::collection::vec((any::<i32>(), any::<u64>()), 0..32)) {
            let frames = [
                ServerFrame::Welcome { version: PROTOCOL_VERSION, session: seq, resumed: true, voxel_size: 0.5, table: b"{}".to_vec() },
                ServerFrame::Refused { why: RefusedWhy::Token, version: PROTOCOL_VERSION },
                ServerFrame::Replication(vec![1, 2, 3]),
                ServerFrame::EditReply { id, result: Ok(seq) },
                ServerFrame::EditReply { id, result: Err(EditRefused::RateLimited) },
                ServerFrame::Hashes { as_of: seq, hashes: hashes.iter().map(|&(x, h)| (RegionKey::new(x, -x, 7), h)).collect() },
            ];
            for f in frames {
                let mut bytes = Vec::new();
                f.encode(&mut bytes);
                prop_assert_eq!(ServerFrame::decode(&bytes[4..]).unwrap(), f);
            }
        }
    }

    /// A count past its cap is refused before its items are read.
    #[test]
    fn counts_past_their_caps_are_refused() {
        let mut body = vec![0x05];
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            ClientFrame::decode(&body),
            Err(ProtocolError::Field { kind: 0x05, what: "region count" })
        );
        assert_eq!(ClientFrame::decode(&[0x42]), Err(ProtocolError::UnknownKind(0x42)));
        assert_eq!(ClientFrame::decode(&[]), Err(ProtocolError::Empty));
    }
}
