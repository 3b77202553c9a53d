//! The resolved scene a run starts from: everything the solvers need, nothing
//! TOML-specific. Built by `config` (validation) through the generators here.
pub mod generate;
pub mod memory;
pub mod sources;
use crate::body::{Bodies, Shape};
use nalgebra::Vector3;

/// Which physics advances the scene.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SolverKind {
    Cd,
    CompatibleCd,
    Dem,
}

impl SolverKind {
    pub fn name(self) -> &'static str {
        match self {
            SolverKind::Cd => "cd",
            SolverKind::CompatibleCd => "compatible-cd",
            SolverKind::Dem => "dem",
        }
    }
}

/// A material; the solvers pick the fields their laws use.
#[derive(Clone, Debug, PartialEq)]
pub struct Material {
    pub name: String,
    pub density: f64,
    pub young: Option<f64>,
    pub poisson: Option<f64>,
    pub friction_static: f64,
    pub friction_dynamic: f64,
    /// cd's rolling and twisting resistances μ_r, μ_tw.
    pub rolling_friction: f64,
    pub twisting_friction: f64,
    pub restitution: f64,
}

/// How a wall's point moves in time (the normal stays): a prescribed
/// motion, whatever the contact forces on the wall.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum WallMotion {
    #[default]
    Fixed,
    /// point(t) = point(0) + v t.
    Velocity(Vector3<f64>),
    /// point(t) piecewise linear through (0, point(0)) and these (t_k, x_k),
    /// t_k increasing; constant after the last.
    Path(Vec<(f64, Vector3<f64>)>),
    /// Stress control: the wall moves along its normal at a speed the World
    /// sets after each step from its measured reaction ([`Servo::control`]).
    Servo(Servo),
}

/// What a servo wall holds: a normal force, or a normal stress over the
/// cell's cross-section.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ServoTarget {
    /// N, the compressive force the bodies exert on the wall.
    Force(f64),
    /// Pa, that force divided by the cell's cross-section normal to the wall.
    Stress(f64),
}

/// A stress-controlled wall (`[[wall]] servo_*`): its settings and where it
/// is, `point(t) = anchor + speed (t − since) n` from the last control.
#[derive(Clone, Debug, PartialEq)]
pub struct Servo {
    pub target: ServoTarget,
    /// Dimensionless gain g of the control law.
    pub gain: f64,
    /// Largest speed of the wall, m/s.
    pub max_speed: f64,
    /// The target grows linearly from 0 at t = 0 to its full value at this time, s.
    pub ramp: f64,
    /// The point at `since` and the speed along the normal from then on.
    pub anchor: Vector3<f64>,
    pub since: f64,
    pub speed: f64,
    /// The gain's present scale s (in [`Servo::MIN_SCALE`], 1]) and the
    /// relative error of the last control.
    pub scale: f64,
    pub error: f64,
}

impl Servo {
    pub fn new(target: ServoTarget, gain: f64, max_speed: f64, ramp: f64, point: Vector3<f64>) -> Self {
        Self { target, gain, max_speed, ramp, anchor: point, since: 0.0, speed: 0.0, scale: 1.0, error: 0.0 }
    }

    /// The smallest scale of the gain.
    pub const MIN_SCALE: f64 = 1e-6;
    /// The scale's growth per control without a change of sign of the error.
    pub const SCALE_GROWTH: f64 = 1.01;

    /// The target force at time `t` with the cross-section `area` (m²).
    pub fn target_force(&self, t: f64, area: f64) -> f64 {
        let full = match self.target {
            ServoTarget::Force(f) => f,
            ServoTarget::Stress(s) => s * area,
        };
        if self.ramp > 0.0 && t < self.ramp {
            full * t / self.ramp
        } else {
            full
        }
    }

    /// The control law, applied after each step at time `t` with `measured`
    /// the compressive force the bodies exert on the wall (N) and `target`
    /// the force to hold: with the relative error e = (target − measured) /
    /// target the wall moves towards the bodies (along its normal) at
    ///
    /// speed = max_speed · clamp(gain · s · e, −1, 1)
    ///
    /// from `point` on: far from the target at `max_speed`, within 1/(gain s)
    /// of it in proportion to the error, and at the target it stops. For a
    /// pack of stiffness K against the wall (N/m) the proportional law is
    /// stable when gain · s · max_speed · Δt · K / target < 2, without
    /// overshoot below 1; K is not known beforehand and grows as a pack
    /// densifies, so the scale s adapts: halved whenever e changes sign (an
    /// overshoot), grown by 1 % per control otherwise, within [1e-6, 1].
    /// The wall then settles wherever the proportional law alone would
    /// oscillate (the rigid contacts of cd make K unbounded).
    pub fn control(&mut self, t: f64, point: Vector3<f64>, measured: f64, target: f64) {
        let e = if target != 0.0 { (target - measured) / target.abs() } else { -measured.signum() };
        self.scale = if e * self.error < 0.0 { 0.5 * self.scale } else { Self::SCALE_GROWTH * self.scale }.clamp(Self::MIN_SCALE, 1.0);
        self.error = e;
        self.anchor = point;
        self.since = t;
        self.speed = self.max_speed * (self.gain * self.scale * e).clamp(-1.0, 1.0);
    }
}

