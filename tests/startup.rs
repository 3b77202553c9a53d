//! Start-up without the whole scene on any rank: every generator gives the
//! same bodies at 1 to 4 ranks while no rank holds much more than its
//! share; runs restart from their own frames.h5; CSV and LAMMPS files;
//! malformed files and scenes too large for the machine (exit 2, one line).
mod common;
use std::path::Path;

/// (id, position, radius, velocity, orientation) of every body of a frame, by id.
type Row = (u64, [f64; 3], f64, [f64; 3], [f64; 4]);

fn frame_bodies(file: &Path, frame: Option<&str>) -> Vec<Row> {
    let f = hdf5::File::open(file).unwrap();
    let mut names = f.group("frames").unwrap().member_names().unwrap();
    names.sort();
    let name = frame.map(|s| s.to_string()).unwrap_or_else(|| names.last().unwrap().clone());
    let b = f.group(&format!("frames/{name}/bodies")).unwrap();
    let u = |n: &str| b.dataset(n).unwrap().read_raw::<u64>().unwrap();
    let x = |n: &str| b.dataset(n).unwrap().read_raw::<f64>().unwrap();
    let (id, pos, r, vel, ori) = (u("id"), x("position"), x("radius"), x("velocity"), x("orientation"));
    let rows: Vec<Row> = (0..id.len())
        .map(|i| {
            let v3 = |a: &[f64]| [a[3 * i], a[3 * i + 1], a[3 * i + 2]];
            (id[i], v3(&pos), r[i], v3(&vel), [ori[4 * i], ori[4 * i + 1], ori[4 * i + 2], ori[4 * i + 3]])
        })
        .collect();
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0), "frame bodies sorted by id");
    rows
}

/// stderr without mpirun's own report of a failed rank.
fn error_lines(stderr: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(stderr)
        .lines()
        .take_while(|l| !l.starts_with("-----"))
        .filter(|l| !l.trim().is_empty())
        .map(String::from)
        .collect()
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap()
}

const HEAD: &str = r#"
[simulation]
solver = "cd"
t_end = 0.001
dt = 0.001
gravity = [0.0, 0.0, -9.81]

[[material]]
name = "m"
density = 1000.0

[[material]]
name = "n"
density = 2000.0

[[shape]]
name = "s"
kind = "sphere"
radius = 0.01

[[body]]
shape = "s"
position = [-0.05, -0.05, -0.05]
fixed = true

[output]
dir = "OUTDIR"
"#;

const LATTICE: &str = r#"
[[generate]]
kind = "lattice"
shape = "s"
origin = [0.0, 0.0, 0.0]
count = [16, 16, 8]
gap = 0.002
radius = { min = 0.005, max = 0.01, classes = 6 }
material_by_parity = ["m", "n"]
velocity = [0.1, 0.0, 0.0]
"#;

const PYRAMID: &str = r#"
[[generate]]
kind = "pyramid"
shape = "s"
origin = [0.0, 0.0, 0.0]
n = 14
"#;

const RANDOM: &str = r#"
[[generate]]
kind = "random"
shape = "s"
count = 3000
box_min = [0.0, 0.0, 0.0]
box_max = [0.6, 0.6, 0.3]
gap = 0.001
seed = 5
random_speed = 0.2
radius = { values = [0.006, 0.01], fractions = [0.3, 0.7] }
"#;

