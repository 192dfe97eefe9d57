//! The two meshes the mesher fills: [`RenderMesh`] (positions, normals, materials, u32 indices) and
//! [`PhysicsMesh`] (positions, a material byte per vertex, u16 indices), and the sealed
//! [`MeshOutput`] trait that lets one generic pass fill either.

use voxterra_core::nalgebra::{Point3, Vector3};
use voxterra_core::{Material, TriangleIndices, TriangleSource};

mod sealed {
    pub trait Sealed {}
}

/// A mesh the mesher can fill: [`RenderMesh`] or [`PhysicsMesh`]. Sealed: the mesher relies on
/// every implementor keeping its positions readable while it adds triangles.
pub trait MeshOutput: sealed::Sealed {
    /// Whether the output stores vertex normals (the physics mesh skips computing them).
    #[doc(hidden)]
    const NORMALS: bool;
    /// The most vertices the index type can address.
    #[doc(hidden)]
    const MAX_VERTICES: usize;
    /// Empties the mesh, keeping its buffers' capacity.
    fn clear(&mut self);
    /// Vertices held.
    fn vertex_count(&self) -> usize;
    /// Triangles held.
    fn triangle_count(&self) -> usize;
    #[doc(hidden)]
    fn reserve(&mut self, vertices: usize, triangles: usize);
    #[doc(hidden)]
    fn push_vertex(&mut self, position: Point3<f32>, normal: Vector3<f32>, material: Material);
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
    fn clear(&mut self) {
        self.positions.clear();
        self.normals.clear();
        self.materials.clear();
        self.indices.clear();
    }
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
    fn push_vertex(&mut self, position: Point3<f32>, normal: Vector3<f32>, material: Material) {
        self.positions.push(position);
        self.normals.push(normal);
        self.materials.push(material);
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
    fn positions(&self) -> &[Point3<f32>] {
        &self.positions
    }
    fn indices(&self) -> TriangleIndices<'_> {
        TriangleIndices::U32(&self.indices)
    }
}

/// The compact mesh of a physics chunk: 12-byte positions, a material byte per vertex and u16
/// triangles: 13 bytes per vertex and 6 per triangle, so 12.5 per triangle on a whole mesh (the
/// article's raw-mesh figure) and about 14.3 on an 8³ chunk, which repeats its border cells'
/// vertices. The kD tree reads it
/// directly as a [`TriangleSource`]. At most 65536 vertices: mesh physics chunks (8³), not worlds.
#[derive(Clone, Default, Debug, PartialEq)]
pub struct PhysicsMesh {
    positions: Vec<Point3<f32>>,
    materials: Vec<Material>,
    triangles: Vec<[u16; 3]>,
}

// PERF: the byte budget above assumes these sizes.
const _: () = assert!(std::mem::size_of::<Point3<f32>>() == 12 && std::mem::size_of::<Material>() == 1);

impl PhysicsMesh {
    /// Vertex positions in voxel units.
    pub fn positions(&self) -> &[Point3<f32>] {
        &self.positions
    }
    /// The dominant material of each vertex's cell.
    pub fn materials(&self) -> &[Material] {
        &self.materials
    }
    /// Triangles, counter-clockwise seen from the air side.
    pub fn triangles(&self) -> &[[u16; 3]] {
        &self.triangles
    }
    /// Bytes of mesh data held (lengths, not capacities): what a cache of chunk meshes pays.
    pub fn data_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.positions)
            + std::mem::size_of_val(&*self.materials)
            + std::mem::size_of_val(&*self.triangles)
    }
    /// Heap bytes reserved (capacities).
    pub fn heap_bytes(&self) -> usize {
        self.positions.capacity() * 12 + self.materials.capacity() + self.triangles.capacity() * 6
    }
    /// Releases spare capacity, for a mesh that will be kept (a collision cache entry).
    pub fn shrink_to_fit(&mut self) {
        self.positions.shrink_to_fit();
        self.materials.shrink_to_fit();
        self.triangles.shrink_to_fit();
    }
}

impl sealed::Sealed for PhysicsMesh {}

impl MeshOutput for PhysicsMesh {
    const NORMALS: bool = false;
    const MAX_VERTICES: usize = u16::MAX as usize + 1;
    fn clear(&mut self) {
        self.positions.clear();
        self.materials.clear();
        self.triangles.clear();
    }
    fn vertex_count(&self) -> usize {
        self.positions.len()
    }
    fn triangle_count(&self) -> usize {
        self.triangles.len()
    }
    fn reserve(&mut self, vertices: usize, triangles: usize) {
        self.positions.reserve(vertices);
        self.materials.reserve(vertices);
        self.triangles.reserve(triangles);
    }
    #[inline]
    fn push_vertex(&mut self, position: Point3<f32>, _normal: Vector3<f32>, material: Material) {
        self.positions.push(position);
        self.materials.push(material);
    }
    #[inline]
    fn position(&self, vertex: u32) -> Point3<f32> {
        self.positions[vertex as usize]
    }
    #[inline]
    fn push_triangle(&mut self, vertices: [u32; 3]) {
        // In range: the vertex count was checked against MAX_VERTICES before any vertex was made.
        self.triangles.push(vertices.map(|v| v as u16));
    }
}

impl TriangleSource for PhysicsMesh {
    fn positions(&self) -> &[Point3<f32>] {
        &self.positions
    }
    fn indices(&self) -> TriangleIndices<'_> {
        TriangleIndices::U16(&self.triangles)
    }
}
