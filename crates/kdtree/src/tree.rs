//! The tree type: its nodes and grid, the view that pairs it with a mesh, statistics and the
//! invariant check. Builds are in `build`, queries in `box_query`, `ray_query` and `batch`.

use crate::node::{Grid, Kind, LEAF_MAX, NARROW_TRIANGLES, Node};
use voxterra_core::{Aabb, TriangleSource};

/// Why a tree cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KdTreeError {
    /// A triangle names a vertex past the end of the positions.
    #[error("triangle {triangle} uses vertex {vertex}, past the end of the positions")]
    IndexOutOfRange {
        /// The triangle.
        triangle: usize,
        /// The vertex index.
        vertex: u32,
    },
    /// A vertex with a NaN or infinite coordinate.
    #[error("triangle {triangle} uses vertex {vertex}, which is not finite")]
    NonFiniteVertex {
        /// The triangle.
        triangle: usize,
        /// The vertex index.
        vertex: u32,
    },
    /// More triangles than node fields can address.
    #[error("{0} triangles exceed the limit of {max}", max = MAX_TRIANGLES)]
    TooManyTriangles(usize),
}

/// Size and shape of a tree.
#[derive(Clone, Copy, PartialEq, Debug)]
#[non_exhaustive]
pub struct KdTreeStats {
    /// Triangles indexed.
    pub triangles: usize,
    /// Nodes (branches, leaves and slabs).
    pub nodes: usize,
    /// Leaves.
    pub leaves: usize,
    /// Slab nodes (bounds on an axis the planes above leave loose; see the crate docs).
    pub slabs: usize,
    /// Levels, the root counting as 1 (slabs count).
    pub depth: usize,
    /// Bytes of the tree (nodes and bounds; not the mesh).
    pub bytes: usize,
    /// Mean triangles per leaf.
    pub triangles_per_leaf: f32,
}

/// A loose kD tree over the triangles of a mesh it does not own. Build it with [`KdTree::build`],
/// query it through [`KdTree::with`], which pairs it with its mesh.
#[derive(Clone, Debug)]
pub struct KdTree {
    /// Boxed, not a `Vec`: a chunk's tree is built once and kept (a cache holds tens of thousands).
    pub(crate) nodes: Box<[Node]>,
    pub(crate) bounds: Aabb,
    /// The grid the nodes' planes are steps of.
    pub(crate) grid: Grid,
    /// How far `bounds` is loosened against float error to clip rays ([`KdTree::clip`]).
    pub(crate) clip_margin: f32,
    pub(crate) triangles: u32,
    pub(crate) depth: u16,
}

// PERF: a collision cache keeps one tree per chunk; the header is a tenth of a chunk's tree.
const _: () = assert!(std::mem::size_of::<KdTree>() <= 88);

impl KdTree {
    /// `bounds` loosened against float error, for clipping rays.
    #[inline]
    pub(crate) fn clip(&self) -> Aabb {
        self.bounds.loosened(self.clip_margin)
    }

    /// On axis `a`, the largest coordinate magnitude in `bounds` (the ray error bound's scale).
    #[inline]
    pub(crate) fn reach(&self, a: usize) -> f32 {
        self.bounds.mins[a].abs().max(self.bounds.maxs[a].abs())
    }

    /// The tree paired with its mesh (the one it was built from): the query interface.
    pub fn with<'a, S: TriangleSource>(&'a self, mesh: &'a S) -> KdTreeView<'a, S> {
        KdTreeView { tree: self, mesh }
    }

    /// The bounds of every triangle (inverted — mins above maxs — for an empty tree).
    pub fn bounds(&self) -> &Aabb {
        &self.bounds
    }

    /// Statistics.
    pub fn stats(&self) -> KdTreeStats {
        // One pass: [branches, leaves, slabs].
        let mut kinds = [0usize; 3];
        for n in &self.nodes {
            kinds[match n.kind() {
                Kind::Branch(..) => 0,
                Kind::Leaf(_) => 1,
                Kind::Slab(..) => 2,
            }] += 1;
        }
        let leaves = kinds[1];
        KdTreeStats {
            triangles: self.triangles as usize,
            nodes: self.nodes.len(),
            leaves,
            slabs: kinds[2],
            depth: self.depth as usize,
            bytes: self.nodes.len() * std::mem::size_of::<Node>() + std::mem::size_of::<Self>(),
            triangles_per_leaf: self.triangles as f32 / leaves.max(1) as f32,
        }
    }

