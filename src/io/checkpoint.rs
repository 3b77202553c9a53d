//! Output stage: checkpoints `OUT/checkpoint-NNNNNN.h5`, the complete state,
//! written atomically (collective write of `path.tmp`, close, fsync, rename)
//! and restartable on any rank count.
//!
//! Layout:
//!
//! ```text
//! /            attrs: format = "stiffgrain-checkpoint", format_version u32 = 3,
//!              version, solver, dim, n_ranks, config (TOML text), step u64,
//!              time f64, dt f64, n_bodies u64, domain (the rank boxes and
//!              RCB cuts as f64 bit patterns in hex, for a restart on
//!              n_ranks ranks; format 3),
//!              then, written last: checksum u64, complete u8 = 1
//! /shapes/<k>  as in frames.h5
//! /bodies/     id u64, shape u32, material u32, fixed u8, dof_mask u8,
//!              position N×3, orientation N×4 (w,x,y,z), velocity N×3,
//!              angular_velocity N×3, mass N, inertia N×9 (body frame, row-major)
//! /solver/     attrs: version u32 (the solver's own record layout), tables
//!              (names, comma-separated); per table /solver/<name>/ with attrs
//!              n u64, n_u u32, n_f u32 and datasets key N, u N×n_u u64,
//!              f N×n_f f64 (sorted by key, then u, then f)
//! /history/    the World's history store (`crate::history`) in the same
//!              layout: tables "body" (key body id) and "contact" (key body
//!              a, u = b, sub_a, sub_b); version = the store's layout (1);
//!              beside them the World's "world" (reference positions) and
//!              the driver's "run_steps" and "run_totals" (the tallies of
//!              summary.json, `driver::StepTally`), read as absent when missing
//! ```
//!
//! Format version 2 (before the history store) has no `/history` and is
//! read as an empty one. Format version 1 (before the solver-owned state)
//! kept a fixed 8-wide `/history` instead of `/solver`: it is refused with
//! its version named.
//!
//! `checksum` is a wrapping sum of a 64-bit mix of (dataset, element index,
//! element bits) over every element, plus a hash of the attributes and shapes:
//! it does not depend on how the rows were split among ranks, so it is checked
//! on read at any rank count. A file without `complete` was interrupted.
use super::frames::{put, read_str_attr, scalar_attr, str_attr, write_shapes};
use super::redistribute::{redistribute_sorted, FlatRecords, Redistributed};
use super::checksum::{scalars_hash, sum_elems, Scalars};
use super::{agree, H5Context, IoError};
use crate::body::{Bodies, Body, Shape, TriMesh};
use crate::scene::Scene;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use nalgebra::{Matrix3, Quaternion, UnitQuaternion, Vector3};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Layout of the file written by this build (see the module comment).
pub const FORMAT_VERSION: u32 = 3;
/// The oldest layout this build reads.
const OLDEST_READ: u32 = 2;
/// Layout of the `/history` tables.
const HISTORY_VERSION: u32 = 1;

/// A solver's state beyond the bodies, kept by checkpoints: named tables of
/// records the solver fills and reads itself (ARCHITECTURE.md "Solver
/// state"), with a version of their layout the solver checks on restore.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolverState {
    pub version: u32,
    /// (name, records): every rank lists the same tables with the same widths.
    pub tables: Vec<(String, FlatRecords)>,
}

impl SolverState {
    pub fn new(version: u32) -> Self {
        Self { version, tables: Vec::new() }
    }

    pub fn push(&mut self, name: &str, records: FlatRecords) {
        self.tables.push((name.to_string(), records));
    }

    /// The table `name`, if the state has it.
    pub fn table(&self, name: &str) -> Option<&FlatRecords> {
        self.tables.iter().find(|(n, _)| n == name).map(|(_, r)| r)
    }
}

