//! Restart of a frames.h5 that may be damaged: which frames are complete,
//! and the copy of those into a new file (`FrameWriter::append`).
use super::h5raw::{copy_object, members_by_position, raise_recorded_end};
use super::series::series_readable;
use super::{H5Context, IoError};
use std::path::Path;

/// What rank 0 finds in the frames file of a run it continues.
pub(super) enum Health {
    Intact,
    Missing,
    /// Why it cannot be continued as it is.
    Damaged(String),
}

/// Rank 0, before a restart: whether every frame up to `after_step` of
/// `path` is complete (later frames are dropped anyway).
pub(super) fn inspect(path: &Path, after_step: u64) -> Health {
    let len = match std::fs::metadata(path) {
        Ok(m) => m.len(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Health::Missing,
        Err(e) => return Health::Damaged(e.to_string()),
    };
    let r = (|| -> Result<(), String> {
        let file = hdf5::File::open(path).map_err(|e| e.to_string())?;
        let (names, marked) = frame_names(&file).map_err(|e| format!("cannot list /frames: {e}"))?;
        let g = file.group("frames").map_err(|e| e.to_string())?;
        for name in &names {
            match name.parse::<u64>() {
                Ok(s) if s <= after_step => {
                    let f = g.group(name).map_err(|e| format!("frame {name}: {e}"))?;
                    frame_complete(&f, len, marked).map_err(|e| format!("frame {name}: {e}"))?
                }
                // Removed on reopening: one torn by a kill mid-write can leave
                // a link to an unreadable object that HDF5 cannot delete.
                Ok(_) => drop(g.group(name).map_err(|e| format!("frame {name} past the checkpoint: {e}"))?),
                Err(_) => {}
            }
        }
        Ok(())
    })();
    match r {
        Ok(()) => Health::Intact,
        Err(why) => Health::Damaged(why),
    }
}

/// The frame groups' names, sorted, and whether the file marks complete
/// frames (files of earlier versions do not).
pub(super) fn frame_names(file: &hdf5::File) -> hdf5::Result<(Vec<String>, bool)> {
    let g = file.group("frames")?;
    let mut names = g.member_names()?;
    names.sort();
    let marked = names.iter().any(|n| g.group(n).is_ok_and(|f| f.attr("complete").is_ok()));
    Ok((names, marked))
}

/// A frame (its group `f`) is complete when it carries the `complete` mark
/// (written last), if the file uses marks, and each of its datasets opens
/// and lies inside the file's `len` bytes.
pub(super) fn frame_complete(f: &hdf5::Group, len: u64, marked: bool) -> Result<(), String> {
    if marked && f.attr("complete").and_then(|a| a.read_scalar::<u8>()).ok() != Some(1) {
        return Err("no completion mark (torn)".into());
    }
    f.attr("time").and_then(|a| a.read_scalar::<f64>()).map_err(|e| e.to_string())?;
    for sub in f.member_names().map_err(|e| e.to_string())? {
        let g = f.group(&sub).map_err(|e| format!("{sub}: {e}"))?;
        for d in g.member_names().map_err(|e| format!("{sub}: {e}"))? {
            let ds = g.dataset(&d).map_err(|e| format!("{sub}/{d}: {e}"))?;
            if let Some(at) = ds.offset() {
                if at + ds.storage_size() > len {
                    return Err(format!("{sub}/{d} lies past the end of the file"));
                }
            }
        }
    }
    Ok(())
}

/// Rank 0: copies the complete frames up to `after_step` of the damaged file
/// `from` into the new file `to` (its header already written). A truncated
/// file is padded with zeros to the length its superblock records, so that
/// HDF5 opens it, and cut back afterwards; a file longer than its
/// superblock records (killed while HDF5 closed it) has its recorded end
/// raised to its length, so that the metadata written past it is read.
/// Returns the kept frames' names and how many frames up to `after_step`
/// the damaged file listed.
pub(super) fn copy_complete(from: &Path, to: &Path, after_step: u64) -> Result<(Vec<String>, usize), IoError> {
    let len = std::fs::metadata(from).map_err(|e| IoError::fs(from, "read the damaged file", e))?.len();
    let recorded = stored_end(from).unwrap_or(0);
    let pad = |n: u64| {
        std::fs::OpenOptions::new().write(true).open(from).and_then(|f| f.set_len(n)).map_err(|e| IoError::fs(from, "pad the damaged file", e))
    };
    if recorded > len {
        pad(recorded)?;
    } else if recorded != 0 && recorded < len {
        // (Reserved, unused space past the end is harmless to include; a
        // file that cannot be raised is read as it is.)
        let _ = raise_recorded_end(from);
    }
    let r = (|| -> Result<(Vec<String>, usize), IoError> {
        let Ok(src) = hdf5::File::open(from) else { return Ok((Vec::new(), 0)) };
        let Ok(g) = src.group("frames") else { return Ok((Vec::new(), 0)) };
        // (By position: the damage may be what makes lookups by name fail.)
        let Ok(members) = members_by_position(&g) else { return Ok((Vec::new(), 0)) };
        let marked = members.iter().any(|(_, f)| f.as_ref().is_ok_and(|f| f.attr("complete").is_ok()));
        let frames: Vec<_> = members.into_iter().filter(|(n, _)| n.parse::<u64>().is_ok_and(|s| s <= after_step)).collect();
        let dst = hdf5::File::open_rw(to).ctx(to, "opening the new file to copy the complete frames")?;
        let mut kept = Vec::new();
        for (name, f) in &frames {
            if let Ok(f) = f {
                if frame_complete(f, len, marked).is_ok() {
                    copy_object(f, ".", &dst, &format!("frames/{name}")).ctx(to, &format!("copying frame {name}"))?;
                    kept.push(name.clone());
                }
            }
        }
        // The series is kept when every dataset of it reads; reopen cuts it
        // back to the checkpoint's step (a new one is started otherwise).
        if series_readable(&src) {
            let _ = dst.unlink("series");
            let _ = copy_object(&src, "series", &dst, "series");
        }
        dst.close().ctx(to, "closing")?;
        Ok((kept, frames.len()))
    })();
    if recorded > len {
        pad(len)?;
    }
    r
}

/// The end of file recorded in the HDF5 superblock at the start of `path`
/// (superblock versions 0 to 3, 8-byte addresses).
pub(super) fn stored_end(path: &Path) -> Option<u64> {
    use std::io::Read;
    let mut head = [0u8; 56];
    std::fs::File::open(path).ok()?.read_exact(&mut head).ok()?;
    if &head[..8] != b"\x89HDF\r\n\x1a\n" {
        return None;
    }
    let (at, offsets) = match head[8] {
        0 => (40, head[13]),
        1 => (44, head[13]),
        2 | 3 => (28, head[9]),
        _ => return None,
    };
    (offsets == 8).then(|| u64::from_le_bytes(head[at..at + 8].try_into().expect("8 bytes")))
}
