//! Start-up of a fresh run: every rank creates (generators) or reads (files)
//! only the bodies of its own region, so no rank ever holds the whole scene.
//!
//! 1. Files: each rank keeps a share of the rows (frames.h5: its hyperslab;
//!    text files: every P-th row of a streamed pass).
//! 2. Rank boxes: the process grid over the scene's box, which comes from
//!    the generators' analytic bounds, the explicit bodies and a reduction
//!    of the file bodies' bounds: no body positions are gathered anywhere.
//! 3. Generators: each rank computes the bodies of its own box (the random
//!    pack: the cells it owns, colour by colour, trading the bodies of its
//!    boundary cells with the ranks owning their neighbours).
//! 4. One migration moves the file bodies to their owners; the bodies are
//!    checked against the walls and the explicit bodies where they are.
use crate::body::{Bodies, Body, MassProperties, Shape};
use crate::io::body_files::{self, FileBody};
use crate::io::frame_read;
use crate::parallel::domain::{distance_to_box, Domain};
use crate::parallel::records::{send_to, FlatRecords};
use crate::parallel::{exchange, memory, Comm};
use crate::scene::generate::{self, orientation_at};
use crate::scene::sources::{checked_lattice_in, lattice_in, pyramid_in, fill_cell, CellGrid, FileFormat, Packing, Source, SourceKind};
use crate::scene::{Scene, SolverKind};
pub use crate::scene::memory::{human, MemoryEstimate, BASE_BYTES, BYTES_PER_BODY, BYTES_PER_CONTACT, CONTACTS_PER_BODY};
use mpi::traits::*;
use nalgebra::Vector3;
use std::collections::HashMap;
use std::path::Path;

/// Bad input found at start-up (exit status 2), each kind a one-line
/// message naming the config and the key or file line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartupError {
    /// The scene needs more memory per rank than the node has.
    #[error("{0}")]
    Memory(String),
    /// A body file that cannot be read, or whose content (ids, shapes,
    /// radii, non-finite values) the scene cannot take.
    #[error("{0}")]
    BodyFile(String),
    /// Bodies that cannot be placed: a box too full, an overlap, a body
    /// outside the periodic box or the 2D plane.
    #[error("{0}")]
    Placement(String),
}

/// This rank's bodies and what start-up cost.
pub struct Startup {
    /// Owned bodies (by the grid over the scene box), sorted by id.
    pub bodies: Bodies,
    /// Largest number of bodies this rank held at once during start-up
    /// (own, file rows, neighbours' random-pack cells).
    pub max_held: u64,
    /// The decomposition the bodies were placed in: the run keeps it.
    pub domain: Domain,
}

/// Distinct radii a text file may have (one sphere shape each).
const MAX_FILE_RADII: usize = 1024;

/// Collective on `comm`: the lowest rank's error, on every rank.
fn first_error(comm: &Comm, e: Option<String>, kind: fn(String) -> StartupError) -> Result<(), StartupError> {
    crate::parallel::first_message(comm, e).map_or(Ok(()), |m| Err(kind(m)))
}

/// Bodies in a file, without reading them all: the frame's row count, or
/// the lines of a text file (an upper bound). Rank 0 looks; all get it.
fn file_count(comm: &Comm, path: &Path, format: FileFormat, frame: Option<u64>) -> u64 {
    let mut n = 0u64;
    if comm.rank() == 0 {
        n = match format {
            FileFormat::Frames => (|| -> Option<u64> {
                let f = hdf5::File::open(path).ok()?;
                let g = f.group("frames").ok()?;
                let mut steps: Vec<u64> = g.member_names().ok()?.iter().filter_map(|s| s.parse().ok()).collect();
                steps.sort_unstable();
                let step = frame.or(steps.last().copied())?;
                let ds = g.dataset(&format!("{}/bodies/id", crate::io::frames::frame_name(step))).ok()?;
                ds.shape().first().map(|&n| n as u64)
            })()
            .unwrap_or(0),
            // The data rows, streamed without keeping any; a malformed file
            // is counted by its lines here and reported by the start-up.
            _ => crate::io::body_files::read_text(path, format, |_| false).map(|r| r.count).unwrap_or_else(|_| {
                use std::io::Read;
                let mut lines = 0u64;
                if let Ok(mut f) = std::fs::File::open(path) {
                    let mut buf = vec![0u8; 1 << 20];
                    while let Ok(k) = f.read(&mut buf) {
                        if k == 0 {
                            break;
                        }
                        lines += buf[..k].iter().filter(|&&b| b == b'\n').count() as u64;
                    }
                }
                lines
            }),
        };
    }
    comm.process_at_rank(0).broadcast_into(&mut n);
    n
}

