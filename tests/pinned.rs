//! Behaviour pinned across refactorings: one short run per solver
//! (tests/data/pinned/<solver>.toml) at 1 and 2 ranks must give the
//! summary.json reactions and the last frame's bodies that the code gave
//! when the pin was written (tests/data/pinned/<solver>-<np>.json).
//!
//! The pins were written by the code before the solver-interface change
//! (issue 19) with `STIFFGRAIN_WRITE_PINS=1 cargo test --release --test
//! pinned`; a deliberate change of the physics rewrites them the same way.
mod common;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Relative agreement asked of a pinned number (the same arithmetic, up to
/// reductions whose order may change with the code around them).
const RTOL: f64 = 1e-9;

fn pin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pinned")
}

/// Bodies of the last frame sorted by id, and the reactions of summary.json.
fn observe(out: &Path) -> Value {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let g = f.group("frames").unwrap();
    let last = g
        .member_names()
        .unwrap()
        .into_iter()
        .max_by_key(|n| g.group(n).unwrap().attr("step").unwrap().read_scalar::<u64>().unwrap())
        .unwrap();
    let fr = g.group(&last).unwrap();
    let b = fr.group("bodies").unwrap();
    let read = |name: &str| b.dataset(name).unwrap().read_raw::<f64>().unwrap();
    let s: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    json!({
        "step": fr.attr("step").unwrap().read_scalar::<u64>().unwrap(),
        "time": fr.attr("time").unwrap().read_scalar::<f64>().unwrap(),
        "id": b.dataset("id").unwrap().read_raw::<u64>().unwrap(),
        "position": read("position"),
        "orientation": read("orientation"),
        "velocity": read("velocity"),
        "reactions": s["reactions"],
        "steps": s["steps"],
    })
}

/// Every number of `got` within RTOL (relative to the largest magnitude of
/// its array, so a component that is zero up to round-off compares sanely).
fn compare(path: &str, want: &Value, got: &Value, scale: f64) -> Vec<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            w.iter().flat_map(|(k, v)| compare(&format!("{path}.{k}"), v, g.get(k).unwrap_or(&Value::Null), 0.0)).collect()
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            let scale = w.iter().filter_map(Value::as_f64).fold(scale, |m, x| m.max(x.abs()));
            w.iter().zip(g).enumerate().flat_map(|(i, (a, b))| compare(&format!("{path}[{i}]"), a, b, scale)).collect()
        }
        (Value::Number(w), Value::Number(g)) if w.is_f64() || g.is_f64() => {
            let (a, b) = (w.as_f64().unwrap(), g.as_f64().unwrap());
            if (a - b).abs() <= RTOL * scale.max(a.abs()).max(1e-300) {
                vec![]
            } else {
                vec![format!("{path}: pinned {a:e}, got {b:e}")]
            }
        }
        _ if want == got => vec![],
        _ => vec![format!("{path}: pinned {want}, got {got}")],
    }
}

fn check(solver: &str) {
    let text = std::fs::read_to_string(pin_dir().join(format!("{solver}.toml"))).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let (out, _) = common::run_config(np, tmp.path(), solver, &text);
        let got = observe(&out);
        let pin = pin_dir().join(format!("{solver}-{np}.json"));
        if std::env::var_os("STIFFGRAIN_WRITE_PINS").is_some() {
            std::fs::write(&pin, serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
            continue;
        }
        let want: Value = serde_json::from_str(&std::fs::read_to_string(&pin).unwrap_or_else(|e| panic!("{}: {e}", pin.display()))).unwrap();
        let diffs = compare(solver, &want, &got, 0.0);
        assert!(diffs.is_empty(), "{solver} on {np} rank(s) moved from its pin:\n{}", diffs[..diffs.len().min(20)].join("\n"));
    }
}

#[test]
fn cd_results_are_pinned() {
    check("cd");
}

#[test]
fn compatible_cd_results_are_pinned() {
    check("compatible-cd");
}

#[test]
fn dem_energy_line_search_results_are_pinned() {
    check("dem-energy");
}

#[test]
fn dem_results_are_pinned() {
    check("dem");
}
