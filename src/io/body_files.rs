//! Bodies from text files (`[[generate]] kind = "file"`): CSV with a header
//! naming the columns, LAMMPS data files (`Atoms # sphere`) and LAMMPS /
//! LIGGGHTS `dump custom` snapshots of spheres. Every rank streams the whole
//! file (so every rank finds the same first error, with its line number)
//! but keeps only the rows `keep` selects: no rank holds all bodies.
use crate::scene::sources::FileFormat;
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// A malformed or unreadable body file: `path:line: message` (line 0: the
/// whole file).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}:{line}: {message}", path.display())]
pub struct FileError {
    pub path: PathBuf,
    pub line: u64,
    pub message: String,
}

/// One body as a file gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct FileBody {
    /// Line in the file (1-based), for errors.
    pub line: u64,
    /// Index among the file's bodies (0-based, file order).
    pub row: u64,
    /// The file's id of the body, if it has an id column.
    pub id: Option<u64>,
    pub position: Vector3<f64>,
    pub radius: Option<f64>,
    /// Index into the file's own shapes (frames.h5).
    pub shape: Option<u32>,
    pub velocity: Vector3<f64>,
    pub angular_velocity: Vector3<f64>,
    pub orientation: Option<UnitQuaternion<f64>>,
    pub fixed: bool,
}

/// What a pass over a text file found.
#[derive(Clone, Debug, Default)]
pub struct TextRead {
    /// The kept rows.
    pub bodies: Vec<FileBody>,
    /// Data rows in the file.
    pub count: u64,
    /// Smallest and largest id, when the file has an id column.
    pub id_range: Option<(u64, u64)>,
    pub has_radius: bool,
}

/// Columns a body file may name, and where each goes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Col {
    Id,
    Pos(usize),
    Radius,
    Diameter,
    Vel(usize),
    Omega(usize),
    Quat(usize),
    Fixed,
    Ignored,
}

fn csv_column(name: &str) -> Option<Col> {
    Some(match name {
        "id" => Col::Id,
        "x" => Col::Pos(0),
        "y" => Col::Pos(1),
        "z" => Col::Pos(2),
        "radius" => Col::Radius,
        "vx" => Col::Vel(0),
        "vy" => Col::Vel(1),
        "vz" => Col::Vel(2),
        "wx" => Col::Omega(0),
        "wy" => Col::Omega(1),
        "wz" => Col::Omega(2),
        "qw" => Col::Quat(0),
        "qx" => Col::Quat(1),
        "qy" => Col::Quat(2),
        "qz" => Col::Quat(3),
        "fixed" => Col::Fixed,
        _ => return None,
    })
}

fn dump_column(name: &str) -> Result<Col, String> {
    Ok(match name {
        "id" => Col::Id,
        "x" | "xu" => Col::Pos(0),
        "y" | "yu" => Col::Pos(1),
        "z" | "zu" => Col::Pos(2),
        "xs" | "ys" | "zs" | "xsu" | "ysu" | "zsu" => {
            return Err(format!("scaled coordinates (`{name}`) are not supported: dump x y z"))
        }
        "radius" => Col::Radius,
        "diameter" => Col::Diameter,
        "vx" => Col::Vel(0),
        "vy" => Col::Vel(1),
        "vz" => Col::Vel(2),
        "omegax" => Col::Omega(0),
        "omegay" => Col::Omega(1),
        "omegaz" => Col::Omega(2),
        "quatw" => Col::Quat(0),
        "quati" => Col::Quat(1),
        "quatj" => Col::Quat(2),
        "quatk" => Col::Quat(3),
        _ => Col::Ignored,
    })
}

/// Checks the columns: x, y, z present once each, no duplicates, a whole quaternion.
fn check_columns(cols: &[Col], names: &[&str]) -> Result<(), String> {
    for (i, c) in cols.iter().enumerate() {
        if *c != Col::Ignored && cols[..i].contains(c) {
            return Err(format!("column `{}` appears twice", names[i]));
        }
    }
    for (a, n) in ["x", "y", "z"].iter().enumerate() {
        if !cols.contains(&Col::Pos(a)) {
            return Err(format!("no `{n}` column"));
        }
    }
    if cols.contains(&Col::Radius) && cols.contains(&Col::Diameter) {
        return Err("give `radius` or `diameter`, not both".into());
    }
    let q = (0..4).filter(|&k| cols.contains(&Col::Quat(k))).count();
    if q != 0 && q != 4 {
        return Err("an orientation needs all four quaternion columns".into());
    }
    Ok(())
}

