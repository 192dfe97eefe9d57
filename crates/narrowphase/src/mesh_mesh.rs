//! Mesh against mesh, the Project Oort way, for models, debris and detached terrain: a multi-pass
//! test where each pass rejects what it can before the next, dearer one runs — bounding spheres,
//! then the meshes' OBBs, then a descent of both meshes' bounding-volume hierarchies (nodes tested
//! as OBBs, the larger volume split first), then Möller's test on the candidate triangle pairs,
//! in parallel once there are enough of them. The result is the article's [`HitData`];
//! [`apply_impulse`] turns it into the article's impulse response.

use crate::error::NarrowphaseError;
use crate::obb::BoundingSphere;
use crate::tri_tri::triangles_intersect_f64;
use rayon::prelude::*;
use voxterra_core::nalgebra::{Isometry3, Matrix3, Point3, Unit, Vector3};
use voxterra_core::{Aabb, TriangleSource};

/// Triangles a leaf holds at most.
const LEAF_TRIANGLES: usize = 4;
/// Depth past which nodes become leaves whatever they hold.
const MAX_DEPTH: usize = 40;

#[derive(Clone, Copy, Debug)]
struct Node {
    aabb: Aabb,
    /// Leaf: first index into `order`; branch: the left child (the right is `left + 1`).
    start: u32,
    /// Leaf: triangle count; branch: 0.
    count: u32,
}

/// A triangle mesh prepared for mesh–mesh tests: its triangles in local space, a bounding sphere,
/// and a bounding-volume hierarchy over the triangles (split at the center of the longest axis,
/// as the article builds it).
#[derive(Clone, Debug)]
pub struct MeshCollider {
    positions: Vec<Point3<f32>>,
    triangles: Vec<[u32; 3]>,
    order: Vec<u32>,
    nodes: Vec<Node>,
    sphere: BoundingSphere,
}

/// Options of [`collide`].
#[derive(Clone, Copy, Debug)]
pub struct MeshMeshOptions {
    /// Candidate triangle pairs from which the Möller tests run on the rayon pool (the result is
    /// the same either way).
    pub parallel_threshold: usize,
}

impl Default for MeshMeshOptions {
    fn default() -> Self {
        MeshMeshOptions { parallel_threshold: 2048 }
    }
}

/// Where and how two meshes touch, per side: the mean of the intersecting triangles' centroids and
/// of their normals, in world space (the article's `HitData`).
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct HitData {
    /// The first mesh's side.
    pub a: SideHit,
    /// The second mesh's side.
    pub b: SideHit,
}

/// One side of a [`HitData`].
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct SideHit {
    /// Mean centroid of this mesh's intersecting triangles.
    pub point: Point3<f32>,
    /// Mean of their unit normals, normalized (outward for a closed mesh wound counter-clockwise).
    pub normal: Unit<Vector3<f32>>,
    /// How many of this mesh's triangles intersect the other mesh.
    pub triangles: usize,
}

/// What a mesh–mesh test did, pass by pass.
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct MeshMeshStats {
    /// The bounding spheres overlapped.
    pub spheres_overlap: bool,
    /// The root OBBs overlapped.
    pub obbs_overlap: bool,
    /// Node pairs tested as OBBs during the descent.
    pub node_pairs: usize,
    /// Triangle pairs given to Möller's test.
    pub triangle_pairs: usize,
}

impl MeshCollider {
    /// Prepares `mesh` (positions in the body's local space). Non-finite positions are refused;
    /// zero-area triangles are kept but never intersect.
    pub fn new(mesh: &impl TriangleSource) -> Result<Self, NarrowphaseError> {
        let positions: Vec<Point3<f32>> = mesh.positions().iter().collect();
        if !positions.iter().all(|p| p.iter().all(|v| v.is_finite())) {
            return Err(NarrowphaseError::DegenerateShape);
        }
        let idx = mesh.indices();
        let triangles: Vec<[u32; 3]> = (0..idx.len()).map(|i| idx.get(i)).collect();
        if triangles.iter().flatten().any(|&v| v as usize >= positions.len()) {
            return Err(NarrowphaseError::DegenerateShape);
        }
        let mut m = MeshCollider {
            order: (0..triangles.len() as u32).collect(),
            positions,
            triangles,
            nodes: Vec::new(),
            sphere: BoundingSphere { center: Point3::origin(), radius: 0.0 },
        };
        if let Some(all) = Aabb::from_points(&m.positions) {
            let center = voxterra_core::nalgebra::center(&all.mins, &all.maxs);
            let radius = m.positions.iter().map(|p| (p - center).norm()).fold(0.0, f32::max);
            m.sphere = BoundingSphere { center, radius };
        }
        if !m.triangles.is_empty() {
            m.nodes.push(Node { aabb: Aabb::new(Point3::origin(), Point3::origin()), start: 0, count: 0 });
            m.build(0, 0, m.triangles.len(), 0);
        }
        Ok(m)
    }

