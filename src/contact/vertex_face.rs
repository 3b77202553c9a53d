//! Mesh–mesh sub-region pair vertex–face (Gay Neto & Wriggers §2.4.2, eq. 34):
//! the orthogonal projection of a vertex of body `a` onto the plane of a
//! triangle of body `b`; the contact normal is the face normal.
//!
//! Validity range (§2.4.4): the projection lies strictly inside the triangle
//! (all barycentric coordinates positive). Edges of the triangle that are the
//! diagonal of a flat tessellated face are *inclusive* on one of the two
//! triangles (`inclusive`), so a vertex above a diagonal is reported exactly
//! once. A back-facing pair (the vertex's pseudo-normal not against the face
//! normal) is rejected.
use super::feature_hit::{FeatureHit, GapWindow};
use nalgebra::Vector3;

/// Barycentric tolerance: a coordinate counts as zero within this.
const BARY_EPS: f64 = 1e-12;

/// Vertex `v` of body `a` (outward pseudo-normal `v_normal`) against triangle
/// `tri` of body `b` with outward unit normal `n`, all in the world frame.
/// `inclusive[k]` makes triangle edge `k` (from `tri[k]` to `tri[k + 1]`) part
/// of the valid range. The gap is `(v − tri[0]) · n` (negative inside), the
/// normal from `a` to `b` is `−n`; `point_a = v`, `point_b` the projection.
/// A gap outside `window` gives `None` before the validity tests.
pub fn vertex_face(
    v: &Vector3<f64>,
    v_normal: &Vector3<f64>,
    tri: &[Vector3<f64>; 3],
    n: &Vector3<f64>,
    inclusive: [bool; 3],
    window: &GapWindow,
) -> Option<FeatureHit> {
    if v_normal.dot(n) >= 0.0 {
        return None;
    }
    let gap = (v - tri[0]).dot(n);
    if !window.contains(gap) {
        return None;
    }
    let q = v - n * gap;
    let bary = barycentric(&q, tri);
    for (k, &inc) in inclusive.iter().enumerate() {
        // Edge k = tri[k]tri[k+1] is where the coordinate of tri[k+2] vanishes.
        let b = bary[(k + 2) % 3];
        let inside = if inc { b >= -BARY_EPS } else { b > BARY_EPS };
        if !inside {
            return None;
        }
    }
    Some(FeatureHit { point_a: *v, point_b: q, normal: -n, gap })
}

/// Barycentric coordinates of `q` (in the triangle's plane) in `tri`.
pub fn barycentric(q: &Vector3<f64>, tri: &[Vector3<f64>; 3]) -> [f64; 3] {
    let (e0, e1, e2) = (tri[1] - tri[0], tri[2] - tri[0], q - tri[0]);
    let (d00, d01, d11) = (e0.dot(&e0), e0.dot(&e1), e1.dot(&e1));
    let (d20, d21) = (e2.dot(&e0), e2.dot(&e1));
    let den = d00 * d11 - d01 * d01;
    let v = (d11 * d20 - d01 * d21) / den;
    let w = (d00 * d21 - d01 * d20) / den;
    [1.0 - v - w, v, w]
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn tri() -> [Vector3<f64>; 3] {
        [Vector3::new(0.0, 0.0, 0.0), Vector3::new(2.0, 0.0, 0.0), Vector3::new(0.0, 2.0, 0.0)]
    }

    #[test]
    fn projection_inside_gives_signed_gap_along_the_normal() {
        let down = -Vector3::z();
        let h = vertex_face(&Vector3::new(0.5, 0.5, 0.3), &down, &tri(), &Vector3::z(), [false; 3], &GapWindow::ALL).unwrap();
        assert_relative_eq!(h.gap, 0.3);
        assert_relative_eq!(h.normal, -Vector3::z());
        assert_relative_eq!(h.point_b, Vector3::new(0.5, 0.5, 0.0));
        let h = vertex_face(&Vector3::new(0.5, 0.5, -0.1), &down, &tri(), &Vector3::z(), [false; 3], &GapWindow::ALL).unwrap();
        assert_relative_eq!(h.gap, -0.1);
    }

    #[test]
    fn validity_range_rejections() {
        let down = -Vector3::z();
        // Outside the triangle, beyond the hypotenuse.
        assert!(vertex_face(&Vector3::new(1.5, 1.5, 0.3), &down, &tri(), &Vector3::z(), [false; 3], &GapWindow::ALL).is_none());
        // On an edge: invalid unless that edge is inclusive.
        let p = Vector3::new(1.0, 0.0, 0.3);
        assert!(vertex_face(&p, &down, &tri(), &Vector3::z(), [false; 3], &GapWindow::ALL).is_none());
        assert!(vertex_face(&p, &down, &tri(), &Vector3::z(), [true, false, false], &GapWindow::ALL).is_some());
        assert!(vertex_face(&p, &down, &tri(), &Vector3::z(), [false, true, true], &GapWindow::ALL).is_none());
        // Back-facing vertex.
        assert!(vertex_face(&Vector3::new(0.5, 0.5, 0.3), &Vector3::z(), &tri(), &Vector3::z(), [false; 3], &GapWindow::ALL).is_none());
    }
}
