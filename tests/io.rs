//! Output stage integration tests: frames, XDMF and checkpoints written at 1–4
//! ranks by examples/io_roundtrip.rs must be identical, sorted by id, free of
//! ghosts, and restartable; damaged checkpoints must fail cleanly on all ranks.
mod common;

use common::*;
use hdf5::types::{FloatSize, IntSize, TypeDescriptor, VarLenUnicode};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

const N: u64 = 50;

fn exe() -> std::path::PathBuf {
    example("io_roundtrip")
}

/// The content of a dataset or attribute as bytes (little-endian numbers,
/// strings as UTF-8).
fn bytes(c: &hdf5::Container) -> Vec<u8> {
    let d = c.dtype().unwrap().to_descriptor().unwrap();
    let mut out: Vec<u8> = c.shape().iter().flat_map(|s| (*s as u64).to_le_bytes()).collect();
    match d {
        TypeDescriptor::Float(FloatSize::U8) => out.extend(c.read_raw::<f64>().unwrap().iter().flat_map(|x| x.to_le_bytes())),
        TypeDescriptor::Unsigned(IntSize::U8) => out.extend(c.read_raw::<u64>().unwrap().iter().flat_map(|x| x.to_le_bytes())),
        TypeDescriptor::Unsigned(IntSize::U4) => out.extend(c.read_raw::<u32>().unwrap().iter().flat_map(|x| x.to_le_bytes())),
        TypeDescriptor::Unsigned(IntSize::U1) => out.extend(c.read_raw::<u8>().unwrap()),
        TypeDescriptor::VarLenUnicode => {
            for s in c.read_raw::<VarLenUnicode>().unwrap() {
                out.extend(s.as_str().as_bytes());
            }
        }
        other => panic!("unexpected type {other:?} in {}", c.name()),
    }
    out
}

/// Every attribute and dataset under `g`, by path (`/a/b@attr` for attributes).
fn dump(g: &hdf5::Group, out: &mut BTreeMap<String, Vec<u8>>) {
    let base = g.name();
    for a in g.attr_names().unwrap() {
        out.insert(format!("{base}@{a}"), bytes(&g.attr(&a).unwrap()));
    }
    for ds in g.datasets().unwrap() {
        for a in ds.attr_names().unwrap() {
            out.insert(format!("{}@{a}", ds.name()), bytes(&ds.attr(&a).unwrap()));
        }
        out.insert(ds.name(), bytes(&ds));
    }
    for sub in g.groups().unwrap() {
        dump(&sub, out);
    }
}

fn dump_file(path: &Path) -> BTreeMap<String, Vec<u8>> {
    let f = hdf5::File::open(path).unwrap_or_else(|e| panic!("cannot open {}: {e}", path.display()));
    let mut out = BTreeMap::new();
    dump(&f, &mut out);
    out.remove("/meta@n_ranks");
    out.remove("/@n_ranks");
    out
}