    /// Triangles in the mesh.
    pub fn triangle_count(&self) -> usize {
        self.triangles.len()
    }

    /// Triangle `t` in local space.
    pub fn triangle(&self, t: u32) -> [Point3<f32>; 3] {
        self.triangles[t as usize].map(|v| self.positions[v as usize])
    }

    fn bounds(&self, range: &[u32]) -> Aabb {
        let pts = range.iter().flat_map(|&t| self.triangle(t));
        let mut it = pts.into_iter();
        let first = it.next().unwrap_or_else(Point3::origin);
        it.fold(Aabb::new(first, first), |b, p| Aabb::new(b.mins.inf(&p), b.maxs.sup(&p)))
    }

    fn build(&mut self, node: usize, start: usize, end: usize, depth: usize) {
        let aabb = self.bounds(&self.order[start..end]);
        self.nodes[node] = Node { aabb, start: start as u32, count: (end - start) as u32 };
        if end - start <= LEAF_TRIANGLES || depth >= MAX_DEPTH {
            return;
        }
        let ext = aabb.extents();
        let axis = if ext.x >= ext.y && ext.x >= ext.z {
            0
        } else if ext.y >= ext.z {
            1
        } else {
            2
        };
        let mid = (aabb.mins[axis] + aabb.maxs[axis]) * 0.5;
        let centroid = |t: u32, m: &Self| m.triangle(t).iter().map(|p| p[axis]).sum::<f32>() / 3.0;
        // Partition by centroid against the node's center on the longest axis.
        let mut split = start;
        for i in start..end {
            if centroid(self.order[i], self) < mid {
                self.order.swap(i, split);
                split += 1;
            }
        }
        if split == start || split == end {
            return; // all on one side (a large triangle): stay a leaf, as the article does
        }
        let left = self.nodes.len();
        let empty = Node { aabb, start: 0, count: 0 };
        self.nodes.extend([empty, empty]);
        self.nodes[node] = Node { aabb, start: left as u32, count: 0 };
        self.build(left, start, split, depth + 1);
        self.build(left + 1, split, end, depth + 1);
    }
}

fn world(m: &MeshCollider, pose: &Isometry3<f32>, t: u32) -> [Point3<f64>; 3] {
    m.triangle(t).map(|p| (pose * p).cast::<f64>())
}

/// Both meshes' node boxes in `a`'s local frame: every node of a mesh shares that mesh's axes, so
/// the rotation between any node of `a` and any node of `b` is one matrix for the whole descent
/// (PERF: the OBB test then costs a matrix-vector product and the 15 axes, no quaternion work).
struct Relative {
    r: Matrix3<f32>,
    abs_r: Matrix3<f32>,
    /// `b`'s origin in `a`'s frame.
    t: Vector3<f32>,
}

impl Relative {
    fn new(pose_a: &Isometry3<f32>, pose_b: &Isometry3<f32>) -> Self {
        let rel = pose_a.inv_mul(pose_b);
        let r = rel.rotation.to_rotation_matrix().into_inner();
        Relative { abs_r: r.map(|v| v.abs() + 1e-6), r, t: rel.translation.vector }
    }

