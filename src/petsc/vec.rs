//! Distributed PETSc vectors (`Vec`, here [`Vector`] to avoid clashing with
//! `std::vec::Vec`) with RAII views of the locally owned entries.
use super::error::{check, PetscError, Result};
use super::ffi;
use super::init::{alive, require_alive, AsComm};
use super::PetscInt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut, Range};

/// How `set_values` combines new values with existing ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InsertMode {
    /// Overwrite (`INSERT_VALUES`).
    Insert,
    /// Accumulate (`ADD_VALUES`); contributions from several ranks add up.
    Add,
}

impl InsertMode {
    pub(crate) fn raw(self) -> ffi::InsertMode {
        match self {
            InsertMode::Insert => ffi::InsertMode::INSERT_VALUES,
            InsertMode::Add => ffi::InsertMode::ADD_VALUES,
        }
    }
}

/// Vector norms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormType {
    /// Sum of absolute values.
    One,
    /// Euclidean norm.
    Two,
    /// Largest absolute value.
    Infinity,
}

impl NormType {
    fn raw(self) -> ffi::NormType {
        match self {
            NormType::One => ffi::NormType::NORM_1,
            NormType::Two => ffi::NormType::NORM_2,
            NormType::Infinity => ffi::NormType::NORM_INFINITY,
        }
    }
}

/// A wrapper of an object that belongs to PETSc (the vectors and matrices a
/// SNES callback receives, the KSP inside a SNES), valid for the borrow `'a`.
/// It holds its own PETSc reference (`PetscObjectReference`), so dropping it
/// only releases that reference and never destroys the object; even a
/// `mem::swap` through `DerefMut` cannot free PETSc's object early.
#[derive(Debug)]
pub struct Borrowed<'a, T> {
    inner: T,
    _life: PhantomData<&'a mut T>,
}

impl<T> Borrowed<'_, T> {
    /// `inner` must hold a reference taken with [`add_reference`].
    pub(crate) fn new(inner: T) -> Self {
        Borrowed { inner, _life: PhantomData }
    }
}

/// Takes one more PETSc reference on `obj` (released by the wrapper's
/// `XDestroy` on drop).
pub(crate) fn add_reference(obj: ffi::PetscObject) {
    // SAFETY: `obj` is a live PETSc object handed to us by PETSc.
    let _ = check(unsafe { ffi::PetscObjectReference(obj) });
}

impl<T> Deref for Borrowed<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.inner
    }
}

impl<T> DerefMut for Borrowed<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.inner
    }
}

/// An MPI PETSc vector; `VecDestroy` on drop.
#[derive(Debug)]
pub struct Vector {
    raw: ffi::Vec,
}

pub(crate) fn size_error(what: &str, a: usize, b: usize) -> PetscError {
    PetscError::new(ffi::PETSC_ERR_ARG_SIZ as i32, format!("{what}: lengths differ ({a} vs {b})"))
}

impl Vector {
    /// Creates an MPI vector (`VecCreateMPI`) with `local` entries on this
    /// rank; the global size is the sum over ranks. Collective on `comm`.
    pub fn mpi(comm: &impl AsComm, local: PetscInt) -> Result<Vector> {
        Self::with_sizes(comm, Some(local), None)
    }

    /// Creates an MPI vector with the given local and/or global size; `None`
    /// lets PETSc decide (`PETSC_DECIDE`). Collective on `comm`.
    pub fn with_sizes(comm: &impl AsComm, local: Option<PetscInt>, global: Option<PetscInt>) -> Result<Vector> {
        require_alive("Vector::with_sizes")?;
        let mut raw: ffi::Vec = std::ptr::null_mut();
        let d = ffi::PETSC_DECIDE as PetscInt;
        // SAFETY: out pointer is valid; comm is a live communicator.
        check(unsafe { ffi::VecCreateMPI(comm.as_comm(), local.unwrap_or(d), global.unwrap_or(d), &mut raw) })?;
        Ok(Vector { raw })
    }

