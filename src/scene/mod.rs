//! The resolved scene a run starts from: everything the solvers need, nothing
//! TOML-specific. Built by `config` (validation) through the generators here.
pub mod generate;
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
    pub restitution: f64,
}

/// An infinite fixed plane; bodies stay on the side the normal points to.
#[derive(Clone, Debug, PartialEq)]
pub struct Wall {
    pub point: Vector3<f64>,
    pub normal: Vector3<f64>,
    pub material: u32,
}

/// Time integration settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Simulation {
    pub solver: SolverKind,
    pub dim: u8,
    pub t_end: f64,
    pub dt: f64,
    pub gravity: Vector3<f64>,
}

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
    /// Steps between thermo lines.
    pub thermo_every: u64,
}

/// How the `cd` solver solves its contact problem each step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CdMethod {
    /// Accelerated projected gradient descent on the QP (22) (Mazhar et al. 2015).
    #[default]
    Apgd,
    /// Projected Gauss–Seidel on the LCP (21); the forces depend on the contact order.
    Pgs,
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

/// Solver tolerances and limits shared by the solvers.
#[derive(Clone, Debug, PartialEq)]
pub struct SolverSettings {
    /// Relative residual tolerance (the `cd` stopping rule: see `cd::apgd`).
    pub tolerance: f64,
    pub max_iterations: u32,
    /// `cd`: APGD (default) or PGS.
    pub method: CdMethod,
    /// `cd` with PGS: contact order within a rank.
    pub pgs_order: PgsOrder,
}

/// Contact detection settings.
#[derive(Clone, Debug, PartialEq)]
pub struct ContactSettings {
    pub skin: f64,
    pub distance: f64,
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
    pub eps_t: f64,
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
}

/// A complete, validated scene. Body ids are 0..n in generation order.
#[derive(Clone, Debug)]
pub struct Scene {
    pub simulation: Simulation,
    pub materials: Vec<Material>,
    pub shapes: Vec<Shape>,
    /// Names of the shapes, in the order of `shapes`.
    pub shape_names: Vec<String>,
    pub bodies: Bodies,
    pub walls: Vec<Wall>,
    pub output: Output,
    pub solver: SolverSettings,
    pub contact: ContactSettings,
    /// Rebalance when max/mean bodies per rank exceeds this.
    pub imbalance: f64,
    pub dem: DemSettings,
    /// The resolved configuration as TOML (overrides applied), kept in outputs.
    pub config_text: String,
}

impl Scene {
    /// Axis-aligned box holding every body's bounding sphere.
    pub fn bounding_box(&self) -> (Vector3<f64>, Vector3<f64>) {
        let mut lo = Vector3::repeat(f64::INFINITY);
        let mut hi = Vector3::repeat(f64::NEG_INFINITY);
        for i in 0..self.bodies.len() {
            let r = self.shapes[self.bodies.shape[i] as usize].bounding_radius();
            lo = lo.inf(&self.bodies.position[i].add_scalar(-r));
            hi = hi.sup(&self.bodies.position[i].add_scalar(r));
        }
        (lo, hi)
    }
}
