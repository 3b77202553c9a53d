//! Closest point on a triangle (narrow phase, time-step stage 2 "contact"):
//! the point, its barycentric coordinates and the Voronoi feature it lies on.
use nalgebra::Vector3;

/// The feature of a triangle `(v0, v1, v2)` a closest point lies on.
///
/// Edges are numbered by their first vertex: `Edge(0)` is `v0v1`, `Edge(1)`
/// is `v1v2`, `Edge(2)` is `v2v0`. `Vertex(k)` is `vk`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TriFeature {
    /// The interior of the triangle: the query projects onto the face.
    Face,
    /// The closed edge `k` (without its end vertices).
    Edge(u8),
    /// Vertex `k`.
    Vertex(u8),
}

impl TriFeature {
    /// Dimension of the feature: 2 face, 1 edge, 0 vertex.
    pub fn dimension(self) -> u8 {
        match self {
            TriFeature::Face => 2,
            TriFeature::Edge(_) => 1,
            TriFeature::Vertex(_) => 0,
        }
    }
}

/// Result of [`closest_point_on_triangle`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TriangleClosest {
    /// The closest point of the (closed) triangle to the query point.
    pub point: Vector3<f64>,
    /// Barycentric coordinates `(u, v, w)` of `point`: `u v0 + v v1 + w v2`,
    /// non-negative and summing to one.
    pub bary: [f64; 3],
    /// The feature `point` lies on.
    pub feature: TriFeature,
}

/// Closest point of triangle `(a, b, c)` to `p`, by the Voronoi regions of the
/// triangle (Ericson, *Real-Time Collision Detection*, §5.1.5).
///
/// Points on a region boundary go to the lower-dimensional feature (a point
/// projecting exactly onto an edge is `Edge`, not `Face`). The unit normal of
/// the contact is `(p - point) / |p - point|`, which is the face normal only
/// when the feature is `Face`. The triangle must not be degenerate.
pub fn closest_point_on_triangle(p: &Vector3<f64>, a: &Vector3<f64>, b: &Vector3<f64>, c: &Vector3<f64>) -> TriangleClosest {
    let ab = b - a;
    let ac = c - a;
    let ap = p - a;
    let d1 = ab.dot(&ap);
    let d2 = ac.dot(&ap);
    if d1 <= 0.0 && d2 <= 0.0 {
        return TriangleClosest { point: *a, bary: [1.0, 0.0, 0.0], feature: TriFeature::Vertex(0) };
    }
    let bp = p - b;
    let d3 = ab.dot(&bp);
    let d4 = ac.dot(&bp);
    if d3 >= 0.0 && d4 <= d3 {
        return TriangleClosest { point: *b, bary: [0.0, 1.0, 0.0], feature: TriFeature::Vertex(1) };
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return TriangleClosest { point: a + ab * v, bary: [1.0 - v, v, 0.0], feature: TriFeature::Edge(0) };
    }
    let cp = p - c;
    let d5 = ab.dot(&cp);
    let d6 = ac.dot(&cp);
    if d6 >= 0.0 && d5 <= d6 {
        return TriangleClosest { point: *c, bary: [0.0, 0.0, 1.0], feature: TriFeature::Vertex(2) };
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return TriangleClosest { point: a + ac * w, bary: [1.0 - w, 0.0, w], feature: TriFeature::Edge(2) };
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return TriangleClosest { point: b + (c - b) * w, bary: [0.0, 1.0 - w, w], feature: TriFeature::Edge(1) };
    }
    let denom = 1.0 / (va + vb + vc);
    let v = vb * denom;
    let w = vc * denom;
    TriangleClosest { point: a + ab * v + ac * w, bary: [1.0 - v - w, v, w], feature: TriFeature::Face }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn tri() -> [Vector3<f64>; 3] {
        [Vector3::new(0.0, 0.0, 0.0), Vector3::new(2.0, 0.0, 0.0), Vector3::new(0.0, 2.0, 0.0)]
    }

    fn check(p: Vector3<f64>, point: Vector3<f64>, bary: [f64; 3], feature: TriFeature) {
        let [a, b, c] = tri();
        let r = closest_point_on_triangle(&p, &a, &b, &c);
        assert_eq!(r.feature, feature, "query {p:?}");
        assert_relative_eq!(r.point, point, epsilon = 1e-14);
        for (got, want) in r.bary.iter().zip(bary) {
            assert_relative_eq!(*got, want, epsilon = 1e-14);
        }
        assert_relative_eq!(a * r.bary[0] + b * r.bary[1] + c * r.bary[2], r.point, epsilon = 1e-14);
    }

    #[test]
    fn face_region_projects_onto_the_plane() {
        check(Vector3::new(0.5, 0.5, 3.0), Vector3::new(0.5, 0.5, 0.0), [0.5, 0.25, 0.25], TriFeature::Face);
        check(Vector3::new(0.5, 0.5, -1.0), Vector3::new(0.5, 0.5, 0.0), [0.5, 0.25, 0.25], TriFeature::Face);
    }

    #[test]
    fn vertex_regions() {
        check(Vector3::new(-1.0, -1.0, 0.5), Vector3::new(0.0, 0.0, 0.0), [1.0, 0.0, 0.0], TriFeature::Vertex(0));
        check(Vector3::new(3.0, -0.5, 1.0), Vector3::new(2.0, 0.0, 0.0), [0.0, 1.0, 0.0], TriFeature::Vertex(1));
        check(Vector3::new(-0.5, 3.0, -1.0), Vector3::new(0.0, 2.0, 0.0), [0.0, 0.0, 1.0], TriFeature::Vertex(2));
    }

    #[test]
    fn edge_regions() {
        check(Vector3::new(1.5, -1.0, 1.0), Vector3::new(1.5, 0.0, 0.0), [0.25, 0.75, 0.0], TriFeature::Edge(0));
        // Beyond the hypotenuse: (1.5, 1.5) projects to (1, 1).
        check(Vector3::new(1.5, 1.5, 2.0), Vector3::new(1.0, 1.0, 0.0), [0.0, 0.5, 0.5], TriFeature::Edge(1));
        check(Vector3::new(-2.0, 0.5, 0.0), Vector3::new(0.0, 0.5, 0.0), [0.75, 0.0, 0.25], TriFeature::Edge(2));
    }

    #[test]
    fn boundaries_go_to_the_lower_dimensional_feature() {
        // Exactly above an edge: the edge, not the face.
        check(Vector3::new(1.0, 0.0, 1.0), Vector3::new(1.0, 0.0, 0.0), [0.5, 0.5, 0.0], TriFeature::Edge(0));
        // Exactly above a vertex.
        check(Vector3::new(0.0, 0.0, 1.0), Vector3::new(0.0, 0.0, 0.0), [1.0, 0.0, 0.0], TriFeature::Vertex(0));
    }

    #[test]
    fn closest_point_is_never_farther_than_samples() {
        let [a, b, c] = tri();
        let mut s = 0x1234_5678_u64;
        let mut rnd = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (s >> 11) as f64 / (1u64 << 53) as f64
        };
        for _ in 0..200 {
            let p = Vector3::new(6.0 * rnd() - 2.0, 6.0 * rnd() - 2.0, 4.0 * rnd() - 2.0);
            let r = closest_point_on_triangle(&p, &a, &b, &c);
            let d = (p - r.point).norm();
            for i in 0..=20 {
                for j in 0..=(20 - i) {
                    let q = a + (b - a) * (i as f64 / 20.0) + (c - a) * (j as f64 / 20.0);
                    assert!(d <= (p - q).norm() + 1e-12);
                }
            }
        }
    }
}
