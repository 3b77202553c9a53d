//! The TOML schema, exactly as users write it. Every table refuses unknown keys.
use crate::scene::{CdMethod, PgsOrder, SolverKind};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub simulation: SimulationCfg,
    #[serde(default)]
    pub material: Vec<MaterialCfg>,
    #[serde(default)]
    pub shape: Vec<ShapeCfg>,
    #[serde(default)]
    pub body: Vec<BodyCfg>,
    #[serde(default)]
    pub generate: Vec<GenerateCfg>,
    #[serde(default)]
    pub wall: Vec<WallCfg>,
    #[serde(default)]
    pub output: OutputCfg,
    #[serde(default)]
    pub solver: SolverCfg,
    #[serde(default)]
    pub contact: ContactCfg,
    #[serde(default)]
    pub parallel: ParallelCfg,
    #[serde(default)]
    pub dem: DemCfg,
    #[serde(default)]
    pub compatibility: CompatibilityCfg,
    #[serde(default)]
    pub load: Vec<LoadCfg>,
}

/// `[[load]]` (solver = "dem"): an external force at a material point of a
/// body and/or a moment on it, ramped linearly in time (Gay Neto & Wriggers
/// §2.3, eqs 23–24).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LoadCfg {
    /// Global body id (explicit bodies 0, 1, ... in file order, then the
    /// generated ones).
    pub body: u64,
    /// Force, world frame (default zero).
    pub force: Option<[f64; 3]>,
    /// Where the force acts: offset from the centre of mass in the body
    /// frame, so it turns with the body (default the centre of mass).
    pub point: Option<[f64; 3]>,
    /// Moment, world frame (default zero).
    pub moment: Option<[f64; 3]>,
    /// The load is zero until this time (default 0) ...
    pub t_start: Option<f64>,
    /// ... and grows linearly to its full value at this time, constant
    /// afterwards (default `t_start`: a step load).
    pub t_ramp_end: Option<f64>,
}

/// `[compatibility]` (solver = "compatible-cd"): the no-tension truss solve
/// after each CD step (paper olsen-kamrin eq 36).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CompatibilityCfg {
    /// "hooke" (p = 2, default) or "hertz" (p = 5/2); excludes `p`.
    pub law: Option<ContactLaw>,
    /// Any exponent p > 1 of w_e(c) = k c^p / p.
    pub p: Option<f64>,
    /// "newton" (default), "apgd" or "augmented-lagrangian".
    pub method: Option<crate::scene::CompatMethod>,
    /// Newton steps (default 100) or APGD iterations (default 200000).
    pub max_iterations: Option<u32>,
    /// Solve every this many steps and at every output step (default 1).
    pub every: Option<u64>,
    /// ‖Bᵀf − F̃‖/‖F̃‖ at the end (default 1e-10).
    pub feasibility_tolerance: Option<f64>,
    /// Projected-gradient norm at the end (default 1e-10; augmented-lagrangian only).
    pub optimality_tolerance: Option<f64>,
    /// Augmented-Lagrangian iterations (default 60; augmented-lagrangian only).
    pub max_outer: Option<u32>,
    /// APGD iterations per subproblem (default 20000; augmented-lagrangian only).
    pub max_inner: Option<u32>,
    /// Relative stiffness of material pairs.
    #[serde(default)]
    pub stiffness: Vec<StiffnessCfg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContactLaw {
    Hooke,
    Hertz,
}

/// `[[compatibility.stiffness]] materials = ["a", "b"], k = 0.2`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StiffnessCfg {
    pub materials: [String; 2],
    pub k: f64,
}

/// Load balance.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ParallelCfg {
    /// Rebalance by recursive coordinate bisection when the largest rank
    /// holds this many times the mean work (bodies + the contacts they own).
    #[serde(default = "default_imbalance")]
    pub imbalance: f64,
    /// Periodic axes [x, y, z]; a periodic axis needs box_min and box_max.
    #[serde(default)]
    pub periodic: [bool; 3],
    pub box_min: Option<[f64; 3]>,
    pub box_max: Option<[f64; 3]>,
}

impl Default for ParallelCfg {
    fn default() -> Self {
        Self { imbalance: default_imbalance(), periodic: [false; 3], box_min: None, box_max: None }
    }
}

fn default_imbalance() -> f64 {
    1.25
}


