//! The full-resolution cell vertices clustering starts from, kept as the mesher writes them
//! ([`CellMesh`]).

use crate::cell::{LANES, PlacedBatch};
use crate::clusters::node::CellVertex;
use crate::output::{MeshOutput, RenderMesh, sealed};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Region, VoxelPos};

/// A render mesh's vertices (no triangles: clusters need only the vertices) with each vertex's
/// cell (its low corner voxel), as the mesher made them.
#[derive(Default)]
pub(crate) struct CellMesh {
    pub(crate) mesh: RenderMesh,
    pub(crate) cells: Vec<VoxelPos>,
}

impl CellMesh {
    /// The vertices of cells in `region`.
    pub(crate) fn cells_in<'a>(&'a self, region: &'a Region) -> impl Iterator<Item = CellVertex> + 'a {
        let m = &self.mesh;
        self.cells
            .iter()
            .enumerate()
            .filter(|(_, c)| region.contains(**c))
            .map(|(i, &c)| (c, m.positions[i], m.normals[i], m.materials[i]))
    }
}

impl sealed::Sealed for CellMesh {}

impl MeshOutput for CellMesh {
    const NORMALS: bool = true;
    const TRIANGLES: bool = false;
    const MAX_VERTICES: usize = RenderMesh::MAX_VERTICES;
    const MAX_SIDE: u32 = RenderMesh::MAX_SIDE;
    fn clear(&mut self) {
        self.mesh.clear();
        self.cells.clear();
    }
    fn vertex_count(&self) -> usize {
        self.mesh.vertex_count()
    }
    fn triangle_count(&self) -> usize {
        self.mesh.triangle_count()
    }
    fn reserve(&mut self, vertices: usize, triangles: usize) {
        self.mesh.reserve(vertices, triangles);
        self.cells.reserve(vertices);
    }
    fn start(&mut self, origin: VoxelPos) {
        self.mesh.start(origin);
    }
    fn push_vertices(
        &mut self,
        origin: VoxelPos,
        cells: &[[i32; LANES]; 3],
        placed: &PlacedBatch,
        len: usize,
    ) {
        self.mesh.push_vertices(origin, cells, placed, len);
        self.cells
            .extend((0..len).map(|j| {
                Point3::new(origin.x + cells[0][j], origin.y + cells[1][j], origin.z + cells[2][j])
            }));
    }
    fn position(&self, vertex: u32) -> Point3<f32> {
        self.mesh.position(vertex)
    }
    fn push_triangle(&mut self, vertices: [u32; 3]) {
        self.mesh.push_triangle(vertices);
    }
}
