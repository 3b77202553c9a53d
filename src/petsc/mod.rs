//! Thin safe binding to PETSc: every `unsafe` PETSc call of the crate lives here.
pub mod ffi;
