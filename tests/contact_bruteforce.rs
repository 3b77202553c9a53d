//! Contact detection (stage 2) against O(N²) brute force: broad phase +
//! narrow phase must find exactly the contacts an all-pairs search finds.
use stiffgrain::scene::generate::SplitMix64;
use nalgebra::{Matrix3, UnitQuaternion, Vector3};
use std::sync::Arc;
use stiffgrain::body::{Bodies, Body, Shape, TriMesh, DOF_ALL, DOF_NONE};
use stiffgrain::contact::{
    detect, narrow_phase, narrow_phase_wall, ContactShapes, Contacts, DetectParams, VerletList, WALL_ID_BASE,
};
use stiffgrain::scene::Wall;

/// The scene generators' deterministic generator, with the draws these tests need.
struct Rng(SplitMix64);

impl Rng {
    /// Uniform in [0, 1).
    fn f64(&mut self) -> f64 {
        self.0.uniform()
    }
    /// Uniform in [lo, hi).
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
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.0.next_u64() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

fn body(id: u64, shape: u32, position: Vector3<f64>, orientation: UnitQuaternion<f64>, fixed: bool) -> Body {
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
        fixed,
        dof_mask: if fixed { DOF_NONE } else { DOF_ALL },
    }
}

/// Six inward walls around `[lo, hi]`.
fn box_walls(lo: Vector3<f64>, hi: Vector3<f64>) -> Vec<Wall> {
    let mut walls = Vec::new();
    for k in 0..3 {
        let mut n = Vector3::zeros();
        n[k] = 1.0;
        walls.push(Wall::new(lo, n, 0));
        walls.push(Wall::new(hi, -n, 0));
    }
    walls
}

/// A loose jittered lattice of `nx × ny × nz` spheres of radii in
/// `[r, 2r)` (one shape per sphere), in random local order with shuffled ids,
/// some fixed, inside six walls.
fn sphere_pack(rng: &mut Rng, n: [usize; 3], r: f64) -> (Bodies, Vec<Shape>, Vec<Wall>) {
    let a = 3.4 * r;
    let mut cells = Vec::new();
    for i in 0..n[0] {
        for j in 0..n[1] {
            for k in 0..n[2] {
                cells.push(Vector3::new(i as f64, j as f64, k as f64) * a);
            }
        }
    }
    rng.shuffle(&mut cells);
    let mut ids: Vec<u64> = (0..cells.len() as u64).map(|i| 3 * i + 7).collect();
    rng.shuffle(&mut ids);
    let mut bodies = Bodies::new();
    let mut shapes = Vec::new();
    for (k, c) in cells.iter().enumerate() {
        let jitter = Vector3::new(rng.range(-0.3, 0.3), rng.range(-0.3, 0.3), rng.range(-0.3, 0.3)) * r;
        shapes.push(Shape::Sphere { radius: rng.range(r, 2.0 * r) });
        let fixed = rng.f64() < 0.05;
        bodies.push(body(ids[k], k as u32, c + jitter, UnitQuaternion::identity(), fixed));
    }
    let ext = Vector3::new(n[0] as f64 - 1.0, n[1] as f64 - 1.0, n[2] as f64 - 1.0) * a;
    let walls = box_walls(Vector3::repeat(-2.0 * r), ext + Vector3::repeat(2.0 * r));
    (bodies, shapes, walls)
}

fn radius(shapes: &[Shape], bodies: &Bodies, i: usize) -> f64 {
    match &shapes[bodies.shape[i] as usize] {
        Shape::Sphere { radius } => *radius,
        Shape::Mesh(_) => unreachable!("spheres only"),
    }
}

