//! The two meshes the mesher fills: [`RenderMesh`] (positions, normals, materials, u32 indices) and
//! [`PhysicsMesh`] (16-bit quantized positions, a material byte per vertex, u16 indices), and the sealed
//! [`MeshOutput`] trait that lets one generic pass fill either.

use crate::cell::{LANES, PlacedBatch};
use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{
    EdgeFlags, Material, Positions, QuantizedPositions, TriangleIndices, TriangleSource, VoxelPos,
};
use wide::{f32x8 as F, i32x8 as I};

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// A mesh the mesher can fill: [`RenderMesh`] or [`PhysicsMesh`]. Sealed: the mesher relies on
/// every implementor keeping its positions readable while it adds triangles.
pub trait MeshOutput: sealed::Sealed {
    /// Whether the output stores vertex normals (the physics mesh skips computing them).
    #[doc(hidden)]
    const NORMALS: bool;
    /// Whether the output takes triangles (one that keeps only vertices skips making them).
    #[doc(hidden)]
    const TRIANGLES: bool = true;
    /// The most vertices the index type can address.
    #[doc(hidden)]
    const MAX_VERTICES: usize;
    /// The widest region, in voxels per axis, whose positions the output can hold.
    #[doc(hidden)]
    const MAX_SIDE: u32;
    /// Empties the mesh, keeping its buffers' capacity.
    fn clear(&mut self);
    /// Vertices held.
    fn vertex_count(&self) -> usize;
    /// Triangles held.
    fn triangle_count(&self) -> usize;
    #[doc(hidden)]
    fn reserve(&mut self, vertices: usize, triangles: usize);
    /// Called once per mesh, after [`MeshOutput::clear`]: `origin` is the padded box's low corner,
    /// the cell every `cell` below counts from.
    #[doc(hidden)]
    fn start(&mut self, origin: VoxelPos);
    /// The first `len` vertices of `placed`: lane `j` at `placed.local[..][j]` (in `[0, 1]³`, from
    /// the cell's center) in cell `origin + cells[..][j]`, whose center is the voxel center of the
    /// cell's low corner.
    #[doc(hidden)]
    fn push_vertices(
        &mut self,
        origin: VoxelPos,
        cells: &[[i32; LANES]; 3],
        placed: &PlacedBatch,
        len: usize,
    );
    #[doc(hidden)]
    fn position(&self, vertex: u32) -> Point3<f32>;
    /// `vertices` are below [`MeshOutput::MAX_VERTICES`], checked before any is pushed.
    #[doc(hidden)]
    fn push_triangle(&mut self, vertices: [u32; 3]);
}

/// A mesh for rendering: one vertex per surface cell with its normal (pointing into air) and
/// material, triangles counter-clockwise seen from the air side.
#[derive(Clone, Default, Debug, PartialEq)]
pub struct RenderMesh {
    /// Vertex positions in voxel units (voxel `(x, y, z)` covers `[x, x+1)` on each axis).
    pub positions: Vec<Point3<f32>>,
    /// Unit vertex normals: the occupancy gradient, pointing into air.
    pub normals: Vec<Vector3<f32>>,
    /// The dominant material of each vertex's cell.
    pub materials: Vec<Material>,
    /// Triangles as vertex-index triples.
    pub indices: Vec<[u32; 3]>,
}

impl sealed::Sealed for RenderMesh {}