/// An infinite plane; bodies stay on the side the normal points to.
#[derive(Clone, Debug, PartialEq)]
pub struct Wall {
    /// The point at the current time (`origin` moved by `motion`).
    pub point: Vector3<f64>,
    pub normal: Vector3<f64>,
    /// The point at t = 0.
    pub origin: Vector3<f64>,
    pub motion: WallMotion,
    pub material: u32,
    /// The wall acts while t < until, then is gone (`f64::INFINITY`: always).
    /// Removed walls keep their index, so wall ids stay 2^63 + index.
    pub until: f64,
    /// Set by the time loop once t >= until: contact detection skips it.
    pub removed: bool,
}

impl Wall {
    /// A wall that is never removed.
    pub fn new(point: Vector3<f64>, normal: Vector3<f64>, material: u32) -> Self {
        Self { point, normal, origin: point, motion: WallMotion::Fixed, material, until: f64::INFINITY, removed: false }
    }

    /// The wall's point at time `t`.
    pub fn position(&self, t: f64) -> Vector3<f64> {
        match &self.motion {
            WallMotion::Fixed => self.origin,
            WallMotion::Velocity(v) => self.origin + v * t,
            WallMotion::Path(path) => {
                let (mut t0, mut x0) = (0.0, self.origin);
                for &(t1, x1) in path {
                    if t <= t1 {
                        return if t <= t0 { x0 } else { x0 + (x1 - x0) * ((t - t0) / (t1 - t0)) };
                    }
                    (t0, x0) = (t1, x1);
                }
                x0
            }
            WallMotion::Servo(s) => s.anchor + self.normal * (s.speed * (t - s.since)),
        }
    }

    /// Displacement of the wall from `t` to `t + dt`.
    pub fn displacement(&self, t: f64, dt: f64) -> Vector3<f64> {
        match self.motion {
            WallMotion::Fixed => Vector3::zeros(),
            _ => self.position(t + dt) - self.position(t),
        }
    }

    pub fn moves(&self) -> bool {
        self.motion != WallMotion::Fixed
    }

    /// Whether the wall acts at time `t`.
    pub fn active(&self, t: f64) -> bool {
        t < self.until
    }
}

/// Time integration settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Simulation {
    pub solver: SolverKind,
    pub dim: u8,
    pub t_end: f64,
    pub dt: f64,
    pub gravity: Vector3<f64>,
    /// Stop once the largest body speed (|v| + |ω| · bounding radius) has
    /// stayed below this for [`STATIC_STEPS`] steps (None: run to t_end).
    pub until_static: Option<f64>,
    /// Overlap accepted at the start, as a fraction of the smaller radius
    /// (cd, compatible-cd; the DEM needs gaps).
    pub start_overlap: f64,
}

impl Simulation {
    /// What a refused start overlap is measured against, for its message.
    pub fn overlap_hint(&self) -> String {
        format!("more than simulation.start_overlap = {:e} of the radius", self.start_overlap)
    }
}

/// Consecutive quiet steps that make a run static (`until_static`).
pub const STATIC_STEPS: u64 = 10;

/// The default of `simulation.start_overlap`: the overlap of a body with a
/// wall or another body accepted at start, as a fraction of its radius, for
/// the rigid solvers (the DEM needs gaps): a pack written by CD rests with
/// overlaps at its solver tolerance (~1e-8 r), and reading it back must not
/// fail; a typo in a position is far larger.
pub const START_OVERLAP: f64 = 1e-6;

/// Where and how often a run writes.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub dir: std::path::PathBuf,
    /// Steps between frames (0: only the first and last).
    pub every: u64,
    /// Steps between checkpoints (0: none).
    pub checkpoint_every: u64,
    /// Checkpoints kept on disk.
    pub checkpoint_keep: usize,
    /// Also a checkpoint after the run's last step.
    pub checkpoint_at_end: bool,
    /// Steps between thermo lines.
    pub thermo_every: u64,
    /// Wall-clock seconds after which a thermo line is printed anyway.
    pub thermo_seconds: f64,
}

