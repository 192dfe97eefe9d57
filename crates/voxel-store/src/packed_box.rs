//! The row-packed box: an N³ box of voxels stored as N² X rows, each either *packed* (one material
//! at default occupancy, the material kept in the row's 2-byte header) or *allocated* (its N voxels
//! live in a shared cell array, the header holding the row's slot). This is the article's "memory
//! format, take two"; the store's 32³ chunks and their 16³/8³/4³ mips are all such boxes.

use voxterra_core::{Material, Voxel};

/// Header bit 15: the row is allocated; bits 0..15 hold its slot in the cell array. Otherwise bits
/// 0..6 hold the material of the packed row (and the other bits are 0).
pub(crate) const ALLOCATED: u16 = 0x8000;

/// The longest row any box has (the 32³ chunk).
pub(crate) const MAX_ROW: usize = 32;

/// A full row of every material at default occupancy, so a packed row reads as a slice in constant
/// time without touching the box's own memory.
pub(crate) static PACKED_ROWS: [[Voxel; MAX_ROW]; Material::COUNT] = {
    let mut rows = [[Voxel::AIR; MAX_ROW]; Material::COUNT];
    let mut m = 0;
    while m < Material::COUNT {
        rows[m] = [Voxel::full(Material::from_low_bits(m as u8)); MAX_ROW];
        m += 1;
    }
    rows
};

/// A half-open box in a packed box's local coordinates: `lo[axis]..hi[axis]`, axes x, y, z.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Rect {
    pub(crate) lo: [usize; 3],
    pub(crate) hi: [usize; 3],
}

impl Rect {
    pub(crate) fn union(self, o: Rect) -> Rect {
        Rect {
            lo: [0, 1, 2].map(|i| self.lo[i].min(o.lo[i])),
            hi: [0, 1, 2].map(|i| self.hi[i].max(o.hi[i])),
        }
    }
}

/// Scratch memory for writes, kept by the store so steady-state writes do not allocate.
#[derive(Default, Debug)]
pub(crate) struct Scratch {
    rows: Vec<Voxel>,
    headers: Vec<u16>,
}

/// An N³ row-packed box. Row `(y, z)` is header `z + N * y`, matching core's dense layout.
///
/// Invariants (checked by [`PackedBox::validate`]): an allocated row is never uniform at default
/// occupancy (such a row is always packed); slots are `0..allocated` in row order; the cell array holds
/// exactly `allocated * N` voxels.
#[derive(Clone, Debug)]
pub(crate) struct PackedBox<const N: usize> {
    headers: Box<[u16]>,
    cells: Box<[Voxel]>,
}

impl<const N: usize> PackedBox<N> {
    const ROWS: usize = N * N;

    /// Every voxel `Voxel::full(material)`: all rows packed, no cells.
    pub(crate) fn uniform(material: Material) -> Self {
        const { assert!(N <= MAX_ROW && N.is_power_of_two()) };
        PackedBox { headers: vec![material.id() as u16; Self::ROWS].into_boxed_slice(), cells: Box::new([]) }
    }

    /// Row `(y, z)`, local coordinates. Constant time: a packed row is a static slice.
    #[inline]
    pub(crate) fn row(&self, y: usize, z: usize) -> &[Voxel; N] {
        let h = self.headers[z + N * y];
        let row: &[Voxel] = if h & ALLOCATED != 0 {
            let at = (h & !ALLOCATED) as usize * N;
            &self.cells[at..at + N]
        } else {
            &PACKED_ROWS[h as usize][..N]
        };
        row.try_into().expect("rows are N voxels long")
    }

    /// The voxel at local `(x, y, z)`.
    #[inline]
    pub(crate) fn voxel(&self, x: usize, y: usize, z: usize) -> Voxel {
        self.row(y, z)[x]
    }

    /// The material of row `(y, z)` if it is packed, `None` if allocated.
    #[inline]
    pub(crate) fn packed_material(&self, y: usize, z: usize) -> Option<Material> {
        let h = self.headers[z + N * y];
        (h & ALLOCATED == 0).then(|| Material::from_low_bits(h as u8))
    }

