//! Absurd but valid-looking input gets one clear line and exit status 2:
//! step counts and gravity beyond the documented limits (at `check`),
//! bodies from files that overlap each other (on one rank or across two),
//! NaN in a frames.h5 used as input; a state that turns non-finite mid-run
//! stops it with one line naming the body and the step.
mod common;

use std::path::{Path, PathBuf};

fn head(dt: f64, t_end: f64, gravity: &str) -> String {
    format!(
        "[simulation]\nsolver = \"cd\"\nt_end = {t_end:?}\ndt = {dt:?}\ngravity = {gravity}\n\n\
         [[material]]\nname = \"m\"\ndensity = 1000.0\n\n[[shape]]\nname = \"s\"\nkind = \"sphere\"\nradius = 0.01\n"
    )
}

fn config(dir: &Path, name: &str, text: &str) -> PathBuf {
    let cfg = dir.join(format!("{name}.toml"));
    let out = dir.join(format!("out-{name}"));
    std::fs::write(&cfg, format!("{text}\n[output]\ndir = \"{}\"\n", out.display())).unwrap();
    cfg
}

/// Runs and asserts exit status 2 with exactly one line holding `words`, no panic.
fn refused(np: usize, args: &[&str], words: &[&str]) -> String {
    let o = common::mpirun(np, &common::stiffgrain(), args);
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(2), "np {np} {args:?}: want status 2:\n{text}");
    assert!(!text.contains("panicked"), "{text}");
    let lines: Vec<&str> = text.lines().filter(|l| words.iter().all(|w| l.contains(w))).collect();
    assert_eq!(lines.len(), 1, "np {np} {args:?}: want one line with {words:?}:\n{text}");
    text
}

#[test]
fn too_many_steps_and_absurd_gravity_are_refused_at_check() {
    let dir = tempfile::tempdir().unwrap();
    let many = config(dir.path(), "many", &format!("{}\n[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, 0.1]\n", head(1e-300, 1.0, "[0.0, 0.0, -9.81]")));
    let heavy = config(dir.path(), "heavy", &format!("{}\n[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, 0.1]\n", head(1e-3, 1.0, "[1e30, 0.0, 0.0]")));
    for cmd in ["check", "run"] {
        refused(1, &[cmd, many.to_str().unwrap()], &["simulation.dt", "above the maximum of 1e12"]);
        refused(2, &[cmd, heavy.to_str().unwrap()], &["simulation.gravity", "above the maximum"]);
    }
    assert!(!dir.path().join("out-many").exists(), "a refused run writes nothing");
}

#[test]
fn bodies_from_files_that_overlap_are_refused_on_any_rank_count() {
    let dir = tempfile::tempdir().unwrap();
    // 200 bodies in a row, 2.5 radii apart; (a) all on one point, (b) one
    // pair in the middle overlapping by half a radius (it may fall on a
    // rank boundary).
    let row = |k: usize| format!("{},{:.6},0.0,0.02,0.01\n", k, 0.025 * k as f64);
    let piled: String = std::iter::once("id,x,y,z,radius\n".to_string()).chain((0..2000).map(|k| format!("{k},0.0,0.0,0.02,0.01\n"))).collect();
    let mut pair: String = std::iter::once("id,x,y,z,radius\n".to_string()).chain((0..200).map(row)).collect();
    pair += "200,2.5075,0.0,0.02,0.01\n"; // 0.5 r from body 100's surface
    for (name, text) in [("piled", piled), ("pair", pair)] {
        std::fs::write(dir.path().join(format!("{name}.csv")), text).unwrap();
        let cfg = config(
            dir.path(),
            name,
            &format!("{}\n[[generate]]\nkind = \"file\"\nfile = \"{name}.csv\"\n", head(1e-3, 2e-3, "[0.0, 0.0, -9.81]")),
        );
        for np in [1, 2, 3] {
            refused(np, &["run", cfg.to_str().unwrap()], &["overlap"]);
        }
        assert!(!dir.path().join(format!("out-{name}/frames.h5")).exists(), "{name}: a refused start writes no frames");
    }
}

#[test]
fn nan_in_a_frames_file_is_refused_at_start_up() {
    let dir = tempfile::tempdir().unwrap();
    let src = config(
        dir.path(),
        "src",
        &format!(
            "{}\n[[generate]]\nkind = \"lattice\"\nshape = \"s\"\norigin = [0.0, 0.0, 0.02]\ncount = [4, 4, 1]\ngap = 0.01\n",
            head(1e-3, 2e-3, "[0.0, 0.0, -9.81]")
        ),
    );
    common::mpirun_ok(1, &common::stiffgrain(), &["run", src.to_str().unwrap()]);
    let frames = dir.path().join("out-src/frames.h5");
    {
        let f = hdf5::File::open_rw(&frames).unwrap();
        let mut names = f.group("frames").unwrap().member_names().unwrap();
        names.sort();
        let ds = f.dataset(&format!("frames/{}/bodies/velocity", names.last().unwrap())).unwrap();
        let mut v = ds.read_raw::<f64>().unwrap();
        v[3 * 5 + 1] = f64::NAN;
        ds.write_raw(&v).unwrap();
    }
    let cfg = config(
        dir.path(),
        "from-nan",
        &format!("{}\n[[generate]]\nkind = \"file\"\nfile = \"out-src/frames.h5\"\n", head(1e-3, 2e-3, "[0.0, 0.0, -9.81]")),
    );
    for np in [1, 2] {
        refused(np, &["run", cfg.to_str().unwrap()], &["not finite"]);
    }
}

#[test]
fn a_state_that_turns_non_finite_stops_the_run_naming_body_and_step() {
    let dir = tempfile::tempdir().unwrap();
    // A finite but absurd speed: the kinetic energy overflows at once.
    let csv = "id,x,y,z,radius,vx,vy,vz\n0,0.0,0.0,0.02,0.01,0,0,0\n1,0.1,0.0,0.02,0.01,1e200,0,0\n";
    std::fs::write(dir.path().join("fast.csv"), csv).unwrap();
    let cfg = config(
        dir.path(),
        "fast",
        &format!("{}\n[[generate]]\nkind = \"file\"\nfile = \"fast.csv\"\n", head(1e-3, 0.01, "[0.0, 0.0, -9.81]")),
    );
    for np in [1, 2] {
        let o = common::mpirun(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap(), "--overwrite"]);
        let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(o.status.code(), Some(1), "np {np}:\n{text}");
        assert!(!text.contains("panicked"), "{text}");
        let lines: Vec<&str> = text.lines().filter(|l| l.contains("step 1:") && l.contains("non-finite")).collect();
        assert_eq!(lines.len(), 1, "np {np}: one line naming the step:\n{text}");
    }
}
