//! Narrow phase sphere–wall (time-step stage 2 "contact").
use super::{BodyPose, Contact, WALL_ID_BASE, WALL_INDEX};
use crate::scene::Wall;
use nalgebra::Vector3;

/// Contact between sphere `s` (radius `r`) and wall number `w`, if the gap is
/// below `contact_distance`. `a` is the sphere, `b = WALL_ID_BASE + w`; the
/// normal points from the sphere into the wall (`−wall.normal`); `r_b` is zero.
pub fn sphere_wall(s: &BodyPose, r: f64, w: usize, wall: &Wall, contact_distance: f64) -> Option<Contact> {
    let n = wall.normal.normalize();
    let dist = (s.position - wall.point).dot(&n);
    let gap = dist - r;
    if gap >= contact_distance {
        return None;
    }
    let point = s.position - n * (r + 0.5 * gap);
    Some(Contact {
        a: s.id,
        b: WALL_ID_BASE + w as u64,
        sub_a: 0,
        sub_b: 0,
        point,
        normal: -n,
        gap,
        r_a: point - s.position,
        r_b: Vector3::zeros(),
        ia: s.index,
        ib: WALL_INDEX,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use nalgebra::UnitQuaternion;

    #[test]
    fn sphere_above_tilted_wall() {
        let n = Vector3::new(0.0, 1.0, 1.0).normalize();
        let wall = Wall::new(Vector3::new(0.0, 0.0, -1.0), n * 3.0, 0);
        let x = wall.point + n * 0.52 + Vector3::x() * 4.0;
        let s = BodyPose { id: 7, index: 2, position: x, orientation: UnitQuaternion::identity() };
        let c = sphere_wall(&s, 0.5, 3, &wall, 0.05).unwrap();
        assert_eq!((c.a, c.b, c.ia, c.ib), (7, WALL_ID_BASE + 3, 2, WALL_INDEX));
        assert!(c.is_wall());
        assert_relative_eq!(c.gap, 0.02, epsilon = 1e-12);
        assert_relative_eq!(c.normal, -n, epsilon = 1e-14);
        assert_relative_eq!(c.point, x - n * 0.51, epsilon = 1e-12);
        assert_relative_eq!(c.r_a, c.point - x, epsilon = 1e-14);
        assert_eq!(c.r_b, Vector3::zeros());
        assert!(sphere_wall(&s, 0.5, 3, &wall, 0.02).is_none());
        let deep = BodyPose { position: wall.point + n * 0.2, ..s };
        assert_relative_eq!(sphere_wall(&deep, 0.5, 3, &wall, 0.0).unwrap().gap, -0.3, epsilon = 1e-12);
    }
}
