//! Body sources expanded at start-up (`[[generate]]`): lattice, pyramid,
//! random pack and files. Each is indexable by region, so a rank computes
//! only the bodies of its own box and every rank count gets the same bodies
//! with the same ids (see `crate::startup` for the parallel side).
use super::generate::{orientation_at, SplitMix64};
use crate::body::mesh::TriMesh;
use crate::geometry::mesh_distance;
use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};
use std::collections::HashMap;
use std::path::PathBuf;

/// Salt of the stream that draws a lattice body's radius class.
const RADIUS_SALT: u64 = 0x7261_6469_7573_0001;
/// Salt of the per-cell streams of the random pack.
const CELL_SALT: u64 = 0x6365_6c6c_0000_0001;
/// Target bodies per cell of the random pack's grid: large enough that a
/// cell's fixed quota is rarely blocked by an unlucky arrangement (the pack
/// reaches a solid fraction of about 0.25; 8 a cell gave 0.2), small enough
/// that a rank holds many cells.
const BODIES_PER_CELL: f64 = 27.0;
/// A body of the random pack gives up after this many misses in a row ...
const MAX_MISSES: u64 = 2_000;
/// ... and its cell starts over (same stream, further on) at most this
/// many times: with ~8 bodies a cell, an unlucky arrangement of the first
/// ones is often what blocks the last.
const MAX_RESTARTS: u64 = 200;

/// The radius distribution of a generator: sphere shape `shape[c]` of radius
/// `radius[c]` with probability `cumulative[c] - cumulative[c - 1]`.
#[derive(Clone, Debug, PartialEq)]
pub struct RadiusClasses {
    pub shape: Vec<u32>,
    pub radius: Vec<f64>,
    pub cumulative: Vec<f64>,
}

impl RadiusClasses {
    /// Every body the same shape (of bounding radius `radius`).
    pub fn single(shape: u32, radius: f64) -> Self {
        Self { shape: vec![shape], radius: vec![radius], cumulative: vec![1.0] }
    }

    pub fn max(&self) -> f64 {
        self.radius.iter().copied().fold(0.0, f64::max)
    }

    /// The class of a uniform draw `u` in [0, 1).
    pub fn pick(&self, u: f64) -> usize {
        self.cumulative.iter().position(|&c| u < c).unwrap_or(self.cumulative.len() - 1)
    }

    /// Mean of r³ (volume per body over 4π/3).
    pub fn mean_r3(&self) -> f64 {
        let mut prev = 0.0;
        let mut m = 0.0;
        for (r, c) in self.radius.iter().zip(&self.cumulative) {
            m += (c - prev) * r.powi(3);
            prev = *c;
        }
        m
    }
}

/// Body file formats of `[[generate]] kind = "file"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFormat {
    /// A frame of a stiffgrain `frames.h5`.
    Frames,
    /// Comma-separated values with a header line naming the columns.
    Csv,
    /// LAMMPS data file, `Atoms # sphere` section.
    LammpsData,
    /// LAMMPS/LIGGGHTS `dump custom` of spheres (one snapshot).
    LammpsDump,
}

/// What a source places.
#[derive(Clone, Debug, PartialEq)]
pub enum SourceKind {
    /// n[0] × n[1] × n[2] centres from `origin`, `spacing` apart; index i + nx (j + ny k).
    /// `checked`: the surface gap a lattice of mesh bodies spaced closer than
    /// their bounding spheres keeps by choosing orientations
    /// ([`checked_lattice_in`]); None when the bounding spheres keep it.
    Lattice { origin: Vector3<f64>, n: [u64; 3], spacing: f64, checked: Option<f64> },
    /// Cannonball pyramid (see `generate::pyramid`).
    Pyramid { origin: Vector3<f64>, n: u32, radius: f64, gap: f64, layer_gap: f64, fix_base: bool },
    /// Random loose pack in [lo, hi]: the cell algorithm, or (`sequential`)
    /// the serial random sequential addition every rank repeats.
    Random { lo: Vector3<f64>, hi: Vector3<f64>, gap: f64, speed: f64, sequential: bool },
    /// Bodies read from a file; `frame` picks a step of a frames.h5 (default the last).
    File { path: PathBuf, format: FileFormat, frame: Option<u64> },
}

