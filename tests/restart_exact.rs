//! A restart on the same rank count continues bit for bit: 2N steps in one
//! run and N steps, a checkpoint, a restart and N more steps end in the
//! same last frame, every body and contact value equal to the last bit, for
//! each solver on 1 and 2 ranks. The checkpoint holds everything the next
//! step reads: warm starts (CD forces, the compatible solve's displacements
//! and bars), the DEM's accelerations, friction history and Δt, the rank
//! boxes and RCB cuts, the neighbour lists' reference positions.
mod common;

use common::Spheres;
use std::path::Path;

/// Spheres thrown onto a floor and at each other: contacts open and close,
/// bodies cross rank boundaries, RCB rebalances (`imbalance = 1.0`).
fn pile(solver: &str, t_end: f64, dt: f64, extra: &str) -> Spheres {
    Spheres::new(solver, t_end, dt, [0.0, 0.0, -9.81], 0.05)
        .lattice([-0.3, 0.0, 0.06], [6, 3, 2], 0.004, [1.5, 0.0, -0.5])
        .moving_body([0.5, 0.1, 0.06], [-6.0, 0.0, 0.0])
        .ground()
        .with("[parallel]\nimbalance = 1.0\n")
        .with(extra)
        .output("every = 25\ncheckpoint_every = 50")
}


/// The material lines of the frictional checks.
const FRICTION: &str = "friction = 0.5\nfriction_dynamic = 0.4";

/// `material`: further lines of the material (with friction, its
/// tangential history is checked too).
fn check(solver: &str, np: usize, dt: f64, extra: &str, material: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let text = |t_end: f64, out: &Path| {
        let t = pile(solver, t_end, dt, extra).toml().replace("OUTDIR", &out.display().to_string());
        t.replace("density = 1000.0", &format!("density = 1000.0\n{material}"))
    };
    let (n, t_full) = (100u64, 200.0 * dt);
    let full = tmp.path().join("full");
    let cfg = tmp.path().join("full.toml");
    std::fs::write(&cfg, text(t_full, &full)).unwrap();
    common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);

    let part = tmp.path().join("part");
    let cfg = tmp.path().join("part.toml");
    std::fs::write(&cfg, text(n as f64 * dt, &part)).unwrap();
    common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
    let cp = part.join(format!("checkpoint-{n:06}.h5"));
    assert!(cp.exists(), "{solver}: no checkpoint at step {n}");
    common::mpirun_ok(np, &common::stiffgrain(), &["restart", cp.to_str().unwrap(), "--set", &format!("simulation.t_end={t_full:?}")]);

    let (a, b) = (common::last_frame_bits(&full), common::last_frame_bits(&part));
    assert_eq!(a.iter().map(|x| &x.0).collect::<Vec<_>>(), b.iter().map(|x| &x.0).collect::<Vec<_>>(), "{solver} on {np}: other frames or datasets");
    let contacts = a.iter().find(|x| x.0.ends_with("contacts/body_a")).map_or(0, |x| x.1.len());
    assert!(contacts > 5, "{solver} on {np}: only {contacts} contacts at the end");
    let differ: Vec<&str> = a.iter().zip(&b).filter(|(x, y)| x.1 != y.1).map(|(x, _)| x.0.as_str()).collect();
    assert!(differ.is_empty(), "{solver} on {np} rank(s): {differ:?} differ after the restart");
}

#[test]
fn cd_restarts_bit_for_bit_on_1_and_2_ranks() {
    for np in [1, 2] {
        check("cd", np, 1e-3, "", "");
    }
}

/// Frictional cd: the warm-start tangential forces and the slip flags
/// (μ_s or μ_d at the next step) are in the checkpoint.
#[test]
fn frictional_cd_restarts_bit_for_bit_on_1_and_2_ranks() {
    for np in [1, 2] {
        check("cd", np, 1e-3, "", FRICTION);
    }
}

/// cd with rolling and twisting resistance: their warm-start moments are
/// in the checkpoint too.
#[test]
fn cd_with_rolling_resistance_restarts_bit_for_bit_on_1_and_2_ranks() {
    for np in [1, 2] {
        check("cd", np, 1e-3, "", &format!("{FRICTION}\nrolling_friction = 0.1\ntwisting_friction = 0.05"));
    }
}

