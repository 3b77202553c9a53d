//! Narrow phase mesh–wall (time-step stage 2 "contact"): one contact per mesh
//! vertex closer to the wall plane than the detection distance.
use super::{BodyPose, Contact, Contacts, WALL_ID_BASE, WALL_INDEX};
use crate::body::TriMesh;
use crate::geometry::SubRegion;
use crate::scene::Wall;
use nalgebra::Vector3;

/// Pushes into `out` one contact per vertex `v` of mesh body `m` whose signed
/// distance to wall number `w` is below `contact_distance`. `a` is the mesh
/// (`sub_a = SubRegion::Vertex(v).encode()`), `b = WALL_ID_BASE + w`
/// (`sub_b = 0`, `r_b` zero); the normal is `−wall.normal`; the point is
/// midway between the vertex and its projection on the plane. A face lying on
/// the wall gives a contact at each of its vertices.
pub fn mesh_wall(m: &BodyPose, mesh: &TriMesh, w: usize, wall: &Wall, contact_distance: f64, out: &mut Contacts) {
    let n = wall.normal.normalize();
    // Distances in the body frame: d(v) = (x_m − p_w)·n + v·(Rᵀ n).
    let n_body = m.orientation.inverse_transform_vector(&n);
    let offset = (m.position - wall.point).dot(&n);
    let rot = m.orientation.to_rotation_matrix();
    for (v, x) in mesh.vertices.iter().enumerate() {
        let gap = offset + x.dot(&n_body);
        if gap >= contact_distance {
            continue;
        }
        let vertex = m.position + rot * x;
        let point = vertex - n * (0.5 * gap);
        out.push(Contact {
            a: m.id,
            b: WALL_ID_BASE + w as u64,
            sub_a: SubRegion::Vertex(v as u32).encode(),
            sub_b: 0,
            point,
            normal: -n,
            gap,
            r_a: point - m.position,
            r_b: Vector3::zeros(),
            ia: m.index,
            ib: WALL_INDEX,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use nalgebra::UnitQuaternion;

    fn floor() -> Wall {
        Wall::new(Vector3::new(0.0, 0.0, 0.0), Vector3::z(), 0)
    }

    #[test]
    fn cube_face_down_touches_with_four_vertices() {
        let mesh = TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        let x = Vector3::new(3.0, -1.0, 0.5 + 0.005);
        let m = BodyPose { id: 4, index: 1, position: x, orientation: UnitQuaternion::identity() };
        let mut out = Contacts::new();
        mesh_wall(&m, &mesh, 2, &floor(), 0.01, &mut out);
        assert_eq!(out.len(), 4);
        let mut subs: Vec<u32> = out.sub_a.clone();
        subs.sort();
        assert_eq!(subs, [0, 1, 2, 3].map(|v| SubRegion::Vertex(v).encode()));
        for c in out.iter() {
            assert_eq!((c.a, c.b, c.ia, c.ib), (4, WALL_ID_BASE + 2, 1, WALL_INDEX));
            assert_relative_eq!(c.gap, 0.005, epsilon = 1e-12);
            assert_relative_eq!(c.normal, -Vector3::z());
            assert_relative_eq!(c.point.z, 0.0025, epsilon = 1e-12);
            assert_relative_eq!(c.r_a, c.point - x, epsilon = 1e-14);
            assert_relative_eq!(c.r_a.x.abs(), 0.5, epsilon = 1e-12);
        }
        out.clear();
        mesh_wall(&m, &mesh, 2, &floor(), 0.005, &mut out);
        assert!(out.is_empty());
    }

    #[test]
    fn tilted_cube_touches_with_one_vertex() {
        let mesh = TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        // Turn the corner (−1,−1,−1)/2 straight down.
        let q = UnitQuaternion::rotation_between(&Vector3::new(-1.0, -1.0, -1.0), &-Vector3::z()).unwrap();
        let h = 3f64.sqrt() / 2.0;
        let m = BodyPose { id: 0, index: 0, position: Vector3::new(0.0, 0.0, h - 0.001), orientation: q };
        let mut out = Contacts::new();
        mesh_wall(&m, &mesh, 0, &floor(), 0.01, &mut out);
        assert_eq!(out.len(), 1);
        let c = out.get(0);
        assert_eq!(SubRegion::decode(c.sub_a), Some(SubRegion::Vertex(0)));
        assert_relative_eq!(c.gap, -0.001, epsilon = 1e-12);
        assert_relative_eq!(c.point, Vector3::new(0.0, 0.0, -0.0005), epsilon = 1e-12);
        assert_relative_eq!(c.r_a, Vector3::new(0.0, 0.0, -h + 0.0005), epsilon = 1e-12);
    }
}
