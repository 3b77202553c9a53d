//! PETSc log stages, so that each solver phase shows as its own section in
//! `-log_view`.
use super::error::{check, PetscError, Result};
use super::ffi;
use std::ffi::CString;

/// A registered PETSc log stage (`PetscLogStageRegister`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stage(ffi::PetscLogStage);

impl Stage {
    /// Registers a stage named `name` (collective on `PETSC_COMM_WORLD`). If a
    /// stage of that name exists already, it is returned instead.
    pub fn register(name: &str) -> Result<Stage> {
        super::init::require_alive("Stage::register")?;
        let n = CString::new(name)
            .map_err(|_| PetscError::new(ffi::PETSC_ERR_ARG_WRONG as i32, format!("{name:?} contains NUL")))?;
        let mut id: ffi::PetscLogStage = -1;
        // SAFETY: valid C string and out pointer. GetId fails quietly (it
        // sets id = -1) when the stage is unknown.
        unsafe {
            let found = check(ffi::PetscLogStageGetId(n.as_ptr(), &mut id)).is_ok();
            if found && id >= 0 {
                return Ok(Stage(id));
            }
            check(ffi::PetscLogStageRegister(n.as_ptr(), &mut id))?;
        }
        Ok(Stage(id))
    }

    /// Pushes this stage (`PetscLogStagePush`); it is popped when the returned
    /// guard is dropped or [`StageGuard::pop`] is called.
    pub fn push(&self) -> Result<StageGuard> {
        super::init::require_alive("Stage::push")?;
        // SAFETY: the stage id was registered.
        check(unsafe { ffi::PetscLogStagePush(self.0) })?;
        Ok(StageGuard { popped: false })
    }

    /// The PETSc stage id.
    pub fn id(&self) -> i32 {
        self.0
    }
}

/// An active log stage; pops it (`PetscLogStagePop`) when dropped. Guards
/// must be dropped in reverse order of their pushes (scopes do that).
#[derive(Debug)]
#[must_use = "the stage is popped as soon as the guard is dropped"]
pub struct StageGuard {
    popped: bool,
}

impl StageGuard {
    /// Pops the stage now, returning PETSc's error if any.
    pub fn pop(mut self) -> Result<()> {
        self.popped = true;
        pop()
    }
}

fn pop() -> Result<()> {
    if !super::init::alive() {
        return Ok(());
    }
    // SAFETY: a stage pushed by the guard is on the stack.
    check(unsafe { ffi::PetscLogStagePop() })
}

impl Drop for StageGuard {
    fn drop(&mut self) {
        if !self.popped {
            let _ = pop();
        }
    }
}
