//! Scenes of Gay Neto & Wriggers (Figs. 4, 9) and the hierarchy rules, with
//! finite-difference checks of the gap derivatives.
use super::*;
use approx::assert_relative_eq;
use nalgebra::{UnitQuaternion, Vector3};
use std::f64::consts::FRAC_PI_4;

type Q = UnitQuaternion<f64>;

fn pose(id: u64, x: Vector3<f64>, q: Q) -> BodyPose {
    BodyPose { id, index: id as usize + 10, position: x, orientation: q }
}

struct Body {
    mesh: TriMesh,
    f: MeshFeatures,
}

fn body(mesh: TriMesh) -> Body {
    let f = MeshFeatures::new(&mesh);
    Body { mesh, f }
}

fn cube(s: f64) -> Body {
    body(TriMesh::cuboid(Vector3::repeat(s)))
}

/// The prism of the L-shaped polygon (0,0) (2,0) (2,1) (1,1) (1,2) (0,2),
/// height `h`: one concave vertical edge at (1, 1) (vertices 3 and 9).
fn l_prism(h: f64) -> Body {
    let poly = [(0.0, 0.0), (2.0, 0.0), (2.0, 1.0), (1.0, 1.0), (1.0, 2.0), (0.0, 2.0)];
    let mut vertices: Vec<Vector3<f64>> = poly.iter().map(|&(x, y)| Vector3::new(x, y, 0.0)).collect();
    vertices.extend(poly.iter().map(|&(x, y)| Vector3::new(x, y, h)));
    let fan = [[3, 4, 5], [3, 5, 0], [3, 0, 1], [3, 1, 2]];
    let mut triangles: Vec<[u32; 3]> = fan.iter().map(|t| [t[0], t[2], t[1]]).collect();
    triangles.extend(fan.iter().map(|t| t.map(|i| i + 6)));
    for i in 0..6u32 {
        let j = (i + 1) % 6;
        triangles.push([i, j, j + 6]);
        triangles.push([i, j + 6, i + 6]);
    }
    let m = TriMesh { vertices, triangles };
    m.check().unwrap();
    body(m)
}

/// Orientation turning the body corner (−1,−1,−1) straight down.
fn corner_down() -> Q {
    Q::rotation_between(&Vector3::new(-1.0, -1.0, -1.0), &-Vector3::z()).unwrap()
}

fn detect(a: &Body, pa: &BodyPose, b: &Body, pb: &BodyPose, cd: f64) -> Vec<Contact> {
    let mut out = Contacts::new();
    mesh_mesh(pa, &a.mesh, &a.f, pb, &b.mesh, &b.f, cd, cd + 0.01, &mut out);
    out.iter().collect()
}

fn raw(a: &Body, pa: &BodyPose, b: &Body, pb: &BodyPose, cd: f64) -> Vec<PairHit> {
    mesh_mesh_candidates(&PosedMesh::new(pa, &a.mesh, &a.f), &PosedMesh::new(pb, &b.mesh, &b.f), cd, cd + 0.01)
}

fn kinds(cs: &[Contact]) -> Vec<(u32, u32)> {
    let k = |s: u32| SubRegion::decode(s).map(|r| match r {
        SubRegion::Face(_) => 2,
        SubRegion::Edge(_) => 1,
        SubRegion::Vertex(_) => 0,
    });
    let mut v: Vec<(u32, u32)> = cs.iter().map(|c| (k(c.sub_a).unwrap(), k(c.sub_b).unwrap())).collect();
    v.sort();
    v
}

fn count(hits: &[PairHit], f: impl Fn(&PairHit) -> bool) -> usize {
    hits.iter().filter(|h| f(h)).count()
}

const G: f64 = 0.02;

