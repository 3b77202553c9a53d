//! Behaviour pinned across refactorings: one short run per scene
//! (tests/data/pinned/<scene>.toml), one fixture per scene
//! (tests/data/pinned/<scene>.json: the last frame's bodies and the
//! reactions of summary.json). The run at 1 rank and the run at 2 ranks must
//! both agree with the fixture to the scene's stated tolerance, so a pin
//! also asserts that the result does not depend on the number of ranks.
//!
//! Fixtures are written only by the ignored test `write_pins`:
//!
//! ```text
//! cargo test --release --test pinned -- --ignored write_pins --test-threads=1
//! ```
//!
//! It runs every scene at 1 and 2 ranks and refuses to write (fails, naming
//! the numbers) when the two disagree beyond the scene's tolerance: a
//! rank-dependent result is a bug to fix, not a pin to keep. A deliberate
//! change of the physics re-pins this way, and says so in its commit.
mod common;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// A pinned scene: its config, the PETSc options its runs get, and the
/// relative tolerance to which every rank count and every later version of
/// the code must reproduce its fixture.
struct Pinned {
    name: &'static str,
    petsc: &'static [&'static str],
    rtol: f64,
}

/// The rank counts every pinned scene runs at.
const RANKS: [usize; 2] = [1, 2];

/// CD and compatible CD (a pyramid of spheres dropped on its fixed base):
/// the same arithmetic on every rank count up to the order of reductions;
/// 1 and 2 ranks agree to 3e-13.
const CD: Pinned = Pinned { name: "cd", petsc: &[], rtol: 1e-9 };
const COMPATIBLE_CD: Pinned = Pinned { name: "compatible-cd", petsc: &[], rtol: 1e-9 };

/// The DEM's Newton step solves its linear systems with GMRES and block
/// Jacobi, one block per rank: at PETSc's default `-ksp_rtol 1e-5` the
/// Krylov iterates differ between rank counts, and so did the trajectory
/// (162 against 164 steps, wall reactions 5 % apart). Solving the linear
/// systems to 1e-12 makes every Newton iterate the same on every rank count
/// up to round-off: 1 and 2 ranks agree to 1e-12 (positions 2e-16), the
/// same 162 steps, and the 1-rank result is bit for bit the one of the
/// default tolerance (block ILU of the one block is exact).
const KSP_TIGHT: &[&str] = &["-ksp_rtol", "1e-12"];
const DEM: Pinned = Pinned { name: "dem", petsc: KSP_TIGHT, rtol: 1e-9 };

/// The same scene with the energy line search: the stick/slip residual has
/// nearby roots and the line search picks among them, which amplifies
/// round-off. With the linear systems solved to 1e-12, 1 and 2 ranks agree
/// to 1.4e-5 in the wall reaction (relative to its largest component) and
/// 1e-6 in the velocities, over the same 150 steps; on 1 rank,
/// `-ksp_rtol 1e-14` instead of 1e-12 moves the reaction by 5e-8, and which
/// rank owns which body (a decomposition over the scene's box or over the
/// bodies' box) moves it by 1e-5. Hence 1e-4: round-off amplified by the
/// choice of root, not a dependence on the decomposition.
const DEM_ENERGY: Pinned = Pinned { name: "dem-energy", petsc: KSP_TIGHT, rtol: 1e-4 };

const SCENES: [Pinned; 4] = [CD, COMPATIBLE_CD, DEM, DEM_ENERGY];

fn pin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pinned")
}

/// Runs the scene on `np` ranks (with its PETSc options) in `dir` and
/// returns what is pinned of it.
fn run(scene: &Pinned, np: usize, dir: &Path) -> Value {
    let text = std::fs::read_to_string(pin_dir().join(format!("{}.toml", scene.name))).unwrap();
    let out = dir.join(format!("out-{}-{np}", scene.name));
    let cfg = dir.join(format!("{}-{np}.toml", scene.name));
    std::fs::write(&cfg, text.replace("OUTDIR", &out.display().to_string())).unwrap();
    let mut args = vec!["run", cfg.to_str().unwrap()];
    if !scene.petsc.is_empty() {
        args.push("--");
        args.extend(scene.petsc);
    }
    common::mpirun_ok(np, &common::stiffgrain(), &args);
    observe(&out)
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

/// Smallest scale an array of `key` is compared at. Every pinned scene has
/// g = 9.81 m/s² and Δt = 1e-3 s: velocities are compared at least at g Δt,
/// the velocity one step of gravity gives (a pyramid at rest has velocities
/// of 1e-11 m/s, the contact solver's tolerance, whose digits mean nothing).
fn floor(key: &str) -> f64 {
    match key {
        "velocity" => 9.81e-3,
        _ => 0.0,
    }
}

/// Every number of `got` within `rtol` of `want`, relative to the largest
/// magnitude of its array (at least [`floor`]), so a component that is zero
/// up to round-off compares sanely; integers and ids exactly. Returns one
/// line per difference.
fn compare(path: &str, want: &Value, got: &Value, rtol: f64, scale: f64) -> Vec<String> {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => w
            .iter()
            .flat_map(|(k, v)| compare(&format!("{path}.{k}"), v, g.get(k).unwrap_or(&Value::Null), rtol, floor(k)))
            .collect(),
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            let scale = w.iter().filter_map(Value::as_f64).fold(scale, |m, x| m.max(x.abs()));
            w.iter().zip(g).enumerate().flat_map(|(i, (a, b))| compare(&format!("{path}[{i}]"), a, b, rtol, scale)).collect()
        }
        (Value::Number(w), Value::Number(g)) if w.is_f64() || g.is_f64() => {
            let (a, b) = (w.as_f64().unwrap(), g.as_f64().unwrap());
            if (a - b).abs() <= rtol * scale.max(a.abs()).max(1e-300) {
                vec![]
            } else {
                vec![format!("{path}: {a:e} against {b:e} (difference {:.1e} of the scale {scale:.3e})", (a - b).abs() / scale.max(a.abs()))]
            }
        }
        _ if want == got => vec![],
        _ => vec![format!("{path}: {want} against {got}")],
    }
}

