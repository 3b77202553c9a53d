//! Distributed sparse matrices: MPIAIJ (scalar entries) and MPIBAIJ (dense
//! blocks, block size 6 for rigid-body DOFs), assembled with `set_values`
//! or from a COO pattern (`set_preallocation_coo`, `set_values_coo`).
use super::cstr::cstring;
use super::error::{check, Result};
use super::ffi;
use super::init::{alive, require_alive, AsComm};
use super::vec::{size_error, Borrowed, InsertMode, Vector};
use super::PetscInt;
use super::coo::BlockCoo;
use std::ops::Range;
use std::sync::Arc;

/// A PETSc matrix; `MatDestroy` on drop.
#[derive(Debug)]
pub struct Mat {
    raw: ffi::Mat,
    /// Entries given to [`Mat::set_preallocation_coo`] (the length
    /// [`Mat::set_values_coo`] reads); 0 before.
    coo_len: usize,
    /// The block layout of the COO pattern of a BAIJ matrix.
    blocks: Option<Arc<BlockCoo>>,
}

fn prealloc_ptr(nnz: &[PetscInt], expected: usize, what: &str) -> Result<*const PetscInt> {
    if nnz.is_empty() {
        Ok(std::ptr::null())
    } else if nnz.len() != expected {
        Err(size_error(what, nnz.len(), expected))
    } else {
        Ok(nnz.as_ptr())
    }
}

impl Mat {
    /// Creates an AIJ matrix (`MatCreateAIJ`: MPIAIJ on several ranks, SeqAIJ
    /// on one) with `local_rows` x `local_cols` on this rank (global sizes are
    /// the sums). `d_nnz[i]` / `o_nnz[i]` are the numbers of nonzeros of local
    /// row `i` in the diagonal block (columns owned by this rank) and outside
    /// it; either may be empty, then `d_nz`/`o_nz` applies to every row.
    /// Collective on `comm`.
    #[allow(clippy::too_many_arguments)]
    pub fn aij(
        comm: &impl AsComm,
        local_rows: PetscInt,
        local_cols: PetscInt,
        d_nz: PetscInt,
        d_nnz: &[PetscInt],
        o_nz: PetscInt,
        o_nnz: &[PetscInt],
    ) -> Result<Mat> {
        require_alive("Mat::aij")?;
        let n = local_rows.max(0) as usize;
        let d = prealloc_ptr(d_nnz, n, "Mat::aij d_nnz")?;
        let o = prealloc_ptr(o_nnz, n, "Mat::aij o_nnz")?;
        let det = ffi::PETSC_DECIDE as PetscInt;
        let mut raw: ffi::Mat = std::ptr::null_mut();
        // SAFETY: preallocation arrays have `local_rows` entries or are NULL.
        check(unsafe { ffi::MatCreateAIJ(comm.as_comm(), local_rows, local_cols, det, det, d_nz, d, o_nz, o, &mut raw) })?;
        Ok(Mat { raw, coo_len: 0, blocks: None })
    }

    /// Creates a BAIJ matrix (`MatCreateBAIJ`: MPIBAIJ on several ranks) with
    /// block size `bs` (6 for rigid bodies) and `local_rows` x `local_cols`
    /// scalar rows/columns on this rank (multiples of `bs`). `d_nnz`/`o_nnz`
    /// count nonzero *blocks* per local *block row* (or are empty, then
    /// `d_nz`/`o_nz` blocks per block row). Collective on `comm`.
    #[allow(clippy::too_many_arguments)]
    pub fn baij(
        comm: &impl AsComm,
        bs: PetscInt,
        local_rows: PetscInt,
        local_cols: PetscInt,
        d_nz: PetscInt,
        d_nnz: &[PetscInt],
        o_nz: PetscInt,
        o_nnz: &[PetscInt],
    ) -> Result<Mat> {
        require_alive("Mat::baij")?;
        let nb = if bs > 0 { (local_rows.max(0) / bs) as usize } else { 0 };
        let d = prealloc_ptr(d_nnz, nb, "Mat::baij d_nnz")?;
        let o = prealloc_ptr(o_nnz, nb, "Mat::baij o_nnz")?;
        let det = ffi::PETSC_DECIDE as PetscInt;
        let mut raw: ffi::Mat = std::ptr::null_mut();
        // SAFETY: preallocation arrays have `local_rows / bs` entries or are NULL.
        check(unsafe {
            ffi::MatCreateBAIJ(comm.as_comm(), bs, local_rows, local_cols, det, det, d_nz, d, o_nz, o, &mut raw)
        })?;
        Ok(Mat { raw, coo_len: 0, blocks: None })
    }

