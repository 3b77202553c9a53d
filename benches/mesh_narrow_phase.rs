//! Narrow-phase time per step for a loose pack of tetrapods, with and without
//! the second-level (sub-region) Verlet lists (`[contact] entity_lists`).
//!
//! Scene: N tetrapods (arm length 1, arm radius 0.25, 12 sides; bounding
//! radius about 1) on a jittered cubic lattice of spacing 1.5, so neighbours'
//! bounding spheres overlap and their arms interleave; orientations drawn
//! until no neighbour overlaps (exhaustive search). Each body then
//! drifts and spins (at most MOTION per step and MOTION rad per step), skin
//! 0.05, contact distance 0.02: both list levels are reused and rebuilt along
//! the way. Three modes run the same steps: entity lists, entity lists at the
//! DEM's closed depth (`DetectParams::mesh_depth`, the closed pairs sought
//! only as deep as the open contacts need), no lists. The first and last must
//! find the same contacts, the second the same open contacts and a part of
//! the closed ones.
//!
//! usage: cargo bench --bench mesh_narrow_phase [-- N STEPS REPS MOTION]
//! (defaults 512 40 3 0.002). Prints per mode the median over REPS of the mean
//! narrow-phase CPU time per step (first-level builds excluded, entity-list
//! builds included), and list statistics.
use stiffgrain::scene::generate::SplitMix64;
use nalgebra::{Matrix3, Unit, UnitQuaternion, Vector3};
use std::sync::Arc;
use std::time::Instant;
use stiffgrain::body::{Bodies, Body, Shape, TriMesh, DOF_ALL};
use stiffgrain::contact::{detect, narrow_phase, ContactShapes, Contacts, DetectParams, VerletList};

/// The scene generators' deterministic generator, with the draws this bench needs.
struct Rng(SplitMix64);

impl Rng {
    fn f64(&mut self) -> f64 {
        self.0.uniform()
    }
    fn unit_vector(&mut self) -> Vector3<f64> {
        loop {
            let v = Vector3::new(2.0 * self.f64() - 1.0, 2.0 * self.f64() - 1.0, 2.0 * self.f64() - 1.0);
            let n = v.norm();
            if n > 0.1 && n <= 1.0 {
                return v / n;
            }
        }
    }
}

fn body(id: u64, position: Vector3<f64>, orientation: UnitQuaternion<f64>) -> Body {
    Body {
        id,
        shape: 0,
        material: 0,
        position,
        orientation,
        velocity: Vector3::zeros(),
        angular_velocity: Vector3::zeros(),
        mass: 1.0,
        inertia: Matrix3::identity(),
        fixed: false,
        dof_mask: DOF_ALL,
    }
}

/// Lattice spacing (bounding radius 1: neighbours' arms interleave).
const SPACING: f64 = 1.5;

fn pack(n: usize, cs: &ContactShapes, rng: &mut Rng) -> Bodies {
    let side = (n as f64).cbrt().ceil() as usize;
    // Skin 0.2: overlaps up to 0.22 deep show as negative gaps (deeper reach
    // would see points behind the far side of an arm, 0.5 thick).
    let check = DetectParams { entity_lists: false, ..DetectParams::new(0.2, 0.02) };
    let mut bodies = Bodies::new();
    let mut lattice: Vec<[usize; 3]> = Vec::new();
    'cells: for i in 0..side {
        for j in 0..side {
            for k in 0..side {
                if bodies.len() == n {
                    break 'cells;
                }
                let x = Vector3::new(i as f64, j as f64, k as f64) * SPACING + rng.unit_vector() * 0.05;
                let mut placed = false;
                for _ in 0..500 {
                    let q = UnitQuaternion::from_axis_angle(&Unit::new_normalize(rng.unit_vector()), std::f64::consts::PI * rng.f64());
                    bodies.push(body(bodies.len() as u64, x, q));
                    let last = bodies.len() - 1;
                    let mut out = Contacts::new();
                    for (o, c) in lattice.iter().enumerate() {
                        if (0..3).all(|d| c[d].abs_diff([i, j, k][d]) <= 1) {
                            narrow_phase(o, last, &bodies, cs, &check, &mut out);
                        }
                    }
                    if out.gap.iter().all(|&g| g >= 0.0) {
                        lattice.push([i, j, k]);
                        placed = true;
                        break;
                    }
                    bodies.truncate(last);
                }
                assert!(placed, "no orientation fits at lattice site {:?}", [i, j, k]);
            }
        }
    }
    bodies
}