/// Frictional cd with `dt_control = "iterations"`: the Δt controller's
/// rung and its memory of each rung's cost are in the checkpoint. The run
/// ends at t_end, not after a step count, so the restart is taken from the
/// full run's own checkpoint at step 100 (its later frames are written again).
#[test]
fn frictional_cd_with_step_control_restarts_bit_for_bit_on_1_and_2_ranks() {
    let dt = 1e-3;
    for np in [1, 2] {
        let tmp = tempfile::tempdir().unwrap();
        let full = tmp.path().join("full");
        let text = pile("cd", 200.0 * dt, dt, "[solver]\ndt_control = \"iterations\"\ntarget_iterations = 3\n")
            .toml()
            .replace("OUTDIR", &full.display().to_string())
            .replace("checkpoint_every = 50", "checkpoint_every = 50\ncheckpoint_keep = 100")
            .replace("density = 1000.0", "density = 1000.0\nfriction = 0.5\nfriction_dynamic = 0.4");
        let cfg = tmp.path().join("full.toml");
        std::fs::write(&cfg, text).unwrap();
        common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
        let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(full.join("summary.json")).unwrap()).unwrap();
        let shortest = s["dt_taken"][0].as_f64().unwrap();
        assert!(shortest < dt && s["steps"].as_u64().unwrap() > 200, "{np} rank(s): Δt never changed ({s})");
        let a = common::last_frame_bits(&full);
        let cp = full.join("checkpoint-000100.h5");
        common::mpirun_ok(np, &common::stiffgrain(), &["restart", cp.to_str().unwrap()]);
        let b = common::last_frame_bits(&full);
        assert_eq!(a.iter().map(|x| &x.0).collect::<Vec<_>>(), b.iter().map(|x| &x.0).collect::<Vec<_>>(), "{np} rank(s): other frames or datasets");
        let differ: Vec<&str> = a.iter().zip(&b).filter(|(x, y)| x.1 != y.1).map(|(x, _)| x.0.as_str()).collect();
        assert!(differ.is_empty(), "{np} rank(s): {differ:?} differ after the restart");
    }
}

#[test]
fn compatible_cd_restarts_bit_for_bit_on_1_and_2_ranks() {
    for np in [1, 2] {
        check("compatible-cd", np, 1e-3, "[compatibility]\nevery = 1\n", "");
    }
}

/// Frictional compatible-cd: each contact's elastic tangential history and
/// slip flag are in the checkpoint (the compatible forces would otherwise
/// restart from unloaded springs).
#[test]
fn frictional_compatible_cd_restarts_bit_for_bit_on_1_and_2_ranks() {
    for np in [1, 2] {
        check("compatible-cd", np, 1e-3, "[compatibility]\nevery = 1\n", FRICTION);
    }
}

/// The interior point: up to 2,000 bodies its LU factorisations are of
/// the whole Schur complement on every rank (sequential MUMPS), which
/// repeat to the last bit (MUMPS's parallel ones need not: on the
/// 500-grain pour they did not).
#[test]
fn interior_point_compatible_cd_restarts_bit_for_bit_on_2_ranks() {
    check("compatible-cd", 2, 1e-3, "[compatibility]\nevery = 1\nlaw = \"hooke\"\nmethod = \"interior-point\"\n", FRICTION);
}

#[test]
fn dem_restarts_bit_for_bit_on_1_and_2_ranks() {
    for np in [1, 2] {
        check(
            "dem",
            np,
            2e-4,
            "[contact]\ndistance = 0.005\n\n[dem]\ngbar = 0.002\nf = 0.5\neps1 = 1.0e5\nn1 = 1.5\nn2 = -2.0\ndamping = 0.2\n",
            FRICTION,
        );
    }
}