/// Minimal XML well-formedness: tags balance and nest.
fn check_xml(text: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find('<') {
        let j = rest[i..].find('>').expect("unclosed tag") + i;
        let tag = &rest[i + 1..j];
        rest = &rest[j + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        let name: String = tag.trim_start_matches('/').chars().take_while(|c| !c.is_whitespace() && *c != '/').collect();
        if tag.starts_with('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.as_str()), "mismatched </{name}>");
        } else if !tag.ends_with('/') {
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "unclosed elements {stack:?}");
}

fn check_frames(dir: &Path, np: usize) {
    let path = dir.join("frames.h5");
    let f = hdf5::File::open(&path).unwrap();
    let n_ranks: u32 = f.group("meta").unwrap().attr("n_ranks").unwrap().read_scalar().unwrap();
    assert_eq!(n_ranks as usize, np);
    let frames = f.group("frames").unwrap().member_names().unwrap();
    assert_eq!(frames, vec!["000000000".to_string(), "000000010".to_string()]);
    for fr in &frames {
        let g = f.group(&format!("frames/{fr}/bodies")).unwrap();
        let id: Vec<u64> = g.dataset("id").unwrap().read_raw().unwrap();
        assert_eq!(id, (0..N).collect::<Vec<_>>(), "ids not sorted 0..N (np {np}, frame {fr})");
        let pos: Vec<f64> = g.dataset("position").unwrap().read_raw().unwrap();
        assert_eq!(pos.len() as u64, 3 * N);
        assert!(pos.iter().all(|x| x.abs() < 1e6), "a ghost was written (np {np})");
        assert_eq!(g.dataset("orientation").unwrap().shape(), vec![N as usize, 4]);
        let shape: Vec<u32> = g.dataset("shape").unwrap().read_raw().unwrap();
        let n_mesh = shape.iter().filter(|&&s| s == 2).count();
        assert_eq!(g.dataset("mesh_vertices").unwrap().shape(), vec![8 * n_mesh, 3]);
        assert_eq!(g.dataset("mesh_triangles").unwrap().shape(), vec![12 * n_mesh, 3]);
        let tri: Vec<u64> = g.dataset("mesh_triangles").unwrap().read_raw().unwrap();
        assert!(tri.iter().all(|&t| t < 8 * n_mesh as u64));
    }
    let c = f.group("frames/000000000/contacts").unwrap();
    let a: Vec<u64> = c.dataset("body_a").unwrap().read_raw().unwrap();
    let b: Vec<u64> = c.dataset("body_b").unwrap().read_raw().unwrap();
    let sa: Vec<u32> = c.dataset("sub_a").unwrap().read_raw().unwrap();
    assert_eq!(a.len() as u64, 2 * (N - 1));
    let keys: Vec<_> = (0..a.len()).map(|i| (a[i], b[i], sa[i])).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "contacts not sorted");
    // A column added only through the named-column path (examples/io_roundtrip.rs
    // `dummy_flux` = [a + sub_a/4, −(a + sub_a/2)]) comes back with its rows.
    let flux: Vec<f64> = c.dataset("dummy_flux").unwrap().read_raw().unwrap();
    assert_eq!(c.dataset("dummy_flux").unwrap().shape(), vec![a.len(), 2]);
    for i in 0..a.len() {
        let want = [a[i] as f64 + 0.25 * sa[i] as f64, -(a[i] as f64 + 0.5 * sa[i] as f64)];
        assert_eq!([flux[2 * i], flux[2 * i + 1]], want, "dummy_flux row {i} (np {np})");
    }
    let c = f.group("frames/000000010/contacts").unwrap();
    assert_eq!(c.dataset("point").unwrap().shape(), vec![0, 3], "empty contact set");

    // XDMF: well-formed, one grid per frame, every referenced dataset exists.
    let text = std::fs::read_to_string(dir.join("frames.xdmf")).expect("frames.xdmf missing");
    check_xml(&text);
    assert_eq!(text.matches("<Grid Name=\"bodies_frames_").count(), frames.len());
    assert_eq!(text.matches("<Grid Name=\"meshes_frames_").count(), frames.len());
    let mut n_refs = 0;
    for part in text.split("frames.h5:").skip(1) {
        let p = &part[..part.find('<').unwrap()];
        assert!(f.dataset(p).is_ok(), "frames.xdmf references missing dataset {p}");
        n_refs += 1;
    }
    assert!(n_refs >= 8 * frames.len());
}

fn check_checkpoint_file(dir: &Path) {
    assert!(!dir.join("checkpoint-000000.h5").exists(), "prune kept the oldest checkpoint");
    assert!(dir.join("checkpoint-000005.h5").exists());
    assert!(!dir.join("checkpoint-000010.h5.tmp").exists());
    let f = hdf5::File::open(dir.join("checkpoint-000010.h5")).unwrap();
    let b = f.group("bodies").unwrap();
    let id: Vec<u64> = b.dataset("id").unwrap().read_raw().unwrap();
    assert_eq!(id, (0..N).collect::<Vec<_>>());
    let mass: Vec<f64> = b.dataset("mass").unwrap().read_raw().unwrap();
    assert!(mass.iter().enumerate().all(|(i, &m)| m == 1.0 + i as f64));
    assert_eq!(b.dataset("inertia").unwrap().shape(), vec![N as usize, 9]);
    let complete: u8 = f.attr("complete").unwrap().read_scalar().unwrap();
    assert_eq!(complete, 1);
}

#[test]
fn frames_and_checkpoints_identical_at_1_to_4_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    type Dump = BTreeMap<String, Vec<u8>>;
    let mut reference: Option<(Dump, Dump)> = None;
    for np in 1..=4 {
        let dir = tmp.path().join(format!("np{np}"));
        // The output dir already existing must be fine.
        std::fs::create_dir_all(&dir).unwrap();
        let out = mpirun_ok(np, &exe(), &["write", dir.to_str().unwrap(), &N.to_string()]);
        assert!(out.contains("checkpoint ok"), "{out}");
        check_frames(&dir, np);
        check_checkpoint_file(&dir);
        let frames = dump_file(&dir.join("frames.h5"));
        let ck = dump_file(&dir.join("checkpoint-000010.h5"));
        assert!(frames.contains_key("/frames/000000010/bodies/velocity"));
        assert!(ck.contains_key("/solver/history/f"));
        match &reference {
            None => reference = Some((frames, ck)),
            Some((rf, rc)) => {
                for (name, a, b) in [("frames.h5", rf, &frames), ("checkpoint", rc, &ck)] {
                    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>(), "{name}: objects differ at np {np}");
                    for (k, v) in a {
                        assert!(b[k] == *v, "{name}: {k} differs between np 1 and np {np}");
                    }
                }
            }
        }
        // Restart on a different rank count than the writer.
        let other = if np == 1 { 3 } else { 1 };
        let ckp = dir.join("checkpoint-000010.h5");
        let out = mpirun_ok(other, &exe(), &["read", ckp.to_str().unwrap(), &N.to_string()]);
        assert!(out.contains("checkpoint ok"), "{out}");
    }
}

