//! How far things reach on the voxel grid, in voxels: the margins every query, cache and edit
//! follow-up uses, named once.

/// How far the surface (and so a physics chunk's triangles) can lie past the voxels that make
/// it: a surface vertex sits in a cell between voxel centers, within one voxel of its voxels.
/// Queries grow their boxes by it before picking chunks; a terrain's bounds are its stored voxels
/// grown by it.
pub const SURFACE_SPILL: u32 = 1;

/// How far an edit changes collision data: a physics chunk's mesh reads one voxel of padding
/// around its box, and its edge flags the triangles one voxel further. The chunks whose box grown
/// by this holds a voxel an edit changed (or meets its dirty region, where the voxels before are
/// not at hand) are rebuilt.
pub const EDIT_REACH: u32 = 2;

/// How far from an edit a body's contacts may change: the collision data's reach plus the masks'
/// one-voxel dilation. Bodies this close to an edit are woken and have their contacts recomputed.
pub const CONTACT_REACH: u32 = EDIT_REACH + 1;
