//! Output stage: `OUT/frames.h5`, one group per frame with bodies sorted by id
//! and contacts sorted by `(body_a, body_b, sub_a, sub_b)`, written with
//! collective MPI-IO; `OUT/frames.xdmf` is rewritten beside it after each frame.
//!
//! Durability: the file is open only while a frame is written. Each frame
//! first reserves its disk space (rank 0, `posix_fallocate`), so that a full
//! disk or quota fails before any collective write; every collective step is
//! agreed; the frame is marked `complete` last and the file closed, so that a
//! crash or a full disk never leaves earlier frames behind unflushed metadata.
//! [`FrameWriter::append`] keeps the complete frames of a damaged file.
//!
//! Layout (ARCHITECTURE.md "Output"), plus the extra datasets marked (+):
//!
//! ```text
//! /meta                attrs: version, solver, dim, n_ranks, config (TOML text)
//! /shapes/<k>          attrs: kind ("sphere" | "mesh"), name;
//!                      sphere: attr radius f64; mesh: vertices V×3 f64, triangles T×3 u32
//! /frames/<step>       attrs: time, step, dt, complete (1, written last)
//!                      (<step> zero-padded to 9 digits)
//!   bodies/  id u64, shape u32, fixed u8, position N×3, orientation N×4 (w,x,y,z),
//!            velocity N×3, angular_velocity N×3,
//!            (+) radius N f64: sphere radius, or bounding radius of a mesh,
//!            (+) mesh_vertices Mv×3 f64: world-frame vertices of every mesh body,
//!                concatenated in id order (only when the scene has meshes),
//!            (+) mesh_triangles Mt×3 u64: triangles indexing mesh_vertices,
//!            (+) mesh_body Mv u64: id of the body each mesh vertex belongs to
//!            (+) mesh_velocity Mv×3, mesh_contact_force Mv×3: the body's
//!                velocity and contact force at each of its mesh vertices
//!            (+) contact_force N×3: sum of the contact forces on the body
//!                (normal part from the column the table names as its
//!                normal force: force_normal, or a solver's field that
//!                stands for it, e.g. force_compatible; plus force_tangent)
//!  contacts/ one dataset per column of the frame's [`ContactTable`]:
//!            body_a u64, body_b u64, (+) sub_a u32, sub_b u32 (sub-region
//!            ids, face/edge/vertex, on a and b), point Nc×3, normal Nc×3
//!            (from a to b), gap Nc, force_normal Nc, force_tangent Nc×3,
//!            then the solver's own fields (`ContactField`s, in the order
//!            the solver gives them; force_normal stays the step's),
//!            (+) line_points 2Nc×3: centre of a, then centre of b (the
//!            image nearest a when periodic) or the contact point for a
//!            wall; (+) line_cells Nc×2 u64: the two rows of each line
//!  walls/    (+) the walls still acting at the frame's time, as quads over
//!            the scene's domain box: vertices 4W×3, quads W×4 u64, index W
//! /series    (+) a row per frame, written with it ([`SeriesRow`]): step,
//!            time, dt, kinetic_energy, contacts (n), wall_force and
//!            wall_position (n×W×3, W = the scene's walls, none without);
//!            wall_id W, wall_normal W×3; chunked, grown a row at a time
//! ```
//!
//! Every dataset carries a `units` attribute ([`unit_of`]).
use super::frames_recover::{copy_complete, inspect, stored_end, Health};
use super::h5raw::{create_group_with_name_heap, reserve, write_rows_collective};
use super::series::{append_series, create_series, truncate_series, SERIES_CHUNK};
pub use super::series::SeriesRow;
use super::redistribute::{redistribute_sorted, FlatRecords};
use super::table::{ColumnData, ContactTable};
use super::frame_view::{self, WallQuad, WALL_ID_BASE};
use super::xdmf::{ColumnInfo, FrameInfo, XdmfIndex};
use super::{agree, H5Context, IoError};
use crate::body::{Bodies, Shape};
use crate::scene::Scene;
use hdf5::types::VarLenUnicode;
use hdf5::H5Type;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use std::path::{Path, PathBuf};

/// Bytes of /frames' name heap (see [`create_group_with_name_heap`]).
pub const FRAMES_NAME_HEAP: usize = 1 << 20;

/// Half the frame names one node of /frames' name tree holds (HDF5's
/// "symbol table leaf K"; its default, 4, splits a node every four frames).
/// A split writes a new node past the file's recorded end: rare splits
/// leave a killed run few moments where its frames cannot be listed.
pub const FRAMES_NAMES_PER_HALF_NODE: u32 = 256;

/// Name of the group of frame `step` under `/frames`: zero-padded so that
/// lexical order is time order.
pub fn frame_name(step: u64) -> String {
    format!("{step:09}")
}

/// Writes `OUT/frames.h5` (and `OUT/frames.xdmf`) frame by frame. Every method
/// is collective over the communicator given to [`FrameWriter::create`].
pub struct FrameWriter {
    comm: SimpleCommunicator,
    path: PathBuf,
    xdmf_path: PathBuf,
    shapes: Vec<Shape>,
    /// The frames written so far, as frames.xdmf lists them (kept by rank
    /// 0, which writes the file; empty elsewhere, where it still says
    /// whether the frames hold mesh surfaces).
    index: XdmfIndex,
    /// The scene's walls (positions at t = 0, motions, `until`), or as the
    /// World last moved them ([`FrameWriter::set_walls`]).
    walls: Vec<crate::scene::Wall>,
    periodic: Option<crate::scene::Periodic>,
}