/// Analytic all-pairs contacts of a sphere scene, keyed by (a, b) ids, kept
/// when the smaller-id body (or the wall's body) has local index < n_owned.
fn brute_spheres(bodies: &Bodies, shapes: &[Shape], walls: &[Wall], cd: f64, n_owned: usize) -> Vec<((u64, u64), f64)> {
    let n = bodies.len();
    let mut v = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if bodies.fixed[i] && bodies.fixed[j] {
                continue;
            }
            let gap = (bodies.position[i] - bodies.position[j]).norm() - radius(shapes, bodies, i) - radius(shapes, bodies, j);
            let owner = if bodies.id[i] < bodies.id[j] { i } else { j };
            if gap < cd && owner < n_owned {
                v.push(((bodies.id[i].min(bodies.id[j]), bodies.id[i].max(bodies.id[j])), gap));
            }
        }
        if bodies.fixed[i] || i >= n_owned {
            continue;
        }
        for (w, wall) in walls.iter().enumerate() {
            let gap = (bodies.position[i] - wall.point).dot(&wall.normal) - radius(shapes, bodies, i);
            if gap < cd {
                v.push(((bodies.id[i], WALL_ID_BASE + w as u64), gap));
            }
        }
    }
    v.sort_by_key(|x| x.0);
    v
}

fn keyed(out: &Contacts) -> Vec<((u64, u64), f64)> {
    let mut v: Vec<_> = out.iter().map(|c| ((c.a, c.b), c.gap)).collect();
    v.sort_by_key(|x| x.0);
    v
}

fn assert_same(found: &[((u64, u64), f64)], expected: &[((u64, u64), f64)]) {
    let fk: Vec<_> = found.iter().map(|x| x.0).collect();
    let ek: Vec<_> = expected.iter().map(|x| x.0).collect();
    if fk != ek {
        let missing: Vec<_> = ek.iter().filter(|k| !fk.contains(k)).take(10).collect();
        let extra: Vec<_> = fk.iter().filter(|k| !ek.contains(k)).take(10).collect();
        panic!("contact sets differ: {} found, {} expected; missing {missing:?}; extra {extra:?}", fk.len(), ek.len());
    }
    for (f, e) in found.iter().zip(expected) {
        assert!((f.1 - e.1).abs() <= 1e-12, "gap of {:?}: {} vs brute force {}", f.0, f.1, e.1);
    }
}

/// Every contact obeys the conventions: a < b, unit normal, lever arms.
fn assert_conventions(bodies: &Bodies, out: &Contacts) {
    for c in out.iter() {
        assert!(c.a < c.b);
        assert!((c.normal.norm() - 1.0).abs() < 1e-12);
        assert_eq!(bodies.id[c.ia], c.a);
        assert!((c.r_a - (c.point - bodies.position[c.ia])).norm() < 1e-12);
        if c.is_wall() {
            assert_eq!(c.ib, usize::MAX);
        } else {
            assert_eq!(bodies.id[c.ib], c.b);
            assert!((c.r_b - (c.point - bodies.position[c.ib])).norm() < 1e-12);
        }
    }
}

const PARAMS: DetectParams = DetectParams { entity_lists: true, ..DetectParams::new(0.1, 0.05) };

#[test]
fn random_sphere_pack_matches_brute_force() {
    let mut rng = Rng(SplitMix64::new(2024));
    let (bodies, shapes, walls) = sphere_pack(&mut rng, [17, 17, 18], 0.5);
    assert!(bodies.len() >= 5000);
    let cs = ContactShapes::new(&shapes);
    let mut verlet = VerletList::new();
    let mut out = Contacts::new();
    let n = bodies.len();
    assert!(detect(&bodies, n, &cs, &walls, &PARAMS, None, &mut verlet, &mut out));
    let expected = brute_spheres(&bodies, &shapes, &walls, PARAMS.contact_distance, n);
    assert!(expected.len() > 2000, "the pack should have many contacts, has {}", expected.len());
    assert!(expected.iter().any(|x| x.1 < 0.0) && expected.iter().any(|x| x.1 > 0.0));
    assert!(expected.iter().filter(|x| x.0 .1 >= WALL_ID_BASE).count() > 100);
    assert_same(&keyed(&out), &expected);
    assert_conventions(&bodies, &out);
}