#[test]
fn every_generator_gives_the_same_bodies_at_1_to_4_ranks_and_no_rank_holds_them_all() {
    let dir = tempfile::tempdir().unwrap();
    for (name, gen, n) in [("lattice", LATTICE, 16 * 16 * 8), ("pyramid", PYRAMID, 14 * 15 * 29 / 6), ("random", RANDOM, 3000)] {
        let text = format!("{HEAD}{gen}");
        let mut first: Option<Vec<Row>> = None;
        for np in 1..=4 {
            let (out, _) = common::run_config(np, dir.path(), name, &text);
            let rows = frame_bodies(&out.join("frames.h5"), Some("000000000"));
            assert_eq!(rows.len(), n + 1, "{name} at {np} ranks");
            assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), (0..=n as u64).collect::<Vec<_>>());
            let held = summary(&out)["startup_max_bodies"].as_u64().unwrap();
            let rss = summary(&out)["peak_rss_mb"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect::<Vec<_>>();
            assert!(rss[0] > 0.0 && rss[0] <= rss[1] && rss[1] <= rss[2], "{rss:?}");
            // One rank holds everything; more ranks hold their share (the
            // process grid's boxes are even only to within a lattice row) plus
            // the random pack's neighbours within one body of their cells.
            if np == 1 {
                assert_eq!(held, n as u64 + 1, "{name}");
            } else {
                let share = (n + 1) as f64 / np as f64;
                assert!((held as f64) < share * 1.7 + 0.05 * n as f64 && (held as f64) < 0.8 * n as f64, "{name} at {np} ranks: {held} bodies held, share {share:.0}");
            }
            match &first {
                None => first = Some(rows),
                Some(a) => assert_eq!(a, &rows, "{name}: {np} ranks differ from 1 rank"),
            }
        }
        let rows = first.unwrap();
        // The generators' promises: radii from the distribution, no overlaps.
        let radii: std::collections::BTreeSet<u64> = rows.iter().skip(1).map(|r| r.2.to_bits()).collect();
        match name {
            "lattice" => assert_eq!(radii.len(), 6, "all six radius classes drawn"),
            "random" => {
                assert_eq!(radii.len(), 2);
                let small = rows.iter().filter(|r| r.2 == 0.006).count() as f64;
                assert!((small / 3000.0 - 0.3).abs() < 0.04, "{small} small of 3000");
                for i in 1..rows.len() {
                    for j in i + 1..rows.len() {
                        let d: f64 = (0..3).map(|k| (rows[i].1[k] - rows[j].1[k]).powi(2)).sum::<f64>().sqrt();
                        assert!(d >= rows[i].2 + rows[j].2 + 0.001 * (1.0 - 1e-12), "bodies {i} and {j} overlap");
                    }
                }
            }
            _ => assert_eq!(radii.len(), 1),
        }
    }
}

#[test]
fn a_run_restarts_from_the_last_frame_of_its_frames_file_at_1_and_3_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{HEAD}{RANDOM}").replace("t_end = 0.001", "t_end = 0.005");
    let (first, _) = common::run_config(2, dir.path(), "settle", &text);
    let last = frame_bodies(&first.join("frames.h5"), None);
    // The moving bodies moved: the last frame is not the generated pack.
    assert_ne!(last, frame_bodies(&first.join("frames.h5"), Some("000000000")));
    let from_file = format!(
        "{}\n[[generate]]\nkind = \"file\"\nfile = \"{}\"\n",
        HEAD.split("[[body]]").next().unwrap(),
        first.join("frames.h5").display()
    ) + "\n[output]\ndir = \"OUTDIR\"\n";
    for np in [1, 3] {
        let (out, _) = common::run_config(np, dir.path(), "again", &from_file);
        let got = frame_bodies(&out.join("frames.h5"), Some("000000000"));
        assert_eq!(got, last, "{np} ranks: the new run's first frame is the old run's last");
    }
}

/// Writes `name` into `dir` and a config reading it; returns the config path.
fn file_scene(dir: &Path, name: &str, contents: &str, extra: &str) -> std::path::PathBuf {
    std::fs::write(dir.join(name), contents).unwrap();
    let text = format!(
        "{}\n[[generate]]\nkind = \"file\"\nfile = \"{name}\"\n{extra}\n[output]\ndir = \"{}\"\n",
        HEAD.split("[[body]]").next().unwrap(),
        dir.join(format!("out-{name}")).display()
    );
    let cfg = dir.join(format!("{name}.toml"));
    std::fs::write(&cfg, text).unwrap();
    cfg
}

