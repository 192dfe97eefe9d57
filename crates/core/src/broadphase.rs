//! The broadphase between moving bodies: proxies (an AABB and user data) created, moved and
//! destroyed; overlapping pairs; AABB and ray queries. [`BruteForceBroadphase`] is the O(n²)
//! reference the dynamic AABB tree is tested against.

use crate::{Aabb, Ray};
use thiserror::Error;

/// What went wrong in a [`Broadphase`] call.
#[derive(Debug, Clone, PartialEq, Error)]
#[non_exhaustive]
pub enum ProxyError {
    /// A box with a NaN or infinite coordinate, or `mins > maxs` on some axis.
    #[error("invalid proxy box {mins:?}..{maxs:?}: NaN, infinite or inverted")]
    InvalidAabb {
        /// The given minimum corner.
        mins: [f32; 3],
        /// The given maximum corner.
        maxs: [f32; 3],
    },
    /// A finite box past the coordinates the implementor accepts (its documented limit).
    #[error("proxy box {mins:?}..{maxs:?} reaches beyond ±{limit:e}")]
    OutOfRange {
        /// The given minimum corner.
        mins: [f32; 3],
        /// The given maximum corner.
        maxs: [f32; 3],
        /// The largest absolute coordinate accepted.
        limit: f32,
    },
    /// A proxy id the broadphase does not hold.
    #[error("unknown proxy {0}")]
    UnknownProxy(u32),
    /// More live proxies than the implementor can address.
    #[error("at most {limit} proxies")]
    CapacityExceeded {
        /// The most live proxies allowed.
        limit: u64,
    },
    /// One item of a batch call failed; nothing of the batch was applied.
    #[error("item {index} of the batch: {source}")]
    InBatch {
        /// The item's index in the batch.
        index: usize,
        /// What was wrong with it.
        source: Box<ProxyError>,
    },
}

impl ProxyError {
    /// [`ProxyError::InvalidAabb`] for `aabb`.
    pub fn invalid(aabb: &Aabb) -> Self {
        ProxyError::InvalidAabb { mins: aabb.mins.into(), maxs: aabb.maxs.into() }
    }
}

/// A proxy's handle. Ids of destroyed proxies may be reused.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct ProxyId(pub u32);

/// One proxy's move, for [`Broadphase::move_proxies`].
#[derive(Clone, Copy, PartialEq, Debug)]
pub struct ProxyMove {
    /// The proxy.
    pub id: ProxyId,
    /// Its new box.
    pub aabb: Aabb,
    /// The motion hint, as for [`Broadphase::move_proxy`].
    pub displacement: nalgebra::Vector3<f32>,
}

/// A broadphase over moving AABBs.
///
/// Pair semantics shared by every implementor: [`Broadphase::update_pairs`] reports, once each and in
/// ascending `(low, high)` id order, every pair of proxies whose boxes overlap and of which at least
/// one was created or moved since the previous call.
///
/// That rule covers every proxy made through [`Broadphase::create_proxy`]. An implementor may also
/// offer, through its own API, proxies that opt out of pairs among themselves (the dynamic AABB
/// tree's *static* proxies, for level geometry that never needs to collide with itself): pairs of
/// two such proxies are never reported, pairs of one with any other proxy follow the rule.
pub trait Broadphase {
    /// Adds a proxy; [`ProxyError::InvalidAabb`] for NaN or inverted boxes.
    fn create_proxy(&mut self, aabb: Aabb, user_data: u64) -> Result<ProxyId, ProxyError>;

    /// Removes a proxy; [`ProxyError::UnknownProxy`] if it does not exist.
    fn destroy_proxy(&mut self, id: ProxyId) -> Result<(), ProxyError>;

    /// Moves a proxy to `aabb`; `displacement` is a hint for implementors that predict motion.
    fn move_proxy(
        &mut self,
        id: ProxyId,
        aabb: Aabb,
        displacement: nalgebra::Vector3<f32>,
    ) -> Result<(), ProxyError>;

