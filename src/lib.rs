//! stiffgrain: stiff rigid grains on distributed-memory machines.
//!
//! Dependencies point one way: `config -> scene -> body -> geometry -> contact
//! -> {cd, compat, dem} -> io`; `parallel` and `petsc` are services.
pub mod body;
pub mod petsc;
pub mod scene;
pub mod geometry;
pub mod contact;
