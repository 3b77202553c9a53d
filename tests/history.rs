//! The history store: per-body and per-contact state that solvers keep
//! between steps travels with the bodies through migration, RCB rebalance
//! and checkpoints written and read on different rank counts.
mod common;

use common::Spheres;
use std::path::Path;
use stiffgrain::dem::law::NormalLaw;

/// Frictional spheres on a floor in lanes along y, eight sliding then
/// rolling across the whole domain at 4 m/s (they change ranks mid-run)
/// and three at rest on one side (the work is uneven: `imbalance = 1.0`
/// rebalances by RCB). Every sphere starts at the gap where the law carries
/// its weight, so each keeps one frictional contact with the floor.
fn lanes(out: &Path, t_end: f64) -> String {
    let law = NormalLaw::new(1.0e6, 1.5, -2.0, 0.005, 0.5);
    let weight = 1000.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.1f64.powi(3) * 9.81;
    let z0 = 0.1 + law.inverse(weight);
    let mut scene = Spheres::new("dem", t_end, 2e-3, [0.0, 0.0, -9.81], 0.1);
    for i in 0..11 {
        let (x, v) = match i {
            0..=7 if i % 2 == 0 => (-1.2, 4.8),
            0..=7 => (1.2, -4.8),
            _ => (-0.6, 0.0),
        };
        scene = scene.moving_body([x, 0.21 * i as f64, z0], [v, 0.0, 0.0]);
    }
    scene
        .ground()
        .with("[parallel]\nimbalance = 1.0\n")
        .with("[contact]\ndistance = 0.01\n")
        .with("[dem]\ngbar = 0.005\nf = 0.5\neps1 = 1.0e6\nn1 = 1.5\nn2 = -2.0\ndamping = 0.2\n")
        .output("every = 20\ncheckpoint_every = 100")
        .toml_into(out)
        .replace("density = 1000.0", "density = 1000.0\nfriction = 0.5\nfriction_dynamic = 0.4")
}

