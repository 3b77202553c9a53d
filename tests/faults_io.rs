//! I/O faults at 1 and 2 ranks: a read-only output.dir, a full disk during
//! frames and during a checkpoint, a damaged or missing frames.h5 at
//! restart. Each fault must end every rank with one line naming the file
//! and the OS reason and a non-zero exit, never a hang (each mpirun has a
//! watchdog), and leave the last checkpoint restartable and the complete
//! frames readable.
//!
//! The faults are real: read-only and size-limited tmpfs mounts. Where the
//! machine does not allow mounting (not root, or a container without the
//! capability) those tests print a `skipped:` line.
mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Seconds after which a run counts as hung.
const WATCHDOG: u64 = 60;

/// `stiffgrain ARGS` on `np` ranks; fails the test if it has not ended
/// within [`WATCHDOG`] seconds. Returns the exit code and both streams.
fn run_bounded(np: usize, args: &[&str]) -> (i32, String) {
    use std::io::Read;
    let mut child = mpirun_cmd(np, &stiffgrain(), args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cannot start mpirun");
    // Drained as they come, so that a full pipe never looks like a hang.
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = r.read_to_string(&mut s);
            s
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(WATCHDOG) {
            // TERM first: mpirun then ends its ranks too; KILL if it lingers.
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            std::thread::sleep(Duration::from_secs(5));
            let _ = child.kill();
            let _ = child.wait();
            panic!("mpirun -np {np} {args:?} hung (killed after {WATCHDOG} s)");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let text = format!("{}{}", out.join().unwrap(), err.join().unwrap());
    (status.code().unwrap_or(-1), text)
}

/// A tmpfs mounted on a fresh directory, unmounted on drop.
struct Mount(PathBuf);

impl Mount {
    /// `mount -t tmpfs -o OPTIONS`; None (after printing why) when the
    /// machine does not allow it.
    fn tmpfs(dir: &Path, options: &str) -> Option<Mount> {
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", options, "tmpfs"]).arg(dir).output();
        match out {
            Ok(o) if o.status.success() => {
                eprintln!("fault by a real tmpfs mounted with -o {options} on {}", dir.display());
                Some(Mount(dir.to_path_buf()))
            }
            Ok(o) => {
                skip(&format!("cannot mount a tmpfs ({})", String::from_utf8_lossy(&o.stderr).trim()));
                None
            }
            Err(e) => {
                skip(&format!("cannot run mount: {e}"));
                None
            }
        }
    }

    fn remount_read_only(&self) {
        let st = Command::new("mount").args(["-o", "remount,ro"]).arg(&self.0).status().unwrap();
        assert!(st.success(), "remount,ro of {} failed", self.0.display());
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Eighteen spheres settling on the ground under cd, 1 ms steps; frames
/// every `every` steps, a checkpoint every 10, into `out`.
fn scene(dir: &Path, name: &str, out: &Path, steps: u32, every: u64) -> PathBuf {
    let text = Spheres::new("cd", steps as f64 * 1e-3, 1e-3, [0.0, 0.0, -9.81], 0.01)
        .lattice([0.0, 0.0, 0.011], [3, 3, 2], 0.002, [0.0; 3])
        .ground()
        .every(every)
        .output("checkpoint_every = 10\ncheckpoint_keep = 5")
        .toml_into(out);
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, text).unwrap();
    cfg
}

/// The checkpoints in `out` as (step, path), oldest first (none if `out`
/// does not exist yet).
fn checkpoints(out: &Path) -> Vec<(u64, PathBuf)> {
    let mut v: Vec<(u64, PathBuf)> = std::fs::read_dir(out)
        .map(|d| {
            d.filter_map(|e| {
                let p = e.ok()?.path();
                let n = p.file_name()?.to_str()?.strip_prefix("checkpoint-")?.strip_suffix(".h5")?.parse::<u64>().ok()?;
                Some((n, p))
            })
            .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The lines of `text` holding every one of `words`.
fn lines_with<'a>(text: &'a str, words: &[&str]) -> Vec<&'a str> {
    text.lines().filter(|l| words.iter().all(|w| l.contains(w))).collect()
}

/// Asserts a failed run: non-zero exit, exactly one line naming `file` and
/// `reason`, no panic.
fn assert_one_line(np: usize, code: i32, text: &str, file: &str, reason: &str) {
    assert_ne!(code, 0, "np {np}: the run did not fail:\n{text}");
    assert!(!text.contains("panicked"), "np {np}: a panic:\n{text}");
    let lines = lines_with(text, &[file, reason]);
    assert_eq!(lines.len(), 1, "np {np}: want one line naming {file} and '{reason}', got {lines:?}:\n{text}");
}

/// Steps of the frames in `frames.h5`, each checked complete: its mark and
/// its positions readable.
fn frame_steps(path: &Path) -> Vec<u64> {
    let f = hdf5::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let g = f.group("frames").unwrap();
    let mut names = g.member_names().unwrap();
    names.sort();
    names
        .iter()
        .map(|n| {
            let fr = g.group(n).unwrap();
            assert_eq!(fr.attr("complete").unwrap().read_scalar::<u8>().unwrap(), 1, "{}: frame {n} not marked complete", path.display());
            let pos = fr.dataset("bodies/position").unwrap().read_raw::<f64>().unwrap();
            assert_eq!(pos.len(), 18 * 3, "{}: frame {n}", path.display());
            assert!(pos.iter().all(|x| x.is_finite()), "{}: frame {n}", path.display());
            n.parse().unwrap()
        })
        .collect()
}

/// Number of frames the XDMF index lists (its bodies grids).
fn xdmf_frames(dir: &Path) -> usize {
    std::fs::read_to_string(dir.join("frames.xdmf")).unwrap().matches("<Grid Name=\"bodies_frames_").count()
}

/// Restarts `checkpoint` into a new output.dir `out`; it must run to the end.
fn restart_elsewhere(np: usize, checkpoint: &Path, out: &Path) {
    let set = format!("output.dir=\"{}\"", out.display());
    let (code, text) = run_bounded(np, &["restart", checkpoint.to_str().unwrap(), "--set", &set]);
    assert_eq!(code, 0, "np {np}: restart of {} elsewhere failed:\n{text}", checkpoint.display());
    assert!(out.join("summary.json").exists(), "np {np}: no summary.json after the restart:\n{text}");
}

/// Fills the file system of `dir` but `spare` bytes (a filler file).
fn fill_but(dir: &Path, spare: u64) {
    use std::io::Write;
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![1u8; 4096];
    let mut len = 0u64;
    loop {
        match f.write(&chunk) {
            Ok(n) if n > 0 => len += n as u64,
            _ => break,
        }
    }
    let _ = f.flush();
    f.set_len(len.saturating_sub(spare)).unwrap();
}

#[test]
fn read_only_output_dir_fails_on_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let ro = tmp.path().join(format!("ro-{np}"));
        let Some(_m) = Mount::tmpfs(&ro, "ro,size=1m") else { return };
        let cfg = scene(tmp.path(), &format!("ro-{np}"), &ro, 20, 5);
        let (code, text) = run_bounded(np, &["run", cfg.to_str().unwrap()]);
        assert_one_line(np, code, &text, &ro.display().to_string(), "Read-only file system");
    }
}

#[test]
fn restart_into_read_only_dir_fails_on_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let dir = tmp.path().join(format!("rw-{np}"));
        let Some(m) = Mount::tmpfs(&dir, "size=4m") else { return };
        let out = dir.join("out");
        let cfg = scene(tmp.path(), &format!("rw-{np}"), &out, 20, 5);
        let (code, text) = run_bounded(np, &["run", cfg.to_str().unwrap()]);
        assert_eq!(code, 0, "np {np}: {text}");
        m.remount_read_only();
        let ck = out.join("checkpoint-000010.h5");
        let (code, text) = run_bounded(np, &["restart", ck.to_str().unwrap(), "--set", "simulation.t_end=0.03"]);
        assert_one_line(np, code, &text, &out.display().to_string(), "Read-only file system");
        // The checkpoint and the frames stay readable and restartable elsewhere.
        assert_eq!(frame_steps(&out.join("frames.h5")), vec![0, 5, 10, 15, 20], "np {np}");
        restart_elsewhere(np, &ck, &tmp.path().join(format!("rw-{np}-elsewhere")));
    }
}