    /// Wraps a handle PETSc owns, taking an extra reference.
    pub(crate) fn borrow_raw<'a>(raw: ffi::Vec) -> Borrowed<'a, Vector> {
        add_reference(raw as ffi::PetscObject);
        Borrowed::new(Vector { raw })
    }

    /// Takes ownership of a handle created by PETSc (destroyed on drop).
    pub(crate) fn from_owned_raw(raw: ffi::Vec) -> Vector {
        Vector { raw }
    }

    /// The raw handle (for the other wrappers of this module tree).
    pub(crate) fn raw(&self) -> ffi::Vec {
        self.raw
    }

    /// A new vector with the same layout; values are not copied (`VecDuplicate`).
    pub fn duplicate(&self) -> Result<Vector> {
        let mut raw: ffi::Vec = std::ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::VecDuplicate(self.raw, &mut raw) })?;
        Ok(Vector { raw })
    }

    /// A new vector with the same layout and values.
    pub fn try_clone(&self) -> Result<Vector> {
        let mut v = self.duplicate()?;
        v.copy_from(self)?;
        Ok(v)
    }

    /// Sets every entry to `alpha` (`VecSet`).
    pub fn set(&mut self, alpha: f64) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::VecSet(self.raw, alpha) })
    }

    /// Sets every entry to zero.
    pub fn zero(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::VecZeroEntries(self.raw) })
    }

    /// Sets or adds entries at global indices (`VecSetValues`); any rank may
    /// set any entry. Call [`Vector::assemble`] before using the vector.
    pub fn set_values(&mut self, indices: &[PetscInt], values: &[f64], mode: InsertMode) -> Result<()> {
        if indices.len() != values.len() {
            return Err(size_error("Vector::set_values", indices.len(), values.len()));
        }
        // SAFETY: both arrays have `len` entries.
        check(unsafe {
            ffi::VecSetValues(self.raw, indices.len() as PetscInt, indices.as_ptr(), values.as_ptr(), mode.raw())
        })
    }

    /// Starts communicating off-rank values (`VecAssemblyBegin`). Collective.
    pub fn assembly_begin(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::VecAssemblyBegin(self.raw) })
    }

    /// Finishes assembly (`VecAssemblyEnd`). Collective.
    pub fn assembly_end(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::VecAssemblyEnd(self.raw) })
    }

    /// `assembly_begin` then `assembly_end`. Collective.
    pub fn assemble(&mut self) -> Result<()> {
        self.assembly_begin()?;
        self.assembly_end()
    }

    /// Global indices owned by this rank (`VecGetOwnershipRange`).
    pub fn ownership_range(&self) -> Result<Range<PetscInt>> {
        let (mut lo, mut hi) = (0, 0);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { ffi::VecGetOwnershipRange(self.raw, &mut lo, &mut hi) })?;
        Ok(lo..hi)
    }

    /// Number of entries owned by this rank.
    pub fn local_size(&self) -> Result<PetscInt> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::VecGetLocalSize(self.raw, &mut n) })?;
        Ok(n)
    }

    /// Global number of entries.
    pub fn global_size(&self) -> Result<PetscInt> {
        let mut n = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::VecGetSize(self.raw, &mut n) })?;
        Ok(n)
    }

    /// Norm of the whole vector (`VecNorm`). Collective.
    pub fn norm(&self, kind: NormType) -> Result<f64> {
        let mut r = 0.0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::VecNorm(self.raw, kind.raw(), &mut r) })?;
        Ok(r)
    }

    /// Dot product with `other` (`VecDot`). Collective.
    pub fn dot(&self, other: &Vector) -> Result<f64> {
        let mut r = 0.0;
        // SAFETY: live handles, valid out pointer.
        check(unsafe { ffi::VecDot(self.raw, other.raw, &mut r) })?;
        Ok(r)
    }

    /// `self += alpha * x` (`VecAXPY`).
    pub fn axpy(&mut self, alpha: f64, x: &Vector) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::VecAXPY(self.raw, alpha, x.raw) })
    }

    /// `self = x + beta * self` (`VecAYPX`).
    pub fn aypx(&mut self, beta: f64, x: &Vector) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::VecAYPX(self.raw, beta, x.raw) })
    }

    /// `self = alpha * x + y` (`VecWAXPY`); `self` must differ from `x`, `y`.
    pub fn waxpy(&mut self, alpha: f64, x: &Vector, y: &Vector) -> Result<()> {
        // SAFETY: live handles; `&mut self` cannot alias `x` or `y`.
        check(unsafe { ffi::VecWAXPY(self.raw, alpha, x.raw, y.raw) })
    }

    /// `self *= alpha` (`VecScale`).
    pub fn scale(&mut self, alpha: f64) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::VecScale(self.raw, alpha) })
    }

    /// `self = x` (`VecCopy`); same layout required.
    pub fn copy_from(&mut self, x: &Vector) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::VecCopy(x.raw, self.raw) })
    }

    /// `self = x .* y` entrywise (`VecPointwiseMult`).
    pub fn pointwise_mult(&mut self, x: &Vector, y: &Vector) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::VecPointwiseMult(self.raw, x.raw, y.raw) })
    }

    /// Read-only view of the locally owned entries (`VecGetArrayRead`),
    /// restored when the guard drops.
    pub fn view(&self) -> Result<VecView<'_>> {
        let n = self.local_size()? as usize;
        let mut p: *const f64 = std::ptr::null();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::VecGetArrayRead(self.raw, &mut p) })?;
        Ok(VecView { vec: self, ptr: p, len: n })
    }

    /// Writable view of the locally owned entries (`VecGetArray`), restored
    /// when the guard drops.
    pub fn view_mut(&mut self) -> Result<VecViewMut<'_>> {
        let n = self.local_size()? as usize;
        let mut p: *mut f64 = std::ptr::null_mut();
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::VecGetArray(self.raw, &mut p) })?;
        Ok(VecViewMut { vec: self, ptr: p, len: n })
    }
}