#[test]
fn ghosts_keep_only_contacts_whose_smaller_id_is_owned() {
    let mut rng = Rng(SplitMix64::new(7));
    let (bodies, shapes, walls) = sphere_pack(&mut rng, [8, 8, 8], 0.5);
    let cs = ContactShapes::new(&shapes);
    let n_owned = bodies.len() / 2;
    let mut verlet = VerletList::new();
    let mut out = Contacts::new();
    detect(&bodies, n_owned, &cs, &walls, &PARAMS, None, &mut verlet, &mut out);
    let expected = brute_spheres(&bodies, &shapes, &walls, PARAMS.contact_distance, n_owned);
    let all = brute_spheres(&bodies, &shapes, &walls, PARAMS.contact_distance, bodies.len());
    assert!(expected.len() > 50 && expected.len() < all.len());
    assert_same(&keyed(&out), &expected);
}

#[test]
fn verlet_list_is_reused_for_small_moves_and_rebuilt_after_a_big_one() {
    let mut rng = Rng(SplitMix64::new(99));
    let (mut bodies, shapes, walls) = sphere_pack(&mut rng, [12, 12, 12], 0.5);
    let cs = ContactShapes::new(&shapes);
    let n = bodies.len();
    let mut verlet = VerletList::new();
    let mut out = Contacts::new();
    detect(&bodies, n, &cs, &walls, &PARAMS, None, &mut verlet, &mut out);
    assert_eq!(verlet.builds(), 1);
    // Every free body moves by just under half the skin: list reused.
    for i in 0..n {
        if !bodies.fixed[i] {
            bodies.position[i] += rng.unit_vector() * (0.499 * PARAMS.skin);
        }
    }
    assert!(!verlet.needs_rebuild(&bodies.position));
    assert!(!detect(&bodies, n, &cs, &walls, &PARAMS, None, &mut verlet, &mut out));
    assert_eq!(verlet.builds(), 1);
    let expected = brute_spheres(&bodies, &shapes, &walls, PARAMS.contact_distance, n);
    assert_same(&keyed(&out), &expected);
    // One body moves more than half the skin: rebuild, still exact.
    let k = (0..n).find(|&i| !bodies.fixed[i]).unwrap();
    bodies.position[k] += Vector3::new(0.6 * PARAMS.skin, 0.0, 0.0);
    assert!(verlet.needs_rebuild(&bodies.position));
    assert!(detect(&bodies, n, &cs, &walls, &PARAMS, None, &mut verlet, &mut out));
    assert_eq!(verlet.builds(), 2);
    assert_same(&keyed(&out), &brute_spheres(&bodies, &shapes, &walls, PARAMS.contact_distance, n));
    // A changed local numbering (migration) forces a rebuild too.
    let mut swapped = bodies.clone();
    swapped.id.swap(0, 1);
    assert!(verlet.is_stale(&swapped, &walls, &PARAMS));
}

/// All-pairs narrow phase (any shapes), with both-fixed pairs skipped.
fn brute_narrow(bodies: &Bodies, cs: &ContactShapes, walls: &[Wall]) -> Contacts {
    let mut out = Contacts::new();
    for i in 0..bodies.len() {
        for j in i + 1..bodies.len() {
            if !(bodies.fixed[i] && bodies.fixed[j]) {
                narrow_phase(i, j, bodies, cs, &PARAMS, &mut out);
            }
        }
        if !bodies.fixed[i] {
            for w in 0..walls.len() {
                narrow_phase_wall(i, w, bodies, cs, walls, &PARAMS, &mut out);
            }
        }
    }
    out.sort_canonical();
    out
}

