//! Helpers for integration tests: launching binaries under mpirun.
#![allow(dead_code)]
pub mod frames;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Path of the stiffgrain binary cargo built for this test run.
pub fn stiffgrain() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_stiffgrain"))
}

/// Path of an example binary, built first: `cargo test --test X` builds only
/// that test and the main binary, so a stale example from an earlier build
/// would be tested. A no-op when the examples are fresh.
pub fn example(name: &str) -> PathBuf {
    static BUILD: std::sync::Once = std::sync::Once::new();
    let exe = stiffgrain().parent().unwrap().join("examples").join(name);
    BUILD.call_once(|| {
        let dir = exe.parent().and_then(|p| p.parent()).and_then(|p| p.file_name()).unwrap();
        let profile = match dir.to_str().unwrap() {
            "debug" => "dev".to_string(),
            p => p.to_string(),
        };
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--examples", "--profile", &profile, "--manifest-path"])
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"))
            .status()
            .expect("cannot run cargo to build the examples");
        assert!(status.success(), "building the examples failed");
    });
    exe
}

/// `mpirun -np N EXE ARGS...` with the settings that work as root, with more
/// ranks than cores, and inside containers. Waiting ranks yield their core:
/// `cargo test` and scripts/test run two tests at once, and ranks polling in
/// MPI calls would take the cores from the ranks with work (`cargo test
/// --test polyhedra` took 1.8× as long on 2 cores).
pub fn mpirun_cmd(np: usize, exe: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(std::env::var("MPIRUN").unwrap_or_else(|_| "mpirun".into()));
    c.args(["-np", &np.to_string(), "--oversubscribe", "--bind-to", "none"])
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("OMPI_MCA_mpi_yield_when_idle", "1")
        .arg(exe)
        .args(args);
    c
}

/// Runs under mpirun and returns the output; panics with both streams if the
/// launcher itself cannot start.
pub fn mpirun(np: usize, exe: &Path, args: &[&str]) -> Output {
    mpirun_cmd(np, exe, args).output().expect("cannot start mpirun (is OpenMPI installed? run scripts/setup)")
}

/// Like `mpirun` but fails the test with both streams when the run fails.
pub fn mpirun_ok(np: usize, exe: &Path, args: &[&str]) -> String {
    let out = mpirun(np, exe, args);
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "mpirun -np {np} {} {:?} failed ({})\nstdout:\n{stdout}\nstderr:\n{}",
        exe.display(),
        args,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// Writes `text` (with `OUTDIR` replaced by `dir/out-NAME-NP`) to
/// `dir/NAME-NP.toml` and runs it on `np` ranks; returns the output dir and
/// rank 0's stdout.
pub fn run_config(np: usize, dir: &Path, name: &str, text: &str) -> (PathBuf, String) {
    let out = dir.join(format!("out-{name}-{np}"));
    let cfg = dir.join(format!("{name}-{np}.toml"));
    std::fs::write(&cfg, text.replace("OUTDIR", &out.display().to_string())).unwrap();
    let log = mpirun_ok(np, &stiffgrain(), &["run", cfg.to_str().unwrap()]);
    (out, log)
}

/// (body id, force) of every reaction in `out/summary.json`.
pub fn reactions(out: &Path) -> Vec<(u64, [f64; 3])> {
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    s["reactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let f = r["force"].as_array().unwrap();
            (r["body"].as_u64().unwrap(), [0, 1, 2].map(|k| f[k].as_f64().unwrap()))
        })
        .collect()
}

/// Reports that the calling test is skipped (a tool it needs is missing) so
/// that it is not mistaken for a pass: one line `skipped: CRATE::TEST:
/// REASON` written straight to stderr (libtest captures `eprintln!`, not
/// direct writes, so plain `cargo test` shows it too), and appended to the
/// file `$STIFFGRAIN_SKIP_LOG` when set, where `scripts/test` counts it.
/// The caller then returns.
pub fn skip(reason: &str) {
    use std::io::Write;
    let test = std::thread::current().name().unwrap_or("?").to_string();
    let line = format!("skipped: {}::{test}: {reason}\n", env!("CARGO_CRATE_NAME"));
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
    if let Some(log) = std::env::var_os("STIFFGRAIN_SKIP_LOG") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap_or_else(|e| panic!("STIFFGRAIN_SKIP_LOG={}: {e}", Path::new(&log).display()));
        f.write_all(line.as_bytes()).unwrap();
    }
}