/// Collective: the memory the scene needs per rank on `comm`.
pub fn estimate(comm: &Comm, scene: &Scene) -> MemoryEstimate {
    let mut bodies = scene.known_count();
    for s in &scene.sources {
        if let SourceKind::File { path, format, frame } = &s.kind {
            bodies = bodies.saturating_add(file_count(comm, path, *format, *frame));
        }
    }
    let ranks = comm.size() as usize;
    let share = bodies / ranks as u64;
    // One layer of ghosts around a cube of `share` bodies.
    let ghosts = if ranks > 1 { (6.0 * (share as f64).powf(2.0 / 3.0)) as u64 } else { 0 };
    let bytes_per_body = BYTES_PER_BODY + CONTACTS_PER_BODY * BYTES_PER_CONTACT;
    let bodies_per_rank = share.saturating_add(ghosts);
    MemoryEstimate {
        bodies,
        ranks,
        bytes_per_body,
        bodies_per_rank,
        bytes_per_rank: bodies_per_rank.saturating_mul(bytes_per_body).saturating_add(BASE_BYTES),
        node_memory: memory::node_memory(),
        ranks_on_node: memory::ranks_on_node(comm),
    }
}

/// Collective: refuses (before anything is allocated) a scene whose
/// estimate exceeds the memory of this node for the ranks it runs.
pub fn memory_check(comm: &Comm, scene: &Scene, label: &str) -> Result<MemoryEstimate, StartupError> {
    let m = estimate(comm, scene);
    let need = m.bytes_per_rank.saturating_mul(m.ranks_on_node as u64);
    match m.node_memory {
        Some(node) if need > node => {
            let key = scene
                .sources
                .iter()
                .max_by_key(|s| s.count.unwrap_or(0))
                .filter(|s| s.count.unwrap_or(0) as usize >= scene.bodies.len())
                .map(|s| format!("{}.count", s.key))
                .unwrap_or_else(|| "body".into());
            Err(StartupError::Memory(format!(
                "{label}: {key}: {} bodies need about {} per rank on {} rank(s) (~{} bytes per body with its contacts), more than this node's {} for {} rank(s)",
                m.bodies,
                human(m.bytes_per_rank),
                m.ranks,
                m.bytes_per_body,
                human(node),
                m.ranks_on_node
            )))
        }
        _ => Ok(m),
    }
}


/// Builds bodies with the scene's mass properties.
struct Maker<'a> {
    scene: &'a Scene,
    unit: Vec<MassProperties>,
}

impl Maker<'_> {
    fn body(&self, id: u64, shape: u32, material: u32, position: Vector3<f64>, fixed: bool) -> Body {
        let rho = self.scene.materials[material as usize].density;
        Body::at_rest(id, shape, material, position, &self.unit[shape as usize], rho, fixed, self.scene.simulation.dim)
    }

    /// Body `j` of generator `src` (material by parity, orientation, velocity).
    fn generated(&self, src: &Source, j: u64, shape: u32, p: Vector3<f64>, v: Vector3<f64>, fixed: bool) -> Body {
        let id = src.first_id + j;
        let material = src.parity.map_or(src.material, |m| m[(id % 2) as usize]);
        let mut b = self.body(id, shape, material, p, fixed);
        if src.random_orientation {
            b.orientation = orientation_at(src.seed, j);
        }
        if !fixed {
            b.velocity = src.velocity + v;
        }
        b
    }
}

