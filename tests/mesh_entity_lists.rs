//! Second-level (sub-region) Verlet lists for mesh–mesh pairs (stage 2,
//! Gay Neto & Wriggers §2.5): the contacts found through the lists equal
//! those of the exhaustive per-pair search on random packs of rotated cubes
//! and tetrapods, after moves within the list budget (no rebuild) and beyond
//! it (rebuild), on one and two ranks.
mod common;
use stiffgrain::scene::generate::SplitMix64;
use nalgebra::{Matrix3, Unit, UnitQuaternion, Vector3};
use std::collections::BTreeMap;
use std::sync::Arc;
use stiffgrain::body::{Bodies, Body, Shape, TriMesh, DOF_ALL};
use stiffgrain::contact::mesh_mesh::{box_culled_pairs, PosedMesh};
use stiffgrain::contact::{detect, narrow_phase, BodyDepths, BodyPose, ContactShapes, Contacts, DetectParams, VerletList};

/// The scene generators' deterministic generator, with the draws these tests need.
struct Rng(SplitMix64);

impl Rng {
    fn f64(&mut self) -> f64 {
        self.0.uniform()
    }
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.f64()
    }
    fn unit_vector(&mut self) -> Vector3<f64> {
        loop {
            let v = Vector3::new(self.range(-1.0, 1.0), self.range(-1.0, 1.0), self.range(-1.0, 1.0));
            let n = v.norm();
            if n > 0.1 && n <= 1.0 {
                return v / n;
            }
        }
    }
    fn rotation(&mut self, max_angle: f64) -> UnitQuaternion<f64> {
        UnitQuaternion::from_axis_angle(&Unit::new_normalize(self.unit_vector()), self.range(0.0, max_angle))
    }
}

fn shapes() -> Vec<Shape> {
    vec![
        Shape::Mesh(Arc::new(TriMesh::cuboid(Vector3::new(1.0, 0.9, 0.8)))),
        Shape::Mesh(Arc::new(TriMesh::tetrapod(0.9, 0.22, 6))),
    ]
}

