//! Mesh files any viewer opens: Wavefront OBJ (text, vertex colors as the common `v x y z r g b`
//! extension) and binary little-endian PLY (positions, normals, RGB colors, triangle lists).

use std::io::{self, Write};
use voxterra::core::MaterialTable;
use voxterra::mesher::RenderMesh;

/// The output format.
#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub(crate) enum Format {
    /// Wavefront OBJ, text.
    Obj,
    /// Stanford PLY, binary little-endian.
    Ply,
}

impl Format {
    /// From a file extension, if it names a format.
    pub(crate) fn from_extension(path: &std::path::Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "obj" => Some(Format::Obj),
            "ply" => Some(Format::Ply),
            _ => None,
        }
    }
}

fn color(table: &MaterialTable, mesh: &RenderMesh, v: usize) -> [u8; 3] {
    table.get(mesh.materials[v]).map_or([255, 0, 255], |m| m.color)
}

/// Writes the meshes as one OBJ: vertices numbered across meshes, 1-based.
pub(crate) fn write_obj(
    out: &mut impl Write,
    meshes: &[RenderMesh],
    table: &MaterialTable,
) -> io::Result<()> {
    writeln!(out, "# voxterra terrain mesh: positions in voxel units, Y up, vertex colors by material")?;
    for mesh in meshes {
        for (v, (p, n)) in mesh.positions.iter().zip(&mesh.normals).enumerate() {
            let [r, g, b] = color(table, mesh, v).map(|c| c as f32 / 255.0);
            writeln!(out, "v {} {} {} {r:.3} {g:.3} {b:.3}", p.x, p.y, p.z)?;
            writeln!(out, "vn {:.4} {:.4} {:.4}", n.x, n.y, n.z)?;
        }
    }
    let mut base = 1u64;
    for mesh in meshes {
        for t in &mesh.indices {
            let [a, b, c] = t.map(|i| base + i as u64);
            writeln!(out, "f {a}//{a} {b}//{b} {c}//{c}")?;
        }
        base += mesh.positions.len() as u64;
    }
    Ok(())
}

/// Writes the meshes as one binary PLY. Fails if the vertex total passes u32 (PLY's int indices).
pub(crate) fn write_ply(
    out: &mut impl Write,
    meshes: &[RenderMesh],
    table: &MaterialTable,
) -> io::Result<()> {
    let vertices: usize = meshes.iter().map(|m| m.positions.len()).sum();
    let faces: usize = meshes.iter().map(|m| m.indices.len()).sum();
    if u32::try_from(vertices).is_err() {
        return Err(io::Error::other(format!("{vertices} vertices: more than PLY's 32-bit indices address")));
    }
    write!(
        out,
        "ply\nformat binary_little_endian 1.0\ncomment voxterra terrain mesh, voxel units, Y up\n\
         element vertex {vertices}\nproperty float x\nproperty float y\nproperty float z\n\
         property float nx\nproperty float ny\nproperty float nz\n\
         property uchar red\nproperty uchar green\nproperty uchar blue\n\
         element face {faces}\nproperty list uchar uint vertex_indices\nend_header\n"
    )?;
    let mut buf = Vec::with_capacity(27);
    for mesh in meshes {
        for (v, (p, n)) in mesh.positions.iter().zip(&mesh.normals).enumerate() {
            buf.clear();
            for f in [p.x, p.y, p.z, n.x, n.y, n.z] {
                buf.extend_from_slice(&f.to_le_bytes());
            }
            buf.extend_from_slice(&color(table, mesh, v));
            out.write_all(&buf)?;
        }
    }
    let mut base = 0u32;
    for mesh in meshes {
        for t in &mesh.indices {
            buf.clear();
            buf.push(3);
            for i in t {
                buf.extend_from_slice(&(base + i).to_le_bytes());
            }
            out.write_all(&buf)?;
        }
        // In range: the total was checked above.
        base += mesh.positions.len() as u32;
    }
    Ok(())
}