/// A run to step 10 on a small tmpfs, then the disk filled but `spare`
/// bytes; returns the mount, the output dir and the checkpoint of step 10.
fn full_after_step_10(tmp: &Path, name: &str, np: usize, every: u64) -> Option<(Mount, PathBuf, PathBuf)> {
    let dir = tmp.join(name);
    let m = Mount::tmpfs(&dir, "size=2m")?;
    let out = dir.join("out");
    let cfg = scene(tmp, name, &out, 10, every);
    let (code, text) = run_bounded(np, &["run", cfg.to_str().unwrap()]);
    assert_eq!(code, 0, "np {np}: {text}");
    // Room for the index and the log, not for a frame or a checkpoint.
    fill_but(&dir, 24 * 1024);
    let ck = out.join("checkpoint-000010.h5");
    Some((m, out, ck))
}

#[test]
fn disk_full_during_frames_fails_on_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let Some((_m, out, ck)) = full_after_step_10(tmp.path(), &format!("ff-{np}"), np, 5) else { return };
        let (code, text) = run_bounded(np, &["restart", ck.to_str().unwrap(), "--set", "simulation.t_end=0.03", "--set", "output.every=1"]);
        assert_one_line(np, code, &text, "frames.h5", "No space left on device");
        // Every frame before the failure is complete and indexed.
        let steps = frame_steps(&out.join("frames.h5"));
        assert_eq!(steps, vec![0, 5, 10], "np {np}");
        assert_eq!(xdmf_frames(&out), steps.len(), "np {np}: the XDMF index disagrees with frames.h5");
        restart_elsewhere(np, &ck, &tmp.path().join(format!("ff-{np}-elsewhere")));
    }
}

