//! Thin safe binding to PETSc: every `unsafe` PETSc call of the crate lives here.
//!
//! Start with [`Petsc::initialize`] after `mpi::initialize()`; create
//! [`Vector`], [`Mat`], [`Ksp`] and [`Snes`] objects on an rsmpi communicator;
//! drop them all before the [`Petsc`] guard, and that guard before the rsmpi
//! `Universe`. Every call returns `Result<_, PetscError>`.
mod cstr;
mod coo;
pub mod error;
pub mod ffi;
pub mod init;
pub mod ksp;
pub mod log;
pub mod mat;
pub mod options;
pub mod snes;
pub mod tao;
pub mod vec;

pub use error::{PetscError, Result};
pub use init::{AsComm, Petsc, RawComm};
pub use ksp::{ConvergedReason, Ksp};
pub use mat::{Mat, SplitCsr};
pub use log::{Stage, StageGuard};
pub use snes::Snes;
pub use vec::{Borrowed, InsertMode, NormType, VecView, VecViewMut, Vector};

/// PETSc's integer type (32-bit in the Debian build).
pub type PetscInt = ffi::PetscInt;
