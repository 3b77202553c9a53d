//! The result every sub-region pair test (vertex–face, edge–edge,
//! vertex–edge, vertex–vertex) returns, shared by the pair files and the
//! mesh–mesh search that combines them.
use nalgebra::Vector3;

/// The solution of one sub-region pair's local contact problem (world frame).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FeatureHit {
    /// Contact point on body `a`'s surface.
    pub point_a: Vector3<f64>,
    /// Contact point on body `b`'s surface.
    pub point_b: Vector3<f64>,
    /// Unit normal from `a` to `b`.
    pub normal: Vector3<f64>,
    /// Signed gap `(point_b − point_a) · normal`.
    pub gap: f64,
}

impl FeatureHit {
    /// The same hit with the roles of `a` and `b` exchanged.
    pub fn swapped(self) -> Self {
        Self { point_a: self.point_b, point_b: self.point_a, normal: -self.normal, gap: self.gap }
    }

    /// Midway point.
    pub fn midpoint(&self) -> Vector3<f64> {
        0.5 * (self.point_a + self.point_b)
    }
}
