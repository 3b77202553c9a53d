//! Output stage of the step: HDF5 frames + XDMF, checkpoints (restart on any
//! rank count). Every file holds bodies sorted by id whatever the rank count.
//!
//! All functions taking a communicator are collective: every rank calls them
//! in the same order, and an error on one rank is returned on every rank
//! (never one rank failing while the others wait in a collective).
pub mod body_files;
pub mod checkpoint;
mod checksum;
pub mod frame_read;
pub mod frame_view;
pub mod frames;
mod frames_recover;
mod series;
pub mod lock;
pub mod redistribute;
pub mod table;
pub mod xdmf;

mod h5raw;

pub use checkpoint::{
    checkpoint_path, list_checkpoints, prune_checkpoints, read_checkpoint, write_checkpoint, Checkpoint, SolverState,
    WorldState, FORMAT_VERSION,
};
pub use frames::{FrameWriter, SeriesRow};
pub use series::{read_series, MEASURE_COLUMNS};
pub use table::{Column, ColumnData, ContactField, ContactTable};
pub use redistribute::{redistribute_sorted, FlatRecords, Redistributed};

use mpi::traits::*;
use std::path::{Path, PathBuf};

/// An output or checkpoint error, naming the file and what went wrong.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    /// The HDF5 library refused an operation on a file.
    #[error("{path}: HDF5 error while {what}: {message}")]
    Hdf5 { path: PathBuf, what: String, message: String },
    /// A file-system operation (create dir, rename, fsync, remove) failed.
    #[error("{path}: cannot {what}: {source}")]
    Fs { path: PathBuf, what: String, source: std::io::Error },
    /// A file was read but its content is inconsistent (checksum, shapes,
    /// missing completion mark).
    #[error("{path}: corrupt or incomplete file: {what}")]
    Corrupt { path: PathBuf, what: String },
    /// Invalid arguments from the caller (e.g. `n_owned` > number of bodies).
    #[error("{path}: {what}")]
    Invalid { path: PathBuf, what: String },
    /// Another rank failed; its message is carried here so that every rank
    /// reports the same error.
    #[error("{message} (reported by rank {rank})")]
    OnRank { rank: i32, message: String },
}

impl IoError {
    pub(crate) fn hdf5(path: &Path, what: impl Into<String>, e: hdf5::Error) -> Self {
        IoError::Hdf5 { path: path.to_path_buf(), what: what.into(), message: e.to_string() }
    }

    pub(crate) fn fs(path: &Path, what: impl Into<String>, source: std::io::Error) -> Self {
        IoError::Fs { path: path.to_path_buf(), what: what.into(), source }
    }

    pub(crate) fn corrupt(path: &Path, what: impl Into<String>) -> Self {
        IoError::Corrupt { path: path.to_path_buf(), what: what.into() }
    }
}

/// Extension to attach the file name and the operation to HDF5 results.
pub(crate) trait H5Context<T> {
    fn ctx(self, path: &Path, what: &str) -> Result<T, IoError>;
}

impl<T> H5Context<T> for hdf5::Result<T> {
    fn ctx(self, path: &Path, what: &str) -> Result<T, IoError> {
        self.map_err(|e| IoError::hdf5(path, what, e))
    }
}

/// Collective: checks that `bytes` of disk space can be had next to `path`
/// (rank 0 allocates them in `path` + `.reserve`, then frees them), so that a
/// full disk or quota is one agreed error naming the file before a
/// collective write, in which it would leave ranks waiting for each other.
/// Another process may take the space back before it is used.
pub fn check_space<C: Communicator>(comm: &C, path: &Path, bytes: u64, what: &str) -> Result<(), IoError> {
    let r = if comm.rank() == 0 {
        let mut name = path.as_os_str().to_owned();
        name.push(".reserve");
        let spare = PathBuf::from(name);
        let r = std::fs::File::create(&spare).and_then(|f| h5raw::reserve(&f, bytes));
        let _ = std::fs::remove_file(&spare);
        r.map_err(|e| IoError::fs(path, format!("reserve {bytes} bytes for {what}"), e))
    } else {
        Ok(())
    };
    agree(comm, r)
}

/// Collective: makes every rank agree on `r`. If any rank has an error, every
/// rank returns an error: the failing rank its own, the others an
/// [`IoError::OnRank`] carrying the message of the lowest failing rank.
pub fn agree<T, C: Communicator>(comm: &C, r: Result<T, IoError>) -> Result<T, IoError> {
    let me = comm.rank();
    let size = comm.size();
    let mine = if r.is_err() { me } else { size };
    let mut first = size;
    comm.all_reduce_into(&mine, &mut first, mpi::collective::SystemOperation::min());
    if first == size {
        return r;
    }
    // Broadcast the message of the first failing rank (length, then bytes).
    let root = comm.process_at_rank(first);
    let msg = match &r {
        Err(e) if me == first => e.to_string(),
        _ => String::new(),
    };
    let mut len = msg.len() as u64;
    root.broadcast_into(&mut len);
    let mut bytes = if me == first { msg.into_bytes() } else { vec![0u8; len as usize] };
    root.broadcast_into(&mut bytes[..]);
    match r {
        Err(e) => Err(e),
        Ok(_) => Err(IoError::OnRank { rank: first, message: String::from_utf8_lossy(&bytes).into_owned() }),
    }
}
