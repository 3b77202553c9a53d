//! stiffgrain: stiff rigid grains on distributed-memory machines.
//!
//! The modules and who may import whom: ARCHITECTURE.md (held to the code
//! by tests/architecture.rs).
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
pub mod lab;
pub mod logging;
pub mod parallel;
pub mod petsc;
pub mod registry;
pub mod roots;
pub mod scene;
pub mod solver;
pub mod startup;
pub mod timers;
pub mod world;