impl FrameWriter {
    /// Collective: creates (or truncates) `dir/frames.h5` with `/meta` and
    /// `/shapes`, and an empty `dir/frames.xdmf`. `dir` is created if missing;
    /// nothing else in it is touched.
    pub fn create<C: Communicator>(comm: &C, dir: &Path, scene: &Scene) -> Result<FrameWriter, IoError> {
        let comm = comm.duplicate();
        let path = dir.join("frames.h5");
        let xdmf_path = dir.join("frames.xdmf");
        let r = if comm.rank() == 0 {
            std::fs::create_dir_all(dir).map_err(|e| IoError::fs(dir, "create the output directory", e))
        } else {
            Ok(())
        };
        agree(&comm, r)?;
        let file = hdf5::File::with_options()
            .with_fapl(|p| p.mpio(comm.as_raw(), None))
            .with_fcpl(|p| p.sym_k(16, FRAMES_NAMES_PER_HALF_NODE))
            .create(&path)
            .ctx(&path, "creating the file (MPI-IO)");
        let file = agree(&comm, file)?;
        let w = Self::new(comm, path, xdmf_path, scene);
        let r = w.write_header(&file, scene);
        agree(&w.comm, r)?;
        w.close_file(file)?;
        let r = w.update_xdmf();
        agree(&w.comm, r)?;
        Ok(w)
    }

    fn new(comm: SimpleCommunicator, path: PathBuf, xdmf_path: PathBuf, scene: &Scene) -> Self {
        let has_meshes = scene.shapes.iter().any(|s| matches!(s, Shape::Mesh(_)));
        let h5_name = path.file_name().and_then(|s| s.to_str()).unwrap_or("frames.h5");
        FrameWriter {
            comm,
            index: XdmfIndex::new(h5_name, has_meshes),
            path,
            xdmf_path,
            shapes: scene.shapes.clone(),
            walls: scene.walls.clone(),
            periodic: scene.periodic.clone(),
        }
    }

    /// Collective: opens the file to write (it is closed between frames).
    fn open_file(&self, what: &str) -> Result<hdf5::File, IoError> {
        let file = hdf5::File::with_options().with_fapl(|p| p.mpio(self.comm.as_raw(), None)).open_rw(&self.path).ctx(&self.path, what);
        agree(&self.comm, file)
    }

    /// Collective: closes the file (every group and dataset of it dropped).
    fn close_file(&self, file: hdf5::File) -> Result<(), IoError> {
        let r = file.close().ctx(&self.path, "closing");
        agree(&self.comm, r)
    }

    /// Collective: reopens `dir/frames.h5` of an earlier run to continue it
    /// after a restart from `after_step`: frames past that step (written
    /// after the checkpoint, before the run stopped) are removed, since the
    /// resumed run writes them again; earlier frames are kept. A missing
    /// file is started anew and a damaged one (truncated, a torn frame) is
    /// replaced by a new file holding its complete frames, the damaged one
    /// kept beside it; either is said in one line.
    pub fn append<C: Communicator>(comm: &C, dir: &Path, scene: &Scene, after_step: u64) -> Result<FrameWriter, IoError> {
        let comm = comm.duplicate();
        let path = dir.join("frames.h5");
        // Rank 0 inspects the file alone: damage is repaired, never an
        // error on every rank that blocks a restart from a good checkpoint.
        let (mut code, mut reason) = (0u8, String::new());
        if comm.rank() == 0 {
            match inspect(&path, after_step) {
                Health::Intact => {}
                Health::Missing => code = 1,
                Health::Damaged(why) => (code, reason) = (2, why),
            }
        }
        comm.process_at_rank(0).broadcast_into(&mut code);
        match code {
            0 => match Self::reopen(comm.duplicate(), dir, scene, after_step) {
                // Damage that the inspection missed (a frame past the
                // checkpoint that cannot be removed): repaired like the rest.
                Err(e) if any_rank(&comm, matches!(e, IoError::Corrupt { .. })) => {
                    Self::salvage(comm, dir, scene, after_step, &e.to_string())
                }
                r => r,
            },
            1 => {
                let w = Self::create(&comm, dir, scene)?;
                if comm.rank() == 0 {
                    log::warn!(
                        "{}: missing; earlier frames are lost, the new file holds the frames after step {after_step}",
                        path.display()
                    );
                }
                Ok(w)
            }
            _ => Self::salvage(comm, dir, scene, after_step, &reason),
        }
    }

