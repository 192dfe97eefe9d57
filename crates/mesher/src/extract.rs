//! The mesher: configuration ([`Mesher`]), scratch ([`MeshWorkspace`]) and the meshing pass.
//!
//! The pass, for a region `R` of `n` voxels per axis:
//! 1. Read the padded box `R` grown by one voxel on every side ([`Mesher::padded_region`]) in
//!    one ordered row walk, turning each voxel into its 16-bit corner key (material if matter,
//!    occupancy; `keys`) and setting one *inside* bit per voxel (matter and occupancy above one
//!    half) in bit rows along X.
//! 2. Find the edges `R` owns: between neighboring voxels whose inside bits differ, with the lower
//!    end in `R`. Whole rows of edges come from one XOR of bit rows.
//! 3. Mark the cells those edges touch (4 per edge), make one vertex per marked cell, in cell order,
//!    placing 8 cells at a time in vector lanes (`cell::place_batch`).
//! 4. Emit one quad per owned edge, split along its shorter diagonal, wound to face the air.
//!
//! Ownership by the edge's lower end is what makes chunks seamless: every edge has exactly one
//! owner, and a vertex depends only on its cell's 8 corners, which every chunk touching the cell
//! reads identically.

use crate::cell::{Batch, LANES, place_batch};
use crate::config::{MeshError, MeshStats, Mesher};
use crate::keys::{Key, KeyTable, key_inside};
use crate::output::MeshOutput;
use crate::workspace::MeshWorkspace;
use voxterra_core::{Region, Voxel, VoxelPos, VoxelRead};

impl Mesher {
    /// Meshes `region`: replaces `out` with the triangles of the surface edges `region` owns (those
    /// whose lower voxel lies in it). Meshing a box chunk by chunk gives exactly the triangles of
    /// meshing it whole, bit for bit. Reads [`Mesher::padded_region`] through `src`.
    ///
    /// Steady state allocates nothing: `ws` and `out` keep their buffers between calls.
    pub fn mesh<R, M>(
        &self,
        src: &R,
        region: &Region,
        ws: &mut MeshWorkspace,
        out: &mut M,
    ) -> Result<MeshStats, MeshError>
    where
        R: VoxelRead + ?Sized,
        M: MeshOutput,
    {
        out.clear();
        if region.is_empty() {
            return Ok(MeshStats::default());
        }
        let side = region.size().into_iter().max().unwrap_or(0);
        if side > M::MAX_SIDE {
            return Err(MeshError::TooWide { side, limit: M::MAX_SIDE });
        }
        let padded = Mesher::padded_region(region)?;
        out.start(padded.min());
        let voxels = padded.volume();
        if voxels > self.max_voxels as u128 {
            return Err(MeshError::TooLarge { voxels, limit: self.max_voxels });
        }
        if src.uniform(&padded).is_some() {
            return Ok(MeshStats { uniform: true, ..MeshStats::default() });
        }
        let g = Grid::new(&padded);
        if !ws.read(src, &padded, &g, self.matter)? {
            return Ok(MeshStats::default());
        }
        ws.mark_cells(&g);
        // Counting the marked cells costs a software popcount per word (baseline x86-64 has no
        // popcnt), so only boxes with more cells than the output addresses are counted.
        let cells = g.size.iter().map(|&s| s - 1).product::<usize>();
        if cells > M::MAX_VERTICES {
            let vertices = ws.cells.iter().map(|w| w.count_ones() as usize).sum();
            if vertices > M::MAX_VERTICES {
                return Err(MeshError::TooManyVertices { vertices, limit: M::MAX_VERTICES });
            }
            out.reserve(vertices, 0);
        }
        self.make_vertices(ws, &g, padded.min(), out);
        let mut inner = std::mem::take(&mut ws.inner_quads);
        inner.clear();
        if M::TRIANGLES {
            ws.emit_quads(&g, out, ws.record_inner.then_some(&mut inner));
        }
        ws.inner_quads = inner;
        Ok(MeshStats { vertices: out.vertex_count(), triangles: out.triangle_count(), uniform: false })
    }