    /// An AIJ matrix over this rank's rows given as PETSc stores them
    /// (`MatCreateMPIAIJWithSplitArrays`; SeqAIJ on one rank): no
    /// insertion, no search, the arrays become the matrix's own.
    /// `global_cols` is the sum of every rank's `local_cols`. Collective.
    pub fn aij_from_split(comm: &impl AsComm, local_cols: PetscInt, global_cols: PetscInt, csr: SplitCsr) -> Result<Mat> {
        require_alive("Mat::aij_from_split")?;
        let rows = csr.check(local_cols, global_cols)?;
        let csr = Box::into_raw(Box::new(csr));
        let mut container: ffi::PetscContainer = std::ptr::null_mut();
        // SAFETY: valid out pointer, live communicator. From here the
        // container owns the arrays (its destroy callback frees them), and
        // the matrix holds the container: the arrays live exactly as long
        // as PETSc's matrix, whoever holds it.
        unsafe {
            if let Err(e) = check(ffi::PetscContainerCreate(comm.as_comm(), &mut container)) {
                drop(Box::from_raw(csr));
                return Err(e);
            }
            check(ffi::PetscContainerSetPointer(container, csr as *mut std::ffi::c_void))?;
            check(ffi::PetscContainerSetUserDestroy(container, Some(free_split_csr)))?;
        }
        // The container's only reference goes when this function returns;
        // the matrix took its own.
        struct Release(ffi::PetscContainer);
        impl Drop for Release {
            fn drop(&mut self) {
                // SAFETY: a live container this function created.
                unsafe { ffi::PetscContainerDestroy(&mut self.0) };
            }
        }
        let release = Release(container);
        // SAFETY: `csr` came from `Box::into_raw` above and is freed only by
        // the container's destroy callback, after this function returns.
        let c = unsafe { &mut *csr };
        let det = ffi::PETSC_DETERMINE as PetscInt;
        let mut raw: ffi::Mat = std::ptr::null_mut();
        let mut size = 0;
        // SAFETY: live communicator, valid out pointer.
        unsafe { mpi::ffi::MPI_Comm_size(comm.as_comm(), &mut size) };
        // SAFETY (both calls): the arrays are checked CSR of `rows` rows
        // (`check`) and stay allocated until the container is destroyed,
        // which the matrix delays until its own destruction (composed below).
        // On one rank a SeqAIJ, as `Mat::aij` makes there: products with
        // other matrices (MatTranspose, MatPtAP) want one type.
        check(if size == 1 && c.oj.is_empty() {
            unsafe { ffi::MatCreateSeqAIJWithArrays(comm.as_comm(), rows, local_cols, c.di.as_mut_ptr(), c.dj.as_mut_ptr(), c.da.as_mut_ptr(), &mut raw) }
        } else {
            unsafe { ffi::MatCreateMPIAIJWithSplitArrays(
                comm.as_comm(),
                rows,
                local_cols,
                det,
                global_cols,
                c.di.as_mut_ptr(),
                c.dj.as_mut_ptr(),
                c.da.as_mut_ptr(),
                c.oi.as_mut_ptr(),
                c.oj.as_mut_ptr(),
                c.oa.as_mut_ptr(),
                &mut raw,
            ) }
        })?;
        let m = Mat { raw, coo_len: 0, blocks: None };
        let name = cstring("stiffgrain_split_csr")?;
        // SAFETY: live handles; PETSc takes a reference to the container.
        check(unsafe { ffi::PetscObjectCompose(m.raw as ffi::PetscObject, name.as_ptr(), release.0 as ffi::PetscObject) })?;
        Ok(m)
    }

