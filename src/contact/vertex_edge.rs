//! Mesh–mesh sub-region pair vertex–edge (Gay Neto & Wriggers §2.4.2,
//! eq. 36): the orthogonal projection of a vertex of body `a` onto the line
//! of an edge of body `b`; the normal is along the connecting vector.
//!
//! Validity range (§2.4.4): the edge parameter strictly inside (0, 1); the
//! direction out of `b` on the arc between `b`'s two face normals; the
//! direction out of `a` (towards `b`) in the vertex's external cone.
use super::edge_edge::EdgeGeom;
use super::feature_hit::{FeatureHit, GapWindow};
use crate::geometry::{in_arc, in_normal_cone, CONE_TOL};
use nalgebra::Vector3;

/// Vertex `v` of body `a` (external cone generators `v_cone`, world frame)
/// against edge `e` of body `b`. The gap is `±|v − c|` (`c` the projection),
/// negative when `v` lies on the inner side of the edge's pseudo-normal; the
/// normal (from `a` to `b`) is `∓(v − c)/|v − c|`.
/// A gap outside `window` gives `None` before the validity tests.
pub fn vertex_edge(v: &Vector3<f64>, v_cone: &[Vector3<f64>], e: &EdgeGeom, window: &GapWindow) -> Option<FeatureHit> {
    let w = e.p1 - e.p0;
    let t = (v - e.p0).dot(&w) / w.norm_squared();
    if !(t > 0.0 && t < 1.0) {
        return None;
    }
    let c = e.p0 + w * t;
    let d = v - c;
    let dist = d.norm();
    let reference = e.pseudo_normal();
    // m: unit direction out of b, towards a.
    let (m, gap) = if dist > 1e-14 * (1.0 + v.norm()) {
        if d.dot(&reference) >= 0.0 {
            (d / dist, dist)
        } else {
            (-d / dist, -dist)
        }
    } else {
        (reference.normalize(), 0.0)
    };
    if !window.contains(gap) || !in_arc(&m, &e.n1, &e.n2, CONE_TOL) || !in_normal_cone(&-m, v_cone, CONE_TOL) {
        return None;
    }
    Some(FeatureHit { point_a: *v, point_b: c, normal: -m, gap })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn ridge() -> EdgeGeom {
        EdgeGeom {
            p0: Vector3::new(-1.0, 0.0, 0.0),
            p1: Vector3::new(1.0, 0.0, 0.0),
            n1: Vector3::new(0.0, 1.0, 1.0).normalize(),
            n2: Vector3::new(0.0, -1.0, 1.0).normalize(),
        }
    }

    /// A downward-pointing corner: cone of its three face normals, all with −z.
    fn down_corner() -> Vec<Vector3<f64>> {
        let q = nalgebra::UnitQuaternion::rotation_between(&Vector3::new(-1.0, -1.0, -1.0), &-Vector3::z()).unwrap();
        vec![q * -Vector3::x(), q * -Vector3::y(), q * -Vector3::z()]
    }

    #[test]
    fn vertex_above_a_ridge() {
        let h = vertex_edge(&Vector3::new(0.2, 0.0, 0.3), &down_corner(), &ridge(), &GapWindow::ALL).unwrap();
        assert_relative_eq!(h.gap, 0.3, epsilon = 1e-14);
        assert_relative_eq!(h.normal, -Vector3::z(), epsilon = 1e-14);
        assert_relative_eq!(h.point_b, Vector3::new(0.2, 0.0, 0.0), epsilon = 1e-14);
        // Below the ridge (overlap): negative gap, same normal.
        let h = vertex_edge(&Vector3::new(0.2, 0.0, -0.05), &down_corner(), &ridge(), &GapWindow::ALL).unwrap();
        assert_relative_eq!(h.gap, -0.05, epsilon = 1e-14);
        assert_relative_eq!(h.normal, -Vector3::z(), epsilon = 1e-14);
    }

    #[test]
    fn validity_range_rejections() {
        // Beyond the edge's end.
        assert!(vertex_edge(&Vector3::new(1.2, 0.0, 0.3), &down_corner(), &ridge(), &GapWindow::ALL).is_none());
        // Direction outside the edge's arc (beside the roof, below its faces' normals).
        assert!(vertex_edge(&Vector3::new(0.2, 1.0, 0.1), &down_corner(), &ridge(), &GapWindow::ALL).is_none());
        // Direction outside the vertex's cone: the corner points up.
        let up: Vec<_> = down_corner().iter().map(|n| -n).collect();
        assert!(vertex_edge(&Vector3::new(0.2, 0.0, 0.3), &up, &ridge(), &GapWindow::ALL).is_none());
    }
}