#[test]
fn csv_and_lammps_dump_bodies_start_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let csv = "# a small pack\nid,x,y,z,radius,vx,vy,vz,fixed\n10,0.0,0.0,0.02,0.02,0,0,0,1\n11,0.1,0.0,0.05,0.01,1,0,0,0\n12,0.2,0.0,0.05,0.01,0,2,0,0\n13,0.3,0.0,0.05,0.015,0,0,3,0\n";
    let dump = "ITEM: TIMESTEP\n500\nITEM: NUMBER OF ATOMS\n4\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\n\
                ITEM: ATOMS id type x y z vx vy vz fx diameter\n\
                4 1 0.3 0.0 0.05 0 0 3 7 0.03\n1 1 0.0 0.0 0.02 0 0 0 7 0.04\n3 1 0.2 0.0 0.05 0 2 0 7 0.02\n2 1 0.1 0.0 0.05 1 0 0 7 0.02\n";
    for np in [1, 2] {
        let mut results = Vec::new();
        for (name, text) in [("pack.csv", csv), ("pack.dump", dump)] {
            let cfg = file_scene(dir.path(), name, text, "");
            let out = dir.path().join(format!("out-{name}"));
            let _ = std::fs::remove_dir_all(&out);
            common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
            results.push(frame_bodies(&out.join("frames.h5"), Some("000000000")));
        }
        // Ids from the files' id columns (from 0), by id: the same bodies.
        for rows in &results {
            assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
            assert_eq!(rows[1].1, [0.1, 0.0, 0.05]);
            assert_eq!(rows.iter().map(|r| r.2).collect::<Vec<_>>(), vec![0.02, 0.01, 0.01, 0.015]);
            assert_eq!(rows[3].3, [0.0, 0.0, 3.0]);
        }
        let (csv_rows, dump_rows) = (&results[0], &results[1]);
        // The CSV's first body is fixed: it keeps zero velocity; the others agree.
        assert_eq!(csv_rows[1..], dump_rows[1..], "{np} ranks");
    }
}

#[test]
fn malformed_body_files_give_one_line_with_the_line_number() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        ("bad.csv", "x,y,z,radius\n0,0,0.1,0.01\n0.1,0,nope,0.01\n", "bad.csv:3:"),
        ("dup.csv", "id,x,y,z,radius\n0,0,0,0.1,0.01\n1,0.1,0,0.1,0.01\n1,0.2,0,0.1,0.01\n", "dup.csv:4:"),
        ("short.dump", "ITEM: TIMESTEP\n0\nITEM: NUMBER OF ATOMS\n2\nITEM: BOX BOUNDS pp pp pp\n0 1\n0 1\n0 1\nITEM: ATOMS id type x y z radius\n1 1 0 0 0.1 0.01\n2 1 0.1 0\n", "short.dump:11:"),
    ];
    for (name, text, want) in cases {
        let cfg = file_scene(dir.path(), name, text, "");
        for np in [1, 2] {
            let o = common::mpirun(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
            let lines = error_lines(&o.stderr);
            let err = lines.join("\n");
            assert_eq!(o.status.code(), Some(2), "{name} at {np} ranks: {err}");
            assert_eq!(lines.len(), 1, "{name}: one line expected: {err}");
            assert!(lines[0].contains(want), "{name}: `{}` should name {want}", lines[0]);
        }
    }
}

#[test]
fn a_scene_too_large_for_the_machine_is_refused_before_allocating() {
    let dir = tempfile::tempdir().unwrap();
    let text = format!("{HEAD}{LATTICE}").replace("count = [16, 16, 8]", "count = [100000, 100000, 100000]");
    let cfg = dir.path().join("huge.toml");
    std::fs::write(&cfg, text.replace("OUTDIR", &dir.path().join("out").display().to_string())).unwrap();
    for cmd in ["check", "run"] {
        let o = common::mpirun(2, &common::stiffgrain(), &[cmd, cfg.to_str().unwrap()]);
        let lines = error_lines(&o.stderr);
        let err = lines.join("\n");
        assert_eq!(o.status.code(), Some(2), "{cmd}: {err}");
        assert_eq!(lines.len(), 1, "{cmd}: {err}");
        assert!(lines[0].contains("huge.toml") && lines[0].contains("generate[0].count") && lines[0].contains("1000000000000001 bodies"), "{}", lines[0]);
    }
    assert!(!dir.path().join("out").exists(), "nothing written");
    // The same config with a sane count passes and reports memory per rank.
    std::fs::write(&cfg, format!("{HEAD}{LATTICE}").replace("OUTDIR", &dir.path().join("out").display().to_string())).unwrap();
    let o = common::mpirun_ok(2, &common::stiffgrain(), &["check", cfg.to_str().unwrap()]);
    assert!(o.contains("per rank on 2 rank(s)") && o.contains("bodies       2049"), "{o}");
}

