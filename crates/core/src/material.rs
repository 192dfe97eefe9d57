//! The material table: what each material id is (air, solid or liquid; smooth or sharp surface;
//! friction, restitution, color), and the default palette.

use crate::{CoreError, Material, Voxel};

/// What occupies space: nothing, something bodies collide with, or something they swim in.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum MaterialKind {
    /// Empty space; only material 0.
    Air,
    /// Collides: terrain proper.
    Solid,
    /// Water and the like: bodies float and swim in it.
    Liquid,
}

/// How the mesher shapes the surface around a voxel of this material.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum SurfaceShape {
    /// Rounded, interpolated from occupancy.
    Smooth,
    /// Flat faces and hard edges (bricks, cut stone, basalt columns).
    Sharp,
}

/// One row of the material table.
#[derive(Clone, PartialEq, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct MaterialInfo {
    /// Human name, unique in the table.
    pub name: String,
    /// Air, solid or liquid.
    pub kind: MaterialKind,
    /// Smooth or sharp surface.
    pub surface: SurfaceShape,
    /// Coulomb friction coefficient, finite and >= 0.
    pub friction: f32,
    /// Restitution in `[0, 1]`.
    pub restitution: f32,
    /// sRGB color for previews and exported meshes.
    pub color: [u8; 3],
    /// Mass per cubic world unit of a full voxel (kg/m³ when a world unit is a metre): what a
    /// piece of terrain cut loose weighs. Finite and >= 0; above 0 for solids. Tables written
    /// without it read as [`MaterialInfo::DEFAULT_DENSITY`].
    #[cfg_attr(feature = "serde", serde(default = "default_density"))]
    pub density: f32,
}

#[cfg(feature = "serde")]
fn default_density() -> f32 {
    MaterialInfo::DEFAULT_DENSITY
}

impl MaterialInfo {
    /// The density of an entry that names none: water's, 1000 kg/m³.
    pub const DEFAULT_DENSITY: f32 = 1000.0;

    fn new(
        name: &str,
        kind: MaterialKind,
        surface: SurfaceShape,
        (friction, restitution, density): (f32, f32, f32),
        color: [u8; 3],
    ) -> Self {
        MaterialInfo { name: name.to_owned(), kind, surface, friction, restitution, color, density }
    }
}

/// The ids of the default palette ([`MaterialTable::default`]).
pub mod materials {
    use crate::Material;
    /// Empty space.
    pub const AIR: Material = Material::from_low_bits(0);
    /// Grass: the top layer of plains and hills.
    pub const GRASS: Material = Material::from_low_bits(1);
    /// Dirt: under grass.
    pub const DIRT: Material = Material::from_low_bits(2);
    /// Rock: the bulk underground and steep slopes.
    pub const ROCK: Material = Material::from_low_bits(3);
    /// Sand: beaches and dunes.
    pub const SAND: Material = Material::from_low_bits(4);
    /// Snow: mountain tops.
    pub const SNOW: Material = Material::from_low_bits(5);
    /// Ice: frozen water, slippery.
    pub const ICE: Material = Material::from_low_bits(6);
    /// Water: the one default liquid.
    pub const WATER: Material = Material::from_low_bits(7);
    /// Mud: river and lake beds.
    pub const MUD: Material = Material::from_low_bits(8);
    /// Basalt: sharp dark rock at depth.
    pub const BASALT: Material = Material::from_low_bits(9);
    /// Sandstone: under sand, canyon walls.
    pub const SANDSTONE: Material = Material::from_low_bits(10);
    /// Gravel.
    pub const GRAVEL: Material = Material::from_low_bits(11);
    /// Slate: sharp layered rock.
    pub const SLATE: Material = Material::from_low_bits(12);
    /// Brick: a sharp building material.
    pub const BRICK: Material = Material::from_low_bits(13);
    /// Concrete: a sharp building material.
    pub const CONCRETE: Material = Material::from_low_bits(14);
}

/// The material table: up to 64 entries indexed by [`Material`] id, entry 0 is Air and only it.
///
/// Besides lookups it keeps 64-bit masks of solid and liquid ids so hot loops classify a voxel
/// with one shift and AND.
#[derive(Clone, PartialEq, Debug)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "Vec<MaterialInfo>", into = "Vec<MaterialInfo>"))]
pub struct MaterialTable {
    entries: Vec<MaterialInfo>,
    solid_mask: u64,
    liquid_mask: u64,
}