/// One `[[generate]]` entry, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    /// `generate[k]`, to name it in errors.
    pub key: String,
    pub kind: SourceKind,
    /// Global id of its first body.
    pub first_id: u64,
    /// Number of bodies (files: known once read).
    pub count: Option<u64>,
    /// Shapes (radius classes) of its bodies; files with a radius column
    /// add classes at start-up.
    pub classes: RadiusClasses,
    pub material: u32,
    /// Materials by the parity of the global id (even, odd).
    pub parity: Option<[u32; 2]>,
    pub velocity: Vector3<f64>,
    pub fixed: bool,
    pub random_orientation: bool,
    pub seed: u64,
}

impl Source {
    /// Axis-aligned box holding every bounding sphere it places (None for files).
    pub fn bounds(&self) -> Option<(Vector3<f64>, Vector3<f64>)> {
        let rmax = self.classes.max();
        match &self.kind {
            SourceKind::Lattice { origin, n, spacing, .. } => {
                let far = origin + *spacing * Vector3::new(n[0] as f64 - 1.0, n[1] as f64 - 1.0, n[2] as f64 - 1.0);
                Some((origin.add_scalar(-rmax), far.add_scalar(rmax)))
            }
            SourceKind::Pyramid { origin, n, radius, gap, layer_gap, .. } => {
                let d = 2.0 * radius + gap;
                let half = (*n as f64 - 1.0) / 2.0 * d + radius;
                let top = origin.z + 2.0 * radius + (*n as f64 - 1.0) * (d / 2f64.sqrt() + layer_gap);
                Some((Vector3::new(origin.x - half, origin.y - half, origin.z), Vector3::new(origin.x + half, origin.y + half, top)))
            }
            SourceKind::Random { lo, hi, .. } => Some((*lo, *hi)),
            SourceKind::File { .. } => None,
        }
    }

    /// Radius class of lattice body `j` (drawn from its own place in a stream).
    pub fn class_of(&self, j: u64) -> usize {
        if self.classes.radius.len() == 1 {
            0
        } else {
            self.classes.pick(SplitMix64::at(self.seed ^ RADIUS_SALT, j).uniform())
        }
    }
}

/// Index range [a, b) along one axis of centres x = o + s·(i − half), i in
/// 0..n, that can lie in [lo, hi] (one extra on each side; callers filter).
fn index_range(o: f64, s: f64, half: f64, n: u64, lo: f64, hi: f64) -> (u64, u64) {
    let clamp = |t: f64| t.max(0.0).min(n as f64) as u64;
    if s <= 0.0 || n == 0 {
        return (0, n);
    }
    (clamp(((lo - o) / s + half).floor() - 1.0), clamp(((hi - o) / s + half).ceil() + 2.0))
}

/// Calls `f(j, centre)` for the lattice bodies whose centre may lie in
/// [lo, hi] (a superset: callers keep those they own).
pub fn lattice_in(origin: Vector3<f64>, n: [u64; 3], spacing: f64, lo: Vector3<f64>, hi: Vector3<f64>, mut f: impl FnMut(u64, Vector3<f64>)) {
    let r: Vec<(u64, u64)> = (0..3).map(|a| index_range(origin[a], spacing, 0.0, n[a], lo[a], hi[a])).collect();
    for k in r[2].0..r[2].1 {
        for j in r[1].0..r[1].1 {
            for i in r[0].0..r[0].1 {
                let p = origin + spacing * Vector3::new(i as f64, j as f64, k as f64);
                f(i + n[0] * (j + n[1] * k), p);
            }
        }
    }
}

/// Orientation draws a body of a checked lattice tries before it gives up.
pub const MAX_ORIENTATION_DRAWS: u64 = 2_000;
/// Salt of the streams of a checked lattice's later orientation draws.
const DRAW_SALT: u64 = 0x6472_6177_0000_0001;
/// Lattice cells beyond a region a checked lattice also computes: a body's
/// orientation depends on its neighbours of earlier colours, theirs on
/// earlier ones still, at most 7 cells away (8 colours).
const CHECKED_HALO: u64 = 8;