#[test]
fn a_pack_resting_on_a_wall_at_round_off_starts_and_a_real_overlap_is_refused() {
    // A pack written by CD rests with overlaps at its solver tolerance
    // (~1e-8 of a radius); reading it back must work. A millimetre is a typo.
    // Between the two, `simulation.start_overlap` (1e-6 of a radius by
    // default) decides: 1e-5 of a radius, against a wall or between two
    // file bodies, is refused unless it is raised.
    let dir = tempfile::tempdir().unwrap();
    let floor = "\n[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n";
    let wall = |z: f64| format!("id,x,y,z,radius\n0,0.0,0.0,{z},0.01\n1,0.1,0.0,0.05,0.01\n");
    // Sphere 1 overlaps sphere 0 by 1e-7 m = 1e-5 r.
    let pair = format!("id,x,y,z,radius\n0,0.0,0.0,0.05,0.01\n1,{},0.0,0.05,0.01\n", 0.02 - 1e-7);
    let raised = ["--set", "simulation.start_overlap=1e-4"];
    let cases: [(&str, String, &[&str], Option<&str>); 6] = [
        ("rest", wall(0.01 - 1e-10), &[], None),
        ("typo", wall(0.01 - 1e-3), &[], Some("penetrates wall[0]")),
        ("wall-5", wall(0.01 - 1e-7), &[], Some("penetrates wall[0]")),
        ("wall-5-raised", wall(0.01 - 1e-7), &raised, None),
        ("pair-5", pair.clone(), &[], Some("overlap")),
        ("pair-5-raised", pair.clone(), &raised, None),
    ];
    for (name, csv, extra, refused) in &cases {
        let cfg = file_scene(dir.path(), &format!("{name}.csv"), csv, floor);
        for np in [1, 2] {
            let mut args = vec!["run", cfg.to_str().unwrap(), "--overwrite"];
            args.extend_from_slice(extra);
            let o = common::mpirun(np, &common::stiffgrain(), &args);
            let lines = error_lines(&o.stderr);
            match refused {
                None => assert!(o.status.success(), "{name}, {np} ranks: {lines:?}"),
                Some(what) => {
                    assert_eq!(o.status.code(), Some(2), "{name}, {np} ranks: {lines:?}");
                    assert_eq!(lines.len(), 1, "{lines:?}");
                    assert!(lines[0].contains(what) && lines[0].contains("simulation.start_overlap = 1e-6"), "{name}, {np} ranks: {lines:?}");
                }
            }
        }
    }
}

/// Tetrapods of the paper's size 0.9 m apart, below their bounding
/// diameter (1.246 m): the checked lattice redraws orientations until the
/// meshes keep 1 cm.
const TETRAPOD_LATTICE: &str = r#"
[simulation]
solver = "dem"
t_end = 0.001
dt = 0.001
gravity = [0.0, 0.0, 0.0]

[[material]]
name = "concrete"
density = 2400.0

[[shape]]
name = "tetrapod"
kind = "tetrapod"
arm_length = 0.62
arm_radius = 0.124
segments = 9

[[generate]]
kind = "lattice"
shape = "tetrapod"
origin = [0.0, 0.0, 0.0]
count = [7, 5, 4]
spacing = 0.9
gap = 0.01
seed = 3
random_orientation = true

[contact]
distance = 0.006

[output]
dir = "OUTDIR"
"#;

#[test]
fn a_checked_tetrapod_lattice_gives_the_same_bodies_at_1_to_4_ranks_without_overlap() {
    use nalgebra::{Isometry3, Quaternion, Translation3, UnitQuaternion};
    let dir = tempfile::tempdir().unwrap();
    let mut first: Option<Vec<Row>> = None;
    for np in 1..=4 {
        let (out, _) = common::run_config(np, dir.path(), "tetrapods", TETRAPOD_LATTICE);
        let rows = frame_bodies(&out.join("frames.h5"), Some("000000000"));
        assert_eq!(rows.len(), 140);
        match &first {
            None => first = Some(rows),
            Some(a) => assert_eq!(a, &rows, "{np} ranks differ from 1 rank"),
        }
    }
    let rows = first.unwrap();
    let mesh = stiffgrain::body::mesh::TriMesh::tetrapod(0.62, 0.124, 9);
    let pose = |r: &Row| Isometry3::from_parts(Translation3::new(r.1[0], r.1[1], r.1[2]), UnitQuaternion::from_quaternion(Quaternion::new(r.4[0], r.4[1], r.4[2], r.4[3])));
    let (mut closest, mut redrawn) = (f64::INFINITY, 0);
    for (i, a) in rows.iter().enumerate() {
        let q = stiffgrain::scene::generate::orientation_at(3, a.0);
        redrawn += usize::from((q.coords - pose(a).rotation.coords).norm() > 1e-12);
        for b in &rows[i + 1..] {
            closest = closest.min(stiffgrain::geometry::mesh_distance(&mesh, &pose(a), &mesh, &pose(b), 0.1));
        }
    }
    eprintln!("140 tetrapods 0.9 m apart: {redrawn} orientations redrawn, closest pair {closest:.4e} m");
    assert!(closest >= 0.01, "two tetrapods {closest} m apart");
    assert!(redrawn > 0, "no orientation was redrawn: the lattice is not dense enough to test the check");
}

