//! Detached pieces: the edit that cuts terrain loose takes it out of the terrain in the same step
//! (one undo step, one delta) and hands each piece out with its voxels, render mesh, collision
//! shape and mass.

use crate::convert::ToParry;
use crate::error::EditError;
use voxterra_core::nalgebra::{Matrix3, Point3, Vector3};
use voxterra_core::{Material, MaterialTable, Region, Voxel, VoxelPos};
use voxterra_mesher::{MeshWorkspace, Mesher, RenderMesh};
use voxterra_narrowphase::parry3d::math::{Pose, Vector};
use voxterra_narrowphase::parry3d::shape::SharedShape;
use voxterra_voxel_store::VoxelStore;

/// A piece's convex hull is *poor* when it holds more than this times the piece's own volume (an
/// arch's hull spans the opening under it); the piece then collides as a decomposition.
pub const POOR_HULL_RATIO: f32 = 1.5;

/// How many times a decomposition halves a piece at most: at most 2^6 = 64 convex parts.
pub const MAX_SPLIT_DEPTH: u32 = 6;

/// Parts of fewer voxels are not split further.
pub const MIN_SPLIT_VOXELS: usize = 64;

/// A piece's mass properties, from its voxels' occupancy and its materials' densities.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PieceMass {
    /// Mass (density × world volume).
    pub mass: f32,
    /// Centre of mass in the terrain's frame, world units: the piece's pose.
    pub center: Point3<f32>,
    /// Inertia tensor about `center`, along the terrain's axes (each voxel a uniform cube).
    pub inertia: Matrix3<f32>,
}

/// A piece of terrain an edit cut loose, taken out of the terrain. Its mesh and collision shape
/// are in world units around [`PieceMass::center`]: a rigid body at that translation (in the
/// terrain's frame, no rotation) shows the piece exactly where it was.
#[derive(Clone, Debug)]
pub struct DetachedPiece {
    /// The voxels taken out, at their terrain positions: the solid voxels of the piece and the
    /// thin surface voxels (solid, under half full) that touched only them.
    pub voxels: VoxelStore,
    /// The box holding `voxels`.
    pub bounds: Region,
    /// How many of the voxels hold terrain up ([`Terrain::is_holding`](crate::Terrain::is_holding)).
    pub solid_voxels: usize,
    /// The material of most of the mass: its friction and restitution are the piece's.
    pub material: Material,
    /// Mass, centre of mass and inertia.
    pub mass: PieceMass,
    /// The voxels' volume in world units (each voxel its occupancy of a cube).
    pub volume: f32,
    /// The render mesh of `voxels` (the mesher's, as the terrain showed it), in world units
    /// relative to the centre of mass.
    pub mesh: RenderMesh,
    /// The collision shape relative to the centre of mass: the convex hull of the mesh, or,
    /// when that hull is poor ([`POOR_HULL_RATIO`]), a compound of the hulls of its halves,
    /// halved again where their hulls are poor (at most [`MAX_SPLIT_DEPTH`] times).
    pub shape: SharedShape,
    /// Convex parts in `shape`: 1 for a hull.
    pub shape_parts: usize,
}