    /// The OBB test of `a`'s node box against `b`'s, each in its own mesh's frame.
    fn overlap(&self, a: &Aabb, b: &Aabb) -> bool {
        let (ca, ha) = (voxterra_core::nalgebra::center(&a.mins, &a.maxs), a.extents() * 0.5);
        let (cb, hb) = (voxterra_core::nalgebra::center(&b.mins, &b.maxs), b.extents() * 0.5);
        let t = self.r * cb.coords + self.t - ca.coords;
        crate::obb::sat15(&self.r, &self.abs_r, &t, &ha, &hb)
    }
}

struct Descent<'m> {
    a: &'m MeshCollider,
    b: &'m MeshCollider,
    rel: Relative,
    stats: MeshMeshStats,
}

impl Descent<'_> {
    /// Passes 1–3; `None` when a pass rejects. `on_leaves` gets each overlapping leaf pair and
    /// may stop the descent by returning false.
    fn run(
        a: &MeshCollider,
        pose_a: &Isometry3<f32>,
        b: &MeshCollider,
        pose_b: &Isometry3<f32>,
        on_leaves: &mut dyn FnMut(&[u32], &[u32]) -> bool,
    ) -> MeshMeshStats {
        let mut d = Descent { a, b, rel: Relative::new(pose_a, pose_b), stats: MeshMeshStats::default() };
        if a.nodes.is_empty() || b.nodes.is_empty() {
            return d.stats;
        }
        // Pass 1: bounding spheres.
        let sa = BoundingSphere { center: pose_a * a.sphere.center, radius: a.sphere.radius };
        let sb = BoundingSphere { center: pose_b * b.sphere.center, radius: b.sphere.radius };
        d.stats.spheres_overlap = sa.intersects(&sb);
        if !d.stats.spheres_overlap {
            return d.stats;
        }
        // Pass 2: the root OBBs (the first node test of the descent).
        d.stats.obbs_overlap = d.rel.overlap(&a.nodes[0].aabb, &b.nodes[0].aabb);
        if !d.stats.obbs_overlap {
            return d.stats;
        }
        // Pass 3: descend both hierarchies, the larger volume first.
        let mut stack = vec![(0usize, 0usize)];
        while let Some((na, nb)) = stack.pop() {
            d.stats.node_pairs += 1;
            let (xa, xb) = (&d.a.nodes[na], &d.b.nodes[nb]);
            if !d.rel.overlap(&xa.aabb, &xb.aabb) {
                continue;
            }
            match (xa.count > 0, xb.count > 0) {
                (true, true) => {
                    let la = &d.a.order[xa.start as usize..(xa.start + xa.count) as usize];
                    let lb = &d.b.order[xb.start as usize..(xb.start + xb.count) as usize];
                    if !on_leaves(la, lb) {
                        break;
                    }
                }
                (false, true) => stack.extend([(xa.start as usize + 1, nb), (xa.start as usize, nb)]),
                (true, false) => stack.extend([(na, xb.start as usize + 1), (na, xb.start as usize)]),
                (false, false) => {
                    if xa.aabb.volume() >= xb.aabb.volume() {
                        stack.extend([(xa.start as usize + 1, nb), (xa.start as usize, nb)]);
                    } else {
                        stack.extend([(na, xb.start as usize + 1), (na, xb.start as usize)]);
                    }
                }
            }
        }
        d.stats
    }
}

/// `b`'s triangle `t` in `a`'s frame, f64.
fn in_a(m: &MeshCollider, rel: &Isometry3<f32>, t: u32) -> [Point3<f64>; 3] {
    m.triangle(t).map(|p| (rel * p).cast::<f64>())
}

fn local(m: &MeshCollider, t: u32) -> [Point3<f64>; 3] {
    m.triangle(t).map(|p| p.cast::<f64>())
}

