//! Night-owl contacts (Gay Neto & Wriggers §2.6.3, solver = "dem"): a pair
//! that closes from beyond `contact.distance` to below ḡ_n within one step
//! is found by the search at the end of the step, and the step is redone
//! with it. A fast sphere against a wall and two fast spheres head-on
//! (impact on the 2-rank boundary): no penetration, elastic rebound, the
//! same result on 1 and 2 ranks; an ordinary drop has no night owls.
mod common;
use std::path::Path;

/// The barrier law of tests/dem.rs; tiny dt_min so the Δt control of the
/// impact is never clamped.
const LAW: &str = "gbar = 0.005\nf = 0.5\neps1 = 1.0e6\nn1 = 1.5\nn2 = -2.0\ndt_min = 1e-9\n";
const R: f64 = 0.1;
/// Impact speed (no gravity): 2 cm per 4 ms step, twice `contact.distance`.
const V: f64 = 5.0;

/// `bodies` (TOML), no gravity, dt = 4 ms, contact distance 1 cm, a frame
/// every step.
fn scene(bodies: &str, t_end: f64) -> String {
    format!(
        r#"
[simulation]
solver = "dem"
t_end = {t_end}
dt = 4e-3
gravity = [0.0, 0.0, 0.0]

[[material]]
name = "m"
density = 1000.0

[[shape]]
name = "s"
kind = "sphere"
radius = {R}

{bodies}

[contact]
distance = 0.01

[dem]
{LAW}

[output]
dir = "OUTDIR"
every = 1
thermo_every = 1000
"#
    )
}

/// Sphere 0.052 above a wall falling at V: gaps 0.052, 0.032, 0.012 (not
/// listed: > 0.01), then −0.008 after the third step.
fn wall_scene() -> String {
    let body = format!(
        "[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, {}]\nvelocity = [0.0, 0.0, {}]\n\n[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n",
        R + 0.052,
        -V
    );
    scene(&body, 0.04)
}

/// Two spheres 0.052 apart closing at 2V, symmetric about x = 0 (the cut
/// between 2 ranks): gap 0.012 after one step, −0.028 after the second.
fn pair_scene() -> String {
    let x = R + 0.026;
    let body = format!(
        "[[body]]\nshape = \"s\"\nposition = [{}, 0.0, 0.0]\nvelocity = [{V}, 0.0, 0.0]\n\n[[body]]\nshape = \"s\"\nposition = [{x}, 0.0, 0.0]\nvelocity = [{}, 0.0, 0.0]\n",
        -x, -V
    );
    scene(&body, 0.04)
}

struct Frame {
    time: f64,
    /// Bodies sorted by id: position, velocity.
    position: Vec<[f64; 3]>,
    velocity: Vec<[f64; 3]>,
    omega: Vec<[f64; 3]>,
    contact_gaps: Vec<f64>,
}