/// A checkpoint as read by one rank: global scalars, and this rank's
/// contiguous slab of the bodies and of each solver-state table (sorted). The
/// caller migrates bodies to their owners afterwards.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    pub path: PathBuf,
    pub step: u64,
    pub time: f64,
    pub dt: f64,
    /// Crate version that wrote the file.
    pub version: String,
    pub solver: String,
    pub dim: u8,
    /// Resolved configuration (TOML text) of the run.
    pub config_text: String,
    pub shapes: Vec<Shape>,
    pub shape_names: Vec<String>,
    /// This rank's slab of bodies, sorted by id.
    pub bodies: Bodies,
    /// Global index of `bodies[0]`.
    pub body_offset: u64,
    /// Bodies in the file.
    pub n_bodies: u64,
    /// This rank's slab of each table of the solver's state.
    pub state: SolverState,
    /// This rank's slab of the history tables, and the decomposition.
    pub world: WorldState,
    /// Ranks of the run that wrote it.
    pub n_ranks: u32,
    /// The run that wrote it (empty in files of older builds).
    pub run_id: String,
}

/// What a checkpoint keeps of the World beyond the bodies: the history
/// store's tables (this rank's share) and the decomposition
/// (`Domain::to_flat`, the same on every rank; empty when unknown).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorldState {
    pub history: Vec<(String, FlatRecords)>,
    pub domain: Vec<f64>,
}

/// The flat domain as one attribute: exact bits, hex.
fn domain_text(v: &[f64]) -> String {
    v.iter().map(|x| format!("{:016x}", x.to_bits())).collect::<Vec<_>>().join(" ")
}

fn domain_from_text(t: &str) -> Result<Vec<f64>, String> {
    t.split_whitespace().map(|w| u64::from_str_radix(w, 16).map(f64::from_bits).map_err(|e| format!("attribute domain: {e}"))).collect()
}

/// `dir/checkpoint-NNNNNN.h5` (at least six digits).
pub fn checkpoint_path(dir: &Path, step: u64) -> PathBuf {
    dir.join(format!("checkpoint-{step:06}.h5"))
}