impl MaterialTable {
    /// A table from its entries, checked: 1..=64 entries, entry 0 and only it is Air, names unique
    /// and non-empty, friction finite and >= 0, restitution in `[0, 1]`, density finite and >= 0
    /// (above 0 for solids).
    pub fn new(entries: Vec<MaterialInfo>) -> Result<Self, CoreError> {
        let bad = |entry: usize, rule: &'static str| Err(CoreError::InvalidMaterialTable { entry, rule });
        if entries.is_empty() || entries.len() > Material::COUNT {
            return bad(entries.len(), "a table has 1..=64 entries");
        }
        let (mut solid_mask, mut liquid_mask) = (0u64, 0u64);
        for (id, e) in entries.iter().enumerate() {
            if (id == 0) != (e.kind == MaterialKind::Air) {
                return bad(id, "Air is entry 0 and only entry 0");
            }
            if e.name.is_empty() || entries[..id].iter().any(|o| o.name == e.name) {
                return bad(id, "names are non-empty and unique");
            }
            if !(e.friction.is_finite() && e.friction >= 0.0) {
                return bad(id, "friction is finite and >= 0");
            }
            if !(0.0..=1.0).contains(&e.restitution) {
                return bad(id, "restitution is in [0, 1]");
            }
            let solid = e.kind == MaterialKind::Solid;
            if !(e.density.is_finite() && e.density >= 0.0 && (e.density > 0.0 || !solid)) {
                return bad(id, "density is finite and >= 0, above 0 for solids");
            }
            match e.kind {
                MaterialKind::Solid => solid_mask |= 1 << id,
                MaterialKind::Liquid => liquid_mask |= 1 << id,
                MaterialKind::Air => {}
            }
        }
        Ok(MaterialTable { entries, solid_mask, liquid_mask })
    }

    /// The entry of `material`, or [`CoreError::UnknownMaterial`].
    pub fn get(&self, material: Material) -> Result<&MaterialInfo, CoreError> {
        self.entries
            .get(material.id() as usize)
            .ok_or(CoreError::UnknownMaterial { id: material.id(), table_len: self.entries.len() })
    }

    /// Checks that a voxel's material is in this table.
    pub fn check(&self, voxel: Voxel) -> Result<(), CoreError> {
        self.get(voxel.material()).map(|_| ())
    }