#[test]
fn disk_full_during_checkpoint_fails_on_every_rank() {
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let Some((_m, out, ck)) = full_after_step_10(tmp.path(), &format!("fc-{np}"), np, 100) else { return };
        // No frame until the end: the checkpoint at step 20 meets the full disk.
        let (code, text) = run_bounded(np, &["restart", ck.to_str().unwrap(), "--set", "simulation.t_end=0.03"]);
        assert_one_line(np, code, &text, "checkpoint-000020.h5", "No space left on device");
        assert!(!out.join("checkpoint-000020.h5").exists(), "np {np}: a checkpoint was published on a full disk");
        assert_eq!(frame_steps(&out.join("frames.h5")), vec![0, 10], "np {np}");
        restart_elsewhere(np, &ck, &tmp.path().join(format!("fc-{np}-elsewhere")));
    }
}

/// A run of 30 steps (a frame every 2, checkpoints every 10) whose
/// frames.h5 `damage` then harms, as a crash while writing would, restarts
/// from its step-20 checkpoint: one line says the file was damaged and
/// what was kept, the damaged file stays beside the new one, which holds
/// every frame.
fn restart_repairs(name: &str, damage: impl Fn(&Path)) {
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let out = tmp.path().join(format!("{name}-{np}"));
        let cfg = scene(tmp.path(), &format!("{name}-{np}"), &out, 30, 2);
        let (code, text) = run_bounded(np, &["run", cfg.to_str().unwrap()]);
        assert_eq!(code, 0, "np {np}: {text}");
        let frames = out.join("frames.h5");
        damage(&frames);
        let (code, text) = run_bounded(np, &["restart", out.join("checkpoint-000020.h5").to_str().unwrap()]);
        assert_eq!(code, 0, "np {np}: a damaged frames.h5 blocked the restart:\n{text}");
        let said = lines_with(&text, &["frames.h5", "damaged", "kept its 11 complete frames (steps 0..20)"]);
        assert_eq!(said.len(), 1, "np {np}: want one line saying what was kept:\n{text}");
        assert!(out.join("frames.h5.damaged").exists(), "np {np}: the damaged file was not kept");
        let want: Vec<u64> = (0..=30).step_by(2).collect();
        assert_eq!(frame_steps(&frames), want, "np {np}");
        assert_eq!(xdmf_frames(&out), want.len(), "np {np}");
    }
}