/// A file source's bodies on this rank and how its ids map.
struct FileShare {
    source: usize,
    bodies: Vec<FileBody>,
    /// File shape index or radius bits -> scene shape.
    shape_of_file: Vec<u32>,
    shape_of_radius: HashMap<u64, u32>,
    /// The smallest file id (ids map to first_id + id - min), or None: row order.
    min_id: Option<u64>,
}

/// Collective: reads the file sources (this rank's share), adding the
/// sphere shapes their radii need and fixing their ids and counts.
fn read_files(comm: &Comm, scene: &mut Scene, label: &str, held: &mut u64) -> Result<Vec<FileShare>, StartupError> {
    let (me, size) = (comm.rank() as u64, comm.size() as u64);
    let mut next_id = scene.known_count();
    let mut out = Vec::new();
    for k in 0..scene.sources.len() {
        let SourceKind::File { path, format, frame } = scene.sources[k].kind.clone() else { continue };
        let key = scene.sources[k].key.clone();
        let mut share = FileShare { source: k, bodies: Vec::new(), shape_of_file: Vec::new(), shape_of_radius: HashMap::new(), min_id: None };
        let count;
        if format == FileFormat::Frames {
            let slab = frame_read::read_frame(comm, &path, frame).map_err(|e| StartupError::BodyFile(format!("{label}: {key}.file: {e}")))?;
            count = slab.count;
            share.min_id = Some(slab.id_range.0);
            for (name, shape) in slab.shapes {
                let known = scene.shape_names.iter().position(|n| *n == name);
                let idx = match (known, &shape) {
                    (Some(i), Shape::Sphere { radius }) => {
                        let r = scene.shapes[i].bounding_radius();
                        if !matches!(scene.shapes[i], Shape::Sphere { .. }) || (r - radius).abs() > 1e-12 * radius {
                            return Err(StartupError::BodyFile(format!(
                                "{label}: {key}.file: shape `{name}` is a sphere of radius {radius} in {} but not in the config",
                                path.display()
                            )));
                        }
                        i as u32
                    }
                    (Some(i), Shape::Mesh(_)) => i as u32,
                    (None, Shape::Sphere { .. }) => {
                        scene.shapes.push(shape.clone());
                        scene.shape_names.push(name.clone());
                        (scene.shapes.len() - 1) as u32
                    }
                    (None, Shape::Mesh(_)) => {
                        return Err(StartupError::BodyFile(format!(
                            "{label}: {key}.file: mesh shape `{name}` of {} is not among the config's shapes",
                            path.display()
                        )))
                    }
                };
                share.shape_of_file.push(idx);
            }
            share.bodies = slab.bodies;
        } else {
            let r = body_files::read_text(&path, format, |row| row % size == me);
            // Every rank reads the whole file, so all find the same first
            // error; agree anyway (a file unreadable on one node only).
            first_error(comm, r.as_ref().err().map(|e| e.to_string()), StartupError::BodyFile)?;
            let r = r.map_err(|e| StartupError::BodyFile(e.to_string()))?;
            count = r.count;
            if let Some((a, z)) = r.id_range {
                // Duplicates first (they name a line), then holes.
                check_distinct_ids(comm, &path, &r.bodies, a, z - a + 1)?;
                if z - a + 1 != count {
                    return Err(StartupError::BodyFile(format!(
                        "{}:0: {count} bodies with ids {a}..{z}: the ids must be distinct and contiguous",
                        path.display()
                    )));
                }
                share.min_id = Some(a);
            }
            if r.has_radius {
                let mut radii: Vec<u64> = r.bodies.iter().filter_map(|b| b.radius).map(f64::to_bits).collect();
                radii.sort_unstable();
                radii.dedup();
                first_error(comm, (radii.len() > MAX_FILE_RADII).then(|| too_many_radii(&path)), StartupError::BodyFile)?;
                let mut recs = FlatRecords::new(0, 0);
                let mut dest = Vec::new();
                for &b in &radii {
                    for r in 0..size as usize {
                        recs.push(b, &[], &[]);
                        dest.push(r);
                    }
                }
                let got = send_to(comm, &recs, &dest);
                let mut all = got.keys.clone();
                all.sort_by(|a, b| f64::from_bits(*a).total_cmp(&f64::from_bits(*b)));
                all.dedup();
                if all.len() > MAX_FILE_RADII {
                    return Err(StartupError::BodyFile(too_many_radii(&path)));
                }
                for bits in all {
                    let radius = f64::from_bits(bits);
                    scene.shapes.push(Shape::Sphere { radius });
                    scene.shape_names.push(format!("{key}:r={radius:e}"));
                    share.shape_of_radius.insert(bits, (scene.shapes.len() - 1) as u32);
                }
            } else if scene.sources[k].classes.shape.is_empty() {
                return Err(StartupError::BodyFile(format!("{label}: {key}.shape: {} has no radius column: give the bodies' `shape`", path.display())));
            }
            share.bodies = r.bodies;
        }
        *held = (*held).max(share.bodies.len() as u64);
        scene.sources[k].first_id = next_id;
        scene.sources[k].count = Some(count);
        next_id = next_id.checked_add(count).ok_or_else(|| StartupError::BodyFile(format!("{label}: {key}: the body count overflows")))?;
        out.push(share);
    }
    Ok(out)
}

