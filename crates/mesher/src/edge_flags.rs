//! Internal-edge flags for physics meshes: which triangle edges are real convex creases (*active*)
//! and which are flat or concave (*inactive*: a contact there must take the face's normal, or a
//! body sliding over it bumps). Neighbors across a chunk border come from the mesh of the region
//! grown by one voxel, read through the same padded source, never from the neighbor chunk's own
//! build; a vertex is its cell, which every chunk places identically, so the flags of meshing
//! chunk by chunk equal those of meshing the region whole.

use crate::extract::{MeshError, MeshStats, MeshWorkspace, Mesher};
use crate::output::{MeshOutput, PhysicsMesh};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Region, VoxelRead};

/// An edge is active when the surface turns convex across it by more than this angle.
pub const ACTIVE_EDGE_DEGREES: f32 = 5.0;

/// Bit `i` of a triangle's flags: its edge `i` (corners `i` and `(i + 1) % 3`) is active.
pub const fn edge_bit(i: usize) -> u8 {
    1 << i
}

/// Scratch of the edge buckets, kept in the [`MeshWorkspace`].
#[derive(Default, Debug)]
pub(crate) struct EdgeScratch {
    /// Per vertex, where its bucket starts (and, last, the end).
    start: Vec<u32>,
    fill: Vec<u32>,
    /// Per edge, in its lower vertex's bucket: (higher vertex, far corner).
    entries: Vec<[u16; 2]>,
    /// Per vertex of the grown mesh, its number in the kept mesh.
    renumber: Vec<u32>,
    /// Per vertex of the grown mesh, its position decoded.
    points: Vec<Point3<f32>>,
}

/// The triangle's (unnormalized) face normal.
fn face(t: &[Point3<f32>; 3]) -> Vector3<f32> {
    (t[1] - t[0]).cross(&(t[2] - t[0]))
}

/// Whether the surface turns convex from the triangle with face normal `n` (not zero) across its
/// edge `a`–`b` to the neighbor whose far corner is `d` by more than [`ACTIVE_EDGE_DEGREES`]: `d`
/// below the triangle's plane, and the neighbor's normal `m` (a zero one counts as bent) at an
/// angle whose cosine is under the limit's, compared squared: `m·n < cos |m| |n|` without a
/// square root.
pub fn convex_crease(n: &Vector3<f32>, a: &Point3<f32>, b: &Point3<f32>, d: &Point3<f32>) -> bool {
    let cos = ACTIVE_EDGE_DEGREES.to_radians().cos();
    if (d - a).dot(n) >= 0.0 {
        return false;
    }
    let m = face(&[*b, *a, *d]);
    let (dot, mm) = (m.dot(n), m.norm_squared());
    mm == 0.0 || dot < 0.0 || dot * dot < cos * cos * mm * n.norm_squared()
}

impl Mesher {
    /// Meshes `region` into `out` as [`Mesher::mesh`] does, and fills its edge flags
    /// ([`PhysicsMesh::edge_flags`]).
    ///
    /// One pass: meshes the region grown by one voxel (so it reads two voxels around `region`),
    /// which holds every triangle sharing an edge with the region's own, finds each edge's
    /// neighbors there by vertex (one vertex per cell, so shared by index), and keeps the
    /// triangles of the edges `region` owns, renumbered in the same order [`Mesher::mesh`] gives
    /// them: `out` equals `mesh(region)` bit for bit.
    pub fn mesh_physics<R: VoxelRead + ?Sized>(
        &self,
        src: &R,
        region: &Region,
        ws: &mut MeshWorkspace,
        out: &mut PhysicsMesh,
    ) -> Result<MeshStats, MeshError> {
        out.clear();
        if region.is_empty() {
            return Ok(MeshStats::default());
        }
        let grown = region.expanded(1);
        if grown.size().iter().any(|&s| s > PhysicsMesh::MAX_SIDE) {
            return Err(MeshError::TooWide {
                side: grown.size().into_iter().max().unwrap_or(0),
                limit: PhysicsMesh::MAX_SIDE,
            });
        }
        let mut around = std::mem::take(&mut ws.neighborhood);
        ws.record_inner = true;
        ws.inner_quads.clear();
        let r = self.mesh(src, &grown, ws, &mut around);
        ws.record_inner = false;
        let r = r.and_then(|grown_stats| {
            // The region's own padded box starts one voxel above the grown one's.
            out.start(Mesher::padded_region(region)?.min());
            if around.triangles().is_empty() {
                return Ok(MeshStats { uniform: grown_stats.uniform, ..MeshStats::default() });
            }
            own_with_flags(&around, &ws.inner_quads, &mut ws.edges, out);
            Ok(MeshStats { vertices: out.vertex_count(), triangles: out.triangle_count(), uniform: false })
        });
        ws.neighborhood = around;
        r
    }
}