/// How the `cd` solver solves its contact problem each step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CdMethod {
    /// `Pgs` with friction, `Apgd` without: the faster of the two on the
    /// packs measured (BENCHMARKS.md), and without friction the forces of
    /// the QP rather than PGS's order-dependent ones.
    #[default]
    Auto,
    /// Accelerated projected gradient descent on the QP (22) (Mazhar et al. 2015).
    Apgd,
    /// Projected Gauss–Seidel on the LCP (21); the forces depend on the contact order.
    Pgs,
    /// PETSc's variational-inequality Newton (active set) on the LCP (21), N assembled.
    Newton,
}

impl CdMethod {
    /// The method that runs: `Auto` resolved for a scene with or without friction.
    pub fn resolved(self, friction: bool) -> Self {
        match self {
            CdMethod::Auto if friction => CdMethod::Pgs,
            CdMethod::Auto => CdMethod::Apgd,
            m => m,
        }
    }
}

/// Order in which PGS visits a rank's contacts (Jacobi between ranks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PgsOrder {
    /// Contact list order (canonical (a, b, sub_a, sub_b) order of detection).
    #[default]
    Forward,
    /// The reverse of `Forward`.
    Reverse,
}

/// How compatible-cd solves its compatibility problem (eq 36).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompatMethod {
    /// Newton (PETSc SNES + KSP) on the dual over body displacements.
    #[default]
    Newton,
    /// Accelerated gradient on the same dual.
    Apgd,
    /// The paper's augmented Lagrangian over the forces (APGD subproblems).
    AugmentedLagrangian,
    /// Interior point over the forces (frictional, Hooke).
    InteriorPoint,
}

/// `solver = "compatible-cd"`: the compatibility post-process (the
/// `[compatibility]` table; see `crate::compat`).
#[derive(Clone, Debug, PartialEq)]
pub struct CompatSettings {
    /// Power-law exponent p > 1 of the contact law w_e(c) = k c^p / p:
    /// 2 Hookean, 5/2 Hertzian.
    pub p: f64,
    pub method: CompatMethod,
    /// Newton steps (newton) or iterations (apgd).
    pub max_iterations: u32,
    /// Solve every this many steps (and at every output step).
    pub every: u64,
    /// Stop when ‖Bᵀf − F̃‖₂/‖F̃‖₂ is at most this …
    pub feasibility_tolerance: f64,
    /// … and the projected gradient of the Lagrangian (forces scaled by
    /// ‖F̃‖∞) is at most this (∞-norm).
    pub optimality_tolerance: f64,
    /// Augmented-Lagrangian (outer) iterations.
    pub max_outer: u32,
    /// APGD iterations per subproblem.
    pub max_inner: u32,
    /// κ = k_t / k_n of the tangential springs (frictional scenes; for
    /// p ≠ 2 k_t / (∂f_n/∂δ), Mindlin's incremental stiffness).
    pub tangential_ratio: f64,
}

impl Default for CompatSettings {
    fn default() -> Self {
        Self {
            p: 2.0,
            method: CompatMethod::Newton,
            max_iterations: 100,
            every: 1,
            feasibility_tolerance: 1e-10,
            optimality_tolerance: 1e-10,
            max_outer: 60,
            max_inner: 20_000,
            tangential_ratio: 2.0 / 7.0,
        }
    }
}

/// Settings that only the solver owning them reads (`[solver]`, `[dem]`,
/// `[compatibility]`). Config resolves them only when that solver runs the
/// scene, so their defaults never have to make sense for a scene another
/// solver runs (the DEM's activation gap needs contact.distance > 0, CD
/// does not). Reading them under another solver is a bug: it panics.
#[derive(Clone, Debug, PartialEq)]
pub struct SolverOwned<T> {
    /// The table they come from, to name it if read by the wrong solver.
    table: &'static str,
    settings: Option<T>,
}

impl<T> SolverOwned<T> {
    /// Settings of the solver that runs the scene.
    pub fn resolved(table: &'static str, settings: T) -> Self {
        Self { table, settings: Some(settings) }
    }

    /// The settings of a solver that does not run the scene.
    pub fn unused(table: &'static str) -> Self {
        Self { table, settings: None }
    }

    pub fn get(&self) -> Option<&T> {
        self.settings.as_ref()
    }
}

impl<T> std::ops::Deref for SolverOwned<T> {
    type Target = T;
    fn deref(&self) -> &T {
        match &self.settings {
            Some(s) => s,
            None => panic!("the {} settings were read, but the scene's solver does not use them", self.table),
        }
    }
}