impl MeshOutput for RenderMesh {
    const NORMALS: bool = true;
    const MAX_VERTICES: usize = u32::MAX as usize;
    const MAX_SIDE: u32 = u32::MAX;
    fn clear(&mut self) {
        self.positions.clear();
        self.normals.clear();
        self.materials.clear();
        self.indices.clear();
    }
    fn start(&mut self, _origin: VoxelPos) {}
    fn vertex_count(&self) -> usize {
        self.positions.len()
    }
    fn triangle_count(&self) -> usize {
        self.indices.len()
    }
    fn reserve(&mut self, vertices: usize, triangles: usize) {
        self.positions.reserve(vertices);
        self.normals.reserve(vertices);
        self.materials.reserve(vertices);
        self.indices.reserve(triangles);
    }
    #[inline]
    fn push_vertices(
        &mut self,
        origin: VoxelPos,
        cells: &[[i32; LANES]; 3],
        placed: &PlacedBatch,
        len: usize,
    ) {
        // Lane-wise, the same operations as `(origin + cell) as f32 + 0.5 + local` one by one: the
        // cell coordinates are i32 (the padded box is), which convert to f32 exactly as i64 would.
        let [x, y, z] = std::array::from_fn(|a| {
            let cell = I::new(cells[a]) + I::splat(origin[a]);
            (cell.round_float() + F::splat(0.5) + F::new(placed.local[a])).to_array()
        });
        self.positions.extend((0..len).map(|j| Point3::new(x[j], y[j], z[j])));
        let n = &placed.normal;
        self.normals.extend((0..len).map(|j| Vector3::new(n[0][j], n[1][j], n[2][j])));
        self.materials.extend(placed.material[..len].iter().map(|&m| Material::from_low_bits(m)));
    }
    #[inline]
    fn position(&self, vertex: u32) -> Point3<f32> {
        self.positions[vertex as usize]
    }
    #[inline]
    fn push_triangle(&mut self, vertices: [u32; 3]) {
        self.indices.push(vertices);
    }
}

impl TriangleSource for RenderMesh {
    fn positions(&self) -> Positions<'_> {
        Positions::F32(&self.positions)
    }
    fn indices(&self) -> TriangleIndices<'_> {
        TriangleIndices::U32(&self.indices)
    }
}

/// The compact mesh of a physics chunk: positions as three u16 steps of [`PhysicsMesh::STEP`]
/// (1/1024 voxel) from the chunk's origin, a material byte per vertex, and triangles as three 9-bit
/// indices and the 3 edge-flag bits in a u32 (meshes of at most [`PhysicsMesh::PACKED_VERTICES`]
/// vertices: every 8³ chunk but the densest) or u16 triples and a flag byte: 7 bytes per vertex
/// and 4 per triangle, about 8.6 per triangle on an 8³ chunk (which repeats its border cells'
/// vertices) against the article's 12.5 for f32 positions. The kD tree reads it directly as a
/// [`TriangleSource`].
///
/// Positions are those of the [`RenderMesh`] rounded to the step grid, within half a step; the
/// rounding is of each vertex's offset in its own cell, so every chunk that holds a vertex decodes
/// it to the same f32 and chunk seams stay closed. Limits: regions of at most
/// [`PhysicsMesh::MAX_SIDE`] voxels a side and 65536 vertices: mesh physics chunks (8³), not
/// worlds.
#[derive(Clone, Debug, PartialEq)]
pub struct PhysicsMesh {
    /// The position of step `[0, 0, 0]`: the padded box's low corner voxel's low corner.
    origin: Point3<f32>,
    positions: Vec<[u16; 3]>,
    materials: Vec<Material>,
    /// Triangles of a mesh of at most `PACKED_VERTICES` vertices (`pack9`, flags above); then
    /// `wide` is empty.
    packed: Vec<u32>,
    /// Triangles of larger meshes; then `packed` is empty.
    wide: Vec<[u16; 3]>,
    /// Per `wide` triangle, bit `i` set when edge `i` is active.
    wide_flags: Vec<u8>,
    /// Whether the triangles carry edge flags (built by [`Mesher::mesh_physics`](crate::Mesher::mesh_physics)).
    flagged: bool,
}

impl Default for PhysicsMesh {
    fn default() -> Self {
        PhysicsMesh {
            origin: Point3::origin(),
            positions: vec![],
            materials: vec![],
            packed: vec![],
            wide: vec![],
            wide_flags: vec![],
            flagged: false,
        }
    }
}

// PERF: the byte budget above assumes these sizes.
const _: () = assert!(std::mem::size_of::<[u16; 3]>() == 6 && std::mem::size_of::<Material>() == 1);

/// Steps per voxel.
const STEPS: u32 = 1024;

/// A physics mesh's triangles as vertex-index triples, whatever their storage.
#[derive(Clone, Copy, Debug)]
pub struct PhysicsTriangles<'a> {
    packed: &'a [u32],
    wide: &'a [[u16; 3]],
}

