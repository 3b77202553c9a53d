//! The PETSc options database: defaults set in code that the command line
//! (everything after `--`) still overrides.
use super::error::{check, PetscError, Result};
use super::ffi;
use std::ffi::CString;

fn cstring(s: &str) -> Result<CString> {
    CString::new(s).map_err(|_| PetscError::new(ffi::PETSC_ERR_ARG_WRONG as i32, format!("{s:?} contains NUL")))
}

/// Sets option `name` (with its leading dash, e.g. `-ksp_type`) to `value`
/// (`None` for a flag such as `-snes_monitor`), overwriting any value.
pub fn set(name: &str, value: Option<&str>) -> Result<()> {
    super::init::require_alive("options::set")?;
    let n = cstring(name)?;
    let v = value.map(cstring).transpose()?;
    // SAFETY: valid C strings; NULL options = the global database.
    check(unsafe {
        ffi::PetscOptionsSetValue(std::ptr::null_mut(), n.as_ptr(), v.as_ref().map_or(std::ptr::null(), |v| v.as_ptr()))
    })
}

/// Whether option `name` (with its leading dash) is set.
pub fn has(name: &str) -> Result<bool> {
    super::init::require_alive("options::has")?;
    let n = cstring(name)?;
    let mut flag = ffi::PetscBool::PETSC_FALSE;
    // SAFETY: valid C string; NULL options = global database, NULL prefix.
    check(unsafe { ffi::PetscOptionsHasName(std::ptr::null_mut(), std::ptr::null(), n.as_ptr(), &mut flag) })?;
    Ok(flag == ffi::PetscBool::PETSC_TRUE)
}

/// Sets option `name` only if it is not set yet: a code default that the
/// command line overrides. Returns whether it was set.
pub fn set_default(name: &str, value: Option<&str>) -> Result<bool> {
    if has(name)? {
        Ok(false)
    } else {
        set(name, value)?;
        Ok(true)
    }
}

/// The value of option `name` (with its leading dash), if it is set with one.
pub fn get(name: &str) -> Result<Option<String>> {
    super::init::require_alive("options::get")?;
    let n = cstring(name)?;
    let mut buf = vec![0 as std::os::raw::c_char; 256];
    let mut flag = ffi::PetscBool::PETSC_FALSE;
    // SAFETY: valid C string; `buf` holds `buf.len()` bytes and PETSc writes
    // a NUL-terminated value of at most that length into it.
    check(unsafe {
        ffi::PetscOptionsGetString(std::ptr::null_mut(), std::ptr::null(), n.as_ptr(), buf.as_mut_ptr(), buf.len(), &mut flag)
    })?;
    if flag != ffi::PetscBool::PETSC_TRUE {
        return Ok(None);
    }
    // SAFETY: PETSc NUL-terminated the value within `buf`.
    let s = unsafe { std::ffi::CStr::from_ptr(buf.as_ptr()) };
    Ok(Some(s.to_string_lossy().into_owned()))
}

/// Names (without the leading dash) of the options in the database that
/// nothing has read so far (`PetscOptionsLeftGet`).
pub fn unused() -> Result<Vec<String>> {
    super::init::require_alive("options::unused")?;
    let mut n: ffi::PetscInt = 0;
    let mut names: *mut *mut std::os::raw::c_char = std::ptr::null_mut();
    let mut values: *mut *mut std::os::raw::c_char = std::ptr::null_mut();
    // SAFETY: NULL options = the global database; PETSc allocates the two
    // arrays (of `n` borrowed strings), released by PetscOptionsLeftRestore.
    unsafe {
        check(ffi::PetscOptionsLeftGet(std::ptr::null_mut(), &mut n, &mut names, &mut values))?;
        let out = (0..n.max(0) as usize)
            .filter_map(|i| {
                let p = *names.add(i);
                (!p.is_null()).then(|| std::ffi::CStr::from_ptr(p).to_string_lossy().trim_start_matches('-').to_string())
            })
            .collect();
        check(ffi::PetscOptionsLeftRestore(std::ptr::null_mut(), &mut n, &mut names, &mut values))?;
        Ok(out)
    }
}
