//! The TOML schema, exactly as users write it. Every table refuses unknown keys.
use crate::scene::{CdMethod, CdScaling, DtControl, FrictionLaw, PgsOrder, SolverKind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
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
    #[serde(default)]
    pub measure: MeasureCfg,
}

/// `[measure]`: the lab measurements (stress tensor, solid fraction,
/// coordination, fabric, inertial number) written with every frame in
/// `/series`, with every thermo line in series.csv and at the end in
/// summary.json (`measures`).
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MeasureCfg {
    /// Lower corner of the box measured in: the free bodies whose centre
    /// is inside (with `box_max`). Default: the cell (per axis the periodic
    /// box, else the innermost walls along that axis, else the bodies'
    /// extent) and every free body.
    #[schemars(extend("x-unit" = "m", "x-default" = "the cell"))]
    pub box_min: Option<[f64; 3]>,
    /// Upper corner of the box measured in (with `box_min`).
    #[schemars(extend("x-unit" = "m", "x-default" = "the cell"))]
    pub box_max: Option<[f64; 3]>,
    /// A free body with fewer force-carrying contacts than this is a
    /// rattler, left out of `coordination_backbone` (removed repeatedly
    /// until none is left). Default: d + 1 (4 in 3D), the fewest contacts
    /// that hold a frictionless sphere; 2 is the usual rule with friction.
    #[schemars(extend("x-default" = "dim + 1"))]
    pub rattler_contacts: Option<u32>,
    /// The stress ratio: "q/p" (default; q = √(3/2 s:s) of the deviator),
    /// or two axes "ab" for the shear cell's τ/σ_n = σ_ab/σ_bb (flow along
    /// a, gradient along b, e.g. "xz").
    #[schemars(extend("x-default" = "q/p"))]
    pub stress_ratio: Option<String>,
}

/// `[[load]]`: an external force at a material point of a body and/or a
/// moment on it, ramped linearly in time (Gay Neto & Wriggers §2.3, eqs
/// 23–24), at the end of each step. At most one per body, which must move.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LoadCfg {
    /// Global body id (explicit bodies 0, 1, ... in file order, then the
    /// generated ones).
    pub body: u64,
    /// Force, world frame (default zero).
    #[schemars(extend("x-unit" = "N", "x-default" = "zero"))]
    pub force: Option<[f64; 3]>,
    /// Where the force acts: offset from the centre of mass in the body
    /// frame, so it turns with the body (default the centre of mass).
    #[schemars(extend("x-unit" = "m", "x-default" = "centre of mass"))]
    pub point: Option<[f64; 3]>,
    /// Moment about the centre of mass, world frame (default zero).
    #[schemars(extend("x-unit" = "N·m", "x-default" = "zero"))]
    pub moment: Option<[f64; 3]>,
    /// The load is zero until this time (default 0), then grows linearly
    /// to its full value at `t_ramp_end`.
    #[schemars(extend("x-unit" = "s", "x-default" = "0"))]
    pub t_start: Option<f64>,
    /// End of the linear ramp from `t_start`: the load is at its full value
    /// from this time on (default `t_start`: a step load).
    #[schemars(extend("x-unit" = "s", "x-default" = "t_start"))]
    pub t_ramp_end: Option<f64>,
}

