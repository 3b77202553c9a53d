//! The paper's tall tetrapod pack (Gay Neto & Wriggers §3.6): the pack of
//! `configs/box-1005-tetrapods-paper.toml` at the end of step (e) (filled,
//! squeezed to the 7 m box, compacted without friction, at rest with
//! friction again; `scripts/py/tetrapod_box.py`), stored as
//! `tests/data/tetrapod-pack-paper.csv`, collapses for 0.5 s on 2 ranks
//! once its lateral walls are gone (step (f)). Checked in every frame:
//! no two tetrapods overlap and none enters the ground (the exact distance
//! of the meshes of every pair whose bounding spheres meet, and every
//! listed contact gap positive), and the energy (kinetic, gravitational and
//! the elastic energy held by the barrier law and the friction springs)
//! never rises above its start: damping and friction only take energy out.
mod common;
use nalgebra::{Isometry3, Matrix3, Point3, Quaternion, Translation3, UnitQuaternion, Vector3};
use std::path::Path;
use stiffgrain::body::mesh::TriMesh;
use stiffgrain::dem::law::NormalLaw;
use stiffgrain::geometry::mesh_distance;

const WALL: u64 = 1 << 63;
const PACK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tetrapod-pack-paper.csv");
const T_END: f64 = 0.5;

/// configs/box-1005-tetrapods-paper.toml after the wall removal: the ground
/// alone, the bodies from the stored pack.
const COLLAPSE: &str = r#"
[simulation]
solver = "dem"
dim = 3
t_end = 0.5
dt = 1e-3
gravity = [0.0, 0.0, -9.81]

[[material]]
name = "concrete"
density = 2400.0
friction = 0.6
young = 3.0e10
poisson = 0.2

[[shape]]
name = "tetrapod"
kind = "tetrapod"
arm_length = 0.62
arm_radius = 0.124
segments = 9

[[generate]]
kind = "file"
file = "PACK"
shape = "tetrapod"
material = "concrete"

[[wall]]
point = [0.0, 0.0, 0.0]
normal = [0.0, 0.0, 1.0]

[contact]
distance = 0.006
skin = 0.045

[dem]
damping = 1.0
damping_cap = 1.0
gap_change = 1.0
easy_iterations = 8
tangent = "gauss-newton"
newton_tolerance = 1.7e-2
first_tangent = "moving"

[output]
dir = "OUTDIR"
every = 25
thermo_every = 50
"#;

struct Frame {
    t: f64,
    pos: Vec<Vector3<f64>>,
    q: Vec<UnitQuaternion<f64>>,
    vel: Vec<Vector3<f64>>,
    omega: Vec<Vector3<f64>>,
    /// (body_b, gap, tangential force) of every listed contact.
    contacts: Vec<(u64, f64, Vector3<f64>)>,
}

fn rows<const N: usize>(g: &hdf5::Group, name: &str) -> Vec<[f64; N]> {
    let d = g.dataset(name).unwrap().read_raw::<f64>().unwrap();
    d.chunks(N).map(|c| c.try_into().unwrap()).collect()
}

fn frames(dir: &Path) -> Vec<Frame> {
    let f = hdf5::File::open(dir.join("frames.h5")).unwrap();
    let fr = f.group("frames").unwrap();
    let mut out: Vec<Frame> = fr
        .member_names()
        .unwrap()
        .iter()
        .map(|name| {
            let g = fr.group(name).unwrap();
            let (b, c) = (g.group("bodies").unwrap(), g.group("contacts").unwrap());
            let v3 = |r: Vec<[f64; 3]>| r.into_iter().map(Vector3::from).collect::<Vec<_>>();
            let gap = c.dataset("gap").unwrap().read_raw::<f64>().unwrap();
            let body_b = c.dataset("body_b").unwrap().read_raw::<u64>().unwrap();
            let ft = v3(rows::<3>(&c, "force_tangent"));
            Frame {
                t: g.attr("time").unwrap().read_scalar().unwrap(),
                pos: v3(rows::<3>(&b, "position")),
                q: rows::<4>(&b, "orientation").into_iter().map(|q| UnitQuaternion::from_quaternion(Quaternion::new(q[0], q[1], q[2], q[3]))).collect(),
                vel: v3(rows::<3>(&b, "velocity")),
                omega: v3(rows::<3>(&b, "angular_velocity")),
                contacts: (0..gap.len()).map(|k| (body_b[k], gap[k], ft[k])).collect(),
            }
        })
        .collect();
    out.sort_by(|a, b| a.t.total_cmp(&b.t));
    out
}