#[test]
fn offset_cubes_face_to_face_give_vertices_and_edges_at_gap_g() {
    let c = cube(1.0);
    let pa = pose(0, Vector3::zeros(), Q::identity());
    let pb = pose(1, Vector3::new(0.3, 0.2, 1.0 + G), Q::identity());
    let cs = detect(&c, &pa, &c, &pb, 0.05);
    // Fig. 4c: one vertex of each square inside the other, two edge crossings.
    assert_eq!(kinds(&cs), vec![(0, 2), (1, 1), (1, 1), (2, 0)]);
    for k in &cs {
        assert_eq!((k.a, k.b, k.ia, k.ib), (0, 1, 10, 11));
        assert_relative_eq!(k.gap, G, epsilon = 1e-12);
        assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
        assert_relative_eq!(k.point.z, 0.5 + G / 2.0, epsilon = 1e-12);
        assert_relative_eq!(k.r_a, k.point - pa.position, epsilon = 1e-14);
        assert_relative_eq!(k.r_b, k.point - pb.position, epsilon = 1e-14);
    }
    let mut xy: Vec<(i64, i64)> = cs.iter().map(|k| ((k.point.x * 1e6).round() as i64, (k.point.y * 1e6).round() as i64)).collect();
    xy.sort();
    assert_eq!(xy, vec![(-200000, -300000), (-200000, 500000), (500000, -300000), (500000, 500000)]);
    // The same pair seen with ids exchanged: a is still the smaller id.
    let cs2 = detect(&c, &pose(7, pb.position, Q::identity()), &c, &pose(3, pa.position, Q::identity()), 0.05);
    assert_eq!(cs2.len(), 4);
    assert!(cs2.iter().all(|k| k.a == 3 && (k.normal - Vector3::z()).norm() < 1e-12));
    // Farther than the contact distance: nothing.
    assert!(detect(&c, &pa, &c, &pose(1, Vector3::new(0.3, 0.2, 1.06), Q::identity()), 0.05).is_empty());
}

/// A block resting on another rocks by tiny angles: the Fig. 4c set
/// (two vertex–face, two edge–edge) must not change with the sign of
/// the tilt (the edge–edge normal then leaves the edges' arcs by the
/// tilt; with a 1e-9 rad cone tolerance they switched off and the
/// pile of §3.2 rocked forever).
#[test]
fn rocking_block_keeps_its_face_to_face_contacts() {
    let c = cube(1.0);
    let pa = pose(0, Vector3::zeros(), Q::identity());
    let turn = Q::from_axis_angle(&Vector3::z_axis(), 0.08);
    for axis in [Vector3::x(), Vector3::y(), Vector3::new(1.0, 1.0, 0.0).normalize()] {
        for tilt in [-1e-3, -1e-6, 1e-6, 1e-3] {
            let q = Q::from_scaled_axis(axis * tilt) * turn;
            let pb = pose(1, Vector3::new(0.09, 0.06, 1.0 + G), q);
            let cs = detect(&c, &pa, &c, &pb, 0.05);
            assert_eq!(kinds(&cs), vec![(0, 2), (1, 1), (1, 1), (2, 0)], "tilt {tilt} about {axis:?}: {cs:?}");
        }
    }
}

#[test]
fn aligned_cubes_face_to_face_give_four_vertex_pairs() {
    let c = cube(1.0);
    let cs = detect(&c, &pose(0, Vector3::zeros(), Q::identity()), &c, &pose(1, Vector3::new(0.0, 0.0, 1.0 + G), Q::identity()), 0.05);
    assert_eq!(kinds(&cs), vec![(0, 0); 4]);
    for k in &cs {
        assert_relative_eq!(k.gap, G, epsilon = 1e-12);
        assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
    }
}

fn crossed_edges() -> (BodyPose, BodyPose) {
    let qa = Q::from_axis_angle(&Vector3::x_axis(), FRAC_PI_4);
    let qb = Q::from_axis_angle(&Vector3::y_axis(), FRAC_PI_4);
    (pose(0, Vector3::zeros(), qa), pose(1, Vector3::new(0.05, -0.1, 2f64.sqrt() + G), qb))
}

#[test]
fn crossed_edges_give_one_edge_edge_contact() {
    let c = cube(1.0);
    let (pa, pb) = crossed_edges();
    let cs = detect(&c, &pa, &c, &pb, 0.05);
    assert_eq!(kinds(&cs), vec![(1, 1)]);
    assert_relative_eq!(cs[0].gap, G, epsilon = 1e-12);
    assert_relative_eq!(cs[0].normal, Vector3::z(), epsilon = 1e-12);
    assert_relative_eq!(cs[0].point, Vector3::new(0.05, 0.0, 2f64.sqrt() / 2.0 + G / 2.0), epsilon = 1e-12);
}

fn vertex_on_face() -> (BodyPose, BodyPose) {
    (pose(0, Vector3::zeros(), Q::identity()), pose(1, Vector3::new(0.1, 0.2, 0.5 + 3f64.sqrt() / 2.0 + G), corner_down()))
}

