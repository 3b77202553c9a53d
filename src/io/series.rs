//! The run's time series in frames.h5: `/series`, a row per frame written
//! with it (energies, contacts, each wall's reaction and point), chunked and
//! grown a row at a time, cut back to the checkpoint at a restart.
use super::frame_view::WALL_ID_BASE;
use super::frames::{put_unit, str_attr, unit_of, Steps};
use super::h5raw::write_rows_collective;
use super::IoError;

/// One row of the run's time series: `/series` in frames.h5 (a row per
/// frame) and series.csv (a row per thermo line).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeriesRow {
    pub step: u64,
    /// s
    pub time: f64,
    /// The step's Δt, s.
    pub dt: f64,
    /// J
    pub kinetic_energy: f64,
    pub contacts: u64,
    /// Per wall of the scene, in `[[wall]]` order: the contact force the
    /// bodies exert on it (its reaction, as in summary.json), N.
    pub wall_force: Vec<[f64; 3]>,
    /// Per wall: its point at `time` (moving walls move), m.
    pub wall_position: Vec<[f64; 3]>,
    /// The lab measurements, [`MEASURE_COLUMNS`] one after the other
    /// (empty: zeros are written).
    pub measures: Vec<f64>,
}

/// The lab measurements of a series row (`crate::lab::Measures`), in this
/// order: name and values per row (a 3 × 3 tensor row by row).
pub const MEASURE_COLUMNS: [(&str, usize); 12] = [
    ("box_lo", 3),
    ("box_hi", 3),
    ("volume", 1),
    ("solid_fraction", 1),
    ("coordination", 1),
    ("coordination_backbone", 1),
    ("rattler_fraction", 1),
    ("pressure", 1),
    ("stress_ratio", 1),
    ("inertial_number", 1),
    ("stress", 9),
    ("fabric", 9),
];

/// Rows per chunk of the `/series` datasets.
pub(super) const SERIES_CHUNK: usize = 64;

/// The growing datasets of `/series`: name, and values per row for `w` walls.
pub(super) fn series_columns(w: usize) -> Vec<(&'static str, usize)> {
    let mut v = vec![("step", 1), ("time", 1), ("dt", 1), ("kinetic_energy", 1), ("contacts", 1)];
    if w > 0 {
        v.extend([("wall_force", 3 * w), ("wall_position", 3 * w)]);
    }
    v.extend(MEASURE_COLUMNS);
    v
}

/// Creates the empty, growing dataset `name` of `/series` (`w` walls).
fn create_column(g: &hdf5::Group, name: &str, w: usize) -> hdf5::Result<()> {
    use hdf5::Extent;
    let ds = if name.starts_with("wall_") {
        g.new_dataset::<f64>().chunk((SERIES_CHUNK, w, 3)).shape([Extent::resizable(0), Extent::fixed(w), Extent::fixed(3)]).create(name)?
    } else if matches!(name, "stress" | "fabric") {
        g.new_dataset::<f64>().chunk((SERIES_CHUNK, 3, 3)).shape([Extent::resizable(0), Extent::fixed(3), Extent::fixed(3)]).create(name)?
    } else if matches!(name, "box_lo" | "box_hi") {
        g.new_dataset::<f64>().chunk((SERIES_CHUNK, 3)).shape([Extent::resizable(0), Extent::fixed(3)]).create(name)?
    } else if matches!(name, "step" | "contacts") {
        g.new_dataset::<u64>().chunk(SERIES_CHUNK).shape([Extent::resizable(0)]).create(name)?
    } else {
        g.new_dataset::<f64>().chunk(SERIES_CHUNK).shape([Extent::resizable(0)]).create(name)?
    };
    str_attr(&ds, "units", unit_of(name))
}

