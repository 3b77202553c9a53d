//! Test program for `stiffgrain::io` (run by tests/io.rs under mpirun).
//!
//! ```text
//! io_roundtrip write DIR N    # N bodies spread over ranks out of order, with
//!                             # fake ghosts; 2 frames + checkpoints; read back
//! io_roundtrip read FILE N    # read a checkpoint, check it; exit 2 on error
//! io_roundtrip redist N       # check redistribute_sorted on N records/rank
//! ```
//! Every check runs on every rank; a failure prints the reason and exits 1.
use mpi::traits::*;
use nalgebra::{Matrix3, UnitQuaternion, Vector3};
use std::path::Path;
use stiffgrain::body::{Bodies, Body, Shape, DOF_2D, DOF_ALL, DOF_NONE};
use stiffgrain::contact::ContactKey;
use stiffgrain::io::{self, ContactTable, FlatRecords, FrameWriter, SolverState};
use stiffgrain::scene::Scene;

/// Body `id` of the deterministic test set.
fn body(id: u64) -> Body {
    let x = id as f64;
    let fixed = id % 5 == 0;
    Body {
        id,
        shape: (id % 3) as u32,
        material: (id % 2) as u32,
        position: Vector3::new(0.5 * x, (0.3 * x).sin(), 1e-3 * x * x),
        orientation: UnitQuaternion::from_axis_angle(&Vector3::y_axis(), 0.1 * x)
            * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), 0.05 * x),
        velocity: Vector3::new(x.cos(), -x, 1.0 / (1.0 + x)),
        angular_velocity: Vector3::new(0.01 * x, 0.0, -(x.sqrt())),
        mass: 1.0 + x,
        inertia: Matrix3::new(2.0 + x, 0.1, 0.2, 0.1, 3.0 + x, 0.3, 0.2, 0.3, 4.0 + x),
        fixed,
        dof_mask: if fixed { DOF_NONE } else if id % 2 == 0 { DOF_ALL } else { DOF_2D },
    }
}

/// One test contact: key, point, gap, force_normal, force_tangent.
struct TestContact {
    key: ContactKey,
    x: f64,
}

/// Contacts of body `a` (owned with `a`): (a, a+1) with two sub-contacts.
fn contacts_of(a: u64, n: u64) -> Vec<TestContact> {
    if a + 1 >= n {
        return vec![];
    }
    (0..2u32).rev().map(|s| TestContact { key: ContactKey { a, b: a + 1, sub_a: s, sub_b: 2 - s }, x: a as f64 + 0.5 * s as f64 }).collect()
}

/// The contacts as named columns, with `dummy_flux` (2 per contact): a
/// field added through the named-column path only (tests/io.rs reads it).
fn table(cs: &[TestContact]) -> ContactTable {
    let mut t = ContactTable::new(cs.len());
    t.u64("body_a", 1, cs.iter().map(|c| c.key.a).collect());
    t.u64("body_b", 1, cs.iter().map(|c| c.key.b).collect());
    t.u32("sub_a", cs.iter().map(|c| c.key.sub_a).collect());
    t.u32("sub_b", cs.iter().map(|c| c.key.sub_b).collect());
    t.f64("point", 3, cs.iter().flat_map(|c| [c.x, 1.0, 2.0]).collect());
    t.f64("normal", 3, cs.iter().flat_map(|_| [1.0, 0.0, 0.0]).collect());
    t.f64("gap", 1, cs.iter().map(|c| -1e-4 * c.x).collect());
    t.f64("force_normal", 1, cs.iter().map(|c| c.x * c.x).collect());
    t.f64("force_tangent", 3, cs.iter().flat_map(|c| [0.0, c.x, -c.x]).collect());
    t.f64("dummy_flux", 2, cs.iter().flat_map(|c| [c.key.a as f64 + 0.25 * c.key.sub_a as f64, -c.x]).collect());
    t
}

/// State records of body `a`'s contacts: key a; b, sub_a, sub_b; 4 values.
fn history_of(a: u64, n: u64, recs: &mut FlatRecords) {
    for c in contacts_of(a, n) {
        let k = c.key.to_u64s();
        recs.push(k[0], &k[1..], &[-1e-4 * c.x, c.x * c.x, 0.25 * a as f64, c.key.b as f64]);
    }
}

fn scene() -> Scene {
    // Shapes: two spheres and a brick; the example supplies its own bodies.
    let text = r#"
[simulation]
solver = "dem"
t_end = 1.0
dt = 1e-3

[[material]]
name = "m"
density = 1000.0

[[shape]]
name = "big"
kind = "sphere"
radius = 0.5

[[shape]]
name = "small"
kind = "sphere"
radius = 0.25

[[shape]]
name = "brick"
kind = "box"
size = [0.4, 0.6, 0.8]

[[body]]
shape = "big"
position = [0.0, 0.0, 0.0]

[output]
dir = "out"
every = 1
checkpoint_every = 5
thermo_every = 1
"#;
    let mut scene = stiffgrain::config::from_str("io_roundtrip", text).expect("example scene");
    scene.bodies = Bodies::new();
    // Exercise quoting of the stored config text.
    scene.config_text.push_str("# a \"quoted\" <config> & more\n");
    scene.run_id = "io-roundtrip".into();
    scene
}

