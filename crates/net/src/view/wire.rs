//! The viewer's messages. The page speaks JSON text ([`ViewRequest`]); the server answers with
//! a JSON hello and statistics ([`ViewHello`], [`ViewStats`]) and binary frames for meshes, the
//! meshes to drop, and body poses, little-endian, laid out so the page reads each array as a typed
//! array without copying (every array starts at a multiple of its element's size):
//!
//! | frame | layout |
//! | --- | --- |
//! | mesh | `u8` [`MESH`], `u8` level, `u8` part (0 interior, 1 border, 2 whole; plus [`LIQUID`] for water), `u8` 0, `i32 × 3` node, `f32 × 3` origin, `f32` step, `u32` vertices, `u32` indices, then `u16 × 3` per vertex (position = origin + q × step, world units), `i8 × 2` per vertex (octahedral normal), `u8` per vertex (material), zeros to a multiple of 4, `u32` per index |
//! | drop | `u8` [`DROP`], `u8` level, `u8` part (with [`LIQUID`]), `u8` 0, `i32 × 3` node |
//! | piece | `u8` [`PIECE`], `u8 × 3` 0, `u32` body id, then a mesh frame (its node zeros): the piece's render mesh around its centre of mass, sent once before its first pose |
//! | poses | `u8` [`POSES`], `u8 × 3` 0, `u32` count, then per body `u32` id, `u8` shape (0 ball, 1 box, 2 rock: the unit icosahedron scaled by the half extents, 3 a piece an edit cut loose: the piece frame's mesh, half extents 1), `u8 × 3` 0, `f32 × 3` half extents, `f32 × 3` position, `f32 × 4` rotation (x, y, z, w) |

use serde::{Deserialize, Serialize};
use voxterra::core::nalgebra::{Point3, Vector3};
use voxterra::lod::LodMeshKey;
use voxterra::mesher::{ClusterPart, RenderMesh};

/// A mesh frame's first byte.
pub const MESH: u8 = 1;
/// A drop frame's first byte.
pub const DROP: u8 = 2;
/// A poses frame's first byte.
pub const POSES: u8 = 3;
/// A piece frame's first byte.
pub const PIECE: u8 = 4;
/// The part byte's bit for the water surface's meshes (and their drops).
pub const LIQUID: u8 = 0x80;
/// A mesh frame's header bytes.
pub const MESH_HEADER: usize = 40;

/// What the page asks, as JSON text: the first message is the token, then any of the others.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ViewRequest {
    /// The session's secret (from the page's URL fragment).
    Token(String),
    /// Where the camera is, world units: the levels of detail follow it.
    Camera([f32; 3]),
    /// Dig (or raise, with material) a sphere at `at` of `radius`, world units.
    Edit {
        /// The sphere's center.
        at: [f32; 3],
        /// Its radius.
        radius: f32,
        /// Raise terrain instead of digging.
        raise: bool,
    },
    /// Drop a body at `at`, world units.
    Drop {
        /// Where.
        at: [f32; 3],
        /// Which shape.
        shape: DropShape,
    },
}

impl ViewRequest {
    /// Every number it carries is finite (JSON has no infinities: a number past `f32` parses as
    /// one; the server refuses such requests where it uses them).
    pub fn is_finite(&self) -> bool {
        match self {
            ViewRequest::Token(_) => true,
            ViewRequest::Camera(at) | ViewRequest::Drop { at, .. } => at.iter().all(|c| c.is_finite()),
            ViewRequest::Edit { at, radius, .. } => at.iter().chain([radius]).all(|c| c.is_finite()),
        }
    }
}

/// A body the page drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DropShape {
    /// A ball.
    Ball,
    /// A box.
    Box,
    /// A convex rock.
    Rock,
}

/// The server's first message to a page that gave the right token.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewHello {
    /// World units a voxel.
    pub voxel_size: f32,
    /// The stored voxels' box, world units, when there are any.
    pub world: Option<[[f32; 3]; 2]>,
    /// Each material's id, name, sRGB color and whether it is a liquid.
    pub materials: Vec<ViewMaterial>,
    /// Largest brush radius an edit may have, world units.
    pub max_brush: f32,
}

