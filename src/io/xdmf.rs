//! Output stage: `OUT/frames.xdmf`, the ParaView index of `frames.h5`. Rank 0
//! rewrites it after each frame (temp file + rename, so a reader never sees a
//! half-written index).
//!
//! Temporal collections, one grid per frame in each:
//! - `bodies`: Polyvertex over `bodies/position`; point data id, shape,
//!   radius, velocity, angular_velocity, orientation (4 components w,x,y,z),
//!   contact_force;
//! - `meshes` (when the scene has meshes): Triangle over
//!   `bodies/mesh_vertices` / `mesh_triangles`; point data body, velocity,
//!   contact_force (the body's, at each of its vertices);
//! - `contacts`: Polyline of one segment per contact over
//!   `contacts/line_points`; cell data every column of the frame's contact
//!   table but `point` (force_normal, force_tangent, gap, normal, body_a, ...);
//! - `walls`: Quadrilateral over `walls/vertices`, the walls acting at the
//!   frame's time; cell data `index` (the wall's index in the scene).
//!
//! Frames written before a dataset existed (a run continued from an older
//! file) leave it out of their grid.
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
    pub n_contacts: u64,
    /// The contact table's columns (cell data of the contacts grid).
    pub contact_columns: Vec<ColumnInfo>,
    /// `contacts/line_points` and `line_cells` exist.
    pub lines: bool,
    /// `bodies/contact_force` (and the mesh vertex data) exist.
    pub body_extras: bool,
    /// Number of walls drawn, if the frame has a `walls` group.
    pub n_walls: Option<u64>,
}

/// One dataset of a frame's contacts group as XDMF declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnInfo {
    pub name: String,
    pub width: usize,
    /// XDMF NumberType and Precision.
    pub num: &'static str,
    pub prec: u32,
}

impl ColumnInfo {
    pub fn of(c: &super::table::Column) -> Self {
        use super::table::ColumnData::*;
        let (num, prec) = match c.data {
            F64(_) => ("Float", 8),
            U64(_) => ("Int", 8),
            U32(_) => ("UInt", 4),
        };
        Self { name: c.name.clone(), width: c.width, num, prec }
    }
}

fn item(out: &mut String, dims: &str, num: &str, prec: u32, h5: &str, path: &str) {
    let _ = writeln!(
        out,
        "          <DataItem Dimensions=\"{dims}\" NumberType=\"{num}\" Precision=\"{prec}\" Format=\"HDF\">{h5}:{path}</DataItem>"
    );
}

#[allow(clippy::too_many_arguments)]
fn attribute(out: &mut String, name: &str, kind: &str, dims: &str, num: &str, prec: u32, h5: &str, path: &str) {
    attribute_at(out, "Node", name, kind, dims, num, prec, h5, path);
}

#[allow(clippy::too_many_arguments)]
fn attribute_at(out: &mut String, center: &str, name: &str, kind: &str, dims: &str, num: &str, prec: u32, h5: &str, path: &str) {
    let _ = writeln!(out, "        <Attribute Name=\"{name}\" AttributeType=\"{kind}\" Center=\"{center}\">");
    item(out, dims, num, prec, h5, path);
    let _ = writeln!(out, "        </Attribute>");
}

/// XDMF attribute type and dimensions of `n` rows of `width` values
/// (4 or more components: "Matrix", which ParaView reads as an n-component array).
fn shape_of(n: u64, width: usize) -> (&'static str, String) {
    match width {
        1 => ("Scalar", n.to_string()),
        3 => ("Vector", format!("{n} 3")),
        w => ("Matrix", format!("{n} {w}")),
    }
}

fn grid_open(out: &mut String, kind: &str, f: &FrameInfo) {
    let _ = writeln!(out, "      <Grid Name=\"{kind}{}\" GridType=\"Uniform\">", f.group.replace('/', "_"));
    let _ = writeln!(out, "        <Time Value=\"{:e}\"/>", f.time);
}

/// The XDMF index built up frame by frame: a frame's grids are formatted
/// once, when it is added, so rewriting the index after each frame copies
/// text instead of formatting every earlier frame again (a cost that grew
/// with the square of the frame count).
#[derive(Clone, Debug)]
pub struct XdmfIndex {
    /// The HDF5 file's name as the DataItems cite it (XML-escaped).
    h5: String,
    has_meshes: bool,
    /// The grids of each temporal collection, in frame order.
    bodies: String,
    meshes: String,
    contacts: String,
    walls: String,
}

