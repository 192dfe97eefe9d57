//! Writes the seed corpus of the `apply_delta` fuzz target into `fuzz/corpus/apply_delta/`:
//! deltas of real edits on the fuzz target's terrain.
//! `cargo run -p voxterra --example delta_fuzz_seeds`

use voxterra::core::materials;
use voxterra::core::nalgebra::Point3;
use voxterra::{Brush, BrushOp, BrushShape};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/apply_delta");
    std::fs::create_dir_all(&dir)?;
    let mut t = voxterra::fuzz::delta_target();
    let from = t.sequence();
    let sphere = |x: f32, r: f32| BrushShape::Sphere { center: Point3::new(x, 4.0, 20.0), radius: r };
    t.apply_brush(&Brush { shape: sphere(20.0, 3.0), op: BrushOp::Subtract })?;
    t.apply_brush(&Brush { shape: sphere(30.0, 2.5), op: BrushOp::Add(materials::GRASS) })?;
    t.apply_brush(&Brush { shape: sphere(12.0, 2.0), op: BrushOp::Paint(materials::SNOW) })?;
    for (i, d) in t.edits_since(from).iter().enumerate() {
        std::fs::write(dir.join(format!("edit{i}")), d)?;
    }
    Ok(())
}