    /// The material when every row is packed with the same one: the whole box is uniform.
    pub(crate) fn uniform_material(&self) -> Option<Material> {
        let first = self.headers[0];
        (first & ALLOCATED == 0 && self.headers.iter().all(|&h| h == first))
            .then(|| Material::from_low_bits(first as u8))
    }

    /// The material when every row crossing local rows `y` × `z` is packed with the same one (the
    /// X extent does not matter: a packed row is uniform). Reads headers only.
    pub(crate) fn uniform_in(
        &self,
        y: std::ops::Range<usize>,
        z: std::ops::Range<usize>,
    ) -> Option<Material> {
        let first = *self.headers.get(z.start + N * y.start)?;
        let same = |yy: usize| self.headers[z.start + N * yy..z.end + N * yy].iter().all(|&h| h == first);
        (first & ALLOCATED == 0 && y.clone().all(same)).then(|| Material::from_low_bits(first as u8))
    }

    /// Allocated rows.
    pub(crate) fn allocated_rows(&self) -> usize {
        self.cells.len() / N
    }

    /// Heap bytes: headers plus cells.
    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.headers) + std::mem::size_of_val(&*self.cells)
    }

    /// Non-air voxels.
    pub(crate) fn non_empty_voxels(&self) -> u64 {
        let packed: u64 =
            self.headers.iter().filter(|&&h| h & ALLOCATED == 0 && h != 0).count() as u64 * N as u64;
        packed + self.cells.iter().filter(|v| !v.is_air()).count() as u64
    }

    /// The two-stage write. `edit(y, z, row)` may change `row[rect.lo[0]..rect.hi[0]]` of every row
    /// `(y, z)` in `rect` (the rest of the slice is the row's current content and is ignored).
    ///
    /// Stage one copies each row to scratch, applies the edit, and marks the row's new state: packed
    /// when the result is uniform at default occupancy, allocated otherwise. Stage two reallocates the
    /// cell array once, and only if some row changed state; otherwise cells are written in place.
    /// Returns the box of voxels whose value changed, `None` if none did.
    pub(crate) fn modify(
        &mut self,
        rect: Rect,
        scratch: &mut Scratch,
        mut edit: impl FnMut(usize, usize, &mut [Voxel]),
    ) -> Option<Rect> {
        let [x0, y0, z0] = rect.lo;
        let [x1, y1, z1] = rect.hi;
        debug_assert!(x0 < x1 && y0 < y1 && z0 < z1 && x1 <= N && y1 <= N && z1 <= N);
        let nz = z1 - z0;
        let touched = (y1 - y0) * nz;
        scratch.rows.clear();
        scratch.rows.resize(touched * N, Voxel::AIR);
        scratch.headers.clear();
        scratch.headers.resize(touched, 0);

        // Stage one: mark.
        let mut dirty: Option<Rect> = None;
        let mut relayout = false;
        for y in y0..y1 {
            for z in z0..z1 {
                let k = (y - y0) * nz + (z - z0);
                let old = self.row(y, z);
                let new = &mut scratch.rows[k * N..(k + 1) * N];
                new.copy_from_slice(old);
                edit(y, z, &mut new[x0..x1]);
                let first_diff = (x0..x1).find(|&x| new[x] != old[x]);
                if let Some(a) = first_diff {
                    let b = (a..x1).rev().find(|&x| new[x] != old[x]).unwrap_or(a) + 1;
                    let r = Rect { lo: [a, y, z], hi: [b, y + 1, z + 1] };
                    dirty = Some(dirty.map_or(r, |d| d.union(r)));
                }
                let head = new[0];
                let uniform = head.has_default_occupancy() && new.iter().all(|v| *v == head);
                let h = if uniform { head.material().id() as u16 } else { ALLOCATED };
                relayout |= (h & ALLOCATED) != (self.headers[z + N * y] & ALLOCATED);
                scratch.headers[k] = h;
            }
        }
        dirty?;

        // Stage two: reallocate once if any row changed state, then write.
        if !relayout {
            for y in y0..y1 {
                for z in z0..z1 {
                    let k = (y - y0) * nz + (z - z0);
                    let h = &mut self.headers[z + N * y];
                    if *h & ALLOCATED != 0 {
                        let at = (*h & !ALLOCATED) as usize * N;
                        self.cells[at..at + N].copy_from_slice(&scratch.rows[k * N..(k + 1) * N]);
                    } else {
                        *h = scratch.headers[k];
                    }
                }
            }
        } else {
            let allocated = (0..Self::ROWS)
                .filter(|&r| {
                    let (y, z) = (r / N, r % N);
                    let inside = (y0..y1).contains(&y) && (z0..z1).contains(&z);
                    let h = if inside { scratch.headers[(y - y0) * nz + (z - z0)] } else { self.headers[r] };
                    h & ALLOCATED != 0
                })
                .count();
            let mut cells = Vec::with_capacity(allocated * N);
            for r in 0..Self::ROWS {
                let (y, z) = (r / N, r % N);
                let inside = (y0..y1).contains(&y) && (z0..z1).contains(&z);
                let (h, src): (u16, &[Voxel]) = if inside {
                    let k = (y - y0) * nz + (z - z0);
                    (scratch.headers[k], &scratch.rows[k * N..(k + 1) * N])
                } else {
                    let h = self.headers[r];
                    let at = (h & !ALLOCATED) as usize * N;
                    (h, if h & ALLOCATED != 0 { &self.cells[at..at + N] } else { &[] })
                };
                if h & ALLOCATED != 0 {
                    self.headers[r] = ALLOCATED | (cells.len() / N) as u16;
                    cells.extend_from_slice(src);
                } else {
                    self.headers[r] = h;
                }
            }
            debug_assert_eq!(cells.len(), allocated * N);
            self.cells = cells.into_boxed_slice();
        }
        dirty
    }

    /// Checks the invariants; `Err` names the first broken one.
    pub(crate) fn validate(&self) -> Result<(), RowFault> {
        if self.headers.len() != Self::ROWS {
            return Err(RowFault::HeaderCount { headers: self.headers.len(), rows: Self::ROWS });
        }
        let mut next_slot = 0usize;
        for (r, &h) in self.headers.iter().enumerate() {
            if h & ALLOCATED != 0 {
                let slot = (h & !ALLOCATED) as usize;
                if slot != next_slot {
                    return Err(RowFault::SlotOutOfOrder { row: r, slot, expected: next_slot });
                }
                next_slot += 1;
                let row = &self.cells[slot * N..(slot + 1) * N];
                if row[0].has_default_occupancy() && row.iter().all(|v| *v == row[0]) {
                    return Err(RowFault::UniformAllocated { row: r });
                }
            } else if h as usize >= Material::COUNT {
                return Err(RowFault::NotAMaterial { row: r, header: h });
            }
        }
        if self.cells.len() != next_slot * N {
            return Err(RowFault::CellCount { cells: self.cells.len(), allocated_rows: next_slot });
        }
        Ok(())
    }
}

/// An invariant of a row-packed box that does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RowFault {
    /// The header array does not have one header per row.
    #[error("{headers} headers for {rows} rows")]
    HeaderCount {
        /// Headers present.
        headers: usize,
        /// Rows of the box.
        rows: usize,
    },
    /// Allocated rows must take cell slots in row order.
    #[error("row {row} has slot {slot}, expected {expected}")]
    SlotOutOfOrder {
        /// The row.
        row: usize,
        /// Its slot.
        slot: usize,
        /// The slot row order gives it.
        expected: usize,
    },
    /// An allocated row that is one material at default occupancy should be packed.
    #[error("row {row} is allocated but uniform")]
    UniformAllocated {
        /// The row.
        row: usize,
    },
    /// A packed row's header must be a material id.
    #[error("row {row}: packed header {header:#x} is not a material")]
    NotAMaterial {
        /// The row.
        row: usize,
        /// Its header.
        header: u16,
    },
    /// The cell array must hold exactly the allocated rows.
    #[error("{cells} cells for {allocated_rows} allocated rows")]
    CellCount {
        /// Cells present.
        cells: usize,
        /// Allocated rows.
        allocated_rows: usize,
    },
}