/// `[compatibility]` (solver = "compatible-cd"): the no-tension truss solve
/// after each CD step (paper olsen-kamrin eq 36).
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("x-solvers" = ["compatible-cd"]))]
pub struct CompatibilityCfg {
    /// "hooke" (p = 2, default) or "hertz" (p = 5/2); excludes `p`.
    #[schemars(extend("x-default" = "hooke"))]
    pub law: Option<ContactLaw>,
    /// Any exponent p > 1 of the bars' energy w_e(c) = k c^p / p (instead of `law`).
    #[schemars(extend("x-default" = "2 (from law)"))]
    pub p: Option<f64>,
    /// "newton" (default), "apgd", "augmented-lagrangian" (frictionless) or
    /// "interior-point" (frictional, Hooke).
    #[schemars(with = "Option<String>", extend("enum" = ["newton", "apgd", "augmented-lagrangian", "interior-point"], "x-default" = "newton"))]
    pub method: Option<crate::scene::CompatMethod>,
    /// Newton steps (default 100; a Newton solve also stops, not converged,
    /// once its gradient norm has not halved in 30 steps) or APGD iterations
    /// (default 200000).
    #[schemars(extend("x-default" = "100 (newton), 200000 (apgd)"))]
    pub max_iterations: Option<u32>,
    /// Solve every this many steps and at every output step (default 1).
    #[schemars(extend("x-unit" = "steps", "x-default" = "1"))]
    pub every: Option<u64>,
    /// Stop when ‖Bᵀf − F̃‖/‖F̃‖ is below this (default 1e-10).
    #[schemars(extend("x-default" = "1e-10"))]
    pub feasibility_tolerance: Option<f64>,
    /// Projected-gradient norm at the end (default 1e-10; augmented-lagrangian only).
    #[schemars(extend("x-default" = "1e-10"))]
    pub optimality_tolerance: Option<f64>,
    /// Augmented-Lagrangian iterations (default 60; augmented-lagrangian only).
    #[schemars(extend("x-default" = "60"))]
    pub max_outer: Option<u32>,
    /// APGD iterations per subproblem (default 20000; augmented-lagrangian only).
    #[schemars(extend("x-default" = "20000"))]
    pub max_inner: Option<u32>,
    /// κ = k_t / k_n, the tangential springs' stiffness relative to the
    /// normal ones (frictional materials; default 2/7: a solid sphere's
    /// tangential and normal contact vibrations then have the same period);
    /// for p ≠ 2 relative to ∂f_n/∂δ, Mindlin's incremental law.
    #[schemars(extend("x-default" = "2/7"))]
    pub tangential_ratio: Option<f64>,
    /// Relative stiffness of material pairs (`[[compatibility.stiffness]]`);
    /// also read by the DEM with `dem.pair_stiffness = true`.
    #[serde(default)]
    #[schemars(extend("x-solvers" = ["compatible-cd", "dem"]))]
    pub stiffness: Vec<StiffnessCfg>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ContactLaw {
    /// p = 2.
    Hooke,
    /// p = 5/2.
    Hertz,
}

/// `[[compatibility.stiffness]] materials = ["a", "b"], k = 0.2`: the
/// relative stiffness k̃ of contacts between two materials (by default from
/// their Young's moduli, else 1).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("x-solvers" = ["compatible-cd", "dem"]))]
pub struct StiffnessCfg {
    /// The names of the two materials.
    pub materials: [String; 2],
    /// Relative stiffness k̃ of their contacts (> 0; dimensionless).
    #[schemars(extend("x-unit" = "1"))]
    pub k: f64,
}

/// Load balance and periodic boundaries.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ParallelCfg {
    /// Rebalance by recursive coordinate bisection when the largest rank
    /// holds this many times the mean work (bodies + the contacts they own).
    #[serde(default = "default_imbalance")]
    #[schemars(extend("x-unit" = "1"))]
    pub imbalance: f64,
    /// Periodic axes [x, y, z]; a periodic axis needs box_min and box_max.
    #[serde(default)]
    pub periodic: [bool; 3],
    /// Lower corner of the periodic box (required with a periodic axis).
    #[schemars(extend("x-unit" = "m", "x-default" = "none"))]
    pub box_min: Option<[f64; 3]>,
    /// Upper corner of the periodic box (required with a periodic axis).
    #[schemars(extend("x-unit" = "m", "x-default" = "none"))]
    pub box_max: Option<[f64; 3]>,
    /// Lees–Edwards simple shear of the periodic box: two periodic axes,
    /// flow then gradient, e.g. "xz": the images across the z period are
    /// shifted along x by ±shear_rate · L_z · t and move at ±shear_rate · L_z.
    /// Under every solver.
    #[schemars(extend("x-default" = "none"))]
    pub lees_edwards: Option<String>,
    /// The shear rate γ̇ of the Lees–Edwards cell (with `lees_edwards`).
    #[schemars(extend("x-unit" = "1/s", "x-default" = "none"))]
    pub shear_rate: Option<f64>,
    /// Stress control of the Lees–Edwards cell: the normal stress σ on its
    /// gradient axis (compressive, Love–Weber over the cell) that its
    /// gradient period follows. After each step the period changes at
    /// −servo_max_speed · clamp(servo_gain · s · (σ − measured)/σ, −1, 1),
    /// the law of a servo wall; the images across that axis move with it.
    #[schemars(extend("x-unit" = "Pa", "x-default" = "none (fixed period)"))]
    pub servo_stress: Option<f64>,
    /// The cell's servo gain g (with `servo_stress`).
    #[schemars(extend("x-unit" = "1", "x-default" = "1"))]
    pub servo_gain: Option<f64>,
    /// The largest rate of the cell's gradient period (required with
    /// `servo_stress`).
    #[schemars(extend("x-unit" = "m/s", "x-default" = "none"))]
    pub servo_max_speed: Option<f64>,
    /// The cell's target stress grows linearly from zero over this time.
    #[schemars(extend("x-unit" = "s", "x-default" = "0"))]
    pub servo_ramp: Option<f64>,
    /// The cell's servo follows the measured stress averaged exponentially
    /// over this time (0: each step's). Rigid grains in flow (cd) give a
    /// stress that jumps from step to step; the law's gain scale halves at
    /// each change of sign of the error, so without an average it freezes.
    #[schemars(extend("x-unit" = "s", "x-default" = "0"))]
    pub servo_average: Option<f64>,
}

impl Default for ParallelCfg {
    fn default() -> Self {
        Self {
            imbalance: default_imbalance(),
            periodic: [false; 3],
            box_min: None,
            box_max: None,
            lees_edwards: None,
            shear_rate: None,
            servo_stress: None,
            servo_gain: None,
            servo_max_speed: None,
            servo_ramp: None,
            servo_average: None,
        }
    }
}

fn default_imbalance() -> f64 {
    1.25
}