/// Fills `out` (started at the region's padded corner) with the triangles of `around`'s inner
/// quads (`inner[q]`: quad `q`, triangles `2q` and `2q + 1`), their vertices in `around`'s order,
/// and their edge flags. Rules: an edge with exactly one neighbor is active when it is a
/// [`convex_crease`]; an edge with no neighbor (the mesh's boundary) or several (a
/// non-manifold edge) is active; every edge of a zero-area triangle is active.
///
/// PERF: edges go into buckets by their lower vertex (a counting sort, ~3 a vertex), so a
/// neighbor is found by scanning one short bucket: no hashing of positions, no sort.
fn own_with_flags(around: &PhysicsMesh, inner: &[bool], scratch: &mut EdgeScratch, out: &mut PhysicsMesh) {
    let EdgeScratch { start, fill, entries, renumber, points } = scratch;
    let tris = around.triangles();
    debug_assert_eq!(inner.len() * 2, tris.len());
    let n = around.vertex_count();
    start.clear();
    start.resize(n + 1, 0);
    for t in tris {
        for i in 0..3 {
            start[t[i].min(t[(i + 1) % 3]) as usize + 1] += 1;
        }
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    entries.clear();
    entries.resize(tris.len() * 3, [0; 2]);
    // Filled from each bucket's end down, so `start[v]` ends at its bucket's beginning.
    fill.clear();
    fill.extend_from_slice(&start[1..]);
    for t in tris {
        for i in 0..3 {
            let (a, b, c) = (t[i], t[(i + 1) % 3], t[(i + 2) % 3]);
            let lo = a.min(b) as usize;
            fill[lo] -= 1;
            entries[fill[lo] as usize] = [a.max(b), c];
        }
    }
    // Vertices the kept triangles use, renumbered in `around`'s order.
    const UNUSED: u32 = u32::MAX;
    renumber.clear();
    renumber.resize(n, UNUSED);
    for q in (0..inner.len()).filter(|&q| inner[q]) {
        for t in &tris[2 * q..2 * q + 2] {
            for &v in t {
                renumber[v as usize] = 0;
            }
        }
    }
    let mut next = 0u32;
    for slot in renumber.iter_mut().filter(|s| **s != UNUSED) {
        *slot = next;
        next += 1;
    }
    // Exact sizes: a mesh kept in a cache holds no spare capacity.
    let kept_quads = inner.iter().filter(|&&k| k).count();
    out.reserve_exact(next as usize, 2 * kept_quads);
    let shift = PhysicsMesh::STEPS_PER_VOXEL as u16;
    let (q, mats) = (around.quantized(), around.materials());
    let kept = (0..n).filter(|&v| renumber[v] != UNUSED);
    out.push_shifted(kept.map(|v| (q.points[v].map(|c| c - shift), mats[v])));
    points.clear();
    points.extend((0..n).map(|v| q.get(v)));
    for q in (0..inner.len()).filter(|&q| inner[q]) {
        for t in &tris[2 * q..2 * q + 2] {
            let p = t.map(|v| points[v as usize]);
            let nrm = face(&p);
            let flags = match nrm.norm_squared() == 0.0 {
                true => 0b111,
                false => (0..3).fold(0u8, |flags, i| {
                    let (a, b, c) = (t[i], t[(i + 1) % 3], t[(i + 2) % 3]);
                    let lo = a.min(b) as usize;
                    let mut others = entries[start[lo] as usize..start[lo + 1] as usize]
                        .iter()
                        .filter(|e| e[0] == a.max(b) && e[1] != c);
                    let active = match (others.next(), others.next()) {
                        (Some(e), None) => convex_crease(&nrm, &p[i], &p[(i + 1) % 3], &points[e[1] as usize]),
                        _ => true,
                    };
                    if active { flags | edge_bit(i) } else { flags }
                }),
            };
            out.push_flagged(t.map(|v| renumber[v as usize] as u16), flags);
        }
    }
}
