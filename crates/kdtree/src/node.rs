//! The 12-byte node.

/// Low 2 bits of the tag of a node that is not a branch (branch axes are 0 = X, 1 = Y, 2 = Z).
const OTHER: u32 = 3;
/// With [`OTHER`]: the node is a slab, not a leaf.
const SLAB: u32 = 4;

/// The most nodes a slab can address as its child (its tag has 27 bits for it).
pub(crate) const SLAB_CHILD_LIMIT: usize = 1 << 27;

/// A node: a branch, a leaf or a slab, in three words. The low 2 bits of the third word (the tag)
/// are the branch axis, or 3 for the other two kinds:
/// - **branch**: two split planes on one axis, children at `child` and `child + 1`; the other 30
///   tag bits are `child`. Every triangle under the left child lies at or below `split(0)` on the
///   axis, every triangle under the right child at or above `split(1)`.
/// - **leaf** (tag bit 2 clear): up to two triangle indices; tag bits 3.. are the count.
/// - **slab** (tag bit 2 set; our addition to the article's tree): one child, all of whose
///   triangles lie between `split(0)` and `split(1)` on an axis (tag bits 3–4); tag bits 5.. are
///   the child. Slabs bound subtrees on an axis no ancestor's planes bound, such as height over a
///   heightfield, where the article's tree never splits on Y and rays passing over terrain would
///   otherwise descend to every leaf below them.
///
/// Split planes are stored as f32 bits.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(C)]
pub(crate) struct Node {
    a: u32,
    b: u32,
    tag: u32,
}

// PERF: the article's 12 bytes per node; about one node per triangle.
const _: () = assert!(std::mem::size_of::<Node>() == 12);

/// What a node is, decoded from its tag.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Kind {
    /// Split axis and left child index.
    Branch(usize, usize),
    /// Triangle count.
    Leaf(usize),
    /// Bounded axis and child index.
    Slab(usize, usize),
}

impl Node {
    pub(crate) fn branch(axis: usize, splits: [f32; 2], child: u32) -> Self {
        debug_assert!(axis < 3 && child < 1 << 30);
        Node { a: splits[0].to_bits(), b: splits[1].to_bits(), tag: axis as u32 | child << 2 }
    }

    pub(crate) fn leaf(triangles: [u32; 2], count: usize) -> Self {
        debug_assert!(count <= 2);
        Node { a: triangles[0], b: triangles[1], tag: OTHER | (count as u32) << 3 }
    }

    pub(crate) fn slab(axis: usize, range: [f32; 2], child: usize) -> Self {
        debug_assert!(axis < 3 && child < SLAB_CHILD_LIMIT);
        Node {
            a: range[0].to_bits(),
            b: range[1].to_bits(),
            tag: OTHER | SLAB | (axis as u32) << 3 | (child as u32) << 5,
        }
    }

    #[inline]
    pub(crate) fn kind(&self) -> Kind {
        let t = self.tag;
        if t & 3 != OTHER {
            Kind::Branch((t & 3) as usize, (t >> 2) as usize)
        } else if t & SLAB == 0 {
            Kind::Leaf((t >> 3) as usize)
        } else {
            Kind::Slab((t >> 3 & 3) as usize, (t >> 5) as usize)
        }
    }

    /// Branch: split plane 0 (bounds the left child from above) or 1 (the right child from below).
    /// Slab: the lower (0) or upper (1) bound.
    #[inline]
    pub(crate) fn split(&self, i: usize) -> f32 {
        f32::from_bits(if i == 0 { self.a } else { self.b })
    }

    /// Leaf: its triangles (the first `count`).
    #[inline]
    pub(crate) fn triangles(&self) -> [u32; 2] {
        [self.a, self.b]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_round_trip() {
        let b = Node::branch(2, [1.0, 0.5], (1 << 30) - 1);
        assert_eq!(b.kind(), Kind::Branch(2, (1 << 30) - 1));
        assert_eq!((b.split(0), b.split(1)), (1.0, 0.5));
        for c in 0..=2 {
            assert_eq!(Node::leaf([7, 9], c).kind(), Kind::Leaf(c));
        }
        assert_eq!(Node::leaf([7, 9], 2).triangles(), [7, 9]);
        for axis in 0..3 {
            let s = Node::slab(axis, [-2.0, 3.0], SLAB_CHILD_LIMIT - 1);
            assert_eq!(s.kind(), Kind::Slab(axis, SLAB_CHILD_LIMIT - 1));
            assert_eq!((s.split(0), s.split(1)), (-2.0, 3.0));
        }
    }
}