    fn make_vertices<M: MeshOutput>(&self, ws: &mut MeshWorkspace, g: &Grid, origin: VoxelPos, out: &mut M) {
        let (sx, sz) = (g.size[0], g.size[2]);
        let (dy, dz) = (sx * sz, sx);
        // The 8 corners' offsets from a cell's low corner.
        let offsets: [usize; 8] = std::array::from_fn(|i| (i & 1) + dy * (i >> 1 & 1) + dz * (i >> 2 & 1));
        let mut batch = Batch::EMPTY;
        let mut lanes = CellLanes { at: [0; LANES], cell: [[0; LANES]; 3] };
        let mut next = 0u32;
        for cy in 0..g.size[1] - 1 {
            for cz in 0..sz - 1 {
                let row = g.row(cy, cz);
                for w in 0..g.words {
                    let mut bits = ws.cells[row + w];
                    while bits != 0 {
                        let cx = w * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let at = cx + dz * cz + dy * cy;
                        // The last corner first: one bounds check covers the other seven.
                        let corner = &ws.keys[at..=at + 1 + dy + dz];
                        let j = batch.len & (LANES - 1); // always `batch.len`; drops the lane checks
                        let far = corner[1 + dy + dz];
                        for (column, &o) in batch.keys.iter_mut().zip(&offsets[..7]) {
                            column[j] = corner[o];
                        }
                        batch.keys[7][j] = far;
                        lanes.at[j] = at;
                        [lanes.cell[0][j], lanes.cell[1][j], lanes.cell[2][j]] =
                            [cx, cy, cz].map(|v| v as i32);
                        batch.len += 1;
                        if batch.len == LANES {
                            next = self.flush(&batch, &lanes, origin, next, &mut ws.cell_vertex, out);
                            batch.len = 0;
                        }
                    }
                }
            }
        }
        self.flush(&batch, &lanes, origin, next, &mut ws.cell_vertex, out);
    }

    /// Places a batch of cells' vertices and appends them to `out`, numbering them from `next`;
    /// returns the next number.
    #[inline]
    fn flush<M: MeshOutput>(
        &self,
        batch: &Batch,
        lanes: &CellLanes,
        origin: VoxelPos,
        next: u32,
        cell_vertex: &mut [u32],
        out: &mut M,
    ) -> u32 {
        if batch.len == 0 {
            return next;
        }
        let p = place_batch(batch, self.sharp, M::NORMALS);
        out.push_vertices(origin, &lanes.cell, &p, batch.len);
        for (j, &at) in lanes.at[..batch.len].iter().enumerate() {
            cell_vertex[at] = next + j as u32;
        }
        next + batch.len as u32
    }
}

/// Per lane of a batch: the cell's index in the padded box, and its coordinates there by axis.
struct CellLanes {
    at: [usize; LANES],
    cell: [[i32; LANES]; 3],
}

/// Layout of the padded box: voxel `(x, y, z)` (local) at `x + sx * (z + sz * y)`; bit rows of
/// `words` u64 per `(y, z)`, bit `x`. Cells share the layout (cell = its low corner voxel).
struct Grid {
    size: [usize; 3],
    words: usize,
}

impl Grid {
    fn new(padded: &Region) -> Self {
        let size = padded.size().map(|v| v as usize);
        Grid { size, words: size[0].div_ceil(64) }
    }

    #[inline]
    fn row(&self, y: usize, z: usize) -> usize {
        (z + self.size[2] * y) * self.words
    }

    /// Mask of the owned lower ends along X: local x in `1..sx-1`, for word `w`.
    #[inline]
    fn owned_x(&self, w: usize) -> u64 {
        let (lo, hi) = (1usize, self.size[0] - 1);
        let (start, end) = (w * 64, w * 64 + 64);
        let from = lo.max(start).min(end) - start;
        let to = hi.max(start).min(end) - start;
        let upto = |n: usize| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
        upto(to) & !upto(from)
    }
}