fn first_lines(diffs: &[String]) -> String {
    diffs[..diffs.len().min(20)].join("\n")
}

/// The scene at 1 and 2 ranks against its fixture.
fn check(scene: &Pinned) {
    let pin = pin_dir().join(format!("{}.json", scene.name));
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&pin).unwrap_or_else(|e| panic!("{}: {e}", pin.display()))).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for np in RANKS {
        let got = run(scene, np, tmp.path());
        let diffs = compare(scene.name, &want, &got, scene.rtol, 0.0);
        assert!(
            diffs.is_empty(),
            "{} on {np} rank(s) moved from its pin beyond {:e} (pinned against got):\n{}",
            scene.name,
            scene.rtol,
            first_lines(&diffs)
        );
    }
}

#[test]
fn cd_results_are_pinned() {
    check(&CD);
}

#[test]
fn compatible_cd_results_are_pinned() {
    check(&COMPATIBLE_CD);
}

#[test]
fn dem_energy_line_search_results_are_pinned() {
    check(&DEM_ENERGY);
}

#[test]
fn dem_results_are_pinned() {
    check(&DEM);
}

/// Writes every fixture from the 1-rank run, after checking that every
/// other rank count agrees with it to the scene's tolerance; writes nothing
/// if any scene disagrees.
#[test]
#[ignore = "writes the fixtures of tests/data/pinned: run it on purpose"]
fn write_pins() {
    let tmp = tempfile::tempdir().unwrap();
    let mut pins = Vec::new();
    let mut refused = Vec::new();
    for scene in &SCENES {
        let runs: Vec<Value> = RANKS.iter().map(|&np| run(scene, np, tmp.path())).collect();
        refused.extend(rank_disagreements(scene, &runs));
        pins.push((scene.name, runs.into_iter().next().unwrap()));
    }
    assert!(refused.is_empty(), "rank-dependent results, no pin written:\n{}", refused.join("\n"));
    for (name, got) in pins {
        std::fs::write(pin_dir().join(format!("{name}.json")), serde_json::to_string_pretty(&got).unwrap() + "\n").unwrap();
    }
}

/// Where the runs of `scene` at the rank counts of [`RANKS`] disagree with
/// the first beyond its tolerance: one message per rank count that does.
fn rank_disagreements(scene: &Pinned, runs: &[Value]) -> Vec<String> {
    RANKS
        .iter()
        .zip(runs)
        .skip(1)
        .filter_map(|(np, got)| {
            let diffs = compare(scene.name, &runs[0], got, scene.rtol, 0.0);
            (!diffs.is_empty()).then(|| format!("{} at {} rank(s) against {np} beyond {:e}:\n{}", scene.name, RANKS[0], scene.rtol, first_lines(&diffs)))
        })
        .collect()
}

/// The writer refuses the old DEM pins, which depended on the rank count,
/// and accepts the new fixture against itself.
#[test]
fn the_writer_refuses_rank_dependent_results() {
    let old_1 = json!({"steps": 162, "reactions": [{"body": 9223372036854775808u64, "force": [-1074.5701447769948, -473.5564261210755, -39552.617977467555]}]});
    let old_2 = json!({"steps": 164, "reactions": [{"body": 9223372036854775808u64, "force": [613.226282790841, 1785.5049686026844, -38136.19931536986]}]});
    let refused = rank_disagreements(&DEM, &[old_1.clone(), old_2]);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(refused[0].contains("dem.steps: 162 against 164"), "{}", refused[0]);
    assert!(rank_disagreements(&DEM, &[old_1.clone(), old_1]).is_empty());
}

/// The comparison the pins and the writer rely on: it flags a number beyond
/// the tolerance, a changed integer, and a different length; it accepts
/// differences within the tolerance and round-off of a near-zero velocity.
#[test]
fn the_comparison_flags_what_it_should() {
    let want = json!({"steps": 162, "position": [1.0, 2.0], "velocity": [1e-11, 0.0], "id": [0, 1]});
    let ok = json!({"steps": 162, "position": [1.0 + 1e-12, 2.0], "velocity": [1.5e-11, -5e-12], "id": [0, 1]});
    assert!(compare("s", &want, &ok, 1e-9, 0.0).is_empty(), "{:?}", compare("s", &want, &ok, 1e-9, 0.0));
    for bad in [
        json!({"steps": 164, "position": [1.0, 2.0], "velocity": [1e-11, 0.0], "id": [0, 1]}),
        json!({"steps": 162, "position": [1.0, 2.0 + 1e-8], "velocity": [1e-11, 0.0], "id": [0, 1]}),
        json!({"steps": 162, "position": [1.0, 2.0], "velocity": [1e-7, 0.0], "id": [0, 1]}),
        json!({"steps": 162, "position": [1.0, 2.0], "velocity": [1e-11, 0.0], "id": [1, 0]}),
        json!({"steps": 162, "position": [1.0], "velocity": [1e-11, 0.0], "id": [0, 1]}),
    ] {
        assert!(!compare("s", &want, &bad, 1e-9, 0.0).is_empty(), "{bad}");
    }
}