#[test]
fn corner_down_on_a_face_gives_one_vertex_face_contact() {
    let c = cube(1.0);
    let (pa, pb) = vertex_on_face();
    let cs = detect(&c, &pa, &c, &pb, 0.05);
    assert_eq!(kinds(&cs), vec![(2, 0)]);
    assert_eq!(SubRegion::decode(cs[0].sub_b), Some(SubRegion::Vertex(0)));
    assert_relative_eq!(cs[0].gap, G, epsilon = 1e-12);
    assert_relative_eq!(cs[0].normal, Vector3::z(), epsilon = 1e-12);
    assert_relative_eq!(cs[0].point, Vector3::new(0.1, 0.2, 0.5 + G / 2.0), epsilon = 1e-12);
}

fn vertex_on_ridge() -> (BodyPose, BodyPose) {
    let qa = Q::from_axis_angle(&Vector3::x_axis(), FRAC_PI_4);
    let h = 2f64.sqrt() / 2.0 + 3f64.sqrt() / 2.0 + G;
    (pose(0, Vector3::zeros(), qa), pose(1, Vector3::new(0.1, 0.0, h), corner_down()))
}

#[test]
fn corner_down_on_a_ridge_gives_one_vertex_edge_contact() {
    let c = cube(1.0);
    let (pa, pb) = vertex_on_ridge();
    let cs = detect(&c, &pa, &c, &pb, 0.05);
    assert_eq!(kinds(&cs), vec![(1, 0)]);
    assert_relative_eq!(cs[0].gap, G, epsilon = 1e-12);
    assert_relative_eq!(cs[0].normal, Vector3::z(), epsilon = 1e-12);
}

fn corner_to_corner() -> (BodyPose, BodyPose) {
    let s = G / 3f64.sqrt();
    (pose(0, Vector3::zeros(), Q::identity()), pose(1, Vector3::repeat(1.0 + s), Q::identity()))
}

#[test]
fn cubes_corner_to_corner_give_one_vertex_vertex_contact() {
    let c = cube(1.0);
    let (pa, pb) = corner_to_corner();
    let cs = detect(&c, &pa, &c, &pb, 0.05);
    assert_eq!(kinds(&cs), vec![(0, 0)]);
    assert_eq!((SubRegion::decode(cs[0].sub_a), SubRegion::decode(cs[0].sub_b)), (Some(SubRegion::Vertex(7)), Some(SubRegion::Vertex(0))));
    assert_relative_eq!(cs[0].gap, G, epsilon = 1e-12);
    assert_relative_eq!(cs[0].normal, Vector3::repeat(1.0).normalize(), epsilon = 1e-12);
    // Slightly overlapping: each corner is inside the other cube, under its three
    // faces (gap −0.001); the vertex–vertex pair is then dropped by rule 2.
    let cs = detect(&c, &pa, &c, &pose(1, Vector3::repeat(1.0 - 0.001), Q::identity()), 0.05);
    assert_eq!(kinds(&cs), vec![(0, 2), (0, 2), (0, 2), (2, 0), (2, 0), (2, 0)]);
    for k in &cs {
        assert_relative_eq!(k.gap, -0.001, epsilon = 1e-12);
    }
    // Turned off the diagonal so the direction leaves the corners' cones: the faces take over.
    let cs = detect(&c, &pa, &c, &pose(1, Vector3::new(1.0 + G, 0.6, 0.7), Q::identity()), 0.05);
    assert!(kinds(&cs).iter().all(|&k| k != (0, 0)), "{cs:?}");
}

#[test]
fn tetrapod_arm_tip_flat_on_a_face_touches_with_its_tip_ring() {
    let (l, r, n) = (1.0, 0.25, 8);
    let t = body(TriMesh::tetrapod(l, r, n));
    let slab = cube(4.0);
    // Arm 0 (along (1,1,1)) turned straight down; the tip cap lies flat at gap g.
    let q = Q::rotation_between(&Vector3::repeat(1.0), &-Vector3::z()).unwrap();
    let pa = pose(0, Vector3::zeros(), Q::identity());
    let pb = pose(1, Vector3::new(0.3, -0.2, 2.0 + l + G), q);
    let cs = detect(&slab, &pa, &t, &pb, 0.05);
    assert_eq!(kinds(&cs), vec![(2, 0); n as usize], "{cs:?}");
    for k in &cs {
        assert_relative_eq!(k.gap, G, epsilon = 1e-12);
        assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
        assert_relative_eq!((k.point - Vector3::new(0.3, -0.2, 2.0 + G / 2.0)).norm(), r / 2.0, epsilon = 1e-12);
    }
}