impl PartialEq for PhysicsTriangles<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl PhysicsTriangles<'_> {
    /// Triangles held.
    pub fn len(&self) -> usize {
        self.packed.len() + self.wide.len()
    }
    /// True without triangles.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Triangle `t`'s vertex indices, `None` past the end.
    #[inline]
    pub fn get(&self, t: usize) -> Option<[u16; 3]> {
        match self.packed.get(t) {
            Some(&w) => Some(voxterra_core::unpack9(w).map(|v| v as u16)),
            None => self.wide.get(t - self.packed.len()).copied(),
        }
    }
    /// Every triangle, in order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = [u16; 3]> + '_ {
        let this = *self;
        (0..self.len()).map(move |t| this.get(t).unwrap_or_default())
    }
}

impl PhysicsMesh {
    /// The quantization step, in voxels: a power of two, so decoding is exact up to one rounding.
    pub const STEP: f32 = 1.0 / STEPS as f32;
    /// Steps per voxel (`1 / STEP`).
    pub(crate) const STEPS_PER_VOXEL: u32 = STEPS;
    /// The widest region a physics mesh holds, in voxels per axis: vertices lie within
    /// `[-0.5, side + 1.5]` voxels of the padded box's corner, which must fit 65536 steps.
    pub const MAX_SIDE: u32 = (u16::MAX as u32 - 3 * STEPS / 2) / STEPS;
    /// Meshes of at most this many vertices keep a triangle in 4 bytes, flags included.
    pub const PACKED_VERTICES: usize = 512;

    /// Vertices held.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }
    /// The position of vertex `i`, decoded.
    pub fn position(&self, i: usize) -> Point3<f32> {
        self.quantized().get(i)
    }
    /// The positions as stored, with their origin and step.
    pub fn quantized(&self) -> QuantizedPositions<'_> {
        QuantizedPositions { points: &self.positions, origin: self.origin, step: Self::STEP }
    }
    /// The dominant material of each vertex's cell.
    pub fn materials(&self) -> &[Material] {
        &self.materials
    }
    /// Triangles, counter-clockwise seen from the air side.
    pub fn triangles(&self) -> PhysicsTriangles<'_> {
        PhysicsTriangles { packed: &self.packed, wide: &self.wide }
    }
    /// Triangles held.
    pub fn triangle_count(&self) -> usize {
        self.packed.len() + self.wide.len()
    }
    /// Per triangle, its edge flags: bit `i` set when edge `i` (corners `i` and `(i + 1) % 3`) is
    /// an active, convex crease ([`crate::edge_flags`]). [`EdgeFlags::None`] unless the mesh was
    /// built by [`Mesher::mesh_physics`](crate::Mesher::mesh_physics).
    pub fn edge_flags(&self) -> EdgeFlags<'_> {
        match (self.flagged, self.packed.is_empty()) {
            (false, _) => EdgeFlags::None,
            (true, false) => EdgeFlags::Packed9(&self.packed),
            (true, true) => EdgeFlags::Bytes(&self.wide_flags),
        }
    }
    /// Whether the triangles go packed: decided by the vertex count, before the first triangle.
    fn packs(vertices: usize) -> bool {
        vertices <= Self::PACKED_VERTICES
    }
    pub(crate) fn reserve_exact(&mut self, vertices: usize, triangles: usize) {
        self.positions.reserve_exact(vertices);
        self.materials.reserve_exact(vertices);
        if Self::packs(vertices) {
            self.packed.reserve_exact(triangles);
        } else {
            self.wide.reserve_exact(triangles);
            self.wide_flags.reserve_exact(triangles);
        }
    }
    /// Appends vertices given as steps from this mesh's origin, with their materials.
    pub(crate) fn push_shifted(&mut self, vertices: impl Iterator<Item = ([u16; 3], Material)>) {
        for (p, m) in vertices {
            self.positions.push(p);
            self.materials.push(m);
        }
    }
    /// Appends a triangle with its edge flags (every triangle of the mesh must have them), after
    /// every vertex.
    pub(crate) fn push_flagged(&mut self, triangle: [u16; 3], flags: u8) {
        debug_assert!(self.flagged || self.triangle_count() == 0);
        self.flagged = true;
        if Self::packs(self.positions.len()) {
            self.packed.push(voxterra_core::pack9(triangle.map(u32::from), flags.into()));
        } else {
            self.wide.push(triangle);
            self.wide_flags.push(flags);
        }
    }
    /// Bytes of mesh data held (lengths, not capacities, and the origin): what a cache of chunk
    /// meshes pays.
    pub fn data_bytes(&self) -> usize {
        std::mem::size_of_val(&self.origin)
            + std::mem::size_of_val(&*self.positions)
            + std::mem::size_of_val(&*self.materials)
            + std::mem::size_of_val(&*self.packed)
            + std::mem::size_of_val(&*self.wide)
            + self.wide_flags.len()
    }
    /// Heap bytes reserved (capacities).
    pub fn heap_bytes(&self) -> usize {
        self.positions.capacity() * 6
            + self.materials.capacity()
            + self.packed.capacity() * 4
            + self.wide.capacity() * 6
            + self.wide_flags.capacity()
    }
    /// Releases spare capacity, for a mesh that will be kept (a collision cache entry).
    pub fn shrink_to_fit(&mut self) {
        self.positions.shrink_to_fit();
        self.materials.shrink_to_fit();
        self.packed.shrink_to_fit();
        self.wide.shrink_to_fit();
        self.wide_flags.shrink_to_fit();
    }
}

