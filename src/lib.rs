//! stiffgrain: stiff rigid grains on distributed-memory machines.
//!
//! Dependencies point one way: `config -> scene -> body -> geometry -> contact
//! -> {cd, compat, dem} -> io`; `parallel` and `petsc` are services.
pub mod body;
pub mod cd;
pub mod compat;
pub mod config;
pub mod contact;
pub mod dem;
pub mod driver;
pub mod geometry;
pub mod history;
pub mod io;
pub mod logging;
pub mod parallel;
pub mod petsc;
pub mod registry;
pub mod scene;
pub mod solver;
pub mod startup;
pub mod timers;
pub mod world;