/// The file's tail cut off.
#[test]
fn restart_keeps_the_complete_frames_of_a_torn_frames_file() {
    restart_repairs("torn", |frames| {
        let len = std::fs::metadata(frames).unwrap().len();
        std::fs::OpenOptions::new().write(true).open(frames).unwrap().set_len(len - 1000).unwrap();
    });
}

/// The object header of a frame past the checkpoint overwritten (a rank
/// killed while writing it): the restart must remove that frame, which
/// HDF5 cannot unlink ("not valid object type"), so the file is repaired.
#[test]
fn restart_repairs_a_frame_past_the_checkpoint_that_cannot_be_removed() {
    restart_repairs("header", |frames| {
        let addr = {
            let f = hdf5::File::open(frames).unwrap();
            let g = f.group("frames/000000026").unwrap();
            // LocationToken(address) for HDF5 1.10's H5Oget_info
            let token = format!("{:?}", g.loc_info().unwrap().token);
            let digits: String = token.chars().filter(char::is_ascii_digit).collect();
            digits.parse::<u64>().unwrap_or_else(|_| panic!("no address in {token}"))
        };
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(frames).unwrap();
        f.seek(SeekFrom::Start(addr)).unwrap();
        f.write_all(&[0xff; 64]).unwrap();
    });
}

#[test]
fn restart_says_when_frames_file_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let out = tmp.path().join(format!("gone-{np}"));
        let cfg = scene(tmp.path(), &format!("gone-{np}"), &out, 20, 5);
        let (code, text) = run_bounded(np, &["run", cfg.to_str().unwrap()]);
        assert_eq!(code, 0, "np {np}: {text}");
        std::fs::remove_file(out.join("frames.h5")).unwrap();
        let (code, text) = run_bounded(np, &["restart", out.join("checkpoint-000010.h5").to_str().unwrap()]);
        assert_eq!(code, 0, "np {np}: {text}");
        let said = lines_with(&text, &["frames.h5", "missing", "after step 10"]);
        assert_eq!(said.len(), 1, "np {np}: want one line saying the earlier frames are lost:\n{text}");
        assert_eq!(frame_steps(&out.join("frames.h5")), vec![15, 20], "np {np}");
    }
}

/// Where the local heap of /frames' names starts in the bytes of a frames
/// file: the heap header ("HEAP", version, 3 reserved bytes, data size,
/// free-list offset, data address) whose data holds frame 0's name.
fn frame_name_heap(bytes: &[u8]) -> usize {
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    let names = b"000000000\0";
    (0..bytes.len().saturating_sub(32))
        .filter(|&i| &bytes[i..i + 4] == b"HEAP")
        .find(|&i| {
            // (the bytes "HEAP" may also occur in a frame's data)
            let (size, data) = (u64_at(i + 8) as usize, u64_at(i + 24) as usize);
            data.checked_add(size).is_some_and(|end| end <= bytes.len()) && bytes[data..data + size].windows(names.len()).any(|w| w == names)
        })
        .expect("no local heap holds the frame names")
}