/// A random pack poured under strong gravity with the default imbalance:
/// RCB rebalances only when the work (bodies + contacts) is uneven, so a
/// restart must see the work the uninterrupted run saw at its next rebuild
/// (the checkpoint keeps each body's), or it rebalances elsewhere and the
/// sums change order. Restarts from every tenth step on 2 and 3 ranks.
#[test]
fn a_restart_rebalances_where_the_run_would_have() {
    let tmp = tempfile::tempdir().unwrap();
    let text = |out: &Path| {
        format!(
            "[simulation]\nsolver = \"cd\"\nt_end = 0.04\ndt = 1e-3\ngravity = [0.0, 0.0, -50.0]\n\n\
             [[material]]\nname = \"m\"\ndensity = 2500.0\n\n[[shape]]\nname = \"s\"\nkind = \"sphere\"\nradius = 0.005\n\n\
             [[generate]]\nkind = \"random\"\nshape = \"s\"\ncount = 400\nbox_min = [0.0, 0.0, 0.0]\nbox_max = [0.1, 0.1, 0.1]\ngap = 0.0005\nseed = 7\nrandom_speed = 0.1\n\n\
             [[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n\n\
             [output]\ndir = \"{}\"\nevery = 10\ncheckpoint_every = 10\ncheckpoint_keep = 10\n",
            out.display()
        )
    };
    for np in [2, 3] {
        let full = tmp.path().join(format!("full-{np}"));
        let cfg = tmp.path().join(format!("full-{np}.toml"));
        std::fs::write(&cfg, text(&full)).unwrap();
        common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
        let a = common::last_frame_bits(&full);
        for n in [10, 20, 30] {
            let part = tmp.path().join(format!("part-{np}-{n}"));
            std::fs::create_dir_all(&part).unwrap();
            let cp = part.join(format!("checkpoint-{n:06}.h5"));
            std::fs::copy(full.join(format!("checkpoint-{n:06}.h5")), &cp).unwrap();
            std::fs::copy(full.join("frames.h5"), part.join("frames.h5")).unwrap();
            common::mpirun_ok(np, &common::stiffgrain(), &["restart", cp.to_str().unwrap(), "--set", &format!("output.dir={}", part.display())]);
            let b = common::last_frame_bits(&part);
            let differ: Vec<&str> = a.iter().zip(&b).filter(|(x, y)| x.1 != y.1).map(|(x, _)| x.0.as_str()).collect();
            assert!(differ.is_empty(), "{np} ranks, restart from step {n}: {differ:?} differ");
        }
    }
}

/// summary.json covers the whole run after a restart, the solver's own
/// counters too: CD held to 3 APGD iterations misses its tolerance at
/// most steps with contacts, and a run restarted halfway counts as many
/// unconverged steps as the uninterrupted one (not only its second half).
#[test]
fn solver_counters_cover_the_whole_run_after_a_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let dt = 1e-3;
    let text = |t_end: f64, out: &Path| {
        pile("cd", t_end, dt, "[solver]\nmax_iterations = 3\n").toml_into(out)
    };
    let summary = |out: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
    };
    let np = 2;
    let full = tmp.path().join("full");
    let cfg = tmp.path().join("full.toml");
    std::fs::write(&cfg, text(200.0 * dt, &full)).unwrap();
    common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
    let part = tmp.path().join("part");
    let cfg = tmp.path().join("part.toml");
    std::fs::write(&cfg, text(100.0 * dt, &part)).unwrap();
    common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
    let first_half = summary(&part)["cd_steps_not_converged"].as_u64().unwrap();
    let cp = part.join("checkpoint-000100.h5");
    let o = common::mpirun(np, &common::stiffgrain(), &["restart", cp.to_str().unwrap(), "--set", &format!("simulation.t_end={:?}", 200.0 * dt)]);
    let log = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{log}");
    // The throttled warnings go on from the first half's count (> 10): only
    // every 100th unconverged step is warned, and the note that further
    // ones are only counted is not repeated.
    let warned: Vec<&str> = log.lines().filter(|l| l.contains("stopped after")).collect();
    assert!(!log.contains("further such steps") && warned.iter().all(|l| l.contains("such steps so far")), "{warned:#?}");
    let (a, b) = (summary(&full), summary(&part));
    let n = a["cd_steps_not_converged"].as_u64().unwrap();
    assert!(
        first_half > 20 && n > first_half + 20,
        "first half {first_half}, whole run {n}"
    );
    assert_eq!(
        b["cd_steps_not_converged"], a["cd_steps_not_converged"],
        "after the restart"
    );
    assert_eq!(b["solver_iterations_total"], a["solver_iterations_total"]);
}
