//! Periodic boundaries: bodies leaving one face enter at the other, and
//! contacts across a periodic face are found, at 1 to 4 ranks.
mod common;
use std::path::Path;

fn run(np: usize, dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    common::run_config(np, dir, name, text).0
}

fn read<T: hdf5::H5Type>(f: &hdf5::File, path: &str) -> Vec<T> {
    f.dataset(path).unwrap().read_raw::<T>().unwrap()
}

/// 30 spheres in a lattice streaming through a box periodic in x and y.
fn stream() -> String {
    common::Spheres::new("dem", 0.4, 0.01, [0.0, 0.0, -1.0], 0.05)
        .lattice([0.1; 3], [5, 3, 2], 0.1, [6.0, -2.5, 0.0])
        .with("[parallel]\nperiodic = [true, true, false]\nbox_min = [0.0, 0.0, 0.0]\nbox_max = [1.0, 0.6, 0.4]\n")
        .every(1)
        .toml()
}

#[test]
fn a_stream_wraps_around_the_periodic_box() {
    let dir = tempfile::tempdir().unwrap();
    let (l, v0, g) = ([1.0, 0.6], [6.0, -2.5, 0.0], [0.0, 0.0, -1.0]);
    for np in 1..=4 {
        let out = run(np, dir.path(), "stream", &stream());
        let f = hdf5::File::open(out.join("frames.h5")).unwrap();
        let mut names = f.group("frames").unwrap().member_names().unwrap();
        names.sort();
        assert_eq!(names.len(), 41);
        for name in &names {
            let t: f64 = f.group(&format!("frames/{name}")).unwrap().attr("time").unwrap().read_scalar().unwrap();
            let ids: Vec<u64> = read(&f, &format!("frames/{name}/bodies/id"));
            assert_eq!(ids, (0..30).collect::<Vec<u64>>(), "t = {t}, {np} ranks");
            let pos: Vec<f64> = read(&f, &format!("frames/{name}/bodies/position"));
            for (k, id) in ids.iter().enumerate() {
                let x0 = [0.1 + 0.2 * (id % 5) as f64, 0.1 + 0.2 * ((id / 5) % 3) as f64, 0.1 + 0.2 * (id / 15) as f64];
                for a in 0..3 {
                    let want = x0[a] + v0[a] * t + 0.5 * g[a] * t * t;
                    let mut d = pos[3 * k + a] - want;
                    if a < 2 {
                        d -= (d / l[a]).round() * l[a];
                    }
                    assert!(d.abs() < 1e-12, "body {id} axis {a} at t = {t}, {np} ranks: off by {d}");
                }
            }
        }
        // Over 0.4 s the stream went round x more than twice: positions stayed near the box.
        let last: Vec<f64> = read(&f, &format!("frames/{}/bodies/position", names.last().unwrap()));
        assert!(last.chunks(3).all(|p| p[0] > -0.1 && p[0] < 1.1 && p[1] > -0.1 && p[1] < 0.7), "{last:?}");
    }
}

#[test]
fn contacts_across_a_periodic_face_are_found() {
    let text = r#"
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
radius = 0.1

[[body]]
shape = "s"
position = [0.09, 0.5, 0.5]

[[body]]
shape = "s"
position = [1.88, 0.5, 0.5]

[[body]]
shape = "s"
position = [1.0, 0.5, 0.5]

[contact]
distance = 0.05

[parallel]
periodic = [true, false, false]
box_min = [0.0, 0.0, 0.0]
box_max = [2.0, 1.0, 1.0]

[output]
dir = "OUTDIR"
"#;
    let dir = tempfile::tempdir().unwrap();
    for np in 1..=4 {
        let out = run(np, dir.path(), "face", text);
        let f = hdf5::File::open(out.join("frames.h5")).unwrap();
        let a: Vec<u64> = read(&f, "frames/000000000/contacts/body_a");
        let b: Vec<u64> = read(&f, "frames/000000000/contacts/body_b");
        let gap: Vec<f64> = read(&f, "frames/000000000/contacts/gap");
        let normal: Vec<f64> = read(&f, "frames/000000000/contacts/normal");
        assert_eq!((a.clone(), b.clone()), (vec![0], vec![1]), "{np} ranks");
        // Through the face: 0.09 + 2 − 1.88 − 0.2 = 0.01; the normal from 0 to 1 points to −x.
        assert!((gap[0] - 0.01).abs() < 1e-12, "gap {} at {np} ranks", gap[0]);
        assert!((normal[0] + 1.0).abs() < 1e-12, "normal {normal:?}");
    }
}