    /// Creates a matrix of PETSc type `kind` (`"aij"` or `"baij"`) with block
    /// size `bs`, `local_rows` x `local_cols` scalar rows/columns on this rank
    /// (multiples of `bs`), preallocated by block: `d_nnz`/`o_nnz` count the
    /// nonzero blocks of each local block row in and outside the diagonal
    /// part (`MatXAIJSetPreallocation`). Blocks go in with
    /// [`Mat::set_values_blocked`] whatever the type: an AIJ matrix of
    /// block size 6 is what `-pc_type gamg` needs (PETSc 3.18 builds no
    /// graph of a BAIJ matrix). Collective.
    pub fn blocked(comm: &impl AsComm, kind: &str, bs: PetscInt, local_rows: PetscInt, local_cols: PetscInt, d_nnz: &[PetscInt], o_nnz: &[PetscInt]) -> Result<Mat> {
        let nb = if bs > 0 { (local_rows.max(0) / bs) as usize } else { 0 };
        let d = prealloc_ptr(d_nnz, nb, "Mat::blocked d_nnz")?;
        let o = prealloc_ptr(o_nnz, nb, "Mat::blocked o_nnz")?;
        let m = Mat::create(comm, kind, bs, local_rows, local_cols)?;
        // SAFETY: live handle; the arrays have `local_rows / bs` entries or are
        // NULL; the upper-triangle counts (symmetric formats) are not used.
        check(unsafe { ffi::MatXAIJSetPreallocation(m.raw, bs, d, o, std::ptr::null(), std::ptr::null()) })?;
        Ok(m)
    }

    /// Creates a matrix of PETSc type `kind` (`"aij"`, `"baij"`, ...) with
    /// block size `bs` and `local_rows` x `local_cols` on this rank
    /// (`MatCreate`, `MatSetSizes`, `MatSetBlockSize`, `MatSetType`); not
    /// yet preallocated: call [`Mat::set_preallocation_coo`]. Collective.
    pub fn create(comm: &impl AsComm, kind: &str, bs: PetscInt, local_rows: PetscInt, local_cols: PetscInt) -> Result<Mat> {
        require_alive("Mat::create")?;
        let k = cstring(kind)?;
        let det = ffi::PETSC_DECIDE as PetscInt;
        let mut raw: ffi::Mat = std::ptr::null_mut();
        // SAFETY: valid out pointer, live communicator; the wrapper owns the
        // handle from here on, so an error below still destroys it.
        check(unsafe { ffi::MatCreate(comm.as_comm(), &mut raw) })?;
        let m = Mat { raw, coo_len: 0, blocks: None };
        // SAFETY: live handle; PETSc copies the type name.
        unsafe {
            check(ffi::MatSetSizes(m.raw, local_rows, local_cols, det, det))?;
            check(ffi::MatSetBlockSize(m.raw, bs))?;
            check(ffi::MatSetType(m.raw, k.as_ptr()))?;
        }
        Ok(m)
    }

    /// Options prefix, e.g. `"compat_"` so that `-compat_mat_type aij` applies.
    pub fn set_options_prefix(&mut self, prefix: &str) -> Result<()> {
        let p = cstring(prefix)?;
        // SAFETY: live handle, valid C string.
        check(unsafe { ffi::MatSetOptionsPrefix(self.raw, p.as_ptr()) })
    }

