//! Domain decomposition, ghosts and migration, contact detection and
//! restart, at 1 to 4 ranks (4 oversubscribed on 2 cores).
mod common;
use std::collections::BTreeMap;
use std::path::Path;

fn frames(file: &Path) -> Vec<String> {
    let f = hdf5::File::open(file).unwrap();
    let mut names = f.group("frames").unwrap().member_names().unwrap();
    names.sort();
    names
}

fn read_u64(g: &hdf5::Group, name: &str) -> Vec<u64> {
    g.dataset(name).unwrap().read_raw::<u64>().unwrap()
}

fn read_f64(g: &hdf5::Group, name: &str) -> Vec<f64> {
    g.dataset(name).unwrap().read_raw::<f64>().unwrap()
}

/// (a, b) -> gap of the contacts of one frame.
fn contact_set(file: &Path, frame: &str) -> BTreeMap<(u64, u64), f64> {
    let f = hdf5::File::open(file).unwrap();
    let c = f.group(&format!("frames/{frame}/contacts")).unwrap();
    let (a, b, gap) = (read_u64(&c, "body_a"), read_u64(&c, "body_b"), read_f64(&c, "gap"));
    let mut out = BTreeMap::new();
    for k in 0..a.len() {
        assert!(out.insert((a[k], b[k]), gap[k]).is_none(), "contact ({}, {}) reported twice", a[k], b[k]);
    }
    out
}

fn run(np: usize, dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    common::run_config(np, dir, name, text).0
}

use common::run_config as run_log;

const PACK: &str = r#"
[simulation]
solver = "cd"
t_end = 0.001
dt = 0.001
gravity = [0.0, 0.0, 0.0]

[[material]]
name = "m"
density = 1000.0

[[shape]]
name = "s"
kind = "sphere"
radius = 0.01

[[generate]]
kind = "random"
shape = "s"
count = 5000
box_min = [0.0, 0.0, 0.0]
box_max = [0.5, 0.5, 0.5]
seed = 11

[[wall]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]

[[wall]]
point = [0.5, 0.5, 0.5]
normal = [-1.0, 0.0, 0.0]

[contact]
distance = 0.004
skin = 0.002

[output]
dir = "OUTDIR"
"#;

#[test]
fn contact_set_is_the_same_at_every_rank_count_and_equals_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let (r, d) = (0.01, 0.004);
    let mut sets = Vec::new();
    for np in 1..=4 {
        let out = run(np, dir.path(), "pack", PACK);
        sets.push(contact_set(&out.join("frames.h5"), "000000000"));
    }
    // Brute force from the positions of frame 0.
    let f = hdf5::File::open(dir.path().join("out-pack-1/frames.h5")).unwrap();
    let b = f.group("frames/000000000/bodies").unwrap();
    let (ids, pos) = (read_u64(&b, "id"), read_f64(&b, "position"));
    assert_eq!(ids.len(), 5000);
    let p = |i: usize| nalgebra::Vector3::new(pos[3 * i], pos[3 * i + 1], pos[3 * i + 2]);
    let mut brute = BTreeMap::new();
    for i in 0..ids.len() {
        for j in i + 1..ids.len() {
            let gap = (p(i) - p(j)).norm() - 2.0 * r;
            if gap < d {
                brute.insert((ids[i].min(ids[j]), ids[i].max(ids[j])), gap);
            }
        }
        let walls = [(nalgebra::Vector3::zeros(), nalgebra::Vector3::z()), (nalgebra::Vector3::repeat(0.5), -nalgebra::Vector3::x())];
        for (w, (point, normal)) in walls.iter().enumerate() {
            let gap = (p(i) - point).dot(normal) - r;
            if gap < d {
                brute.insert((ids[i], (1u64 << 63) + w as u64), gap);
            }
        }
    }
    assert!(brute.len() > 1000, "the pack should have many contacts, has {}", brute.len());
    for (np, set) in sets.iter().enumerate() {
        assert_eq!(set.keys().collect::<Vec<_>>(), brute.keys().collect::<Vec<_>>(), "contact pairs at {} ranks", np + 1);
        for (k, g) in set {
            assert!((g - brute[k]).abs() < 1e-12, "gap of {k:?} at {} ranks: {g} vs {}", np + 1, brute[k]);
        }
    }
}

/// 72 spheres in a lattice thrown across the process grid (DEM, no contacts).
fn stream() -> String {
    common::Spheres::new("dem", 0.3, 0.01, [0.0, -2.0, -9.81], 0.05).lattice([0.0; 3], [6, 4, 3], 0.1, [8.0, 3.0, 1.0]).every(1).toml()
}

