//! The voxel: a material and an occupancy byte, two bytes in all.

use crate::CoreError;

/// A material id, 0..=63 (6 bits, so the codec's lead byte can hold it). 0 is Air.
///
/// What a material *is* (solid, liquid, smooth or sharp, friction…) lives in a
/// [`MaterialTable`](crate::MaterialTable); the id itself is only an index.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "u8", into = "u8"))]
#[repr(transparent)]
pub struct Material(u8);

impl Material {
    /// Air: the explicit empty material. Its occupancy is always 0.
    pub const AIR: Material = Material(0);
    /// How many material ids exist (0..=63).
    pub const COUNT: usize = 64;

    /// The material with this id, or [`CoreError::MaterialOutOfRange`] for ids above 63.
    pub const fn new(id: u8) -> Result<Self, CoreError> {
        if (id as usize) < Self::COUNT { Ok(Material(id)) } else { Err(CoreError::MaterialOutOfRange(id)) }
    }

    /// The material whose id is the low 6 bits of `bits` (the codec's lead-byte layout).
    pub const fn from_low_bits(bits: u8) -> Self {
        Material(bits & 0x3f)
    }

    /// The id, 0..=63.
    pub const fn id(self) -> u8 {
        self.0
    }

    /// True for Air.
    pub const fn is_air(self) -> bool {
        self.0 == 0
    }
}

impl TryFrom<u8> for Material {
    type Error = CoreError;
    fn try_from(id: u8) -> Result<Self, CoreError> {
        Material::new(id)
    }
}

impl From<Material> for u8 {
    fn from(m: Material) -> u8 {
        m.0
    }
}

/// One voxel: a material and a quantized occupancy, 2 bytes.
///
/// Occupancy byte `v` means `(v + 1) / 256` for non-air materials (exact in f32) and 0 for Air.
/// The invariant "Air has occupancy byte 0" holds for every `Voxel` value: every constructor
/// normalizes (branch-free) or rejects, and the fields are private.
///
/// ```
/// use voxterra_core::{Material, Voxel};
/// let rock = Material::new(3).unwrap();
/// assert_eq!(Voxel::new(rock, 127).occupancy(), 0.5);
/// assert_eq!(Voxel::new(Material::AIR, 200), Voxel::AIR); // normalized
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "(u8, u8)", into = "(u8, u8)"))]
#[repr(C)]
pub struct Voxel {
    material: Material,
    occupancy: u8,
}

// PERF: every store, codec and mesher buffer is an array of these; two bytes is the format.
const _: () = assert!(std::mem::size_of::<Voxel>() == 2 && std::mem::align_of::<Voxel>() == 1);

impl Voxel {
    /// Empty space.
    pub const AIR: Voxel = Voxel { material: Material::AIR, occupancy: 0 };

    /// A voxel of `material` with occupancy byte `occupancy`; Air's occupancy is forced to 0.
    #[inline]
    pub const fn new(material: Material, occupancy: u8) -> Self {
        // Branch-free normalization: the mask is 0x00 for Air and 0xff otherwise.
        let mask = ((material.0 != 0) as u8).wrapping_neg();
        Voxel { material, occupancy: occupancy & mask }
    }

    /// A voxel of `material` at its default occupancy: full (byte 255) for non-air, 0 for Air.
    #[inline]
    pub const fn full(material: Material) -> Self {
        Voxel::new(material, 255)
    }

    /// A voxel from an occupancy in `0..=1`. Documented clamp: values above 1 become full; values at
    /// or below 0, and NaN, give [`Voxel::AIR`] (nothing left of the material). Otherwise the byte is
    /// the nearest representable `(v + 1) / 256`, at least 1/256.
    pub fn with_occupancy(material: Material, occupancy: f32) -> Self {
        if occupancy.is_nan() || occupancy <= 0.0 {
            return Voxel::AIR;
        }
        let byte = (occupancy * 256.0).round().clamp(1.0, 256.0) as u16 - 1;
        Voxel::new(material, byte as u8)
    }

    /// A voxel from raw bytes, rejecting what the format never stores: material ids above 63 and
    /// Air with a non-zero occupancy byte.
    pub const fn from_raw(material: u8, occupancy: u8) -> Result<Self, CoreError> {
        if material as usize >= Material::COUNT {
            return Err(CoreError::MaterialOutOfRange(material));
        }
        if material == 0 && occupancy != 0 {
            return Err(CoreError::AirWithOccupancy(occupancy));
        }
        Ok(Voxel { material: Material(material), occupancy })
    }

