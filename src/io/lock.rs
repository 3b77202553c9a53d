//! One run per output directory: an advisory lock (`flock`) on
//! `<output.dir>/stiffgrain.lock`, held by rank 0 for the run's life and
//! released by the kernel when the process ends, however it ends. The file
//! names its holder for the message a second run gets.
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

/// The lock file's name inside the output directory.
pub const LOCK_FILE: &str = "stiffgrain.lock";

/// Why the directory could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds it.
    #[error("output.dir: {} is in use by another run ({holder}); wait for it to end or choose another output.dir", dir.display())]
    Held { dir: PathBuf, holder: String },
    #[error("{}: cannot {what}: {source}", path.display())]
    Fs { path: PathBuf, what: &'static str, source: std::io::Error },
}

/// The held lock; dropping it releases the directory.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Locks `dir` (which exists) for this process, writing `holder` (who and
/// what runs) into the lock file. Not collective: rank 0 calls it.
pub fn lock_dir(dir: &Path, holder: &str) -> Result<DirLock, LockError> {
    let path = dir.join(LOCK_FILE);
    let fs = |what: &'static str| {
        let path = path.clone();
        move |source| LockError::Fs { path, what, source }
    };
    let mut file = OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(fs("create the lock file"))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            let holder = text.trim();
            let holder = if holder.is_empty() { "a process that has just started".to_string() } else { holder.to_string() };
            return Err(LockError::Held { dir: dir.to_path_buf(), holder });
        }
        // A file system without flock (Lustre mounted without -o flock,
        // some NFS setups): run unlocked rather than not at all.
        Err(TryLockError::Error(e)) if unsupported(&e) => {
            log::warn!("{}: the file system does not support locks ({e}); nothing keeps a second run out of this output.dir", path.display());
        }
        Err(TryLockError::Error(e)) => return Err(fs("lock the output directory")(e)),
    }
    file.set_len(0).map_err(fs("write the lock file"))?;
    file.rewind().map_err(fs("write the lock file"))?;
    writeln!(file, "{holder}").and_then(|_| file.flush()).map_err(fs("write the lock file"))?;
    Ok(DirLock { _file: file })
}

/// flock is not implemented where `path` lives.
fn unsupported(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::Unsupported || matches!(e.raw_os_error(), Some(38 /* ENOSYS */ | 95 /* EOPNOTSUPP */ | 22 /* EINVAL */))
}

/// Who this process is, for the lock file: pid, host and start time.
pub fn holder(what: &str) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "?".into());
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    format!("pid {} on {host}, {what}, started at unix time {since}", std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_naming_the_holder_and_freed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let first = lock_dir(dir.path(), "pid 1 on here, run a.toml").unwrap();
        // A second open file description: flock refuses it as it would another process.
        let err = lock_dir(dir.path(), "pid 2").unwrap_err().to_string();
        assert!(err.contains("in use by another run (pid 1 on here, run a.toml)"), "{err}");
        drop(first);
        lock_dir(dir.path(), "pid 3").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap(), "pid 3\n");
    }
}
