//! The 12-byte node.

/// Axis field value that marks a leaf (axes are 0 = X, 1 = Y, 2 = Z).
pub(crate) const LEAF: u32 = 3;

/// A node: a branch (two split planes on one axis, children at `child` and `child + 1`) or a leaf
/// (up to two triangle indices). The low 2 bits of the third word are the axis, or 3 for a leaf;
/// the other 30 bits are the child index or the triangle count. Split planes are stored as f32 bits.
///
/// Branch invariant: every triangle under the left child lies at or below `split(0)` on the axis,
/// every triangle under the right child at or above `split(1)`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(C)]
pub(crate) struct Node {
    a: u32,
    b: u32,
    tag: u32,
}

// PERF: the article's 12 bytes per node; about one node per triangle.
const _: () = assert!(std::mem::size_of::<Node>() == 12);

impl Node {
    pub(crate) fn branch(axis: usize, splits: [f32; 2], child: u32) -> Self {
        debug_assert!(axis < 3 && child < 1 << 30);
        Node { a: splits[0].to_bits(), b: splits[1].to_bits(), tag: axis as u32 | child << 2 }
    }

    pub(crate) fn leaf(triangles: [u32; 2], count: usize) -> Self {
        debug_assert!(count <= 2);
        Node { a: triangles[0], b: triangles[1], tag: LEAF | (count as u32) << 2 }
    }

    #[inline]
    pub(crate) fn is_leaf(&self) -> bool {
        self.tag & 3 == LEAF
    }

    #[inline]
    pub(crate) fn axis(&self) -> usize {
        (self.tag & 3) as usize
    }

    /// Branch: index of the left child (the right one follows it).
    #[inline]
    pub(crate) fn child(&self) -> usize {
        (self.tag >> 2) as usize
    }

    /// Branch: split plane 0 (bounds the left child from above) or 1 (the right child from below).
    #[inline]
    pub(crate) fn split(&self, i: usize) -> f32 {
        f32::from_bits(if i == 0 { self.a } else { self.b })
    }

    /// Leaf: its triangles.
    #[inline]
    pub(crate) fn triangles(&self) -> ([u32; 2], usize) {
        ([self.a, self.b], (self.tag >> 2) as usize)
    }
}
