//! The narrowphase's error type.

use thiserror::Error;

/// Why a narrowphase query was refused. Nothing is computed for a refused query.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum NarrowphaseError {
    /// A pose with a NaN or infinite translation or rotation.
    #[error("the shape's pose is not finite")]
    NonFinitePose,
    /// A shape whose bounding box is not finite, or has no extent on any axis (a zero-radius
    /// ball, a zero cuboid): it cannot be in contact with anything.
    #[error("the shape is degenerate: its bounding box is not finite or has no extent")]
    DegenerateShape,
    /// A shape this narrowphase does not collide: not convex, and not a compound of convex parts.
    #[error("unsupported shape: {0} (convex shapes and compounds of them only)")]
    UnsupportedShape(&'static str),
    /// A prediction distance or velocity that is negative, NaN or infinite.
    #[error("invalid {what}: {value}")]
    InvalidParameter {
        /// Which parameter.
        what: &'static str,
        /// Its value.
        value: f32,
    },
}