#[test]
fn bodies_streaming_across_ranks_are_never_lost_or_doubled() {
    let dir = tempfile::tempdir().unwrap();
    let g = [0.0, -2.0, -9.81];
    let v0 = [8.0, 3.0, 1.0];
    for np in [2, 3, 4] {
        let (out, log) = run_log(np, dir.path(), "stream", &stream());
        let file = out.join("frames.h5");
        let names = frames(&file);
        assert_eq!(names.len(), 31);
        let f = hdf5::File::open(&file).unwrap();
        for name in &names {
            let fr = f.group(&format!("frames/{name}")).unwrap();
            let t: f64 = fr.attr("time").unwrap().read_scalar().unwrap();
            let b = fr.group("bodies").unwrap();
            let ids = read_u64(&b, "id");
            assert_eq!(ids, (0..72).collect::<Vec<u64>>(), "ids at t = {t} on {np} ranks");
            let pos = read_f64(&b, "position");
            for (k, id) in ids.iter().enumerate() {
                let (i, j, l) = (id % 6, (id / 6) % 4, id / 24);
                let x0 = [i as f64 * 0.2, j as f64 * 0.2, l as f64 * 0.2];
                for a in 0..3 {
                    let want = x0[a] + v0[a] * t + 0.5 * g[a] * t * t;
                    assert!((pos[3 * k + a] - want).abs() < 1e-12, "body {id} axis {a} at t = {t}, {np} ranks");
                }
            }
        }
        // The stream crosses the grid: bodies were migrated many times.
        let rebuilds: u64 = log
            .split(" neighbour rebuilds")
            .next()
            .and_then(|s| s.rsplit('(').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("no rebuild count in: {log}"));
        assert!(rebuilds > 5, "{rebuilds} rebuilds");
    }
}

#[test]
fn a_mesh_longer_than_a_rank_box_is_in_contact_along_its_length() {
    let mut text = String::from(
        r#"
[simulation]
solver = "dem"
t_end = 0.001
dt = 0.001
gravity = [0.0, 0.0, 0.0]

[[material]]
name = "m"
density = 1000.0

[[shape]]
name = "plank"
kind = "box"
size = [10.0, 0.2, 0.2]

[[shape]]
name = "s"
kind = "sphere"
radius = 0.05

[[body]]
shape = "plank"
position = [5.0, 0.0, 0.0]
fixed = true

[contact]
distance = 0.01

[output]
dir = "OUTDIR"
"#,
    );
    // 40 spheres resting 1 mm above the plank's top face along its length.
    for k in 0..40 {
        text += &format!("\n[[body]]\nshape = \"s\"\nposition = [{}, 0.0, 0.151]\n", 0.1 + 0.25 * k as f64);
    }
    let dir = tempfile::tempdir().unwrap();
    for np in 1..=4 {
        let out = run(np, dir.path(), "plank", &text);
        let set = contact_set(&out.join("frames.h5"), "000000000");
        assert_eq!(set.len(), 40, "{np} ranks: {set:?}");
        for k in 1..=40u64 {
            let g = set.get(&(0, k)).unwrap_or_else(|| panic!("sphere {k} has no contact with the plank at {np} ranks"));
            assert!((g - 0.001).abs() < 1e-12, "gap {g}");
        }
    }
}