    /// Moves many proxies, as [`Broadphase::move_proxy`] on each in order. On the first error the
    /// moves before it stay applied, and the rest are not. Implementors may settle their
    /// structures once for the whole batch (a simulation step moves most bodies at once).
    fn move_proxies(&mut self, moves: &[ProxyMove]) -> Result<(), ProxyError> {
        for m in moves {
            self.move_proxy(m.id, m.aabb, m.displacement)?;
        }
        Ok(())
    }

    /// The user data given at creation.
    fn user_data(&self, id: ProxyId) -> Option<u64>;

    /// Reports new-or-moved overlapping pairs (see the trait docs) and clears the moved set.
    fn update_pairs(&mut self, report: &mut dyn FnMut(ProxyId, ProxyId));

    /// Calls `visit` for every proxy whose box overlaps `aabb`; stop early by returning false.
    fn query_aabb(&self, aabb: &Aabb, visit: &mut dyn FnMut(ProxyId) -> bool);

    /// Casts a ray against the proxies' boxes for `t` in `[0, max_t]`. `visit(id, ray, max_t)` is
    /// called for boxes the ray enters before the current limit and returns the new limit: 0 stops,
    /// the same limit continues, a smaller one clips (closest-hit searches).
    fn cast_ray(&self, ray: &Ray, max_t: f32, visit: &mut dyn FnMut(ProxyId, &Ray, f32) -> f32);
}

#[derive(Clone, Debug)]
struct Proxy {
    aabb: Aabb,
    user_data: u64,
    moved: bool,
}

/// The brute-force broadphase: a list of proxies, every query a loop. The reference.
#[derive(Clone, Debug, Default)]
pub struct BruteForceBroadphase {
    proxies: Vec<Option<Proxy>>,
    free: Vec<u32>,
}

impl BruteForceBroadphase {
    /// An empty broadphase.
    pub fn new() -> Self {
        Self::default()
    }

    fn get_mut(&mut self, id: ProxyId) -> Result<&mut Proxy, ProxyError> {
        self.proxies.get_mut(id.0 as usize).and_then(Option::as_mut).ok_or(ProxyError::UnknownProxy(id.0))
    }

    fn live(&self) -> impl Iterator<Item = (ProxyId, &Proxy)> {
        self.proxies.iter().enumerate().filter_map(|(i, p)| p.as_ref().map(|p| (ProxyId(i as u32), p)))
    }
}

fn checked(aabb: Aabb) -> Result<Aabb, ProxyError> {
    if aabb.is_valid() { Ok(aabb) } else { Err(ProxyError::invalid(&aabb)) }
}

impl Broadphase for BruteForceBroadphase {
    fn create_proxy(&mut self, aabb: Aabb, user_data: u64) -> Result<ProxyId, ProxyError> {
        let proxy = Proxy { aabb: checked(aabb)?, user_data, moved: true };
        Ok(match self.free.pop() {
            Some(i) => {
                self.proxies[i as usize] = Some(proxy);
                ProxyId(i)
            }
            None => {
                self.proxies.push(Some(proxy));
                ProxyId(self.proxies.len() as u32 - 1)
            }
        })
    }

    fn destroy_proxy(&mut self, id: ProxyId) -> Result<(), ProxyError> {
        self.get_mut(id)?;
        self.proxies[id.0 as usize] = None;
        self.free.push(id.0);
        Ok(())
    }

    fn move_proxy(
        &mut self,
        id: ProxyId,
        aabb: Aabb,
        _displacement: nalgebra::Vector3<f32>,
    ) -> Result<(), ProxyError> {
        let aabb = checked(aabb)?;
        let p = self.get_mut(id)?;
        p.aabb = aabb;
        p.moved = true;
        Ok(())
    }

    fn user_data(&self, id: ProxyId) -> Option<u64> {
        self.proxies.get(id.0 as usize)?.as_ref().map(|p| p.user_data)
    }