fn frames(file: &Path) -> Vec<Frame> {
    let f = hdf5::File::open(file).unwrap();
    let g = f.group("frames").unwrap();
    let mut out = Vec::new();
    let rows = |v: Vec<f64>| v.chunks(3).map(|c| [c[0], c[1], c[2]]).collect::<Vec<_>>();
    for name in g.member_names().unwrap() {
        let fr = g.group(&name).unwrap();
        let b = fr.group("bodies").unwrap();
        let contact_gaps = fr.group("contacts").ok().and_then(|c| c.dataset("gap").ok()).map(|d| d.read_raw::<f64>().unwrap());
        out.push(Frame {
            time: fr.attr("time").unwrap().read_scalar().unwrap(),
            position: rows(b.dataset("position").unwrap().read_raw::<f64>().unwrap()),
            velocity: rows(b.dataset("velocity").unwrap().read_raw::<f64>().unwrap()),
            omega: rows(b.dataset("angular_velocity").unwrap().read_raw::<f64>().unwrap()),
            contact_gaps: contact_gaps.unwrap_or_default(),
        });
    }
    out.sort_by(|a, b| a.time.partial_cmp(&b.time).unwrap());
    out
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

/// Gaps of the night owls in the redo log lines ("... (gap -8.000e-3) ...").
fn logged_gaps(log: &str) -> Vec<f64> {
    log.lines()
        .filter(|l| l.contains("night-owl contact") && l.contains("redoing the step"))
        .flat_map(|l| l.split("(gap ").skip(1).map(|s| s.split(')').next().unwrap().parse::<f64>().unwrap()).collect::<Vec<_>>())
        .collect()
}

/// Runs `text` on `np` ranks; checks that night owls were found (the log
/// shows the unhandled step's gap below zero: the body went into the other
/// one), that no frame has a non-positive gap (from `gap_of`, and every
/// listed contact's), and returns the last frame.
fn run_with_night_owls(np: usize, dir: &Path, name: &str, text: &str, gap_of: impl Fn(&Frame) -> f64) -> Frame {
    let (out, log) = common::run_config(np, dir, name, text);
    let s = summary(&out);
    assert!(s["night_owls"].as_u64().unwrap() >= 1, "{name}/{np}: no night owl: {s}");
    assert!(s["night_owl_redos"].as_u64().unwrap() >= 1, "{name}/{np}: no redo");
    let gaps = logged_gaps(&log);
    assert!(gaps.iter().any(|&g| g < 0.0), "{name}/{np}: no overlapping night owl in the log:\n{log}");
    let fr = frames(&out.join("frames.h5"));
    assert!(fr.len() > 10);
    for f in &fr {
        let g = gap_of(f);
        assert!(g > 0.0, "{name}/{np}: gap {g:e} at t = {}", f.time);
        assert!(f.contact_gaps.iter().all(|&g| g > 0.0), "{name}/{np}: contact gaps {:?} at t = {}", f.contact_gaps, f.time);
    }
    let min = fr.iter().map(&gap_of).fold(f64::INFINITY, f64::min);
    eprintln!("{name} on {np} rank(s): summary night_owls {}, redos {}, steps {}, logged gaps {gaps:?}, smallest frame gap {min:e}",
        s["night_owls"], s["night_owl_redos"], s["steps"]);
    fr.into_iter().last().unwrap()
}

fn max_difference(a: &Frame, b: &Frame) -> f64 {
    let flat = |f: &Frame| f.position.iter().chain(&f.velocity).flatten().copied().collect::<Vec<f64>>();
    flat(a).iter().zip(flat(b)).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

#[test]
fn fast_sphere_rebounds_from_a_wall_it_would_have_entered() {
    let tmp = tempfile::tempdir().unwrap();
    let mut last = Vec::new();
    for np in [1, 2] {
        let f = run_with_night_owls(np, tmp.path(), "wall", &wall_scene(), |f| f.position[0][2] - R);
        // Undamped, no gravity: it leaves at the impact speed.
        let vz = f.velocity[0][2];
        eprintln!("wall on {np} rank(s): rebound speed {vz} vs impact speed {V} (error {:.2e})", vz / V - 1.0);
        assert!((vz - V).abs() < 0.01 * V, "rebound speed {vz} vs impact speed {V}");
        last.push(f);
    }
    let d = max_difference(&last[0], &last[1]);
    eprintln!("1 and 2 ranks differ by {d:e}");
    assert!(d < 1e-9, "1 and 2 ranks differ by {d:e}");
}

#[test]
fn fast_spheres_collide_head_on_across_the_rank_boundary() {
    let tmp = tempfile::tempdir().unwrap();
    let mut last = Vec::new();
    for np in [1, 2] {
        let gap = |f: &Frame| (f.position[1][0] - f.position[0][0]) - 2.0 * R;
        let f = run_with_night_owls(np, tmp.path(), "pair", &pair_scene(), gap);
        // Equal masses, elastic: the velocities swap.
        let (va, vb) = (f.velocity[0][0], f.velocity[1][0]);
        eprintln!("pair on {np} rank(s): velocities after the impact {va}, {vb} (±{V} before)");
        assert!((va + V).abs() < 0.01 * V && (vb - V).abs() < 0.01 * V, "velocities {va}, {vb} after the impact");
        last.push(f);
    }
    let d = max_difference(&last[0], &last[1]);
    eprintln!("1 and 2 ranks differ by {d:e}");
    assert!(d < 1e-9, "1 and 2 ranks differ by {d:e}");
}

#[test]
fn night_owl_found_after_its_body_changed_rank() {
    // Sphere 0 at 10 m/s (4 cm per step) towards sphere 1 at rest, gap
    // 0.052: −0.028 after the second step, in which sphere 0 crosses the
    // cut between 2 ranks (at x = −0.19: sphere 2, out of the way above,
    // widens the box; no RCB) and arrives on the rank of sphere 1. The
    // step's contacts of sphere 0 were on its old rank.
    let body = |x: f64, z: f64, v: f64| format!("[[body]]\nshape = \"s\"\nposition = [{x}, 0.0, {z}]\nvelocity = [{v}, 0.0, 0.0]\n\n");
    let bodies = body(-2.0 * R - 0.052, 0.0, 2.0 * V) + &body(0.0, 0.0, 0.0) + &body(-0.38, 0.25, 0.0) + "[parallel]\nimbalance = 10.0\n";
    let tmp = tempfile::tempdir().unwrap();
    let mut last = Vec::new();
    for np in [1, 2] {
        let gap = |f: &Frame| (f.position[1][0] - f.position[0][0]) - 2.0 * R;
        let f = run_with_night_owls(np, tmp.path(), "migrate", &scene(&bodies, 0.03), gap);
        // Equal masses, elastic: sphere 0 stops, sphere 1 leaves at its speed.
        let (va, vb) = (f.velocity[0][0], f.velocity[1][0]);
        eprintln!("migrate on {np} rank(s): velocities after the impact {va}, {vb} ({} and 0 before)", 2.0 * V);
        assert!(va.abs() < 0.01 * 2.0 * V && (vb - 2.0 * V).abs() < 0.01 * 2.0 * V, "velocities {va}, {vb} after the impact");
        last.push(f);
    }
    let d = max_difference(&last[0], &last[1]);
    eprintln!("1 and 2 ranks differ by {d:e}");
    assert!(d < 1e-9, "1 and 2 ranks differ by {d:e}");
}

#[test]
fn ordinary_drop_has_no_night_owls() {
    // Falling from 5 cm under gravity (dt = 1 ms): ~1 mm per step, well
    // inside contact.distance − ḡ_n; the sphere bounces and comes back.
    let text = scene(
        &format!("[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, {}]\n\n[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n", R + 0.05),
        0.3,
    )
    .replace("gravity = [0.0, 0.0, 0.0]", "gravity = [0.0, 0.0, -9.81]")
    .replace("dt = 4e-3", "dt = 1e-3")
    .replace("every = 1\n", "every = 10\n");
    let tmp = tempfile::tempdir().unwrap();
    for np in [1, 2] {
        let (out, log) = common::run_config(np, tmp.path(), "drop", &text);
        let s = summary(&out);
        assert_eq!(s["night_owls"].as_u64(), Some(0), "{log}");
        assert_eq!(s["night_owl_redos"].as_u64(), Some(0));
        let fr = frames(&out.join("frames.h5"));
        // It did reach the wall (a contact with force was in the list).
        assert!(fr.iter().any(|f| f.position[0][2] - R < 0.005), "the sphere never reached the wall");
    }
}

#[test]
fn cube_spinning_onto_a_wall_redoes_the_step_for_its_new_vertex_pair() {
    // A 0.2 m cube tilted 5° about x, its low bottom edge 8 mm above a
    // wall (listed: < contact.distance, open: > ḡ_n), spinning at 80 rad/s
    // so that its high bottom edge swings down 18° per 4 ms step: without a
    // redo that edge ends the step 4 mm inside the wall. The cube–wall pair
    // is in the step's list (the low edge), so only the check per
    // sub-region pair sees the new vertex–wall contacts; half the step
    // brings them in before they close. No gravity, no damping: the
    // kinetic energy is conserved through the impact.
    let (a, theta, omega) = (0.2f64, 5f64.to_radians(), 80.0);
    let h = 0.5 * a;
    let centre = 0.008 + h * (theta.cos() + theta.sin());
    let body = format!(
        "[[shape]]\nname = \"c\"\nkind = \"box\"\nsize = [{a}, {a}, {a}]\n\n[[body]]\nshape = \"c\"\nposition = [0.0, 0.0, {centre}]\n\
         orientation = [{}, {}, 0.0, 0.0]\nangular_velocity = [{}, 0.0, 0.0]\n\n\
         [[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n",
        (0.5 * theta).cos(),
        (0.5 * theta).sin(),
        -omega
    );
    let text = scene(&body, 0.04);
    let (m, inertia) = (1000.0 * a.powi(3), 1000.0 * a.powi(5) / 6.0);
    let energy = |f: &Frame| {
        let (v, w) = (f.velocity[0], f.omega[0]);
        0.5 * m * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]) + 0.5 * inertia * (w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
    };
    let e0 = 0.5 * inertia * omega * omega;
    let tmp = tempfile::tempdir().unwrap();
    let mut last = Vec::new();
    for np in [1, 2] {
        let (out, log) = common::run_config(np, tmp.path(), "cube", &text);
        let s = summary(&out);
        assert!(s["night_owl_redos"].as_u64().unwrap() >= 1, "cube/{np}: no redo: {s}\n{log}");
        let gaps = logged_gaps(&log);
        assert!(gaps.iter().any(|&g| g < 0.0), "cube/{np}: no overlapping night owl in the log:\n{log}");
        let fr = frames(&out.join("frames.h5"));
        for f in &fr {
            assert!(f.contact_gaps.iter().all(|&g| g > 0.0), "cube/{np}: contact gaps {:?} at t = {}", f.contact_gaps, f.time);
        }
        let f = fr.last().unwrap();
        // It hit the wall: the cube now moves up.
        assert!(f.velocity[0][2] > 0.1, "cube/{np}: no rebound, v = {:?}", f.velocity[0]);
        let e = energy(f);
        eprintln!("cube on {np} rank(s): {s}\nkinetic energy {e} vs {e0} before (error {:.2e}), logged gaps {gaps:?}", e / e0 - 1.0);
        assert!((e - e0).abs() < 0.01 * e0, "cube/{np}: kinetic energy {e} vs {e0}");
        last.push(fr.into_iter().last().unwrap());
    }
    let d = max_difference(&last[0], &last[1]);
    eprintln!("1 and 2 ranks differ by {d:e}");
    assert!(d < 1e-9, "1 and 2 ranks differ by {d:e}");
}
