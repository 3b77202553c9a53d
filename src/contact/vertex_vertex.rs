//! Mesh–mesh sub-region pair vertex–vertex (Gay Neto & Wriggers §2.4.2): no
//! local problem to solve, the normal is along the vector joining the
//! vertices.
//!
//! Validity range (§2.4.4): the direction lies in both vertices' external
//! cones (out of `a` in `a`'s cone, out of `b` in `b`'s cone).
use super::feature_hit::{FeatureHit, GapWindow};
use crate::geometry::{in_normal_cone, CONE_TOL};
use nalgebra::Vector3;

/// Vertex `va` of body `a` (cone generators `cone_a`, pseudo-normal `pn_a`)
/// against vertex `vb` of body `b` (world frame). The gap is `±|vb − va|`,
/// negative when `vb − va` points against `pn_a − pn_b` (the vertices have
/// passed each other); the normal from `a` to `b` is `±(vb − va)/|vb − va|`.
/// A gap outside `window` gives `None` before the validity tests.
pub fn vertex_vertex(
    va: &Vector3<f64>,
    cone_a: &[Vector3<f64>],
    pn_a: &Vector3<f64>,
    vb: &Vector3<f64>,
    cone_b: &[Vector3<f64>],
    pn_b: &Vector3<f64>,
    window: &GapWindow,
) -> Option<FeatureHit> {
    let d = vb - va;
    let dist = d.norm();
    let reference = pn_a - pn_b;
    let (n, gap) = if dist > 1e-14 * (1.0 + va.norm()) {
        if d.dot(&reference) >= 0.0 {
            (d / dist, dist)
        } else {
            (-d / dist, -dist)
        }
    } else {
        (reference.normalize(), 0.0)
    };
    if !window.contains(gap) || !in_normal_cone(&n, cone_a, CONE_TOL) || !in_normal_cone(&-n, cone_b, CONE_TOL) {
        return None;
    }
    Some(FeatureHit { point_a: *va, point_b: *vb, normal: n, gap })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn octant(s: f64) -> Vec<Vector3<f64>> {
        vec![Vector3::x() * s, Vector3::y() * s, Vector3::z() * s]
    }

    #[test]
    fn corners_along_the_diagonal() {
        let k = Vector3::new(1.0, 1.0, 1.0).normalize();
        let h = vertex_vertex(&Vector3::zeros(), &octant(1.0), &k, &(k * 0.1), &octant(-1.0), &-k, &GapWindow::ALL).unwrap();
        assert_relative_eq!(h.gap, 0.1, epsilon = 1e-14);
        assert_relative_eq!(h.normal, k, epsilon = 1e-14);
        // Passed through each other: negative gap, same normal.
        let h = vertex_vertex(&Vector3::zeros(), &octant(1.0), &k, &(-k * 0.1), &octant(-1.0), &-k, &GapWindow::ALL).unwrap();
        assert_relative_eq!(h.gap, -0.1, epsilon = 1e-14);
        assert_relative_eq!(h.normal, k, epsilon = 1e-14);
    }

    #[test]
    fn validity_range_rejections() {
        let k = Vector3::new(1.0, 1.0, 1.0).normalize();
        // Direction leaves a's octant.
        let vb = Vector3::new(-0.05, 0.1, 0.1);
        assert!(vertex_vertex(&Vector3::zeros(), &octant(1.0), &k, &vb, &octant(-1.0), &-k, &GapWindow::ALL).is_none());
        // b's corner does not face a.
        assert!(vertex_vertex(&Vector3::zeros(), &octant(1.0), &k, &(k * 0.1), &octant(1.0), &k, &GapWindow::ALL).is_none());
    }
}