/// A scene's TOML from the parts the integration tests repeat: one material
/// `m` (density 1000), one sphere shape `s`, lattices and bodies of it, the
/// ground, any further tables as TOML text, and `[output]` into `OUTDIR`
/// (which [`run_config`] replaces). Numbers are written with `{:?}`, so a
/// float stays a TOML float.
///
/// ```ignore
/// let text = common::Spheres::new("dem", 0.3, 0.01, [0.0, 0.0, -9.81], 0.05)
///     .lattice([0.0; 3], [6, 4, 3], 0.1, [8.0, 3.0, 1.0])
///     .every(1)
///     .toml();
/// ```
#[derive(Clone, Debug)]
pub struct Spheres {
    head: String,
    parts: Vec<String>,
    output: Vec<String>,
}

impl Spheres {
    /// `[simulation]` with `solver`, `t_end`, `dt`, `gravity`; the material
    /// `m` and the sphere `s` of radius `radius`.
    pub fn new(solver: &str, t_end: f64, dt: f64, gravity: [f64; 3], radius: f64) -> Self {
        let head = format!(
            "[simulation]\nsolver = \"{solver}\"\nt_end = {t_end:?}\ndt = {dt:?}\ngravity = {gravity:?}\n\n\
             [[material]]\nname = \"m\"\ndensity = 1000.0\n\n\
             [[shape]]\nname = \"s\"\nkind = \"sphere\"\nradius = {radius:?}\n"
        );
        Self { head, parts: Vec::new(), output: Vec::new() }
    }

    /// A lattice generator of `s`: `count` spheres along x, y, z from
    /// `origin`, `gap` between neighbours' surfaces, all at `velocity`.
    pub fn lattice(mut self, origin: [f64; 3], count: [u32; 3], gap: f64, velocity: [f64; 3]) -> Self {
        self.parts.push(format!(
            "[[generate]]\nkind = \"lattice\"\nshape = \"s\"\norigin = {origin:?}\ncount = {count:?}\ngap = {gap:?}\nvelocity = {velocity:?}\n"
        ));
        self
    }

    /// Extra keys of the material `m` (`friction = 0.3`, ...), as TOML lines.
    pub fn material(mut self, lines: &str) -> Self {
        self.head = self.head.replacen("density = 1000.0\n", &format!("density = 1000.0\n{lines}\n"), 1);
        self
    }

    /// One sphere `s` at rest at `position`.
    pub fn body(mut self, position: [f64; 3]) -> Self {
        self.parts.push(format!("[[body]]\nshape = \"s\"\nposition = {position:?}\n"));
        self
    }

    /// One sphere `s` at `position` moving at `velocity`.
    pub fn moving_body(mut self, position: [f64; 3], velocity: [f64; 3]) -> Self {
        self.parts.push(format!("[[body]]\nshape = \"s\"\nposition = {position:?}\nvelocity = {velocity:?}\n"));
        self
    }

    /// The wall z = 0, facing +z.
    pub fn ground(mut self) -> Self {
        self.parts.push("[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n".into());
        self
    }

    /// Further tables, as TOML text (`[contact]`, `[dem]`, more shapes ...).
    pub fn with(mut self, toml: &str) -> Self {
        self.parts.push(toml.to_string());
        self
    }

    /// A frame every `n` steps (`output.every`).
    pub fn every(self, n: u64) -> Self {
        self.output(&format!("every = {n}"))
    }

    /// Further `[output]` keys, as TOML lines.
    pub fn output(mut self, lines: &str) -> Self {
        self.output.push(lines.to_string());
        self
    }

    /// The TOML text, its output dir `OUTDIR`.
    pub fn toml(&self) -> String {
        let mut text = self.head.clone();
        for p in &self.parts {
            text += "\n";
            text += p;
        }
        text += "\n[output]\ndir = \"OUTDIR\"\n";
        for o in &self.output {
            text += o;
            text += "\n";
        }
        text
    }

    /// The TOML text with its output going to `out`.
    pub fn toml_into(&self, out: &Path) -> String {
        self.toml().replace("OUTDIR", &out.display().to_string())
    }
}