/// The owned edges leaving voxel row `(y, z)` in word `w`, along X, Y and Z: bit `x` set when voxel
/// `x` and its +axis neighbor differ and `x` is an owned lower end.
#[inline]
fn edge_words(g: &Grid, inside: &[u64], y: usize, z: usize, w: usize, own: u64) -> [u64; 3] {
    let r = &inside[g.row(y, z)..][..g.words];
    let (up, fwd) = (inside[g.row(y + 1, z) + w], inside[g.row(y, z + 1) + w]);
    [(r[w] ^ shr1(r, w)) & own, (r[w] ^ up) & own, (r[w] ^ fwd) & own]
}

/// Bits `x` of row `r` shifted down by one (bit `x` gets bit `x + 1`), across words.
#[inline]
fn shr1(r: &[u64], w: usize) -> u64 {
    (r[w] >> 1) | r.get(w + 1).map_or(0, |n| n << 63)
}

impl MeshWorkspace {
    /// Reads the padded box into corner keys and inside bits; false when every voxel is on the same
    /// side (no surface).
    ///
    /// PERF: the box is converted from one slice, not row by row through `visit_rows`: the dynamic
    /// call and position arithmetic per row cost as much as converting it. Dense sources lend their
    /// voxels ([`VoxelRead::as_dense`]); others copy them with `read_box` (the store's is a
    /// per-chunk copy, where its rows would come split at chunk boundaries).
    fn read<R: VoxelRead + ?Sized>(
        &mut self,
        src: &R,
        padded: &Region,
        g: &Grid,
        matter: u64,
    ) -> Result<bool, MeshError> {
        let n = g.size.iter().product::<usize>();
        let (sx, words) = (g.size[0], g.words);
        self.keys.resize(n, 0);
        // Not cleared: the conversion below writes every word.
        self.inside.resize(g.size[1] * g.size[2] * words, 0);
        let voxels = match src.as_dense(padded).filter(|v| v.len() == n) {
            Some(v) => v,
            None => {
                self.voxels.resize(n, Voxel::AIR);
                src.read_box(padded, &mut self.voxels)?;
                &self.voxels[..]
            }
        };
        let table = KeyTable::new(matter);
        // Whether any voxel is inside, and any outside: a surface needs both.
        let (mut any_in, mut any_out) = (0u64, 0u64);
        // Keys and inside bits of a piece of at most 64 voxels.
        let convert = |piece: &[Voxel], dst: &mut [Key]| -> u64 {
            let first = piece[0];
            // Rows whose ends differ are not uniform: no need to look at the rest.
            // A fold, not `all`: no early exit, so it vectorizes.
            let differ = first != piece[piece.len() - 1]
                || piece.iter().fold(0u16, |acc, v| acc | (v.to_bits() ^ first.to_bits())) != 0;
            if !differ {
                // Uniform pieces (most rows above and below the surface): one key.
                let k = table.key(first);
                dst.fill(k);
                (u64::MAX >> (64 - piece.len())) * key_inside(k) as u64
            } else {
                table.convert(piece, dst)
            }
        };
        let rows = voxels.chunks_exact(sx).zip(self.keys.chunks_exact_mut(sx));
        if words == 1 {
            // Every row in one word: every box up to 64 wide.
            let tail = u64::MAX >> (64 - sx);
            for ((row, dst), bits) in rows.zip(self.inside.iter_mut()) {
                let m = convert(row, dst);
                any_in |= m;
                any_out |= !m & tail;
                *bits = m;
            }
        } else {
            for ((row, dst), bits) in rows.zip(self.inside.chunks_exact_mut(words)) {
                for ((piece, dst), bits) in row.chunks(64).zip(dst.chunks_mut(64)).zip(bits) {
                    let m = convert(piece, dst);
                    any_in |= m;
                    any_out |= !m & u64::MAX >> (64 - piece.len());
                    *bits = m;
                }
            }
        }
        Ok(any_in != 0 && any_out != 0)
    }

