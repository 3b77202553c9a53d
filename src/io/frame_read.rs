//! A frame of a stiffgrain `frames.h5` as the start of a new run: each rank
//! reads its slab of rows (a hyperslab of every dataset) through MPI-IO, so
//! no rank holds the whole frame.
use super::body_files::FileBody;
use super::checkpoint::read_shapes;
use super::frames::frame_name;
use super::{agree, H5Context, IoError};
use crate::body::Shape;
use mpi::traits::*;
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use std::path::Path;

/// This rank's slab of one frame.
pub struct FrameSlab {
    /// The frame's step.
    pub step: u64,
    /// Bodies in the frame (all ranks).
    pub count: u64,
    /// Smallest and largest id in the frame (ids are sorted: first and last row).
    pub id_range: (u64, u64),
    /// The file's shapes and their names (`FileBody::shape` indexes them).
    pub shapes: Vec<(String, Shape)>,
    pub bodies: Vec<FileBody>,
}

/// Rows a..b of `n` for `rank` of `size` (contiguous, in order).
pub fn slab(n: u64, rank: u64, size: u64) -> (u64, u64) {
    ((n as u128 * rank as u128 / size as u128) as u64, (n as u128 * (rank + 1) as u128 / size as u128) as u64)
}

fn rows<T: hdf5::H5Type + Copy>(g: &hdf5::Group, name: &str, n: u64, cols: usize, a: u64, b: u64) -> Result<Vec<T>, String> {
    let ds = g.dataset(name).map_err(|e| format!("dataset {name}: {e}"))?;
    let shape = ds.shape();
    let want: Vec<usize> = if cols == 1 { vec![n as usize] } else { vec![n as usize, cols] };
    if shape != want {
        return Err(format!("dataset {name} has shape {shape:?}, expected {want:?}"));
    }
    let (a, b) = (a as usize, b as usize);
    // Every rank selects its hyperslab (an empty one included).
    let v: Vec<T> = if cols == 1 {
        ds.read_slice_1d::<T, _>(a..b).map_err(|e| format!("reading {name}: {e}"))?.iter().copied().collect()
    } else {
        ds.read_slice_2d::<T, _>((a..b, ..)).map_err(|e| format!("reading {name}: {e}"))?.iter().copied().collect()
    };
    Ok(v)
}

/// Collective: reads frame `step` (default the last) of `path`, this rank's
/// contiguous slab of rows.
pub fn read_frame<C: Communicator>(comm: &C, path: &Path, step: Option<u64>) -> Result<FrameSlab, IoError> {
    let exists = std::fs::metadata(path).map(|_| ()).map_err(|e| IoError::fs(path, "open the frames file", e));
    agree(comm, exists)?;
    let file = hdf5::File::with_options().with_fapl(|p| p.mpio(comm.as_raw(), None)).open(path).ctx(path, "opening (MPI-IO)");
    let file = agree(comm, file)?;
    let (rank, size) = (comm.rank() as u64, comm.size() as u64);
    let r = (|| -> Result<FrameSlab, IoError> {
        let c = |s: String| IoError::corrupt(path, s);
        let frames = file.group("frames").ctx(path, "opening /frames")?;
        let mut steps: Vec<u64> = frames.member_names().ctx(path, "listing /frames")?.iter().filter_map(|n| n.parse().ok()).collect();
        steps.sort_unstable();
        let step = match step {
            Some(s) if steps.contains(&s) => s,
            Some(s) => return Err(IoError::Invalid { path: path.to_path_buf(), what: format!("no frame at step {s} (frames: {steps:?})") }),
            None => *steps.last().ok_or_else(|| c("no frames".into()))?,
        };
        let shapes: Vec<(String, Shape)> = {
            let (s, n) = read_shapes(&file).map_err(c)?;
            n.into_iter().zip(s).collect()
        };
        let g = frames.group(&format!("{}/bodies", frame_name(step))).ctx(path, "opening the frame's bodies")?;
        let n = g.dataset("id").ctx(path, "opening bodies/id")?.shape().first().copied().unwrap_or(0) as u64;
        let (a, b) = slab(n, rank, size);
        let id: Vec<u64> = rows(&g, "id", n, 1, a, b).map_err(c)?;
        let ends: Vec<u64> = if n > 0 { [rows::<u64>(&g, "id", n, 1, 0, 1).map_err(c)?, rows::<u64>(&g, "id", n, 1, n - 1, n).map_err(c)?].concat() } else { vec![0, 0] };
        let shape: Vec<u32> = rows(&g, "shape", n, 1, a, b).map_err(c)?;
        let fixed: Vec<u8> = rows(&g, "fixed", n, 1, a, b).map_err(c)?;
        let pos: Vec<f64> = rows(&g, "position", n, 3, a, b).map_err(c)?;
        let ori: Vec<f64> = rows(&g, "orientation", n, 4, a, b).map_err(c)?;
        let vel: Vec<f64> = rows(&g, "velocity", n, 3, a, b).map_err(c)?;
        let ang: Vec<f64> = rows(&g, "angular_velocity", n, 3, a, b).map_err(c)?;
        let mut bodies = Vec::with_capacity(id.len());
        for i in 0..id.len() {
            if shape[i] as usize >= shapes.len() {
                return Err(c(format!("body {} has shape {} but the file has {} shapes", id[i], shape[i], shapes.len())));
            }
            let v3 = |x: &[f64]| Vector3::new(x[3 * i], x[3 * i + 1], x[3 * i + 2]);
            let q = &ori[4 * i..4 * i + 4];
            bodies.push(FileBody {
                line: a + i as u64,
                row: a + i as u64,
                id: Some(id[i]),
                position: v3(&pos),
                radius: None,
                shape: Some(shape[i]),
                velocity: v3(&vel),
                angular_velocity: v3(&ang),
                orientation: Some(UnitQuaternion::new_unchecked(Quaternion::new(q[0], q[1], q[2], q[3]))),
                fixed: fixed[i] != 0,
            });
        }
        Ok(FrameSlab { step, count: n, id_range: (ends[0], ends[1]), shapes, bodies })
    })();
    agree(comm, r)
}