/// (contact key, [f_n, f_t]) of the frame of `step`, sorted by key.
fn contact_forces(out: &Path, step: u64) -> Vec<([u64; 4], [f64; 4])> {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let g = f.group(&format!("frames/{step:09}")).unwrap_or_else(|e| panic!("frame {step} in {}: {e}", out.display()));
    let c = g.group("contacts").unwrap();
    let u = |n: &str| c.dataset(n).unwrap().read_raw::<u64>().unwrap();
    let s = |n: &str| c.dataset(n).unwrap().read_raw::<u32>().unwrap();
    let (a, b, sa, sb) = (u("body_a"), u("body_b"), s("sub_a"), s("sub_b"));
    let f_n = c.dataset("force_normal").unwrap().read_raw::<f64>().unwrap();
    let f_t = c.dataset("force_tangent").unwrap().read_raw::<f64>().unwrap();
    let mut rows: Vec<_> = (0..a.len())
        .map(|k| ([a[k], b[k], sa[k] as u64, sb[k] as u64], [f_n[k], f_t[3 * k], f_t[3 * k + 1], f_t[3 * k + 2]]))
        .collect();
    rows.sort_by_key(|r| r.0);
    rows
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// Linear solves to 1e-13: the Newton path then does not depend on the
/// block-Jacobi blocks (one per rank), only the history can make a
/// difference.
const EXACT: [&str; 3] = ["--", "-ksp_rtol", "1e-13"];

#[test]
fn friction_history_follows_migration_rebalance_and_a_restart_on_another_rank_count() {
    let tmp = tempfile::tempdir().unwrap();
    let write = |name: &str, out: &Path, t_end: f64| {
        let cfg = tmp.path().join(name);
        std::fs::write(&cfg, lanes(out, t_end)).unwrap();
        cfg
    };
    let full = tmp.path().join("full");
    let cfg = write("full.toml", &full, 0.6);
    common::mpirun_ok(2, &common::stiffgrain(), &[&["run", cfg.to_str().unwrap()][..], &EXACT].concat());
    let s = summary(&full);
    assert!(s["rebalances"].as_u64().unwrap() > 0, "no RCB rebalance: {s}");
    assert!(s["bodies_migrated"].as_u64().unwrap() >= 8, "the rolling spheres did not change ranks: {s}");

    // Migration carries the rows: the same run on one rank (no migration).
    let serial = tmp.path().join("serial");
    let cfg = write("serial.toml", &serial, 0.6);
    common::mpirun_ok(1, &common::stiffgrain(), &[&["run", cfg.to_str().unwrap()][..], &EXACT].concat());
    let last = summary(&full)["steps"].as_u64().unwrap();
    assert_close(&contact_forces(&serial, last), &contact_forces(&full, last), "2 ranks against 1");

    let part = tmp.path().join("part");
    let cfg = write("part.toml", &part, 0.2);
    common::mpirun_ok(2, &common::stiffgrain(), &[&["run", cfg.to_str().unwrap()][..], &EXACT].concat());
    let cp = part.join("checkpoint-000100.h5");
    assert!(cp.exists(), "no checkpoint at step 100");
    // Sliding and sticking contacts carry history into the checkpoint.
    let at_cp = contact_forces(&part, 100);
    assert!(at_cp.iter().filter(|(_, f)| f[1..].iter().any(|x| x.abs() > 1e-6)).count() >= 8, "too few frictional contacts: {at_cp:?}");

    let restart = [&["restart", cp.to_str().unwrap(), "--set", "simulation.t_end=0.6"][..], &EXACT].concat();
    common::mpirun_ok(3, &common::stiffgrain(), &restart);
    assert_eq!(summary(&part)["steps"].as_u64().unwrap(), last, "the restart took other steps");
    assert_close(&contact_forces(&full, last), &contact_forces(&part, last), "restarted on 3 ranks against uninterrupted on 2");
}

/// The same contacts with forces equal to 1e-12 of the largest.
fn assert_close(a: &[([u64; 4], [f64; 4])], b: &[([u64; 4], [f64; 4])], what: &str) {
    assert_eq!(a.iter().map(|r| r.0).collect::<Vec<_>>(), b.iter().map(|r| r.0).collect::<Vec<_>>(), "{what}: other contacts");
    let scale = a.iter().flat_map(|r| r.1).fold(0.0f64, |m, x| m.max(x.abs()));
    let err = a.iter().zip(b).flat_map(|(x, y)| (0..4).map(move |k| (x.1[k] - y.1[k]).abs())).fold(0.0, f64::max);
    assert!(scale > 0.0, "{what}: no forces");
    assert!(err <= 1e-12 * scale, "{what}: contact forces differ by {err:e} (largest force {scale:e})");
}

/// Body history read on ghosts comes from the ghosts' owners, on 1, 2 and 3
/// ranks (examples/history_ghosts.rs checks every value).
#[test]
fn ghosts_read_their_owners_body_history() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("lattice.toml");
    let scene = Spheres::new("cd", 0.01, 1e-3, [0.0, 0.0, -9.81], 0.05).lattice([0.0, 0.0, 0.06], [8, 4, 2], 0.002, [0.0; 3]).ground();
    std::fs::write(&cfg, scene.toml_into(&tmp.path().join("out"))).unwrap();
    for np in [1, 2, 3] {
        let line = common::mpirun_ok(np, &common::example("history_ghosts"), &[cfg.to_str().unwrap()]);
        assert!(line.contains("ok=true"), "{np} ranks: {line}");
        let ghosts: u64 = line.split_whitespace().find_map(|kv| kv.strip_prefix("ghosts=")).unwrap().parse().unwrap();
        assert!(np == 1 || ghosts > 0, "{np} ranks: no ghosts to check: {line}");
    }
}