    /// Collective: opens an intact file, drops the frames past `after_step`
    /// and lists the others.
    fn reopen(comm: SimpleCommunicator, dir: &Path, scene: &Scene, after_step: u64) -> Result<FrameWriter, IoError> {
        let mut w = Self::new(comm, dir.join("frames.h5"), dir.join("frames.xdmf"), scene);
        let file = w.open_file("reopening the file to continue it (MPI-IO)")?;
        let path = &w.path;
        let r = (|| -> Result<Vec<FrameInfo>, IoError> {
            let g = file.group("frames").ctx(path, "opening /frames")?;
            let mut names = g.member_names().ctx(path, "listing /frames")?;
            names.sort();
            let mut frames = Vec::new();
            for name in names {
                let step: u64 = name.parse().map_err(|_| IoError::corrupt(path, format!("frame group {name}")))?;
                if step > after_step {
                    g.unlink(&name).map_err(|e| IoError::corrupt(path, format!("frame {name} past the checkpoint cannot be removed: {e}")))?;
                    continue;
                }
                let f = g.group(&name).ctx(path, "opening a frame")?;
                let time: f64 = f.attr("time").and_then(|a| a.read_scalar()).ctx(path, "reading a frame time")?;
                frames.push(frame_info_of(&f, format!("/frames/{name}"), time).ctx(path, "reading a frame's datasets")?);
            }
            Ok(frames)
        })();
        let frames = agree(&w.comm, r)?;
        if w.comm.rank() == 0 {
            frames.iter().for_each(|f| w.index.push(f));
        }
        // Rows past the checkpoint are written again by the resumed run.
        let r = truncate_series(&file, after_step, &w.walls, w.comm.rank() == 0).ctx(&w.path, "cutting /series back to the checkpoint");
        agree(&w.comm, r)?;
        w.close_file(file)?;
        let r = w.update_xdmf();
        agree(&w.comm, r)?;
        Ok(w)
    }

    /// Collective: moves a damaged file aside, starts a new one and copies
    /// into it (rank 0) every complete frame up to `after_step`.
    fn salvage(comm: SimpleCommunicator, dir: &Path, scene: &Scene, after_step: u64, reason: &str) -> Result<FrameWriter, IoError> {
        let path = dir.join("frames.h5");
        let aside = (1..)
            .map(|k| dir.join(if k == 1 { "frames.h5.damaged".to_string() } else { format!("frames.h5.damaged.{k}") }))
            .find(|p| !p.exists())
            .unwrap_or_default();
        let r = if comm.rank() == 0 {
            std::fs::rename(&path, &aside).map_err(|e| IoError::fs(&path, format!("move the damaged file aside to {}", aside.display()), e))
        } else {
            Ok(())
        };
        agree(&comm, r)?;
        drop(Self::create(&comm, dir, scene)?);
        let r = if comm.rank() == 0 { copy_complete(&aside, &path, after_step) } else { Ok((Vec::new(), 0)) };
        let (kept, listed) = agree(&comm, r)?;
        let w = Self::reopen(comm, dir, scene, after_step)?;
        if w.comm.rank() == 0 {
            let steps = match (kept.first(), kept.last()) {
                (Some(a), Some(b)) => format!(" (steps {}..{})", a.parse::<u64>().unwrap_or(0), b.parse::<u64>().unwrap_or(0)),
                _ => String::new(),
            };
            log::warn!(
                "{} was damaged ({reason}): kept its {} complete frames{steps} of {listed} up to step {after_step} in a new file; the damaged file is {}",
                path.display(),
                kept.len(),
                aside.display()
            );
        }
        Ok(w)
    }