/// Orientation draw `k` of body `j`: draw 0 is `orientation_at(seed, j)`
/// (the orientation an unchecked lattice or random pack gives), each later
/// draw comes from a stream of its own.
pub fn orientation_draw(seed: u64, j: u64, k: u64) -> UnitQuaternion<f64> {
    if k == 0 {
        orientation_at(seed, j)
    } else {
        orientation_at(seed ^ DRAW_SALT.wrapping_mul(k), j)
    }
}

/// Colour of lattice cell (i, j, k): adjacent cells (also diagonally) never
/// share one.
fn lattice_color(c: [u64; 3]) -> u64 {
    c[0] % 2 + 2 * (c[1] % 2) + 4 * (c[2] % 2)
}

/// A body of a checked lattice: index within its source, centre, orientation.
pub type Oriented = (u64, Vector3<f64>, UnitQuaternion<f64>);

/// A lattice body that found no orientation keeping the gap to its neighbours.
#[derive(Clone, Debug, PartialEq)]
pub struct Blocked {
    pub j: u64,
    pub cell: [u64; 3],
    pub draws: u64,
}

/// The bodies (index, centre, orientation) of a lattice of `mesh` bodies
/// spaced closer than their bounding spheres whose centre may lie in
/// [lo, hi] (a superset: callers keep those they own). Each body keeps a
/// surface gap of at least `gap` to its neighbours: cells are decided colour
/// by colour (8 colours, so that adjacent cells differ; with spacing ≥
/// R + gap/2 only adjacent cells can meet), each body taking the first of
/// its orientation draws ([`orientation_draw`]; the identity alone without
/// `random_orientation`) whose mesh keeps `gap` to every adjacent body of
/// an earlier colour. A body's orientation thus depends only on bodies
/// within 7 cells, and the region is computed with a halo of
/// `CHECKED_HALO` cells: every rank count gets the same bodies. A body of the
/// region that finds no orientation in `MAX_ORIENTATION_DRAWS` is an error.
#[allow(clippy::too_many_arguments)]
pub fn checked_lattice_in(
    origin: Vector3<f64>,
    n: [u64; 3],
    spacing: f64,
    mesh: &TriMesh,
    gap: f64,
    seed: u64,
    random_orientation: bool,
    lo: Vector3<f64>,
    hi: Vector3<f64>,
) -> Result<Vec<Oriented>, Blocked> {
    let inner: Vec<(u64, u64)> = (0..3).map(|a| index_range(origin[a], spacing, 0.0, n[a], lo[a], hi[a])).collect();
    if inner.iter().any(|r| r.0 >= r.1) {
        return Ok(Vec::new());
    }
    let outer: Vec<(u64, u64)> = (0..3).map(|a| (inner[a].0.saturating_sub(CHECKED_HALO), (inner[a].1 + CHECKED_HALO).min(n[a]))).collect();
    let dims: Vec<u64> = outer.iter().map(|r| r.1 - r.0).collect();
    let slot = |c: [u64; 3]| ((c[0] - outer[0].0) + dims[0] * ((c[1] - outer[1].0) + dims[1] * (c[2] - outer[2].0))) as usize;
    let index = |c: [u64; 3]| c[0] + n[0] * (c[1] + n[1] * c[2]);
    let centre = |c: [u64; 3]| origin + spacing * Vector3::new(c[0] as f64, c[1] as f64, c[2] as f64);
    let inside = |c: [u64; 3], r: &[(u64, u64)]| (0..3).all(|a| c[a] >= r[a].0 && c[a] < r[a].1);
    let reach = 2.0 * mesh.bounding_radius() + gap;
    let draws = if random_orientation { MAX_ORIENTATION_DRAWS } else { 1 };
    let mut pose: Vec<Option<Isometry3<f64>>> = vec![None; (dims[0] * dims[1] * dims[2]) as usize];
    let mut blocked = None;
    for color in 0..8 {
        for k in outer[2].0..outer[2].1 {
            for j in outer[1].0..outer[1].1 {
                for i in outer[0].0..outer[0].1 {
                    let c = [i, j, k];
                    if lattice_color(c) != color {
                        continue;
                    }
                    let p = centre(c);
                    let mut near = Vec::new();
                    for dk in -1i64..=1 {
                        for dj in -1i64..=1 {
                            for di in -1i64..=1 {
                                let q = [i as i64 + di, j as i64 + dj, k as i64 + dk];
                                if q.iter().any(|&x| x < 0) || (di, dj, dk) == (0, 0, 0) {
                                    continue;
                                }
                                let q = q.map(|x| x as u64);
                                if inside(q, &outer) && (centre(q) - p).norm() < reach {
                                    if let Some(other) = pose[slot(q)] {
                                        near.push(other);
                                    }
                                }
                            }
                        }
                    }
                    let found = (0..draws).find_map(|d| {
                        let q = if random_orientation { orientation_draw(seed, index(c), d) } else { UnitQuaternion::identity() };
                        let at = Isometry3::from_parts(Translation3::from(p), q);
                        near.iter().all(|o| mesh_distance(mesh, &at, mesh, o, gap) >= gap).then_some(at)
                    });
                    match found {
                        Some(at) => pose[slot(c)] = Some(at),
                        // Near the halo's edge a body may be blocked by
                        // neighbours it would not have: only the region's count.
                        None if inside(c, &inner) && blocked.is_none() => blocked = Some(Blocked { j: index(c), cell: c, draws }),
                        None => {}
                    }
                }
            }
        }
    }
    if let Some(b) = blocked {
        return Err(b);
    }
    let mut out = Vec::new();
    for k in inner[2].0..inner[2].1 {
        for j in inner[1].0..inner[1].1 {
            for i in inner[0].0..inner[0].1 {
                let c = [i, j, k];
                if let Some(at) = pose[slot(c)] {
                    out.push((index(c), at.translation.vector, at.rotation));
                }
            }
        }
    }
    Ok(out)
}

