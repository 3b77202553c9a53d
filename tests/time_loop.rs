//! The generic time loop: `simulation.until_static` ends a run at rest
//! (with the static reactions, the same on 1 and 2 ranks),
//! `output.thermo_seconds` prints progress lines on long steps, and a
//! restart with another Δt ends at t_end.
mod common;

/// A CD pyramid of 14 spheres (5 free on a fixed base of 9) dropped from 5 %
/// of a radius, with a t_end far beyond the time it needs to settle.
fn pyramid(extra_sim: &str, extra_out: &str) -> String {
    format!(
        r#"
[simulation]
solver = "cd"
t_end = 10.0
dt = 1e-3
{extra_sim}

[[material]]
name = "grain"
density = 2000.0

[[shape]]
name = "ball"
kind = "sphere"
radius = 1.25e-3

[[generate]]
kind = "pyramid"
shape = "ball"
origin = [0.0, 0.0, 0.0]
n = 3
layer_gap = 6.25e-5
fix_base = true

[output]
dir = "OUTDIR"
every = 0
{extra_out}
"#
    )
}

fn summary(out: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

#[test]
fn until_static_stops_at_rest_with_the_weight_on_the_base() {
    let tmp = tempfile::tempdir().unwrap();
    let mass = 2000.0 * 4.0 / 3.0 * std::f64::consts::PI * 1.25e-3f64.powi(3);
    let weight = 5.0 * mass * 9.81;
    let mut steps = Vec::new();
    for np in [1, 2] {
        let (out, log) = common::run_config(np, tmp.path(), "static", &pyramid("until_static = 1e-6", ""));
        let s = summary(&out);
        assert_eq!(s["reached_static"].as_bool(), Some(true), "np {np}: not static by t_end\n{log}");
        let t = s["time"].as_f64().unwrap();
        assert!(t < 1.0, "np {np}: stopped only at t = {t}");
        assert!(log.contains("static: every body slower than"), "{log}");
        let total: f64 = common::reactions(&out).iter().map(|r| r.1[2]).sum();
        assert!((total + weight).abs() <= 1e-6 * weight, "np {np}: base reactions {total} vs weight {weight}");
        // The last quiet step wrote the final frame.
        let f = hdf5::File::open(out.join("frames.h5")).unwrap();
        let last = f.group("frames").unwrap().member_names().unwrap().into_iter().max().unwrap();
        assert_eq!(last.parse::<u64>().unwrap(), s["steps"].as_u64().unwrap(), "np {np}");
        steps.push(s["steps"].as_u64().unwrap());
    }
    assert_eq!(steps[0], steps[1], "the static step depends on the rank count");
}

#[test]
fn thermo_lines_follow_the_wall_clock() {
    let tmp = tempfile::tempdir().unwrap();
    // 20 steps, thermo_every beyond the run: only thermo_seconds prints lines
    // (a microsecond: one after every step) besides the last step's.
    let text = pyramid("", "thermo_every = 100000\nthermo_seconds = 1e-6").replace("t_end = 10.0", "t_end = 0.02");
    let (out, _) = common::run_config(2, tmp.path(), "thermo", &text);
    let log = std::fs::read_to_string(out.join("log.txt")).unwrap();
    let lines = log.lines().filter(|l| l.trim_start().chars().next().is_some_and(|c| c.is_ascii_digit())).count();
    assert_eq!(lines, 20, "{log}");
    // With the default (10 s) this short run prints the last line only.
    let (out, _) = common::run_config(2, tmp.path(), "quiet", &pyramid("", "thermo_every = 100000").replace("t_end = 10.0", "t_end = 0.02"));
    let log = std::fs::read_to_string(out.join("log.txt")).unwrap();
    let lines = log.lines().filter(|l| l.trim_start().chars().next().is_some_and(|c| c.is_ascii_digit())).count();
    assert_eq!(lines, 1, "{log}");
}

/// A run continued with half its Δt ends at the new t_end after whole steps
/// of the new Δt, not after as many steps as t_end / Δt counts from zero.
#[test]
fn a_restart_with_another_dt_ends_at_its_t_end() {
    let tmp = tempfile::tempdir().unwrap();
    let text = pyramid("", "").replace("t_end = 10.0", "t_end = 0.05");
    for np in [1, 2] {
        let (out, _) = common::run_config(np, tmp.path(), "first", &text);
        assert_eq!(summary(&out)["steps"].as_u64(), Some(50));
        let checkpoint = out.join("checkpoint-000050.h5");
        let more = tmp.path().join(format!("more-{np}"));
        let dir = format!("output.dir=\"{}\"", more.display());
        let log = common::mpirun_ok(
            np,
            &common::stiffgrain(),
            &["restart", checkpoint.to_str().unwrap(), "--set", "simulation.dt=5e-4", "--set", "simulation.t_end=0.06", "--set", &dir],
        );
        assert!(log.contains("steps 51..70 of dt = 5e-4"), "np {np}:\n{log}");
        let s = summary(&more);
        // 0.01 s more in steps of 0.5 ms.
        assert_eq!(s["steps"].as_u64(), Some(70), "np {np}:\n{log}");
        let t = s["time"].as_f64().unwrap();
        assert!((t - 0.06).abs() <= 1e-12, "np {np}: ended at t = {t}");
    }
}