/// `[solver]`: tolerances and limits of the CD step (cd, compatible-cd).
#[derive(Clone, Debug, PartialEq)]
pub struct SolverSettings {
    /// Relative residual tolerance (the `cd` stopping rule: see `cd::apgd`).
    pub tolerance: f64,
    pub max_iterations: u32,
    /// `cd`: APGD (default) or PGS.
    pub method: CdMethod,
    /// `cd` with PGS: contact order within a rank.
    pub pgs_order: PgsOrder,
    /// `cd` with nonsmooth Gauss–Seidel: Anderson depth (0: off).
    pub anderson: usize,
    /// `cd` with friction: the exact Coulomb law or its cone relaxation.
    pub friction_law: FrictionLaw,
    /// `cd` with APGD: the step's metric.
    pub scaling: CdScaling,
    /// `cd`: Δt chosen from the solve's iterations (None: simulation.dt).
    pub step_control: Option<StepControlSettings>,
}

/// `[solver] dt_control = "iterations"`, resolved.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepControlSettings {
    pub dt_min: f64,
    pub target_iterations: u64,
}

/// How `cd` picks each step's Δt (`[solver] dt_control`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DtControl {
    /// simulation.dt every step.
    #[default]
    Fixed,
    /// Halved or doubled from the iterations of the steps (`cd::step_control`).
    Iterations,
}

/// APGD's metric in `cd` (`[solver] scaling`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CdScaling {
    /// `diagonal` when a material has friction, `none` otherwise.
    #[default]
    Auto,
    /// Plain gradient steps: from f = 0 the minimum-norm-like forces of an
    /// indeterminate pack (olsen-kamrin Fig. 8).
    None,
    /// Steps scaled by 1/N_cc per contact (Jacobi): the same velocities,
    /// other forces where they are not unique.
    Diagonal,
}

/// The friction law of `cd` (`[solver] friction_law`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FrictionLaw {
    /// Signorini–Coulomb: stick with |f_t| ≤ μ_s f_n, or slide with
    /// |f_t| = μ_d f_n against the sliding, without opening.
    #[default]
    Coulomb,
    /// The cone complementarity relaxation (Anitescu–Tasora; Chrono's NSC):
    /// one convex QP, but a sliding contact opens at a normal speed μ|v_t|.
    Cone,
}

/// Contact detection settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactSettings {
    pub skin: f64,
    pub distance: f64,
    /// Second-level (sub-region) Verlet lists for mesh–mesh pairs.
    pub entity_lists: bool,
}

/// Implicit barrier DEM settings, resolved (see `config::schema::DemCfg`).
#[derive(Clone, Debug, PartialEq)]
pub struct DemSettings {
    pub gbar: f64,
    pub f: f64,
    pub eps1: f64,
    pub n1: f64,
    pub n2: f64,
    pub damping: f64,
    /// κ of f_d ≤ κ f_n (∞: none).
    pub damping_cap: f64,
    pub eps_t: f64,
    /// Tangential damping ratio ζ_t (c_t = 2 ζ_t √(ε_t m_eff)).
    pub damping_t: f64,
    pub beta: f64,
    pub gamma: f64,
    pub dt_min: f64,
    pub dt_max: f64,
    pub newton_tolerance: f64,
    pub newton_max_iterations: u32,
    pub gap_fraction: f64,
    /// Largest relative change |Δg| / min(g^i, g^{i+1}) of an active gap in
    /// one step (Δt control resolving impacts).
    pub gap_change: f64,
    /// Newton iterations at or below which the next Δt grows.
    pub easy_iterations: u32,
    /// Contact tangent in the Newton Jacobian.
    pub tangent: DemTangent,
    /// Per-contact ε₁ scaled by compatible-cd's relative stiffness k̃.
    pub pair_stiffness: bool,
    /// How deep closed mesh–mesh pairs are sought.
    pub closed_depth: DemClosedDepth,
    /// How a Newton step is shortened.
    pub line_search: DemLineSearch,
    /// The friction branches of each step's first Newton tangent.
    pub first_tangent: DemFirstTangent,
    /// Newton to convergence in every step, or a fixed number of iterations.
    pub newton: DemNewton,
}

/// How far the DEM iterates Newton in a step (`[dem] newton`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DemNewton {
    /// To `newton_tolerance` (or the residual's round-off floor); a step
    /// that does not get there within `newton_max_iterations` is redone
    /// with a shorter Δt.
    #[default]
    Converged,
    /// At most `newton_max_iterations` (default 1) Newton iterations, the
    /// residual left as it is: with one, a linearly implicit Newmark step
    /// (Baraff & Witkin's for cloth). Δt grows after every step up to the
    /// gap-change bound. A static state is one where the residual
    /// vanishes, so a run to rest ends at the converged scheme's rest
    /// state; the path to it is that of the truncated iterations.
    Fixed,
}