/// Implicit barrier DEM (solver = "dem"): interface law, damping, friction,
/// Newmark and Newton settings. Unset values are derived from the scene.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("x-solvers" = ["dem"]))]
pub struct DemCfg {
    /// Activation gap ḡ_n (default: half of contact.distance).
    #[schemars(extend("x-unit" = "m", "x-default" = "contact.distance / 2"))]
    pub gbar: Option<f64>,
    /// Switch fraction f: ḡ̄_n = f ḡ_n (default 0.5).
    #[schemars(extend("x-unit" = "1", "x-default" = "0.5"))]
    pub f: Option<f64>,
    /// ε₁ of the penalty part (default: the force at the switch is 100 times
    /// the heaviest body's weight, or its mass × 1 m/s² without gravity).
    #[schemars(extend("x-unit" = "N/m^n1", "x-default" = "force at the switch = 100 × heaviest weight"))]
    pub eps1: Option<f64>,
    /// n₁ ≥ 1 (default 1.5).
    #[schemars(extend("x-unit" = "1", "x-default" = "1.5"))]
    pub n1: Option<f64>,
    /// n₂ < 0, barrier exponent (default -2).
    #[schemars(extend("x-unit" = "1", "x-default" = "-2"))]
    pub n2: Option<f64>,
    /// Normal damping ratio ζ (default 0).
    #[schemars(extend("x-unit" = "1", "x-default" = "0"))]
    pub damping: Option<f64>,
    /// Cap κ of the damping force, f_d ≤ κ f_n (default: none, eq 53 only).
    #[schemars(extend("x-unit" = "1", "x-default" = "none"))]
    pub damping_cap: Option<f64>,
    /// Tangential penalty ε_t (default: the normal stiffness at the switch).
    #[schemars(extend("x-unit" = "N/m", "x-default" = "normal stiffness at the switch"))]
    pub eps_t: Option<f64>,
    /// Tangential damping ratio ζ_t: c_t = 2 ζ_t √(ε_t m) of eq 54 (default 0).
    #[schemars(extend("x-unit" = "1", "x-default" = "0"))]
    pub damping_t: Option<f64>,
    /// Newmark β in (0, 1] (default 0.3); β = (γ + 1/2)²/4 damps the stiffest modes most.
    #[schemars(extend("x-unit" = "1", "x-default" = "0.3"))]
    pub beta: Option<f64>,
    /// Newmark γ in (0, 1] (default 0.5; above 1/2 the scheme dissipates).
    #[schemars(extend("x-unit" = "1", "x-default" = "0.5"))]
    pub gamma: Option<f64>,
    /// Smallest adaptive time step (default simulation.dt / 1024).
    #[schemars(extend("x-unit" = "s", "x-default" = "simulation.dt / 1024"))]
    pub dt_min: Option<f64>,
    /// Largest adaptive time step (default simulation.dt).
    #[schemars(extend("x-unit" = "s", "x-default" = "simulation.dt"))]
    pub dt_max: Option<f64>,
    /// Newton: absolute residual tolerance (default 1e-10 × the heaviest
    /// body's weight); Newton also stops at the residual's round-off floor.
    #[schemars(extend("x-unit" = "N", "x-default" = "1e-10 × heaviest weight"))]
    pub newton_tolerance: Option<f64>,
    /// Newton: iteration limit of one step (default 30; 1 with newton =
    /// "fixed"); a step that does not converge is redone with a shorter Δt
    /// (with "fixed": taken as it is).
    #[schemars(extend("x-default" = "30 (1 with newton = \"fixed\")"))]
    pub newton_max_iterations: Option<u32>,
    /// Line-search pre-check: no gap may fall below this fraction of its
    /// current value in one Newton step (default 0.1).
    #[schemars(extend("x-unit" = "1", "x-default" = "0.1"))]
    pub gap_fraction: Option<f64>,
    /// Time-step control: an active contact's gap may change by at most
    /// this fraction of its (smaller) value in one step (default 0.2).
    #[schemars(extend("x-unit" = "1", "x-default" = "0.2"))]
    pub gap_change: Option<f64>,
    /// Time-step control: Δt grows (×1.5) after a step that took at most
    /// this many Newton iterations (default 4).
    #[schemars(extend("x-default" = "4"))]
    pub easy_iterations: Option<u32>,
    /// Contact tangent in the Newton Jacobian: "consistent" (default, eq 48)
    /// or "gauss-newton" (without the gap-curvature term F ∇²g).
    #[schemars(with = "Option<String>", extend("enum" = ["consistent", "gauss-newton"], "x-default" = "consistent"))]
    pub tangent: Option<crate::scene::DemTangent>,
    /// How deep closed mesh–mesh pairs are sought: "step" (default, as deep
    /// as the last step could close a gap) or "skin" (contact distance + skin).
    #[schemars(with = "Option<String>", extend("enum" = ["step", "skin"], "x-default" = "step"))]
    pub closed_depth: Option<crate::scene::DemClosedDepth>,
    /// How a Newton step is shortened: "petsc" (default; PETSc's line search
    /// on ‖F‖) or "energy" (to the minimum of the step's energy along it;
    /// for frictionless contacts).
    #[schemars(with = "Option<String>", extend("enum" = ["petsc", "energy"], "x-default" = "petsc"))]
    pub line_search: Option<crate::scene::DemLineSearch>,
    /// Newton in a step: "converged" (default; to the tolerance, else the
    /// step is redone shorter) or "fixed" (at most newton_max_iterations,
    /// default 1 here, the last taken as it is: a linearly implicit step).
    #[schemars(with = "Option<String>", extend("enum" = ["converged", "fixed"], "x-default" = "converged"))]
    pub newton: Option<crate::scene::DemNewton>,
    /// Friction branches of each step's first Newton tangent: "rest"
    /// (default, at the step's start) or "moving" (sliding contacts slide).
    #[schemars(with = "Option<String>", extend("enum" = ["rest", "moving"], "x-default" = "rest"))]
    pub first_tangent: Option<crate::scene::DemFirstTangent>,
    /// Scale ε₁ (and the barrier) of each contact by the relative stiffness
    /// k̃ of its two materials, as compatible-cd does (`[[compatibility.stiffness]]`,
    /// else the series Young's moduli normalised by E_max/2, else 1). Default false.
    #[schemars(extend("x-default" = "false"))]
    pub pair_stiffness: Option<bool>,
}

