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

/// The gaps a search keeps, `min ≤ gap < max`: each pair test checks its
/// gap against it before the validity cones, the costly part, so a pair
/// outside the window costs only its closest points.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GapWindow {
    /// Deepest penetration kept (a negative gap).
    pub min: f64,
    /// Gaps from this on are dropped.
    pub max: f64,
}

impl GapWindow {
    /// Every gap.
    pub const ALL: Self = Self { min: f64::NEG_INFINITY, max: f64::INFINITY };

    /// True when `min ≤ gap < max`.
    pub fn contains(&self, gap: f64) -> bool {
        gap >= self.min && gap < self.max
    }
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