    /// Applies command-line options (`MatSetFromOptions`: `-mat_type`, ...).
    pub fn set_from_options(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::MatSetFromOptions(self.raw) })
    }

    /// The near null space used by algebraic multigrid (`-pc_type gamg`):
    /// `vecs` must be orthonormal (`MatNullSpaceCreate`, `MatSetNearNullSpace`;
    /// the matrix keeps its own reference). Collective.
    pub fn set_near_null_space(&mut self, vecs: &[Vector]) -> Result<()> {
        let raw: Vec<ffi::Vec> = vecs.iter().map(|v| v.raw()).collect();
        let mut ns: ffi::MatNullSpace = std::ptr::null_mut();
        // SAFETY: live handles; PETSc references the vectors; we release our
        // reference to the null space after the matrix took its own.
        unsafe {
            let mut comm: mpi::ffi::MPI_Comm = std::mem::zeroed();
            check(ffi::PetscObjectGetComm(self.raw as ffi::PetscObject, &mut comm))?;
            check(ffi::MatNullSpaceCreate(
                comm,
                ffi::PetscBool::PETSC_FALSE,
                raw.len() as PetscInt,
                raw.as_ptr(),
                &mut ns,
            ))?;
            let r = check(ffi::MatSetNearNullSpace(self.raw, ns));
            ffi::MatNullSpaceDestroy(&mut ns);
            r
        }
    }

    /// Preallocates exactly the entries at global (row, column) pairs
    /// `(i[k], j[k])`, which any rank may give for any row; repeated pairs
    /// are summed by [`Mat::set_values_coo`] (`MatSetPreallocationCOO`).
    /// Collective.
    pub fn set_preallocation_coo(&mut self, i: &[PetscInt], j: &[PetscInt]) -> Result<()> {
        if i.len() != j.len() {
            return Err(size_error("Mat::set_preallocation_coo i vs j", i.len(), j.len()));
        }
        // PETSc may reorder its arguments: give it copies.
        let (mut i, mut j) = (i.to_vec(), j.to_vec());
        // BAIJ: values set by blocks (see [`BlockCoo`]).
        let blocks = match self.type_name()?.as_str() {
            "seqbaij" | "mpibaij" => Some(Arc::new(BlockCoo::new(&i, &j, self.block_size()?.max(1) as usize))),
            _ => None,
        };
        // SAFETY: live handle; both arrays have `len` entries.
        check(unsafe { ffi::MatSetPreallocationCOO(self.raw, i.len() as ffi::PetscCount, i.as_mut_ptr(), j.as_mut_ptr()) })?;
        self.coo_len = i.len();
        self.blocks = blocks;
        Ok(())
    }

    /// Sets the values of the entries given to
    /// [`Mat::set_preallocation_coo`], in that order (`MatSetValuesCOO`;
    /// repeated pairs summed; `Insert` replaces the matrix's values, `Add`
    /// adds to them). The matrix is assembled on return. Collective.
    pub fn set_values_coo(&mut self, v: &[f64], mode: InsertMode) -> Result<()> {
        if v.len() != self.coo_len {
            return Err(size_error("Mat::set_values_coo", v.len(), self.coo_len));
        }
        if let Some(b) = self.blocks.clone() {
            // Entries of a block may come from several ranks: summed.
            if !matches!(mode, InsertMode::Add) {
                self.zero_entries()?;
            }
            let buf = b.gather(v);
            for (g, &r) in b.rows.iter().enumerate() {
                let (cols, vals) = b.row(g, &buf);
                self.set_values_blocked(&[r], cols, vals, InsertMode::Add)?;
            }
            return self.assemble();
        }
        // SAFETY: live handle; `v` has as many entries as the COO pattern.
        check(unsafe { ffi::MatSetValuesCOO(self.raw, v.as_ptr(), mode.raw()) })
    }

    /// The PETSc type (`MatGetType`), e.g. `"mpibaij"`.
    pub fn type_name(&self) -> Result<String> {
        let mut t: ffi::MatType = std::ptr::null();
        // SAFETY: live handle, valid out pointer; PETSc owns the string.
        check(unsafe { ffi::MatGetType(self.raw, &mut t) })?;
        if t.is_null() {
            return Ok(String::new());
        }
        // SAFETY: non-null, NUL-terminated type name owned by PETSc.
        Ok(unsafe { std::ffi::CStr::from_ptr(t) }.to_string_lossy().into_owned())
    }

    /// Another owner of the same PETSc matrix (`PetscObjectReference`; the
    /// matrix lives until every owner is dropped), e.g. for a SNES Jacobian
    /// closure to fill the matrix it was registered with.
    pub fn share(&self) -> Mat {
        super::vec::add_reference(self.raw as ffi::PetscObject);
        Mat { raw: self.raw, coo_len: self.coo_len, blocks: self.blocks.clone() }
    }

    /// Wraps a handle PETSc owns (e.g. in a SNES Jacobian callback), taking
    /// an extra reference: the matrix is not destroyed when the borrow ends.
    pub(crate) fn borrow_raw<'a>(raw: ffi::Mat) -> Borrowed<'a, Mat> {
        super::vec::add_reference(raw as ffi::PetscObject);
        Borrowed::new(Mat { raw, coo_len: 0, blocks: None })
    }

    /// The raw handle (for the other wrappers of this module tree).
    pub(crate) fn raw(&self) -> ffi::Mat {
        self.raw
    }

    /// Inserts or adds a dense `rows.len()` x `cols.len()` block of values
    /// (row-major) at global indices (`MatSetValues`). Negative indices are
    /// ignored. Call [`Mat::assemble`] before use.
    pub fn set_values(&mut self, rows: &[PetscInt], cols: &[PetscInt], values: &[f64], mode: InsertMode) -> Result<()> {
        if rows.len() * cols.len() != values.len() {
            return Err(size_error("Mat::set_values rows*cols vs values", rows.len() * cols.len(), values.len()));
        }
        // SAFETY: array lengths match the counts passed.
        check(unsafe {
            ffi::MatSetValues(
                self.raw,
                rows.len() as PetscInt,
                rows.as_ptr(),
                cols.len() as PetscInt,
                cols.as_ptr(),
                values.as_ptr(),
                mode.raw(),
            )
        })
    }

    /// Inserts or adds blocks at global *block* indices
    /// (`MatSetValuesBlocked`): `values` is row-major with
    /// `rows.len()*bs` rows and `cols.len()*bs` columns.
    pub fn set_values_blocked(
        &mut self,
        rows: &[PetscInt],
        cols: &[PetscInt],
        values: &[f64],
        mode: InsertMode,
    ) -> Result<()> {
        let bs = self.block_size()? as usize;
        let want = rows.len() * cols.len() * bs * bs;
        if want != values.len() {
            return Err(size_error("Mat::set_values_blocked rows*cols*bs^2 vs values", want, values.len()));
        }
        // SAFETY: array lengths match the counts passed.
        check(unsafe {
            ffi::MatSetValuesBlocked(
                self.raw,
                rows.len() as PetscInt,
                rows.as_ptr(),
                cols.len() as PetscInt,
                cols.as_ptr(),
                values.as_ptr(),
                mode.raw(),
            )
        })
    }

    /// The block size (1 for AIJ).
    pub fn block_size(&self) -> Result<PetscInt> {
        let mut bs = 0;
        // SAFETY: live handle, valid out pointer.
        check(unsafe { ffi::MatGetBlockSize(self.raw, &mut bs) })?;
        Ok(bs)
    }

    /// Sets all stored entries to zero, keeping the nonzero pattern (`MatZeroEntries`).
    pub fn zero_entries(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::MatZeroEntries(self.raw) })
    }

    /// Starts assembly (`MatAssemblyBegin`, final assembly). Collective.
    pub fn assembly_begin(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::MatAssemblyBegin(self.raw, ffi::MatAssemblyType::MAT_FINAL_ASSEMBLY) })
    }

    /// Finishes assembly (`MatAssemblyEnd`). Collective.
    pub fn assembly_end(&mut self) -> Result<()> {
        // SAFETY: live handle.
        check(unsafe { ffi::MatAssemblyEnd(self.raw, ffi::MatAssemblyType::MAT_FINAL_ASSEMBLY) })
    }

    /// `assembly_begin` then `assembly_end`. Collective.
    pub fn assemble(&mut self) -> Result<()> {
        self.assembly_begin()?;
        self.assembly_end()
    }

    /// `y = A x` (`MatMult`). Collective.
    pub fn mult(&self, x: &Vector, y: &mut Vector) -> Result<()> {
        // SAFETY: live handles; `y` is distinct from `x` by borrow rules.
        check(unsafe { ffi::MatMult(self.raw, x.raw(), y.raw()) })
    }

    /// `y = Aᵀ x` (`MatMultTranspose`). Collective.
    pub fn mult_transpose(&self, x: &Vector, y: &mut Vector) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::MatMultTranspose(self.raw, x.raw(), y.raw()) })
    }

    /// `z = y + A x` (`MatMultAdd`). Collective.
    pub fn mult_add(&self, x: &Vector, y: &Vector, z: &mut Vector) -> Result<()> {
        // SAFETY: live handles.
        check(unsafe { ffi::MatMultAdd(self.raw, x.raw(), y.raw(), z.raw()) })
    }

    /// The explicit transpose Aᵀ, a new assembled matrix (`MatTranspose`,
    /// `MAT_INITIAL_MATRIX`). Collective.
    pub fn transpose(&self) -> Result<Mat> {
        let mut raw: ffi::Mat = std::ptr::null_mut();
        // SAFETY: live assembled handle, valid out pointer; the new matrix is ours.
        check(unsafe { ffi::MatTranspose(self.raw, ffi::MatReuse::MAT_INITIAL_MATRIX, &mut raw) })?;
        Ok(Mat { raw, coo_len: 0, blocks: None })
    }

    /// The Galerkin product Pᵀ A P of this matrix A, a new assembled matrix
    /// (`MatPtAP`, `MAT_INITIAL_MATRIX`, PETSc's default fill). Collective.
    pub fn ptap(&self, p: &Mat) -> Result<Mat> {
        let mut raw: ffi::Mat = std::ptr::null_mut();
        // SAFETY: live assembled handles with matching layouts (PETSc checks),
        // valid out pointer; the new matrix is ours.
        check(unsafe { ffi::MatPtAP(self.raw, p.raw, ffi::MatReuse::MAT_INITIAL_MATRIX, ffi::PETSC_DEFAULT as f64, &mut raw) })?;
        Ok(Mat { raw, coo_len: 0, blocks: None })
    }

    /// `self += alpha X` for any non-zero pattern of `x` (`MatAXPY`,
    /// `UNKNOWN_NONZERO_PATTERN`: new entries are allocated). Collective.
    pub fn axpy(&mut self, alpha: f64, x: &Mat) -> Result<()> {
        // SAFETY: live assembled handles of the same sizes (PETSc checks).
        check(unsafe { ffi::MatAXPY(self.raw, alpha, x.raw, ffi::MatStructure::UNKNOWN_NONZERO_PATTERN) })
    }

    /// Global rows owned by this rank (`MatGetOwnershipRange`).
    pub fn ownership_range(&self) -> Result<Range<PetscInt>> {
        let (mut lo, mut hi) = (0, 0);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { ffi::MatGetOwnershipRange(self.raw, &mut lo, &mut hi) })?;
        Ok(lo..hi)
    }

    /// Global (rows, columns).
    pub fn size(&self) -> Result<(PetscInt, PetscInt)> {
        let (mut m, mut n) = (0, 0);
        // SAFETY: live handle, valid out pointers.
        check(unsafe { ffi::MatGetSize(self.raw, &mut m, &mut n) })?;
        Ok((m, n))
    }

    /// Whether inserting outside the preallocated pattern is an error
    /// (`MAT_NEW_NONZERO_ALLOCATION_ERR`, on by default). Switch it off to
    /// allow (slow) new allocations, e.g. when the contact set changes.
    pub fn set_new_nonzero_allocation_err(&mut self, flag: bool) -> Result<()> {
        let b = if flag { ffi::PetscBool::PETSC_TRUE } else { ffi::PetscBool::PETSC_FALSE };
        // SAFETY: live handle.
        check(unsafe { ffi::MatSetOption(self.raw, ffi::MatOption::MAT_NEW_NONZERO_ALLOCATION_ERR, b) })
    }

    /// Vectors compatible with this matrix: (`x` for `A x`, `y` for the result)
    /// (`MatCreateVecs`).
    pub fn create_vecs(&self) -> Result<(Vector, Vector)> {
        let (mut r, mut l): (ffi::Vec, ffi::Vec) = (std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: live handle, valid out pointers; ownership passes to the wrappers.
        check(unsafe { ffi::MatCreateVecs(self.raw, &mut r, &mut l) })?;
        Ok((Vector::from_owned_raw(r), Vector::from_owned_raw(l)))
    }
}