fn too_many_radii(path: &Path) -> String {
    format!("{}:0: more than {MAX_FILE_RADII} distinct radii (one sphere shape each): round the radii", path.display())
}

/// Collective: no id twice among ids a..a+count. Each rank checks one block
/// of the id range (sorted records of that block only).
fn check_distinct_ids(comm: &Comm, path: &Path, bodies: &[FileBody], a: u64, count: u64) -> Result<(), StartupError> {
    let size = comm.size() as u64;
    let block = |id: u64| ((id - a) as u128 * size as u128 / count as u128) as usize;
    let mut recs = FlatRecords::new(1, 0);
    let mut dest = Vec::new();
    for b in bodies {
        let id = b.id.unwrap_or(a);
        recs.push(id, &[b.line], &[]);
        dest.push(block(id));
    }
    let mut got = send_to(comm, &recs, &dest);
    got.sort();
    let mut e = None;
    for i in 1..got.len() {
        if got.keys[i] == got.keys[i - 1] {
            let (l0, l1) = (got.u_row(i - 1)[0], got.u_row(i)[0]);
            e = Some(format!("{}:{}: id {} already given on line {}", path.display(), l0.max(l1), got.keys[i], l0.min(l1)));
            break;
        }
    }
    first_error(comm, e, StartupError::BodyFile)
}

/// A cell's box (lo, hi).
type CellBox = (Vector3<f64>, Vector3<f64>);