/// The friction branches of the DEM's first Newton tangent in a step
/// (`[dem] first_tangent`); the residual is the same either way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DemFirstTangent {
    /// Those at the step's start (x = 0: every contact sticks).
    #[default]
    Rest,
    /// A contact sliding at configuration i whose rates carry it farther
    /// in the step than its stick range μ_d f_n / ε_t takes the slip
    /// tangent at x + Δt v: a sliding pack's first Newton step lets it slide.
    Moving,
}

/// How the DEM shortens a Newton step (`[dem] line_search`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DemLineSearch {
    /// Along the Newton direction to where the step's incremental energy
    /// stops falling (a root of yᵀF): the residual is the gradient of that
    /// energy for conservative contact forces, and descent in it cannot
    /// cycle between active sets as full steps or descent in ‖F‖ do.
    /// With friction the residual is no gradient: a cube that friction
    /// holds on a slope slid (tests/polyhedra.rs), so not the default.
    Energy,
    /// PETSc's line search (`bt` on ‖F‖², or `-snes_linesearch_type`).
    #[default]
    Petsc,
}

/// How deep the DEM's search seeks closed mesh–mesh pairs (`[dem] closed_depth`).
/// The open contacts are the same either way; closed mesh pairs are dropped
/// and only tell the night-owl review which pairs closed within a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DemClosedDepth {
    /// As deep as the last step could close a gap (twice its largest
    /// displacement; at least what the open contacts' hierarchy needs, at
    /// most contact distance + skin): the entity lists hold fewer pairs.
    #[default]
    Step,
    /// Down to contact distance + skin at every step (the earlier behaviour).
    Skin,
}

/// The DEM Newton tangent of a contact (`[dem] tangent`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DemTangent {
    /// −∂F/∂g ∇g ∇gᵀ − F ∇²g: the consistent linearisation (eq 48).
    #[default]
    Consistent,
    /// Without F ∇²g: the gap's Hessian is the costliest part of the exact
    /// mesh kinematics, and beside M/(βΔt²) and the barrier stiffness the
    /// term is small, so Newton stays fast at a fraction of the cost.
    GaussNewton,
}

/// Periodic boundaries: on each periodic axis positions live in [lo, hi)
/// and a body near one face is seen, shifted by the period, near the other.
#[derive(Clone, Debug, PartialEq)]
pub struct Periodic {
    pub lo: Vector3<f64>,
    pub hi: Vector3<f64>,
    pub axes: [bool; 3],
    /// Lees–Edwards simple shear, if any.
    pub shear: Option<LeesEdwards>,
    /// A Lees–Edwards cell whose gradient period follows a normal stress
    /// (`[parallel] servo_stress`): the servo of the stress-controlled
    /// walls on the cell's height, `hi[gradient]` its face.
    pub cell: Option<Servo>,
    /// The time `hi` and the Lees–Edwards offset are given at (the last
    /// [`Periodic::advance`]), and that offset, m; from then on the
    /// gradient face moves at its rate.
    pub since: f64,
    pub offset: f64,
    /// The time over which the cell's servo averages the measured stress
    /// (exponentially; 0: each step's), s, and that average, Pa (NaN
    /// before the first step).
    pub average: f64,
    pub measured: f64,
}

/// Lees–Edwards boundaries: the images across the `gradient` axis's period
/// are shifted along the `flow` axis by ±γ̇ L t (L the gradient axis's
/// period) and move along it at ±γ̇ L: a homogeneous simple shear
/// v_flow = γ̇ x_gradient of the periodic cell. Both axes are periodic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeesEdwards {
    pub flow: usize,
    pub gradient: usize,
    /// γ̇, 1/s.
    pub rate: f64,
}

/// A periodic image of a body: its shift at the time the image was made,
/// and how many gradient periods it is away (−1, 0, 1: the Lees–Edwards
/// offset and velocity it carries).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Image {
    pub shift: Vector3<f64>,
    pub periods: i32,
}

impl Periodic {
    /// A plain periodic box (no shear).
    pub fn new(lo: Vector3<f64>, hi: Vector3<f64>, axes: [bool; 3]) -> Self {
        Self { lo, hi, axes, shear: None, cell: None, since: 0.0, offset: 0.0, average: 0.0, measured: f64::NAN }
    }

    /// The upper face on axis `a` at time `t` (a stress-controlled cell's
    /// gradient face moves at its rate).
    pub fn hi_at(&self, a: usize, t: f64) -> f64 {
        match (self.shear, &self.cell) {
            (Some(s), Some(_)) if s.gradient == a => self.hi[a] + self.gradient_speed() * (t - self.since),
            _ => self.hi[a],
        }
    }

    /// The period on axis `a` at time `t`.
    pub fn period_at(&self, a: usize, t: f64) -> f64 {
        self.hi_at(a, t) - self.lo[a]
    }

