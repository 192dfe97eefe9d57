//! Internal-edge flags for physics meshes: which triangle edges are real convex creases (*active*)
//! and which are flat or concave (*inactive*: a contact there must take the face's normal, or a
//! body sliding over it bumps). Neighbors across a chunk border come from the mesh of the region
//! grown by one voxel, read through the same padded source, never from the neighbor chunk's own
//! build; vertex positions decode bit-identically in every chunk, so the flags of meshing chunk by
//! chunk equal those of meshing the region whole.

use crate::extract::{MeshError, MeshStats, MeshWorkspace, Mesher};
use crate::output::PhysicsMesh;
use std::collections::HashMap;
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

fn edge_key(a: &Point3<f32>, b: &Point3<f32>) -> (Key, Key) {
    let (ka, kb) = (key(a), key(b));
    if ka <= kb { (ka, kb) } else { (kb, ka) }
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
    let tri = |m: &PhysicsMesh, t: usize| m.triangles()[t].map(|v| m.position(v as usize));
    // Each undirected edge of `around`: the far corners of the triangles using it.
    let mut far: HashMap<(Key, Key), Vec<Point3<f32>>> = HashMap::with_capacity(around.triangles().len() * 2);
    for t in 0..around.triangles().len() {
        let p = tri(around, t);
        for i in 0..3 {
            far.entry(edge_key(&p[i], &p[(i + 1) % 3])).or_default().push(p[(i + 2) % 3]);
        }
    }
    let cos_limit = ACTIVE_EDGE_DEGREES.to_radians().cos();
    (0..own.triangles().len())
        .map(|t| {
            let p = tri(own, t);
            let Some(n) = normal(&p) else { return 0b111 };
            let mut flags = 0u8;
            for i in 0..3 {
                let (a, b, c) = (p[i], p[(i + 1) % 3], p[(i + 2) % 3]);
                let others: Vec<&Point3<f32>> = far
                    .get(&edge_key(&a, &b))
                    .map(|v| v.iter().filter(|d| key(d) != key(&c)).collect())
                    .unwrap_or_default();
                let active = match others.as_slice() {
                    [d] => {
                        let convex = (*d - a).dot(&n) < 0.0;
                        let bent = normal(&[b, a, **d]).is_none_or(|m| m.dot(&n) < cos_limit);
                        convex && bent
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