    /// Path of the HDF5 file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn write_header(&self, file: &hdf5::File, scene: &Scene) -> Result<(), IoError> {
        let p = &self.path;
        let meta = file.create_group("meta").ctx(p, "creating /meta")?;
        str_attr(&meta, "version", env!("CARGO_PKG_VERSION")).ctx(p, "writing /meta version")?;
        str_attr(&meta, "solver", scene.simulation.solver.name()).ctx(p, "writing /meta solver")?;
        scalar_attr(&meta, "dim", &scene.simulation.dim).ctx(p, "writing /meta dim")?;
        scalar_attr(&meta, "n_ranks", &(self.comm.size() as u32)).ctx(p, "writing /meta n_ranks")?;
        str_attr(&meta, "config", &scene.config_text).ctx(p, "writing /meta config")?;
        str_attr(&meta, "run_id", &scene.run_id).ctx(p, "writing /meta run_id")?;
        str_attr(&meta, "units", "SI: m, s, kg, N, J, rad; each dataset's units attribute names its unit").ctx(p, "writing /meta units")?;
        write_shapes(&self.comm, file, &scene.shapes, &scene.shape_names).ctx(p, "writing /shapes")?;
        // write_shapes is shared with checkpoints; the units are the frames'.
        for (k, s) in scene.shapes.iter().enumerate() {
            if matches!(s, Shape::Mesh(_)) {
                let g = file.group(&format!("shapes/{k}")).ctx(p, "opening a shape")?;
                for name in ["vertices", "triangles"] {
                    g.dataset(name).and_then(|d| str_attr(&d, "units", unit_of(name))).ctx(p, "writing a shape's units")?;
                }
            }
        }
        // 16 bytes a frame name: one heap block up to 65,536 frames.
        create_group_with_name_heap(file, "frames", FRAMES_NAME_HEAP).ctx(p, "creating /frames")?;
        create_series(file, &self.walls, self.comm.rank() == 0).ctx(p, "creating /series")?;
        Ok(())
    }

    /// Collective: writes frame `step` from the first `n_owned` entries of
    /// `bodies` on each rank (entries after them are ghosts and are ignored)
    /// and this rank's owned `contacts`, closes the file and rewrites the XDMF.
    pub fn write_frame(
        &mut self,
        step: u64,
        time: f64,
        dt: f64,
        bodies: &Bodies,
        n_owned: usize,
        contacts: ContactTable,
    ) -> Result<(), IoError> {
        self.write_frame_and_series(step, time, dt, bodies, n_owned, contacts, None)
    }

    /// The walls as the World moves them now: a servo wall's motion is
    /// known only to the World (the frames draw the walls from these).
    pub fn set_walls(&mut self, walls: &[crate::scene::Wall]) {
        self.walls.clone_from_slice(walls);
    }

    /// The periodic cell as it is now (a stress-controlled cell's period
    /// changes): the frame's box and the contacts drawn across its faces.
    pub fn set_periodic(&mut self, periodic: Option<&crate::scene::Periodic>) {
        self.periodic = periodic.cloned();
    }

    /// Collective: [`FrameWriter::write_frame`], and `row` appended to
    /// `/series` in the same write (a row per frame; only rank 0's is
    /// written, the others' may be empty).
    #[allow(clippy::too_many_arguments)]
    pub fn write_frame_and_series(
        &mut self,
        step: u64,
        time: f64,
        dt: f64,
        bodies: &Bodies,
        n_owned: usize,
        contacts: ContactTable,
        row: Option<&SeriesRow>,
    ) -> Result<(), IoError> {
        let r = self.check_input(bodies, n_owned);
        let r = r.and_then(|()| match row {
            Some(row) if self.comm.rank() == 0 && (row.wall_force.len() != self.walls.len() || row.wall_position.len() != self.walls.len()) => {
                Err(IoError::Invalid { path: self.path.clone(), what: format!("a series row for {} walls, the scene has {}", row.wall_force.len(), self.walls.len()) })
            }
            _ => Ok(()),
        });
        agree(&self.comm, r)?;

        // Bodies: key id; u = [id, shape, fixed]; f = pos, quat (w,x,y,z), v, w.
        let mut recs = FlatRecords::with_capacity(3, 13, n_owned);
        for i in 0..n_owned {
            let q = bodies.orientation[i].quaternion();
            let (p, v, w) = (bodies.position[i], bodies.velocity[i], bodies.angular_velocity[i]);
            let f = [p.x, p.y, p.z, q.w, q.i, q.j, q.k, v.x, v.y, v.z, w.x, w.y, w.z];
            recs.push(bodies.id[i], &[bodies.id[i], bodies.shape[i] as u64, bodies.fixed[i] as u64], &f);
        }
        let b = redistribute_sorted(&self.comm, recs);
        // The table is consumed by its sort; the force sums' buffers are
        // gone before the lines are fetched (the peak of a large frame).
        let c = contacts.sorted(&self.comm);
        let force = self.body_forces(&b, &c.0);
        let lines = self.contact_lines(&b, &c.0);
        let mut view = BodyView { contact_force: force, mesh_velocity: Vec::new(), mesh_force: Vec::new() };

        // Mesh vertices/triangles of this rank's block, and their global offsets.
        let (mut mv, mut mt, mut mb) = (Vec::<f64>::new(), Vec::<u64>::new(), Vec::<u64>::new());
        let mut local_tris: Vec<[u64; 3]> = Vec::new();
        let rb = &b.records;
        for i in 0..rb.len() {
            let u = rb.u_row(i);
            if let Shape::Mesh(m) = &self.shapes[u[1] as usize] {
                let f = rb.f_row(i);
                let p = Vector3::new(f[0], f[1], f[2]);
                let q = UnitQuaternion::new_unchecked(Quaternion::new(f[3], f[4], f[5], f[6]));
                let base = (mv.len() / 3) as u64;
                let fb = view.contact_force[i];
                for v in &m.vertices {
                    let x = p + q * v;
                    mv.extend_from_slice(&[x.x, x.y, x.z]);
                    mb.push(u[0]);
                    view.mesh_velocity.extend_from_slice(&f[7..10]);
                    view.mesh_force.extend_from_slice(fb.as_slice());
                }
                local_tris.extend(m.triangles.iter().map(|t| t.map(|k| base + k as u64)));
            }
        }
        let (v_off, v_tot) = scan(&self.comm, (mv.len() / 3) as u64);
        let (t_off, t_tot) = scan(&self.comm, local_tris.len() as u64);
        for t in &local_tris {
            mt.extend(t.iter().map(|k| k + v_off));
        }

        let (lo, hi) = self.body_box(bodies, n_owned);
        let quads = frame_view::wall_quads(&self.walls, lo, hi, time);
        let walls: Vec<&WallQuad> = quads.iter().filter(|w| frame_view::wall_shown(w.until, time, dt)).collect();
        let file = self.open_file("reopening the file for the next frame (MPI-IO)")?;
        let bytes = frame_bytes(b.total, (v_tot, t_tot), &c.0, c.2, walls.len() as u64, self.walls.len() as u64);
        let r = if self.comm.rank() == 0 { self.reserve(bytes, step) } else { Ok(()) };
        agree(&self.comm, r)?;
        {
            // Each collective step is agreed before the next, so a rank whose
            // write failed (MPI-IO often tells one rank only) never leaves the
            // others waiting in it.
            let st = Steps { comm: &self.comm, path: &self.path, what: format!("writing frame {}", frame_name(step)) };
            let g = self.write_frame_group(&file, &st, step, time, dt, &b, &c, (&mv, &mt, &mb), (v_off, v_tot, t_off, t_tot))?;
            let root = self.comm.rank() == 0;
            write_view(&g, &st, &lines, &view, &walls, (v_off, v_tot), (c.1, c.2), b.offset, b.total, root)?;
            if let Some(row) = row {
                append_series(&file, &st, row, self.walls.len(), root)?;
            }
            // Written last: a frame without it is torn (FrameWriter::append).
            st.ok(scalar_attr(&g, "complete", &1u8))?;
        }
        self.close_file(file)?;
        if self.comm.rank() == 0 {
            let (table, _, n_contacts) = &c;
            self.index.push(&FrameInfo {
                group: format!("/frames/{}", frame_name(step)),
                time,
                n_bodies: b.total,
                n_mesh_vertices: v_tot,
                n_mesh_triangles: t_tot,
                n_contacts: *n_contacts,
                contact_columns: table.columns.iter().map(ColumnInfo::of).collect(),
                lines: true,
                body_extras: true,
                n_walls: Some(walls.len() as u64),
            });
        }
        let r = self.update_xdmf();
        agree(&self.comm, r)
    }

    fn check_input(&self, bodies: &Bodies, n_owned: usize) -> Result<(), IoError> {
        if n_owned > bodies.len() {
            return Err(IoError::Invalid {
                path: self.path.clone(),
                what: format!("n_owned = {n_owned} but only {} bodies", bodies.len()),
            });
        }
        for i in 0..n_owned {
            if bodies.shape[i] as usize >= self.shapes.len() {
                return Err(IoError::Invalid {
                    path: self.path.clone(),
                    what: format!("body {} has shape {} but the scene has {} shapes", bodies.id[i], bodies.shape[i], self.shapes.len()),
                });
            }
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    /// The bounding box of every rank's owned bodies (their bounding
    /// spheres), the periodic box on periodic axes. Collective.
    fn body_box(&self, bodies: &Bodies, n_owned: usize) -> (Vector3<f64>, Vector3<f64>) {
        let (mut lo, mut hi) = (Vector3::repeat(f64::INFINITY), Vector3::repeat(f64::NEG_INFINITY));
        for i in 0..n_owned {
            let r = self.shapes[bodies.shape[i] as usize].bounding_radius();
            lo = lo.inf(&bodies.position[i].add_scalar(-r));
            hi = hi.sup(&bodies.position[i].add_scalar(r));
        }
        crate::parallel::domain::global_box(&self.comm, lo, hi, self.periodic.as_ref())
    }

    /// Rank 0: allocates the disk space of a frame of `bytes` after the
    /// end of the file's allocated space, which the superblock records since
    /// the file was closed after the last frame.
    fn reserve(&self, bytes: u64, step: u64) -> Result<(), IoError> {
        let what = format!("reserve {bytes} bytes for frame {}", frame_name(step));
        let end = stored_end(&self.path).ok_or_else(|| IoError::corrupt(&self.path, "unreadable superblock"))?;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&self.path)
            .and_then(|f| reserve(&f, end + bytes))
            .map_err(|e| IoError::fs(&self.path, what, e))
    }

    #[allow(clippy::too_many_arguments)]
    fn write_frame_group(
        &self,
        file: &hdf5::File,
        st: &Steps,
        step: u64,
        time: f64,
        dt: f64,
        b: &super::redistribute::Redistributed,
        c: &(ContactTable, u64, u64),
        mesh: (&[f64], &[u64], &[u64]),
        moff: (u64, u64, u64, u64),
    ) -> Result<hdf5::Group, IoError> {
        let g = st.ok(file.group("frames").and_then(|f| f.create_group(&frame_name(step))))?;
        st.ok(scalar_attr(&g, "time", &time))?;
        st.ok(scalar_attr(&g, "step", &step))?;
        st.ok(scalar_attr(&g, "dt", &dt))?;

        let rb = &b.records;
        let n = rb.len();
        let (off, tot) = (b.offset, b.total);
        let bg = st.ok(g.create_group("bodies"))?;
        let col = |k: usize| -> Vec<u64> { (0..n).map(|i| rb.u_row(i)[k]).collect() };
        let fcols = |a: usize, m: usize| -> Vec<f64> { (0..n).flat_map(|i| rb.f_row(i)[a..a + m].to_vec()).collect() };
        st.ok(put_unit(&bg, "id", tot, 1, off, &col(0)))?;
        st.ok(put_unit(&bg, "shape", tot, 1, off, &col(1).iter().map(|&s| s as u32).collect::<Vec<_>>()))?;
        st.ok(put_unit(&bg, "fixed", tot, 1, off, &col(2).iter().map(|&s| s as u8).collect::<Vec<_>>()))?;
        st.ok(put_unit(&bg, "position", tot, 3, off, &fcols(0, 3)))?;
        st.ok(put_unit(&bg, "orientation", tot, 4, off, &fcols(3, 4)))?;
        st.ok(put_unit(&bg, "velocity", tot, 3, off, &fcols(7, 3)))?;
        st.ok(put_unit(&bg, "angular_velocity", tot, 3, off, &fcols(10, 3)))?;
        let radius: Vec<f64> = col(1).iter().map(|&s| self.shapes[s as usize].bounding_radius()).collect();
        st.ok(put_unit(&bg, "radius", tot, 1, off, &radius))?;
        if self.index.has_meshes() {
            let (v_off, v_tot, t_off, t_tot) = moff;
            st.ok(put_unit(&bg, "mesh_vertices", v_tot, 3, v_off, mesh.0))?;
            st.ok(put_unit(&bg, "mesh_triangles", t_tot, 3, t_off, mesh.1))?;
            st.ok(put_unit(&bg, "mesh_body", v_tot, 1, v_off, mesh.2))?;
        }

        let (table, off, tot) = c;
        let cg = st.ok(g.create_group("contacts"))?;
        for col in &table.columns {
            st.ok(match &col.data {
                ColumnData::U64(v) => put_unit(&cg, &col.name, *tot, col.width, *off, v),
                ColumnData::U32(v) => put_unit(&cg, &col.name, *tot, col.width, *off, v),
                ColumnData::F64(v) => put_unit(&cg, &col.name, *tot, col.width, *off, v),
            })?;
        }
        Ok(g)
    }

    /// Both ends of the line of each contact of the sorted slab `c`:
    /// centre of a, then centre of b or, for a wall, the contact point.
    fn contact_lines(&self, b: &super::redistribute::Redistributed, c: &ContactTable) -> Vec<f64> {
        let (ia, ib) = (u64_column(c, "body_a"), u64_column(c, "body_b"));
        let id = |v: Option<&[u64]>, k: usize| v.map_or(0, |v| v[k]);
        let point = f64_column(c, "point");
        let other = |k: usize| if id(ib, k) >= WALL_ID_BASE { id(ia, k) } else { id(ib, k) };
        let pa = frame_view::fetch(&self.comm, b, c.rows, |k| id(ia, k), 0..3);
        let pb = frame_view::fetch(&self.comm, b, c.rows, other, 0..3);
        let mut out = Vec::with_capacity(6 * c.rows);
        for k in 0..c.rows {
            let a = Vector3::from_column_slice(&pa[3 * k..3 * k + 3]);
            let e = if id(ib, k) >= WALL_ID_BASE {
                point.map_or_else(Vector3::zeros, |p| Vector3::from_column_slice(&p[3 * k..3 * k + 3]))
            } else {
                frame_view::nearest_image(self.periodic.as_ref(), Vector3::from_column_slice(&pb[3 * k..3 * k + 3]), &a)
            };
            out.extend_from_slice(&[a.x, a.y, a.z, e.x, e.y, e.z]);
        }
        out
    }

    /// Contact force summed on each body of the slab `b` from the sorted
    /// contacts `c` (on b: f_n·normal + f_t, on a its opposite; walls take
    /// no share), f_n and f_t from the table's force columns.
    fn body_forces(&self, b: &super::redistribute::Redistributed, c: &ContactTable) -> Vec<Vector3<f64>> {
        let (ia, ib) = (u64_column(c, "body_a"), u64_column(c, "body_b"));
        let id = |v: Option<&[u64]>, k: usize| v.map_or(0, |v| v[k]);
        let normal = f64_column(c, "normal");
        let f_n = f64_column(c, &c.normal_force);
        let f_t = f64_column(c, &c.tangent_force);
        let v3 = |v: Option<&[f64]>, k: usize| v.map_or_else(Vector3::zeros, |v| Vector3::from_column_slice(&v[3 * k..3 * k + 3]));
        // Item 2k is the force on a of contact k, item 2k + 1 that on b.
        let item = |i: usize| {
            let k = i / 2;
            let f = v3(normal, k) * f_n.map_or(0.0, |v| v[k]) + v3(f_t, k);
            if i % 2 == 0 {
                Some((id(ia, k), -f))
            } else {
                (id(ib, k) < WALL_ID_BASE).then(|| (id(ib, k), f))
            }
        };
        frame_view::sum_to_bodies(&self.comm, b, 2 * c.rows, item)
    }

    /// Rank 0 rewrites the XDMF index (temp file + rename).
    fn update_xdmf(&self) -> Result<(), IoError> {
        if self.comm.rank() != 0 {
            return Ok(());
        }
        self.index.write(&self.xdmf_path)
    }

    /// Collective: ends the output; rank 0 syncs the file and the index to
    /// disk (between frames they are closed, not synced: a killed process
    /// loses nothing, a power cut may lose the last frames).
    pub fn close(self) -> Result<(), IoError> {
        let r = if self.comm.rank() == 0 {
            [&self.path, &self.xdmf_path]
                .into_iter()
                .try_for_each(|p| std::fs::File::open(p).and_then(|f| f.sync_all()).map_err(|e| IoError::fs(p, "sync to disk", e)))
        } else {
            Ok(())
        };
        agree(&self.comm, r)
    }
}