fn main() {
    let args: Vec<f64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let arg = |k: usize, default: f64| args.get(k).copied().unwrap_or(default);
    let (n, steps, reps, motion) = (arg(0, 512.0) as usize, arg(1, 40.0) as usize, arg(2, 3.0) as usize, arg(3, 0.002));
    let shapes = vec![Shape::Mesh(Arc::new(TriMesh::tetrapod(1.0, 0.25, 12)))];
    let cs = ContactShapes::new(&shapes);
    let mut rng = Rng(SplitMix64::new(2025));
    let t0 = Instant::now();
    let start = pack(n, &cs, &mut rng);
    eprintln!("placed {} tetrapods in {:.1} s", start.len(), t0.elapsed().as_secs_f64());
    let v: Vec<Vector3<f64>> = (0..start.len()).map(|_| rng.unit_vector() * motion * rng.f64()).collect();
    let w: Vec<Vector3<f64>> = (0..start.len()).map(|_| rng.unit_vector() * motion * rng.f64()).collect();
    let base = DetectParams { entity_lists: true, ..DetectParams::new(0.05, 0.02) };
    let mut medians = Vec::new();
    let mut reference: Option<Vec<Contacts>> = None;
    // Modes: entity lists (full depth), entity lists with the DEM's closed
    // depth (`mesh_depth` 0: only as deep as the open contacts need), no lists.
    // MESH_BENCH_MODE=lists, =depth or =exhaustive runs one mode only (profiling).
    let (full, depth, exhaustive) = (("lists", true, None), ("lists, DEM depth", true, Some(0.0)), ("exhaustive", false, None));
    let modes = match std::env::var("MESH_BENCH_MODE").as_deref() {
        Ok("lists") => vec![full],
        Ok("depth") => vec![depth],
        Ok("exhaustive") => vec![exhaustive],
        _ => vec![full, depth, exhaustive],
    };
    for &(name, lists, mesh_depth) in &modes {
        let params = DetectParams { entity_lists: lists, mesh_depth, ..base };
        let mut per_step = Vec::new();
        for _ in 0..reps {
            let mut b = start.clone();
            let mut verlet = VerletList::new();
            let mut out = Contacts::new();
            let (mut narrow, mut contacts, mut closed, mut found) = (0.0, 0, 0, Vec::new());
            for _ in 0..steps {
                for i in 0..b.len() {
                    b.position[i] += v[i];
                    b.orientation[i] = UnitQuaternion::from_scaled_axis(w[i]) * b.orientation[i];
                }
                if verlet.is_stale(&b, &[], &params) {
                    verlet.build(&b, &cs, &[], &params);
                }
                let t = cpu_seconds();
                detect(&b, b.len(), &cs, &[], &params, None, &mut verlet, &mut out);
                narrow += cpu_seconds() - t;
                contacts += out.len();
                closed += out.gap.iter().filter(|&&g| g <= 0.0).count();
                let mut sorted = out.clone();
                sorted.sort_canonical();
                found.push(sorted);
            }
            per_step.push(narrow / steps as f64);
            match (&reference, mesh_depth) {
                (None, _) => reference = Some(found),
                (Some(r), None) => assert!(*r == found, "contacts differ between modes or repetitions"),
                (Some(r), Some(_)) => {
                    // The open contacts are those of the full depth; the closed ones a part of them.
                    let open = |c: &Contacts| c.iter().filter(|k| k.gap > 0.0).collect::<Vec<_>>();
                    for (full, shallow) in r.iter().zip(&found) {
                        assert!(open(full) == open(shallow), "open contacts differ with the DEM depth");
                        assert!(shallow.iter().all(|k| full.iter().any(|f| f == k)), "a closed contact not found at full depth");
                    }
                }
            }
            let l = verlet.entity_lists();
            eprintln!(
                "{name}: {:.3} ms/step (CPU), {} body pairs, {} contacts/step ({} closed), {} first-level builds, {} entity-list builds, {:.0} entity pairs/step",
                1e3 * narrow / steps as f64,
                verlet.pairs().len(),
                contacts / steps,
                closed / steps,
                verlet.builds(),
                l.builds(),
                l.evaluated() as f64 / steps as f64
            );
        }
        per_step.sort_by(f64::total_cmp);
        medians.push(per_step[per_step.len() / 2]);
    }
    if medians.len() < 3 {
        return;
    }
    println!(
        "mesh_narrow_phase N={} steps={steps} reps={reps} motion={motion}: narrow phase CPU per step median {:.3} ms with entity lists, {:.3} ms with lists at the DEM's closed depth, {:.3} ms without lists",
        start.len(),
        1e3 * medians[0],
        1e3 * medians[1],
        1e3 * medians[2],
    );
}

/// CPU time of this thread so far, in seconds (`/proc/thread-self/schedstat`,
/// nanoseconds): the machine is shared, wall time is not the cost.
fn cpu_seconds() -> f64 {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").expect("schedstat (Linux)");
    s.split_whitespace().next().and_then(|t| t.parse::<f64>().ok()).expect("schedstat's first field") * 1e-9
}