/// Contact detection: Verlet skin and detection distance (defaults scale
/// with the smallest body).
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContactCfg {
    /// Verlet skin; lists are rebuilt when a body moved more than skin/2.
    #[schemars(extend("x-unit" = "m", "x-default" = "0.2 × smallest bounding radius"))]
    pub skin: Option<f64>,
    /// Contacts are reported while the gap is below this distance.
    #[schemars(extend("x-unit" = "m", "x-default" = "0.1 × smallest bounding radius"))]
    pub distance: Option<f64>,
    /// Second-level Verlet lists of sub-region pairs for mesh–mesh pairs
    /// (default true; false gives the same contacts, searched every step).
    #[schemars(extend("x-default" = "true"))]
    pub entity_lists: Option<bool>,
}

/// The solver, the clock and gravity.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulationCfg {
    /// The physics: "cd" (Contact Dynamics, exact Coulomb friction), "compatible-cd"
    /// (CD plus the compatible contact forces) or "dem" (implicit barrier DEM).
    #[schemars(with = "String", extend("enum" = ["cd", "compatible-cd", "dem"]))]
    pub solver: SolverKind,
    /// 3, or 2: bodies in the plane z = 0, with z, rotations about x and y locked.
    #[serde(default = "default_dim")]
    pub dim: u8,
    /// End time of the run.
    #[schemars(extend("x-unit" = "s"))]
    pub t_end: f64,
    /// Time step (the DEM's largest and first step; it adapts below it);
    /// at most 1e12 steps to t_end.
    #[schemars(extend("x-unit" = "s"))]
    pub dt: f64,
    /// Gravitational acceleration, at most 1e8 m/s² (1e7 g) in magnitude.
    #[serde(default = "default_gravity")]
    #[schemars(extend("x-unit" = "m/s²"))]
    pub gravity: [f64; 3],
    /// Stop before t_end once every body's speed (|v| + |ω| × bounding
    /// radius) stayed below this for 10 consecutive steps.
    #[schemars(extend("x-unit" = "m/s", "x-default" = "none"))]
    pub until_static: Option<f64>,
    /// Overlap of two spheres, or of a sphere and a wall, accepted at the
    /// start under cd and compatible-cd, as a fraction of the smaller radius
    /// (below 1). A pack CD wrote rests with overlaps near its solver
    /// tolerance; one whose frictional steps stopped short of it may overlap
    /// more. The DEM needs positive gaps whatever this says.
    #[schemars(extend("x-default" = "1e-6"))]
    pub start_overlap: Option<f64>,
}

fn default_dim() -> u8 {
    3
}
fn default_gravity() -> [f64; 3] {
    [0.0, 0.0, -9.81]
}

/// A material; the first one is the default of bodies and walls.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MaterialCfg {
    /// Name that shapes, bodies, generators and walls refer to; the first
    /// material is the default.
    pub name: String,
    /// Mass density.
    #[schemars(extend("x-unit" = "kg/m³"))]
    pub density: f64,
    /// Young's modulus: the relative stiffness of compatible-cd's bars and
    /// of the DEM with `pair_stiffness` (series combination of the pair).
    #[schemars(extend("x-unit" = "Pa", "x-default" = "none"))]
    pub young: Option<f64>,
    /// Poisson's ratio, in (-1, 0.5) (checked; not used by the solvers).
    #[schemars(extend("x-unit" = "1", "x-default" = "none"))]
    pub poisson: Option<f64>,
    /// Static Coulomb coefficient μ_s (a contact takes the mean of its two
    /// materials'; a wall its own material's). Refused by cd's `newton` and
    /// compatible-cd's augmented Lagrangian (frictionless).
    #[serde(default)]
    #[schemars(extend("x-unit" = "1"))]
    pub friction: f64,
    /// Dynamic coefficient μ_d (defaults to μ_s; the mean of the two, as μ_s).
    #[schemars(extend("x-unit" = "1", "x-default" = "friction"))]
    pub friction_dynamic: Option<f64>,
    /// Rolling resistance μ_r of `cd`: a contact with a sphere resists the
    /// relative rolling of its bodies with a moment of at most μ_r R f_n
    /// (R = R_a R_b / (R_a + R_b) over its spheres; a wall or mesh side
    /// counts as flat), stopping a rolling sphere at (5/7) μ_r g. The mean of
    /// the two materials' (a wall its own). Refused by compatible-cd.
    #[serde(default)]
    #[schemars(extend("x-unit" = "1", "x-solvers" = ["cd"]))]
    pub rolling_friction: f64,
    /// Twisting resistance μ_tw of `cd`: the moment about the contact normal
    /// is at most μ_tw R f_n (R as for `rolling_friction`), so a sphere
    /// spinning on its single contact stops. The mean of the two materials'.
    #[serde(default)]
    #[schemars(extend("x-unit" = "1", "x-solvers" = ["cd"]))]
    pub twisting_friction: f64,
    /// Normal restitution e_n (a contact uses the smaller of its two
    /// materials'); the DEM damps with `dem.damping` instead.
    #[serde(default)]
    #[schemars(extend("x-unit" = "1", "x-solvers" = ["cd", "compatible-cd"]))]
    pub restitution: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ShapeKind {
    /// `radius`.
    Sphere,
    /// A rectangular box (a mesh of 12 triangles): `size`.
    Box,
    /// A closed, outward-oriented triangle mesh from an STL (ASCII or binary) or OBJ file: `file`, `scale`.
    Mesh,
    /// Four arms along the directions of a regular tetrahedron: `arm_length`, `arm_radius`, `segments`.
    Tetrapod,
}