/// The per-body and per-mesh-vertex extras of a frame, in slab order.
struct BodyView {
    contact_force: Vec<Vector3<f64>>,
    mesh_velocity: Vec<f64>,
    mesh_force: Vec<f64>,
}

/// Values of float column `name` (None if the table lacks it: zeros).
fn f64_column<'a>(c: &'a ContactTable, name: &str) -> Option<&'a [f64]> {
    match c.column(name).map(|c| &c.data) {
        Some(ColumnData::F64(v)) => Some(v),
        _ => None,
    }
}

/// Values of integer column `name` (None if the table lacks it: zeros).
fn u64_column<'a>(c: &'a ContactTable, name: &str) -> Option<&'a [u64]> {
    match c.column(name).map(|c| &c.data) {
        Some(ColumnData::U64(v)) => Some(v),
        _ => None,
    }
}

/// Collective: the datasets ParaView draws beyond the bodies (module doc),
/// each step agreed through `ok`.
#[allow(clippy::too_many_arguments)]
fn write_view(
    g: &hdf5::Group,
    st: &Steps,
    lines: &[f64],
    view: &BodyView,
    walls: &[&WallQuad],
    (v_off, v_tot): (u64, u64),
    (c_off, c_tot): (u64, u64),
    b_off: u64,
    b_tot: u64,
    root: bool,
) -> Result<(), IoError> {
    let bg = st.ok(g.group("bodies"))?;
    let cf: Vec<f64> = view.contact_force.iter().flat_map(|f| [f.x, f.y, f.z]).collect();
    st.ok(put_unit(&bg, "contact_force", b_tot, 3, b_off, &cf))?;
    if bg.link_exists("mesh_vertices") {
        st.ok(put_unit(&bg, "mesh_velocity", v_tot, 3, v_off, &view.mesh_velocity))?;
        st.ok(put_unit(&bg, "mesh_contact_force", v_tot, 3, v_off, &view.mesh_force))?;
    }
    let cg = st.ok(g.group("contacts"))?;
    st.ok(put_unit(&cg, "line_points", 2 * c_tot, 3, 2 * c_off, lines))?;
    let cells: Vec<u64> = (0..lines.len() as u64 / 6).flat_map(|k| [2 * (c_off + k), 2 * (c_off + k) + 1]).collect();
    st.ok(put_unit(&cg, "line_cells", c_tot, 2, c_off, &cells))?;
    // Walls: a few quads, written by rank 0 (the others select nothing).
    let wg = st.ok(g.create_group("walls"))?;
    let nw = walls.len() as u64;
    let pick = |v: Vec<f64>| if root { v } else { Vec::new() };
    let verts = pick(walls.iter().flat_map(|w| w.corners.iter().flat_map(|c| [c.x, c.y, c.z])).collect());
    let quads: Vec<u64> = if root { (0..4 * nw).collect() } else { Vec::new() };
    let index: Vec<u64> = if root { walls.iter().map(|w| w.index).collect() } else { Vec::new() };
    st.ok(put_unit(&wg, "vertices", 4 * nw, 3, 0, &verts))?;
    st.ok(put_unit(&wg, "quads", nw, 4, 0, &quads))?;
    st.ok(put_unit(&wg, "index", nw, 1, 0, &index))
}