/// Rule 1 scene: a small cube's corner in the concave groove of the L.
#[test]
fn rule_vertex_edge_in_concave_groove_is_dropped() {
    let l = l_prism(2.0);
    let c = cube(0.4);
    let pa = pose(0, Vector3::zeros(), Q::identity());
    let pb = pose(1, Vector3::new(1.0 + G + 0.2, 1.0 + G + 0.2, 1.0), Q::identity());
    let hits = raw(&l, &pa, &c, &pb, 0.05);
    let concave = l.f.edge_id(3, 9).unwrap();
    let ve = |h: &PairHit| h.sa == SubRegion::Edge(concave) && matches!(h.sb, SubRegion::Vertex(_));
    assert_eq!(count(&hits, ve), 2, "{hits:?}");
    assert_eq!(count(&hits, |h| matches!((h.sa, h.sb), (SubRegion::Face(_), SubRegion::Vertex(_)))), 8);
    let cs = detect(&l, &pa, &c, &pb, 0.05);
    assert_eq!(kinds(&cs), vec![(2, 0); 8]);
    for k in &cs {
        assert_relative_eq!(k.gap, G, epsilon = 1e-12);
    }
    // Away from the groove's second face the rule does not apply: the vertex–edge
    // pair is simply invalid there (out of the vertex cone), nothing is dropped wrongly.
    let pb = pose(1, Vector3::new(1.0 + G + 0.2, 1.5, 1.0), Q::identity());
    assert_eq!(kinds(&detect(&l, &pa, &c, &pb, 0.05)), vec![(2, 0); 4]);
}

/// Rule 2 scene: a small cube's corner above the L's reflex top corner.
#[test]
fn rule_vertex_vertex_covered_by_adjacent_edges_is_dropped() {
    let l = l_prism(2.0);
    let c = cube(0.4);
    let pa = pose(0, Vector3::zeros(), Q::identity());
    let pb = pose(1, Vector3::new(1.0 + G + 0.2, 1.0 + G + 0.2, 2.0 + G + 0.2), Q::identity());
    let hits = raw(&l, &pa, &c, &pb, 0.05);
    let vv = |h: &PairHit| (h.sa, h.sb) == (SubRegion::Vertex(9), SubRegion::Vertex(0));
    assert_eq!(count(&hits, vv), 1, "{hits:?}");
    assert_relative_eq!(hits.iter().find(|h| vv(h)).unwrap().hit.gap, G * 3f64.sqrt(), epsilon = 1e-12);
    let cs = detect(&l, &pa, &c, &pb, 0.05);
    // Four vertex–edge contacts remain (the corner on both top edges of the notch,
    // and the two neighbouring cube corners), all at gap √2·g... or g for the neighbours.
    assert_eq!(kinds(&cs), vec![(1, 0); 4]);
    let corner: Vec<&Contact> = cs.iter().filter(|k| SubRegion::decode(k.sub_b) == Some(SubRegion::Vertex(0))).collect();
    assert_eq!(corner.len(), 2);
    for k in corner {
        assert_relative_eq!(k.gap, G * 2f64.sqrt(), epsilon = 1e-12);
    }
}

/// Rule 3 scene: cube B turned about z so that its bottom edge crosses
/// A's top edge at distance `eps` from A's corner, which touches B's face.
fn rule3_scene(eps: f64) -> (BodyPose, BodyPose) {
    let phi: f64 = 0.3;
    let c = Vector3::new(0.5 - 0.5 * phi.sin(), 0.5 - eps + 0.5 * phi.cos(), 1.0 + G);
    (pose(0, Vector3::zeros(), Q::identity()), pose(1, c, Q::from_axis_angle(&Vector3::z_axis(), phi)))
}