/// Collective: the random pack by cells (see README "Random packs"). Returns
/// the bodies of the cells this rank owns.
fn random_cells(comm: &Comm, domain: &Domain, src: &Source, dim: u8, held: &mut u64) -> Result<Vec<crate::scene::sources::Placed>, StartupError> {
    let SourceKind::Random { lo, hi, gap, speed, .. } = src.kind else { unreachable!("random_cells on a non-random source") };
    let me = comm.rank() as usize;
    let count = src.count.unwrap_or(0);
    let rmax = src.classes.max();
    let d = 2.0 * rmax + gap;
    let c = &src.classes;
    let mean_r = c.radius.iter().zip(&c.cumulative).scan(0.0, |prev, (r, cum)| {
        let w = cum - *prev;
        *prev = *cum;
        Some(w * r)
    });
    let grid = CellGrid::new(lo, hi, count, d, mean_r.sum(), dim);
    let (blo, bhi) = domain.rank_box(me);
    let mine: Vec<[u64; 3]> = grid.cells_in(blo, bhi).into_iter().filter(|c| domain.owner(&grid.centre(*c)) == me).collect();
    let mut packing = Packing::new(d);
    let mut placed = Vec::new();
    let mut failed = None;
    for color in 0..8 {
        let mut send = FlatRecords::new(0, 4);
        let mut dest = Vec::new();
        for &c in mine.iter().filter(|&&c| CellGrid::color(c) == color) {
            match fill_cell(&grid, c, &src.classes, gap, speed, dim, src.seed, &mut packing) {
                Ok(bodies) => {
                    // Neighbour cells of other ranks; a body goes to a rank
                    // only if it could meet a body centred in one of its cells.
                    let foreign: Vec<(usize, CellBox)> = grid
                        .neighbours(c)
                        .iter()
                        .map(|q| (domain.owner(&grid.centre(*q)), grid.cell_box(*q)))
                        .filter(|(r, _)| *r != me)
                        .collect();
                    let mut ranks = Vec::new();
                    for b in &bodies {
                        let (p, r) = (b.position, src.classes.radius[b.class]);
                        ranks.clear();
                        ranks.extend(foreign.iter().filter(|(_, bx)| distance_to_box(&p, bx) < r + rmax + gap).map(|(k, _)| *k));
                        ranks.sort_unstable();
                        ranks.dedup();
                        for &k in &ranks {
                            send.push(b.j, &[], &[p.x, p.y, p.z, r]);
                            dest.push(k);
                        }
                    }
                    placed.extend(bodies);
                }
                Err(n) => {
                    let k = grid.index(c);
                    failed = Some(format!(
                        "{}.count: only {n} of the {} bodies of cell {c:?} fit without overlap: the box is too full for count = {count} (the cell pack reaches a solid fraction of about 0.25, gaps included; method = \"sequential\" packs denser on one rank's memory)",
                        src.key,
                        grid.before(k + 1) - grid.before(k)
                    ));
                    break;
                }
            }
        }
        let got = send_to(comm, &send, &dest);
        for i in 0..got.len() {
            let f = got.f_row(i);
            packing.insert(Vector3::new(f[0], f[1], f[2]), f[3]);
        }
        *held = (*held).max(packing.len() as u64);
        first_error(comm, failed.take(), StartupError::Placement)?;
    }
    Ok(placed)
}

/// The box the ranks divide: the bodies' bounding spheres (explicit,
/// generators' analytic bounds, file bodies by a reduction), the periodic
/// box on periodic axes.
fn scene_box(comm: &Comm, scene: &Scene, files: &[FileShare]) -> (Vector3<f64>, Vector3<f64>) {
    let (mut lo, mut hi) = scene.bounding_box();
    for f in files {
        for b in &f.bodies {
            let r = file_radius(scene, f, b);
            lo = lo.inf(&b.position.add_scalar(-r));
            hi = hi.sup(&b.position.add_scalar(r));
        }
    }
    crate::parallel::domain::global_box(comm, lo, hi, scene.periodic.as_ref())
}

fn file_shape(scene: &Scene, f: &FileShare, b: &FileBody) -> u32 {
    if let Some(s) = b.shape {
        f.shape_of_file[s as usize]
    } else if let Some(r) = b.radius {
        f.shape_of_radius[&r.to_bits()]
    } else {
        scene.sources[f.source].classes.shape[0]
    }
}

fn file_radius(scene: &Scene, f: &FileShare, b: &FileBody) -> f64 {
    scene.shapes[file_shape(scene, f, b) as usize].bounding_radius()
}