/// Agrees across ranks on each collective step of writing a frame.
pub(super) struct Steps<'a> {
    comm: &'a SimpleCommunicator,
    path: &'a Path,
    what: String,
}

impl Steps<'_> {
    pub(super) fn ok<T>(&self, r: hdf5::Result<T>) -> Result<T, IoError> {
        agree(self.comm, r.map_err(|e| IoError::hdf5(self.path, self.what.as_str(), e)))
    }
}

/// Bytes a frame adds to the file: its data, exactly, plus a generous
/// allowance for the HDF5 headers of its groups and datasets.
fn frame_bytes(n_bodies: u64, (n_vertices, n_triangles): (u64, u64), contacts: &ContactTable, n_contacts: u64, n_walls: u64, n_series_walls: u64) -> u64 {
    // id, shape, fixed, position, orientation, velocity, angular_velocity,
    // radius, contact_force.
    let bodies = n_bodies * (8 + 4 + 1 + 24 + 32 + 24 + 24 + 8 + 24);
    // vertices, mesh_body, mesh_velocity, mesh_contact_force; triangles.
    let meshes = n_vertices * (24 + 8 + 24 + 24) + n_triangles * 24;
    let width: u64 = contacts
        .columns
        .iter()
        .map(|c| {
            let size = match c.data {
                ColumnData::U64(_) | ColumnData::F64(_) => 8,
                ColumnData::U32(_) => 4,
            };
            size * c.width as u64
        })
        .sum();
    // The columns, line_points (two rows of 3), line_cells (2 u64).
    let contacts_bytes = n_contacts * (width + 48 + 16);
    let walls = n_walls * (96 + 32 + 8);
    // A new chunk of each series dataset every SERIES_CHUNK rows.
    let series = SERIES_CHUNK as u64 * (5 * 8 + n_series_walls * 48);
    let headers = (24 + contacts.columns.len() as u64) * 2048 + 16384 + series;
    let data = bodies + meshes + contacts_bytes + walls;
    data + data / 8 + headers
}

