//! The triangle sets queries read: a source of triangles, an index that finds those in a box,
//! their edge flags and sidedness ([`TriangleSet`]), and per triangle the rules its contacts obey
//! ([`TriangleRules`]).

use crate::internal_edges::ALL_ACTIVE;
use voxterra_core::{EdgeFlags, TriangleIndex, TriangleSource};

/// A triangle set as the narrowphase reads it: the triangles, and an index that finds those in a
/// box (the kD tree's view, [`voxterra_core::BruteForceTriangles`], or any other).
#[derive(Debug)]
pub struct TriangleSet<'a, S: TriangleSource, I: TriangleIndex> {
    /// The triangles.
    pub source: &'a S,
    /// Finds the triangles whose boxes overlap a box.
    pub index: &'a I,
    /// Per triangle, bit `i` set when edge `i` (corners `i` and `(i + 1) % 3`) is an active,
    /// convex crease (the mesher's [`edge flags`](https://docs.rs/voxterra-mesher)); contacts on
    /// inactive edges take the face's normal. [`EdgeFlags::None`]: every edge counts as active.
    pub edge_flags: EdgeFlags<'a>,
    /// True when the triangles are one-sided surfaces, solid behind their counter-clockwise
    /// front (terrain): a contact is never pushed out through a triangle's back.
    pub one_sided: bool,
}

// By hand: a derive would require `S: Copy` and `I: Copy`, but only references are copied.
impl<S: TriangleSource, I: TriangleIndex> Clone for TriangleSet<'_, S, I> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<S: TriangleSource, I: TriangleIndex> Copy for TriangleSet<'_, S, I> {}

impl<'a, S: TriangleSource, I: TriangleIndex> TriangleSet<'a, S, I> {
    /// The set of `source`'s triangles found through `index`, every edge active.
    pub fn new(source: &'a S, index: &'a I) -> Self {
        TriangleSet { source, index, edge_flags: EdgeFlags::None, one_sided: false }
    }

    /// The same set with per-triangle edge flags (a byte a triangle, or the physics mesh's own
    /// [`EdgeFlags`]), so contacts on flat or concave edges take the face's normal. Flags of the
    /// wrong length are ignored for the triangles they do not cover (those count as all active).
    pub fn with_edge_flags(self, flags: impl Into<EdgeFlags<'a>>) -> Self {
        TriangleSet { edge_flags: flags.into(), ..self }
    }

    /// The same set as one-sided surfaces, solid behind each triangle's counter-clockwise front (a
    /// terrain's surface): a contact whose normal would push the shape out through a triangle's
    /// back is redone along the front normal, so a shape that sank past a surface is pushed back
    /// up through it, never further down.
    pub fn one_sided(self) -> Self {
        TriangleSet { one_sided: true, ..self }
    }

    /// The flags of triangle `t` (all active without flags).
    #[inline]
    pub(crate) fn flags(&self, t: u32) -> u8 {
        self.edge_flags.get(t as usize).unwrap_or(ALL_ACTIVE)
    }

    /// How triangle `t`'s surface behaves.
    #[inline]
    pub(crate) fn rules(&self, t: u32) -> TriangleRules {
        TriangleRules { flags: self.flags(t), one_sided: self.one_sided }
    }
}

/// How one triangle's surface behaves: which of its edges are active creases, and whether it is
/// one-sided (solid behind its front).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TriangleRules {
    /// Bit `i` set when edge `i` is active.
    pub(crate) flags: u8,
    /// Solid behind the counter-clockwise front.
    pub(crate) one_sided: bool,
}