/// The pairs `(triangle of a, triangle of b)` that intersect, sorted, found by the multi-pass
/// test; with what each pass did. Triangles are tested in `a`'s frame, `b`'s transformed once
/// each.
pub fn intersecting_pairs(
    a: &MeshCollider,
    pose_a: &Isometry3<f32>,
    b: &MeshCollider,
    pose_b: &Isometry3<f32>,
    options: &MeshMeshOptions,
) -> (Vec<(u32, u32)>, MeshMeshStats) {
    let mut candidates = Vec::new();
    let mut stats = Descent::run(a, pose_a, b, pose_b, &mut |la, lb| {
        for &ta in la {
            for &tb in lb {
                candidates.push((ta, tb));
            }
        }
        true
    });
    stats.triangle_pairs = candidates.len();
    if candidates.is_empty() {
        return (Vec::new(), stats);
    }
    // b's candidate triangles, each moved into a's frame once.
    let rel = pose_a.inv_mul(pose_b);
    let mut bs: Vec<u32> = candidates.iter().map(|c| c.1).collect();
    bs.sort_unstable();
    bs.dedup();
    let moved: Vec<[Point3<f64>; 3]> = bs.iter().map(|&t| in_a(b, &rel, t)).collect();
    let slot = |t: u32| bs.binary_search(&t).map_or(0, |i| i);
    // Pass 4: Möller on every candidate pair, in parallel past the threshold; one result slot
    // per pair keeps the output the same for any thread count.
    let test = |&(ta, tb): &(u32, u32)| triangles_intersect_f64(&local(a, ta), &moved[slot(tb)]);
    let hits: Vec<bool> = if candidates.len() >= options.parallel_threshold {
        candidates.par_iter().map(test).collect()
    } else {
        candidates.iter().map(test).collect()
    };
    let mut pairs: Vec<(u32, u32)> =
        candidates.into_iter().zip(hits).filter(|(_, h)| *h).map(|(p, _)| p).collect();
    pairs.sort_unstable();
    pairs.dedup();
    (pairs, stats)
}

/// True when the meshes share a point: the multi-pass test stopping at the first intersecting
/// triangle pair.
pub fn meshes_intersect(
    a: &MeshCollider,
    pose_a: &Isometry3<f32>,
    b: &MeshCollider,
    pose_b: &Isometry3<f32>,
) -> bool {
    let rel = pose_a.inv_mul(pose_b);
    let mut hit = false;
    Descent::run(a, pose_a, b, pose_b, &mut |la, lb| {
        for &tb in lb {
            let wb = in_a(b, &rel, tb);
            if la.iter().any(|&ta| triangles_intersect_f64(&local(a, ta), &wb)) {
                hit = true;
                return false;
            }
        }
        true
    });
    hit
}

/// The brute force: Möller's test on every pair of triangles. The reference for
/// [`intersecting_pairs`].
pub fn intersecting_pairs_brute_force(
    a: &MeshCollider,
    pose_a: &Isometry3<f32>,
    b: &MeshCollider,
    pose_b: &Isometry3<f32>,
) -> Vec<(u32, u32)> {
    let wb: Vec<[Point3<f64>; 3]> = (0..b.triangle_count() as u32).map(|t| world(b, pose_b, t)).collect();
    let mut out = Vec::new();
    for ta in 0..a.triangle_count() as u32 {
        let wa = world(a, pose_a, ta);
        for (tb, w) in wb.iter().enumerate() {
            if triangles_intersect_f64(&wa, w) {
                out.push((ta, tb as u32));
            }
        }
    }
    out
}

/// The multi-pass test; `None` when the meshes do not touch. Poses must be finite.
pub fn collide(
    a: &MeshCollider,
    pose_a: &Isometry3<f32>,
    b: &MeshCollider,
    pose_b: &Isometry3<f32>,
    options: &MeshMeshOptions,
) -> Result<Option<HitData>, NarrowphaseError> {
    if !is_finite(pose_a) || !is_finite(pose_b) {
        return Err(NarrowphaseError::NonFinitePose);
    }
    let (pairs, _) = intersecting_pairs(a, pose_a, b, pose_b, options);
    Ok(hit_from_pairs(a, pose_a, b, pose_b, &pairs))
}