    /// The material.
    #[inline]
    pub const fn material(self) -> Material {
        self.material
    }

    /// The raw occupancy byte (0 for Air).
    #[inline]
    pub const fn occupancy_byte(self) -> u8 {
        self.occupancy
    }

    /// Occupancy in `[0, 1]`: `(byte + 1) / 256` for non-air, exactly 0 for Air.
    #[inline]
    pub fn occupancy(self) -> f32 {
        let non_air = (self.material.0 != 0) as u32;
        ((self.occupancy as u32 + 1) * non_air) as f32 * (1.0 / 256.0)
    }

    /// True for Air.
    #[inline]
    pub const fn is_air(self) -> bool {
        self.material.0 == 0
    }

    /// True when the occupancy is the material's default (full for non-air, 0 for Air): the voxels a
    /// packed row, or a codec run without an occupancy byte, can stand for.
    #[inline]
    pub const fn has_default_occupancy(self) -> bool {
        self.occupancy == ((self.material.0 != 0) as u8).wrapping_neg()
    }

    /// The two bytes as one `u16`: material in the low byte, occupancy in the high byte.
    #[inline]
    pub const fn to_bits(self) -> u16 {
        self.material.0 as u16 | (self.occupancy as u16) << 8
    }

    /// The inverse of [`Voxel::to_bits`], validating like [`Voxel::from_raw`].
    pub const fn from_bits(bits: u16) -> Result<Self, CoreError> {
        Voxel::from_raw(bits as u8, (bits >> 8) as u8)
    }
}

impl TryFrom<(u8, u8)> for Voxel {
    type Error = CoreError;
    fn try_from((m, o): (u8, u8)) -> Result<Self, CoreError> {
        Voxel::from_raw(m, o)
    }
}

impl From<Voxel> for (u8, u8) {
    fn from(v: Voxel) -> (u8, u8) {
        (v.material.0, v.occupancy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn air_never_keeps_occupancy(m in 0u8..64, o: u8) {
            let v = Voxel::new(Material::new(m).unwrap(), o);
            prop_assert!(!v.is_air() || v.occupancy_byte() == 0);
            prop_assert_eq!(v.is_air(), v.occupancy() == 0.0);
        }

        #[test]
        fn raw_round_trip(m: u8, o: u8) {
            match Voxel::from_raw(m, o) {
                Ok(v) => {
                    prop_assert_eq!(Voxel::from_bits(v.to_bits()), Ok(v));
                    prop_assert_eq!((v.material().id(), v.occupancy_byte()), (m, o));
                }
                Err(CoreError::MaterialOutOfRange(id)) => prop_assert!(id >= 64 && id == m),
                Err(CoreError::AirWithOccupancy(b)) => prop_assert!(m == 0 && b == o && o != 0),
                Err(e) => prop_assert!(false, "unexpected {e}"),
            }
        }

        #[test]
        fn occupancy_quantization_is_nearest(m in 1u8..64, f in 0.0f32..1.5) {
            let v = Voxel::with_occupancy(Material::new(m).unwrap(), f);
            if f <= 0.0 { prop_assert_eq!(v, Voxel::AIR); } else {
                let target = f.clamp(1.0 / 256.0, 1.0);
                prop_assert!((v.occupancy() - target).abs() <= 0.5 / 256.0 + 1e-6);
            }
        }
    }

    #[test]
    fn occupancy_is_exact() {
        let rock = Material::new(3).unwrap();
        assert_eq!(Voxel::new(rock, 255).occupancy(), 1.0);
        assert_eq!(Voxel::new(rock, 0).occupancy(), 1.0 / 256.0);
        assert!(Voxel::full(rock).has_default_occupancy());
        assert!(Voxel::AIR.has_default_occupancy());
        assert!(!Voxel::new(rock, 10).has_default_occupancy());
        assert_eq!(Voxel::full(Material::AIR), Voxel::AIR);
        assert_eq!(Voxel::with_occupancy(rock, f32::NAN), Voxel::AIR);
        assert_eq!(Material::new(64), Err(CoreError::MaterialOutOfRange(64)));
    }
}
