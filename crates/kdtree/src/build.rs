//! Construction, as in the article: split the longest axis of the current box at the mean of the
//! triangle midpoints, sort triangles to a side by midpoint, fit both planes to all 3 vertices; when
//! a side would get under 25% of the triangles, split the midpoint order in halves instead.

use crate::node::Node;
use crate::{KdTree, KdTreeError};
use voxterra_core::nalgebra::Point3;
use voxterra_core::{Aabb, TriangleIndices, TriangleSource};

/// Per-triangle build data: its bounds, midpoint and index. The one scratch buffer of a build.
#[derive(Clone, Copy, Debug)]
struct Prim {
    min: [f32; 3],
    max: [f32; 3],
    mid: [f32; 3],
    index: u32,
}

/// The most triangles a tree holds: node child indices and leaf counts have 30 bits.
pub const MAX_TRIANGLES: usize = 1 << 29;

/// A bound on the depth for any tree of at most [`MAX_TRIANGLES`]: each child gets at most 75% of
/// its parent's triangles, so depth ≤ log_{4/3}(2^29 / 2) + 1 < 72. Query stacks are this deep.
pub(crate) const MAX_DEPTH: usize = 72;

pub(crate) fn build(source: &impl TriangleSource) -> Result<KdTree, KdTreeError> {
    let n = source.triangle_count();
    if n > MAX_TRIANGLES {
        return Err(KdTreeError::TooManyTriangles(n));
    }
    let positions = source.positions();
    let mut prims = Vec::with_capacity(n);
    let mut push = |i: usize, v: [u32; 3]| -> Result<(), KdTreeError> {
        let mut p =
            Prim { min: [f32::INFINITY; 3], max: [f32::NEG_INFINITY; 3], mid: [0.0; 3], index: i as u32 };
        for &vi in &v {
            let q: &Point3<f32> =
                positions.get(vi as usize).ok_or(KdTreeError::IndexOutOfRange { triangle: i, vertex: vi })?;
            if !(q.x.is_finite() && q.y.is_finite() && q.z.is_finite()) {
                return Err(KdTreeError::NonFiniteVertex { triangle: i, vertex: vi });
            }
            for a in 0..3 {
                p.min[a] = p.min[a].min(q[a]);
                p.max[a] = p.max[a].max(q[a]);
            }
        }
        p.mid = [0, 1, 2].map(|a| 0.5 * (p.min[a] + p.max[a]));
        prims.push(p);
        Ok(())
    };
    match source.indices() {
        TriangleIndices::U16(t) => t.iter().enumerate().try_for_each(|(i, t)| push(i, t.map(u32::from)))?,
        TriangleIndices::U32(t) => t.iter().enumerate().try_for_each(|(i, t)| push(i, *t))?,
    }
    let bounds = bounds_of(&prims);
    let mut nodes = Vec::with_capacity(n.max(1));
    nodes.push(Node::leaf([0, 0], 0));
    let mut depth = 0;
    if !prims.is_empty() {
        subdivide(&mut prims, &mut nodes, 0, 1, &mut depth);
    }
    Ok(KdTree { nodes, bounds, depth, triangles: n as u32 })
}

fn bounds_of(prims: &[Prim]) -> Aabb {
    let mut b = Aabb::new(
        Point3::new(f32::INFINITY, f32::INFINITY, f32::INFINITY),
        Point3::new(f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY),
    );
    for p in prims {
        for a in 0..3 {
            b.mins[a] = b.mins[a].min(p.min[a]);
            b.maxs[a] = b.maxs[a].max(p.max[a]);
        }
    }
    b
}

/// Fills node `at` with the tree over `prims` (which it reorders); `level` is `at`'s depth.
fn subdivide(prims: &mut [Prim], nodes: &mut Vec<Node>, at: usize, level: usize, depth: &mut usize) {
    *depth = (*depth).max(level);
    if prims.len() <= 2 {
        let id = |i: usize| prims.get(i).map_or(0, |p| p.index);
        nodes[at] = Node::leaf([id(0), id(1)], prims.len());
        return;
    }
    let b = bounds_of(prims);
    let e = b.extents();
    let axis = if e.x >= e.y && e.x >= e.z {
        0
    } else if e.y >= e.z {
        1
    } else {
        2
    };
    let mean = prims.iter().map(|p| p.mid[axis] as f64).sum::<f64>() / prims.len() as f64;
    let mean = mean as f32;
    // Partition by midpoint (in place, unstable).
    let mut left = 0;
    for i in 0..prims.len() {
        if prims[i].mid[axis] < mean {
            prims.swap(i, left);
            left += 1;
        }
    }
    let quarter = prims.len() / 4;
    if left < quarter.max(1) || prims.len() - left < quarter.max(1) {
        // Too skewed: halves of the midpoint order.
        left = prims.len() / 2;
        prims.select_nth_unstable_by(left, |p, q| p.mid[axis].total_cmp(&q.mid[axis]));
    }
    let (l, r) = prims.split_at_mut(left);
    let split0 = l.iter().map(|p| p.max[axis]).fold(f32::NEG_INFINITY, f32::max);
    let split1 = r.iter().map(|p| p.min[axis]).fold(f32::INFINITY, f32::min);
    let child = nodes.len();
    nodes.push(Node::leaf([0, 0], 0));
    nodes.push(Node::leaf([0, 0], 0));
    nodes[at] = Node::branch(axis, [split0, split1], child as u32);
    subdivide(l, nodes, child, level + 1, depth);
    subdivide(r, nodes, child + 1, level + 1, depth);
}
