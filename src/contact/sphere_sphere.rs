//! Narrow phase sphere–sphere (time-step stage 2 "contact").
use super::{BodyPose, Contact};
use nalgebra::Vector3;

/// Contact between sphere `a` (radius `ra`) and sphere `b` (radius `rb`), if
/// their gap is below `contact_distance`. The result is ordered (`a` the
/// smaller id). Coincident centres get the normal `+z`.
pub fn sphere_sphere(a: &BodyPose, ra: f64, b: &BodyPose, rb: f64, contact_distance: f64) -> Option<Contact> {
    let d = b.position - a.position;
    let reach = ra + rb + contact_distance;
    let dist2 = d.norm_squared();
    if dist2 >= reach * reach {
        return None;
    }
    let dist = dist2.sqrt();
    let gap = dist - ra - rb;
    if gap >= contact_distance {
        return None;
    }
    let normal = if dist > 0.0 { d / dist } else { Vector3::z() };
    let point = a.position + normal * (ra + 0.5 * gap);
    Some(
        Contact {
            a: a.id,
            b: b.id,
            sub_a: 0,
            sub_b: 0,
            point,
            normal,
            gap,
            r_a: point - a.position,
            r_b: point - b.position,
            ia: a.index,
            ib: b.index,
        }
        .ordered(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use nalgebra::UnitQuaternion;

    fn pose(id: u64, index: usize, x: Vector3<f64>) -> BodyPose {
        BodyPose { id, index, position: x, orientation: UnitQuaternion::identity() }
    }

    #[test]
    fn gap_normal_point_and_lever_arms() {
        let a = pose(2, 0, Vector3::new(1.0, 1.0, 1.0));
        let dir = Vector3::new(1.0, 2.0, 2.0) / 3.0;
        let b = pose(5, 1, a.position + dir * 3.1);
        let c = sphere_sphere(&a, 1.0, &b, 2.0, 0.2).unwrap();
        assert_eq!((c.a, c.b, c.ia, c.ib, c.sub_a, c.sub_b), (2, 5, 0, 1, 0, 0));
        assert_relative_eq!(c.gap, 0.1, epsilon = 1e-12);
        assert_relative_eq!(c.normal, dir, epsilon = 1e-14);
        // Midway between the surfaces: 1.05 from a's centre, 2.05 from b's.
        assert_relative_eq!(c.point, a.position + dir * 1.05, epsilon = 1e-12);
        assert_relative_eq!(c.r_a, c.point - a.position, epsilon = 1e-14);
        assert_relative_eq!(c.r_b, c.point - b.position, epsilon = 1e-14);
        assert_relative_eq!(c.r_b.norm(), 2.05, epsilon = 1e-12);
    }

    #[test]
    fn overlap_is_negative_and_far_is_none() {
        let a = pose(0, 0, Vector3::zeros());
        let b = pose(1, 1, Vector3::new(0.0, 1.5, 0.0));
        let c = sphere_sphere(&a, 1.0, &b, 1.0, 0.0).unwrap();
        assert_relative_eq!(c.gap, -0.5, epsilon = 1e-14);
        assert!(sphere_sphere(&a, 1.0, &pose(1, 1, Vector3::new(0.0, 2.1, 0.0)), 1.0, 0.05).is_none());
        assert!(sphere_sphere(&a, 1.0, &pose(1, 1, Vector3::new(0.0, 2.04, 0.0)), 1.0, 0.05).is_some());
    }

    #[test]
    fn larger_id_first_is_reordered() {
        let a = pose(9, 3, Vector3::zeros());
        let b = pose(4, 7, Vector3::new(2.0, 0.0, 0.0));
        let c = sphere_sphere(&a, 1.0, &b, 0.5, 1.0).unwrap();
        assert_eq!((c.a, c.b, c.ia, c.ib), (4, 9, 7, 3));
        assert_relative_eq!(c.normal, Vector3::new(-1.0, 0.0, 0.0));
        assert_relative_eq!(c.gap, 0.5, epsilon = 1e-14);
        assert_relative_eq!(c.r_a, c.point - b.position, epsilon = 1e-14);
    }
}
