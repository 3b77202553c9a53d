//! What a run prints (the first line, the rebalance notice, the numbers in
//! its messages), and the scene `scripts/run` starts with.
mod common;

/// One sphere sliding on a frictionless floor at 1 m/s: it leaves its skin
/// every few steps, and with one body on two ranks every rebuild finds the
/// work uneven and rebalances.
fn slider(t_end: f64, z: f64, velocity: [f64; 3]) -> String {
    common::Spheres::new("cd", t_end, 0.001, [0.0, 0.0, -9.81], 0.01).moving_body([0.0, 0.0, z], velocity).ground().every(10).toml()
}

#[test]
fn one_body_rebalanced_often_is_announced_once_and_in_the_singular() {
    let dir = tempfile::tempdir().unwrap();
    let (out, log) = common::run_config(2, dir.path(), "slider", &slider(0.03, 0.01, [1.0, 0.0, 0.0]));
    let first = log.lines().find(|l| l.starts_with("stiffgrain ")).unwrap_or("");
    assert!(first.contains(": 1 body on 2 ranks ("), "{first}");
    assert!(!first.contains("0x0x0"), "{first}");
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let rebalances = s["rebalances"].as_u64().unwrap();
    assert!(rebalances >= 3, "the test needs repeated rebalances, got {rebalances}: {log}");
    assert_eq!(log.matches("rebalanced by RCB").count(), 1, "{log}");
}

/// The time a resting pack is found static at is a sum of steps (26 ×
/// 1e-3 = 2.6000000000000002e-2 in binary): it is printed short.
#[test]
fn times_in_messages_are_printed_short() {
    // Dropped from 1.25 mm above the floor, the sphere lands and is static
    // from then on: 10 quiet steps later the run stops at step 26.
    let text = slider(0.05, 0.01125, [0.0; 3])
        .replace("dt = 0.001", "dt = 0.001\nuntil_static = 1e-6");
    let dir = tempfile::tempdir().unwrap();
    let (_, log) = common::run_config(1, dir.path(), "drop", &text);
    let line = log.lines().find(|l| l.starts_with("static:")).unwrap_or_else(|| panic!("no static line: {log}"));
    assert!(line.ends_with("at t = 2.6e-2"), "{line}");
    assert!(line.contains("slower than 1e-6 m/s"), "{line}");
}

/// The scene of `scripts/run` as shipped: 500 beads in a box closed on all
/// six sides, released inside it.
#[test]
fn the_default_scene_is_a_closed_box() {
    let cfg = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs/default.toml");
    let o = common::mpirun_ok(1, &common::stiffgrain(), &["check", cfg.to_str().unwrap()]);
    assert!(o.contains("bodies       500 ") && o.contains("walls        6"), "{o}");
    let text = std::fs::read_to_string(&cfg).unwrap();
    let table: toml::Table = toml::from_str(&text).unwrap();
    let v3 = |v: &toml::Value| -> [f64; 3] { [0, 1, 2].map(|k| v[k].as_float().unwrap()) };
    let g = &table["generate"][0];
    let (lo, hi) = (v3(&g["box_min"]), v3(&g["box_max"]));
    let walls = table["wall"].as_array().unwrap();
    // Every axis has a wall on each side, and the release box lies inside them all.
    for axis in 0..3 {
        for sign in [1.0, -1.0] {
            let w = walls.iter().find(|w| v3(&w["normal"])[axis] == sign).unwrap_or_else(|| panic!("no wall facing {sign} along axis {axis}"));
            let p = v3(&w["point"])[axis];
            assert!(if sign > 0.0 { p <= lo[axis] } else { p >= hi[axis] }, "wall at {p} cuts the release box along axis {axis}");
        }
    }
    assert!(table["simulation"].get("until_static").is_some());
}