impl sealed::Sealed for PhysicsMesh {}

impl MeshOutput for PhysicsMesh {
    const NORMALS: bool = false;
    const MAX_VERTICES: usize = u16::MAX as usize + 1;
    const MAX_SIDE: u32 = PhysicsMesh::MAX_SIDE;
    fn clear(&mut self) {
        self.origin = Point3::origin();
        self.positions.clear();
        self.materials.clear();
        self.packed.clear();
        self.wide.clear();
        self.wide_flags.clear();
        self.flagged = false;
    }
    fn start(&mut self, origin: VoxelPos) {
        self.origin = origin.map(|v| v as f32);
    }
    fn vertex_count(&self) -> usize {
        self.positions.len()
    }
    fn triangle_count(&self) -> usize {
        PhysicsMesh::triangle_count(self)
    }
    fn reserve(&mut self, vertices: usize, triangles: usize) {
        self.positions.reserve(vertices);
        self.materials.reserve(vertices);
        if PhysicsMesh::packs(vertices) {
            self.packed.reserve(triangles);
        } else {
            self.wide.reserve(triangles);
        }
    }
    #[inline]
    fn push_vertices(
        &mut self,
        _origin: VoxelPos,
        cells: &[[i32; LANES]; 3],
        placed: &PlacedBatch,
        len: usize,
    ) {
        // The cell's center is `cell + 1/2` voxels from the origin; rounding the offset within
        // the cell (not the world position) makes the steps the same in every chunk. Ties round
        // to even (the vector conversion).
        let [x, y, z] = std::array::from_fn(|a| {
            let steps = I::splat(STEPS as i32);
            let within =
                (F::new(placed.local[a]) * F::splat(STEPS as f32)).round_int().max(I::ZERO).min(steps);
            let q = I::new(cells[a]) * steps + I::splat(STEPS as i32 / 2) + within;
            q.min(I::splat(u16::MAX as i32)).to_array()
        });
        self.positions.extend((0..len).map(|j| [x[j], y[j], z[j]].map(|v| v as u16)));
        self.materials.extend(placed.material[..len].iter().map(|&m| Material::from_low_bits(m)));
    }
    #[inline]
    fn position(&self, vertex: u32) -> Point3<f32> {
        self.quantized().get(vertex as usize)
    }
    #[inline]
    fn push_triangle(&mut self, vertices: [u32; 3]) {
        // Every vertex comes first, so the count decides the format once for all triangles. In
        // range: the vertex count was checked against MAX_VERTICES before any vertex was made.
        if PhysicsMesh::packs(self.positions.len()) {
            self.packed.push(voxterra_core::pack9(vertices, 0));
        } else {
            self.wide.push(vertices.map(|v| v as u16));
        }
    }
}

impl TriangleSource for PhysicsMesh {
    fn positions(&self) -> Positions<'_> {
        Positions::Quantized(self.quantized())
    }
    fn indices(&self) -> TriangleIndices<'_> {
        if self.packed.is_empty() {
            TriangleIndices::U16(&self.wide)
        } else {
            TriangleIndices::Packed9(&self.packed)
        }
    }
}