    /// The period on axis `a` at `since` (the present one for a cell of
    /// fixed shape).
    pub fn period(&self, a: usize) -> f64 {
        self.hi[a] - self.lo[a]
    }

    /// The image one gradient period up moves along the flow axis at this
    /// speed relative to the body at time `t` (γ̇ L; 0 without shear), m/s.
    pub fn shear_speed_at(&self, t: f64) -> f64 {
        self.shear.map_or(0.0, |s| s.rate * self.period_at(s.gradient, t))
    }

    /// The rate of the gradient period, dL/dt (0 unless the cell follows a
    /// normal stress), m/s: the image one period up moves along the
    /// gradient axis at this speed relative to the body. A servo's speed
    /// is positive towards the bodies: here, the cell shrinking.
    pub fn gradient_speed(&self) -> f64 {
        self.cell.as_ref().map_or(0.0, |c| -c.speed)
    }

    /// The unwrapped Lees–Edwards offset at time `t`: the integral of γ̇ L
    /// over time, m (γ̇ L t in a cell of fixed period).
    pub fn shear_offset(&self, t: f64) -> f64 {
        let Some(s) = self.shear else { return 0.0 };
        let tau = t - self.since;
        self.offset + s.rate * (self.period(s.gradient) + 0.5 * self.gradient_speed() * tau) * tau
    }

    /// Where a Lees–Edwards cell's images stand at time `t`: its offset and
    /// gradient period (None without shear).
    pub fn image_frame(&self, t: f64) -> Option<(f64, f64)> {
        let s = self.shear?;
        Some((self.shear_offset(t), self.period_at(s.gradient, t)))
    }

    /// Takes the cell at time `t` as its new reference (`hi`, the offset),
    /// before its gradient rate changes. The same on every rank.
    pub fn advance(&mut self, t: f64) {
        let (Some(s), Some(_)) = (self.shear, &self.cell) else { return };
        self.offset = self.shear_offset(t);
        self.hi[s.gradient] = self.hi_at(s.gradient, t);
        self.since = t;
    }

    /// Where an image of a body at `p` lies at time `t`: `periods` gradient
    /// periods away (a Lees–Edwards image, moved by the offset along the
    /// flow) and `wraps` whole periods along each axis besides. One
    /// expression for a new image and a refreshed one, so that a restart,
    /// whose ghost lists are younger, places its images to the same bits.
    pub fn image_position(&self, p: &Vector3<f64>, periods: i32, wraps: &[i32; 3], t: f64) -> Vector3<f64> {
        let mut q = *p;
        for a in 0..3 {
            match self.shear {
                Some(s) if a == s.gradient => {
                    if periods != 0 {
                        q[a] = p[a] + periods as f64 * self.period_at(a, t);
                    }
                }
                Some(s) if a == s.flow && periods != 0 => q[a] = p[a] + (periods as f64 * self.shear_offset(t) + wraps[a] as f64 * self.period_at(a, t)),
                _ => {
                    if wraps[a] != 0 {
                        q[a] = p[a] + wraps[a] as f64 * self.period_at(a, t);
                    }
                }
            }
        }
        q
    }

    /// The whole periods along each axis in an image's `shift` at time `t`,
    /// besides a Lees–Edwards image's gradient periods and offset.
    pub fn image_wraps(&self, shift: &Vector3<f64>, periods: i32, t: f64) -> [i32; 3] {
        let mut k = [0; 3];
        for (a, k) in k.iter_mut().enumerate() {
            let mut rest = shift[a];
            if let Some(s) = self.shear {
                if a == s.gradient {
                    continue;
                }
                if a == s.flow {
                    rest -= periods as f64 * self.shear_offset(t);
                }
            }
            if self.axes[a] {
                *k = (rest / self.period_at(a, t)).round() as i32;
            }
        }
        k
    }

    /// `p` moved into [lo, hi) on the periodic axes.
    pub fn wrap(&self, p: &Vector3<f64>) -> Vector3<f64> {
        self.wrap_state(p, &Vector3::zeros(), 0.0).0
    }

    /// A body's position and velocity moved into [lo, hi) on the periodic
    /// axes at time `t`: across the gradient axis of a Lees–Edwards cell
    /// it also moves by the offset along the flow axis and takes the
    /// images' velocity there.
    pub fn wrap_state(&self, p: &Vector3<f64>, v: &Vector3<f64>, t: f64) -> (Vector3<f64>, Vector3<f64>) {
        let (mut q, mut w) = (*p, *v);
        if let Some(s) = self.shear {
            let l = self.period_at(s.gradient, t);
            let n = ((q[s.gradient] - self.lo[s.gradient]) / l).floor();
            q[s.gradient] -= n * l;
            q[s.flow] -= n * self.shear_offset(t);
            w[s.flow] -= n * self.shear_speed_at(t);
            w[s.gradient] -= n * self.gradient_speed();
        }
        for a in 0..3 {
            if self.axes[a] {
                let l = self.period_at(a, t);
                q[a] = self.lo[a] + (q[a] - self.lo[a]).rem_euclid(l);
            }
        }
        (q, w)
    }

