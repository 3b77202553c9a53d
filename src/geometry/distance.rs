//! Distances between mesh entities (time-step stage 2 "contact"): point,
//! segment and triangle, for the overlap test of the inflated per-entity
//! bounding volumes of the second-level search ([`crate::contact::entity_list`]).
//!
//! Each function returns the squared distance between two points that lie on
//! the two entities, chosen to be (up to rounding) the closest pair: never
//! below the true distance, and above it only by rounding.
use super::closest_point_on_triangle;
use nalgebra::Vector3;

/// Squared distance from `p` to the segment `[a, b]` (a point when `a = b`).
pub fn point_segment_distance_squared(p: &Vector3<f64>, a: &Vector3<f64>, b: &Vector3<f64>) -> f64 {
    let w = b - a;
    let l2 = w.norm_squared();
    let t = if l2 > 0.0 { ((p - a).dot(&w) / l2).clamp(0.0, 1.0) } else { 0.0 };
    (a + w * t - p).norm_squared()
}

/// Squared distance between the segments `[p1, q1]` and `[p2, q2]` (Ericson,
/// Real-Time Collision Detection §5.1.9, with the parallel case handled by
/// clamping).
pub fn segment_segment_distance_squared(p1: &Vector3<f64>, q1: &Vector3<f64>, p2: &Vector3<f64>, q2: &Vector3<f64>) -> f64 {
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.norm_squared(), d2.norm_squared(), d2.dot(&r));
    if a <= 0.0 {
        return point_segment_distance_squared(p1, p2, q2);
    }
    if e <= 0.0 {
        return point_segment_distance_squared(p2, p1, q1);
    }
    let (b, c) = (d1.dot(&d2), d1.dot(&r));
    let denom = a * e - b * b;
    let mut s = if denom > 0.0 { ((b * f - c * e) / denom).clamp(0.0, 1.0) } else { 0.0 };
    let mut t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = (-c / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - c) / a).clamp(0.0, 1.0);
    }
    (p1 + d1 * s - (p2 + d2 * t)).norm_squared()
}

/// Squared distance from `p` to the triangle `tri` (closed).
pub fn point_triangle_distance_squared(p: &Vector3<f64>, tri: &[Vector3<f64>; 3]) -> f64 {
    (closest_point_on_triangle(p, &tri[0], &tri[1], &tri[2]).point - p).norm_squared()
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn point_segment() {
        let (a, b) = (Vector3::new(0.0, 0.0, 0.0), Vector3::new(2.0, 0.0, 0.0));
        assert_relative_eq!(point_segment_distance_squared(&Vector3::new(1.0, 3.0, 4.0), &a, &b), 25.0);
        assert_relative_eq!(point_segment_distance_squared(&Vector3::new(-1.0, 1.0, 0.0), &a, &b), 2.0);
        assert_relative_eq!(point_segment_distance_squared(&Vector3::new(3.0, 0.0, 1.0), &a, &a), 10.0);
    }

    #[test]
    fn segment_segment_crossing_parallel_and_end_to_end() {
        let x = |x: f64, y: f64, z: f64| Vector3::new(x, y, z);
        // Crossed at distance 0.5 in z.
        assert_relative_eq!(segment_segment_distance_squared(&x(-1.0, 0.0, 0.0), &x(1.0, 0.0, 0.0), &x(0.2, -1.0, 0.5), &x(0.2, 1.0, 0.5)), 0.25);
        // Parallel, overlapping in x, 0.3 apart.
        assert_relative_eq!(segment_segment_distance_squared(&x(0.0, 0.0, 0.0), &x(2.0, 0.0, 0.0), &x(1.0, 0.3, 0.0), &x(3.0, 0.3, 0.0)), 0.09, epsilon = 1e-15);
        // Parallel, disjoint in x: end to end.
        assert_relative_eq!(segment_segment_distance_squared(&x(0.0, 0.0, 0.0), &x(1.0, 0.0, 0.0), &x(2.0, 0.0, 0.0), &x(3.0, 0.0, 0.0)), 1.0);
        // Skew, closest points at the ends.
        assert_relative_eq!(segment_segment_distance_squared(&x(0.0, 0.0, 0.0), &x(1.0, 0.0, 0.0), &x(2.0, 1.0, 0.0), &x(2.0, 2.0, 0.0)), 2.0);
        // Brute force over a fine parameter grid never goes below the result.
        let (p1, q1, p2, q2) = (x(0.1, -0.3, 0.2), x(1.4, 0.8, -0.5), x(-0.2, 1.1, 0.9), x(1.2, -0.4, 0.3));
        let d = segment_segment_distance_squared(&p1, &q1, &p2, &q2);
        let mut best = f64::INFINITY;
        for i in 0..=400 {
            for j in 0..=400 {
                let (s, t) = (i as f64 / 400.0, j as f64 / 400.0);
                best = best.min((p1 + (q1 - p1) * s - p2 - (q2 - p2) * t).norm_squared());
            }
        }
        assert!(d <= best + 1e-15 && best - d < 1e-4, "{d} vs grid {best}");
    }

    #[test]
    fn point_triangle() {
        let tri = [Vector3::new(0.0, 0.0, 0.0), Vector3::new(1.0, 0.0, 0.0), Vector3::new(0.0, 1.0, 0.0)];
        assert_relative_eq!(point_triangle_distance_squared(&Vector3::new(0.2, 0.2, 0.5), &tri), 0.25);
        assert_relative_eq!(point_triangle_distance_squared(&Vector3::new(2.0, 0.0, 0.0), &tri), 1.0);
    }
}