fn body(id: u64, shape: u32, position: Vector3<f64>, orientation: UnitQuaternion<f64>) -> Body {
    Body {
        id,
        shape,
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

/// Cubes and tetrapods on a jittered lattice of spacing 1.3 (their bounding
/// spheres, radii about 0.78 and 0.9, overlap; surfaces cross), random orientations, ids
/// scattered (odd ids, reversed order) so the smaller id is not the smaller
/// index.
fn pack(rng: &mut Rng, n: [usize; 3]) -> Bodies {
    let mut bodies = Bodies::new();
    let total = (n[0] * n[1] * n[2]) as u64;
    let mut k = 0;
    for i in 0..n[0] {
        for j in 0..n[1] {
            for l in 0..n[2] {
                let x = Vector3::new(i as f64, j as f64, l as f64) * 1.3 + rng.unit_vector() * 0.1;
                let shape = (rng.f64() < 0.5) as u32;
                bodies.push(body(2 * (total - k) + 1, shape, x, rng.rotation(std::f64::consts::PI)));
                k += 1;
            }
        }
    }
    bodies
}

/// All-pairs exhaustive narrow phase, contacts of pairs whose smaller-id body
/// has local index below `n_owned`.
fn exhaustive(bodies: &Bodies, cs: &ContactShapes, params: &DetectParams, n_owned: usize) -> Contacts {
    let mut out = Contacts::new();
    for i in 0..bodies.len() {
        for j in i + 1..bodies.len() {
            let owner = if bodies.id[i] < bodies.id[j] { i } else { j };
            if owner < n_owned {
                narrow_phase(i, j, bodies, cs, params, &mut out);
            }
        }
    }
    out.sort_canonical();
    out
}

fn listed(bodies: &Bodies, cs: &ContactShapes, params: &DetectParams, verlet: &mut VerletList, n_owned: usize) -> Contacts {
    listed_at(bodies, cs, params, None, verlet, n_owned)
}

/// [`listed`] with per-body closed depths.
fn listed_at(bodies: &Bodies, cs: &ContactShapes, params: &DetectParams, depths: Option<&[f64]>, verlet: &mut VerletList, n_owned: usize) -> Contacts {
    let mut out = Contacts::new();
    detect(bodies, n_owned, cs, &[], params, depths, verlet, &mut out);
    out.sort_canonical();
    out
}

/// Counts of contacts by the kind tag of (sub_a, sub_b): 0 face, 1 edge, 2 vertex.
fn kinds(c: &Contacts) -> BTreeMap<(u32, u32), usize> {
    let mut m = BTreeMap::new();
    for k in c.iter() {
        *m.entry(((k.sub_a >> 30).min(k.sub_b >> 30), (k.sub_a >> 30).max(k.sub_b >> 30))).or_insert(0) += 1;
    }
    m
}

const PARAMS: DetectParams = DetectParams { entity_lists: true, ..DetectParams::new(0.1, 0.05) };

#[test]
fn lists_give_the_exhaustive_contacts_on_random_cubes_and_tetrapods() {
    let cs = ContactShapes::new(&shapes());
    let off = DetectParams { entity_lists: false, ..PARAMS };
    for seed in [1, 2, 3] {
        let mut rng = Rng(SplitMix64::new(seed));
        let bodies = pack(&mut rng, [4, 4, 4]);
        let n = bodies.len();
        let expected = exhaustive(&bodies, &cs, &PARAMS, n);
        let mut verlet = VerletList::new();
        let found = listed(&bodies, &cs, &PARAMS, &mut verlet, n);
        let k = kinds(&expected);
        eprintln!("seed {seed}: {} contacts by kind {k:?}", expected.len());
        assert!(expected.len() > 100, "the pack should have many mesh–mesh contacts, has {}", expected.len());
        // Vertex–face, edge–edge and vertex–edge all occur.
        assert!(k.get(&(0, 2)).copied().unwrap_or(0) > 10 && k.get(&(1, 1)).copied().unwrap_or(0) > 10, "{k:?}");
        assert!(k.get(&(1, 2)).copied().unwrap_or(0) > 0, "{k:?}");
        assert_eq!(found, expected, "seed {seed}: lists differ from the exhaustive search");
        assert_eq!(listed(&bodies, &cs, &off, &mut VerletList::new(), n), expected);
        // The lists hold a small part of all entity pairs (the exhaustive
        // search tests all of them, by world boxes, at every step).
        let lists = verlet.entity_lists();
        let (mut culled, mut all) = (0, 0);
        for &(i, j) in verlet.pairs() {
            let (pi, pj) = (BodyPose::of(&bodies, i), BodyPose::of(&bodies, j));
            let (p, q) = if pi.id < pj.id { (pi, pj) } else { (pj, pi) };
            let (Shape::Mesh(m), Shape::Mesh(l)) = (cs.shape(bodies.shape[p.index]), cs.shape(bodies.shape[q.index])) else { unreachable!() };
            let (fm, fl) = (cs.features(bodies.shape[p.index]).unwrap(), cs.features(bodies.shape[q.index]).unwrap());
            let (a, b) = (PosedMesh::new(&p, m, fm), PosedMesh::new(&q, l, fl));
            culled += box_culled_pairs(&a, &b, PARAMS.inflation()).len();
            let count = |m: &TriMesh, f: &stiffgrain::geometry::MeshFeatures| {
                let v = (0..m.vertices.len() as u32).filter(|&v| f.is_real_vertex(v)).count();
                let e = (0..f.edges.len() as u32).filter(|&e| f.is_real_edge(e)).count();
                (v, e, m.triangles.len())
            };
            let ((va, ea, ta), (vb, eb, tb)) = (count(m, fm), count(l, fl));
            all += va * tb + ta * vb + ea * eb + va * eb + ea * vb + va * vb;
        }
        eprintln!(
            "seed {seed}: {} body pairs; entity pairs: {} in the lists, {culled} in overlapping world boxes, {all} in all",
            verlet.pairs().len(),
            lists.evaluated()
        );
        assert_eq!(lists.len(), verlet.pairs().len());
        assert!(50 * lists.evaluated() < all as u64);
        // Ghosts: only the contacts whose smaller-id body is owned.
        let half = n / 2;
        let expected = exhaustive(&bodies, &cs, &PARAMS, half);
        assert!(!expected.is_empty());
        assert_eq!(listed(&bodies, &cs, &PARAMS, &mut VerletList::new(), half), expected);
    }
}

#[test]
fn lists_survive_moves_within_the_budget_and_are_rebuilt_beyond_it() {
    let cs = ContactShapes::new(&shapes());
    let radius = |b: &Bodies, i: usize| cs.bounding_radius(b.shape[i]);
    let mut rng = Rng(SplitMix64::new(11));
    let start = pack(&mut rng, [4, 4, 3]);
    let n = start.len();
    let mut verlet = VerletList::new();
    let first = listed(&start, &cs, &PARAMS, &mut verlet, n);
    assert_eq!(first, exhaustive(&start, &cs, &PARAMS, n));
    let (level1, level2) = (verlet.builds(), verlet.entity_lists().builds());
    // Perturbations of the start poses, each body by at most 0.2 skin and a
    // rotation of at most 0.2 skin / R: any pair moved by at most 0.8 skin
    // relative to the build, within the budget, so nothing is rebuilt.
    let s = PARAMS.skin;
    let mut changed = 0;
    for _ in 0..8 {
        let mut b = start.clone();
        for i in 0..n {
            b.position[i] += rng.unit_vector() * rng.range(0.0, 0.2 * s);
            b.orientation[i] = rng.rotation(0.2 * s / radius(&b, i)) * b.orientation[i];
        }
        let found = listed(&b, &cs, &PARAMS, &mut verlet, n);
        assert_eq!(found, exhaustive(&b, &cs, &PARAMS, n));
        assert_eq!((verlet.builds(), verlet.entity_lists().builds()), (level1, level2), "nothing is rebuilt within the budget");
        changed += (found.iter().map(|c| (c.a, c.b, c.sub_a, c.sub_b)).collect::<Vec<_>>()
            != first.iter().map(|c| (c.a, c.b, c.sub_a, c.sub_b)).collect::<Vec<_>>()) as usize;
    }
    assert!(changed >= 4, "the moves should change the contact sets ({changed} of 8 did)");
    // Rotations alone beyond the budget: the first level is still valid
    // (centres did not move), the entity lists are rebuilt.
    let mut b = start.clone();
    for i in 0..n {
        b.orientation[i] = rng.rotation(3.0 * s / radius(&b, i)) * b.orientation[i];
    }
    assert_eq!(listed(&b, &cs, &PARAMS, &mut verlet, n), exhaustive(&b, &cs, &PARAMS, n));
    assert_eq!(verlet.builds(), level1);
    assert!(verlet.entity_lists().builds() > level2 + 10, "{} entity-list builds", verlet.entity_lists().builds() - level2);
    // A trajectory: random velocities and spins, 40 steps; lists are reused
    // and rebuilt (both levels) along the way, contacts exact at every step.
    let mut b = start.clone();
    let v: Vec<Vector3<f64>> = (0..n).map(|_| rng.unit_vector() * rng.range(0.0, 0.03)).collect();
    let w: Vec<Vector3<f64>> = (0..n).map(|i| rng.unit_vector() * rng.range(0.0, 0.03) / radius(&b, i)).collect();
    let (l1, l2) = (verlet.builds(), verlet.entity_lists().builds());
    let mut total = 0;
    for _ in 0..40 {
        for i in 0..n {
            b.position[i] += v[i];
            b.orientation[i] = UnitQuaternion::from_scaled_axis(w[i]) * b.orientation[i];
        }
        let found = listed(&b, &cs, &PARAMS, &mut verlet, n);
        assert_eq!(found, exhaustive(&b, &cs, &PARAMS, n));
        total += found.len();
    }
    let (l1, l2) = (verlet.builds() - l1, verlet.entity_lists().builds() - l2);
    eprintln!("trajectory: {total} contacts over 40 steps, {l1} first-level and {l2} entity-list builds");
    assert!(l1 >= 3 && l2 > 0 && total > 40 * 50);
}

/// The contacts with gap > 0 (what the DEM keeps) and those with gap ≤ 0.
fn open_and_closed(c: &Contacts) -> (Vec<stiffgrain::contact::Contact>, Vec<stiffgrain::contact::Contact>) {
    c.iter().partition(|k| k.gap > 0.0)
}

/// The DEM's closed depth (`mesh_depth`, [`DetectParams::mesh_reach`]) on a
/// moving pack of crossing cubes and tetrapods: at every step of a
/// trajectory the open contacts are those of the full depth, bit for bit;
/// the closed ones are a part of them; lists and the exhaustive search
/// agree at each depth; and the lists hand far fewer entity pairs to the
/// narrow phase. The same for per-body depths ([`BodyDepths`], a pair
/// seeking down to the sum of its bodies'), mixed shallow and deep: each
/// pair then finds the closed contacts of its own depth.
#[test]
fn closed_depth_keeps_the_open_contacts_on_a_moving_pack() {
    let cs = ContactShapes::new(&shapes());
    let mut rng = Rng(SplitMix64::new(23));
    let mut b = pack(&mut rng, [4, 4, 3]);
    let n = b.len();
    let radius = |b: &Bodies, i: usize| cs.bounding_radius(b.shape[i]);
    let v: Vec<Vector3<f64>> = (0..n).map(|_| rng.unit_vector() * rng.range(0.0, 0.02)).collect();
    let w: Vec<Vector3<f64>> = (0..n).map(|i| rng.unit_vector() * rng.range(0.0, 0.02) / radius(&b, i)).collect();
    // Per body: none, or half of the deep 0.08.
    let per_body = BodyDepths { by_id: (0..n).filter(|i| i % 3 == 0).map(|i| (b.id[i], 0.04)).collect(), default: 0.0 };
    let depths = [None, Some(0.0), Some(0.08), None];
    let mut verlets: Vec<VerletList> = depths.iter().map(|_| VerletList::new()).collect();
    let (mut open_total, mut closed_full, mut closed_shallow, mut closed_mixed) = (0, 0, 0, 0);
    for step in 0..30 {
        let mut found = Vec::new();
        for (k, (d, verlet)) in depths.iter().zip(&mut verlets).enumerate() {
            let params = DetectParams { mesh_depth: *d, ..PARAMS };
            if k == 3 {
                let local = per_body.local(&b);
                found.push(listed_at(&b, &cs, &params, Some(&local), verlet, n));
                continue;
            }
            let c = listed(&b, &cs, &params, verlet, n);
            assert_eq!(c, exhaustive(&b, &cs, &params, n), "step {step}, depth {d:?}: lists differ from the exhaustive search");
            found.push(c);
        }
        let (open, closed) = open_and_closed(&found[0]);
        for (d, c) in depths.iter().zip(&found).skip(1) {
            let (o, cl) = open_and_closed(c);
            assert!(o == open, "step {step}, depth {d:?}: the open contacts differ from the full depth's");
            assert!(cl.iter().all(|k| closed.contains(k)), "step {step}, depth {d:?}: a closed contact the full depth did not find");
        }
        // Per body: a pair finds the closed contacts of its own depth, those
        // of the one depth that equals its sum.
        let (shallow, deep) = (open_and_closed(&found[1]).1, open_and_closed(&found[2]).1);
        let mixed = open_and_closed(&found[3]).1;
        let depth_of = |k: &stiffgrain::contact::Contact| per_body.of(k.a) + per_body.of(k.b);
        for k in &mixed {
            assert!(depth_of(k) > 0.0 || shallow.contains(k), "step {step}: a shallow pair's closed contact the shallow depth did not find");
        }
        for k in shallow.iter().chain(deep.iter().filter(|k| depth_of(k) >= 0.08)) {
            assert!(mixed.contains(k), "step {step}: per-body depths missed a closed contact of their depth");
        }
        open_total += open.len();
        closed_full += closed.len();
        closed_shallow += shallow.len();
        closed_mixed += mixed.len();
        for i in 0..n {
            b.position[i] += v[i];
            b.orientation[i] = UnitQuaternion::from_scaled_axis(w[i]) * b.orientation[i];
        }
    }
    let evaluated: Vec<u64> = verlets.iter().map(|l| l.entity_lists().evaluated()).collect();
    eprintln!("30 steps: {open_total} open contacts; closed {closed_full} at full depth, {closed_shallow} at the DEM's, {closed_mixed} per body; entity pairs evaluated {evaluated:?}");
    assert!(open_total > 30 * 25, "{open_total} open contacts");
    assert!(closed_full > closed_shallow + 100, "the full depth should find many more closed pairs: {closed_full} vs {closed_shallow}");
    assert!(closed_shallow < closed_mixed && closed_mixed < closed_full, "per-body depths between the shallow and the full: {closed_mixed}");
    assert!(2 * evaluated[1] < evaluated[0], "entity pairs evaluated: {evaluated:?}");
}

/// (a, b, sub_a, sub_b) -> gap of one frame's contacts.
type ContactSet = BTreeMap<(u64, u64, u32, u32), f64>;

fn contact_set(file: &std::path::Path, frame: &str) -> ContactSet {
    let f = hdf5::File::open(file).unwrap();
    let c = f.group(&format!("frames/{frame}/contacts")).unwrap();
    let u = |n: &str| c.dataset(n).unwrap().read_raw::<u64>().unwrap();
    let s = |n: &str| c.dataset(n).unwrap().read_raw::<u32>().unwrap();
    let (a, b, sa, sb) = (u("body_a"), u("body_b"), s("sub_a"), s("sub_b"));
    let gap = c.dataset("gap").unwrap().read_raw::<f64>().unwrap();
    let mut out = BTreeMap::new();
    for k in 0..a.len() {
        assert!(out.insert((a[k], b[k], sa[k], sb[k]), gap[k]).is_none(), "contact {k} reported twice");
    }
    out
}

fn frames(file: &std::path::Path) -> Vec<String> {
    let f = hdf5::File::open(file).unwrap();
    let mut names = f.group("frames").unwrap().member_names().unwrap();
    names.sort();
    names
}

/// A DEM scene of cubes and tetrapods on a 6 × 3 × 2 lattice drifting and
/// spinning freely (no gravity): orientations are drawn until no pair has a
/// gap below 0.05 (checked with the exhaustive search and a 0.3 skin, so
/// overlaps are seen as negative gaps), velocities keep every gap above the barrier's 0.005
/// for the whole run, so no force acts and the motion is free flight.
fn drifting_scene(rng: &mut Rng) -> (String, Vec<Vector3<f64>>) {
    let bodies = placed_lattice(rng, [6, 3, 2], 1.6);
    let mut text = String::from(DRIFT_HEAD);
    let mut centres = Vec::new();
    for i in 0..bodies.len() {
        // Speeds: each body moves at most 0.25 × 0.04 = 0.01 and turns a
        // point at radius 0.9 by about 0.25 × 0.04 × 0.9 ≈ 0.009 at most: a
        // gap closes by about 0.038 at most < 0.05 − 0.005.
        let v = rng.unit_vector() * rng.range(0.0, 0.25);
        let w = rng.unit_vector() * rng.range(0.0, 0.25);
        text += &body_entry(&bodies, i, v, w);
        centres.push(bodies.position[i]);
    }
    (text, centres)
}

/// A `[[body]]` entry for body `i` of `bodies` with velocity `v`, spin `w`.
fn body_entry(bodies: &Bodies, i: usize, v: Vector3<f64>, w: Vector3<f64>) -> String {
    let (x, q) = (bodies.position[i], bodies.orientation[i]);
    let name = if bodies.shape[i] == 0 { "cube" } else { "tetrapod" };
    format!(
        "\n[[body]]\nshape = \"{name}\"\nposition = [{:.17e}, {:.17e}, {:.17e}]\norientation = [{:.17e}, {:.17e}, {:.17e}, {:.17e}]\nvelocity = [{:.17e}, {:.17e}, {:.17e}]\nangular_velocity = [{:.17e}, {:.17e}, {:.17e}]\n",
        x.x, x.y, x.z, q.w, q.i, q.j, q.k, v.x, v.y, v.z, w.x, w.y, w.z
    )
}

/// Cubes and tetrapods on a `n` lattice of spacing `spacing`, orientations
/// drawn until no pair has a gap below 0.05 (checked with the exhaustive
/// search and a 0.3 skin, so overlaps are seen as negative gaps).
fn placed_lattice(rng: &mut Rng, n: [usize; 3], spacing: f64) -> Bodies {
    let shapes = shapes();
    let cs = ContactShapes::new(&shapes);
    let check = DetectParams { entity_lists: false, ..DetectParams::new(0.3, 0.05) };
    let mut bodies = Bodies::new();
    let mut id = 0;
    for i in 0..n[0] {
        for j in 0..n[1] {
            for k in 0..n[2] {
                let x = Vector3::new(i as f64, j as f64, k as f64) * spacing + rng.unit_vector() * 0.05;
                let shape = (rng.f64() < 0.5) as u32;
                for _ in 0..300 {
                    bodies.push(body(id, shape, x, rng.rotation(std::f64::consts::PI)));
                    let last = bodies.len() - 1;
                    let mut out = Contacts::new();
                    for o in 0..last {
                        narrow_phase(o, last, &bodies, &cs, &check, &mut out);
                    }
                    if out.is_empty() {
                        id += 1;
                        break;
                    }
                    bodies.truncate(last);
                }
            }
        }
    }
    assert!(bodies.len() * 6 >= n[0] * n[1] * n[2] * 5, "only {} bodies placed", bodies.len());
    bodies
}

/// The drifting scene's config, bodies appended.
const DRIFT_HEAD: &str = r#"
[simulation]
solver = "dem"
t_end = 0.04
dt = 0.001
gravity = [0.0, 0.0, 0.0]

[[material]]
name = "m"
density = 1000.0
young = 1.0e7
poisson = 0.3

[[shape]]
name = "cube"
kind = "box"
size = [1.0, 0.9, 0.8]

[[shape]]
name = "tetrapod"
kind = "tetrapod"
arm_length = 0.9
arm_radius = 0.22
segments = 6

[contact]
distance = 0.5
skin = 0.01
ENTITY

[dem]
gbar = 0.005

[output]
dir = "OUTDIR"
every = 10
"#;

#[test]
fn mesh_contacts_are_the_same_on_one_and_two_ranks_with_and_without_lists() {
    let mut rng = Rng(SplitMix64::new(5));
    let (text, centres) = drifting_scene(&mut rng);
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for (np, lists) in [(1, true), (2, true), (1, false), (2, false)] {
        let t = text.replace("ENTITY", &format!("entity_lists = {lists}"));
        let (out, _) = common::run_config(np, dir.path(), &format!("drift-{lists}"), &t);
        let file = out.join("frames.h5");
        let sets: Vec<_> = frames(&file).iter().map(|f| contact_set(&file, f)).collect();
        runs.push(((np, lists), sets));
    }
    let reference = &runs[0].1;
    assert_eq!(reference.len(), 5, "frames 0, 10, ..., 40");
    for (k, set) in reference.iter().enumerate() {
        assert!(set.len() > 20, "frame {k}: only {} contacts", set.len());
        assert!(set.values().all(|&g| g > 0.005 && g < 0.5), "frame {k}: a gap left (0.005, 0.5)");
    }
    assert_ne!(reference[0].keys().collect::<Vec<_>>(), reference[4].keys().collect::<Vec<_>>(), "the contacts should change");
    for ((np, lists), sets) in &runs[1..] {
        for (k, (set, r)) in sets.iter().zip(reference).enumerate() {
            assert_eq!(set.keys().collect::<Vec<_>>(), r.keys().collect::<Vec<_>>(), "frame {k}, {np} ranks, lists {lists}");
            for (key, g) in set {
                assert!((g - r[key]).abs() <= 1e-12, "frame {k}, {np} ranks, lists {lists}: gap of {key:?} {g} vs {}", r[key]);
            }
        }
    }
    // Pairs across the two ranks' boxes: the 2-rank cut is at the middle of
    // the centres' x range (6 columns: between the third and fourth).
    let (lo, hi) = centres.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| (l.min(x.x), h.max(x.x)));
    let mid = 0.5 * (lo + hi);
    let across = reference[0].keys().filter(|k| (centres[k.0 as usize].x < mid) != (centres[k.1 as usize].x < mid)).count();
    eprintln!("{} contacts at frame 0, {across} of them across the cut", reference[0].len());
    assert!(across >= 8, "only {across} contacts between bodies on the two sides of the cut");
}

/// Positions of every frame (rows by body id) and the contact sets.
fn trajectory(file: &std::path::Path) -> Vec<(Vec<f64>, ContactSet)> {
    let f = hdf5::File::open(file).unwrap();
    frames(file)
        .iter()
        .map(|fr| {
            let b = f.group(&format!("frames/{fr}/bodies")).unwrap();
            let (ids, pos) = (b.dataset("id").unwrap().read_raw::<u64>().unwrap(), b.dataset("position").unwrap().read_raw::<f64>().unwrap());
            let mut rows: Vec<(u64, &[f64])> = ids.iter().copied().zip(pos.chunks(3)).collect();
            rows.sort_by_key(|r| r.0);
            (rows.iter().flat_map(|r| r.1.iter().copied()).collect(), contact_set(file, fr))
        })
        .collect()
}

/// The pile of blocks under DEM (mesh–mesh contacts carrying forces, the
/// blocks falling and turning): the run with entity lists is the run without,
/// bit for bit, at every frame.
#[test]
fn pile_of_blocks_runs_bit_for_bit_the_same_with_and_without_lists() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = concat!(env!("CARGO_MANIFEST_DIR"), "/configs/pile-of-blocks.toml");
    let mut runs = Vec::new();
    for lists in [true, false] {
        let out = dir.path().join(format!("out-{lists}"));
        let sets = [format!("output.dir=\"{}\"", out.display()), "simulation.t_end=0.6".to_string(), format!("contact.entity_lists={lists}")];
        let mut args = vec!["run", cfg];
        for s in &sets {
            args.push("--set");
            args.push(s);
        }
        common::mpirun_ok(1, &common::stiffgrain(), &args);
        runs.push(trajectory(&out.join("frames.h5")));
    }
    assert!(runs[0].len() > 10);
    let block_contacts: usize = runs[0].iter().map(|(_, c)| c.keys().filter(|k| k.1 < 1 << 63).count()).sum();
    assert!(block_contacts > 100, "only {block_contacts} block–block contacts over the frames");
    assert!(runs[0] == runs[1], "the runs differ");
}