fn fail(rank: i32, msg: &str) -> ! {
    eprintln!("rank {rank}: CHECK FAILED: {msg}");
    std::process::exit(1);
}

fn main() {
    let universe = mpi::initialize().expect("MPI init");
    let world = universe.world();
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(|s| s.as_str()).unwrap_or("");
    let code = match mode {
        "write" => write(&world, Path::new(&args[2]), args[3].parse().unwrap()),
        "read" => read(&world, Path::new(&args[2]), args[3].parse().unwrap()),
        "redist" => redist(&world, args[2].parse().unwrap()),
        _ => {
            eprintln!("usage: io_roundtrip write DIR N | read FILE N | redist N");
            2
        }
    };
    drop(universe);
    std::process::exit(code);
}

fn write<C: Communicator>(comm: &C, dir: &Path, n: u64) -> i32 {
    let (rank, size) = (comm.rank(), comm.size() as u64);
    // Owned: ids with (id*7) % size == rank, in descending order.
    let mut bodies = Bodies::new();
    let mine: Vec<u64> = (0..n).rev().filter(|id| (id * 7) % size == rank as u64).collect();
    for &id in &mine {
        bodies.push(body(id));
    }
    let n_owned = bodies.len();
    // Fake ghosts that must never be written.
    for g in 0..2u64 {
        let mut b = body((rank as u64 + g) % n.max(1));
        b.position = Vector3::repeat(1e9);
        b.id = if g == 0 { b.id } else { n + 1000 + rank as u64 };
        bodies.push(b);
    }
    let mine_contacts: Vec<TestContact> = mine.iter().flat_map(|&id| contacts_of(id, n)).collect();
    let contacts = table(&mine_contacts);
    let mut state = SolverState::new(7);
    let mut hist = FlatRecords::new(3, 4);
    for &id in &mine {
        history_of(id, n, &mut hist);
    }
    state.push("history", hist);
    // An empty table keeps its widths through the file.
    state.push("empty", FlatRecords::new(1, 2));

    let sc = scene();
    let mut w = match FrameWriter::create(comm, dir, &sc) {
        Ok(w) => w,
        Err(e) => fail(rank, &e.to_string()),
    };
    if let Err(e) = w.write_frame(0, 0.0, 1e-3, &bodies, n_owned, contacts) {
        fail(rank, &e.to_string());
    }
    // Second frame: moved bodies, no contacts (zero-size datasets).
    for v in bodies.velocity.iter_mut() {
        *v *= 2.0;
    }
    if let Err(e) = w.write_frame(10, 0.01, 1e-3, &bodies, n_owned, table(&[])) {
        fail(rank, &e.to_string());
    }
    if let Err(e) = w.close() {
        fail(rank, &e.to_string());
    }
    for v in bodies.velocity.iter_mut() {
        *v /= 2.0;
    }

    for step in [0u64, 5, 10] {
        let p = io::checkpoint_path(dir, step);
        if let Err(e) = io::write_checkpoint(comm, &p, step, step as f64 * 1e-3, 1e-3, &sc, &bodies, n_owned, &state, &Default::default()) {
            fail(rank, &e.to_string());
        }
    }
    if rank == 0 {
        match io::prune_checkpoints(dir, 2, "io-roundtrip") {
            Ok(removed) if removed == vec![io::checkpoint_path(dir, 0)] => {}
            other => fail(rank, &format!("prune_checkpoints: {other:?}")),
        }
    }
    comm.barrier();
    let p = io::checkpoint_path(dir, 10);
    check_checkpoint(comm, &p, n)
}