impl XdmfIndex {
    /// An index of no frames for the HDF5 file `h5_name` (a path relative
    /// to the XDMF file); `has_meshes`: the scene has mesh shapes.
    pub fn new(h5_name: &str, has_meshes: bool) -> Self {
        Self { h5: xml_escape(h5_name), has_meshes, bodies: String::new(), meshes: String::new(), contacts: String::new(), walls: String::new() }
    }

    /// Whether the scene has mesh shapes (the frames hold their surfaces).
    pub fn has_meshes(&self) -> bool {
        self.has_meshes
    }

    /// Adds frame `f`'s grids to the collections.
    pub fn push(&mut self, f: &FrameInfo) {
        let h5 = &self.h5;
        let out = &mut self.bodies;
        let n = f.n_bodies;
        let b = format!("{}/bodies", f.group);
        grid_open(out, "bodies", f);
        let _ = writeln!(out, "        <Topology TopologyType=\"Polyvertex\" NumberOfElements=\"{n}\" NodesPerElement=\"1\"/>");
        let _ = writeln!(out, "        <Geometry GeometryType=\"XYZ\">");
        item(out, &format!("{n} 3"), "Float", 8, h5, &format!("{b}/position"));
        let _ = writeln!(out, "        </Geometry>");
        attribute(out, "id", "Scalar", &n.to_string(), "Int", 8, h5, &format!("{b}/id"));
        attribute(out, "radius", "Scalar", &n.to_string(), "Float", 8, h5, &format!("{b}/radius"));
        attribute(out, "velocity", "Vector", &format!("{n} 3"), "Float", 8, h5, &format!("{b}/velocity"));
        attribute(out, "angular_velocity", "Vector", &format!("{n} 3"), "Float", 8, h5, &format!("{b}/angular_velocity"));
        attribute(out, "orientation", "Matrix", &format!("{n} 4"), "Float", 8, h5, &format!("{b}/orientation"));
        attribute(out, "shape", "Scalar", &n.to_string(), "UInt", 4, h5, &format!("{b}/shape"));
        if f.body_extras {
            attribute(out, "contact_force", "Vector", &format!("{n} 3"), "Float", 8, h5, &format!("{b}/contact_force"));
        }
        let _ = writeln!(out, "      </Grid>");
        if self.has_meshes {
            let out = &mut self.meshes;
            let (nv, nt) = (f.n_mesh_vertices, f.n_mesh_triangles);
            grid_open(out, "meshes", f);
            let _ = writeln!(out, "        <Topology TopologyType=\"Triangle\" NumberOfElements=\"{nt}\">");
            item(out, &format!("{nt} 3"), "Int", 8, h5, &format!("{b}/mesh_triangles"));
            let _ = writeln!(out, "        </Topology>");
            let _ = writeln!(out, "        <Geometry GeometryType=\"XYZ\">");
            item(out, &format!("{nv} 3"), "Float", 8, h5, &format!("{b}/mesh_vertices"));
            let _ = writeln!(out, "        </Geometry>");
            attribute(out, "body", "Scalar", &nv.to_string(), "Int", 8, h5, &format!("{b}/mesh_body"));
            if f.body_extras {
                attribute(out, "velocity", "Vector", &format!("{nv} 3"), "Float", 8, h5, &format!("{b}/mesh_velocity"));
                let p = format!("{b}/mesh_contact_force");
                attribute(out, "contact_force", "Vector", &format!("{nv} 3"), "Float", 8, h5, &p);
            }
            let _ = writeln!(out, "      </Grid>");
        }
        if f.lines {
            let out = &mut self.contacts;
            let n = f.n_contacts;
            let c = format!("{}/contacts", f.group);
            grid_open(out, "contacts", f);
            let _ = writeln!(out, "        <Topology TopologyType=\"Polyline\" NumberOfElements=\"{n}\" NodesPerElement=\"2\">");
            item(out, &format!("{n} 2"), "Int", 8, h5, &format!("{c}/line_cells"));
            let _ = writeln!(out, "        </Topology>");
            let _ = writeln!(out, "        <Geometry GeometryType=\"XYZ\">");
            item(out, &format!("{} 3", 2 * n), "Float", 8, h5, &format!("{c}/line_points"));
            let _ = writeln!(out, "        </Geometry>");
            for col in f.contact_columns.iter().filter(|c| c.name != "point") {
                let (kind, dims) = shape_of(n, col.width);
                let path = format!("{c}/{}", col.name);
                attribute_at(out, "Cell", &xml_escape(&col.name), kind, &dims, col.num, col.prec, h5, &path);
            }
            let _ = writeln!(out, "      </Grid>");
        }
        if let Some(n) = f.n_walls {
            let out = &mut self.walls;
            let w = format!("{}/walls", f.group);
            grid_open(out, "walls", f);
            let _ = writeln!(out, "        <Topology TopologyType=\"Quadrilateral\" NumberOfElements=\"{n}\">");
            item(out, &format!("{n} 4"), "Int", 8, h5, &format!("{w}/quads"));
            let _ = writeln!(out, "        </Topology>");
            let _ = writeln!(out, "        <Geometry GeometryType=\"XYZ\">");
            item(out, &format!("{} 3", 4 * n), "Float", 8, h5, &format!("{w}/vertices"));
            let _ = writeln!(out, "        </Geometry>");
            attribute_at(out, "Cell", "index", "Scalar", &n.to_string(), "Int", 8, h5, &format!("{w}/index"));
            let _ = writeln!(out, "      </Grid>");
        }
    }