/// Summary value `key` of a run.
fn summary_u64(out: &std::path::Path, key: &str) -> u64 {
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    s[key].as_u64().unwrap_or_else(|| panic!("summary.json has no integer {key}"))
}

/// The lattice of cubes and tetrapods falling onto the ground and onto each
/// other under the DEM (arms interlock, so closed mesh pairs, projections
/// through an arm or across a concave region, are found and dropped):
/// `[dem] closed_depth = "step"` (closed pairs sought only as deep as a step
/// can close them) gives bit for bit the run of `"skin"` (down to contact
/// distance + skin), contacts and bodies at every frame, on 1 and on 2 ranks,
/// while the search finds far fewer closed pairs.
#[test]
fn dem_closed_depth_step_runs_like_skin_on_one_and_two_ranks() {
    let mut rng = Rng(SplitMix64::new(5));
    let bodies = placed_lattice(&mut rng, [3, 3, 2], 1.3);
    let mut text = DRIFT_HEAD
        .replace("t_end = 0.04", "t_end = 0.2")
        .replace("gravity = [0.0, 0.0, 0.0]", "gravity = [0.0, 0.0, -20.0]")
        .replace("distance = 0.5\nskin = 0.01", "distance = 0.05\nskin = 0.3")
        .replace("gbar = 0.005", "gbar = 0.02\ndamping = 1.0\nCLOSED");
    text += "\n[[wall]]\npoint = [0.0, 0.0, -0.96]\nnormal = [0.0, 0.0, 1.0]\n";
    // Each body heads for the centre of the lattice: they collide within 0.2 s.
    let centre = bodies.position.iter().sum::<Vector3<f64>>() / bodies.len() as f64;
    for i in 0..bodies.len() {
        text += &body_entry(&bodies, i, (centre - bodies.position[i]) * 2.0, Vector3::zeros());
    }
    let dir = tempfile::tempdir().unwrap();
    let mut runs = Vec::new();
    for np in [1, 2] {
        for depth in ["skin", "step"] {
            let t = text.replace("ENTITY", "").replace("CLOSED", &format!("closed_depth = \"{depth}\""));
            let (out, _) = common::run_config(np, dir.path(), &format!("fall-{depth}"), &t);
            let closed = summary_u64(&out, "closed_pairs_dropped");
            eprintln!("{np} rank(s), closed_depth {depth}: {closed} closed pairs dropped, {} steps", summary_u64(&out, "steps"));
            runs.push(((np, depth, closed), trajectory(&out.join("frames.h5"))));
        }
    }
    for pair in runs.chunks(2) {
        let (((np, _, skin), a), ((_, _, step), b)) = (&pair[0], &pair[1]);
        assert!(a.len() > 10, "{np} rank(s): {} frames", a.len());
        let contacts: usize = a.iter().map(|(_, c)| c.keys().filter(|k| k.1 < 1 << 63).count()).sum();
        assert!(contacts > 200, "{np} rank(s): only {contacts} body–body contacts over the frames");
        assert!(*skin > 50 && 4 * step < *skin, "{np} rank(s): closed pairs dropped {skin} (skin) vs {step} (step)");
        assert!(a == b, "{np} rank(s): the runs with closed_depth skin and step differ");
    }
}