/// Parses one data row by the column map.
fn parse_row(fields: &[&str], cols: &[Col], line: u64) -> Result<FileBody, String> {
    if fields.len() != cols.len() {
        return Err(format!("{} values, the header names {} columns", fields.len(), cols.len()));
    }
    let mut b = FileBody {
        line,
        row: 0,
        id: None,
        position: Vector3::zeros(),
        radius: None,
        shape: None,
        velocity: Vector3::zeros(),
        angular_velocity: Vector3::zeros(),
        orientation: None,
        fixed: false,
    };
    let mut q = [0.0; 4];
    for (f, c) in fields.iter().zip(cols) {
        let num = || -> Result<f64, String> {
            let v: f64 = f.parse().map_err(|_| format!("`{f}` is not a number"))?;
            if v.is_finite() {
                Ok(v)
            } else {
                Err(format!("`{f}` is not a finite number"))
            }
        };
        match c {
            Col::Id => b.id = Some(f.parse().map_err(|_| format!("id `{f}` is not a non-negative integer"))?),
            Col::Pos(a) => b.position[*a] = num()?,
            Col::Radius | Col::Diameter => {
                let v = num()?;
                if v <= 0.0 {
                    return Err(format!("radius must be positive, got {f}"));
                }
                b.radius = Some(if *c == Col::Diameter { 0.5 * v } else { v });
            }
            Col::Vel(a) => b.velocity[*a] = num()?,
            Col::Omega(a) => b.angular_velocity[*a] = num()?,
            Col::Quat(k) => q[*k] = num()?,
            Col::Fixed => {
                b.fixed = match *f {
                    "1" | "true" => true,
                    "0" | "false" => false,
                    _ => return Err(format!("fixed must be 0, 1, true or false, got `{f}`")),
                }
            }
            Col::Ignored => {}
        }
    }
    if cols.contains(&Col::Quat(0)) {
        let q = Quaternion::new(q[0], q[1], q[2], q[3]);
        if q.norm() == 0.0 {
            return Err("the orientation quaternion is zero".into());
        }
        b.orientation = Some(UnitQuaternion::from_quaternion(q));
    }
    Ok(b)
}

/// Where the data rows of a text file are, as the header tells.
enum Layout {
    /// Rows after the header line, with these columns.
    Csv(Vec<Col>),
    /// Expecting the LAMMPS data header, then `Atoms`.
    DataHeader { atoms: Option<u64> },
    /// Inside the Atoms section: (declared count).
    DataAtoms { atoms: Option<u64> },
    /// After the Atoms section.
    DataDone { atoms: Option<u64> },
    /// LAMMPS dump: the item being read, the atom count.
    Dump { item: String, atoms: Option<u64>, cols: Option<Vec<Col>> },
}

