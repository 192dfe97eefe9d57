//! Contact tracking: from a body's old and new boxes, which chunk contacts begin and which end.

use crate::BitBroadphase;
use voxterra_core::Aabb;
use voxterra_core::PhysicsChunkKey;

/// Solid or water: a body holds at most one of each per chunk.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub enum ContactKind {
    /// The body may touch solid geometry in the chunk: run the narrowphase.
    Solid,
    /// The body may be in water in the chunk: buoyancy.
    Water,
}

/// One body–chunk contact.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct Contact {
    /// The physics chunk.
    pub chunk: PhysicsChunkKey,
    /// Solid or water.
    pub kind: ContactKind,
}

impl Contact {
    fn order(&self) -> (i32, i32, i32, ContactKind) {
        (self.chunk.y, self.chunk.z, self.chunk.x, self.kind)
    }
}

/// A change in a body's contacts.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum ContactEvent {
    /// A contact that did not exist at the previous update.
    Added(Contact),
    /// A contact that no longer exists.
    Removed(Contact),
}

/// One body's current terrain contacts. Keep one per body; reusing it makes updates allocation-free
/// once its buffers have grown.
#[derive(Clone, Debug, Default)]
pub struct BodyContacts {
    current: Vec<Contact>,
    next: Vec<Contact>,
}

impl BodyContacts {
    /// An empty set (a new body).
    pub fn new() -> Self {
        Self::default()
    }

    /// The current contacts, sorted by chunk (y, z, x) then kind.
    pub fn contacts(&self) -> &[Contact] {
        &self.current
    }
}

impl BitBroadphase {
    /// Updates a body's contacts for a step that moved its box from `old` to `new`: the chunks the
    /// swept box (the union of both) touches become the contacts; `event` hears every contact added
    /// and removed, in contact order. An invalid (NaN or inverted) box is left out of the union; if
    /// both are invalid the body has no contacts.
    pub fn update_contacts(
        &self,
        body: &mut BodyContacts,
        old: &Aabb,
        new: &Aabb,
        mut event: impl FnMut(ContactEvent),
    ) {
        let swept = match (old.is_valid(), new.is_valid()) {
            (true, true) => Some(old.merged(new)),
            (false, true) => Some(*new),
            (true, false) => Some(*old),
            (false, false) => None,
        };
        body.next.clear();
        if let Some(b) = swept {
            self.query(&b, |chunk, t| {
                if t.solid {
                    body.next.push(Contact { chunk, kind: ContactKind::Solid });
                }
                if t.water {
                    body.next.push(Contact { chunk, kind: ContactKind::Water });
                }
            });
        }
        body.next.sort_unstable_by_key(Contact::order);
        // Merge the two sorted lists.
        let (old_c, new_c) = (&body.current, &body.next);
        let (mut i, mut j) = (0, 0);
        while i < old_c.len() || j < new_c.len() {
            match (old_c.get(i), new_c.get(j)) {
                (Some(a), Some(b)) if a.order() == b.order() => {
                    i += 1;
                    j += 1;
                }
                (Some(a), Some(b)) if a.order() < b.order() => {
                    event(ContactEvent::Removed(*a));
                    i += 1;
                }
                (Some(a), None) => {
                    event(ContactEvent::Removed(*a));
                    i += 1;
                }
                (_, Some(b)) => {
                    event(ContactEvent::Added(*b));
                    j += 1;
                }
                (None, None) => unreachable!("the loop runs while either list has items"),
            }
        }
        std::mem::swap(&mut body.current, &mut body.next);
    }
}