#[test]
fn rule_edge_edge_duplicating_a_vertex_face_is_dropped() {
    let c = cube(1.0);
    let (ea, eb) = (c.f.edge_id(5, 7).unwrap(), c.f.edge_id(0, 1).unwrap());
    let ee = |h: &PairHit| (h.sa, h.sb) == (SubRegion::Edge(ea), SubRegion::Edge(eb));
    let vf = |h: &PairHit| h.sa == SubRegion::Vertex(7) && matches!(h.sb, SubRegion::Face(_));
    let has = |cs: &[Contact], sa: SubRegion| cs.iter().any(|k| SubRegion::decode(k.sub_a) == Some(sa));
    // Close to the corner: both are valid, the edge–edge is dropped.
    let (pa, pb) = rule3_scene(1e-4);
    let hits = raw(&c, &pa, &c, &pb, 0.05);
    assert_eq!((count(&hits, ee), count(&hits, vf)), (1, 1), "{hits:?}");
    let cs = detect(&c, &pa, &c, &pb, 0.05);
    assert!(!has(&cs, SubRegion::Edge(ea)) && has(&cs, SubRegion::Vertex(7)));
    // Farther from the corner: two distinct contacts, both kept.
    let (pa, pb) = rule3_scene(0.05);
    let cs = detect(&c, &pa, &c, &pb, 0.05);
    assert!(has(&cs, SubRegion::Edge(ea)) && has(&cs, SubRegion::Vertex(7)));
}

/// First-order gap change n·(δx_b + δθ_b × r_b − δx_a − δθ_a × r_a)
/// against the gap recomputed at perturbed poses, for every contact of
/// the scene (matched by sub-regions).
fn check_gap_derivative(a: &Body, b: &Body, pa: BodyPose, pb: BodyPose, expect: (u32, u32)) {
    let cs = detect(a, &pa, b, &pb, 0.05);
    assert!(kinds(&cs).contains(&expect), "expected {expect:?} in {cs:?}\n{:?}", raw(a, &pa, b, &pb, 0.05));
    // Perturbations of size h: the first-order term is O(h); its error is
    // O(h²/gap) (curvature of the gap), far below 1e-4·h for h = 1e-7,
    // while a wrong normal or lever arm would be off by O(h).
    let h = 1e-7;
    let dirs = [
        (Vector3::new(0.3, -0.5, 0.8), Vector3::new(-0.2, 0.7, 0.4), Vector3::new(0.6, 0.1, -0.9), Vector3::new(0.5, -0.3, 0.2)),
        (Vector3::new(-0.7, 0.2, 0.1), Vector3::new(0.9, -0.1, 0.3), Vector3::new(0.2, 0.8, -0.4), Vector3::new(-0.6, 0.4, 0.7)),
    ];
    for (dxa, dta, dxb, dtb) in dirs {
        let qa = Q::from_scaled_axis(dta * h) * pa.orientation;
        let qb = Q::from_scaled_axis(dtb * h) * pb.orientation;
        let pa2 = BodyPose { position: pa.position + dxa * h, orientation: qa, ..pa };
        let pb2 = BodyPose { position: pb.position + dxb * h, orientation: qb, ..pb };
        let cs2 = detect(a, &pa2, b, &pb2, 0.05);
        for k in &cs {
            let k2 = cs2.iter().find(|c| (c.sub_a, c.sub_b) == (k.sub_a, k.sub_b)).expect("contact persists");
            let predicted = k.normal.dot(&(dxb * h + (dtb * h).cross(&k.r_b) - dxa * h - (dta * h).cross(&k.r_a)));
            let actual = k2.gap - k.gap;
            assert!(
                (actual - predicted).abs() <= 1e-4 * h && predicted.abs() > 1e-3 * h,
                "{:?}: actual {actual:e} predicted {predicted:e}",
                kinds(&[*k])
            );
        }
    }
}

#[test]
fn gap_derivatives_match_finite_differences() {
    let c = cube(1.0);
    let tilt = |p: BodyPose, axis: Vector3<f64>| BodyPose { orientation: Q::from_scaled_axis(axis * 0.01) * p.orientation, ..p };
    let (pa, pb) = crossed_edges();
    check_gap_derivative(&c, &c, tilt(pa, Vector3::z()), tilt(pb, Vector3::x()), (1, 1));
    let (pa, pb) = vertex_on_face();
    check_gap_derivative(&c, &c, tilt(pa, Vector3::new(1.0, 1.0, 0.0)), tilt(pb, Vector3::y()), (2, 0));
    let (pa, pb) = vertex_on_ridge();
    check_gap_derivative(&c, &c, tilt(pa, Vector3::z()), tilt(pb, Vector3::new(0.0, 1.0, 1.0)), (1, 0));
    let (pa, pb) = corner_to_corner();
    check_gap_derivative(&c, &c, tilt(pa, Vector3::new(1.0, -1.0, 0.0)), tilt(pb, Vector3::new(0.0, 1.0, -1.0)), (0, 0));
}
