//! Implicit barrier DEM (stage 3 "solver", solver = "dem"; Gay Neto &
//! Wriggers §2): interface laws ([`law`]), rigid bodies with Rodrigues
//! parameters and Newmark ([`rigid`]), contact elements ([`assemble`]; the
//! mesh gaps' gradients in closed form in [`mesh_grad`]) and the SNES step
//! with adaptive Δt ([`solver`]).
pub mod law;
pub mod night_owl;
pub mod assemble;
pub mod jet;
pub mod mesh_grad;
pub mod rigid;
pub mod solver;
pub mod types;

pub use solver::DemSolver;