#[test]
fn long_mesh_with_spheres_resting_along_it() {
    // A 100 × 1 × 1 box (bounding radius ~50) among spheres of radius 0.5.
    let mut shapes = vec![Shape::Sphere { radius: 0.5 }, Shape::Mesh(Arc::new(TriMesh::cuboid(Vector3::new(100.0, 1.0, 1.0))))];
    shapes.push(Shape::Sphere { radius: 0.45 });
    let mut bodies = Bodies::new();
    let mesh_id = 60;
    let mut id = 0;
    let mut next_id = || {
        id += 1;
        if id == mesh_id {
            id += 1;
        }
        id
    };
    // Row on top (touching the mesh, spaced 1.2 apart: no sphere–sphere
    // contact) and a row on the +y side at a 0.02 gap.
    for k in 0..80 {
        let x = -47.4 + 1.2 * k as f64;
        bodies.push(body(next_id(), 0, Vector3::new(x, 0.0, 1.0), UnitQuaternion::identity(), false));
        bodies.push(body(next_id(), 0, Vector3::new(x, 1.02, 0.0), UnitQuaternion::identity(), false));
    }
    // A cloud of small spheres well away from the mesh.
    for k in 0..400 {
        let p = Vector3::new((k % 20) as f64, ((k / 20) % 20) as f64, 10.0) * 1.5;
        bodies.push(body(next_id(), 2, p, UnitQuaternion::identity(), false));
    }
    bodies.push(body(mesh_id, 1, Vector3::zeros(), UnitQuaternion::identity(), true));
    let walls = vec![Wall::new(Vector3::new(0.0, 0.0, -0.5), Vector3::z(), 0)];
    let cs = ContactShapes::new(&shapes);
    let mut verlet = VerletList::new();
    let mut out = Contacts::new();
    detect(&bodies, bodies.len(), &cs, &walls, &PARAMS, None, &mut verlet, &mut out);
    let mesh_idx = bodies.len() - 1;
    let mut with_mesh = 0;
    for c in out.iter() {
        if c.a == mesh_id || c.b == mesh_id {
            with_mesh += 1;
            let other = if c.a == mesh_id { c.ib } else { c.ia };
            let x = bodies.position[other];
            let outward = if x.z > 0.9 { Vector3::z() } else { Vector3::y() };
            let expect_gap = if x.z > 0.9 { 0.0 } else { 0.02 };
            assert!((c.gap - expect_gap).abs() < 1e-12, "gap {} for sphere at {x:?}", c.gap);
            // Normal from a to b: outward when the mesh is a.
            let n = if c.a == mesh_id { outward } else { -outward };
            assert!((c.normal - n).norm() < 1e-12, "normal {:?} for sphere at {x:?}", c.normal);
            assert_eq!(if c.a == mesh_id { c.ia } else { c.ib }, mesh_idx);
        }
    }
    assert_eq!(with_mesh, 160);
    // Side-row spheres (centre at z = 0) touch the floor at gap 0.
    assert_eq!(out.iter().filter(|c| c.is_wall()).count(), 80);
    // And nothing else: compare the whole set with all-pairs narrow phase.
    out.sort_canonical();
    assert_eq!(out, brute_narrow(&bodies, &cs, &walls));
}

#[test]
fn mixed_spheres_and_rotated_cubes_match_all_pairs() {
    let mut rng = Rng(SplitMix64::new(31337));
    let (mut bodies, mut shapes, walls) = sphere_pack(&mut rng, [10, 10, 10], 0.5);
    let cube = shapes.len() as u32;
    shapes.push(Shape::Mesh(Arc::new(TriMesh::cuboid(Vector3::new(1.4, 1.2, 1.0)))));
    for i in 0..bodies.len() {
        if rng.f64() < 0.25 {
            bodies.shape[i] = cube;
            let axis = nalgebra::Unit::new_normalize(rng.unit_vector());
            bodies.orientation[i] = UnitQuaternion::from_axis_angle(&axis, rng.range(0.0, 3.0));
        }
    }
    let cs = ContactShapes::new(&shapes);
    let mut verlet = VerletList::new();
    let mut out = Contacts::new();
    detect(&bodies, bodies.len(), &cs, &walls, &PARAMS, None, &mut verlet, &mut out);
    assert_conventions(&bodies, &out);
    out.sort_canonical();
    let expected = brute_narrow(&bodies, &cs, &walls);
    let sphere_mesh = expected.iter().filter(|c| !c.is_wall() && (bodies.shape[c.ia] == cube) != (bodies.shape[c.ib] == cube)).count();
    let mesh_wall = expected.iter().filter(|c| c.is_wall() && bodies.shape[c.ia] == cube).count();
    assert!(sphere_mesh > 50 && mesh_wall > 10, "{sphere_mesh} sphere–mesh, {mesh_wall} mesh–wall contacts");
    assert_eq!(out, expected);
}