    /// Marks every cell an owned edge touches.
    fn mark_cells(&mut self, g: &Grid) {
        let (sy, sz, words) = (g.size[1], g.size[2], g.words);
        self.cells.clear();
        self.cells.resize(sy * sz * words, 0);
        let voxels = g.size.iter().product::<usize>();
        if self.cell_vertex.len() < voxels {
            // Never cleared: only marked cells are written, and only they are read.
            self.cell_vertex.resize(voxels, 0);
        }
        self.own.clear();
        self.own.extend((0..words).map(|w| g.owned_x(w)));
        if words == 1 {
            return self.mark_cells_narrow(g);
        }
        self.row_x.resize(words, 0);
        self.row_y.resize(words, 0);
        self.row_z.resize(words, 0);
        for y in 1..sy - 1 {
            for z in 1..sz - 1 {
                for w in 0..words {
                    [self.row_x[w], self.row_y[w], self.row_z[w]] =
                        edge_words(g, &self.inside, y, z, w, self.own[w]);
                }
                for w in 0..words {
                    // An X edge at x touches cells x in rows (y-1|y, z-1|z); a Y or Z edge at x
                    // touches cells x-1 and x.
                    let ex = self.row_x[w];
                    let ey = self.row_y[w] | shr1(&self.row_y, w);
                    let ez = self.row_z[w] | shr1(&self.row_z, w);
                    self.cells[g.row(y - 1, z - 1) + w] |= ex;
                    self.cells[g.row(y, z - 1) + w] |= ex | ey;
                    self.cells[g.row(y, z) + w] |= ex | ey | ez;
                    self.cells[g.row(y - 1, z) + w] |= ex | ez;
                }
            }
        }
    }

    /// [`MeshWorkspace::mark_cells`] for boxes at most 64 voxels wide (every chunk size): one word
    /// per row, so rows index directly and shifts need no carry from a next word.
    fn mark_cells_narrow(&mut self, g: &Grid) {
        let (sy, sz, own) = (g.size[1], g.size[2], self.own[0]);
        let (inside, cells) = (&self.inside[..sy * sz], &mut self.cells[..sy * sz]);
        for y in 1..sy - 1 {
            let (row, up) = (&inside[sz * y..][..sz], &inside[sz * (y + 1)..][..sz]);
            let (below, here) = cells[sz * (y - 1)..sz * (y + 1)].split_at_mut(sz);
            for z in 1..sz - 1 {
                let r = row[z];
                let ex = (r ^ (r >> 1)) & own;
                let ey = (r ^ up[z]) & own;
                let ez = (r ^ row[z + 1]) & own;
                let (ey, ez) = (ey | ey >> 1, ez | ez >> 1);
                below[z - 1] |= ex;
                here[z - 1] |= ex | ey;
                here[z] |= ex | ey | ez;
                below[z] |= ex | ez;
            }
        }
    }

    /// Emits two triangles per owned edge, wound to face the air; with `inner`, pushes per quad
    /// whether its edge's lower end lies in the region shrunk by one voxel.
    fn emit_quads<M: MeshOutput>(&self, g: &Grid, out: &mut M, mut inner: Option<&mut Vec<bool>>) {
        let (sy, sz, words) = (g.size[1], g.size[2], g.words);
        if words == 1 {
            return self.emit_quads_narrow(g, out, inner);
        }
        // Inner lower ends: local 2..s-2 on each axis (the owned ones are 1..s-1).
        let inner_x = |w: usize, x_own: u64| {
            let drop = |x: usize| if x / 64 == w { 1u64 << (x % 64) } else { 0 };
            x_own & !drop(1) & !drop(g.size[0] - 2)
        };
        let (dy, dz) = (g.size[0] * sz, g.size[0]);
        let v = |at: usize| self.cell_vertex[at];
        for y in 1..sy - 1 {
            for z in 1..sz - 1 {
                let row = &self.inside[g.row(y, z)..][..words];
                let inner_row = (2..sy - 2).contains(&y) && (2..sz - 2).contains(&z);
                for (w, &r) in row.iter().enumerate() {
                    let edges = edge_words(g, &self.inside, y, z, w, self.own[w]);
                    let in_x = if inner_row { inner_x(w, self.own[w]) } else { 0 };
                    for (axis, mut bits) in edges.into_iter().enumerate() {
                        while bits != 0 {
                            let x = w * 64 + bits.trailing_zeros() as usize;
                            bits &= bits - 1;
                            let at = x + dz * z + dy * y;
                            let low_inside = r >> (x % 64) & 1 != 0;
                            // The 4 cells around the edge, counter-clockwise seen from the edge's
                            // positive direction (the two other axes in cyclic order).
                            let quad = match axis {
                                0 => [at - dy - dz, at - dz, at, at - dy],
                                1 => [at - dz - 1, at - 1, at, at - dz],
                                _ => [at - 1 - dy, at - dy, at, at - 1],
                            }
                            .map(v);
                            // Reversed when the inside is at the high end; by index, not branch
                            // (the facing is a coin toss along X and Z on terrain).
                            // (3 - i == i ^ 3 for i in 0..4.)
                            let flip = 3 * (!low_inside as usize);
                            let quad = [0, 1, 2, 3].map(|i| quad[i ^ flip]);
                            emit_quad(out, quad);
                            if let Some(inner) = inner.as_deref_mut() {
                                inner.push(in_x >> (x % 64) & 1 != 0);
                            }
                        }
                    }
                }
            }
        }
    }