    /// The XDMF text (what [`Self::write`] writes).
    #[cfg(test)]
    fn text(&self) -> String {
        let mut out = Vec::new();
        self.write_to(&mut out).expect("writing to memory");
        String::from_utf8(out).expect("the index is UTF-8")
    }

    /// `bodies` always, `meshes` when the scene has meshes, `contacts` and
    /// `walls` once a frame has them.
    fn write_to(&self, out: &mut impl std::io::Write) -> std::io::Result<()> {
        out.write_all(b"<?xml version=\"1.0\" ?>\n<!DOCTYPE Xdmf SYSTEM \"Xdmf.dtd\" []>\n<Xdmf Version=\"3.0\">\n  <Domain>\n")?;
        for (name, grids, shown) in [
            ("bodies", &self.bodies, true),
            ("meshes", &self.meshes, self.has_meshes),
            ("contacts", &self.contacts, !self.contacts.is_empty()),
            ("walls", &self.walls, !self.walls.is_empty()),
        ] {
            if shown {
                writeln!(out, "    <Grid Name=\"{name}\" GridType=\"Collection\" CollectionType=\"Temporal\">")?;
                out.write_all(grids.as_bytes())?;
                out.write_all(b"    </Grid>\n")?;
            }
        }
        out.write_all(b"  </Domain>\n</Xdmf>\n")
    }

    /// Writes the index to `path` atomically (`path.tmp`, then rename).
    pub fn write(&self, path: &Path) -> Result<(), IoError> {
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = std::path::PathBuf::from(tmp);
        let written = std::fs::File::create(&tmp).and_then(|f| {
            let mut f = std::io::BufWriter::with_capacity(1 << 16, f);
            self.write_to(&mut f)?;
            f.into_inner().map_err(|e| e.into_error()).map(drop)
        });
        if let Err(e) = written {
            // A half-written index on a full disk only takes space from the run.
            let _ = std::fs::remove_file(&tmp);
            return Err(IoError::fs(&tmp, "write the XDMF index", e));
        }
        std::fs::rename(&tmp, path).map_err(|e| IoError::fs(path, "rename the XDMF index into place", e))
    }
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index of `frames` stored in the HDF5 file `h5_name`.
    fn xdmf_text(h5_name: &str, frames: &[FrameInfo], has_meshes: bool) -> String {
        let mut index = XdmfIndex::new(h5_name, has_meshes);
        frames.iter().for_each(|f| index.push(f));
        index.text()
    }

    #[test]
    fn one_grid_per_frame_and_balanced_tags() {
        let col = ColumnInfo { name: "force_normal".into(), width: 1, num: "Float", prec: 8 };
        let f = |s: u64| FrameInfo {
            group: format!("/frames/{s:09}"),
            time: s as f64 * 0.1,
            n_bodies: 3,
            n_mesh_vertices: 8,
            n_mesh_triangles: 12,
            n_contacts: 2,
            contact_columns: vec![col.clone()],
            lines: s > 0,
            body_extras: true,
            n_walls: Some(1),
        };
        let t = xdmf_text("frames.h5", &[f(0), f(5)], true);
        assert_eq!(t.matches("<Grid Name=\"bodies_frames_").count(), 2);
        assert_eq!(t.matches("<Grid Name=\"meshes_frames_").count(), 2);
        assert_eq!(t.matches("<Grid").count(), t.matches("</Grid>").count());
        assert!(t.contains("frames.h5:/frames/000000005/bodies/position"));
        // Frames without line datasets (an older file continued) stay out of `contacts`.
        assert_eq!(t.matches("<Grid Name=\"contacts_frames_").count(), 1);
        assert_eq!(t.matches("<Grid Name=\"walls_frames_").count(), 2);
        assert!(t.contains("Name=\"force_normal\" AttributeType=\"Scalar\" Center=\"Cell\""));
        let t = xdmf_text("frames.h5", &[f(0)], false);
        assert!(!t.contains("meshes"));
    }
}