/// One material as the page draws it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ViewMaterial {
    /// Its id (the byte in mesh frames).
    pub id: u8,
    /// Its name.
    pub name: String,
    /// sRGB.
    pub color: [u8; 3],
    /// Drawn as water.
    pub liquid: bool,
}

/// What the server tells the page about itself and the page's view, about twice a second.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ViewStats {
    /// Triangles drawn at each level of detail, finest first.
    pub triangles: Vec<usize>,
    /// Nodes drawn at each level.
    pub nodes: Vec<usize>,
    /// The server's last tick, milliseconds.
    pub tick_ms: f32,
    /// The server's longest tick since the last figures, milliseconds (a view's first meshes
    /// are made in a tick).
    pub worst_tick_ms: f32,
    /// Bodies awake.
    pub awake: usize,
    /// Bodies in all.
    pub bodies: usize,
    /// Contact pairs between bodies and terrain.
    pub contacts: usize,
    /// Bytes sent to this page a second.
    pub bytes_per_second: f32,
    /// The answer to the page's last edit: `None` while none, else `Ok` or why it was refused.
    pub last_edit: Option<Result<(), String>>,
    /// The answer to the page's last drop, likewise.
    pub last_drop: Option<Result<(), String>>,
}

/// Both ways a message can be JSON: the server's hello and statistics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewText {
    /// See [`ViewHello`].
    Hello(ViewHello),
    /// See [`ViewStats`].
    Stats(ViewStats),
}

fn part_byte(p: ClusterPart) -> u8 {
    match p {
        ClusterPart::Interior => 0,
        ClusterPart::Border => 1,
        ClusterPart::Whole => 2,
    }
}

fn key_header(kind: u8, key: &LodMeshKey, out: &mut Vec<u8>) {
    out.extend_from_slice(&[kind, key.node.level as u8, part_byte(key.part), 0]);
    for c in [key.node.x, key.node.y, key.node.z] {
        out.extend_from_slice(&c.to_le_bytes());
    }
}

/// A unit normal as two signed bytes on the octahedron (Cigolle et al. 2014): 16 bits a normal,
/// within about a degree.
pub fn octahedral(n: &Vector3<f32>) -> [i8; 2] {
    let l1 = n.x.abs() + n.y.abs() + n.z.abs();
    if l1.is_nan() || l1 <= 0.0 {
        return [0, 127];
    }
    let (mut x, mut y) = (n.x / l1, n.y / l1);
    if n.z < 0.0 {
        (x, y) = ((1.0 - y.abs()) * x.signum(), (1.0 - x.abs()) * y.signum());
    }
    [x, y].map(|c| (c * 127.0).round().clamp(-127.0, 127.0) as i8)
}

/// The unit normal two octahedral bytes stand for.
pub fn from_octahedral(b: [i8; 2]) -> Vector3<f32> {
    let (x, y) = (b[0] as f32 / 127.0, b[1] as f32 / 127.0);
    let z = 1.0 - x.abs() - y.abs();
    let (x, y) = if z < 0.0 { ((1.0 - y.abs()) * x.signum(), (1.0 - x.abs()) * y.signum()) } else { (x, y) };
    Vector3::new(x, y, z).normalize()
}

/// Appends `mesh` (voxel units) as a mesh frame, positions scaled by `voxel_size` to world units
/// and quantized to 16 bits over the mesh's own box.
pub fn encode_mesh(key: &LodMeshKey, mesh: &RenderMesh, voxel_size: f32, out: &mut Vec<u8>) {
    let start = out.len();
    key_header(MESH, key, out);
    let world: Vec<Point3<f32>> = mesh.positions.iter().map(|p| p * voxel_size).collect();
    let (lo, hi) = world
        .iter()
        .fold((Point3::from([f32::INFINITY; 3]), Point3::from([f32::NEG_INFINITY; 3])), |(lo, hi), p| {
            (lo.inf(p), hi.sup(p))
        });
    let lo = if world.is_empty() { Point3::origin() } else { lo };
    let extent = if world.is_empty() { 0.0 } else { (hi - lo).amax() };
    let step = if extent > 0.0 { extent / 65535.0 } else { 1.0 };
    for c in lo.iter().chain(std::iter::once(&step)) {
        out.extend_from_slice(&c.to_le_bytes());
    }
    out.extend_from_slice(&(world.len() as u32).to_le_bytes());
    out.extend_from_slice(&((mesh.indices.len() * 3) as u32).to_le_bytes());
    debug_assert_eq!(out.len() - start, MESH_HEADER);
    for p in &world {
        for a in 0..3 {
            let q = ((p[a] - lo[a]) / step).round().clamp(0.0, 65535.0) as u16;
            out.extend_from_slice(&q.to_le_bytes());
        }
    }
    for n in &mesh.normals {
        out.extend(octahedral(n).map(|b| b as u8));
    }
    out.extend(mesh.materials.iter().map(|m| m.id()));
    while !(out.len() - start).is_multiple_of(4) {
        out.push(0);
    }
    for t in &mesh.indices {
        for i in t {
            out.extend_from_slice(&i.to_le_bytes());
        }
    }
}

