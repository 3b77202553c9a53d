//! Mesh–mesh sub-region pair edge–edge (Gay Neto & Wriggers §2.4.2, eq. 35):
//! the closest points of two non-parallel segments; the normal is the cross
//! product of the edge directions, oriented from body `a` to body `b`.
//!
//! Validity range (§2.4.4): both segment parameters strictly inside (0, 1)
//! and the normal inside both edges' external cones: on the arc between the
//! two face normals of `a`'s edge, and `−normal` on the arc of `b`'s edge
//! ([`crate::geometry::in_arc`]; a concave edge's arc is its groove).
use super::feature_hit::{FeatureHit, GapWindow};
use crate::geometry::{in_arc, CONE_TOL};
use nalgebra::Vector3;

/// Edges closer to parallel than this (sine of the angle) are rejected: the
/// closest points are not unique and the vertex pairs take over.
pub const PARALLEL_TOL: f64 = 1e-9;

/// An edge in the world frame with the outward unit normals of its two faces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EdgeGeom {
    /// First end.
    pub p0: Vector3<f64>,
    /// Second end.
    pub p1: Vector3<f64>,
    /// Normal of the first adjacent face.
    pub n1: Vector3<f64>,
    /// Normal of the second adjacent face.
    pub n2: Vector3<f64>,
}

impl EdgeGeom {
    /// The edge's outward direction reference: the sum of its face normals.
    pub fn pseudo_normal(&self) -> Vector3<f64> {
        self.n1 + self.n2
    }
}

/// Edge `ea` of body `a` against edge `eb` of body `b` (world frame). The
/// normal is `±(ea × eb)/|ea × eb|`, the sign making it point out of `a`
/// (positive along `a`'s pseudo-normal); gap = `(point_b − point_a)·normal`.
/// A gap outside `window` gives `None` before the validity tests.
pub fn edge_edge(ea: &EdgeGeom, eb: &EdgeGeom, window: &GapWindow) -> Option<FeatureHit> {
    let u = ea.p1 - ea.p0;
    let w = eb.p1 - eb.p0;
    let c = u.cross(&w);
    let cn = c.norm();
    if cn <= PARALLEL_TOL * u.norm() * w.norm() {
        return None;
    }
    let r = ea.p0 - eb.p0;
    let (aa, bb, cc, dd, ee) = (u.dot(&u), u.dot(&w), w.dot(&w), u.dot(&r), w.dot(&r));
    let den = aa * cc - bb * bb;
    let s = (bb * ee - cc * dd) / den;
    let t = (aa * ee - bb * dd) / den;
    if !(s > 0.0 && s < 1.0 && t > 0.0 && t < 1.0) {
        return None;
    }
    let pa = ea.p0 + u * s;
    let pb = eb.p0 + w * t;
    let mut n = c / cn;
    if n.dot(&ea.pseudo_normal()) < 0.0 {
        n = -n;
    }
    let gap = (pb - pa).dot(&n);
    if !window.contains(gap) || !in_arc(&n, &ea.n1, &ea.n2, CONE_TOL) || !in_arc(&-n, &eb.n1, &eb.n2, CONE_TOL) {
        return None;
    }
    Some(FeatureHit { point_a: pa, point_b: pb, normal: n, gap })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    /// Top edge of a roof along x (faces tilted ±45° about x), at height z.
    fn ridge_x(z: f64) -> EdgeGeom {
        EdgeGeom {
            p0: Vector3::new(-1.0, 0.0, z),
            p1: Vector3::new(1.0, 0.0, z),
            n1: Vector3::new(0.0, 1.0, 1.0).normalize(),
            n2: Vector3::new(0.0, -1.0, 1.0).normalize(),
        }
    }

    /// Bottom edge of an upside-down roof along y, at height z.
    fn valley_y(z: f64, x: f64) -> EdgeGeom {
        EdgeGeom {
            p0: Vector3::new(x, -1.0, z),
            p1: Vector3::new(x, 1.0, z),
            n1: Vector3::new(1.0, 0.0, -1.0).normalize(),
            n2: Vector3::new(-1.0, 0.0, -1.0).normalize(),
        }
    }

    #[test]
    fn crossed_edges() {
        let h = edge_edge(&ridge_x(0.0), &valley_y(0.25, 0.3), &GapWindow::ALL).unwrap();
        assert_relative_eq!(h.gap, 0.25, epsilon = 1e-14);
        assert_relative_eq!(h.normal, Vector3::z(), epsilon = 1e-14);
        assert_relative_eq!(h.point_a, Vector3::new(0.3, 0.0, 0.0), epsilon = 1e-14);
        assert_relative_eq!(h.point_b, Vector3::new(0.3, 0.0, 0.25), epsilon = 1e-14);
        // Overlap: negative gap, same normal.
        let h = edge_edge(&ridge_x(0.0), &valley_y(-0.1, 0.3), &GapWindow::ALL).unwrap();
        assert_relative_eq!(h.gap, -0.1, epsilon = 1e-14);
        assert_relative_eq!(h.normal, Vector3::z(), epsilon = 1e-14);
    }

    #[test]
    fn validity_range_rejections() {
        // Crossing point beyond the end of a's edge.
        assert!(edge_edge(&ridge_x(0.0), &valley_y(0.25, 1.5), &GapWindow::ALL).is_none());
        // Parallel edges.
        let mut b = ridge_x(0.5);
        b.n1 = -b.n1;
        b.n2 = -b.n2;
        assert!(edge_edge(&ridge_x(0.0), &b, &GapWindow::ALL).is_none());
        // Normal outside b's cone: b's faces look up, not down at a.
        let mut up = valley_y(0.25, 0.3);
        up.n1 = Vector3::new(1.0, 0.0, 1.0).normalize();
        up.n2 = Vector3::new(-1.0, 0.0, 1.0).normalize();
        assert!(edge_edge(&ridge_x(0.0), &up, &GapWindow::ALL).is_none());
        // Normal outside a's cone: a's ridge tilted so that z is not between its normals.
        let mut tilted = ridge_x(0.0);
        tilted.n1 = Vector3::new(0.0, 1.0, 0.2).normalize();
        tilted.n2 = Vector3::new(0.0, 1.0, -0.3).normalize();
        assert!(edge_edge(&tilted, &valley_y(0.25, 0.3), &GapWindow::ALL).is_none());
    }
}
