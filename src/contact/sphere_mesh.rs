//! Narrow phase sphere–mesh (time-step stage 2 "contact").
//!
//! The sphere centre is taken into the mesh's body frame; the closest point of
//! every triangle not culled by its bounding sphere is computed and the
//! closest one kept (near-ties, within rounding, go to the lower-dimensional
//! feature so an edge or corner is reported as such from either side). The
//! feature becomes the sub-region id (faces, unique edges, vertices; coplanar
//! "edges" of a split quad count as the face).
//!
//! Inside or outside: the gap is signed by the pseudo-normal of the closest
//! feature (Bærentzen & Aanæs 2005): the face normal on a face, the sum of the
//! two face normals on an edge, the angle-weighted normal at a vertex. When
//! the centre is inside (small overlaps: the closest surface point is the
//! right one to push back through), the gap is `−distance − radius` and the
//! outward normal is `(c − p) / |c − p|`; with the centre exactly on the
//! surface the pseudo-normal is used.
use super::{BodyPose, Contact};
use crate::body::TriMesh;
use crate::geometry::{closest_point_on_triangle, MeshFeatures, TriangleClosest};

/// Contact between sphere `s` (radius `r`) and mesh body `m`, if the gap is
/// below `contact_distance`; at most one contact (the closest feature). The
/// result is ordered (`a` the smaller id): `sub` of the sphere is 0, of the
/// mesh the encoded [`crate::geometry::SubRegion`] of the closest feature.
pub fn sphere_mesh(
    s: &BodyPose,
    r: f64,
    m: &BodyPose,
    mesh: &TriMesh,
    features: &MeshFeatures,
    contact_distance: f64,
) -> Option<Contact> {
    let p = m.orientation.inverse_transform_vector(&(s.position - m.position));
    let big_r = features.bounding_radius;
    let reach = big_r + r + contact_distance;
    if p.norm_squared() >= reach * reach {
        return None;
    }
    // Rounding tolerance on squared distances for tie-breaking.
    let tol = 1e-14 * big_r * (p.norm() + big_r);
    let mut best_d2 = f64::INFINITY;
    let mut best: Option<(usize, TriangleClosest)> = None;
    for (t, tri) in mesh.triangles.iter().enumerate() {
        let (c, rt) = features.triangle_spheres[t];
        let lb = (p - c).norm() - rt;
        if lb > 0.0 && lb * lb > best_d2 + tol {
            continue;
        }
        let [a, b, c] = tri.map(|i| mesh.vertices[i as usize]);
        let q = closest_point_on_triangle(&p, &a, &b, &c);
        let d2 = (p - q.point).norm_squared();
        let better = match &best {
            None => true,
            Some((_, old)) => {
                d2 < best_d2 - tol || (d2 <= best_d2 + tol && q.feature.dimension() < old.feature.dimension())
            }
        };
        if better {
            best_d2 = d2;
            best = Some((t, q));
        }
    }
    let (t, q) = best?;
    let sub = features.sub_region(mesh, t, q.feature);
    let pn = features.pseudo_normal(sub);
    let d = p - q.point;
    let dist = d.norm();
    let (signed, n_out) = if dist > 1e-15 * big_r {
        if d.dot(&pn) >= 0.0 {
            (dist, d / dist)
        } else {
            (-dist, -d / dist)
        }
    } else {
        (0.0, pn)
    };
    let gap = signed - r;
    if gap >= contact_distance {
        return None;
    }
    let c_world = m.position + m.orientation * q.point;
    let n_world = m.orientation * n_out;
    let point = 0.5 * (c_world + s.position - n_world * r);
    Some(
        Contact {
            a: s.id,
            b: m.id,
            sub_a: 0,
            sub_b: sub.encode(),
            point,
            normal: -n_world,
            gap,
            r_a: point - s.position,
            r_b: point - m.position,
            ia: s.index,
            ib: m.index,
        }
        .ordered(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::SubRegion;
    use approx::assert_relative_eq;
    use nalgebra::{UnitQuaternion, Vector3};

    fn pose(id: u64, index: usize, x: Vector3<f64>, q: UnitQuaternion<f64>) -> BodyPose {
        BodyPose { id, index, position: x, orientation: q }
    }

    struct Cube {
        mesh: TriMesh,
        f: MeshFeatures,
    }

    fn cube() -> Cube {
        let mesh = TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        let f = MeshFeatures::new(&mesh);
        Cube { mesh, f }
    }

    /// Sphere (id 1) against the unit cube (id 0, at `xm`, rotated by `q`).
    fn hit(c: &Cube, xs: Vector3<f64>, r: f64, xm: Vector3<f64>, q: UnitQuaternion<f64>, cd: f64) -> Option<Contact> {
        sphere_mesh(&pose(1, 5, xs, UnitQuaternion::identity()), r, &pose(0, 2, xm, q), &c.mesh, &c.f, cd)
    }

    fn check_arms(k: &Contact, xm: Vector3<f64>, xs: Vector3<f64>) {
        assert_relative_eq!(k.r_a, k.point - xm, epsilon = 1e-14);
        assert_relative_eq!(k.r_b, k.point - xs, epsilon = 1e-14);
    }

    #[test]
    fn above_face_centre() {
        let c = cube();
        let xm = Vector3::new(1.0, 2.0, 3.0);
        let xs = xm + Vector3::new(0.0, 0.0, 0.5 + 0.25 + 0.1);
        let k = hit(&c, xs, 0.25, xm, UnitQuaternion::identity(), 0.2).unwrap();
        // The mesh has the smaller id: a = mesh, normal from mesh to sphere.
        assert_eq!((k.a, k.b, k.ia, k.ib, k.sub_b), (0, 1, 2, 5, 0));
        assert_relative_eq!(k.gap, 0.1, epsilon = 1e-12);
        assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
        assert_relative_eq!(k.point, xm + Vector3::new(0.0, 0.0, 0.55), epsilon = 1e-12);
        // The face centre lies on the split diagonal: still the face (top quad = triangles 2, 3).
        assert_eq!(SubRegion::decode(k.sub_a), Some(SubRegion::Face(2)));
        check_arms(&k, xm, xs);
        assert!(hit(&c, xs, 0.25, xm, UnitQuaternion::identity(), 0.1).is_none());
    }

    #[test]
    fn off_centre_face_point_is_the_face() {
        let c = cube();
        let xs = Vector3::new(0.3, -0.1, -0.5 - 0.2 - 0.05);
        let k = hit(&c, xs, 0.2, Vector3::zeros(), UnitQuaternion::identity(), 0.1).unwrap();
        assert_relative_eq!(k.gap, 0.05, epsilon = 1e-12);
        assert_relative_eq!(k.normal, -Vector3::z(), epsilon = 1e-12);
        assert!(matches!(SubRegion::decode(k.sub_a), Some(SubRegion::Face(0 | 1))));
    }

    #[test]
    fn above_edge_normal_at_45_degrees() {
        let c = cube();
        let n = Vector3::new(1.0, 0.0, 1.0).normalize();
        let xs = Vector3::new(0.5, 0.1, 0.5) + n * (0.3 + 0.02);
        let k = hit(&c, xs, 0.3, Vector3::zeros(), UnitQuaternion::identity(), 0.05).unwrap();
        assert_relative_eq!(k.gap, 0.02, epsilon = 1e-12);
        assert_relative_eq!(k.normal, n, epsilon = 1e-12);
        let e = c.f.edge_id(5, 7).unwrap(); // x = +, z = + edge along y
        assert_eq!(SubRegion::decode(k.sub_a), Some(SubRegion::Edge(e)));
        assert_relative_eq!(k.point, Vector3::new(0.5, 0.1, 0.5) + n * 0.01, epsilon = 1e-12);
        check_arms(&k, Vector3::zeros(), xs);
    }

    #[test]
    fn above_corner_normal_along_diagonal() {
        let c = cube();
        let n = Vector3::new(1.0, 1.0, 1.0).normalize();
        let xs = Vector3::new(0.5, 0.5, 0.5) + n * (0.3 + 0.01);
        let k = hit(&c, xs, 0.3, Vector3::zeros(), UnitQuaternion::identity(), 0.05).unwrap();
        assert_relative_eq!(k.gap, 0.01, epsilon = 1e-12);
        assert_relative_eq!(k.normal, n, epsilon = 1e-12);
        assert_eq!(SubRegion::decode(k.sub_a), Some(SubRegion::Vertex(7)));
    }

    #[test]
    fn sphere_with_smaller_id_gets_normal_towards_the_mesh() {
        let c = cube();
        let s = pose(0, 0, Vector3::new(0.0, 0.0, -1.0), UnitQuaternion::identity());
        let m = pose(3, 1, Vector3::zeros(), UnitQuaternion::identity());
        let k = sphere_mesh(&s, 0.5, &m, &c.mesh, &c.f, 1e-9).unwrap();
        assert_eq!((k.a, k.b, k.sub_a), (0, 3, 0));
        assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
        assert_relative_eq!(k.gap, 0.0, epsilon = 1e-12);
        assert!(matches!(SubRegion::decode(k.sub_b), Some(SubRegion::Face(_))));
    }

    #[test]
    fn rotated_mesh_edge_in_world_frame() {
        // Cube rotated 45° about z: its vertical edge at body (+x, −y) points along world +x.
        let c = cube();
        let q = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), std::f64::consts::FRAC_PI_4);
        let xm = Vector3::new(-2.0, 0.0, 0.0);
        let edge = xm + Vector3::new(0.5f64.sqrt(), 0.0, 0.0);
        let xs = edge + Vector3::new(0.4 + 0.03, 0.0, 0.1);
        let k = hit(&c, xs, 0.4, xm, q, 0.05).unwrap();
        assert_relative_eq!(k.gap, 0.03, epsilon = 1e-12);
        assert_relative_eq!(k.normal, Vector3::x(), epsilon = 1e-12);
        assert!(matches!(SubRegion::decode(k.sub_a), Some(SubRegion::Edge(_))));
        check_arms(&k, xm, xs);
    }

    #[test]
    fn centre_inside_gives_negative_gap_and_outward_normal() {
        let c = cube();
        // Centre 0.05 below the top face: gap = −0.05 − 0.1.
        let xs = Vector3::new(0.1, 0.2, 0.45);
        let k = hit(&c, xs, 0.1, Vector3::zeros(), UnitQuaternion::identity(), 0.0).unwrap();
        assert_relative_eq!(k.gap, -0.15, epsilon = 1e-12);
        assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
        // Midway between the face (z = 0.5) and the sphere's bottom (z = 0.35).
        assert_relative_eq!(k.point, Vector3::new(0.1, 0.2, 0.425), epsilon = 1e-12);
        // Inside near an edge: pushed out through the nearer face.
        let k = hit(&c, Vector3::new(0.48, 0.0, 0.45), 0.1, Vector3::zeros(), UnitQuaternion::identity(), 0.0).unwrap();
        assert_relative_eq!(k.gap, -0.12, epsilon = 1e-12);
        assert_relative_eq!(k.normal, Vector3::x(), epsilon = 1e-12);
        // Centre exactly on a corner: pseudo-normal, gap = −radius.
        let k = hit(&c, Vector3::new(0.5, 0.5, 0.5), 0.1, Vector3::zeros(), UnitQuaternion::identity(), 0.0).unwrap();
        assert_relative_eq!(k.gap, -0.1, epsilon = 1e-12);
        assert_relative_eq!(k.normal, Vector3::new(1.0, 1.0, 1.0).normalize(), epsilon = 1e-12);
    }

    #[test]
    fn far_sphere_has_no_contact() {
        let c = cube();
        assert!(hit(&c, Vector3::new(0.0, 0.0, 0.5 + 0.25 + 0.06), 0.25, Vector3::zeros(), UnitQuaternion::identity(), 0.05).is_none());
        assert!(hit(&c, Vector3::new(5.0, 0.0, 0.0), 0.25, Vector3::zeros(), UnitQuaternion::identity(), 0.05).is_none());
    }

    /// Exact signed distance of a box with half extents `h` (body frame).
    fn box_sdf(p: Vector3<f64>, h: Vector3<f64>) -> f64 {
        let q = p.abs() - h;
        q.sup(&Vector3::zeros()).norm() + q.max().min(0.0)
    }

    #[test]
    fn random_points_match_the_box_signed_distance() {
        let h = Vector3::new(0.5, 0.4, 0.3);
        let mesh = TriMesh::cuboid(2.0 * h);
        let f = MeshFeatures::new(&mesh);
        let q = UnitQuaternion::from_euler_angles(0.3, -0.7, 1.1);
        let xm = Vector3::new(0.2, -0.1, 0.4);
        let m = pose(10, 0, xm, q);
        let mut st = 0x9e37_79b9_u64;
        let mut rnd = || {
            st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (st >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        };
        let (mut inside, mut corners) = (0, 0);
        for _ in 0..3000 {
            let local = Vector3::new(rnd(), rnd(), rnd()) * 0.9;
            let xs = xm + q * local;
            let r = 0.05;
            let k = sphere_mesh(&pose(11, 1, xs, UnitQuaternion::identity()), r, &m, &mesh, &f, 10.0).unwrap();
            let sdf = box_sdf(local, h);
            assert_relative_eq!(k.gap, sdf - r, epsilon = 1e-12);
            // Normal from the mesh (a) to the sphere: the distance gradient.
            let eps = 1e-7;
            let grad = Vector3::from_fn(|i, _| {
                let mut d = Vector3::zeros();
                d[i] = eps;
                (box_sdf(local + d, h) - box_sdf(local - d, h)) / (2.0 * eps)
            });
            if grad.norm() > 0.999 {
                assert_relative_eq!(k.normal, q * grad.normalize(), epsilon = 1e-5);
            }
            inside += (sdf < 0.0) as usize;
            corners += matches!(SubRegion::decode(k.sub_a), Some(SubRegion::Vertex(_))) as usize;
        }
        assert!(inside > 100 && corners > 100, "{inside} inside, {corners} at corners");
    }
}
