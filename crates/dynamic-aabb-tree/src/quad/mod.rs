//! The tree: 4-wide nodes of two cache lines (Jolt's broadphase layout), each holding its four
//! children's boxes as 4-lane rows, so a visit decides among four subtrees from one node and a
//! descent has half a binary tree's levels. An index arena with a free list; leaves live in
//! their parent's slots, with each leaf's exact box kept by item.
//!
//! Builds split by binned SAH ([`crate::sah::split`]) taken four ways, in full (depth first) or
//! in the background a slice per pair update; insertion finds the cheapest free slot or sibling
//! by SAH branch and bound, and rotates nodes on its way back up; a moved leaf grows its
//! ancestors in place, and batches refit every node once. Box,
//! point and ray queries, and the pair traversal within the moving tree and against the static
//! one, with moved flags on the child references.
//!
//! One concept a file: [`node`] (the layout and lane helpers), [`tree`] (the arena, builds,
//! quality), [`insert`], [`refit`], [`rebuild`], [`query`], [`pairs`] and [`validate`]. Files
//! below share the tree's fields (`pub(super)`); nothing outside `quad` sees them.

mod insert;
mod node;
mod pairs;
mod query;
mod rebuild;
mod refit;
mod tree;
mod validate;

#[cfg(test)]
mod tests;

pub(crate) use pairs::{Task, root_tasks, run, visit};
pub(crate) use tree::QuadTree;
pub use validate::InvalidTree;