/// Removes the newest frame's (frame 30's) name from /frames' heap, as a
/// kill while HDF5 closed the file after that frame can leave it: the name
/// tree's key already names it, so every lookup of a frame by its name
/// fails ("doesn't exist"). With `drop_entry` its entry in the tree's
/// symbol-table node ("SNOD", version, reserved byte, 2-byte count, then
/// entries of 40 bytes starting with the name's heap offset) is gone too;
/// without, the frames list with an empty name last.
fn forget_newest_name(frames: &Path, drop_entry: bool) {
    let mut bytes = std::fs::read(frames).unwrap();
    let u64_at = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
    let heap = frame_name_heap(&bytes);
    let (size, data) = (u64_at(&bytes, heap + 8) as usize, u64_at(&bytes, heap + 24) as usize);
    let newest = b"000000030\0";
    let name = data + bytes[data..data + size].windows(newest.len()).position(|w| w == newest).expect("no name of frame 30");
    let offset = (name - data) as u64;
    let node = (0..bytes.len() - 8)
        .filter(|&i| &bytes[i..i + 4] == b"SNOD")
        .find(|&i| {
            let n = u16::from_le_bytes([bytes[i + 6], bytes[i + 7]]) as usize;
            n > 0 && i + 8 + 40 * n <= bytes.len() && u64_at(&bytes, i + 8 + 40 * (n - 1)) == offset
        })
        .expect("no symbol-table node ends with frame 30");
    if drop_entry {
        let n = u16::from_le_bytes([bytes[node + 6], bytes[node + 7]]);
        bytes[node + 6..node + 8].copy_from_slice(&(n - 1).to_le_bytes());
        let last = node + 8 + 40 * (n as usize - 1);
        bytes[last..last + 40].fill(0);
    }
    bytes[name..name + newest.len()].fill(0);
    std::fs::write(frames, &bytes).unwrap();
    let f = hdf5::File::open(frames).unwrap();
    let mut listed = f.group("frames").unwrap().member_names().unwrap();
    listed.sort();
    assert_eq!(listed.len(), if drop_entry { 15 } else { 16 }, "{listed:?}");
    assert_eq!(listed[0] == "", !drop_entry, "{listed:?}");
    assert!(f.group("frames/000000000").is_err(), "the damage should make lookups by name fail");
}

#[test]
fn restart_keeps_the_frames_whose_names_cannot_be_looked_up() {
    restart_repairs("lookup", |frames| forget_newest_name(frames, true));
}

#[test]
fn restart_keeps_the_frames_listed_beside_a_name_never_written() {
    restart_repairs("unnamed", |frames| forget_newest_name(frames, false));
}

/// HDF5 writes the superblock, with the end of the file's allocated space,
/// after the rest of the metadata when it closes the file; a kill between
/// the two leaves the metadata of the frames written since the previous
/// close past that recorded end, where HDF5 will not read it. Made here by
/// setting the recorded end (bytes 40..48 of a version-0 superblock) to
/// the first byte of frame 20's datasets.
#[test]
fn restart_keeps_the_frames_written_past_the_recorded_end_of_file() {
    restart_repairs("eoa", |frames| {
        let first = {
            let f = hdf5::File::open(frames).unwrap();
            let g = f.group("frames/000000020").unwrap();
            let mut at = u64::MAX;
            for part in g.member_names().unwrap() {
                let p = g.group(&part).unwrap();
                for d in p.member_names().unwrap() {
                    at = at.min(p.dataset(&d).unwrap().offset().unwrap_or(u64::MAX));
                }
            }
            at
        };
        let mut bytes = std::fs::read(frames).unwrap();
        assert_eq!(bytes[8], 0, "want a version-0 superblock");
        assert!(first < u64::from_le_bytes(bytes[40..48].try_into().unwrap()));
        bytes[40..48].copy_from_slice(&first.to_le_bytes());
        std::fs::write(frames, &bytes).unwrap();
        let f = hdf5::File::open(frames).unwrap();
        let frame = f.group("frames/000000020").and_then(|g| g.dataset("bodies/position")?.read_raw::<f64>());
        assert!(frame.is_err(), "the damage should make frame 20 unreadable");
    });
}