/// The article's `hit_from_colliders`: per side, the mean centroid and mean normal of its
/// triangles that intersect the other mesh, in world space.
pub fn hit_from_pairs(
    a: &MeshCollider,
    pose_a: &Isometry3<f32>,
    b: &MeshCollider,
    pose_b: &Isometry3<f32>,
    pairs: &[(u32, u32)],
) -> Option<HitData> {
    if pairs.is_empty() {
        return None;
    }
    let side = |m: &MeshCollider, pose: &Isometry3<f32>, mut ts: Vec<u32>| {
        ts.sort_unstable();
        ts.dedup();
        let (mut point, mut normal) = (Vector3::<f64>::zeros(), Vector3::<f64>::zeros());
        for &t in &ts {
            let w = world(m, pose, t);
            point += (w[0].coords + w[1].coords + w[2].coords) / 3.0;
            let n = (w[1] - w[0]).cross(&(w[2] - w[0]));
            if let Some(n) = n.try_normalize(0.0) {
                normal += n;
            }
        }
        let point = Point3::from(point / ts.len() as f64).cast::<f32>();
        (point, normal.cast::<f32>(), ts.len())
    };
    let (pa, na, ka) = side(a, pose_a, pairs.iter().map(|p| p.0).collect());
    let (pb, nb, kb) = side(b, pose_b, pairs.iter().map(|p| p.1).collect());
    // Normals that cancel (a sliver through both sides) fall back to the line between the points.
    let fallback = |n: Vector3<f32>, toward: Vector3<f32>| {
        Unit::try_new(n, 1e-6).or_else(|| Unit::try_new(toward, 1e-6)).unwrap_or(Vector3::y_axis())
    };
    Some(HitData {
        a: SideHit { point: pa, normal: fallback(na, pb - pa), triangles: ka },
        b: SideHit { point: pb, normal: fallback(nb, pa - pb), triangles: kb },
    })
}

/// A rigid body for [`apply_impulse`]: mass, world inertia tensor about the center of mass,
/// velocities. An infinite mass (and a zero inverse inertia) makes a static body.
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct RigidBody {
    /// Mass (kg); `f32::INFINITY` for a static body.
    pub mass: f32,
    /// Inverse of the world inertia tensor about the center of mass (zero for a static body).
    pub inv_inertia: Matrix3<f32>,
    /// Center of mass, world space.
    pub center: Point3<f32>,
    /// Linear velocity.
    pub linvel: Vector3<f32>,
    /// Angular velocity.
    pub angvel: Vector3<f32>,
}

impl RigidBody {
    fn inv_mass(&self) -> f32 {
        if self.mass.is_finite() && self.mass > 0.0 { 1.0 / self.mass } else { 0.0 }
    }
}

/// The article's impulse response: along the normal of `b`'s intersecting triangles (which
/// points from `b` toward `a`) at the midpoint of the two contact points, the impulse that
/// reverses the approaching normal velocity scaled by `restitution` (0 = plastic, 1 = elastic),
/// applied to both bodies' linear and angular velocities. Returns the impulse's magnitude; 0 when
/// the bodies already separate there, or the input is not finite (the bodies are left as they
/// were).
pub fn apply_impulse(a: &mut RigidBody, b: &mut RigidBody, hit: &HitData, restitution: f32) -> f32 {
    let n = hit.b.normal.into_inner();
    let p = nalgebra_mid(&hit.a.point, &hit.b.point);
    let (ra, rb) = (p - a.center, p - b.center);
    let v_rel = (a.linvel + a.angvel.cross(&ra)) - (b.linvel + b.angvel.cross(&rb));
    let vn = v_rel.dot(&n);
    if vn.is_nan() || vn >= 0.0 {
        return 0.0; // separating, or not finite
    }
    let k = a.inv_mass()
        + b.inv_mass()
        + n.dot(&(a.inv_inertia * ra.cross(&n)).cross(&ra))
        + n.dot(&(b.inv_inertia * rb.cross(&n)).cross(&rb));
    if !(k > 0.0 && k.is_finite()) {
        return 0.0;
    }
    let j = -(1.0 + restitution.clamp(0.0, 1.0)) * vn / k;
    let impulse = n * j;
    a.linvel += impulse * a.inv_mass();
    a.angvel += a.inv_inertia * ra.cross(&impulse);
    b.linvel -= impulse * b.inv_mass();
    b.angvel -= b.inv_inertia * rb.cross(&impulse);
    j
}

fn is_finite(pose: &Isometry3<f32>) -> bool {
    pose.translation.vector.iter().chain(pose.rotation.coords.iter()).all(|v| v.is_finite())
}

fn nalgebra_mid(a: &Point3<f32>, b: &Point3<f32>) -> Point3<f32> {
    voxterra_core::nalgebra::center(a, b)
}