/// This rank's rows of an MPIAIJ matrix in PETSc's split CSR: the
/// "diagonal" part (columns this rank owns, numbered from its first) and
/// the "off-diagonal" part (global column numbers), each row's columns
/// ascending. `di`, `oi` have one entry per row plus one.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct SplitCsr {
    pub di: Vec<PetscInt>,
    pub dj: Vec<PetscInt>,
    pub da: Vec<f64>,
    pub oi: Vec<PetscInt>,
    pub oj: Vec<PetscInt>,
    pub oa: Vec<f64>,
}

impl SplitCsr {
    /// Empty, with capacity for `rows` rows and `nnz` entries.
    pub fn with_capacity(rows: usize, nnz: usize) -> Self {
        let mut c = Self { di: Vec::with_capacity(rows + 1), dj: Vec::with_capacity(nnz), da: Vec::with_capacity(nnz), oi: Vec::with_capacity(rows + 1), oj: Vec::new(), oa: Vec::new() };
        c.di.push(0);
        c.oi.push(0);
        c
    }

    /// Appends a row of entries (global column, value) of a matrix whose
    /// columns `owned` are this rank's, sorting them.
    pub fn push_row(&mut self, row: &mut [(PetscInt, f64)], owned: &Range<PetscInt>) {
        row.sort_unstable_by_key(|e| e.0);
        let (d0, o0) = (self.dj.len(), self.oj.len());
        for &(j, v) in row.iter() {
            // A column given twice (a body meeting its own periodic image) sums.
            let (cols, vals, col, start) = if owned.contains(&j) { (&mut self.dj, &mut self.da, j - owned.start, d0) } else { (&mut self.oj, &mut self.oa, j, o0) };
            if cols.len() > start && cols.last() == Some(&col) {
                *vals.last_mut().expect("same length") += v;
            } else {
                cols.push(col);
                vals.push(v);
            }
        }
        self.di.push(self.dj.len() as PetscInt);
        self.oi.push(self.oj.len() as PetscInt);
    }