/// Collective: creates `/series` with no rows, and the walls' ids and
/// normals (written by rank 0).
pub(super) fn create_series(file: &hdf5::File, walls: &[crate::scene::Wall], root: bool) -> hdf5::Result<()> {
    let g = file.create_group("series")?;
    let w = walls.len();
    for (name, _) in series_columns(w) {
        create_column(&g, name, w)?;
    }
    if w > 0 {
        let ids: Vec<u64> = if root { (0..w as u64).map(|k| WALL_ID_BASE + k).collect() } else { Vec::new() };
        let normals: Vec<f64> = if root { walls.iter().flat_map(|w| [w.normal.x, w.normal.y, w.normal.z]).collect() } else { Vec::new() };
        put_unit(&g, "wall_id", w as u64, 1, 0, &ids)?;
        put_unit(&g, "wall_normal", w as u64, 3, 0, &normals)?;
    }
    Ok(())
}

/// Collective: appends `row` (rank 0's) to every dataset of `/series`.
pub(super) fn append_series(file: &hdf5::File, st: &Steps, row: &SeriesRow, w: usize, root: bool) -> Result<(), IoError> {
    let g = st.ok(file.group("series"))?;
    let flat = |v: &[[f64; 3]]| -> Vec<f64> { v.iter().flatten().copied().collect() };
    for (name, cols) in series_columns(w) {
        let ds = st.ok(g.dataset(name))?;
        let mut shape = ds.shape();
        let n = shape[0];
        shape[0] = n + 1;
        st.ok(ds.resize(shape))?;
        let r = match name {
            "step" | "contacts" => {
                let v = [if name == "step" { row.step } else { row.contacts }];
                write_rows_collective(&ds, n as u64, if root { &v[..] } else { &[] }, cols)
            }
            _ => {
                let v = match name {
                    "time" => vec![row.time],
                    "dt" => vec![row.dt],
                    "kinetic_energy" => vec![row.kinetic_energy],
                    "wall_force" => flat(&row.wall_force),
                    "wall_position" => flat(&row.wall_position),
                    _ => {
                        let at: usize = MEASURE_COLUMNS.iter().take_while(|(n, _)| *n != name).map(|(_, w)| w).sum();
                        row.measures.get(at..at + cols).map_or_else(|| vec![0.0; cols], |v| v.to_vec())
                    }
                };
                write_rows_collective(&ds, n as u64, if root { &v[..] } else { &[] }, cols)
            }
        };
        st.ok(r)?;
    }
    Ok(())
}

/// Collective: cuts `/series` back to its rows up to `after_step` (the
/// leading rows in increasing step order), or creates it (a file of an
/// earlier version has none).
pub(super) fn truncate_series(file: &hdf5::File, after_step: u64, walls: &[crate::scene::Wall], root: bool) -> hdf5::Result<()> {
    if !file.link_exists("series") {
        return create_series(file, walls, root);
    }
    let g = file.group("series")?;
    let steps: Vec<u64> = g.dataset("step")?.read_raw()?;
    let keep = steps.iter().enumerate().take_while(|&(i, &s)| s <= after_step && (i == 0 || s > steps[i - 1])).count();
    for (name, _) in series_columns(walls.len()) {
        // A file from before the lab measurements: their rows are zeros.
        if !g.link_exists(name) {
            create_column(&g, name, walls.len())?;
        }
        let ds = g.dataset(name)?;
        let mut shape = ds.shape();
        if shape[0] != keep {
            shape[0] = keep;
            ds.resize(shape)?;
        }
    }
    Ok(())
}

/// The columns `names` of `/series` in the frames file at `path` (one value
/// per row: 1-D datasets), read by one process on a closed file.
pub fn read_series(path: &std::path::Path, names: &[&str]) -> hdf5::Result<Vec<Vec<f64>>> {
    let f = hdf5::File::open(path)?;
    let g = f.group("series")?;
    names.iter().map(|n| g.dataset(n)?.read_raw::<f64>()).collect()
}

/// Whether every dataset of `/series` in `file` reads.
pub(super) fn series_readable(file: &hdf5::File) -> bool {
    let Ok(g) = file.group("series") else { return false };
    let Ok(names) = g.member_names() else { return false };
    names.iter().all(|n| {
        g.dataset(n).is_ok_and(|d| match d.dtype().and_then(|t| t.to_descriptor()) {
            Ok(hdf5::types::TypeDescriptor::Float(_)) => d.read_raw::<f64>().is_ok(),
            _ => d.read_raw::<u64>().is_ok(),
        })
    })
}