/// A shape, named for bodies and generators.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ShapeCfg {
    /// Name that bodies and generators refer to.
    pub name: String,
    /// "sphere", "box", "mesh" or "tetrapod".
    pub kind: ShapeKind,
    /// sphere: radius.
    #[schemars(extend("x-unit" = "m", "x-default" = "none (sphere: required)"))]
    pub radius: Option<f64>,
    /// box: edge lengths along the body's x, y, z.
    #[schemars(extend("x-unit" = "m", "x-default" = "none (box: required)"))]
    pub size: Option<[f64; 3]>,
    /// mesh: STL or OBJ file, relative to the config file (given with `--set`: to the working directory).
    #[schemars(extend("x-default" = "none (mesh: required)"))]
    pub file: Option<PathBuf>,
    /// mesh: factor from the file's coordinates to metres.
    #[schemars(extend("x-unit" = "1", "x-default" = "1"))]
    pub scale: Option<f64>,
    /// tetrapod: distance from the centre to an arm's tip (> 2 arm_radius).
    #[schemars(extend("x-unit" = "m", "x-default" = "none (tetrapod: required)"))]
    pub arm_length: Option<f64>,
    /// tetrapod: radius of an arm at its base (the tip has half of it).
    #[schemars(extend("x-unit" = "m", "x-default" = "none (tetrapod: required)"))]
    pub arm_radius: Option<f64>,
    /// tetrapod: sides of each arm's polygonal cross-section (>= 3).
    #[schemars(extend("x-default" = "12"))]
    pub segments: Option<u32>,
}

/// One explicit body; explicit bodies get ids 0, 1, ... in file order.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BodyCfg {
    /// Name of the body's `[[shape]]`.
    pub shape: String,
    /// Name of the body's `[[material]]`.
    #[schemars(extend("x-default" = "the first material"))]
    pub material: Option<String>,
    /// Position of the centre of mass.
    #[schemars(extend("x-unit" = "m"))]
    pub position: [f64; 3],
    /// Unit quaternion (w, x, y, z); normalised on load.
    #[schemars(extend("x-unit" = "1", "x-default" = "[1, 0, 0, 0]"))]
    pub orientation: Option<[f64; 4]>,
    /// Initial velocity of the centre of mass.
    #[serde(default)]
    #[schemars(extend("x-unit" = "m/s"))]
    pub velocity: [f64; 3],
    /// Initial angular velocity, world frame.
    #[serde(default)]
    #[schemars(extend("x-unit" = "rad/s"))]
    pub angular_velocity: [f64; 3],
    /// A fixed body never moves; the contact forces on it are its reaction.
    #[serde(default)]
    pub fixed: bool,
    /// The degrees of freedom that move, in the world frame: any of "x",
    /// "y", "z" (translations) and "rx", "ry", "rz" (rotations). A loaded
    /// piston or plate that holds a stress on a pack: `dofs = ["z"]` with a
    /// `[[load]]`. Default: all six (in 2D: x, y, rz).
    #[schemars(extend("x-default" = "all"))]
    pub dofs: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RandomMethod {
    /// Cells of a global grid filled colour by colour, each from its own
    /// stream: every rank builds only its cells (default).
    #[default]
    Cells,
    /// Serial random sequential addition, repeated on every rank (the whole
    /// pack on every rank: small packs only; denser than the cells' ~0.25
    /// solid fraction).
    Sequential,
}