/// Elastic energy ∫_g^ḡ f_n(s) ds the normal law holds at gap g (eq 49).
fn law_energy(law: &NormalLaw, g: f64) -> f64 {
    let penalty = |g: f64| law.eps1 * (law.gbar - g).powf(law.n1 + 1.0) / (law.n1 + 1.0);
    if g >= law.gbar {
        0.0
    } else if g >= law.gswitch {
        penalty(g)
    } else {
        let (gs, p) = (law.gswitch, law.n2 + 1.0);
        let barrier = if p.abs() < 1e-12 { law.eps2 * (gs / g).ln() } else { law.eps2 * (gs.powf(p) - g.powf(p)) / p };
        penalty(gs) + barrier + law.c2 * (gs - g)
    }
}

/// (kinetic, gravitational, elastic) energy of a frame.
fn energy(f: &Frame, m: f64, inertia: &Matrix3<f64>, law: &NormalLaw, eps_t: f64) -> (f64, f64, f64) {
    let mut kin = 0.0;
    let mut pot = 0.0;
    for i in 0..f.pos.len() {
        let r = f.q[i].to_rotation_matrix();
        let iw = r.matrix() * inertia * r.matrix().transpose();
        kin += 0.5 * m * f.vel[i].norm_squared() + 0.5 * f.omega[i].dot(&(iw * f.omega[i]));
        pot += m * 9.81 * f.pos[i].z;
    }
    // (closed pairs of frame 0 are no contacts: see the test)
    let elastic = f.contacts.iter().filter(|c| c.1 > 0.0).map(|(_, g, ft)| law_energy(law, *g) + 0.5 * ft.norm_squared() / eps_t).sum();
    (kin, pot, elastic)
}

/// Smallest mesh–mesh distance over the pairs whose bounding spheres meet
/// (capped at `cap`), and the lowest mesh vertex.
fn clearance(f: &Frame, mesh: &TriMesh, cap: f64) -> (f64, (usize, usize), f64) {
    let r = mesh.bounding_radius();
    let pose: Vec<Isometry3<f64>> = (0..f.pos.len()).map(|i| Isometry3::from_parts(Translation3::from(f.pos[i]), f.q[i])).collect();
    let mut order: Vec<usize> = (0..f.pos.len()).collect();
    order.sort_by(|&a, &b| f.pos[a].x.total_cmp(&f.pos[b].x));
    let (mut best, mut pair) = (cap, (0, 0));
    for (k, &i) in order.iter().enumerate() {
        for &j in &order[k + 1..] {
            if f.pos[j].x - f.pos[i].x >= 2.0 * r {
                break;
            }
            if (f.pos[j] - f.pos[i]).norm() < 2.0 * r {
                let d = mesh_distance(mesh, &pose[i], mesh, &pose[j], cap);
                if d < best {
                    (best, pair) = (d, (i.min(j), i.max(j)));
                }
            }
        }
    }
    let lowest = pose.iter().flat_map(|p| mesh.vertices.iter().map(move |v| (p * Point3::from(*v)).z)).fold(f64::INFINITY, f64::min);
    (best, pair, lowest)
}