/// Calls `f(j, centre, layer)` for the pyramid bodies (same order and
/// positions as `generate::pyramid`) whose centre may lie in [lo, hi].
#[allow(clippy::too_many_arguments)]
pub fn pyramid_in(
    origin: Vector3<f64>,
    n: u32,
    r: f64,
    gap: f64,
    layer_gap: f64,
    lo: Vector3<f64>,
    hi: Vector3<f64>,
    mut f: impl FnMut(u64, Vector3<f64>, u32),
) {
    let d = 2.0 * r + gap;
    let dz = d / 2f64.sqrt() + layer_gap;
    let mut before = 0u64;
    for layer in 0..n {
        let m = (n - layer) as u64;
        let z = origin.z + r + layer as f64 * dz;
        if z >= lo.z - dz && z <= hi.z + dz {
            let half = (m as f64 - 1.0) / 2.0;
            let (i0, i1) = index_range(origin.x, d, half, m, lo.x, hi.x);
            let (j0, j1) = index_range(origin.y, d, half, m, lo.y, hi.y);
            for j in j0..j1 {
                for i in i0..i1 {
                    let p = Vector3::new(origin.x + (i as f64 - half) * d, origin.y + (j as f64 - half) * d, z);
                    f(before + j * m + i, p, layer);
                }
            }
        }
        before += m * m;
    }
}

/// The global grid of the random pack: m[0] × m[1] × m[2] cells over the
/// box, each at least one exclusion distance wide (or alone on its axis).
/// Cell k (x fastest) takes bodies floor(count·W_k/W) .. floor(count·W_{k+1}/W),
/// W_k the summed weights of the cells before it, a cell's weight the
/// volume its bodies' centres may take (less at the walls), in integers so
/// that every rank gets the same quotas.
#[derive(Clone, Debug, PartialEq)]
pub struct CellGrid {
    pub lo: Vector3<f64>,
    pub hi: Vector3<f64>,
    pub m: [u64; 3],
    pub h: Vector3<f64>,
    pub count: u64,
    /// Per axis: exclusive prefix sums of the cells' integer weights (m + 1 entries).
    prefix: [Vec<u64>; 3],
}

/// Integer weight of a full cell along one axis.
const WEIGHT_SCALE: f64 = 4096.0;