/// `[[generate]] radius`: a radius distribution of sphere bodies, either
/// `{ min, max, classes }` (uniform over `classes` evenly spaced radii) or
/// `{ values, fractions }` (fractions by number).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RadiusCfg {
    /// Smallest radius (with `max`, `classes`).
    #[schemars(extend("x-unit" = "m", "x-default" = "none"))]
    pub min: Option<f64>,
    /// Largest radius (with `min`, `classes`).
    #[schemars(extend("x-unit" = "m", "x-default" = "none"))]
    pub max: Option<f64>,
    /// Number of evenly spaced radii from `min` to `max`.
    #[schemars(extend("x-default" = "none"))]
    pub classes: Option<u32>,
    /// The radii (with `fractions`).
    #[schemars(extend("x-unit" = "m", "x-default" = "none"))]
    pub values: Option<Vec<f64>>,
    /// Number fraction of each of `values` (summing to 1).
    #[schemars(extend("x-unit" = "1", "x-default" = "none"))]
    pub fractions: Option<Vec<f64>>,
}

/// A generator of bodies: a lattice, a pyramid, a random pack or a file.
/// Generated bodies get ids after the explicit ones, generator by generator.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GenerateCfg {
    /// "lattice", "pyramid", "random" or "file".
    pub kind: GenerateKind,
    /// Shape of the bodies (files: only when the file has no radius column).
    #[schemars(extend("x-default" = "none (required but for files with a radius column)"))]
    pub shape: Option<String>,
    /// Radius distribution of sphere bodies (lattice, random); replaces the
    /// radius of `shape`, which must be a sphere.
    #[schemars(extend("x-default" = "none"))]
    pub radius: Option<RadiusCfg>,
    /// File: path (relative to the config file; given with `--set`: to the working directory).
    #[schemars(extend("x-default" = "none (file: required)"))]
    pub file: Option<PathBuf>,
    /// File: "frames", "csv", "lammps-data" or "lammps-dump" (default from
    /// the extension: .h5 frames, .csv csv, .data lammps-data, .dump lammps-dump).
    #[schemars(with = "Option<String>", extend("enum" = ["frames", "csv", "lammps-data", "lammps-dump"], "x-default" = "from the extension"))]
    pub format: Option<crate::scene::sources::FileFormat>,
    /// File (frames.h5): the step of the frame to start from (default the last).
    #[schemars(extend("x-unit" = "step", "x-default" = "the last frame"))]
    pub frame: Option<u64>,
    /// Random: "cells" (parallel, default) or "sequential".
    #[schemars(extend("x-default" = "cells"))]
    pub method: Option<RandomMethod>,
    /// Material of the bodies.
    #[schemars(extend("x-default" = "the first material"))]
    pub material: Option<String>,
    /// Lattice: first centre. Pyramid: centre of the base layer's bottom.
    #[schemars(extend("x-unit" = "m", "x-default" = "none (lattice, pyramid: required)"))]
    pub origin: Option<[f64; 3]>,
    /// Lattice: bodies along x, y, z, `[nx, ny, nz]`. Random: the number of bodies.
    #[schemars(extend("x-default" = "none (lattice, random: required)"))]
    pub count: Option<CountCfg>,
    /// Lattice: centre spacing (default 2R + gap). Mesh bodies may be spaced
    /// closer than their bounding spheres (at least R + gap/2): each body
    /// then takes the first orientation draw whose mesh keeps `gap` to its
    /// neighbours, the same on any number of ranks; a body that finds none
    /// stops the start-up.
    #[schemars(extend("x-unit" = "m", "x-default" = "2R + gap"))]
    pub spacing: Option<f64>,
    /// Surface gap between neighbours (lattice, pyramid, random).
    #[serde(default)]
    #[schemars(extend("x-unit" = "m"))]
    pub gap: f64,
    /// Pyramid: spheres along the base edge.
    #[schemars(extend("x-default" = "none (pyramid: required)"))]
    pub n: Option<u32>,
    /// Pyramid: extra vertical gap between layers.
    #[serde(default)]
    #[schemars(extend("x-unit" = "m"))]
    pub layer_gap: f64,
    /// Pyramid: fix the base layer (default true).
    #[schemars(extend("x-default" = "true"))]
    pub fix_base: Option<bool>,
    /// Two materials by the parity of the body id: even ids get the first,
    /// odd ids the second (replaces `material`; paper §8.2.2).
    #[schemars(extend("x-default" = "none"))]
    pub material_by_parity: Option<[String; 2]>,
    /// Random: lower corner of the box the bodies' bounding spheres must lie in.
    #[schemars(extend("x-unit" = "m", "x-default" = "none (random: required)"))]
    pub box_min: Option<[f64; 3]>,
    /// Random: upper corner of that box.
    #[schemars(extend("x-unit" = "m", "x-default" = "none (random: required)"))]
    pub box_max: Option<[f64; 3]>,
    /// Random: seed of the deterministic generator.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Random: each body gets a velocity drawn uniformly in [-speed, speed]^dim.
    #[serde(default)]
    #[schemars(extend("x-unit" = "m/s"))]
    pub random_speed: f64,
    /// Random and lattice: turn each body to an orientation drawn uniformly
    /// on SO(3) from `seed` (mesh shapes; the bounding spheres keep the
    /// bodies apart whatever their orientation). Default false.
    #[serde(default)]
    pub random_orientation: bool,
    /// Velocity of every body (files: added to the file's).
    #[serde(default)]
    #[schemars(extend("x-unit" = "m/s"))]
    pub velocity: [f64; 3],
    /// Fix every body of the generator.
    #[serde(default)]
    pub fixed: bool,
}

fn default_seed() -> u64 {
    1
}

