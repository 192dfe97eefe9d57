//! Internal-edge flags for physics meshes: which triangle edges are real convex creases (*active*)
//! and which are flat or concave (*inactive*: a contact there must take the face's normal, or a
//! body sliding over it bumps). Neighbors across a chunk border come from the mesh of the region
//! grown by one voxel, read through the same padded source, never from the neighbor chunk's own
//! build; a vertex is its cell, which every chunk places identically, so the flags of meshing
//! chunk by chunk equal those of meshing the region whole.

use crate::config::{MeshError, MeshStats, Mesher};
use crate::output::{MeshOutput, PhysicsMesh};
use crate::workspace::{EdgeScratch, MeshWorkspace};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Region, VoxelRead};

/// An edge is active when the surface turns convex across it by more than this angle.
pub const ACTIVE_EDGE_DEGREES: f32 = 5.0;

/// Bit `i` of a triangle's flags: its edge `i` (corners `i` and `(i + 1) % 3`) is active.
pub const fn edge_bit(i: usize) -> u8 {
    1 << i
}

/// Which edge of each of a quad's two triangles is its diagonal (the edge they share, reversed).
fn diagonal(t0: [u16; 3], t1: [u16; 3]) -> [usize; 2] {
    for i in 0..3 {
        for j in 0..3 {
            if t0[i] == t1[(j + 1) % 3] && t0[(i + 1) % 3] == t1[j] {
                return [i, j];
            }
        }
    }
    // Unreachable for the mesher's quads; an edge index past 2 marks no diagonal.
    [3, 3]
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
    let EdgeScratch { start, fill, entries, renumber, points, diagonals, tris } = scratch;
    tris.clear();
    tris.extend(around.triangles().iter());
    let tris = &tris[..];
    debug_assert_eq!(inner.len() * 2, tris.len());
    let n = around.vertex_count();
    // Edge `i` of a triangle: corners `i`, `i + 1`, far corner `i + 2` (mod 3).
    const ROT: [[usize; 3]; 3] = [[0, 1, 2], [1, 2, 0], [2, 0, 1]];
    // A quad's diagonal joins two cells that share only the quad's own voxel edge: its one
    // neighbor is the quad's other triangle, so diagonals stay out of the buckets.
    diagonals.clear();
    diagonals.extend(tris.chunks_exact(2).map(|q| diagonal(q[0], q[1])));
    start.clear();
    start.resize(n + 1, 0);
    for (pair, d) in tris.chunks_exact(2).zip(diagonals.iter()) {
        for (t, &skip) in pair.iter().zip(d) {
            for (i, r) in ROT.iter().enumerate() {
                if i != skip {
                    start[t[r[0]].min(t[r[1]]) as usize + 1] += 1;
                }
            }
        }
    }
    for v in 0..n {
        start[v + 1] += start[v];
    }
    entries.clear();
    entries.resize(start[n] as usize, [0; 2]);
    // Filled from each bucket's end down, so `start[v]` ends at its bucket's beginning.
    fill.clear();
    fill.extend_from_slice(&start[1..]);
    for (pair, d) in tris.chunks_exact(2).zip(diagonals.iter()) {
        for (t, &skip) in pair.iter().zip(d) {
            for (i, r) in ROT.iter().enumerate() {
                if i != skip {
                    let (a, b) = (t[r[0]], t[r[1]]);
                    let lo = a.min(b) as usize;
                    fill[lo] -= 1;
                    entries[fill[lo] as usize] = [a.max(b), t[r[2]]];
                }
            }
        }
    }
    // Vertices the kept triangles use, renumbered in `around`'s order.
    const UNUSED: u32 = u32::MAX;
    renumber.clear();
    renumber.resize(n, UNUSED);
    let mut kept_quads = 0;
    for q in (0..inner.len()).filter(|&q| inner[q]) {
        kept_quads += 1;
        for &v in tris[2 * q].iter().chain(&tris[2 * q + 1]) {
            renumber[v as usize] = 0;
        }
    }
    let mut next = 0u32;
    for slot in renumber.iter_mut().filter(|s| **s != UNUSED) {
        *slot = next;
        next += 1;
    }
    // Exact sizes: a mesh kept in a cache holds no spare capacity.
    out.reserve_exact(next as usize, 2 * kept_quads);
    let shift = PhysicsMesh::STEPS_PER_VOXEL as u16;
    let (quantized, mats) = (around.quantized(), around.materials());
    let kept = (0..n).filter(|&v| renumber[v] != UNUSED);
    out.push_shifted(kept.map(|v| (quantized.points[v].map(|c| c - shift), mats[v])));
    points.clear();
    points.extend((0..n).map(|v| quantized.get(v)));
    for q in (0..inner.len()).filter(|&q| inner[q]) {
        for k in 0..2 {
            let (t, partner) = (tris[2 * q + k], tris[2 * q + 1 - k]);
            let p = t.map(|v| points[v as usize]);
            let nrm = face(&p);
            let mut flags = 0b111;
            if nrm.norm_squared() != 0.0 {
                flags = 0;
                for (i, r) in ROT.iter().enumerate() {
                    let (a, b, c) = (t[r[0]], t[r[1]], t[r[2]]);
                    let far = if i == diagonals[q][k] {
                        Some(partner[ROT[diagonals[q][1 - k]][2]])
                    } else {
                        // Exactly one other triangle on the edge, or none counts.
                        let (lo, hi) = (a.min(b) as usize, a.max(b));
                        let mut found = None;
                        let mut count = 0;
                        for e in &entries[start[lo] as usize..start[lo + 1] as usize] {
                            if e[0] == hi && e[1] != c {
                                found = Some(e[1]);
                                count += 1;
                            }
                        }
                        found.filter(|_| count == 1)
                    };
                    let active =
                        far.is_none_or(|d| convex_crease(&nrm, &p[r[0]], &p[r[1]], &points[d as usize]));
                    if active {
                        flags |= edge_bit(i);
                    }
                }
            }
            out.push_flagged(t.map(|v| renumber[v as usize] as u16), flags);
        }
    }
}