/// The frames' names live in the /frames group's local heap, and that heap
/// stays one block with its header ("HEAP", version, 3 reserved bytes,
/// data size, free-list offset, data address; the data right after it) of
/// `FRAMES_NAME_HEAP` bytes: a new frame's name reaches the disk in one
/// write. HDF5's default heap (256 bytes) outgrew its block after about 15
/// frames and was moved, its header and its block then written apart; a
/// kill between the two left a frames file whose frames could not be
/// listed, and the restart kept none of them.
#[test]
fn frame_names_stay_in_one_heap_block_written_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("heap");
    let cfg = scene(tmp.path(), "heap", &out, 40, 1);
    common::mpirun_ok(2, &stiffgrain(), &["run", cfg.to_str().unwrap()]);
    assert_eq!(frame_steps(&out.join("frames.h5")).len(), 41);
    let bytes = std::fs::read(out.join("frames.h5")).unwrap();
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().unwrap());
    let heap = frame_name_heap(&bytes);
    let (size, free, data) = (u64_at(heap + 8), u64_at(heap + 16), u64_at(heap + 24));
    assert_eq!(data, heap as u64 + 32, "the frame names' heap block is apart from its header");
    assert_eq!(size, stiffgrain::io::frames::FRAMES_NAME_HEAP as u64, "heap of {size} bytes");
    // 41 names of 16 bytes (9 digits, NUL, padding to 8) after the empty name's 8.
    assert_eq!(free, 8 + 41 * 16, "the heap's free space starts at {free}");
}

#[test]
fn restart_after_a_rank_is_killed_keeps_every_complete_frame() {
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let out = tmp.path().join(format!("kill-{np}"));
        let cfg = scene(tmp.path(), &format!("kill-{np}"), &out, 3000, 1);
        let mut child = mpirun_cmd(np, &stiffgrain(), &["run", cfg.to_str().unwrap()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("cannot start mpirun");
        // Wait for a checkpoint and some frames after it, then kill -9 the
        // last rank wherever it is (often inside a frame).
        let start = Instant::now();
        // (Any checkpoint: the first ones are pruned, maybe between two polls.)
        while !(!checkpoints(&out).is_empty() && out.join("frames.xdmf").exists() && xdmf_frames(&out) > 25) {
            if start.elapsed() > Duration::from_secs(WATCHDOG) {
                // A hang guard: the run is killed, not left behind.
                let _ = child.kill();
                panic!("np {np}: the run made no progress in {WATCHDOG} s (killed)");
            }
            assert!(child.try_wait().unwrap().is_none(), "np {np}: the run ended before it could be killed");
            std::thread::sleep(Duration::from_millis(20));
        }
        let ranks = Command::new("pgrep").args(["-P", &child.id().to_string(), "stiffgrain"]).output().unwrap();
        let pids = String::from_utf8_lossy(&ranks.stdout).to_string();
        let pid = pids.split_whitespace().last().unwrap_or_else(|| panic!("np {np}: no rank found under mpirun"));
        assert!(Command::new("kill").args(["-9", pid]).status().unwrap().success());
        let deadline = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if deadline.elapsed() > Duration::from_secs(WATCHDOG) {
                let _ = child.kill();
                panic!("np {np}: mpirun did not end after a rank was killed");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let (step, ck) = checkpoints(&out).pop().unwrap();
        let t_end = format!("simulation.t_end={:?}", (step + 5) as f64 * 1e-3);
        let (code, text) = run_bounded(np, &["restart", ck.to_str().unwrap(), "--set", &t_end]);
        assert_eq!(code, 0, "np {np}: the restart after kill -9 failed:\n{text}");
        // Every frame up to the checkpoint is there (kept or salvaged), then the new ones.
        let want: Vec<u64> = (0..=step + 5).collect();
        assert_eq!(frame_steps(&out.join("frames.h5")), want, "np {np}:\n{text}");
        assert_eq!(xdmf_frames(&out), want.len(), "np {np}");
        eprintln!("np {np}: killed after checkpoint {step}; restart said: {:?}", lines_with(&text, &["frames.h5"]));
    }
}