/// A lattice takes [nx, ny, nz]; a random pack takes a single number.
#[derive(Debug, Clone, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum CountCfg {
    One(u64),
    Three([u64; 3]),
}

// By hand rather than untagged, so that a wrong value gets a message that
// says what a count is instead of naming this type.
impl<'de> Deserialize<'de> for CountCfg {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        const WANT: &str = "a whole number of bodies (random) or [nx, ny, nz] of whole numbers (lattice)";
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = CountCfg;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(WANT)
            }
            fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<CountCfg, E> {
                Ok(CountCfg::One(n))
            }
            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<CountCfg, E> {
                u64::try_from(n).map(CountCfg::One).map_err(|_| E::custom(format!("expected {WANT}, got {n}")))
            }
            fn visit_f64<E: serde::de::Error>(self, x: f64) -> Result<CountCfg, E> {
                Err(E::custom(format!("expected {WANT}, got {x}")))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<CountCfg, A::Error> {
                let mut n = Vec::new();
                while let Some(x) = seq.next_element::<toml::Value>()? {
                    match x.as_integer().and_then(|i| u64::try_from(i).ok()) {
                        Some(i) => n.push(i),
                        None => return Err(serde::de::Error::custom(format!("expected {WANT}, got an entry {x}"))),
                    }
                }
                <[u64; 3]>::try_from(n.as_slice())
                    .map(CountCfg::Three)
                    .map_err(|_| serde::de::Error::custom(format!("expected {WANT}, got {} numbers", n.len())))
            }
        }
        d.deserialize_any(V)
    }
}

/// An infinite plane; the bodies stay on the side its normal points to.
/// Wall ids are 2^63 + its index.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WallCfg {
    /// A point of the plane (at t = 0 for a moving wall).
    #[schemars(extend("x-unit" = "m"))]
    pub point: [f64; 3],
    /// The plane's normal, towards the side where the bodies are (normalised on load).
    #[schemars(extend("x-unit" = "1"))]
    pub normal: [f64; 3],
    /// Material of the wall.
    #[schemars(extend("x-default" = "the first material"))]
    pub material: Option<String>,
    /// The wall acts for t < until and is removed at that time (default:
    /// never). Lets a box's side walls be taken away (Gay Neto & Wriggers §3.5).
    #[schemars(extend("x-unit" = "s", "x-default" = "never removed"))]
    pub until: Option<f64>,
    /// Prescribed velocity of the wall's point (m/s).
    #[schemars(extend("x-unit" = "m/s", "x-default" = "none (fixed)"))]
    pub velocity: Option<[f64; 3]>,
    /// Prescribed positions [t, x, y, z] of the wall's point, t increasing
    /// from > 0: piecewise linear from `point` at t = 0, constant after
    /// (instead of `velocity`).
    #[schemars(extend("x-unit" = "[s, m, m, m]", "x-default" = "none (fixed)"))]
    pub path: Option<Vec<[f64; 4]>>,
    /// Stress control: the normal stress the wall holds (the compressive
    /// force of the bodies on it over the cell's cross-section normal to
    /// it; the normal must be along an axis). The wall moves along its
    /// normal after each step at max_speed · clamp(gain · (target −
    /// measured)/target, −1, 1) (instead of `velocity` or `path`).
    #[schemars(extend("x-unit" = "Pa", "x-default" = "none"))]
    pub servo_stress: Option<f64>,
    /// Stress control by the force instead of the stress (instead of `servo_stress`).
    #[schemars(extend("x-unit" = "N", "x-default" = "none"))]
    pub servo_force: Option<f64>,
    /// The servo's gain g: within 1/g of the target (relative) the speed
    /// falls in proportion to the error. Stable while g · servo_max_speed ·
    /// Δt · K / target < 2, K the pack's stiffness against the wall (N/m).
    #[schemars(extend("x-unit" = "1", "x-default" = "1"))]
    pub servo_gain: Option<f64>,
    /// The servo wall's largest speed (required with a servo target).
    #[schemars(extend("x-unit" = "m/s", "x-default" = "none"))]
    pub servo_max_speed: Option<f64>,
    /// The servo target grows linearly from zero to its value over this time.
    #[schemars(extend("x-unit" = "s", "x-default" = "0"))]
    pub servo_ramp: Option<f64>,
}

/// What a run writes, and how often.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputCfg {
    /// Directory of frames.h5, frames.xdmf, log.txt, summary.json and the
    /// checkpoints; its parent must exist. Like the mesh and body files, a
    /// relative path written in the config file is relative to the config
    /// file's folder, one given with `--set` (and the default) to the
    /// working directory.
    #[serde(default = "default_out")]
    pub dir: PathBuf,
    /// A frame every this many steps (and the last one).
    #[serde(default = "default_every")]
    #[schemars(extend("x-unit" = "steps"))]
    pub every: u64,
    /// A checkpoint every this many steps (0: none but on a signal or failure).
    #[serde(default)]
    #[schemars(extend("x-unit" = "steps"))]
    pub checkpoint_every: u64,
    /// How many of the newest checkpoints are kept.
    #[serde(default = "default_keep")]
    pub checkpoint_keep: usize,
    /// Also checkpoint after the run's last step (t_end or until_static), so
    /// that a finished run can be extended:
    /// `stiffgrain restart CHECKPOINT --set simulation.t_end=...`.
    #[serde(default = "default_true")]
    pub checkpoint_at_end: bool,
    /// A thermo line (log.txt and the terminal) every this many steps.
    #[serde(default = "default_every")]
    #[schemars(extend("x-unit" = "steps"))]
    pub thermo_every: u64,
    /// Wall-clock seconds after which a thermo line is printed anyway.
    #[serde(default = "default_thermo_seconds")]
    #[schemars(extend("x-unit" = "s (wall clock)"))]
    pub thermo_seconds: f64,
}

