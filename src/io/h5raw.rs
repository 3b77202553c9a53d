//! Output stage helper: the one place in `io` with `unsafe`. The high-level
//! `hdf5` crate only does independent transfers; this writes each rank's slab
//! of a dataset with a collective MPI-IO transfer (`H5FD_MPIO_COLLECTIVE`),
//! ranks with no rows taking part with an empty selection. It also holds the
//! few calls the crate lacks: copying an object between files, reserving
//! disk space (`posix_fallocate`), and raising a file's recorded end.
use hdf5::H5Type;
use hdf5_sys::h5::hsize_t;
use hdf5_sys::h5d::H5Dwrite;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{H5FD_mpio_xfer_t, H5Pclose, H5Pcreate, H5Pset_dxpl_mpio};
use hdf5_sys::h5s::{H5S_seloper_t, H5Sclose, H5Screate_simple, H5Sselect_hyperslab, H5Sselect_none};

/// Closes an HDF5 handle on drop.
struct Handle(hid_t, unsafe extern "C" fn(hid_t) -> hdf5_sys::h5::herr_t);

impl Drop for Handle {
    fn drop(&mut self) {
        if self.0 >= 0 {
            // SAFETY: the id was returned by the matching create call.
            unsafe { (self.1)(self.0) };
        }
    }
}

fn check(v: i64, what: &str) -> hdf5::Result<()> {
    if v < 0 {
        Err(hdf5::Error::from(format!("{what} failed")))
    } else {
        Ok(())
    }
}

/// Collective: writes `data` (row-major, `data.len() / cols` rows of `cols`
/// values; `cols = 1` for 1-D datasets) at row `offset` of the dataset `ds`,
/// whose row is everything past its first dimension (`cols` values: 3 for
/// N×3, W·3 for the n×W×3 wall series). Every rank of the file's
/// communicator must call this for the same dataset, in the same order,
/// even with no rows.
pub(crate) fn write_rows_collective<T: H5Type>(ds: &hdf5::Dataset, offset: u64, data: &[T], cols: usize) -> hdf5::Result<()> {
    let shape = ds.shape();
    let ndim = shape.len();
    if ndim == 0 {
        return Err(hdf5::Error::from("write_rows_collective: a scalar dataset"));
    }
    let file_cols: usize = shape[1..].iter().product();
    if file_cols != cols || data.len() % cols.max(1) != 0 {
        return Err(hdf5::Error::from(format!(
            "write_rows_collective: {} values in rows of {cols} for a dataset of shape {shape:?}",
            data.len()
        )));
    }
    let rows = data.len().checked_div(cols).unwrap_or(0);
    if offset as usize + rows > shape[0] {
        return Err(hdf5::Error::from(format!(
            "write_rows_collective: rows {offset}..{} beyond {} rows",
            offset as usize + rows,
            shape[0]
        )));
    }
    if shape.iter().product::<usize>() == 0 {
        // Nothing to write on any rank (every rank sees the same shape).
        return Ok(());
    }
    let mem_type = hdf5::Datatype::from_type::<T>()?;
    hdf5::sync::sync(|| {
        // SAFETY: plain HDF5 C calls on valid ids; `data` outlives the write
        // and holds exactly the selected number of elements.
        unsafe {
            let fspace = Handle(hdf5_sys::h5d::H5Dget_space(ds.id()), H5Sclose);
            check(fspace.0, "H5Dget_space")?;
            let mdims: Vec<hsize_t> = std::iter::once(rows).chain(shape[1..].iter().copied()).map(|d| d as hsize_t).collect();
            let mspace = Handle(H5Screate_simple(ndim as i32, mdims.as_ptr(), std::ptr::null()), H5Sclose);
            check(mspace.0, "H5Screate_simple")?;
            if rows == 0 {
                check(H5Sselect_none(fspace.0) as i64, "H5Sselect_none")?;
                check(H5Sselect_none(mspace.0) as i64, "H5Sselect_none")?;
            } else {
                let mut start: Vec<hsize_t> = vec![0; ndim];
                start[0] = offset as hsize_t;
                check(
                    H5Sselect_hyperslab(
                        fspace.0,
                        H5S_seloper_t::H5S_SELECT_SET,
                        start.as_ptr(),
                        std::ptr::null(),
                        mdims.as_ptr(),
                        std::ptr::null(),
                    ) as i64,
                    "H5Sselect_hyperslab",
                )?;
            }
            let dxpl = Handle(H5Pcreate(*hdf5::globals::H5P_DATASET_XFER), H5Pclose);
            check(dxpl.0, "H5Pcreate(dataset transfer)")?;
            check(H5Pset_dxpl_mpio(dxpl.0, H5FD_mpio_xfer_t::H5FD_MPIO_COLLECTIVE) as i64, "H5Pset_dxpl_mpio")?;
            // An empty slice may have a dangling pointer; HDF5 reads nothing from it.
            let buf = data.as_ptr().cast();
            check(H5Dwrite(ds.id(), mem_type.id(), mspace.0, fspace.0, dxpl.0, buf) as i64, "H5Dwrite (collective)")?;
        }
        Ok(())
    })
}

extern "C" {
    // glibc; emulated by writing where the file system lacks fallocate.
    fn posix_fallocate(fd: std::ffi::c_int, offset: i64, len: i64) -> std::ffi::c_int;
}