/// Mass properties of `voxels` (any order), and the material of most of the mass; `None` when
/// they weigh nothing. Sums in f64 around the first voxel, so pieces far from the origin keep
/// their precision.
pub fn piece_mass(
    voxels: &[(VoxelPos, Voxel)],
    table: &MaterialTable,
    voxel_size: f32,
) -> Option<(PieceMass, Material)> {
    let (o, _) = *voxels.first()?;
    let vs = voxel_size as f64;
    let cell = vs * vs * vs;
    let mut mass = 0.0f64;
    let mut first = [0.0f64; 3];
    let mut second = [[0.0f64; 3]; 3];
    let mut by_material = [0.0f64; Material::COUNT];
    for (p, v) in voxels {
        let density = table.get(v.material()).map_or(0.0, |i| i.density) as f64;
        let m = v.occupancy() as f64 * cell * density;
        if m == 0.0 {
            continue;
        }
        let r =
            [(p.x - o.x) as f64 + 0.5, (p.y - o.y) as f64 + 0.5, (p.z - o.z) as f64 + 0.5].map(|c| c * vs);
        mass += m;
        for a in 0..3 {
            first[a] += m * r[a];
            for b in 0..3 {
                second[a][b] += m * r[a] * r[b];
            }
        }
        by_material[v.material().id() as usize] += m;
    }
    if mass <= 0.0 {
        return None;
    }
    let c = first.map(|f| f / mass);
    // About the centre: Σ m (|r-c|² I − (r-c)(r-c)ᵀ), plus each cube's own m·s²/6 on the diagonal.
    let s = |a: usize, b: usize| second[a][b] - mass * c[a] * c[b];
    let trace = s(0, 0) + s(1, 1) + s(2, 2);
    let cube = mass * vs * vs / 6.0;
    let inertia = Matrix3::from_fn(|a, b| {
        let diag = if a == b { trace + cube } else { 0.0 };
        (diag - s(a, b)) as f32
    });
    let center = Point3::new(
        (o.x as f64 * vs + c[0]) as f32,
        (o.y as f64 * vs + c[1]) as f32,
        (o.z as f64 * vs + c[2]) as f32,
    );
    let mut best = 0;
    for (id, m) in by_material.iter().enumerate() {
        if *m > by_material[best] {
            best = id;
        }
    }
    Some((PieceMass { mass: mass as f32, center, inertia }, Material::from_low_bits(best as u8)))
}

pub(crate) fn build_piece(
    removed: &[(VoxelPos, Voxel)],
    solid_voxels: usize,
    mesher: &Mesher,
    table: &MaterialTable,
    voxel_size: f32,
) -> Result<DetachedPiece, EditError> {
    let bounds = bounds_of(removed);
    // PERF: one write of the piece's box (air around it), where a write per x run cost 0.45 µs
    // a voxel (each a store write with its row packing and mips).
    let mut dense = vec![Voxel::AIR; bounds.len()?];
    for (p, v) in removed {
        dense[bounds.index_of(*p)] = *v;
    }
    let mut voxels = VoxelStore::new();
    voxels.write_box(&bounds, &dense)?;
    // Solid voxels of solid materials (density above 0) always weigh something.
    let (mass, material) = piece_mass(removed, table, voxel_size).expect("a piece holds solid voxels");
    let mut mesh = RenderMesh::default();
    mesher.mesh(&voxels, &bounds.expanded(1), &mut MeshWorkspace::new(), &mut mesh)?;
    // Into world units around the centre of mass, in f64 so far pieces keep their precision.
    let c = mass.center.cast::<f64>();
    let local = |p: &Point3<f32>| ((p.cast::<f64>() * voxel_size as f64) - c).cast::<f32>();
    let absolute = mesh.positions.clone();
    for p in &mut mesh.positions {
        *p = Point3::from(local(p));
    }
    let solid_volume: f64 =
        removed.iter().map(|(_, v)| v.occupancy() as f64).sum::<f64>() * (voxel_size as f64).powi(3);
    let volume = solid_volume as f32;
    let (shape, shape_parts) = collision_shape(&absolute, removed, &local, &bounds, voxel_size);
    Ok(DetachedPiece { voxels, bounds, solid_voxels, material, mass, volume, mesh, shape, shape_parts })
}

pub(crate) fn shape_volume(shape: &SharedShape) -> f32 {
    shape.mass_properties(1.0).mass()
}