    /// Checks every invariant against `mesh`: each branch's planes bound all triangles below it,
    /// children in range, each triangle in exactly one leaf, at most 2 per leaf (4 in trees of at
    /// most 16 384 triangles), depth as recorded and within the query stacks, bounds holding
    /// everything. `Err` names the first broken one.
    pub fn validate(&self, mesh: &impl TriangleSource) -> Result<(), InvalidKdTree> {
        let n = mesh.triangle_count();
        if n != self.triangles as usize {
            return Err(InvalidKdTree::TriangleCount { built: self.triangles as usize, mesh: n });
        }
        if self.depth as usize > 2 * MAX_DEPTH {
            return Err(InvalidKdTree::TooDeep { depth: self.depth as usize });
        }
        let mut seen = vec![false; n];
        // (node, level, branches above, bounds the node's triangles must respect on each axis)
        let mut stack = vec![(0usize, 1usize, 0usize, [[f32::NEG_INFINITY, f32::INFINITY]; 3])];
        let mut max_level = 0;
        while let Some((i, level, branches, limits)) = stack.pop() {
            max_level = max_level.max(level);
            if branches > MAX_DEPTH {
                return Err(InvalidKdTree::TooDeep { depth: branches });
            }
            let node = self.nodes.get(i).ok_or(InvalidKdTree::NodeOutOfRange { node: i })?;
            match node.kind() {
                Kind::Leaf(count) => {
                    let most = if n <= NARROW_TRIANGLES { LEAF_MAX } else { 2 };
                    if count > most {
                        return Err(InvalidKdTree::LeafTooFull { node: i, count });
                    }
                    for &t in &node.triangles()[..count] {
                        let t = t as usize;
                        if t >= n || std::mem::replace(&mut seen[t], true) {
                            return Err(InvalidKdTree::TriangleTwice { node: i, triangle: t });
                        }
                        for v in mesh.triangle(t) {
                            for a in 0..3 {
                                if !(limits[a][0] <= v[a] && v[a] <= limits[a][1]) {
                                    return Err(InvalidKdTree::OutsidePlanes {
                                        node: i,
                                        triangle: t,
                                        axis: a,
                                    });
                                }
                                if !(self.bounds.mins[a] <= v[a] && v[a] <= self.bounds.maxs[a]) {
                                    return Err(InvalidKdTree::OutsideBounds { triangle: t });
                                }
                            }
                        }
                    }
                }
                Kind::Branch(a, c) => {
                    if c + 1 >= self.nodes.len() || c <= i {
                        return Err(InvalidKdTree::ChildOutOfRange { node: i, child: c });
                    }
                    let mut left = limits;
                    left[a][1] = left[a][1].min(self.grid.value(a, node.plane(0)));
                    let mut right = limits;
                    right[a][0] = right[a][0].max(self.grid.value(a, node.plane(1)));
                    stack.push((c, level + 1, branches + 1, left));
                    stack.push((c + 1, level + 1, branches + 1, right));
                }
                Kind::Slab(a, c) => {
                    if c >= self.nodes.len() || c <= i {
                        return Err(InvalidKdTree::ChildOutOfRange { node: i, child: c });
                    }
                    if matches!(self.nodes[c].kind(), Kind::Slab(..)) {
                        return Err(InvalidKdTree::SlabUnderSlab { node: i });
                    }
                    let mut inner = limits;
                    let range = [0, 1].map(|k| self.grid.value(a, node.plane(k)));
                    inner[a] = [inner[a][0].max(range[0]), inner[a][1].min(range[1])];
                    stack.push((c, level + 1, branches, inner));
                }
            }
        }
        if max_level != (self.depth as usize).max(1) {
            return Err(InvalidKdTree::DepthMismatch { recorded: self.depth as usize, found: max_level });
        }
        match seen.iter().position(|s| !s) {
            Some(t) => Err(InvalidKdTree::TriangleMissing { triangle: t }),
            None => Ok(()),
        }
    }
}