    fn update_pairs(&mut self, report: &mut dyn FnMut(ProxyId, ProxyId)) {
        let live: Vec<_> = self.live().map(|(id, p)| (id, p.aabb, p.moved)).collect();
        for (i, &(a, ba, ma)) in live.iter().enumerate() {
            for &(b, bb, mb) in &live[i + 1..] {
                if (ma || mb) && ba.intersects(&bb) {
                    report(a, b);
                }
            }
        }
        self.proxies.iter_mut().flatten().for_each(|p| p.moved = false);
    }

    fn query_aabb(&self, aabb: &Aabb, visit: &mut dyn FnMut(ProxyId) -> bool) {
        for (id, p) in self.live() {
            if p.aabb.intersects(aabb) && !visit(id) {
                return;
            }
        }
    }

    fn cast_ray(&self, ray: &Ray, max_t: f32, visit: &mut dyn FnMut(ProxyId, &Ray, f32) -> f32) {
        let mut limit = max_t;
        for (id, p) in self.live() {
            if p.aabb.clip_ray(ray, limit).is_some() {
                limit = visit(id, ray, limit);
                if limit <= 0.0 {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Point3, Vector3};

    fn cube(x: f32) -> Aabb {
        Aabb::new(Point3::new(x, 0.0, 0.0), Point3::new(x + 1.0, 1.0, 1.0))
    }

    #[test]
    fn batched_moves_stop_at_the_first_bad_one() {
        let mut bp = BruteForceBroadphase::new();
        let a = bp.create_proxy(cube(0.0), 1).unwrap();
        let b = bp.create_proxy(cube(5.0), 2).unwrap();
        let mv = |id, aabb| ProxyMove { id, aabb, displacement: Vector3::zeros() };
        let nan = Aabb::new(Point3::new(f32::NAN, 0.0, 0.0), Point3::origin());
        let got = bp.move_proxies(&[mv(a, cube(9.0)), mv(b, nan), mv(a, cube(3.0))]);
        assert!(matches!(got, Err(ProxyError::InvalidAabb { .. })), "{got:?}");
        // The first move stands, the third was never made.
        let mut found = vec![];
        bp.query_aabb(&cube(9.0), &mut |id| {
            found.push(id);
            true
        });
        assert_eq!(found, vec![a]);
        bp.move_proxies(&[mv(b, cube(9.5))]).unwrap();
        let mut pairs = vec![];
        bp.update_pairs(&mut |x, y| pairs.push((x, y)));
        assert_eq!(pairs, vec![(a, b)]);
    }

    #[test]
    fn pairs_are_reported_once_for_movers() {
        let mut bp = BruteForceBroadphase::new();
        let a = bp.create_proxy(cube(0.0), 7).unwrap();
        let b = bp.create_proxy(cube(0.5), 8).unwrap();
        let c = bp.create_proxy(cube(5.0), 9).unwrap();
        let mut pairs = vec![];
        bp.update_pairs(&mut |x, y| pairs.push((x, y)));
        assert_eq!(pairs, vec![(a, b)]);
        pairs.clear();
        bp.update_pairs(&mut |x, y| pairs.push((x, y)));
        assert!(pairs.is_empty());
        bp.move_proxy(c, cube(0.9), Vector3::zeros()).unwrap();
        bp.update_pairs(&mut |x, y| pairs.push((x, y)));
        assert_eq!(pairs, vec![(a, c), (b, c)]);
        assert!(matches!(
            bp.create_proxy(Aabb::new(Point3::new(f32::NAN, 0.0, 0.0), Point3::origin()), 0),
            Err(ProxyError::InvalidAabb { .. })
        ));
        bp.destroy_proxy(b).unwrap();
        assert_eq!(bp.destroy_proxy(b), Err(ProxyError::UnknownProxy(b.0)));
        assert_eq!(bp.user_data(c), Some(9));
        let mut hits = vec![];
        bp.cast_ray(&Ray::new(Point3::new(-1.0, 0.5, 0.5), Vector3::x()), 100.0, &mut |id, _, l| {
            hits.push(id);
            l
        });
        assert_eq!(hits, vec![a, c]);
    }
}