#[test]
fn tall_tetrapod_pack_collapses_on_two_ranks_without_overlap_or_energy_gain() {
    let dir = tempfile::tempdir().unwrap();
    let text = COLLAPSE.replace("PACK", PACK);
    let scene = stiffgrain::config::from_str("collapse.toml", &text.replace("OUTDIR", "out")).unwrap();
    let d = &scene.dem;
    let law = NormalLaw::new(d.eps1, d.n1, d.n2, d.gbar, d.f);
    let mesh = TriMesh::tetrapod(0.62, 0.124, 9);
    let mp = mesh.mass_properties();
    let (m, inertia) = (2400.0 * mp.volume, 2400.0 * mp.inertia);

    let t0 = std::time::Instant::now();
    let (out, log) = common::run_config(2, dir.path(), "collapse", &text);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    eprintln!("collapse run: {:.0} s wall; {}", t0.elapsed().as_secs_f64(), log.lines().rev().take(3).collect::<Vec<_>>().join(" | "));
    eprintln!("steps {}, Newton {}, KSP {}, rejected {}, dt {}, night owls {}, closed pairs dropped {}",
        s["steps"], s["solver_iterations_total"], s["linear_iterations_total"], s["rejected_steps"], s["dt_taken"], s["night_owls"], s["closed_pairs_dropped"]);

    let fr = frames(&out);
    assert!((fr.last().unwrap().t - T_END).abs() < 1e-9, "the run stopped at {}", fr.last().unwrap().t);
    assert!(fr.len() >= 10, "{} frames", fr.len());
    let (k0, p0, e0) = energy(&fr[0], m, &inertia, &law, d.eps_t);
    let h0 = k0 + p0 + e0;
    let closed = fr[0].contacts.iter().filter(|c| c.1 <= 0.0).count();
    eprintln!("t = 0: kinetic {k0:.3e} J, gravitational {p0:.6e} J, elastic {e0:.3e} J ({} contacts listed, {closed} of them closed pairs)", fr[0].contacts.len());
    let mut released: f64 = 0.0;
    let mut worst_gain = f64::NEG_INFINITY;
    let mut kin_max: f64 = 0.0;
    // The exact distances are most of the checks' time (about 20 s one frame
    // after another here): the frames share out over the cores.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let chunk = fr.len().div_ceil(threads);
    let clearances: Vec<(f64, (usize, usize), f64)> = std::thread::scope(|sc| {
        let parts: Vec<_> = fr.chunks(chunk).map(|part| sc.spawn(|| part.iter().map(|f| clearance(f, &mesh, 0.01)).collect::<Vec<_>>())).collect();
        parts.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    for (f, &(gap, pair, lowest)) in fr.iter().zip(&clearances) {
        // Frame 0 is the raw detection, before the DEM's first step drops
        // the closed mesh pairs (projections through an arm, no contacts;
        // the exact distances below show no overlap).
        for &(b, g, _) in f.contacts.iter().filter(|_| f.t > 0.0) {
            assert!(g > 0.0, "t = {}: a listed contact with gap {g:e} (body_b {})", f.t, if b >= WALL { format!("wall {}", b - WALL) } else { b.to_string() });
        }
        let (k, p, e) = energy(f, m, &inertia, &law, d.eps_t);
        let h = k + p + e;
        eprintln!(
            "t = {:.4}: kinetic {k:.4e} J, gravitational released {:.4e} J, elastic {e:.3e} J, total - start {:+.4e} J; closest pair {pair:?} {gap:.3e} m, lowest vertex {lowest:.3e} m",
            f.t,
            p0 - p,
            h - h0
        );
        assert!(gap > 0.0, "t = {}: tetrapods {pair:?} overlap", f.t);
        assert!(lowest > 0.0, "t = {}: a tetrapod enters the ground (vertex at z = {lowest:e})", f.t);
        released = released.max(p0 - p);
        kin_max = kin_max.max(k);
        worst_gain = worst_gain.max(h - h0);
    }
    // The energy may not rise; round-off of the sums is ~1e-16 of the
    // gravitational energy (~1e-9 J here), far below what a step could gain.
    let tol = 1e-12 * p0.abs();
    eprintln!("largest rise of the total energy {worst_gain:.3e} J (tolerance {tol:.1e} J); largest kinetic {kin_max:.3e} J, largest gravitational energy released {released:.3e} J");
    assert!(worst_gain <= tol, "the energy rose by {worst_gain:e} J");
    // The pack must collapse for the test to mean something.
    assert!(released > 1e4 && kin_max > 1e3, "the pack hardly moved: {released:e} J released, kinetic at most {kin_max:e} J");
}