/// Implicit barrier DEM (solver = "dem"): interface law, damping, friction,
/// Newmark and Newton settings. Unset values are derived from the scene.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DemCfg {
    /// Activation gap ḡ_n (default: half of contact.distance).
    pub gbar: Option<f64>,
    /// Switch fraction f: ḡ̄_n = f ḡ_n (default 0.5).
    pub f: Option<f64>,
    /// ε₁ of the penalty part (default: the force at the switch is 100 times
    /// the heaviest body's weight, or its mass × 1 m/s² without gravity).
    pub eps1: Option<f64>,
    /// n₁ ≥ 1 (default 1.5).
    pub n1: Option<f64>,
    /// n₂ < 0, barrier exponent (default -2).
    pub n2: Option<f64>,
    /// Normal damping ratio ζ (default 0).
    pub damping: Option<f64>,
    /// Cap κ of the damping force, f_d ≤ κ f_n (default: none, eq 53 only).
    pub damping_cap: Option<f64>,
    /// Tangential penalty ε_t (default: the normal stiffness at the switch).
    pub eps_t: Option<f64>,
    /// Tangential damping ratio ζ_t: c_t = 2 ζ_t √(ε_t m) of eq 54 (default 0).
    pub damping_t: Option<f64>,
    /// Newmark β (default 0.3) and γ (default 0.5).
    pub beta: Option<f64>,
    pub gamma: Option<f64>,
    /// Smallest and largest time step (defaults simulation.dt / 1024 and simulation.dt).
    pub dt_min: Option<f64>,
    pub dt_max: Option<f64>,
    /// Newton: absolute residual tolerance (default 1e-10 × heaviest weight
    /// scale) and iteration limit (default 30).
    pub newton_tolerance: Option<f64>,
    pub newton_max_iterations: Option<u32>,
    /// Line-search pre-check: no gap may fall below this fraction of its
    /// current value in one Newton step (default 0.1).
    pub gap_fraction: Option<f64>,
    /// Time-step control: an active contact's gap may change by at most
    /// this fraction of its (smaller) value in one step (default 0.2).
    pub gap_change: Option<f64>,
    /// Time-step control: Δt grows (×1.5) after a step that took at most
    /// this many Newton iterations (default 4).
    pub easy_iterations: Option<u32>,
    /// Contact tangent in the Newton Jacobian: "consistent" (default, eq 48)
    /// or "gauss-newton" (without the gap-curvature term F ∇²g).
    pub tangent: Option<crate::scene::DemTangent>,
    /// How deep closed mesh–mesh pairs are sought: "step" (default, as deep
    /// as the last step could close a gap) or "skin" (contact distance + skin).
    pub closed_depth: Option<crate::scene::DemClosedDepth>,
    /// How a Newton step is shortened: "petsc" (default; PETSc's line search
    /// on ‖F‖) or "energy" (to the minimum of the step's energy along it;
    /// for frictionless contacts).
    pub line_search: Option<crate::scene::DemLineSearch>,
    /// Friction branches of each step's first Newton tangent: "rest"
    /// (default, at the step's start) or "moving" (sliding contacts slide).
    pub first_tangent: Option<crate::scene::DemFirstTangent>,
    /// Scale ε₁ (and the barrier) of each contact by the relative stiffness
    /// k̃ of its two materials, as compatible-cd does (`[[compatibility.stiffness]]`,
    /// else the series Young's moduli normalised by E_max/2, else 1). Default false.
    pub pair_stiffness: Option<bool>,
}

/// Contact detection: Verlet skin and detection distance (defaults scale
/// with the smallest body).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ContactCfg {
    /// Verlet skin; lists are rebuilt when a body moved more than skin/2.
    pub skin: Option<f64>,
    /// Contacts are reported while the gap is below this distance.
    pub distance: Option<f64>,
    /// Second-level Verlet lists of sub-region pairs for mesh–mesh pairs
    /// (default true; false gives the same contacts, searched every step).
    pub entity_lists: Option<bool>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SimulationCfg {
    pub solver: SolverKind,
    #[serde(default = "default_dim")]
    pub dim: u8,
    pub t_end: f64,
    pub dt: f64,
    #[serde(default = "default_gravity")]
    pub gravity: [f64; 3],
    /// Stop before t_end once every body's speed stays below this (m/s).
    pub until_static: Option<f64>,
}