impl CellGrid {
    /// `d`: the largest centre distance at which two bodies can overlap
    /// (2 r_max + gap).
    /// `r`: the mean radius, which keeps centres off the walls.
    pub fn new(lo: Vector3<f64>, hi: Vector3<f64>, count: u64, d: f64, r: f64, dim: u8) -> Self {
        let axes = if dim == 2 { 2 } else { 3 };
        let ext = hi - lo;
        let vol: f64 = (0..axes).map(|a| ext[a]).product();
        let target = (BODIES_PER_CELL * vol / count.max(1) as f64).powf(1.0 / axes as f64).max(d);
        let mut m = [1u64; 3];
        for a in 0..axes {
            m[a] = ((ext[a] / target).floor() as u64).max(1);
        }
        let h = Vector3::new(ext.x / m[0] as f64, ext.y / m[1] as f64, ext.z / m[2] as f64);
        let prefix = [0, 1, 2].map(|a| {
            let mut p = vec![0u64];
            for i in 0..m[a] {
                let w = if a >= axes {
                    1
                } else {
                    let c0 = (lo[a] + i as f64 * h[a]).max(lo[a] + r);
                    let c1 = (lo[a] + (i + 1) as f64 * h[a]).min(hi[a] - r);
                    (((c1 - c0) / h[a]).max(0.0) * WEIGHT_SCALE).round() as u64
                };
                p.push(p[i as usize] + w.max(1));
            }
            p
        });
        Self { lo, hi, m, h, count, prefix }
    }

    /// Summed weights of the cells before cell k (x fastest).
    fn weight_before(&self, k: u64) -> u128 {
        let [i, j, l] = self.coords(k).map(|x| x as usize);
        let [px, py, pz] = &self.prefix;
        let (tx, ty) = (px[px.len() - 1] as u128, py[py.len() - 1] as u128);
        let wz = (pz[l + 1] - pz[l]) as u128;
        let wy = (py[j + 1] - py[j]) as u128;
        pz[l] as u128 * ty * tx + wz * (py[j] as u128 * tx + wy * px[i] as u128)
    }

    pub fn cells(&self) -> u64 {
        self.m[0] * self.m[1] * self.m[2]
    }

    pub fn index(&self, c: [u64; 3]) -> u64 {
        c[0] + self.m[0] * (c[1] + self.m[1] * c[2])
    }

    pub fn coords(&self, k: u64) -> [u64; 3] {
        [k % self.m[0], (k / self.m[0]) % self.m[1], k / (self.m[0] * self.m[1])]
    }

    /// Bodies in cells before cell `k`.
    pub fn before(&self, k: u64) -> u64 {
        if k >= self.cells() {
            return self.count;
        }
        let total = self.weight_before(self.cells() - 1) + {
            let [px, py, pz] = &self.prefix;
            let last = |p: &Vec<u64>| (p[p.len() - 1] - p[p.len() - 2]) as u128;
            last(pz) * last(py) * last(px)
        };
        (self.count as u128 * self.weight_before(k) / total) as u64
    }

    /// Phase in which a cell is filled: cells of one colour are never
    /// neighbours, so they fill independently.
    pub fn color(c: [u64; 3]) -> usize {
        (c[0] % 2 + 2 * (c[1] % 2) + 4 * (c[2] % 2)) as usize
    }

    pub fn cell_box(&self, c: [u64; 3]) -> (Vector3<f64>, Vector3<f64>) {
        let a = self.lo + Vector3::new(c[0] as f64 * self.h.x, c[1] as f64 * self.h.y, c[2] as f64 * self.h.z);
        // The last cell ends exactly at hi.
        let mut b = a + self.h;
        for ax in 0..3 {
            if c[ax] + 1 == self.m[ax] {
                b[ax] = self.hi[ax];
            }
        }
        (a, b)
    }

    pub fn centre(&self, c: [u64; 3]) -> Vector3<f64> {
        let (a, b) = self.cell_box(c);
        0.5 * (a + b)
    }

    /// Cells whose centre may lie in [lo, hi] (a superset).
    pub fn cells_in(&self, lo: Vector3<f64>, hi: Vector3<f64>) -> Vec<[u64; 3]> {
        let r: Vec<(u64, u64)> = (0..3).map(|a| index_range(self.lo[a] + 0.5 * self.h[a], self.h[a], 0.0, self.m[a], lo[a], hi[a])).collect();
        let mut out = Vec::new();
        for k in r[2].0..r[2].1 {
            for j in r[1].0..r[1].1 {
                for i in r[0].0..r[0].1 {
                    out.push([i, j, k]);
                }
            }
        }
        out
    }

