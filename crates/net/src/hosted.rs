//! [`Hosted`]: the world a server owns, in memory or in a chunk database, and the validation of
//! the edit requests made to it.

use crate::protocol::EditRefused;
use voxterra::chunk_db::ChunkDb;
use voxterra::core::{Aabb, Region};
use voxterra::{Brush, BrushShape, DurableError, DurableTerrain, EditError, Terrain};

/// The world a server owns: in memory, or kept in a chunk database where every edit is committed
/// before its reply goes out.
pub enum Hosted {
    /// Held in memory only (save it from [`ServerHandle::shutdown`](crate::ServerHandle::shutdown)).
    Memory(Terrain),
    /// Kept in a chunk database: edits are committed deferred as they come and made durable in one
    /// commit at the next tick, before their replies and their replication go out.
    Durable(DurableTerrain<Box<dyn ChunkDb>>),
}

impl From<Terrain> for Hosted {
    fn from(t: Terrain) -> Self {
        Hosted::Memory(t)
    }
}

impl From<DurableTerrain<Box<dyn ChunkDb>>> for Hosted {
    fn from(mut t: DurableTerrain<Box<dyn ChunkDb>>) -> Self {
        t.set_durability(voxterra::chunk_db::Durability::Deferred);
        Hosted::Durable(t)
    }
}

impl Hosted {
    pub(crate) fn terrain(&self) -> &Terrain {
        match self {
            Hosted::Memory(t) => t,
            Hosted::Durable(d) => d.terrain(),
        }
    }

    /// Applies `brush`; the voxels it changed (cut-loose pieces included), if any.
    pub(crate) fn apply_brush(&mut self, brush: &Brush) -> Result<Option<Region>, EditRefused> {
        let refused = |e: &EditError| match e {
            EditError::InvalidBrush(_) | EditError::BadMaterial(_) => EditRefused::Invalid,
            _ => EditRefused::Terrain,
        };
        match self {
            Hosted::Memory(t) => t.apply_brush(brush).map(|r| r.dirty).map_err(|e| refused(&e)),
            Hosted::Durable(d) => d.apply_brush(brush).map(|r| r.dirty).map_err(|e| match e {
                DurableError::Edit(e) => refused(&e),
                other => {
                    log::error!("an edit was not committed: {other}");
                    EditRefused::Terrain
                }
            }),
        }
    }

    pub(crate) fn is_durable(&self) -> bool {
        matches!(self, Hosted::Durable(_))
    }

    /// Commits what is pending at once and on disk; whether it went through.
    pub(crate) fn flush(&mut self) -> bool {
        match self {
            Hosted::Memory(_) => true,
            Hosted::Durable(d) => d.flush().map_err(|e| log::error!("a group commit failed: {e}")).is_ok(),
        }
    }

    pub(crate) fn into_terrain(self) -> Terrain {
        match self {
            Hosted::Memory(t) => t,
            Hosted::Durable(mut d) => {
                if let Err(e) = d.flush() {
                    log::error!("the last commit failed: {e}");
                }
                d.into_parts().0
            }
        }
    }
}

/// Validates and applies one edit request: the terrain's sequence after it, and the voxels it
/// changed.
pub(crate) fn edit(
    host: &mut Hosted,
    world: Option<&Aabb>,
    max: f32,
    brush: &Brush,
) -> Result<(u64, Option<Region>), EditRefused> {
    let (lo, hi, size) = match brush.shape {
        BrushShape::Sphere { center, radius } => {
            (center.map(|c| c - radius), center.map(|c| c + radius), radius)
        }
        BrushShape::Box { min, max } => (min, max, ((max - min) / 2.0).amax()),
        BrushShape::Capsule { a, b, radius } => {
            (a.inf(&b).map(|c| c - radius), a.sup(&b).map(|c| c + radius), radius + (b - a).norm() / 2.0)
        }
    };
    if !(lo.iter().chain(hi.iter()).all(|c| c.is_finite()) && size.is_finite()) {
        return Err(EditRefused::Invalid);
    }
    if size > max {
        return Err(EditRefused::TooLarge);
    }
    if !world.is_some_and(|w| w.contains(&Aabb::new(lo, hi))) {
        return Err(EditRefused::OutsideWorld);
    }
    let dirty = host.apply_brush(brush)?;
    Ok((host.terrain().sequence(), dirty))
}