    /// The material named `name`, if any.
    pub fn by_name(&self, name: &str) -> Option<Material> {
        let id = self.entries.iter().position(|e| e.name == name)?;
        Some(Material::from_low_bits(id as u8))
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Never true: a valid table has at least Air.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// `(material, entry)` for every entry in id order.
    pub fn iter(&self) -> impl Iterator<Item = (Material, &MaterialInfo)> {
        self.entries.iter().enumerate().map(|(id, e)| (Material::from_low_bits(id as u8), e))
    }

    /// Bit `id` set for every solid material. Ids not in the table are clear.
    pub fn solid_mask(&self) -> u64 {
        self.solid_mask
    }

    /// Bit `id` set for every liquid material.
    pub fn liquid_mask(&self) -> u64 {
        self.liquid_mask
    }

    /// True when the voxel's material is solid in this table (false for unknown ids).
    #[inline]
    pub fn is_solid(&self, voxel: Voxel) -> bool {
        self.solid_mask >> voxel.material().id() & 1 != 0
    }

    /// True when the voxel's material is liquid in this table (false for unknown ids).
    #[inline]
    pub fn is_liquid(&self, voxel: Voxel) -> bool {
        self.liquid_mask >> voxel.material().id() & 1 != 0
    }
}

impl Default for MaterialTable {
    /// The default palette; ids as in [`materials`].
    fn default() -> Self {
        use MaterialKind::*;
        use SurfaceShape::*;
        let entries = vec![
            MaterialInfo::new("air", Air, Smooth, (0.0, 0.0, 0.0), [0, 0, 0]),
            MaterialInfo::new("grass", Solid, Smooth, (0.8, 0.1, 1300.0), [86, 140, 52]),
            MaterialInfo::new("dirt", Solid, Smooth, (0.7, 0.1, 1500.0), [120, 86, 58]),
            MaterialInfo::new("rock", Solid, Smooth, (0.75, 0.2, 2600.0), [118, 118, 112]),
            MaterialInfo::new("sand", Solid, Smooth, (0.6, 0.05, 1600.0), [214, 196, 140]),
            MaterialInfo::new("snow", Solid, Smooth, (0.35, 0.05, 400.0), [240, 244, 250]),
            MaterialInfo::new("ice", Solid, Smooth, (0.05, 0.1, 917.0), [170, 210, 235]),
            MaterialInfo::new("water", Liquid, Smooth, (0.0, 0.0, 1000.0), [40, 90, 160]),
            MaterialInfo::new("mud", Solid, Smooth, (0.9, 0.0, 1700.0), [92, 70, 50]),
            MaterialInfo::new("basalt", Solid, Sharp, (0.8, 0.2, 3000.0), [52, 50, 54]),
            MaterialInfo::new("sandstone", Solid, Smooth, (0.7, 0.15, 2300.0), [196, 150, 100]),
            MaterialInfo::new("gravel", Solid, Smooth, (0.65, 0.1, 1700.0), [140, 136, 128]),
            MaterialInfo::new("slate", Solid, Sharp, (0.7, 0.2, 2700.0), [74, 80, 90]),
            MaterialInfo::new("brick", Solid, Sharp, (0.8, 0.2, 1900.0), [160, 72, 56]),
            MaterialInfo::new("concrete", Solid, Sharp, (0.8, 0.2, 2400.0), [168, 168, 164]),
        ];
        MaterialTable::new(entries).expect("the default palette satisfies the table's rules")
    }
}

impl TryFrom<Vec<MaterialInfo>> for MaterialTable {
    type Error = CoreError;
    fn try_from(entries: Vec<MaterialInfo>) -> Result<Self, CoreError> {
        MaterialTable::new(entries)
    }
}

impl From<MaterialTable> for Vec<MaterialInfo> {
    fn from(t: MaterialTable) -> Self {
        t.entries
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_palette_is_consistent() {
        let t = MaterialTable::default();
        assert_eq!(t.by_name("water"), Some(materials::WATER));
        assert_eq!(t.get(materials::WATER).unwrap().kind, MaterialKind::Liquid);
        assert!(t.is_solid(Voxel::full(materials::ROCK)));
        assert!(!t.is_solid(Voxel::AIR));
        assert!(t.is_liquid(Voxel::full(materials::WATER)));
        assert_eq!(t.get(materials::BASALT).unwrap().surface, SurfaceShape::Sharp);
        assert!(matches!(
            t.get(Material::new(40).unwrap()),
            Err(CoreError::UnknownMaterial { id: 40, table_len: 15 })
        ));
    }

    #[test]
    fn rejects_broken_tables() {
        let mut e: Vec<MaterialInfo> = MaterialTable::default().into();
        let refused = |e: Vec<MaterialInfo>| match MaterialTable::new(e) {
            Err(CoreError::InvalidMaterialTable { entry, .. }) => entry,
            other => panic!("expected a refused table, got {other:?}"),
        };
        e[3].friction = f32::NAN;
        assert_eq!(refused(e.clone()), 3);
        e[3].friction = 0.5;
        e[3].density = 0.0;
        assert_eq!(refused(e.clone()), 3);
        e[3].density = 2600.0;
        e[4].kind = MaterialKind::Air;
        assert_eq!(refused(e.clone()), 4);
        e[4].kind = MaterialKind::Solid;
        e[5].name = "rock".into();
        assert_eq!(refused(e.clone()), 5);
        assert_eq!(refused(vec![]), 0);
        let many = (0..65)
            .map(|i| {
                MaterialInfo::new(
                    &format!("m{i}"),
                    if i == 0 { MaterialKind::Air } else { MaterialKind::Solid },
                    SurfaceShape::Smooth,
                    (0.5, 0.0, 1000.0),
                    [0; 3],
                )
            })
            .collect();
        assert_eq!(refused(many), 65);
    }

    #[cfg(feature = "serde")]
    #[test]
    fn serde_round_trip_validates() {
        let t = MaterialTable::default();
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<MaterialTable>(&json).unwrap(), t);
        let broken = json.replacen("\"solid\"", "\"air\"", 1);
        let err = serde_json::from_str::<MaterialTable>(&broken).unwrap_err();
        assert!(err.to_string().contains("invalid material table"), "{err}");
        // Tables written before densities existed read with the default one.
        let old = json.replace(",\"density\":2600.0", "");
        let read = serde_json::from_str::<MaterialTable>(&old).unwrap();
        assert_eq!(read.get(materials::ROCK).unwrap().density, MaterialInfo::DEFAULT_DENSITY);
    }
}