/// The convex hull of the mesh, or a decomposition when that is poor; a box of the piece's
/// bounds if no hull can be made (a mesh too flat to hold volume).
fn collision_shape(
    absolute: &[Point3<f32>],
    removed: &[(VoxelPos, Voxel)],
    local: &dyn Fn(&Point3<f32>) -> Vector3<f32>,
    bounds: &Region,
    voxel_size: f32,
) -> (SharedShape, usize) {
    let centre = |p: &VoxelPos| p.cast::<f32>() + Vector3::repeat(0.5);
    let points = absolute.to_vec();
    let voxels: Vec<(Point3<f32>, f32)> = removed.iter().map(|(p, v)| (centre(p), v.occupancy())).collect();
    let split = Split { local, cell: voxel_size.powi(3) };
    let mut parts = Vec::new();
    split.decompose(points, voxels, 0, &mut parts);
    match parts.len() {
        1 => (parts.pop().expect("one part"), 1),
        0 => {
            let (lo, hi) = (bounds.min().cast::<f32>(), bounds.max().cast::<f32>());
            let half = (hi - lo) * (voxel_size / 2.0);
            let middle = local(&Point3::from((lo.coords + hi.coords) / 2.0));
            let pose = Pose::from_translation(middle.to_parry());
            (SharedShape::compound(vec![(pose, SharedShape::cuboid(half.x, half.y, half.z))]), 1)
        }
        n => (SharedShape::compound(parts.into_iter().map(|s| (Pose::IDENTITY, s)).collect()), n),
    }
}

/// Splits a piece in halves until each half's hull fits it.
struct Split<'a> {
    local: &'a dyn Fn(&Point3<f32>) -> Vector3<f32>,
    /// A voxel's world volume.
    cell: f32,
}

impl Split<'_> {
    /// Pushes the hull of `points` (voxel units) if it holds at most [`POOR_HULL_RATIO`] times the
    /// volume of `voxels` (centres and occupancies), or at [`MAX_SPLIT_DEPTH`], or for fewer than
    /// [`MIN_SPLIT_VOXELS`] voxels; else splits both at the middle of the voxels' longest extent
    /// (each half keeps the points one voxel past the cut, so the halves' hulls overlap) and
    /// recurses.
    fn decompose(
        &self,
        points: Vec<Point3<f32>>,
        voxels: Vec<(Point3<f32>, f32)>,
        depth: u32,
        out: &mut Vec<SharedShape>,
    ) {
        let local: Vec<Vector> = points.iter().map(|p| (self.local)(p).to_parry()).collect();
        let hull = SharedShape::convex_hull(&local);
        let volume = voxels.iter().map(|(_, o)| o).sum::<f32>() * self.cell;
        let fits = hull.as_ref().is_some_and(|h| shape_volume(h) <= POOR_HULL_RATIO * volume);
        if fits || depth >= MAX_SPLIT_DEPTH || voxels.len() < MIN_SPLIT_VOXELS {
            out.extend(hull);
            return;
        }
        let (mut lo, mut hi) = (voxels[0].0, voxels[0].0);
        for (c, _) in &voxels {
            lo = lo.inf(c);
            hi = hi.sup(c);
        }
        let axis = (hi - lo).imax();
        // A plane between voxel centres (which sit at .5).
        let cut = ((lo[axis] + hi[axis]) * 0.5).round();
        // Each half keeps the points one voxel past the cut, and gains the centres of the solid
        // voxels beside it: the cut faces, which the mesh has no vertex on.
        let at_cut =
            voxels.iter().filter(|(c, o)| *o >= 0.5 && (c[axis] - cut).abs() <= 1.0).map(|(c, _)| *c);
        let points: Vec<Point3<f32>> = points.into_iter().chain(at_cut).collect();
        let (left, right): (Vec<_>, Vec<_>) = voxels.into_iter().partition(|(c, _)| c[axis] < cut);
        let side =
            |keep: &dyn Fn(f32) -> bool| points.iter().copied().filter(|p| keep(p[axis])).collect::<Vec<_>>();
        let (lp, rp) = (side(&|x| x <= cut + 1.0), side(&|x| x >= cut - 1.0));
        for (p, v) in [(lp, left), (rp, right)] {
            if !v.is_empty() {
                self.decompose(p, v, depth + 1, out);
            }
        }
    }
}

/// The box holding `voxels` (at least one).
pub(crate) fn bounds_of(voxels: &[(VoxelPos, Voxel)]) -> Region {
    let (mut lo, mut hi) = (voxels[0].0, voxels[0].0);
    for (p, _) in voxels {
        lo = lo.inf(p);
        hi = hi.sup(p);
    }
    Region::new(lo, hi + Vector3::new(1, 1, 1)).expect("voxels lie inside the i32 range")
}