/// Exclusive prefix sum and total of one count per rank.
pub(crate) fn scan<C: Communicator>(comm: &C, n: u64) -> (u64, u64) {
    let mut all = vec![0u64; comm.size() as usize];
    comm.all_gather_into(&n, &mut all[..]);
    let r = comm.rank() as usize;
    (all[..r].iter().sum(), all.iter().sum())
}

/// SI unit of a frames.h5 dataset, by its name: the `units` attribute every
/// dataset of the file carries ("1": dimensionless, also ids, indices,
/// flags and unit vectors). A new output field with a unit needs its name
/// here (force fields are found by their name: `force_*`, `*_force`).
pub fn unit_of(name: &str) -> &'static str {
    match name {
        "position" | "radius" | "mesh_vertices" | "point" | "gap" | "line_points" | "vertices" | "wall_position" | "box_lo" | "box_hi" => "m",
        "velocity" | "mesh_velocity" => "m/s",
        "angular_velocity" => "rad/s",
        "time" | "dt" => "s",
        "kinetic_energy" => "J",
        "stress" | "pressure" => "Pa",
        "volume" => "m^3",
        n if n.starts_with("force_") || n.ends_with("_force") => "N",
        _ => "1",
    }
}

/// [`put`], then the dataset's `units` attribute ([`unit_of`]).
pub(super) fn put_unit<T: H5Type>(g: &hdf5::Group, name: &str, total: u64, cols: usize, offset: u64, data: &[T]) -> hdf5::Result<()> {
    put(g, name, total, cols, offset, data)?;
    let ds = g.dataset(name)?;
    str_attr(&ds, "units", unit_of(name))
}