impl Default for OutputCfg {
    fn default() -> Self {
        Self {
            dir: default_out(),
            every: default_every(),
            checkpoint_every: 0,
            checkpoint_keep: default_keep(),
            checkpoint_at_end: true,
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

fn default_true() -> bool {
    true
}

/// The CD step's contact solve (cd, and the CD step of compatible-cd; the
/// DEM's Newton settings are in `[dem]`).
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("x-solvers" = ["cd", "compatible-cd"]))]
pub struct SolverCfg {
    /// Stop when max |min(f, Nf + p)| ≤ tolerance × max |p| (relative; on a pack max |p| is about `contact.distance` / Δt). On settled frictional packs 1e-4 ends the steps that stall at 1e-6 (see the CD chapter's friction section).
    #[serde(default = "default_tol")]
    #[schemars(extend("x-unit" = "1"))]
    pub tolerance: f64,
    /// Iteration limit of one step's solve; the run goes on with the best iterate.
    #[serde(default = "default_max_it")]
    pub max_iterations: u32,
    /// "auto" (default: "pgs" with friction, "apgd" without), "apgd" (the
    /// quadratic program), "pgs" (projected Gauss–Seidel; with friction
    /// nonsmooth Gauss–Seidel) or "newton" (PETSc's active-set Newton on
    /// the LCP with N assembled; frictionless; options prefix `cd_`).
    #[serde(default)]
    #[schemars(with = "String", extend("enum" = ["auto", "apgd", "pgs", "newton"]))]
    pub method: CdMethod,
    /// PGS: "forward" (default) or "reverse" contact order within a rank.
    #[serde(default)]
    #[schemars(with = "String", extend("enum" = ["forward", "reverse"]))]
    pub pgs_order: PgsOrder,
    /// Nonsmooth Gauss–Seidel with friction: how many past sweeps Anderson
    /// acceleration mixes into the next (0: plain sweeps; default 5).
    #[serde(default = "default_anderson")]
    pub anderson: u32,
    /// With friction: "coulomb" (default; the exact law: stick, or slide
    /// at μ_d f_n without opening) or "cone" (the convex relaxation of
    /// Chrono's NSC: one QP, but a sliding contact lifts off at about μ|v_t|).
    #[serde(default)]
    #[schemars(with = "String", extend("enum" = ["coulomb", "cone"]))]
    pub friction_law: FrictionLaw,
    /// APGD's metric: "auto" (default: "diagonal" with friction, "none"
    /// without), "none" (plain gradient steps, which pick the
    /// minimum-norm-like forces of an indeterminate pack) or "diagonal"
    /// (each contact's step scaled by the inverse of its diagonal entry of
    /// N: the same motion in fewer iterations, other forces where they are
    /// not unique).
    #[serde(default)]
    #[schemars(with = "String", extend("enum" = ["auto", "none", "diagonal"]))]
    pub scaling: CdScaling,
    /// How `cd` picks each step's Δt: "fixed" (default: simulation.dt every
    /// step) or "iterations" (halved or doubled between simulation.dt and
    /// solver.dt_min, towards the length whose steps cost the fewest
    /// iterations per simulated second: a frictional pour ran 1.7× faster
    /// than at a fixed 1 ms, but the steps taken depend on the rank count,
    /// as the sweeps do; the run ends at t_end, not after a step count).
    #[serde(default)]
    #[schemars(with = "String", extend("enum" = ["fixed", "iterations"]))]
    pub dt_control: DtControl,
    /// `dt_control = "iterations"`: the shortest step (default simulation.dt / 64).
    #[schemars(extend("x-unit" = "s", "x-default" = "simulation.dt / 64"))]
    pub dt_min: Option<f64>,
    /// `dt_control = "iterations"`: a step that needs more iterations tries
    /// a shorter Δt, a few at or below it a longer one.
    #[serde(default = "default_target_iterations")]
    pub target_iterations: u32,
}

impl Default for SolverCfg {
    fn default() -> Self {
        Self {
            tolerance: default_tol(),
            max_iterations: default_max_it(),
            method: CdMethod::default(),
            pgs_order: PgsOrder::default(),
            anderson: default_anderson(),
            friction_law: FrictionLaw::default(),
            scaling: CdScaling::default(),
            dt_control: DtControl::default(),
            dt_min: None,
            target_iterations: default_target_iterations(),
        }
    }
}

fn default_tol() -> f64 {
    1e-8
}
fn default_max_it() -> u32 {
    10_000
}
fn default_anderson() -> u32 {
    5
}
fn default_target_iterations() -> u32 {
    25
}