#[test]
fn redistribute_sorts_globally_at_1_to_4_ranks() {
    for np in 1..=4 {
        let out = mpirun_ok(np, &exe(), &["redist", "17"]);
        assert!(out.contains("redistribute ok"), "{out}");
    }
}

/// Runs under mpirun, failing the test if it does not end within `secs`.
fn run_bounded(np: usize, args: &[&str], secs: u64) -> (i32, String) {
    let mut child = mpirun_cmd(np, &exe(), args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("cannot start mpirun");
    let start = Instant::now();
    loop {
        if let Some(_st) = child.try_wait().unwrap() {
            break;
        }
        if start.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mpirun -np {np} {args:?} hung (killed after {secs} s)");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn damaged_checkpoints_fail_on_all_ranks() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("w");
    mpirun_ok(2, &exe(), &["write", dir.to_str().unwrap(), &N.to_string()]);
    let good = dir.join("checkpoint-000010.h5");
    let len = std::fs::metadata(&good).unwrap().len();

    let trunc = tmp.path().join("trunc.h5");
    std::fs::copy(&good, &trunc).unwrap();
    std::fs::OpenOptions::new().write(true).open(&trunc).unwrap().set_len(len / 2).unwrap();

    // Flip bytes inside the position data (found through the dataset offset).
    let offset = hdf5::File::open(&good).unwrap().dataset("bodies/position").unwrap().offset().expect("contiguous") as usize;
    let flipped = tmp.path().join("flipped.h5");
    let mut data = std::fs::read(&good).unwrap();
    for b in &mut data[offset + 40..offset + 56] {
        *b ^= 0x5a;
    }
    std::fs::write(&flipped, &data).unwrap();

    // Flip bytes of the superblock signature.
    let header = tmp.path().join("header.h5");
    let mut data = std::fs::read(&good).unwrap();
    for b in &mut data[0..8] {
        *b ^= 0xff;
    }
    std::fs::write(&header, &data).unwrap();

    // A file that does not exist.
    let missing = tmp.path().join("missing.h5");

    // An interrupted write: no completion mark.
    let incomplete = tmp.path().join("incomplete.h5");
    std::fs::copy(&good, &incomplete).unwrap();
    hdf5::File::open_rw(&incomplete).unwrap().delete_attr("complete").unwrap();

    // A checkpoint of format version 1 (before solver-owned state tables).
    let old = tmp.path().join("format1.h5");
    std::fs::copy(&good, &old).unwrap();
    hdf5::File::open_rw(&old).unwrap().delete_attr("format_version").unwrap();
    for np in [1, 2] {
        let (code, text) = run_bounded(np, &["read", old.to_str().unwrap(), &N.to_string()], 120);
        assert_ne!(code, 0, "np {np}: a format-1 checkpoint was accepted:\n{text}");
        assert!(text.contains("format version 1") && text.contains("format1.h5"), "np {np}: the refusal does not name the version and file:\n{text}");
    }

    for np in [1, 2] {
        for bad in [&trunc, &flipped, &header, &missing, &incomplete] {
            let (code, text) = run_bounded(np, &["read", bad.to_str().unwrap(), &N.to_string()], 120);
            let name = bad.file_name().unwrap().to_str().unwrap();
            assert_ne!(code, 0, "np {np}: {name} was accepted:\n{text}");
            assert!(text.contains(name), "np {np}: error does not name {name}:\n{text}");
            assert!(!text.contains("panicked"), "np {np}: {name} caused a panic:\n{text}");
        }
    }
    // The undamaged file still reads.
    let (code, text) = run_bounded(2, &["read", good.to_str().unwrap(), &N.to_string()], 120);
    assert_eq!(code, 0, "{text}");
}