/// The checkpoints in `dir` (names `checkpoint-<digits>.h5`), by ascending step.
pub fn list_checkpoints(dir: &Path) -> Result<Vec<(u64, PathBuf)>, IoError> {
    let rd = std::fs::read_dir(dir).map_err(|e| IoError::fs(dir, "list the directory", e))?;
    let mut out = Vec::new();
    for e in rd {
        let e = e.map_err(|e| IoError::fs(dir, "list the directory", e))?;
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(num) = name.strip_prefix("checkpoint-").and_then(|s| s.strip_suffix(".h5")) else { continue };
        if num.is_empty() || !num.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if let Ok(step) = num.parse::<u64>() {
            out.push((step, e.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// The run id stored in a checkpoint or frames file (`run_id` attribute of
/// the root or of `/meta`), read serially; None when absent or unreadable.
pub fn stored_run_id(path: &Path) -> Option<String> {
    let file = hdf5::File::open(path).ok()?;
    read_str_attr(&file, "run_id").or_else(|_| file.group("meta").and_then(|m| read_str_attr(&m, "run_id"))).ok()
}

/// Removes all but the `keep` newest checkpoints of run `run_id` in `dir`
/// (by step); checkpoints of other runs, or whose run cannot be read, are
/// never removed. Returns the removed paths. Call on rank 0 only. Temp
/// files are left alone.
pub fn prune_checkpoints(dir: &Path, keep: usize, run_id: &str) -> Result<Vec<PathBuf>, IoError> {
    let mut all = list_checkpoints(dir)?;
    all.retain(|(_, p)| stored_run_id(p).is_some_and(|id| !id.is_empty() && id == run_id));
    let n_remove = all.len().saturating_sub(keep);
    let mut removed = Vec::new();
    for (_, p) in all.into_iter().take(n_remove) {
        std::fs::remove_file(&p).map_err(|e| IoError::fs(&p, "remove an old checkpoint", e))?;
        removed.push(p);
    }
    Ok(removed)
}

// ---------------------------------------------------------------------------
// Write

/// Flat record widths: bodies u = [id, shape, material, fixed, dof_mask],
/// f = pos 3, quat 4, v 3, w 3, mass 1, inertia 9.
use crate::parallel::records::{push_body, BODY_NF, BODY_NU};

/// Collective: writes the complete state to `path` atomically.
///
/// Bodies are the first `n_owned` of `bodies` on each rank (ghosts after them
/// are ignored); `state` holds this rank's share of the solver's tables. The
/// shapes, config text, solver and dim come from `scene`. The file is written
/// as `path.tmp` with MPI-IO, closed, fsynced and renamed by rank 0 (the
/// directory is fsynced too). Call [`prune_checkpoints`] on rank 0 afterwards
/// to keep the last few.
#[allow(clippy::too_many_arguments)]
pub fn write_checkpoint<C: Communicator>(
    comm: &C,
    path: &Path,
    step: u64,
    time: f64,
    dt: f64,
    scene: &Scene,
    bodies: &Bodies,
    n_owned: usize,
    state: &SolverState,
    world: &WorldState,
) -> Result<(), IoError> {
    let check = if n_owned > bodies.len() {
        Err(IoError::Invalid { path: path.to_path_buf(), what: format!("n_owned = {n_owned} but only {} bodies", bodies.len()) })
    } else {
        Ok(())
    };
    agree(comm, check)?;
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let r = if comm.rank() == 0 {
        match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => {
                std::fs::create_dir_all(d).map_err(|e| IoError::fs(d, "create the checkpoint directory", e))
            }
            _ => Ok(()),
        }
    } else {
        Ok(())
    };
    agree(comm, r)?;

    let mut recs = FlatRecords::new(BODY_NU, BODY_NF);
    for i in 0..n_owned {
        push_body(&mut recs, bodies, i);
    }
    let b = redistribute_sorted(comm, recs);
    let sorted = |t: &[(String, FlatRecords)]| -> Vec<(String, Redistributed)> {
        t.iter().map(|(name, r)| (name.clone(), redistribute_sorted(comm, r.clone()))).collect()
    };
    let (tables, history) = (sorted(&state.tables), sorted(&world.history));
    let domain = domain_text(&world.domain);

    let file = hdf5::File::with_options().with_fapl(|p| p.mpio(comm.as_raw(), None)).create(&tmp).ctx(&tmp, "creating the checkpoint (MPI-IO)");
    let file = agree(comm, file)?;
    let r = write_contents(comm, &file, &tmp, step, time, dt, scene, &b, (state.version, &tables), (&history, &domain));
    let r = agree(comm, r);
    let closed = agree(comm, file.close().ctx(&tmp, "closing the checkpoint"));
    r?;
    closed?;

    let r = if comm.rank() == 0 { publish(&tmp, path) } else { Ok(()) };
    agree(comm, r)
}

/// fsync `tmp`, rename it to `path`, fsync the directory.
fn publish(tmp: &Path, path: &Path) -> Result<(), IoError> {
    std::fs::File::open(tmp).and_then(|f| f.sync_all()).map_err(|e| IoError::fs(tmp, "fsync the checkpoint", e))?;
    std::fs::rename(tmp, path).map_err(|e| IoError::fs(path, "rename the checkpoint into place", e))?;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir).and_then(|f| f.sync_all()).map_err(|e| IoError::fs(dir, "fsync the directory", e))
}

#[allow(clippy::too_many_arguments)]
fn write_contents<C: Communicator>(
    comm: &C,
    file: &hdf5::File,
    p: &Path,
    step: u64,
    time: f64,
    dt: f64,
    scene: &Scene,
    b: &Redistributed,
    (state_version, tables): (u32, &[(String, Redistributed)]),
    (history, domain): (&[(String, Redistributed)], &str),
) -> Result<(), IoError> {
    let e = |what: &'static str| move |err: hdf5::Error| IoError::hdf5(p, what, err);
    // Each collective step is agreed before the next: a rank whose write
    // failed (a full disk) must not leave the others in the next collective.
    let ok = |r: hdf5::Result<()>, what: &'static str| agree(comm, r.map_err(e(what)));
    let sc = Scalars {
        version: env!("CARGO_PKG_VERSION"),
        solver: scene.simulation.solver.name(),
        dim: scene.simulation.dim,
        config: &scene.config_text,
        step,
        time,
        dt,
        n_bodies: b.total,
        state: (state_version, shape_of(tables)),
        history: shape_of(history),
        format_version: FORMAT_VERSION,
        domain,
        shapes: &scene.shapes,
        shape_names: &scene.shape_names,
    };
    let mut local_sum = 0u64;
    ok((|| -> hdf5::Result<()> {
        str_attr(file, "format", "stiffgrain-checkpoint")?;
        scalar_attr(file, "format_version", &FORMAT_VERSION)?;
        str_attr(file, "version", sc.version)?;
        str_attr(file, "solver", sc.solver)?;
        scalar_attr(file, "dim", &sc.dim)?;
        scalar_attr(file, "n_ranks", &(comm.size() as u32))?;
        str_attr(file, "config", sc.config)?;
        scalar_attr(file, "step", &step)?;
        scalar_attr(file, "time", &time)?;
        scalar_attr(file, "dt", &dt)?;
        scalar_attr(file, "n_bodies", &b.total)?;
        str_attr(file, "domain", domain)?;
        // Outside the checksum: which run wrote it (restart and pruning).
        str_attr(file, "run_id", &scene.run_id)
    })(), "writing the attributes")?;
    ok(write_shapes(comm, file, &scene.shapes, &scene.shape_names), "writing /shapes")?;

    let bg = agree(comm, file.create_group("bodies").map_err(e("creating /bodies")))?;
    let rb = &b.records;
    let (off, tot) = (b.offset, b.total);
    let ucol = |k: usize| -> Vec<u64> { (0..rb.len()).map(|i| rb.u_row(i)[k]).collect() };
    let fcols = |a: usize, m: usize| -> Vec<f64> { (0..rb.len()).flat_map(|i| rb.f_row(i)[a..a + m].to_vec()).collect() };
    let mut wu = |name: &str, v: Vec<u64>, as_: u8| -> Result<(), IoError> {
        local_sum = local_sum.wrapping_add(sum_elems(&format!("bodies/{name}"), off, v.iter().copied()));
        let r = match as_ {
            64 => put(&bg, name, tot, 1, off, &v),
            32 => put(&bg, name, tot, 1, off, &v.iter().map(|&x| x as u32).collect::<Vec<_>>()),
            _ => put(&bg, name, tot, 1, off, &v.iter().map(|&x| x as u8).collect::<Vec<_>>()),
        };
        ok(r, "writing /bodies")
    };
    wu("id", ucol(0), 64)?;
    wu("shape", ucol(1), 32)?;
    wu("material", ucol(2), 32)?;
    wu("fixed", ucol(3), 8)?;
    wu("dof_mask", ucol(4), 8)?;
    let mut wf = |name: &str, a: usize, m: usize| -> Result<(), IoError> {
        let v = fcols(a, m);
        local_sum = local_sum.wrapping_add(sum_elems(&format!("bodies/{name}"), off * m as u64, v.iter().map(|x| x.to_bits())));
        ok(put(&bg, name, tot, m, off, &v), "writing /bodies")
    };
    wf("position", 0, 3)?;
    wf("orientation", 3, 4)?;
    wf("velocity", 7, 3)?;
    wf("angular_velocity", 10, 3)?;
    wf("mass", 13, 1)?;
    wf("inertia", 14, 9)?;

    let agreed = |r: hdf5::Result<()>, what: &'static str| agree(comm, r.map_err(e(what)));
    local_sum = local_sum.wrapping_add(write_tables(file, "solver", state_version, tables, &|r| agreed(r, "writing /solver"))?);
    local_sum = local_sum.wrapping_add(write_tables(file, "history", HISTORY_VERSION, history, &|r| agreed(r, "writing /history"))?);

    let mut total_sum = 0u64;
    comm.all_reduce_into(&local_sum, &mut total_sum, SystemOperation::sum());
    let checksum = total_sum.wrapping_add(scalars_hash(&sc));
    ok(file.flush(), "finishing the checkpoint")?;
    ok((|| -> hdf5::Result<()> {
        scalar_attr(file, "checksum", &checksum)?;
        scalar_attr(file, "complete", &1u8)?;
        file.flush()
    })(), "finishing the checkpoint")
}

/// (name, rows, n_u, n_f) of each table, for the checksum.
fn shape_of(tables: &[(String, Redistributed)]) -> Vec<(String, u64, usize, usize)> {
    tables.iter().map(|(n, r)| (n.clone(), r.total, r.records.n_u, r.records.n_f)).collect()
}

/// Writes named record tables under `/<group>` (collective), each step
/// agreed through `ok`; returns this rank's share of the checksum.
fn write_tables(
    file: &hdf5::File,
    group: &str,
    version: u32,
    tables: &[(String, Redistributed)],
    ok: &dyn Fn(hdf5::Result<()>) -> Result<(), IoError>,
) -> Result<u64, IoError> {
    let mut local_sum = 0u64;
    let mut sg = None;
    ok(file.create_group(group).map(|g| sg = Some(g)))?;
    let sg = sg.expect("created above");
    ok((|| {
        scalar_attr(&sg, "version", &version)?;
        let names: Vec<&str> = tables.iter().map(|(n, _)| n.as_str()).collect();
        str_attr(&sg, "tables", &names.join(","))
    })())?;
    for (name, t) in tables {
        let (r, off, tot) = (&t.records, t.offset, t.total);
        let mut g = None;
        ok(sg.create_group(name).map(|x| g = Some(x)))?;
        let g = g.expect("created above");
        ok((|| {
            scalar_attr(&g, "n", &tot)?;
            scalar_attr(&g, "n_u", &(r.n_u as u32))?;
            scalar_attr(&g, "n_f", &(r.n_f as u32))
        })())?;
        let path = |d: &str| format!("{group}/{name}/{d}");
        local_sum = local_sum.wrapping_add(sum_elems(&path("key"), off, r.keys.iter().copied()));
        ok(put(&g, "key", tot, 1, off, &r.keys))?;
        if r.n_u > 0 {
            local_sum = local_sum.wrapping_add(sum_elems(&path("u"), off * r.n_u as u64, r.u.iter().copied()));
            ok(put(&g, "u", tot, r.n_u, off, &r.u))?;
        }
        if r.n_f > 0 {
            local_sum = local_sum.wrapping_add(sum_elems(&path("f"), off * r.n_f as u64, r.f.iter().map(|x| x.to_bits())));
            ok(put(&g, "f", tot, r.n_f, off, &r.f))?;
        }
    }
    Ok(local_sum)
}

/// Tables of `/<group>` as read by one rank: the version, this rank's slab
/// of each table, each table's total rows, and the slabs' checksum share.
struct ReadTables {
    version: u32,
    tables: Vec<(String, FlatRecords)>,
    rows: Vec<(String, u64, usize, usize)>,
    sum: u64,
}

fn read_tables(file: &hdf5::File, group: &str, rank: u64, size: u64) -> Result<ReadTables, String> {
    let sg = file.group(group).map_err(|e| format!("group /{group}: {e}"))?;
    let version: u32 = sg.attr("version").and_then(|a| a.read_scalar()).map_err(|e| format!("attribute {group}/version: {e}"))?;
    let names = read_str_attr(&sg, "tables").map_err(|e| format!("attribute {group}/tables: {e}"))?;
    let mut out = ReadTables { version, tables: Vec::new(), rows: Vec::new(), sum: 0 };
    for name in names.split(',').filter(|n| !n.is_empty()) {
        let g = sg.group(name).map_err(|e| format!("group /{group}/{name}: {e}"))?;
        let attr = |a: &str| -> Result<u64, String> {
            let v: hdf5::Result<u64> = g.attr(a).and_then(|x| x.read_scalar::<u64>().or_else(|_| x.read_scalar::<u32>().map(u64::from)));
            v.map_err(|e| format!("/{group}/{name} attribute {a}: {e}"))
        };
        let (n, nu, nf) = (attr("n")?, attr("n_u")? as usize, attr("n_f")? as usize);
        let (ta, tb) = slab(n, rank, size);
        let path = |d: &str| format!("{group}/{name}/{d}");
        let mut recs = FlatRecords::new(nu, nf);
        recs.keys = rows::<u64>(&g, "key", n, 1, ta, tb)?;
        out.sum = out.sum.wrapping_add(sum_elems(&path("key"), ta, recs.keys.iter().copied()));
        if nu > 0 {
            recs.u = rows::<u64>(&g, "u", n, nu, ta, tb)?;
            out.sum = out.sum.wrapping_add(sum_elems(&path("u"), ta * nu as u64, recs.u.iter().copied()));
        }
        if nf > 0 {
            recs.f = rows::<f64>(&g, "f", n, nf, ta, tb)?;
            out.sum = out.sum.wrapping_add(sum_elems(&path("f"), ta * nf as u64, recs.f.iter().map(|x| x.to_bits())));
        }
        out.tables.push((name.to_string(), recs));
        out.rows.push((name.to_string(), n, nu, nf));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Read

/// Collective: reads the checkpoint at `path` on any number of ranks. Rank r
/// of P gets bodies `[r·N/P, (r+1)·N/P)` (sorted by id) and the same share of
/// each solver-state table. A missing, truncated, incomplete or corrupt file gives
/// the same kind of error on every rank (never a panic or a hang).
///
/// Each rank opens the file read-only with the serial driver and reads its
/// own slab, so no HDF5 call is collective; the ranks then agree on errors
/// and on the checksum.
pub fn read_checkpoint<C: Communicator>(comm: &C, path: &Path) -> Result<Checkpoint, IoError> {
    let local = read_local(path, comm.rank() as u64, comm.size() as u64);
    let (ck, local_sum, stored, shapes_of) = agree(comm, local)?;
    let mut total = 0u64;
    comm.all_reduce_into(&local_sum, &mut total, SystemOperation::sum());
    let sc = Scalars {
        version: &ck.version,
        solver: &ck.solver,
        dim: ck.dim,
        config: &ck.config_text,
        step: ck.step,
        time: ck.time,
        dt: ck.dt,
        n_bodies: ck.n_bodies,
        state: (ck.state.version, shapes_of.state),
        history: shapes_of.history,
        format_version: shapes_of.format_version,
        domain: &shapes_of.domain,
        shapes: &ck.shapes,
        shape_names: &ck.shape_names,
    };
    let computed = total.wrapping_add(scalars_hash(&sc));
    if computed != stored {
        return Err(IoError::corrupt(path, format!("checksum mismatch (stored {stored:#018x}, computed {computed:#018x})")));
    }
    Ok(ck)
}

fn slab(n: u64, rank: u64, size: u64) -> (u64, u64) {
    let a = (n as u128 * rank as u128 / size as u128) as u64;
    let b = (n as u128 * (rank + 1) as u128 / size as u128) as u64;
    (a, b)
}

/// Reads rows `a..b` of a 1-D or 2-D dataset, checking its shape.
fn rows<T: hdf5::H5Type + Copy>(g: &hdf5::Group, name: &str, n: u64, cols: usize, a: u64, b: u64) -> Result<Vec<T>, String> {
    let ds = g.dataset(name).map_err(|e| format!("dataset {name}: {e}"))?;
    let shape = ds.shape();
    let want: Vec<usize> = if cols == 1 { vec![n as usize] } else { vec![n as usize, cols] };
    if shape != want {
        return Err(format!("dataset {name} has shape {shape:?}, expected {want:?}"));
    }
    if a == b {
        return Ok(Vec::new());
    }
    let (a, b) = (a as usize, b as usize);
    let v: Vec<T> = if cols == 1 {
        ds.read_slice_1d::<T, _>(a..b).map_err(|e| format!("reading {name}: {e}"))?.iter().copied().collect()
    } else {
        ds.read_slice_2d::<T, _>((a..b, ..)).map_err(|e| format!("reading {name}: {e}"))?.iter().copied().collect()
    };
    Ok(v)
}

type LocalRead = (Checkpoint, u64, u64, TableShapes);

fn read_local(path: &Path, rank: u64, size: u64) -> Result<LocalRead, IoError> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(IoError::fs(path, "open the checkpoint", e));
    }
    let file = hdf5::File::open(path).map_err(|e| IoError::hdf5(path, "opening the checkpoint", e))?;
    let c = |s: String| IoError::corrupt(path, s);
    let attr_err = |name: &'static str| move |e: hdf5::Error| IoError::corrupt(path, format!("attribute {name}: {e}"));
    let complete: u8 = file.attr("complete").and_then(|a| a.read_scalar()).map_err(|_| {
        IoError::corrupt(path, "no completion mark (the write was interrupted or the file is damaged)")
    })?;
    if complete != 1 {
        return Err(c(format!("completion mark is {complete}, expected 1")));
    }
    let format = read_str_attr(&file, "format").map_err(attr_err("format"))?;
    if format != "stiffgrain-checkpoint" {
        return Err(c(format!("not a stiffgrain checkpoint (format = {format:?})")));
    }
    let stored: u64 = file.attr("checksum").and_then(|a| a.read_scalar()).map_err(attr_err("checksum"))?;
    let version = read_str_attr(&file, "version").map_err(attr_err("version"))?;
    // Files before format_version kept the fixed-width /history (format 1).
    let format_version: u32 = file.attr("format_version").and_then(|a| a.read_scalar()).unwrap_or(1);
    if !(OLDEST_READ..=FORMAT_VERSION).contains(&format_version) {
        return Err(IoError::Invalid {
            path: path.to_path_buf(),
            what: format!(
                "checkpoint format version {format_version} (written by stiffgrain {version}) cannot be read by this build, which reads format versions {OLDEST_READ} to {FORMAT_VERSION}; restart it with the stiffgrain that wrote it, or start the run again"
            ),
        });
    }
    let step: u64 = file.attr("step").and_then(|a| a.read_scalar()).map_err(attr_err("step"))?;
    let time: f64 = file.attr("time").and_then(|a| a.read_scalar()).map_err(attr_err("time"))?;
    let dt: f64 = file.attr("dt").and_then(|a| a.read_scalar()).map_err(attr_err("dt"))?;
    let dim: u8 = file.attr("dim").and_then(|a| a.read_scalar()).map_err(attr_err("dim"))?;
    let n_bodies: u64 = file.attr("n_bodies").and_then(|a| a.read_scalar()).map_err(attr_err("n_bodies"))?;

    let solver = read_str_attr(&file, "solver").map_err(attr_err("solver"))?;
    let config_text = read_str_attr(&file, "config").map_err(attr_err("config"))?;
    let run_id = read_str_attr(&file, "run_id").unwrap_or_default();
    let (shapes, shape_names) = read_shapes(&file).map_err(c)?;

    let (a, b) = slab(n_bodies, rank, size);
    let bg = file.group("bodies").map_err(|e| c(format!("group /bodies: {e}")))?;
    let mut sum = 0u64;
    let mut ru = |name: &str, bits: u8| -> Result<Vec<u64>, IoError> {
        let v: Vec<u64> = match bits {
            64 => rows::<u64>(&bg, name, n_bodies, 1, a, b).map_err(c)?,
            32 => rows::<u32>(&bg, name, n_bodies, 1, a, b).map_err(c)?.into_iter().map(u64::from).collect(),
            _ => rows::<u8>(&bg, name, n_bodies, 1, a, b).map_err(c)?.into_iter().map(u64::from).collect(),
        };
        sum = sum.wrapping_add(sum_elems(&format!("bodies/{name}"), a, v.iter().copied()));
        Ok(v)
    };
    let id = ru("id", 64)?;
    let shape = ru("shape", 32)?;
    let material = ru("material", 32)?;
    let fixed = ru("fixed", 8)?;
    let dof_mask = ru("dof_mask", 8)?;
    let mut rf = |name: &str, m: usize| -> Result<Vec<f64>, IoError> {
        let v = rows::<f64>(&bg, name, n_bodies, m, a, b).map_err(c)?;
        sum = sum.wrapping_add(sum_elems(&format!("bodies/{name}"), a * m as u64, v.iter().map(|x| x.to_bits())));
        Ok(v)
    };
    let pos = rf("position", 3)?;
    let ori = rf("orientation", 4)?;
    let vel = rf("velocity", 3)?;
    let ang = rf("angular_velocity", 3)?;
    let mass = rf("mass", 1)?;
    let inertia = rf("inertia", 9)?;

    let mut bodies = Bodies::new();
    for i in 0..(b - a) as usize {
        let v3 = |x: &[f64]| Vector3::new(x[3 * i], x[3 * i + 1], x[3 * i + 2]);
        let q = &ori[4 * i..4 * i + 4];
        bodies.push(Body {
            id: id[i],
            shape: shape[i] as u32,
            material: material[i] as u32,
            position: v3(&pos),
            orientation: UnitQuaternion::new_unchecked(Quaternion::new(q[0], q[1], q[2], q[3])),
            velocity: v3(&vel),
            angular_velocity: v3(&ang),
            mass: mass[i],
            inertia: Matrix3::from_row_slice(&inertia[9 * i..9 * i + 9]),
            fixed: fixed[i] != 0,
            dof_mask: dof_mask[i] as u8,
        });
    }

    let solver_tables = read_tables(&file, "solver", rank, size).map_err(&c)?;
    let history_tables = if format_version >= 3 {
        read_tables(&file, "history", rank, size).map_err(&c)?
    } else {
        ReadTables { version: HISTORY_VERSION, tables: Vec::new(), rows: Vec::new(), sum: 0 }
    };
    if history_tables.version != HISTORY_VERSION {
        return Err(c(format!("/history version {} (this build reads {HISTORY_VERSION})", history_tables.version)));
    }
    sum = sum.wrapping_add(solver_tables.sum).wrapping_add(history_tables.sum);
    let state = SolverState { version: solver_tables.version, tables: solver_tables.tables };
    let domain = if format_version >= 3 { read_str_attr(&file, "domain").map_err(attr_err("domain"))? } else { String::new() };
    let n_ranks: u32 = file.attr("n_ranks").and_then(|a| a.read_scalar()).map_err(attr_err("n_ranks"))?;
    let world = WorldState { history: history_tables.tables, domain: domain_from_text(&domain).map_err(&c)? };
    let shapes_of = TableShapes { state: solver_tables.rows, history: history_tables.rows, format_version, domain };

    let ck = Checkpoint {
        path: path.to_path_buf(),
        step,
        time,
        dt,
        version,
        solver,
        dim,
        config_text,
        shapes,
        shape_names,
        bodies,
        body_offset: a,
        n_bodies,
        state,
        world,
        n_ranks,
        run_id,
    };
    Ok((ck, sum, stored, shapes_of))
}

/// What the checksum of a file read needs beyond the [`Checkpoint`].
struct TableShapes {
    state: Vec<(String, u64, usize, usize)>,
    history: Vec<(String, u64, usize, usize)>,
    format_version: u32,
    domain: String,
}

/// Reads `/shapes/0..` in index order.
pub(crate) fn read_shapes(file: &hdf5::File) -> Result<(Vec<Shape>, Vec<String>), String> {
    let sg = file.group("shapes").map_err(|e| format!("group /shapes: {e}"))?;
    let n = sg.len() as usize;
    let (mut shapes, mut names) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for k in 0..n {
        let g = sg.group(&k.to_string()).map_err(|e| format!("shape {k}: {e}"))?;
        names.push(read_str_attr(&g, "name").map_err(|e| format!("shape {k} name: {e}"))?);
        let kind = read_str_attr(&g, "kind").map_err(|e| format!("shape {k} kind: {e}"))?;
        match kind.as_str() {
            "sphere" => {
                let radius: f64 = g.attr("radius").and_then(|a| a.read_scalar()).map_err(|e| format!("shape {k} radius: {e}"))?;
                shapes.push(Shape::Sphere { radius });
            }
            "mesh" => {
                let vd = g.dataset("vertices").map_err(|e| format!("shape {k} vertices: {e}"))?;
                let td = g.dataset("triangles").map_err(|e| format!("shape {k} triangles: {e}"))?;
                let (nv, nt) = (vd.shape().first().copied().unwrap_or(0), td.shape().first().copied().unwrap_or(0));
                let v: Vec<f64> = rows(&g, "vertices", nv as u64, 3, 0, nv as u64)?;
                let t: Vec<u32> = rows(&g, "triangles", nt as u64, 3, 0, nt as u64)?;
                if t.iter().any(|&i| i as usize >= nv) {
                    return Err(format!("shape {k}: triangle index out of range"));
                }
                let vertices = v.chunks(3).map(|c| Vector3::new(c[0], c[1], c[2])).collect();
                let triangles = t.chunks(3).map(|c| [c[0], c[1], c[2]]).collect();
                shapes.push(Shape::Mesh(Arc::new(TriMesh { vertices, triangles })));
            }
            other => return Err(format!("shape {k} has unknown kind {other:?}")),
        }
    }
    Ok((shapes, names))
}