    /// Non-zero shifts by ± the period that bring `p` within `reach` of the
    /// box on the other side (an image is needed there).
    pub fn image_shifts(&self, p: &Vector3<f64>, reach: f64) -> Vec<Vector3<f64>> {
        self.images(p, reach, 0.0).into_iter().map(|i| i.shift).collect()
    }

    /// The images of a body at `p` (in the box) that come within `reach`
    /// of the box at time `t`: by ± a period on each axis near a face; an
    /// image across the gradient axis of a Lees–Edwards cell is first moved
    /// by the offset along the flow axis (and back into the box there), and
    /// then, like any body, also imaged across the flow axis's faces.
    pub fn images(&self, p: &Vector3<f64>, reach: f64, t: f64) -> Vec<Image> {
        let near = |q: &Vector3<f64>, a: usize| {
            let mut s = vec![0.0];
            if self.axes[a] {
                if q[a] - self.lo[a] < reach {
                    s.push(self.period_at(a, t));
                }
                if self.hi_at(a, t) - q[a] < reach {
                    s.push(-self.period_at(a, t));
                }
            }
            s
        };
        let mut out = Vec::new();
        let Some(s) = self.shear else {
            for x in near(p, 0) {
                for y in near(p, 1) {
                    for z in near(p, 2) {
                        if x != 0.0 || y != 0.0 || z != 0.0 {
                            out.push(Image { shift: Vector3::new(x, y, z), periods: 0 });
                        }
                    }
                }
            }
            return out;
        };
        // The gradient axis first.
        let first = s.gradient;
        for sg in near(p, first) {
            let mut base = *p;
            base[first] += sg;
            let periods = (sg / self.period_at(first, t)).round() as i32;
            {
                // The image a period up sits ahead by the offset along the
                // flow axis (one down, behind), then back in the box there.
                base[s.flow] += periods as f64 * self.shear_offset(t);
                let l = self.period(s.flow);
                base[s.flow] = self.lo[s.flow] + (base[s.flow] - self.lo[s.flow]).rem_euclid(l);
            }
            let others: Vec<usize> = (0..3).filter(|&a| a != first).collect();
            for s0 in near(&base, others[0]) {
                for s1 in near(&base, others[1]) {
                    let mut q = base;
                    q[others[0]] += s0;
                    q[others[1]] += s1;
                    let shift = q - p;
                    if shift != Vector3::zeros() {
                        out.push(Image { shift, periods });
                    }
                }
            }
        }
        out
    }
}

/// `[measure]`: the lab measurements written per frame and in summary.json.
#[derive(Clone, Debug, PartialEq)]
pub struct MeasureSettings {
    /// The box measured in (lo, hi): bodies whose centre is inside. None:
    /// the cell (periodic axes, the innermost axis-aligned walls, else the
    /// bodies' extent), every free body.
    pub region: Option<(Vector3<f64>, Vector3<f64>)>,
    /// A free body with fewer force-carrying contacts than this is a
    /// rattler (removed again and again until none is left).
    pub rattler_contacts: u32,
    /// The stress ratio: None for q/p; Some((a, b)) for σ_ab / σ_bb (flow
    /// along axis a, gradient along b: a shear cell's τ/σ_n).
    pub shear: Option<(usize, usize)>,
}

impl MeasureSettings {
    /// The cell, every free body, q/p, rattlers by the frictionless rule d + 1.
    pub fn new(dim: u8) -> Self {
        Self { region: None, rattler_contacts: dim as u32 + 1, shear: None }
    }
}

/// An external load on one body (`[[load]]`, any solver; Gay Neto &
/// Wriggers eqs 23–24): a force at a material point and a moment, both
/// scaled by the ramp [`Load::factor`].
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// Body id.
    pub body: u64,
    /// Force at full value, world frame.
    pub force: Vector3<f64>,
    /// Point of application: offset from the centre of mass, body frame.
    pub point: Vector3<f64>,
    /// Moment at full value, world frame.
    pub moment: Vector3<f64>,
    pub t_start: f64,
    pub t_ramp_end: f64,
}

impl Load {
    /// The ramp at time t: 0 up to `t_start`, linear to 1 at `t_ramp_end`,
    /// 1 afterwards (a step at `t_start` when the two are equal).
    pub fn factor(&self, t: f64) -> f64 {
        if t <= self.t_start {
            0.0
        } else if t >= self.t_ramp_end {
            1.0
        } else {
            (t - self.t_start) / (self.t_ramp_end - self.t_start)
        }
    }
}