    /// The rows, after checking what PETSc would read out of bounds.
    fn check(&self, local_cols: PetscInt, global_cols: PetscInt) -> Result<PetscInt> {
        let bad = |what: &str| super::error::PetscError::new(ffi::PETSC_ERR_ARG_WRONG as i32, format!("Mat::aij_from_split: {what}"));
        let rows = self.di.len().saturating_sub(1);
        if self.di.is_empty() || self.oi.len() != rows + 1 || self.di[0] != 0 || self.oi[0] != 0 {
            return Err(bad("row starts of the two parts disagree"));
        }
        let csr = |i: &[PetscInt], j: &[PetscInt], a: &[f64], cols: std::ops::Range<PetscInt>| {
            i.windows(2).all(|w| w[0] <= w[1])
                && *i.last().expect("non-empty") as usize == j.len()
                && j.len() == a.len()
                && i.windows(2).all(|w| j[w[0] as usize..w[1] as usize].windows(2).all(|p| p[0] < p[1]))
                && j.iter().all(|c| cols.contains(c))
        };
        if !csr(&self.di, &self.dj, &self.da, 0..local_cols) || !csr(&self.oi, &self.oj, &self.oa, 0..global_cols) {
            return Err(bad("not CSR with ascending columns in range"));
        }
        Ok(rows as PetscInt)
    }
}

/// The destroy callback of [`Mat::aij_from_split`]'s container.
unsafe extern "C" fn free_split_csr(ctx: *mut std::ffi::c_void) -> ffi::PetscErrorCode {
    if !ctx.is_null() {
        // SAFETY: the pointer `Box::into_raw` gave, freed once (PETSc calls
        // this when the container's last reference goes).
        drop(unsafe { Box::from_raw(ctx as *mut SplitCsr) });
    }
    0
}

impl Drop for Mat {
    fn drop(&mut self) {
        if alive() {
            // SAFETY: owned live handle; PETSc not finalised.
            unsafe { ffi::MatDestroy(&mut self.raw) };
        }
    }
}