/// Collective: this rank's bodies of a fresh run. `label` names the config
/// file in errors. Adds the shapes file radii need to `scene`.
pub fn populate(comm: &Comm, scene: &mut Scene, label: &str) -> Result<Startup, StartupError> {
    let (me, size) = (comm.rank() as usize, comm.size() as usize);
    let mut held = 0u64;
    let files = read_files(comm, scene, label, &mut held)?;
    scene.contact_defaults_from_shapes();
    let scene: &Scene = scene;
    let dim = scene.simulation.dim;
    let (lo, hi) = scene_box(comm, scene, &files);
    let domain = Domain::new(lo, hi, size, dim);
    let (blo, bhi) = domain.rank_box(me);
    let maker = Maker { scene, unit: scene.shapes.iter().map(|s| s.unit_mass_properties()).collect() };

    let mut local = Bodies::new();
    for i in 0..scene.bodies.len() {
        if domain.owner(&scene.bodies.position[i]) == me {
            local.push(scene.bodies.get(i));
        }
    }
    for src in &scene.sources {
        match &src.kind {
            SourceKind::Lattice { origin, n, spacing, checked: None } => lattice_in(*origin, *n, *spacing, blo, bhi, |j, p| {
                if domain.owner(&p) == me {
                    let shape = src.classes.shape[src.class_of(j)];
                    local.push(maker.generated(src, j, shape, p, Vector3::zeros(), src.fixed));
                }
            }),
            SourceKind::Lattice { origin, n, spacing, checked: Some(gap) } => {
                let shape = src.classes.shape[0];
                let Shape::Mesh(mesh) = &scene.shapes[shape as usize] else { unreachable!("a checked lattice is of a mesh shape") };
                let placed = checked_lattice_in(*origin, *n, *spacing, mesh, *gap, src.seed, src.random_orientation, blo, bhi);
                let blocked = placed.as_ref().err().map(|b| {
                    format!(
                        "{label}: {}.spacing: lattice body {} (cell {:?}) found no orientation keeping gap = {gap} to its neighbours in {} draw(s): space the lattice wider{}",
                        src.key,
                        b.j,
                        b.cell,
                        b.draws,
                        if src.random_orientation { "" } else { " or set random_orientation = true" }
                    )
                });
                first_error(comm, blocked, StartupError::Placement)?;
                for (j, p, q) in placed.unwrap_or_default() {
                    if domain.owner(&p) == me {
                        let mut b = maker.generated(src, j, shape, p, Vector3::zeros(), src.fixed);
                        b.orientation = q;
                        local.push(b);
                    }
                }
            }
            SourceKind::Pyramid { origin, n, radius, gap, layer_gap, fix_base } => {
                pyramid_in(*origin, *n, *radius, *gap, *layer_gap, blo, bhi, |j, p, layer| {
                    if domain.owner(&p) == me {
                        let fixed = src.fixed || (*fix_base && layer == 0);
                        local.push(maker.generated(src, j, src.classes.shape[0], p, Vector3::zeros(), fixed));
                    }
                })
            }
            SourceKind::Random { lo, hi, gap, speed, sequential: true } => {
                // Every rank repeats the serial pack and keeps its own bodies.
                let count = src.count.unwrap_or(0);
                let (pos, vel) = generate::random_pack(*lo, *hi, count, src.classes.radius[0], *gap, dim, src.seed, *speed)
                    .map_err(|n| StartupError::Placement(format!("{label}: {}.count: only {n} of {count} bodies fit in the box without overlap", src.key)))?;
                held = held.max(count);
                for (j, (p, v)) in pos.into_iter().zip(vel).enumerate() {
                    if domain.owner(&p) == me {
                        local.push(maker.generated(src, j as u64, src.classes.shape[0], p, v, src.fixed));
                    }
                }
            }
            SourceKind::Random { .. } => {
                let placed = random_cells(comm, &domain, src, dim, &mut held).map_err(|e| StartupError::Placement(format!("{label}: {e}")))?;
                for b in placed {
                    local.push(maker.generated(src, b.j, src.classes.shape[b.class], b.position, b.velocity, src.fixed));
                }
            }
            SourceKind::File { .. } => {}
        }
    }
    let mut bad = None;
    for f in &files {
        let src = &scene.sources[f.source];
        for b in &f.bodies {
            let j = match (f.min_id, b.id) {
                (Some(a), Some(id)) => id - a,
                _ => b.row,
            };
            let fixed = src.fixed || b.fixed;
            let mut body = maker.generated(src, j, file_shape(scene, f, b), b.position, b.velocity, fixed);
            body.orientation = b.orientation.unwrap_or(body.orientation);
            if !fixed {
                body.angular_velocity = b.angular_velocity;
            }
            let finite = b.position.iter().chain(&b.velocity).chain(&b.angular_velocity).all(|x| x.is_finite())
                && b.radius.is_none_or(f64::is_finite)
                && b.orientation.is_none_or(|q| q.coords.iter().all(|x| x.is_finite()));
            if bad.is_none() && !finite {
                let frames = matches!(&src.kind, SourceKind::File { format: FileFormat::Frames, .. });
                let at = if frames { format!("body {} (row {})", b.id.unwrap_or(b.row), b.row) } else { format!("body on line {}", b.line) };
                bad = Some(format!("{}: {at}: a position, velocity, orientation or radius is not finite (NaN or inf)", src.key));
            }
            if dim == 2 && bad.is_none() && (b.position.z != 0.0 || b.velocity.z != 0.0) {
                bad = Some(format!("{}: body on line {}: in 2D every body lies in z = 0 and moves in x-y", src.key, b.line));
            }
            if let Some(p) = &scene.periodic {
                if bad.is_none() && (0..3).any(|a| p.axes[a] && (b.position[a] < p.lo[a] || b.position[a] >= p.hi[a])) {
                    bad = Some(format!("{}: body on line {} lies outside the periodic box", src.key, b.line));
                }
            }
            local.push(body);
        }
    }
    drop(files);
    first_error(comm, bad.map(|m| format!("{label}: {m}")), StartupError::BodyFile)?;
    held = held.max(local.len() as u64);
    let n = local.len();
    exchange::migrate(comm, &domain, &mut local, n, None);
    held = held.max(local.len() as u64);
    first_error(comm, check_placed(scene, &local).map(|m| format!("{label}: {m}")), StartupError::Placement)?;
    Ok(Startup { bodies: local, max_held: held, domain })
}

