//! Free flight under gravity: x(t) = x0 + v0 t + g t²/2 on 1, 2 and 3 ranks,
//! and frames.h5 identical whatever the rank count.
mod common;
use std::path::Path;

fn scene(out: &Path) -> String {
    common::Spheres::new("dem", 0.25, 0.01, [0.5, -1.0, -9.81], 0.1)
        .with("[[shape]]\nname = \"cube\"\nkind = \"box\"\nsize = [0.2, 0.2, 0.2]\n")
        .lattice([0.0; 3], [5, 4, 3], 0.05, [1.0, 2.0, 3.0])
        .with("[[body]]\nshape = \"cube\"\nposition = [-1.0, 0.0, 0.0]\nvelocity = [0.0, 0.0, 1.0]\nangular_velocity = [0.0, 0.0, 2.0]\n")
        .with("[[body]]\nshape = \"s\"\nposition = [-2.0, 0.0, 0.0]\nfixed = true\n")
        .every(5)
        .toml_into(out)
}

type Frame = Vec<(String, Vec<f64>)>;

/// Every dataset of the last frame as f64 vectors.
fn last_frame(file: &Path) -> (f64, Frame) {
    let f = hdf5::File::open(file).unwrap();
    let frames = f.group("frames").unwrap();
    let mut names = frames.member_names().unwrap();
    names.sort();
    let g = frames.group(names.last().unwrap()).unwrap();
    let time: f64 = g.attr("time").unwrap().read_scalar().unwrap();
    let b = g.group("bodies").unwrap();
    let mut out = Vec::new();
    for name in ["id", "position", "velocity", "orientation", "angular_velocity", "fixed", "shape"] {
        let ds = b.dataset(name).unwrap();
        let v: Vec<f64> = match name {
            "id" => ds.read_raw::<u64>().unwrap().into_iter().map(|x| x as f64).collect(),
            "fixed" => ds.read_raw::<u8>().unwrap().into_iter().map(|x| x as f64).collect(),
            "shape" => ds.read_raw::<u32>().unwrap().into_iter().map(|x| x as f64).collect(),
            _ => ds.read_raw::<f64>().unwrap(),
        };
        out.push((name.to_string(), v));
    }
    (time, out)
}

#[test]
fn positions_follow_parabola_and_files_agree_across_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let mut results = Vec::new();
    for np in [1, 2, 3] {
        let out = dir.path().join(format!("np{np}"));
        let cfg = dir.path().join(format!("ff{np}.toml"));
        std::fs::write(&cfg, scene(&out)).unwrap();
        let stdout = common::mpirun_ok(np, &common::stiffgrain(), &["run", cfg.to_str().unwrap()]);
        assert!(stdout.contains("kinetic_energy"), "thermo header missing: {stdout}");
        assert!(out.join("frames.xdmf").exists() && out.join("summary.json").exists());
        results.push(last_frame(&out.join("frames.h5")));
    }
    let (t, frame) = &results[0];
    assert!((t - 0.25).abs() < 1e-12, "last frame at t = {t}");
    let get = |n: &str| &frame.iter().find(|(k, _)| k == n).unwrap().1;
    let ids = get("id");
    let pos = get("position");
    assert_eq!(ids.len(), 62);
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "bodies sorted by id");
    let g = [0.5, -1.0, -9.81];
    // Body 0 is the cube, 1 the fixed sphere, 2.. the lattice (x0 from the lattice rule).
    for (idx, (x0, v0)) in [
        ([-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]),
        ([-2.0, 0.0, 0.0], [0.0, 0.0, 0.0]),
        ([0.0, 0.0, 0.0], [1.0, 2.0, 3.0]),
        ([4.0 * 0.25, 3.0 * 0.25, 2.0 * 0.25], [1.0, 2.0, 3.0]),
    ]
    .iter()
    .enumerate()
    {
        let i = if idx < 3 { idx } else { 61 };
        for k in 0..3 {
            let gk = if idx == 1 { 0.0 } else { g[k] };
            let want = x0[k] + v0[k] * t + 0.5 * gk * t * t;
            let got = pos[3 * i + k];
            assert!((got - want).abs() <= 1e-12 * (1.0 + want.abs()), "body {i} axis {k}: {got} vs {want}");
        }
    }
    // The cube spins about z at 2 rad/s: 0.5 rad after 0.25 s. DEM's Newmark on
    // Rodrigues parameters (eq 22) is second-order accurate, not exact.
    let q = &get("orientation")[0..4];
    let angle = 2.0 * q[3].atan2(q[0]);
    assert!(q[1].abs() < 1e-12 && q[2].abs() < 1e-12, "rotation about z only: {q:?}");
    assert!((angle - 0.5).abs() < 1e-4, "rotation angle {angle}");
    // Integer datasets are identical; floats agree to round-off (the DEM
    // solves a Newton system per step, whose reductions depend on the rank
    // count; tests/io.rs checks that the writer itself is bit-exact).
    for (np, (_, other)) in results.iter().enumerate().skip(1) {
        for ((name, a), (name_b, b)) in frame.iter().zip(other) {
            assert_eq!(name, name_b);
            assert_eq!(a.len(), b.len(), "{name} at {} ranks", np + 1);
            for (x, y) in a.iter().zip(b) {
                assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()), "{name} at {} ranks: {x} vs {y}", np + 1);
            }
        }
    }
}