impl Drop for Vector {
    fn drop(&mut self) {
        if alive() {
            // SAFETY: owned live handle; PETSc is not finalised.
            unsafe { ffi::VecDestroy(&mut self.raw) };
        }
    }
}

/// Locally owned entries of a [`Vector`], read-only; derefs to `&[f64]`.
#[derive(Debug)]
pub struct VecView<'a> {
    vec: &'a Vector,
    ptr: *const f64,
    len: usize,
}

impl Deref for VecView<'_> {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        if self.len == 0 || self.ptr.is_null() {
            return &[];
        }
        // SAFETY: PETSc's local array has `len` entries until restored in Drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl Drop for VecView<'_> {
    fn drop(&mut self) {
        if alive() {
            // SAFETY: restores the array obtained in `Vector::view`.
            unsafe { ffi::VecRestoreArrayRead(self.vec.raw, &mut self.ptr) };
        }
    }
}

/// Locally owned entries of a [`Vector`], writable; derefs to `&mut [f64]`.
#[derive(Debug)]
pub struct VecViewMut<'a> {
    vec: &'a mut Vector,
    ptr: *mut f64,
    len: usize,
}

impl Deref for VecViewMut<'_> {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        if self.len == 0 || self.ptr.is_null() {
            return &[];
        }
        // SAFETY: PETSc's local array has `len` entries until restored in Drop.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }
}

impl DerefMut for VecViewMut<'_> {
    fn deref_mut(&mut self) -> &mut [f64] {
        if self.len == 0 || self.ptr.is_null() {
            return &mut [];
        }
        // SAFETY: as above; the guard holds `&mut Vector`, so no other view exists.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for VecViewMut<'_> {
    fn drop(&mut self) {
        if alive() {
            // SAFETY: restores the array obtained in `Vector::view_mut`.
            unsafe { ffi::VecRestoreArray(self.vec.raw, &mut self.ptr) };
        }
    }
}