    /// The (up to 26) cells next to `c`.
    pub fn neighbours(&self, c: [u64; 3]) -> Vec<[u64; 3]> {
        let mut out = Vec::with_capacity(26);
        for dk in -1i64..=1 {
            for dj in -1i64..=1 {
                for di in -1i64..=1 {
                    if di == 0 && dj == 0 && dk == 0 {
                        continue;
                    }
                    let q = [c[0] as i64 + di, c[1] as i64 + dj, c[2] as i64 + dk];
                    if (0..3).all(|a| q[a] >= 0 && q[a] < self.m[a] as i64) {
                        out.push([q[0] as u64, q[1] as u64, q[2] as u64]);
                    }
                }
            }
        }
        out
    }
}

/// Bodies placed so far (own and neighbours'), hashed on a grid of the
/// exclusion distance for the overlap checks.
pub struct Packing {
    d: f64,
    grid: HashMap<[i64; 3], Vec<u32>>,
    pub position: Vec<Vector3<f64>>,
    pub radius: Vec<f64>,
}

impl Packing {
    /// `d`: the largest centre distance at which two bodies can overlap.
    pub fn new(d: f64) -> Self {
        Self { d, grid: HashMap::new(), position: Vec::new(), radius: Vec::new() }
    }

    fn key(&self, p: &Vector3<f64>) -> [i64; 3] {
        [(p.x / self.d).floor() as i64, (p.y / self.d).floor() as i64, (p.z / self.d).floor() as i64]
    }

    pub fn len(&self) -> usize {
        self.position.len()
    }

    pub fn is_empty(&self) -> bool {
        self.position.is_empty()
    }

    /// Removes the bodies inserted after the first `n`.
    pub fn truncate(&mut self, n: usize) {
        while self.position.len() > n {
            let p = self.position.pop().unwrap_or_default();
            self.radius.pop();
            let k = self.key(&p);
            if let Some(v) = self.grid.get_mut(&k) {
                v.pop();
                if v.is_empty() {
                    self.grid.remove(&k);
                }
            }
        }
    }

    pub fn insert(&mut self, p: Vector3<f64>, r: f64) {
        let k = self.key(&p);
        self.grid.entry(k).or_default().push(self.position.len() as u32);
        self.position.push(p);
        self.radius.push(r);
    }

    /// True when a body of radius `r` at `p` keeps a surface gap of at least
    /// `gap` to every body held.
    pub fn free(&self, p: &Vector3<f64>, r: f64, gap: f64) -> bool {
        let c = self.key(p);
        (-1..=1).all(|i| {
            (-1..=1).all(|j| {
                (-1..=1).all(|k| {
                    self.grid.get(&[c[0] + i, c[1] + j, c[2] + k]).is_none_or(|v| {
                        v.iter().all(|&q| (self.position[q as usize] - p).norm() >= self.radius[q as usize] + r + gap)
                    })
                })
            })
        })
    }
}

/// A body of the random pack: index within its source, centre, class, velocity.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub j: u64,
    pub position: Vector3<f64>,
    pub class: usize,
    pub velocity: Vector3<f64>,
}