#[test]
fn restart_on_another_rank_count_continues_the_same_run() {
    let dir = tempfile::tempdir().unwrap();
    let text = stream().replace("every = 1", "every = 5\ncheckpoint_every = 10");
    let full = run(2, dir.path(), "full", &text);
    // The interrupted run stops at step 10, then resumes on 3 ranks.
    let short = text.replace("t_end = 0.3", "t_end = 0.1");
    let part = run(2, dir.path(), "part", &short);
    let cp = part.join("checkpoint-000010.h5");
    let bytes = std::fs::read(&cp).unwrap();
    common::mpirun_ok(3, &common::stiffgrain(), &["restart", cp.to_str().unwrap(), "--set", "simulation.t_end=0.3"]);
    let (a, b) = (full.join("frames.h5"), part.join("frames.h5"));
    assert_eq!(frames(&a), frames(&b));
    let (fa, fb) = (hdf5::File::open(&a).unwrap(), hdf5::File::open(&b).unwrap());
    for name in frames(&a) {
        for ds in ["position", "velocity", "orientation", "angular_velocity"] {
            let x = read_f64(&fa.group(&format!("frames/{name}/bodies")).unwrap(), ds);
            let y = read_f64(&fb.group(&format!("frames/{name}/bodies")).unwrap(), ds);
            assert_eq!(x.len(), y.len());
            for (p, q) in x.iter().zip(&y) {
                assert!((p - q).abs() <= 1e-12 * (1.0 + p.abs()), "frame {name} {ds}: {p} vs {q}");
            }
        }
    }
    // A truncated checkpoint is refused with a clear error (status 2).
    let bad = dir.path().join("checkpoint-bad.h5");
    std::fs::write(&bad, &bytes[..bytes.len() / 2]).unwrap();
    for np in [1, 2] {
        let o = common::mpirun(np, &common::stiffgrain(), &["restart", bad.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(String::from_utf8_lossy(&o.stderr).contains("checkpoint-bad.h5"));
    }
}

/// RCB balances work, not bodies: a chain of 64 spheres 0.02 apart (124
/// contacts within the contact distance) and a loose lattice of 64 spheres
/// with none, falling freely (no forces, rebuilds as they fall). After the
/// rebalance each of 2 ranks owns about half of bodies + contacts
/// (granularity: one layer of the chain, 4 bodies and ~8 contacts of 252),
/// so the ranks hold unequal numbers of bodies.
#[test]
fn rcb_balances_bodies_plus_contacts() {
    let text = r#"
[simulation]
solver = "cd"
t_end = 0.2
dt = 0.01
gravity = [0.0, 0.0, -9.81]

[[material]]
name = "m"
density = 1000.0

[[shape]]
name = "s"
kind = "sphere"
radius = 0.5

[[generate]]
kind = "lattice"
shape = "s"
material = "m"
origin = [0.0, 0.0, 0.0]
count = [16, 2, 2]
spacing = 1.02

[[generate]]
kind = "lattice"
shape = "s"
material = "m"
origin = [20.0, 0.0, 0.0]
count = [4, 4, 4]
spacing = 2.0

[contact]
distance = 0.05
skin = 0.02

[parallel]
imbalance = 1.05

[output]
dir = "OUTDIR"
"#;
    let dir = tempfile::tempdir().unwrap();
    let (out, log) = run_log(2, dir.path(), "work", text);
    assert!(log.contains("rebalanced by RCB"), "no rebalance: {log}");
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    let ratio = |key: &str| s[key][2].as_f64().unwrap() / s[key][1].as_f64().unwrap();
    assert_eq!(s["contacts"].as_u64(), Some(15 * 4 + 16 * 2 * 2), "the chain's contacts");
    eprintln!("max/mean per rank: work {:.3}, bodies {:.3}", ratio("work_per_rank"), ratio("owned_bodies"));
    assert!(ratio("work_per_rank") <= 1.1, "work not balanced: {}", s["work_per_rank"]);
    assert!(ratio("owned_bodies") >= 1.2, "bodies balanced instead of work: {}", s["owned_bodies"]);
}

#[test]
fn uneven_load_is_rebalanced_by_rcb_without_changing_results() {
    // One far-away fixed body stretches the scene box, so the grid leaves
    // almost every body on one rank until RCB rebalances.
    let text = stream().replace(
        "[output]",
        "[[body]]\nshape = \"s\"\nposition = [40.0, 40.0, 40.0]\nfixed = true\n\n[output]",
    );
    let dir = tempfile::tempdir().unwrap();
    let one = run(1, dir.path(), "rcb", &text);
    for np in [3, 4] {
        let (out, log) = run_log(np, dir.path(), "rcb", &text);
        assert!(log.contains("rebalanced by RCB"), "no rebalance at {np} ranks: {log}");
        let (fa, fb) = (hdf5::File::open(one.join("frames.h5")).unwrap(), hdf5::File::open(out.join("frames.h5")).unwrap());
        for name in frames(&one.join("frames.h5")) {
            let g = format!("frames/{name}/bodies");
            assert_eq!(read_u64(&fa.group(&g).unwrap(), "id"), read_u64(&fb.group(&g).unwrap(), "id"));
            let (x, y) = (read_f64(&fa.group(&g).unwrap(), "position"), read_f64(&fb.group(&g).unwrap(), "position"));
            for (p, q) in x.iter().zip(&y) {
                assert!((p - q).abs() <= 1e-12 * (1.0 + p.abs()), "frame {name}: {p} vs {q} at {np} ranks");
            }
        }
    }
}