fn default_dim() -> u8 {
    3
}
fn default_gravity() -> [f64; 3] {
    [0.0, 0.0, -9.81]
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MaterialCfg {
    pub name: String,
    pub density: f64,
    pub young: Option<f64>,
    pub poisson: Option<f64>,
    /// Static Coulomb coefficient μ_s.
    #[serde(default)]
    pub friction: f64,
    /// Dynamic coefficient μ_d (defaults to μ_s).
    pub friction_dynamic: Option<f64>,
    /// Normal restitution e_n (CD).
    #[serde(default)]
    pub restitution: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShapeKind {
    Sphere,
    Box,
    Mesh,
    Tetrapod,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ShapeCfg {
    pub name: String,
    pub kind: ShapeKind,
    /// sphere
    pub radius: Option<f64>,
    /// box: edge lengths
    pub size: Option<[f64; 3]>,
    /// mesh: STL or OBJ file, relative to the config file
    pub file: Option<PathBuf>,
    /// mesh: scale factor applied to the file's coordinates
    pub scale: Option<f64>,
    /// tetrapod: distance from the centre to an arm's tip (> 2 arm_radius)
    pub arm_length: Option<f64>,
    /// tetrapod: radius of an arm at its base (the tip has half of it)
    pub arm_radius: Option<f64>,
    /// tetrapod: sides of each arm's polygonal cross-section (>= 3, default 12)
    pub segments: Option<u32>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BodyCfg {
    pub shape: String,
    pub material: Option<String>,
    pub position: [f64; 3],
    /// Unit quaternion (w, x, y, z); normalised on load.
    pub orientation: Option<[f64; 4]>,
    #[serde(default)]
    pub velocity: [f64; 3],
    #[serde(default)]
    pub angular_velocity: [f64; 3],
    #[serde(default)]
    pub fixed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum GenerateKind {
    /// count[0] × count[1] × count[2] bodies from `origin`, centre spacing 2R + gap.
    Lattice,
    /// Square (cannonball) pyramid of spheres: n along the base edge, base centre at `origin`.
    Pyramid,
    /// Random loose pack of `count` non-overlapping bodies in [box_min, box_max].
    Random,
    /// Bodies read from `file` (frames.h5, CSV, LAMMPS data or dump).
    File,
}

/// `[[generate]] method` of a random pack.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RandomMethod {
    /// Cells of a global grid filled colour by colour, each from its own
    /// stream: every rank builds only its cells (default).
    #[default]
    Cells,
    /// The serial random sequential addition of earlier versions, repeated
    /// on every rank (whole scene on every rank: small packs only).
    Sequential,
}

/// `[[generate]] radius`: a radius distribution of sphere bodies, either
/// `{ min, max, classes }` (uniform over `classes` evenly spaced radii) or
/// `{ values, fractions }` (fractions by number).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RadiusCfg {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub classes: Option<u32>,
    pub values: Option<Vec<f64>>,
    pub fractions: Option<Vec<f64>>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GenerateCfg {
    pub kind: GenerateKind,
    /// Shape of the bodies (files: only when the file has no radius column).
    pub shape: Option<String>,
    /// Radius distribution of sphere bodies (lattice, random); replaces the
    /// radius of `shape`, which must be a sphere.
    pub radius: Option<RadiusCfg>,
    /// File: path (relative to the config file).
    pub file: Option<PathBuf>,
    /// File: "frames", "csv", "lammps-data" or "lammps-dump" (default from
    /// the extension: .h5 frames, .csv csv, .data lammps-data, .dump lammps-dump).
    pub format: Option<crate::scene::sources::FileFormat>,
    /// File (frames.h5): the step of the frame to start from (default the last).
    pub frame: Option<u64>,
    /// Random: "cells" (parallel, default) or "sequential".
    pub method: Option<RandomMethod>,
    pub material: Option<String>,
    /// Lattice: first centre. Pyramid: centre of the base layer's bottom.
    pub origin: Option<[f64; 3]>,
    /// Lattice: bodies along x, y, z.
    pub count: Option<CountCfg>,
    /// Lattice: centre spacing (default 2R + gap). Mesh bodies may be spaced
    /// closer than their bounding spheres (at least R + gap/2): each body
    /// then takes the first orientation draw whose mesh keeps `gap` to its
    /// neighbours (see README "Config").
    pub spacing: Option<f64>,
    /// Surface gap between neighbours (lattice, pyramid, random).
    #[serde(default)]
    pub gap: f64,
    /// Pyramid: spheres along the base edge.
    pub n: Option<u32>,
    /// Pyramid: extra vertical gap between layers.
    #[serde(default)]
    pub layer_gap: f64,
    /// Pyramid: fix the base layer (default true).
    pub fix_base: Option<bool>,
    /// Two materials by the parity of the body id: even ids get the first,
    /// odd ids the second (replaces `material`; paper §8.2.2).
    pub material_by_parity: Option<[String; 2]>,
    /// Random: the box the bodies' bounding spheres must lie in.
    pub box_min: Option<[f64; 3]>,
    pub box_max: Option<[f64; 3]>,
    /// Random: seed of the deterministic generator.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Random: each body gets a velocity drawn uniformly in [-speed, speed]^dim.
    #[serde(default)]
    pub random_speed: f64,
    /// Random and lattice: turn each body to an orientation drawn uniformly
    /// on SO(3) from `seed` (mesh shapes; the bounding spheres keep the
    /// bodies apart whatever their orientation). Default false.
    #[serde(default)]
    pub random_orientation: bool,
    #[serde(default)]
    pub velocity: [f64; 3],
    #[serde(default)]
    pub fixed: bool,
}

fn default_seed() -> u64 {
    1
}

/// A lattice takes [nx, ny, nz]; a random pack takes a single number.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(untagged)]
pub enum CountCfg {
    One(u64),
    Three([u64; 3]),
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct WallCfg {
    pub point: [f64; 3],
    pub normal: [f64; 3],
    pub material: Option<String>,
    /// The wall acts for t < until and is removed at that time (default:
    /// never). Lets a box's side walls be taken away (Gay Neto & Wriggers §3.5).
    pub until: Option<f64>,
    /// Prescribed velocity of the wall's point (m/s).
    pub velocity: Option<[f64; 3]>,
    /// Prescribed positions [t, x, y, z] of the wall's point, t increasing
    /// from > 0: piecewise linear from `point` at t = 0, constant after.
    pub path: Option<Vec<[f64; 4]>>,
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct OutputCfg {
    #[serde(default = "default_out")]
    pub dir: PathBuf,
    #[serde(default = "default_every")]
    pub every: u64,
    #[serde(default)]
    pub checkpoint_every: u64,
    #[serde(default = "default_keep")]
    pub checkpoint_keep: usize,
    /// Also checkpoint after the run's last step (t_end or until_static), so
    /// that `restart --set ...` continues from the end. Default false.
    #[serde(default)]
    pub checkpoint_at_end: bool,
    #[serde(default = "default_every")]
    pub thermo_every: u64,
    /// Wall-clock seconds after which a thermo line is printed anyway.
    #[serde(default = "default_thermo_seconds")]
    pub thermo_seconds: f64,
}

impl Default for OutputCfg {
    fn default() -> Self {
        Self {
            dir: default_out(),
            every: default_every(),
            checkpoint_every: 0,
            checkpoint_keep: default_keep(),
            checkpoint_at_end: false,
            thermo_every: default_every(),
            thermo_seconds: default_thermo_seconds(),
        }
    }
}

fn default_out() -> PathBuf {
    PathBuf::from("OUT")
}
fn default_thermo_seconds() -> f64 {
    10.0
}
fn default_every() -> u64 {
    100
}
fn default_keep() -> usize {
    2
}

#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SolverCfg {
    #[serde(default = "default_tol")]
    pub tolerance: f64,
    #[serde(default = "default_max_it")]
    pub max_iterations: u32,
    /// `cd`: "apgd" (default) or "pgs".
    #[serde(default)]
    pub method: CdMethod,
    /// `cd` with PGS: "forward" (default) or "reverse" contact order within a rank.
    #[serde(default)]
    pub pgs_order: PgsOrder,
}

impl Default for SolverCfg {
    fn default() -> Self {
        Self {
            tolerance: default_tol(),
            max_iterations: default_max_it(),
            method: CdMethod::default(),
            pgs_order: PgsOrder::default(),
        }
    }
}

fn default_tol() -> f64 {
    1e-8
}
fn default_max_it() -> u32 {
    10_000
}