/// The generated and file spheres against the walls and the explicit
/// spheres (the explicit ones among themselves were checked with the config).
fn check_placed(scene: &Scene, bodies: &Bodies) -> Option<String> {
    let dem = scene.simulation.solver == SolverKind::Dem;
    let radius = |s: u32| match scene.shapes[s as usize] {
        Shape::Sphere { radius } => Some(radius),
        Shape::Mesh(_) => None,
    };
    let n_explicit = scene.bodies.len() as u64;
    let rmax = scene.shapes.iter().map(|s| s.bounding_radius()).fold(0.0, f64::max);
    let (mut all, mut moving) = (Packing::new(2.0 * rmax), Packing::new(2.0 * rmax));
    for i in 0..scene.bodies.len() {
        if let Some(r) = radius(scene.bodies.shape[i]) {
            all.insert(scene.bodies.position[i], r);
            if !scene.bodies.fixed[i] {
                moving.insert(scene.bodies.position[i], r);
            }
        }
    }
    // The placed spheres among themselves (files are not checked
    // elsewhere), in the same cell-based pass: a body overlapping one
    // placed before it is refused at once, so even a file of bodies piled
    // on one point costs O(N). Pairs on two ranks are checked after the
    // first detection (driver).
    let (mut placed, mut placed_moving) = (Packing::new(2.0 * rmax), Packing::new(2.0 * rmax));
    let why = if dem { "solver = \"dem\" needs positive gaps".to_string() } else { scene.simulation.overlap_hint() };
    for i in 0..bodies.len() {
        if bodies.id[i] < n_explicit {
            continue;
        }
        let Some(r) = radius(bodies.shape[i]) else { continue };
        let p = bodies.position[i];
        let id = bodies.id[i];
        let tol = if dem { 0.0 } else { -scene.simulation.start_overlap * r };
        let others = if bodies.fixed[i] { &placed_moving } else { &placed };
        if !others.free(&p, r, tol) {
            return Some(format!(
                "body {id} overlaps another body from a file or generator ({why})"
            ));
        }
        placed.insert(p, r);
        if !bodies.fixed[i] {
            placed_moving.insert(p, r);
            for (w, wall) in scene.walls.iter().enumerate() {
                let d = (p - wall.point).dot(&wall.normal) - r;
                if dem && d <= 0.0 {
                    return Some(format!("solver = \"dem\" needs a positive initial gap: body {id} touches wall[{w}] (gap {d:.3e})"));
                }
                if d < -scene.simulation.start_overlap * r {
                    return Some(format!("body {id} penetrates wall[{w}] by {:.3e} ({})", -d, scene.simulation.overlap_hint()));
                }
            }
        }
        let against = if bodies.fixed[i] { &moving } else { &all };
        if !against.is_empty() && !against.free(&p, r, tol) {
            return Some(format!("body {id} overlaps an explicit [[body]] ({why})"));
        }
    }
    None
}