/// Appends a piece frame: body `id`'s render mesh (world units around its centre of mass).
pub fn encode_piece(id: u32, mesh: &RenderMesh, out: &mut Vec<u8>) {
    out.extend_from_slice(&[PIECE, 0, 0, 0]);
    out.extend_from_slice(&id.to_le_bytes());
    let key =
        LodMeshKey { node: voxterra::lod::LodNode { level: 0, x: 0, y: 0, z: 0 }, part: ClusterPart::Whole };
    encode_mesh(&key, mesh, 1.0, out);
}

/// Appends a drop frame for `key`.
pub fn encode_drop(key: &LodMeshKey, out: &mut Vec<u8>) {
    key_header(DROP, key, out);
}

/// A mesh frame read back ([`decode_mesh`]).
#[derive(Clone, Debug, PartialEq)]
pub struct DecodedMesh {
    /// The node's level.
    pub level: u8,
    /// The part byte (with [`LIQUID`] for water).
    pub part: u8,
    /// The node's coordinates at its level.
    pub node: [i32; 3],
    /// Vertex positions, world units.
    pub positions: Vec<Point3<f32>>,
    /// Unit vertex normals.
    pub normals: Vec<Vector3<f32>>,
    /// Each vertex's material id.
    pub materials: Vec<u8>,
    /// Triangles as vertex indices, three a triangle.
    pub indices: Vec<u32>,
}

/// A mesh frame read back (for tests and Rust viewers); `None` when the bytes are not a whole
/// mesh frame.
pub fn decode_mesh(b: &[u8]) -> Option<DecodedMesh> {
    let u32_at = |o: usize| b.get(o..o + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
    let f32_at = |o: usize| u32_at(o).map(f32::from_bits);
    if b.first() != Some(&MESH) || b.len() < MESH_HEADER {
        return None;
    }
    let node = [4, 8, 12].map(|o| u32_at(o).map_or(0, |v| v as i32));
    let origin = Point3::new(f32_at(16)?, f32_at(20)?, f32_at(24)?);
    let step = f32_at(28)?;
    let (nv, ni) = (u32_at(32)? as usize, u32_at(36)? as usize);
    let normals_at = MESH_HEADER.checked_add(nv.checked_mul(6)?)?;
    let mats_at = normals_at.checked_add(nv.checked_mul(2)?)?;
    let idx_at = mats_at.checked_add(nv)?.next_multiple_of(4);
    if b.len() != idx_at.checked_add(ni.checked_mul(4)?)? {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([b[o], b[o + 1]]) as f32;
    let positions = (0..nv)
        .map(|v| {
            let o = MESH_HEADER + 6 * v;
            origin + Vector3::new(u16_at(o), u16_at(o + 2), u16_at(o + 4)) * step
        })
        .collect();
    let normals = (0..nv)
        .map(|v| from_octahedral([b[normals_at + 2 * v] as i8, b[normals_at + 2 * v + 1] as i8]))
        .collect();
    let materials = b[mats_at..mats_at + nv].to_vec();
    let indices = (0..ni).map(|i| u32_at(idx_at + 4 * i).unwrap_or(0)).collect();
    Some(DecodedMesh { level: b[1], part: b[2], node, positions, normals, materials, indices })
}
