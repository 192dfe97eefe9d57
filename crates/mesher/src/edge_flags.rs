//! Internal-edge flags for physics meshes: which triangle edges are real convex creases (*active*)
//! and which are flat or concave (*inactive*: a contact there must take the face's normal, or a
//! body sliding over it bumps). Neighbors across a chunk border come from the mesh of the region
//! grown by one voxel, read through the same padded source, never from the neighbor chunk's own
//! build; vertex positions decode bit-identically in every chunk, so the flags of meshing chunk by
//! chunk equal those of meshing the region whole.

use crate::extract::{MeshError, MeshStats, MeshWorkspace, Mesher};
use crate::output::PhysicsMesh;
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Region, VoxelRead};

/// An edge is active when the surface turns convex across it by more than this angle.
pub const ACTIVE_EDGE_DEGREES: f32 = 5.0;

/// Bit `i` of a triangle's flags: its edge `i` (corners `i` and `(i + 1) % 3`) is active.
pub const fn edge_bit(i: usize) -> u8 {
    1 << i
}

type Key = [u32; 3];

fn key(p: &Point3<f32>) -> Key {
    [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()]
}

fn normal(t: &[Point3<f32>; 3]) -> Option<Vector3<f32>> {
    (t[1] - t[0]).cross(&(t[2] - t[0])).try_normalize(0.0)
}

impl Mesher {
    /// Meshes `region` into `out` as [`Mesher::mesh`] does, and fills its edge flags
    /// ([`PhysicsMesh::edge_flags`]). Meshes the region grown by one voxel as well, for the
    /// neighbors of border triangles, so it reads two voxels around `region`.
    pub fn mesh_physics<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        region: &Region,
        ws: &mut MeshWorkspace,
        out: &mut PhysicsMesh,
    ) -> Result<MeshStats, MeshError> {
        let stats = self.mesh(src, region, ws, out)?;
        let grown = region.expanded(1);
        if grown.size().iter().any(|&s| s > PhysicsMesh::MAX_SIDE) {
            return Err(MeshError::TooWide {
                side: grown.size().into_iter().max().unwrap_or(0),
                limit: PhysicsMesh::MAX_SIDE,
            });
        }
        let mut around = std::mem::take(&mut ws.neighborhood);
        let r = self.mesh(src, &grown, ws, &mut around);
        if r.is_ok() {
            let flags = edge_flags(out, &around);
            out.set_edge_flags(flags);
        }
        ws.neighborhood = around;
        r.map(|_| stats)
    }
}

/// The flags of `own`'s triangles, given `around`, a mesh that holds them and every triangle
/// sharing an edge with them. Rules: an edge with exactly one neighbor is active when the
/// neighbor's far corner lies below this triangle's plane and the normals differ by more than
/// [`ACTIVE_EDGE_DEGREES`]; an edge with no neighbor (the mesh's boundary) or several (a
/// non-manifold edge) is active; every edge of a zero-area triangle is active.
pub fn edge_flags(own: &PhysicsMesh, around: &PhysicsMesh) -> Vec<u8> {
    // One id per distinct position of `around` (positions decode bit-identically in both meshes,
    // so equal bits are the same vertex). PERF: edges become one sortable u64 each, (low id,
    // high id, far corner id): 25 µs a surface chunk where a map keyed by positions took 76
    // (the `physics_chunks` probe).
    let mut ids: hashbrown::HashMap<Key, u64, foldhash::fast::FixedState> =
        hashbrown::HashMap::with_capacity_and_hasher(around.vertex_count(), Default::default());
    let mut at: Vec<Point3<f32>> = Vec::with_capacity(around.vertex_count());
    let around_ids: Vec<u64> = (0..around.vertex_count())
        .map(|v| {
            let p = around.position(v);
            *ids.entry(key(&p)).or_insert_with(|| {
                at.push(p);
                at.len() as u64 - 1
            })
        })
        .collect();
    // At most 65 536 vertices (u16 indices): ids fit 21 bits.
    const BITS: u32 = 21;
    let edge = |a: u64, b: u64| {
        if a <= b { (a << (2 * BITS)) | (b << BITS) } else { (b << (2 * BITS)) | (a << BITS) }
    };
    let mut edges: Vec<u64> = Vec::with_capacity(around.triangles().len() * 3);
    for t in around.triangles() {
        let v = t.map(|i| around_ids[i as usize]);
        for i in 0..3 {
            edges.push(edge(v[i], v[(i + 1) % 3]) | v[(i + 2) % 3]);
        }
    }
    edges.sort_unstable();
    let far_mask = (1u64 << BITS) - 1;
    let cos_limit = ACTIVE_EDGE_DEGREES.to_radians().cos();
    (0..own.triangles().len())
        .map(|t| {
            let p = own.triangles()[t].map(|v| own.position(v as usize));
            let Some(n) = normal(&p) else { return 0b111 };
            let id = p.map(|q| ids.get(&key(&q)).copied());
            let mut flags = 0u8;
            for i in 0..3 {
                let (a, b) = (p[i], p[(i + 1) % 3]);
                // An end `around` lacks: the edge has no neighbor there.
                let active = match (id[i], id[(i + 1) % 3]) {
                    (Some(ia), Some(ib)) => {
                        let ic = id[(i + 2) % 3].unwrap_or(u64::MAX);
                        let k = edge(ia, ib);
                        let start = edges.partition_point(|&e| e < k);
                        let mut others = edges[start..]
                            .iter()
                            .take_while(|&&e| e & !far_mask == k)
                            .filter(|&&e| e & far_mask != ic);
                        match (others.next(), others.next()) {
                            (Some(&e), None) => {
                                let d = at[(e & far_mask) as usize];
                                let convex = (d - a).dot(&n) < 0.0;
                                let bent = normal(&[b, a, d]).is_none_or(|m| m.dot(&n) < cos_limit);
                                convex && bent
                            }
                            _ => true,
                        }
                    }
                    _ => true,
                };
                if active {
                    flags |= edge_bit(i);
                }
            }
            flags
        })
        .collect()
}