/// Allocates the disk blocks of bytes `0..len` of `file` (growing it if
/// shorter), so that a full disk or quota fails here, with its OS error,
/// and not later inside a collective write.
pub(crate) fn reserve(file: &std::fs::File, len: u64) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let len = i64::try_from(len).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a valid open descriptor; the call does not touch our memory.
    match unsafe { posix_fallocate(file.as_raw_fd(), 0, len) } {
        0 => Ok(()),
        e => Err(std::io::Error::from_raw_os_error(e)),
    }
}

/// Creates the group `name` in `file` with a local heap of `heap` bytes
/// for its members' names, allocated with the heap's header. A heap that
/// fills is moved to a larger block, its header and its block then written
/// separately: a kill between the two writes leaves a group that cannot be
/// listed ("bad heap free list"), and a frames file whose frames cannot be
/// found. Within `heap` the two stay one block, written at once.
pub(crate) fn create_group_with_name_heap(file: &hdf5::File, name: &str, heap: usize) -> hdf5::Result<()> {
    let c = std::ffi::CString::new(name).map_err(|e| hdf5::Error::from(e.to_string()))?;
    hdf5::sync::sync(|| {
        // SAFETY: a property list we create and close, a valid file id, a
        // NUL-terminated name that outlives the calls; the group is closed on drop.
        unsafe {
            let gcpl = Handle(H5Pcreate(*hdf5::globals::H5P_GROUP_CREATE), H5Pclose);
            check(gcpl.0, "H5Pcreate(group create)")?;
            check(hdf5_sys::h5p::H5Pset_local_heap_size_hint(gcpl.0, heap) as i64, "H5Pset_local_heap_size_hint")?;
            let p = hdf5_sys::h5p::H5P_DEFAULT;
            let g = Handle(hdf5_sys::h5g::H5Gcreate2(file.id(), c.as_ptr(), p, gcpl.0, p), hdf5_sys::h5g::H5Gclose);
            check(g.0, "H5Gcreate2")
        }
    })
}

/// Raises the end of file that the superblock of `path` records to the
/// file's length, as `h5clear --increment` does. HDF5 writes the superblock
/// after the rest of the metadata when it closes a file: a process killed
/// between the two leaves metadata (a new frame's headers, a new node of
/// the frame names' tree) past the recorded end, where HDF5 refuses to read
/// it although it is on disk.
pub(crate) fn raise_recorded_end(path: &std::path::Path) -> hdf5::Result<()> {
    extern "C" {
        // HDF5 ≥ 1.10.2; the `hdf5-sys` crate does not declare it.
        fn H5Fincrement_filesize(file_id: hid_t, increment: hsize_t) -> hdf5_sys::h5::herr_t;
    }
    let file = hdf5::File::open_rw(path)?;
    // SAFETY: a valid file id, open to write; the call sets its end of
    // allocation to max(recorded end, length) + 0.
    let r = hdf5::sync::sync(|| unsafe { H5Fincrement_filesize(file.id(), 0) });
    check(r as i64, "H5Fincrement_filesize")?;
    file.close()
}

/// The members of `group` in name order: each name, with the object opened
/// by its position in the group's tree rather than by a lookup of its name.
/// A lookup compares the name with the keys of the tree's nodes, and a key
/// naming a member whose name never reached the disk (a kill while HDF5
/// wrote the group) makes every lookup fail; a walk by position reads the
/// nodes' entries only.
pub(crate) fn members_by_position(group: &hdf5::Group) -> hdf5::Result<Vec<(String, hdf5::Result<hdf5::Group>)>> {
    use hdf5_sys::h5::{H5_index_t, H5_iter_order_t};
    let names = group.member_names_by(hdf5::IndexType::Name, hdf5::IterationOrder::Increasing)?;
    let here = c".";
    let open = |n: usize| {
        // SAFETY: a valid group id and a NUL-terminated name; the new id is
        // handed to the crate, which closes it on drop.
        hdf5::sync::sync(|| unsafe {
            let id = hdf5_sys::h5o::H5Oopen_by_idx(
                group.id(),
                here.as_ptr(),
                H5_index_t::H5_INDEX_NAME,
                H5_iter_order_t::H5_ITER_INC,
                n as hsize_t,
                hdf5_sys::h5p::H5P_DEFAULT,
            );
            check(id, "H5Oopen_by_idx")?;
            hdf5::from_id::<hdf5::Group>(id)
        })
    };
    Ok(names.into_iter().enumerate().map(|(n, name)| (name, open(n))).collect())
}

/// Copies the object `src_name` of `src` (a group and everything under
/// it; `"."` for `src` itself) to `dst_name` in `dst`, whose parent group
/// must exist.
pub(crate) fn copy_object(src: &hdf5::Location, src_name: &str, dst: &hdf5::File, dst_name: &str) -> hdf5::Result<()> {
    let cstr = |n: &str| std::ffi::CString::new(n).map_err(|e| hdf5::Error::from(e.to_string()));
    let (from, to) = (cstr(src_name)?, cstr(dst_name)?);
    let p = hdf5_sys::h5p::H5P_DEFAULT;
    // SAFETY: valid ids and NUL-terminated names that outlive the call.
    let r = hdf5::sync::sync(|| unsafe { hdf5_sys::h5o::H5Ocopy(src.id(), from.as_ptr(), dst.id(), to.as_ptr(), p, p) });
    check(r as i64, "H5Ocopy")
}