/// Reads `path` and checks this rank's slab against the generator.
fn check_checkpoint<C: Communicator>(comm: &C, path: &Path, n: u64) -> i32 {
    let (rank, size) = (comm.rank(), comm.size() as u64);
    let ck = match io::read_checkpoint(comm, path) {
        Ok(ck) => ck,
        Err(e) => {
            eprintln!("rank {rank}: error: {e}");
            return 2;
        }
    };
    let expect_slab = |k: u64, r: u64| k * r / size;
    let (a, b) = (expect_slab(n, rank as u64), expect_slab(n, rank as u64 + 1));
    if ck.n_bodies != n || ck.body_offset != a || ck.bodies.len() as u64 != b - a {
        fail(rank, &format!("slab: n {} offset {} len {}", ck.n_bodies, ck.body_offset, ck.bodies.len()));
    }
    for i in 0..ck.bodies.len() {
        let got = ck.bodies.get(i);
        let want = body(a + i as u64);
        if got != want {
            fail(rank, &format!("body {i}: got {got:?} want {want:?}"));
        }
    }
    let mut all = FlatRecords::new(3, 4);
    (0..n).for_each(|id| history_of(id, n, &mut all));
    all.sort();
    let nh = all.len() as u64;
    let (ha, hb) = (expect_slab(nh, rank as u64) as usize, expect_slab(nh, rank as u64 + 1) as usize);
    let h = ck.state.table("history").unwrap_or_else(|| fail(rank, "no history table"));
    let slab_ok = h.keys[..] == all.keys[ha..hb] && h.u[..] == all.u[3 * ha..3 * hb] && h.f[..] == all.f[4 * ha..4 * hb];
    if ck.state.version != 7 || !slab_ok {
        fail(rank, &format!("history slab differs: version {}, {} records", ck.state.version, h.len()));
    }
    match ck.state.table("empty") {
        Some(e) if e.is_empty() && (e.n_u, e.n_f) == (1, 2) => {}
        other => fail(rank, &format!("empty table: {other:?}")),
    }
    if ck.step != 10 || ck.time != 10.0 * 1e-3 || ck.dt != 1e-3 || ck.config_text != scene().config_text || ck.solver != "dem" || ck.dim != 3 {
        fail(rank, "scalars differ");
    }
    let sc = scene();
    if ck.shape_names != sc.shape_names || ck.shapes.len() != 3 {
        fail(rank, "shape names differ");
    }
    match (&ck.shapes[0], &ck.shapes[2], &sc.shapes[2]) {
        (Shape::Sphere { radius }, Shape::Mesh(m), Shape::Mesh(m0)) if *radius == 0.5 && **m == **m0 => {}
        _ => fail(rank, "shapes differ"),
    }
    if rank == 0 {
        println!("checkpoint ok: {} bodies, {nh} history entries", ck.n_bodies);
    }
    0
}

fn read<C: Communicator>(comm: &C, path: &Path, n: u64) -> i32 {
    check_checkpoint(comm, path, n)
}

fn redist<C: Communicator>(comm: &C, n: u64) -> i32 {
    let (rank, size) = (comm.rank(), comm.size());
    // Keys with duplicates and a wide range; rank-dependent counts.
    let mut recs = FlatRecords::new(2, 1);
    let count = n + rank as u64 * 3;
    for k in 0..count {
        let key = (k * 7919 + rank as u64 * 104_729) % 1000 * 1_000_000_007;
        recs.push(key, &[key, rank as u64], &[k as f64]);
    }
    // Keep one rank empty when possible.
    if size > 2 && rank == 1 {
        recs = FlatRecords::new(2, 1);
    }
    let local_n = recs.len() as u64;
    let mut local_keys = recs.keys.clone();
    let out = io::redistribute_sorted(comm, recs);
    let mut total = 0u64;
    comm.all_reduce_into(&local_n, &mut total, mpi::collective::SystemOperation::sum());
    if out.total != total {
        fail(rank, &format!("total {} != {}", out.total, total));
    }
    // Gather everything and check global order and contiguity.
    let mut counts = vec![0u64; size as usize];
    comm.all_gather_into(&(out.records.len() as u64), &mut counts[..]);
    let off: u64 = counts[..rank as usize].iter().sum();
    if off != out.offset {
        fail(rank, "offset mismatch");
    }
    let counts_i: Vec<i32> = counts.iter().map(|&c| c as i32).collect();
    let displs: Vec<i32> = counts_i.iter().scan(0, |a, &c| { let d = *a; *a += c; Some(d) }).collect();
    let mut all = vec![0u64; total as usize];
    {
        let mut part = mpi::datatype::PartitionMut::new(&mut all[..], &counts_i[..], &displs[..]);
        comm.all_gather_varcount_into(&out.records.keys[..], &mut part);
    }
    if all.windows(2).any(|w| w[0] > w[1]) {
        fail(rank, "keys not globally sorted");
    }
    for i in 0..out.records.len() {
        if out.records.u_row(i)[0] != out.records.keys[i] {
            fail(rank, "fields not moved with their key");
        }
    }
    // Same multiset of keys as the inputs.
    let mut inputs = vec![0u64; total as usize];
    let mut in_counts = vec![0u64; size as usize];
    comm.all_gather_into(&local_n, &mut in_counts[..]);
    let ic: Vec<i32> = in_counts.iter().map(|&c| c as i32).collect();
    let id: Vec<i32> = ic.iter().scan(0, |a, &c| { let d = *a; *a += c; Some(d) }).collect();
    local_keys.sort();
    {
        let mut part = mpi::datatype::PartitionMut::new(&mut inputs[..], &ic[..], &id[..]);
        comm.all_gather_varcount_into(&local_keys[..], &mut part);
    }
    inputs.sort();
    if inputs != all {
        fail(rank, "keys lost or duplicated");
    }
    if rank == 0 {
        println!("redistribute ok: {total} records");
    }
    0
}
