//! Output stage: `OUT/frames.xdmf`, the ParaView index of `frames.h5`. Rank 0
//! rewrites it after each frame (temp file + rename, so a reader never sees a
//! half-written index).
//!
//! Two temporal collections: `bodies` (one Polyvertex grid per frame over
//! `bodies/position`, attributes id, radius, velocity, angular_velocity) and,
//! when the scene has meshes, `meshes` (one Triangle grid per frame over
//! `bodies/mesh_vertices` / `bodies/mesh_triangles`, attribute `body`).
//! 64-bit unsigned datasets are declared `NumberType="Int" Precision="8"`,
//! the integer type every XDMF reader handles (HDF5 converts on read).
use super::IoError;
use std::fmt::Write as _;
use std::path::Path;

/// What the index needs to know about one written frame.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameInfo {
    /// HDF5 path of the frame group, e.g. `/frames/000000010`.
    pub group: String,
    pub time: f64,
    pub n_bodies: u64,
    pub n_mesh_vertices: u64,
    pub n_mesh_triangles: u64,
}

fn item(out: &mut String, dims: &str, num: &str, prec: u32, h5: &str, path: &str) {
    let _ = writeln!(
        out,
        "          <DataItem Dimensions=\"{dims}\" NumberType=\"{num}\" Precision=\"{prec}\" Format=\"HDF\">{h5}:{path}</DataItem>"
    );
}

fn attribute(out: &mut String, name: &str, kind: &str, dims: &str, num: &str, prec: u32, h5: &str, path: &str) {
    let _ = writeln!(out, "        <Attribute Name=\"{name}\" AttributeType=\"{kind}\" Center=\"Node\">");
    item(out, dims, num, prec, h5, path);
    let _ = writeln!(out, "        </Attribute>");
}

/// The XDMF text for `frames` stored in the HDF5 file `h5_name` (a path
/// relative to the XDMF file).
pub fn xdmf_text(h5_name: &str, frames: &[FrameInfo], has_meshes: bool) -> String {
    let h5 = xml_escape(h5_name);
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n  <Domain>\n");
    out.push_str("    <Grid Name=\"bodies\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
    for f in frames {
        let n = f.n_bodies;
        let b = format!("{}/bodies", f.group);
        let _ = writeln!(out, "      <Grid Name=\"bodies{}\" GridType=\"Uniform\">", f.group.replace('/', "_"));
        let _ = writeln!(out, "        <Time Value=\"{:e}\"/>", f.time);
        let _ = writeln!(out, "        <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"{n}\" NodesPerElement=\"1\"/>");
        let _ = writeln!(out, "        <Geometry GeometryType=\"XYZ\">");
        item(&mut out, &format!("{n} 3"), "Float", 8, &h5, &format!("{b}/position"));
        let _ = writeln!(out, "        </Geometry>");
        attribute(&mut out, "id", "Scalar", &n.to_string(), "Int", 8, &h5, &format!("{b}/id"));
        attribute(&mut out, "radius", "Scalar", &n.to_string(), "Float", 8, &h5, &format!("{b}/radius"));
        attribute(&mut out, "velocity", "Vector", &format!("{n} 3"), "Float", 8, &h5, &format!("{b}/velocity"));
        attribute(&mut out, "angular_velocity", "Vector", &format!("{n} 3"), "Float", 8, &h5, &format!("{b}/angular_velocity"));
        let _ = writeln!(out, "      </Grid>");
    }
    out.push_str("    </Grid>\n");
    if has_meshes {
        out.push_str("    <Grid Name=\"meshes\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
        for f in frames {
            let (nv, nt) = (f.n_mesh_vertices, f.n_mesh_triangles);
            let b = format!("{}/bodies", f.group);
            let _ = writeln!(out, "      <Grid Name=\"meshes{}\" GridType=\"Uniform\">", f.group.replace('/', "_"));
            let _ = writeln!(out, "        <Time Value=\"{:e}\"/>", f.time);
            let _ = writeln!(out, "        <Topology TopologyType=\"Triangle\" NumberOfElements=\"{nt}\">");
            item(&mut out, &format!("{nt} 3"), "Int", 8, &h5, &format!("{b}/mesh_triangles"));
            let _ = writeln!(out, "        </Topology>");
            let _ = writeln!(out, "        <Geometry GeometryType=\"XYZ\">");
            item(&mut out, &format!("{nv} 3"), "Float", 8, &h5, &format!("{b}/mesh_vertices"));
            let _ = writeln!(out, "        </Geometry>");
            attribute(&mut out, "body", "Scalar", &nv.to_string(), "Int", 8, &h5, &format!("{b}/mesh_body"));
            let _ = writeln!(out, "      </Grid>");
        }
        out.push_str("    </Grid>\n");
    }
    out.push_str("  </Domain>\n</Xdmf>\n");
    out
}

/// Writes the index to `path` atomically (`path.tmp`, then rename).
pub fn write_xdmf(path: &Path, h5_name: &str, frames: &[FrameInfo], has_meshes: bool) -> Result<(), IoError> {
    let text = xdmf_text(h5_name, frames, has_meshes);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| IoError::fs(&tmp, "write the XDMF index", e))?;
    std::fs::rename(&tmp, path).map_err(|e| IoError::fs(path, "rename the XDMF index into place", e))
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_grid_per_frame_and_balanced_tags() {
        let f = |s: u64| FrameInfo { group: format!("/frames/{s:09}"), time: s as f64 * 0.1, n_bodies: 3, n_mesh_vertices: 8, n_mesh_triangles: 12 };
        let t = xdmf_text("frames.h5", &[f(0), f(5)], true);
        assert_eq!(t.matches("<Grid Name=\"bodies_frames_").count(), 2);
        assert_eq!(t.matches("<Grid Name=\"meshes_frames_").count(), 2);
        assert_eq!(t.matches("<Grid").count(), t.matches("</Grid>").count());
        assert!(t.contains("frames.h5:/frames/000000005/bodies/position"));
        let t = xdmf_text("frames.h5", &[f(0)], false);
        assert!(!t.contains("meshes"));
    }
}