    /// [`MeshWorkspace::emit_quads`] for boxes at most 64 voxels wide, as `mark_cells_narrow`.
    fn emit_quads_narrow<M: MeshOutput>(&self, g: &Grid, out: &mut M, mut inner: Option<&mut Vec<bool>>) {
        let (sy, sz, own) = (g.size[1], g.size[2], self.own[0]);
        let inner_x = own & !(1 << 1) & !(1 << (g.size[0] - 2));
        let (dy, dz) = (g.size[0] * sz, g.size[0]);
        let inside = &self.inside[..sy * sz];
        let v = |at: usize| self.cell_vertex[at];
        for y in 1..sy - 1 {
            let (row, up) = (&inside[sz * y..][..sz], &inside[sz * (y + 1)..][..sz]);
            for z in 1..sz - 1 {
                let r = row[z];
                let edges = [(r ^ (r >> 1)) & own, (r ^ up[z]) & own, (r ^ row[z + 1]) & own];
                if edges[0] | edges[1] | edges[2] == 0 {
                    continue; // most rows: the surface crosses a chunk in a few layers
                }
                let base = dz * z + dy * y;
                let in_x = if (2..sy - 2).contains(&y) && (2..sz - 2).contains(&z) { inner_x } else { 0 };
                // Per axis, the 4 cells around an edge at `at`, counter-clockwise seen from the
                // edge's positive direction (the two other axes in cyclic order), as offsets back.
                let around = [[dy + dz, dz, 0, dy], [dz + 1, 1, 0, dz], [1 + dy, dy, 0, 1]];
                for (mut bits, back) in edges.into_iter().zip(around) {
                    while bits != 0 {
                        let x = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        let at = base + x;
                        // Reversed when the inside is at the high end (3 - i == i ^ 3 for i in 0..4).
                        let flip = 3 * (r >> x & 1 == 0) as usize;
                        let quad = [0, 1, 2, 3].map(|i| v(at - back[i ^ flip]));
                        emit_quad(out, quad);
                        if let Some(inner) = inner.as_deref_mut() {
                            inner.push(in_x >> x & 1 != 0);
                        }
                    }
                }
            }
        }
    }
}

/// Splits a quad along its shorter diagonal (ties: 0–2), so the split depends only on the four
/// positions and chunked meshing splits the same way.
#[inline]
fn emit_quad<M: MeshOutput>(out: &mut M, q: [u32; 4]) {
    let p = q.map(|i| out.position(i));
    let d02 = (p[2] - p[0]).norm_squared();
    let d13 = (p[3] - p[1]).norm_squared();
    // Branch-free: the split is a coin toss on rough terrain.
    const SPLITS: [[[usize; 3]; 2]; 2] = [[[0, 1, 2], [0, 2, 3]], [[0, 1, 3], [1, 2, 3]]];
    let [a, b] = SPLITS[(d02 > d13) as usize];
    out.push_triangle(a.map(|k| q[k]));
    out.push_triangle(b.map(|k| q[k]));
}