/// A tree and its mesh: runs queries. Implements core's [`TriangleIndex`].
#[derive(Clone, Copy, Debug)]
pub struct KdTreeView<'a, S: TriangleSource> {
    pub(crate) tree: &'a KdTree,
    pub(crate) mesh: &'a S,
}

/// Trees of at least this many triangles are large: their mesh and tree, about 26 bytes a
/// triangle, are mostly past L2, and cache misses outweigh instructions. There rays prefetch
/// leaves' triangles ahead, batched rays run in lanes (`batch.rs`), box queries defer their
/// leaves' tests ([`test_deferred`]) and the build places slabs over smaller subtrees. On
/// chunk-sized meshes, which stay in cache, the same prefetch made box queries 7% slower, the
/// deferral gained nothing and the slabs cost 9–15% of a build, so small trees do none of it.
pub(crate) const LARGE_TREE: u32 = 1 << 15;

/// The most triangles a tree holds: node child indices and leaf counts have 30 bits.
pub const MAX_TRIANGLES: usize = 1 << 29;

/// A bound on the depth for any tree of at most [`MAX_TRIANGLES`]: each child of a branch gets at
/// most 75% of its parent's triangles, so branches nest at most log_{4/3}(2^29 / 2) + 1 < 72 deep,
/// and a slab's child is always a branch or leaf, so with slabs a path has at most 144 nodes.
/// Query stacks hold one entry per branch on a path.
pub(crate) const MAX_DEPTH: usize = 72;

/// A tree invariant that does not hold, from [`KdTree::validate`]. Nodes are indices into the
/// tree's node array.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidKdTree {
    /// The tree was built over a different number of triangles than the mesh has.
    #[error("built over {built} triangles, the mesh has {mesh}")]
    TriangleCount {
        /// Triangles the tree was built over.
        built: usize,
        /// Triangles in the mesh.
        mesh: usize,
    },
    /// A path holds more branches than the query stacks do.
    #[error("a path {depth} deep exceeds the query stacks")]
    TooDeep {
        /// The depth found.
        depth: usize,
    },
    /// A child index past the node array, or not after its parent.
    #[error("node {node}: child {child} is out of range")]
    ChildOutOfRange {
        /// The parent.
        node: usize,
        /// The child index.
        child: usize,
    },
    /// A node index past the node array.
    #[error("node {node} is out of range")]
    NodeOutOfRange {
        /// The node index.
        node: usize,
    },
    /// Leaves hold at most 2 triangles.
    #[error("leaf {node} holds {count} triangles")]
    LeafTooFull {
        /// The leaf.
        node: usize,
        /// Its count.
        count: usize,
    },
    /// Each triangle is in exactly one leaf, and in range.
    #[error("leaf {node}: triangle {triangle} is out of range or in two leaves")]
    TriangleTwice {
        /// The leaf.
        node: usize,
        /// The triangle.
        triangle: usize,
    },
    /// A triangle lies outside a plane or slab above its leaf.
    #[error("triangle {triangle} at leaf {node} lies outside a split plane or slab on axis {axis}")]
    OutsidePlanes {
        /// The leaf.
        node: usize,
        /// The triangle.
        triangle: usize,
        /// The axis (0 = X, 1 = Y, 2 = Z).
        axis: usize,
    },
    /// A triangle lies outside the tree's bounds.
    #[error("triangle {triangle} lies outside the tree's bounds")]
    OutsideBounds {
        /// The triangle.
        triangle: usize,
    },
    /// A slab's child is a branch or a leaf, never a slab.
    #[error("slab {node}: its child is a slab")]
    SlabUnderSlab {
        /// The slab.
        node: usize,
    },
    /// The recorded depth is the deepest path's.
    #[error("depth {recorded} recorded, {found} found")]
    DepthMismatch {
        /// The recorded depth.
        recorded: usize,
        /// The deepest path found.
        found: usize,
    },
    /// Every triangle is in some leaf.
    #[error("triangle {triangle} is in no leaf")]
    TriangleMissing {
        /// The triangle.
        triangle: usize,
    },
}