/// 18 spheres of radius 0.01 m (3×3×2 lattice, 0.1 mm apart) in a box of
/// four fixed side walls touching them, on a floor 0.5 mm below rising at
/// 5 cm/s from t = 0 (cd, to t = 0.03 s): the pack lands on it and rides
/// up, pressed between walls (its rigid forces are not unique); a frame
/// every step.
pub fn rising_floor_box() -> Spheres {
    Spheres::new("cd", 0.03, 1e-3, [0.0, 0.0, -9.81], 0.01)
        .lattice([0.01, 0.01, 0.01], [3, 3, 2], 1e-4, [0.0; 3])
        .with("[[wall]]\npoint = [0.0, 0.0, -5e-4]\nnormal = [0.0, 0.0, 1.0]\nvelocity = [0.0, 0.0, 0.05]\n")
        .with("[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [1.0, 0.0, 0.0]\n")
        .with("[[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 1.0, 0.0]\n")
        .with("[[wall]]\npoint = [0.0602, 0.0602, 0.0]\nnormal = [-1.0, 0.0, 0.0]\n")
        .with("[[wall]]\npoint = [0.0602, 0.0602, 0.0]\nnormal = [0.0, -1.0, 0.0]\n")
        .with("[solver]\ntolerance = 1e-12\nmax_iterations = 100000\n")
        .output("every = 1\nthermo_every = 10")
}

/// Every dataset of the last frame of `out/frames.h5`, by path, as bits.
pub fn last_frame_bits(out: &Path) -> Vec<(String, Vec<u64>)> {
    let f = hdf5::File::open(out.join("frames.h5")).unwrap();
    let frames = f.group("frames").unwrap();
    let mut names = frames.member_names().unwrap();
    names.sort();
    let g = frames.group(names.last().unwrap()).unwrap();
    let mut v = Vec::new();
    for part in ["bodies", "contacts"] {
        let p = g.group(part).unwrap();
        let mut ds = p.member_names().unwrap();
        ds.sort();
        for name in ds {
            let d = p.dataset(&name).unwrap();
            let bits: Vec<u64> = match d.read_raw::<f64>() {
                Ok(x) => x.iter().map(|x| x.to_bits()).collect(),
                Err(_) => d.read_raw::<u64>().map(|x| x.to_vec()).or_else(|_| d.read_raw::<u32>().map(|x| x.iter().map(|&u| u as u64).collect())).unwrap_or_default(),
            };
            v.push((format!("{}/{part}/{name}", names.last().unwrap()), bits));
        }
    }
    v
}

/// A CSV of numbers with a header line (series.csv, the scaling scripts'
/// tables): the header and one map per row.
pub fn read_csv(path: &Path) -> (Vec<String>, Vec<std::collections::BTreeMap<String, f64>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().expect("CSV header").split(',').map(str::to_string).collect();
    let rows = lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').map(|x| x.parse().unwrap_or_else(|_| panic!("not a number: {x} in {l}"))).collect();
            assert_eq!(v.len(), header.len(), "row width: {l}");
            header.iter().cloned().zip(v).collect()
        })
        .collect();
    (header, rows)
}

/// Three spheres (r = 0.1 m) stacked along z in a periodic cell of 0.5 m ×
/// 0.5 m × 0.68 m whose z period follows σ_zz = 10 kPa (dem, no gravity):
/// the cell closes until the column carries the stress (frames every
/// `every` steps).
pub fn stress_controlled_column(t_end: f64, every: u64) -> String {
    Spheres::new("dem", t_end, 1e-3, [0.0; 3], 0.1)
        .body([0.25, 0.25, 0.11])
        .body([0.25, 0.25, 0.33])
        .body([0.25, 0.25, 0.55])
        .with("[parallel]\nperiodic = [true, true, true]\nbox_min = [0.0, 0.0, 0.0]\nbox_max = [0.5, 0.5, 0.68]\nlees_edwards = \"xz\"\nshear_rate = 0.0\n")
        .with("servo_stress = 1e4\nservo_max_speed = 0.2\nservo_gain = 5.0\n")
        .with("[contact]\ndistance = 0.01\n\n[dem]\ngbar = 0.005\nf = 0.5\neps1 = 1.0e6\nn1 = 1.5\nn2 = -2.0\ndamping = 0.5\n")
        .output(&format!("every = {every}\nthermo_every = 100"))
        .toml()
}