/// Streams `path` (format `format`), keeping the data rows `keep(row)`
/// selects (row = 0-based index among data rows).
pub fn read_text(path: &Path, format: FileFormat, keep: impl Fn(u64) -> bool) -> Result<TextRead, FileError> {
    let err = |line: u64, message: String| FileError { path: path.to_path_buf(), line, message };
    let file = std::fs::File::open(path).map_err(|e| err(0, format!("cannot open: {e}")))?;
    let reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut out = TextRead::default();
    let mut layout = match format {
        FileFormat::Csv => None,
        FileFormat::LammpsData => Some(Layout::DataHeader { atoms: None }),
        FileFormat::LammpsDump => Some(Layout::Dump { item: String::new(), atoms: None, cols: None }),
        FileFormat::Frames => return Err(err(0, "not a text format".into())),
    };
    let mut line_no = 0u64;
    let mut snapshot_rows = 0u64;
    let push = |mut b: FileBody, out: &mut TextRead| {
        b.row = out.count;
        if let Some(id) = b.id {
            out.id_range = Some(out.id_range.map_or((id, id), |(a, z)| (a.min(id), z.max(id))));
        }
        if keep(out.count) {
            out.bodies.push(b);
        }
        out.count += 1;
    };
    for line in reader.lines() {
        line_no += 1;
        let line = line.map_err(|e| err(line_no, format!("cannot read: {e}")))?;
        let text = line.trim();
        match &mut layout {
            None => {
                // CSV header: the first line that is not blank or a comment.
                if text.is_empty() || text.starts_with('#') {
                    continue;
                }
                let names: Vec<&str> = text.split(',').map(|s| s.trim()).collect();
                let mut cols = Vec::new();
                for n in &names {
                    cols.push(csv_column(n).ok_or_else(|| {
                        err(line_no, format!("unknown column `{n}` (known: id, x, y, z, radius, vx, vy, vz, qw, qx, qy, qz, wx, wy, wz, fixed)"))
                    })?);
                }
                check_columns(&cols, &names).map_err(|m| err(line_no, m))?;
                out.has_radius = cols.contains(&Col::Radius);
                layout = Some(Layout::Csv(cols));
            }
            Some(Layout::Csv(cols)) => {
                if text.is_empty() || text.starts_with('#') {
                    continue;
                }
                let fields: Vec<&str> = text.split(',').map(|s| s.trim()).collect();
                let b = parse_row(&fields, cols, line_no).map_err(|m| err(line_no, m))?;
                push(b, &mut out);
            }
            Some(Layout::DataHeader { atoms }) => {
                let body = text.split('#').next().unwrap_or("").trim();
                if line_no == 1 || body.is_empty() {
                    continue; // the title line, blank lines
                }
                let w: Vec<&str> = body.split_whitespace().collect();
                if w.len() == 2 && w[1] == "atoms" {
                    *atoms = Some(w[0].parse().map_err(|_| err(line_no, format!("bad atom count `{}`", w[0])))?);
                } else if w[0] == "Atoms" {
                    let style = text.split('#').nth(1).map(|s| s.trim()).unwrap_or("");
                    if !style.is_empty() && style != "sphere" {
                        return Err(err(line_no, format!("atom style `{style}`: only `Atoms # sphere` is supported")));
                    }
                    layout = Some(Layout::DataAtoms { atoms: *atoms });
                } else if w[0].chars().next().is_some_and(|c| c.is_ascii_alphabetic()) && w.len() == 1 {
                    // Another section before Atoms (Masses, ...): its rows are skipped below.
                }
            }
            Some(Layout::DataAtoms { atoms }) => {
                let body = text.split('#').next().unwrap_or("").trim();
                if body.is_empty() {
                    continue;
                }
                if body.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
                    layout = Some(Layout::DataDone { atoms: *atoms });
                    continue;
                }
                let w: Vec<&str> = body.split_whitespace().collect();
                // id type diameter density x y z [ix iy iz]
                if w.len() != 7 && w.len() != 10 {
                    return Err(err(line_no, format!("{} values: an `Atoms # sphere` line is `id type diameter density x y z [ix iy iz]`", w.len())));
                }
                let cols = [Col::Id, Col::Ignored, Col::Diameter, Col::Ignored, Col::Pos(0), Col::Pos(1), Col::Pos(2)];
                let b = parse_row(&w[..7], &cols, line_no).map_err(|m| err(line_no, m))?;
                push(b, &mut out);
            }
            Some(Layout::DataDone { .. }) => {}
            Some(Layout::Dump { item, atoms, cols }) => {
                if let Some(rest) = text.strip_prefix("ITEM:") {
                    let rest = rest.trim();
                    if cols.is_some() {
                        return Err(err(line_no, "the dump holds more than one snapshot: cut out the one to start from".into()));
                    }
                    if let Some(names) = rest.strip_prefix("ATOMS") {
                        let names: Vec<&str> = names.split_whitespace().collect();
                        let mut c = Vec::new();
                        for n in &names {
                            c.push(dump_column(n).map_err(|m| err(line_no, m))?);
                        }
                        check_columns(&c, &names).map_err(|m| err(line_no, m))?;
                        out.has_radius = c.contains(&Col::Radius) || c.contains(&Col::Diameter);
                        if atoms.is_none() {
                            return Err(err(line_no, "ITEM: ATOMS before ITEM: NUMBER OF ATOMS".into()));
                        }
                        *cols = Some(c);
                    }
                    *item = rest.to_string();
                    continue;
                }
                if text.is_empty() {
                    continue;
                }
                if item.starts_with("NUMBER OF ATOMS") {
                    *atoms = Some(text.parse().map_err(|_| err(line_no, format!("bad atom count `{text}`")))?);
                } else if let Some(c) = cols {
                    let w: Vec<&str> = text.split_whitespace().collect();
                    let b = parse_row(&w, c, line_no).map_err(|m| err(line_no, m))?;
                    snapshot_rows += 1;
                    if Some(snapshot_rows) > *atoms {
                        return Err(err(line_no, format!("more atom lines than NUMBER OF ATOMS = {}", atoms.unwrap_or(0))));
                    }
                    push(b, &mut out);
                } else if item.is_empty() {
                    return Err(err(line_no, "a LAMMPS dump starts with `ITEM: TIMESTEP`".into()));
                }
            }
        }
    }
    let declared = match &layout {
        None | Some(Layout::Csv(_)) => {
            if layout.is_none() {
                return Err(err(line_no, "no header line naming the columns".into()));
            }
            None
        }
        Some(Layout::DataHeader { .. }) => return Err(err(line_no, "no `Atoms` section".into())),
        Some(Layout::DataAtoms { atoms }) | Some(Layout::DataDone { atoms }) => {
            if atoms.is_none() {
                return Err(err(line_no, "no `N atoms` line in the header".into()));
            }
            *atoms
        }
        Some(Layout::Dump { cols, atoms, .. }) => {
            if cols.is_none() {
                return Err(err(line_no, "no `ITEM: ATOMS` section".into()));
            }
            *atoms
        }
    };
    if let Some(n) = declared {
        if n != out.count {
            return Err(err(line_no, format!("{} atom lines, the header declares {n}", out.count)));
        }
    }
    if out.count == 0 {
        return Err(err(line_no, "no bodies in the file".into()));
    }
    if format == FileFormat::LammpsData {
        out.has_radius = true;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn csv_rows_are_kept_by_row_and_parsed_by_header() {
        let (_d, p) = write("b.csv", "# pack\nid, x, y, z, radius, vx, fixed\n3, 0, 0, 1, 0.5, 2, 0\n\n4, 1, 0, 1, 0.25, 0, true\n5,2,0,1,0.5,0,0\n");
        let r = read_text(&p, FileFormat::Csv, |row| row % 2 == 1).unwrap();
        assert_eq!(r.count, 3);
        assert_eq!(r.id_range, Some((3, 5)));
        assert!(r.has_radius);
        assert_eq!(r.bodies.len(), 1);
        let b = &r.bodies[0];
        assert_eq!((b.line, b.id, b.radius, b.fixed), (5, Some(4), Some(0.25), true));
        assert_eq!(b.position, Vector3::new(1.0, 0.0, 1.0));
    }

    #[test]
    fn malformed_files_name_the_line() {
        let cases = [
            ("a.csv", "x,y,z,radius\n0,0,0,1\n0,0,zero,1\n", FileFormat::Csv, 3, "`zero` is not a number"),
            ("b.csv", "x,y,radius\n0,0,1\n", FileFormat::Csv, 1, "no `z` column"),
            ("c.csv", "x,y,z,colour\n", FileFormat::Csv, 1, "unknown column `colour`"),
            ("d.csv", "x,y,z,radius\n0,0,0\n", FileFormat::Csv, 2, "3 values"),
            ("e.csv", "x,y,z,radius\n0,0,0,-1\n", FileFormat::Csv, 2, "radius must be positive"),
            ("f.dump", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS id type x y z radius\n1 1 0 0 0 0.1\n2 1 0 0\n", FileFormat::LammpsDump, 11, "4 values"),
            ("g.dump", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n1\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS id type x y z radius\n1 1 0 0 0 0.1\nITEM: TIMESTEP\n", FileFormat::LammpsDump, 11, "more than one snapshot"),
            ("h.dump", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n3\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS id type x y z radius\n1 1 0 0 0 0.1\n", FileFormat::LammpsDump, 10, "1 atom lines, the header declares 3"),
            ("i.data", "title\n\n2 atoms\n\nAtoms # atomic\n\n1 1 0 0 0\n", FileFormat::LammpsData, 5, "only `Atoms # sphere`"),
        ];
        for (name, text, format, line, what) in cases {
            let (_d, p) = write(name, text);
            let e = read_text(&p, format, |_| true).unwrap_err();
            assert_eq!(e.line, line, "{name}: {e}");
            assert!(e.to_string().contains(what) && e.to_string().contains(name), "{name}: {e}");
        }
    }

    #[test]
    fn lammps_dump_and_data_files() {
        let dump = "ITEM: TIMESTEP\n1000\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\n\
                    ITEM: ATOMS id type x y z vx vy vz fx diameter\n7 1 0.1 0.2 0.3 1 2 3 9 0.02\n8 1 0.5 0.5 0.5 0 0 0 9 0.04\n";
        let (_d, p) = write("s.dump", dump);
        let r = read_text(&p, FileFormat::LammpsDump, |_| true).unwrap();
        assert_eq!((r.count, r.id_range, r.has_radius), (2, Some((7, 8)), true));
        assert_eq!(r.bodies[0].velocity, Vector3::new(1.0, 2.0, 3.0));
        assert_eq!(r.bodies[1].radius, Some(0.02));
        let data = "LAMMPS data\n\n2 atoms\n1 atom types\n0 1 xlo xhi\n\nAtoms # sphere\n\n1 1 0.2 1000 0.1 0.1 0.1 0 0 0\n2 1 0.4 1000 0.5 0.5 0.5\n\nVelocities\n\n1 0 0 0 0 0 0\n2 0 0 0 0 0 0\n";
        let (_d2, p) = write("s.data", data);
        let r = read_text(&p, FileFormat::LammpsData, |_| true).unwrap();
        assert_eq!((r.count, r.id_range), (2, Some((1, 2))));
        assert_eq!(r.bodies[1].radius, Some(0.2));
        assert_eq!(r.bodies[1].position, Vector3::new(0.5, 0.5, 0.5));
    }
}