/// Collective: creates dataset `name` of `total` rows (1-D if `cols == 1`,
/// else `total × cols`) and writes this rank's rows at `offset`.
pub(crate) fn put<T: H5Type>(g: &hdf5::Group, name: &str, total: u64, cols: usize, offset: u64, data: &[T]) -> hdf5::Result<()> {
    let ds = if cols == 1 {
        g.new_dataset::<T>().shape([total as usize]).create(name)?
    } else {
        g.new_dataset::<T>().shape([total as usize, cols]).create(name)?
    };
    write_rows_collective(&ds, offset, data, cols)
}

/// Writes a scalar attribute (collective in parallel HDF5: same value on all ranks).
pub(crate) fn scalar_attr<T: H5Type>(loc: &hdf5::Location, name: &str, v: &T) -> hdf5::Result<()> {
    loc.new_attr::<T>().create(name)?.write_scalar(v)
}

/// Writes a variable-length UTF-8 string attribute.
pub(crate) fn str_attr(loc: &hdf5::Location, name: &str, s: &str) -> hdf5::Result<()> {
    let v: VarLenUnicode = s.replace('\0', "").parse().map_err(|e| hdf5::Error::from(format!("{e}")))?;
    loc.new_attr::<VarLenUnicode>().create(name)?.write_scalar(&v)
}

/// Reads a variable-length string attribute.
pub(crate) fn read_str_attr(loc: &hdf5::Location, name: &str) -> hdf5::Result<String> {
    Ok(loc.attr(name)?.read_scalar::<VarLenUnicode>()?.as_str().to_owned())
}

/// Collective: writes `/shapes/<k>` for every shape (data written by rank 0).
pub(crate) fn write_shapes<C: Communicator>(comm: &C, file: &hdf5::File, shapes: &[Shape], names: &[String]) -> hdf5::Result<()> {
    let sg = file.create_group("shapes")?;
    let root = comm.rank() == 0;
    for (k, s) in shapes.iter().enumerate() {
        let g = sg.create_group(&k.to_string())?;
        str_attr(&g, "name", names.get(k).map(|s| s.as_str()).unwrap_or(""))?;
        match s {
            Shape::Sphere { radius } => {
                str_attr(&g, "kind", "sphere")?;
                scalar_attr(&g, "radius", radius)?;
            }
            Shape::Mesh(m) => {
                str_attr(&g, "kind", "mesh")?;
                let v: Vec<f64> = if root { m.vertices.iter().flat_map(|v| [v.x, v.y, v.z]).collect() } else { vec![] };
                let t: Vec<u32> = if root { m.triangles.iter().flatten().copied().collect() } else { vec![] };
                put(&g, "vertices", m.vertices.len() as u64, 3, 0, &v)?;
                put(&g, "triangles", m.triangles.len() as u64, 3, 0, &t)?;
            }
        }
    }
    Ok(())
}

/// What the XDMF index needs about a frame group already in the file (a
/// continued run): counts from the dataset shapes, the contact columns from
/// the contacts group, and which of the newer datasets it has.
fn frame_info_of(f: &hdf5::Group, group: String, time: f64) -> hdf5::Result<FrameInfo> {
    use hdf5::types::{IntSize, TypeDescriptor};
    let rows = |g: &hdf5::Group, n: &str| g.dataset(n).map(|d| d.shape().first().copied().unwrap_or(0) as u64).unwrap_or(0);
    let b = f.group("bodies")?;
    let mut info = FrameInfo {
        group,
        time,
        n_bodies: rows(&b, "id"),
        n_mesh_vertices: rows(&b, "mesh_vertices"),
        n_mesh_triangles: rows(&b, "mesh_triangles"),
        n_contacts: 0,
        contact_columns: Vec::new(),
        lines: false,
        body_extras: b.link_exists("contact_force"),
        n_walls: f.link_exists("walls").then(|| f.group("walls").map(|w| rows(&w, "index"))).transpose()?,
    };
    if f.link_exists("contacts") {
        let c = f.group("contacts")?;
        info.n_contacts = rows(&c, "body_a");
        info.lines = c.link_exists("line_points") && c.link_exists("line_cells");
        let mut names = c.member_names()?;
        // Columns in the order a frame writes them: the key columns first.
        let key = ["body_a", "body_b", "sub_a", "sub_b"];
        names.sort_by_key(|n| (key.iter().position(|k| k == n).unwrap_or(key.len()), n.clone()));
        for name in names.into_iter().filter(|n| !n.starts_with("line_")) {
            let d = c.dataset(&name)?;
            let width = d.shape().get(1).copied().unwrap_or(1);
            let (num, prec) = match d.dtype()?.to_descriptor()? {
                TypeDescriptor::Float(_) => ("Float", 8),
                TypeDescriptor::Unsigned(IntSize::U4) => ("UInt", 4),
                TypeDescriptor::Unsigned(IntSize::U1) => ("UChar", 1),
                _ => ("Int", 8),
            };
            info.contact_columns.push(ColumnInfo { name, width, num, prec });
        }
    }
    Ok(info)
}


/// True on every rank when `mine` is true on any (collective).
fn any_rank<C: Communicator>(comm: &C, mine: bool) -> bool {
    let mut any = 0u8;
    comm.all_reduce_into(&(mine as u8), &mut any, mpi::collective::SystemOperation::max());
    any == 1
}
