//! What the narrowphase reports: contact points with stable feature ids, and manifolds of at most
//! four of them.

use voxterra_core::nalgebra::{Point3, Unit, Vector3};

/// The feature of a triangle a contact lies on. Edge `i` joins corners `i` and `(i + 1) % 3`
/// (edge 0 is a–b, edge 1 b–c, edge 2 c–a), as parry numbers them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum TriangleFeature {
    /// Corner 0, 1 or 2.
    Vertex(u8),
    /// Edge 0, 1 or 2.
    Edge(u8),
    /// The face.
    Face,
}

/// A contact's identity for warm starting: the triangle, its feature, the part of a compound
/// shape (0 for a plain shape) and a shape-side index (which corner of a cuboid, for routines that
/// make several points against one triangle). Stable while the triangles and the touching
/// features stay the same.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct FeatureId {
    /// The triangle's index in its set.
    pub triangle: u32,
    /// Which feature of the triangle.
    pub feature: TriangleFeature,
    /// The compound part (0 for a plain shape).
    pub part: u32,
    /// A shape-side discriminator (0 when a routine makes one point a triangle).
    pub sub: u32,
}

/// How a contact point was made: from the closest features of the shape and the triangle, or
/// redone along the triangle's face normal because those features could not be trusted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Default)]
pub enum Correction {
    /// The closest (or deepest) features of the two, as found.
    #[default]
    None,
    /// Redone along the face normal from the shape's deepest point over the face: the found normal
    /// came from an inactive edge or vertex (a seam, or a flat or concave crease), or (for a shape
    /// penetrating past an edge or vertex whose neighbors give it no contact) left the feature's
    /// normal cone.
    FaceNormal,
    /// The shape lies behind a one-sided triangle (it sank past the surface, or the surface rose
    /// through it): redone along the front normal from the shape's deepest point under the
    /// triangle, so it is pushed back out, never on down. Kept only while the shape's center is
    /// inside the solid or that deepest point lies right behind the triangle; beside a thin wall
    /// or a sharp crest, in the open, the faces it is in front of hold it instead.
    Sunk,
    /// The shape is over no part of the face and touches only an inactive edge or vertex of it
    /// (a slight crease under the shape): its witness points measured along the face normal.
    EdgeWitness,
    /// Made for a shape inside the solid that touches no triangle: toward the nearest surface.
    Interior,
}

/// One contact point between a shape and a triangle, in world space.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct ContactPoint {
    /// The deepest point of the shape (on its surface).
    pub on_shape: Point3<f32>,
    /// The matching point on the triangle.
    pub on_triangle: Point3<f32>,
    /// Unit normal from the triangle toward the shape: the direction that separates them.
    pub normal: Unit<Vector3<f32>>,
    /// Signed distance along `normal`: negative when penetrating, up to the prediction distance.
    pub dist: f32,
    /// Which features touch.
    pub id: FeatureId,
    /// Whether the point was redone, and why.
    pub correction: Correction,
}

impl ContactPoint {
    /// Penetration depth (0 when separated).
    #[inline]
    pub fn depth(&self) -> f32 {
        (-self.dist).max(0.0)
    }

    /// The point with every length multiplied by `k` (points and distance; normal kept).
    pub fn scaled(&self, k: f32) -> ContactPoint {
        ContactPoint {
            on_shape: Point3::from(self.on_shape.coords * k),
            on_triangle: Point3::from(self.on_triangle.coords * k),
            dist: self.dist * k,
            ..*self
        }
    }
}

/// At most four contact points sharing one normal (within the grouping tolerance). Equality and
/// `Debug` look at its points only ([`Manifold::points`]), not the unused slots.
#[derive(Clone, Copy)]
pub struct Manifold {
    /// The group's normal: that of its deepest point.
    pub normal: Unit<Vector3<f32>>,
    points: [ContactPoint; 4],
    len: u8,
}

impl PartialEq for Manifold {
    fn eq(&self, other: &Self) -> bool {
        self.normal == other.normal && self.points() == other.points()
    }
}

impl std::fmt::Debug for Manifold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manifold").field("normal", &self.normal).field("points", &self.points()).finish()
    }
}

impl Manifold {
    /// Most points a manifold keeps.
    pub const MAX_POINTS: usize = 4;

    pub(crate) fn new(normal: Unit<Vector3<f32>>, kept: &[ContactPoint]) -> Self {
        debug_assert!(!kept.is_empty() && kept.len() <= Self::MAX_POINTS);
        let mut points = [kept[0]; 4];
        points[..kept.len()].copy_from_slice(kept);
        Manifold { normal, points, len: kept.len() as u8 }
    }

    /// A manifold of one point, with the point's normal.
    pub fn single(point: ContactPoint) -> Self {
        Manifold::new(point.normal, &[point])
    }

    /// The points, at most [`Manifold::MAX_POINTS`].
    #[inline]
    pub fn points(&self) -> &[ContactPoint] {
        &self.points[..self.len as usize]
    }

    /// The manifold with every length multiplied by `k` (points and distances; normals kept):
    /// from voxel units to world units, for a terrain whose voxel size is `k`.
    pub fn scaled(&self, k: f32) -> Manifold {
        let mut m = *self;
        for p in &mut m.points[..m.len as usize] {
            *p = p.scaled(k);
        }
        m
    }

    /// The deepest point's signed distance.
    pub fn min_dist(&self) -> f32 {
        self.points().iter().map(|p| p.dist).fold(f32::INFINITY, f32::min)
    }
}