/// A complete, validated scene. Body ids are 0..n in generation order.
#[derive(Clone, Debug)]
pub struct Scene {
    pub simulation: Simulation,
    pub materials: Vec<Material>,
    pub shapes: Vec<Shape>,
    /// Names of the shapes, in the order of `shapes`.
    pub shape_names: Vec<String>,
    /// The explicit `[[body]]` bodies (ids 0..), on every rank.
    pub bodies: Bodies,
    /// `[[generate]]` sources, expanded at start-up by each rank for its
    /// own region (`crate::startup`).
    pub sources: Vec<sources::Source>,
    pub walls: Vec<Wall>,
    pub output: Output,
    /// `[solver]`, for cd and compatible-cd.
    pub solver: SolverOwned<SolverSettings>,
    pub contact: ContactSettings,
    /// Rebalance when max/mean work (bodies + contacts) per rank exceeds this.
    pub imbalance: f64,
    /// Periodic boundaries, if any axis is periodic.
    pub periodic: Option<Periodic>,
    /// `[dem]`, for solver = "dem".
    pub dem: SolverOwned<DemSettings>,
    /// `[compatibility]`, for solver = "compatible-cd".
    pub compat: SolverOwned<CompatSettings>,
    /// Relative stiffness k̃ of material pairs (indices sorted), from
    /// `[[compatibility.stiffness]]`: read by compatible-cd and by the DEM
    /// with `[dem] pair_stiffness` (empty under other solvers).
    pub stiffness_pairs: Vec<((u32, u32), f64)>,
    /// External loads on single bodies, at most one per body.
    pub loads: Vec<Load>,
    /// `[measure]`.
    pub measure: MeasureSettings,
    /// The resolved configuration as TOML (overrides applied), kept in outputs.
    pub config_text: String,
    /// The run these outputs belong to (frames.h5, checkpoints): made by
    /// `run`, taken from the checkpoint by `restart`; empty otherwise.
    pub run_id: String,
}

impl Scene {
    /// A scene of file bodies only leaves the contact defaults infinite at
    /// validation: they scale with the shapes the files brought, known
    /// after start-up or from a checkpoint.
    pub fn contact_defaults_from_shapes(&mut self) {
        let rmin = self.shapes.iter().map(|s| s.bounding_radius()).fold(f64::INFINITY, f64::min);
        if self.contact.skin.is_infinite() {
            self.contact.skin = 0.2 * rmin;
        }
        if self.contact.distance.is_infinite() {
            self.contact.distance = 0.1 * rmin;
        }
    }

    /// Relative stiffness k̃ of a contact between materials `a` and `b` (a
    /// wall uses its own): the `[[compatibility.stiffness]]` entry of the
    /// pair if any, else, when both have a Young's modulus, the series
    /// combination 1/(1/E_a + 1/E_b) divided by E_max/2 (E_max the largest
    /// modulus of the scene; only ratios matter), else 1.
    pub fn pair_stiffness(&self, a: u32, b: u32) -> f64 {
        let pair = (a.min(b), a.max(b));
        if let Some((_, k)) = self.stiffness_pairs.iter().find(|(q, _)| *q == pair) {
            return *k;
        }
        let e_max = self.materials.iter().filter_map(|m| m.young).fold(0.0f64, f64::max);
        let young = |m: u32| self.materials.get(m as usize).and_then(|m| m.young);
        match (young(a), young(b)) {
            (Some(ea), Some(eb)) if e_max > 0.0 => (1.0 / (1.0 / ea + 1.0 / eb)) / (0.5 * e_max),
            _ => 1.0,
        }
    }

    /// Bodies of the explicit entries and the generators (not files).
    pub fn known_count(&self) -> u64 {
        self.bodies.len() as u64 + self.sources.iter().filter_map(|s| s.count).sum::<u64>()
    }

    /// Axis-aligned box holding every body's bounding sphere (explicit
    /// bodies and generators; files are added at start-up).
    pub fn bounding_box(&self) -> (Vector3<f64>, Vector3<f64>) {
        let mut lo = Vector3::repeat(f64::INFINITY);
        let mut hi = Vector3::repeat(f64::NEG_INFINITY);
        for (a, b) in self.sources.iter().filter_map(|s| s.bounds()) {
            lo = lo.inf(&a);
            hi = hi.sup(&b);
        }
        for i in 0..self.bodies.len() {
            let r = self.shapes[self.bodies.shape[i] as usize].bounding_radius();
            lo = lo.inf(&self.bodies.position[i].add_scalar(-r));
            hi = hi.sup(&self.bodies.position[i].add_scalar(r));
        }
        (lo, hi)
    }
}