/// A scene of CSV bodies with a radius column and no `[[shape]]`: `check`
/// counts the data rows (not the header) and says what it cannot know
/// before start-up; the run takes the contact defaults from the file's
/// radii, and the columns of beads come to rest on the floor.
#[test]
fn a_csv_with_radii_needs_no_shape_and_check_counts_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let mut csv = String::from("# 180 beads on a 6 x 6 x 5 lattice\nx,y,z,radius\n");
    for i in 0..180 {
        csv += &format!("{},{},{},0.005\n", (i % 6) as f64 * 0.02 + 0.01, ((i / 6) % 6) as f64 * 0.02 + 0.01, (i / 36) as f64 * 0.02 + 0.01);
    }
    std::fs::write(dir.path().join("beads.csv"), csv).unwrap();
    let out = dir.path().join("out");
    let text = format!(
        "[simulation]\nsolver = \"cd\"\nt_end = 0.1\ndt = 0.001\n\n[[material]]\nname = \"glass\"\ndensity = 2500.0\n\n\
         [[generate]]\nkind = \"file\"\nfile = \"beads.csv\"\n\n[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n\n[output]\ndir = \"{}\"\n",
        out.display()
    );
    let cfg = dir.path().join("beads.toml");
    std::fs::write(&cfg, text).unwrap();
    let o = common::mpirun_ok(2, &common::stiffgrain(), &["check", cfg.to_str().unwrap()]);
    assert!(o.contains("bodies       0 + 180 from file(s)"), "{o}");
    assert!(!o.contains("inf") && !o.contains("-0.0"), "{o}");
    assert!(o.contains("mass         of the file bodies: known at start-up"), "{o}");
    common::mpirun_ok(2, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
    let rows = frame_bodies(&out.join("frames.h5"), None);
    assert_eq!(rows.len(), 180);
    assert!(rows.iter().all(|r| r.2 == 0.005));
    // Dropped 5 mm, each column of five beads stands on the floor (landed at
    // t = 0.032 s): bead k at z = (2k + 1) R, one contact under each bead.
    for r in &rows {
        let k = ((r.1[2] - 0.005) / 0.01).round();
        assert!((r.1[2] - (0.005 + 0.01 * k)).abs() < 1e-6, "bead {} at z = {}", r.0, r.1[2]);
    }
    assert_eq!(summary(&out)["contacts"].as_u64(), Some(180));
}

/// Relative paths are relative to where they are written: `output.dir` in
/// the config to the config's folder, like its body files; `--set
/// output.dir=...` to the working directory.
#[test]
fn output_dir_is_relative_to_the_config_and_set_to_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let scenes = dir.path().join("scenes");
    std::fs::create_dir(&scenes).unwrap();
    let text = HEAD.replace("OUTDIR", "out-here").replace("t_end = 0.001", "t_end = 0.002");
    std::fs::write(scenes.join("one.toml"), text).unwrap();
    let run = |extra: &[&str]| {
        let mut c = common::mpirun_cmd(1, &common::stiffgrain(), &[&["run", "scenes/one.toml"], extra].concat());
        let o = c.current_dir(dir.path()).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    run(&[]);
    assert!(scenes.join("out-here/frames.h5").exists(), "config dir = \"out-here\" writes beside the config");
    assert!(!dir.path().join("out-here").exists());
    run(&["--set", "output.dir=out-set"]);
    assert!(dir.path().join("out-set/frames.h5").exists(), "--set output.dir writes in the working directory");
}
