//! Implicit barrier DEM (stage 3 "solver", solver = "dem"; Gay Neto &
//! Wriggers §2): interface laws ([`law`]), rigid bodies with Rodrigues
//! parameters and Newmark ([`rigid`]), contact elements ([`assemble`]; the
//! mesh gaps' gradients in closed form in [`mesh_grad`]), the step's elements
//! (`elements`), its Newton problem (`problem`), the history it keeps
//! (`state`) and the step loop with adaptive Δt and night owls ([`solver`]).
pub mod law;
pub mod night_owl;
pub mod assemble;
pub mod jet;
pub mod mesh_grad;
pub mod rigid;
pub mod solver;
mod elements;
mod problem;
mod state;
pub mod types;

pub use solver::DemSolver;