/// Fills cell `c` of the random pack with its quota, from the cell's own
/// stream (seeded by `seed` and the cell index): each body draws its radius
/// class, then centres uniform in the cell (within the box by its radius)
/// until one keeps `gap` to every body in `packing`, which must hold the
/// bodies of every neighbouring cell of an earlier colour. Returns the
/// bodies (also inserted into `packing`), or the number placed when a body
/// missed `MAX_MISSES` times in a row.
#[allow(clippy::too_many_arguments)]
pub fn fill_cell(
    grid: &CellGrid,
    c: [u64; 3],
    classes: &RadiusClasses,
    gap: f64,
    speed: f64,
    dim: u8,
    seed: u64,
    packing: &mut Packing,
) -> Result<Vec<Placed>, u64> {
    let k = grid.index(c);
    let first = grid.before(k);
    let quota = grid.before(k + 1) - first;
    let mut rng = SplitMix64::new(SplitMix64::new(seed ^ CELL_SALT ^ k.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64());
    let (clo, chi) = grid.cell_box(c);
    let axes = if dim == 2 { 2 } else { 3 };
    let mut out = Vec::with_capacity(quota as usize);
    let held = packing.len();
    let mut best = 0;
    'restart: for _ in 0..MAX_RESTARTS {
        packing.truncate(held);
        out.clear();
        for s in 0..quota {
            let class = if classes.radius.len() == 1 { 0 } else { classes.pick(rng.uniform()) };
            let r = classes.radius[class];
            let mut misses = 0;
            loop {
                let mut p = Vector3::zeros();
                for a in 0..axes {
                    let (a0, a1) = (clo[a].max(grid.lo[a] + r), chi[a].min(grid.hi[a] - r));
                    p[a] = a0 + rng.uniform() * (a1 - a0).max(0.0);
                }
                if packing.free(&p, r, gap) {
                    packing.insert(p, r);
                    out.push(Placed { j: first + s, position: p, class, velocity: Vector3::zeros() });
                    break;
                }
                misses += 1;
                if misses >= MAX_MISSES {
                    best = best.max(s);
                    continue 'restart;
                }
            }
        }
        break;
    }
    if (out.len() as u64) < quota {
        packing.truncate(held);
        return Err(best);
    }
    for b in &mut out {
        for a in 0..dim as usize {
            b.velocity[a] = speed * (2.0 * rng.uniform() - 1.0);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::generate::{close_pairs, lattice, pyramid};

    #[test]
    fn lattice_and_pyramid_by_region_match_the_whole() {
        let o = Vector3::new(0.1, -0.2, 0.3);
        let all = lattice(o, [5, 4, 3], 0.5);
        let mut got = vec![None; all.len()];
        // Four boxes covering space, each body claimed by the box holding it.
        let cut = Vector3::new(1.0, 0.4, 0.0);
        let inf = f64::INFINITY;
        for (lo, hi) in [
            (Vector3::new(-inf, -inf, -inf), Vector3::new(cut.x, cut.y, inf)),
            (Vector3::new(cut.x, -inf, -inf), Vector3::new(inf, cut.y, inf)),
            (Vector3::new(-inf, cut.y, -inf), Vector3::new(cut.x, inf, inf)),
            (Vector3::new(cut.x, cut.y, -inf), Vector3::new(inf, inf, inf)),
        ] {
            lattice_in(o, [5, 4, 3], 0.5, lo, hi, |j, p| {
                if p.x >= lo.x && p.x < hi.x && p.y >= lo.y && p.y < hi.y {
                    assert!(got[j as usize].replace(p).is_none());
                }
            });
        }
        assert_eq!(got.into_iter().map(Option::unwrap).collect::<Vec<_>>(), all);
        let all = pyramid(o, 6, 0.5, 0.1, 0.05);
        let mut got = vec![None; all.len()];
        for (lo, hi) in [(Vector3::repeat(-inf), Vector3::new(inf, inf, 1.5)), (Vector3::new(-inf, -inf, 1.5), Vector3::repeat(inf))] {
            pyramid_in(o, 6, 0.5, 0.1, 0.05, lo, hi, |j, p, layer| {
                if p.z >= lo.z && p.z < hi.z {
                    assert!(got[j as usize].replace((p, layer)).is_none());
                }
            });
        }
        assert_eq!(got.into_iter().map(Option::unwrap).collect::<Vec<_>>(), all);
    }

    #[test]
    fn checked_lattice_keeps_the_gap_and_is_the_same_by_region() {
        let t = TriMesh::tetrapod(0.62, 0.124, 9);
        let (o, n, s, gap) = (Vector3::new(0.1, -0.2, 0.7), [5u64, 4, 3], 0.9, 0.01);
        let inf = f64::INFINITY;
        let all = checked_lattice_in(o, n, s, &t, gap, 6, true, Vector3::repeat(-inf), Vector3::repeat(inf)).unwrap();
        assert_eq!(all.iter().map(|b| b.0).collect::<Vec<_>>(), (0..60).collect::<Vec<_>>());
        // Regions: each body claimed by the box holding its centre.
        let cut = Vector3::new(1.2, 0.5, 1.5);
        let mut got = vec![None; all.len()];
        for (lo, hi) in [
            (Vector3::new(-inf, -inf, -inf), Vector3::new(cut.x, cut.y, inf)),
            (Vector3::new(cut.x, -inf, -inf), Vector3::new(inf, cut.y, cut.z)),
            (Vector3::new(cut.x, -inf, cut.z), Vector3::new(inf, cut.y, inf)),
            (Vector3::new(-inf, cut.y, -inf), Vector3::new(inf, inf, inf)),
        ] {
            for (j, p, q) in checked_lattice_in(o, n, s, &t, gap, 6, true, lo, hi).unwrap() {
                if (0..3).all(|a| p[a] >= lo[a] && p[a] < hi[a]) {
                    assert!(got[j as usize].replace((j, p, q)).is_none());
                }
            }
        }
        assert_eq!(got.into_iter().map(Option::unwrap).collect::<Vec<_>>(), all);
        let pose = |b: &(u64, Vector3<f64>, UnitQuaternion<f64>)| Isometry3::from_parts(Translation3::from(b.1), b.2);
        let mut redrawn = 0;
        let mut closest = f64::INFINITY;
        for (x, a) in all.iter().enumerate() {
            redrawn += usize::from(a.2 != orientation_at(6, a.0));
            for b in &all[x + 1..] {
                closest = closest.min(mesh_distance(&t, &pose(a), &t, &pose(b), 1.0));
            }
        }
        assert!(closest >= gap, "two bodies {closest} apart");
        assert!(redrawn > 0, "no orientation redrawn: the test checks nothing");
        // The same orientations alone (no checks) overlap.
        let mut overlaps = 0;
        for (x, a) in all.iter().enumerate() {
            for b in &all[x + 1..] {
                let (pa, pb) = (Isometry3::from_parts(Translation3::from(a.1), orientation_at(6, a.0)), Isometry3::from_parts(Translation3::from(b.1), orientation_at(6, b.0)));
                overlaps += usize::from(mesh_distance(&t, &pa, &t, &pb, gap) < gap);
            }
        }
        assert!(overlaps > 0);
    }

    #[test]
    fn checked_lattice_without_random_orientation_reports_the_blocked_body() {
        let t = TriMesh::tetrapod(0.62, 0.124, 9);
        let inf = f64::INFINITY;
        // Two bodies, the same orientation, 0.3 m apart: the cores overlap.
        let e = checked_lattice_in(Vector3::zeros(), [2, 1, 1], 0.3, &t, 0.01, 1, false, Vector3::repeat(-inf), Vector3::repeat(inf));
        assert_eq!(e, Err(Blocked { j: 1, cell: [1, 0, 0], draws: 1 }));
    }

    #[test]
    fn cell_pack_places_the_count_without_overlap_in_any_cell_order() {
        let (lo, hi) = (Vector3::zeros(), Vector3::new(6.0, 4.0, 4.0));
        let classes = RadiusClasses { shape: vec![0, 1], radius: vec![0.1, 0.15], cumulative: vec![0.5, 1.0] };
        let grid = CellGrid::new(lo, hi, 2000, 0.3 + 0.01, 0.125, 3);
        assert!(grid.cells() >= 8, "{:?}", grid.m);
        let run = |reverse: bool| {
            let mut packing = Packing::new(0.31);
            let mut out = Vec::new();
            for color in 0..8 {
                let mut cells: Vec<u64> = (0..grid.cells()).filter(|&k| CellGrid::color(grid.coords(k)) == color).collect();
                if reverse {
                    cells.reverse();
                }
                for k in cells {
                    out.extend(fill_cell(&grid, grid.coords(k), &classes, 0.01, 1.0, 3, 5, &mut packing).unwrap());
                }
            }
            out.sort_by_key(|b| b.j);
            out
        };
        let a = run(false);
        assert_eq!(a, run(true));
        assert_eq!(a.iter().map(|b| b.j).collect::<Vec<_>>(), (0..2000).collect::<Vec<_>>());
        let spheres: Vec<_> = a.iter().map(|b| (b.position, classes.radius[b.class] + 0.005)).collect();
        assert!(close_pairs(&spheres).is_empty());
        for b in &a {
            let r = classes.radius[b.class];
            assert!((0..3).all(|k| b.position[k] >= lo[k] + r && b.position[k] <= hi[k] - r));
        }
        let big = a.iter().filter(|b| b.class == 1).count();
        assert!((big as f64 - 1000.0).abs() < 100.0, "{big} of 2000 in the larger class");
    }
}
