//! # voxterra-benches
//!
//! Benchmarks for voxterra: criterion benches (`cargo bench -p voxterra-benches`) and the
//! `compare` binary, which runs a suite's cases for voxterra and its named peer side by side in one
//! process and prints medians and ratios:
//!
//! ```text
//! cargo run --release -p voxterra-benches --bin compare -- SUITE [--quick] [--json]
//! ```
//!
//! Suites: `store` (the voxel store against a dense 2-byte-per-voxel array), `codec` (RLE and
//! RLE+LZ4 against LZ4 alone on raw voxels; whole save and load), `bit-broadphase` (mask queries
//! against a brute-force scan; candidate reduction; memory; rebuild scaling), `kdtree` (against
//! parry3d 0.31's `TriMesh`), `mesher`
//! (against fast-surface-nets 0.2 on the same padded 32³ chunks; uniform chunks; physics mesh size),
//! `dynamic-aabb-tree` (against parry3d's `Bvh` driven as rapier drives it and obvhs's `Bvh2`:
//! bouncing boxes, update + pairs per frame; AABB, point and ray queries), `narrowphase` (contacts,
//! ghost normals across chunk seams, shape casts and mesh–mesh tests against parry's
//! `contact_manifolds` on one `TriMesh` per chunk with `FIX_INTERNAL_EDGES`), `terrain` (the
//! facade's `Terrain`: edit to collision-ready and memory, against re-meshing and rebuilding a
//! parry `TriMesh` per touched chunk), `lod` (levels of detail: nodes against the `transvoxel`
//! crate, error at equal triangle count against meshoptimizer's simplifier, a whole 2048² view),
//! `detach` (finding the pieces an edit cut loose, against a flood fill of the edit's grown box).
//! Every case checks that both sides compute the same answer before it is timed.

#![forbid(unsafe_code)]

pub mod bit_broadphase_suite;
pub mod codec_suite;
pub mod detach_suite;
pub mod dynamic_tree_suite;
pub mod harness;
pub mod kdtree_suite;
pub mod lod_quality;
pub mod lod_suite;
pub mod mesher_suite;
pub mod narrowphase_suite;
pub mod parry_adapter;
pub mod picture_rays;
pub mod replication_suite;
pub mod store_suite;
pub mod terrain_profile;
pub mod terrain_suite;
pub mod voxels_peer;
pub mod world;
