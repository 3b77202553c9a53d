//! Geometry kernels for contact detection (time-step stage 2 "contact"):
//! closest points, mesh sub-regions (faces, edges, vertices) and bounding
//! volumes. Pure functions of positions; no MPI, no configuration.
pub mod cones;
pub mod distance;
pub mod mesh_distance;
pub mod mesh_features;
pub mod triangle;

pub use cones::{in_arc, in_normal_cone, CONE_TOL};
pub use distance::{point_segment_distance_squared, point_triangle_distance_squared, segment_segment_distance_squared};
pub use mesh_distance::mesh_distance;
pub use mesh_features::{MeshFeatures, SubRegion};
pub use triangle::{closest_point_on_triangle, TriFeature, TriangleClosest};

use nalgebra::Vector3;

/// Signed distance of `p` to the plane through `point` with normal `normal`:
/// positive on the side `normal` points to. `normal` need not be unit.
pub fn point_plane_signed_distance(p: &Vector3<f64>, point: &Vector3<f64>, normal: &Vector3<f64>) -> f64 {
    (p - point).dot(normal) / normal.norm()
}

/// An axis-aligned bounding box. An empty box has `min > max`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub min: Vector3<f64>,
    /// Upper corner.
    pub max: Vector3<f64>,
}

impl Aabb {
    /// The empty box (holds nothing; `grow` makes it hold something).
    pub fn empty() -> Self {
        Self { min: Vector3::repeat(f64::INFINITY), max: Vector3::repeat(f64::NEG_INFINITY) }
    }

    /// The box of a sphere.
    pub fn from_sphere(center: &Vector3<f64>, radius: f64) -> Self {
        Self { min: center.add_scalar(-radius), max: center.add_scalar(radius) }
    }

    /// True when the box holds no point.
    pub fn is_empty(&self) -> bool {
        self.min.x > self.max.x || self.min.y > self.max.y || self.min.z > self.max.z
    }

    /// Grows the box to hold the point `p`.
    pub fn grow(&mut self, p: &Vector3<f64>) {
        self.min = self.min.inf(p);
        self.max = self.max.sup(p);
    }

    /// Squared distance from `p` to the box (zero inside).
    pub fn distance_squared(&self, p: &Vector3<f64>) -> f64 {
        let d = (self.min - p).sup(&Vector3::zeros()).sup(&(p - self.max));
        d.norm_squared()
    }

    /// True when the sphere `(center, radius)` touches or overlaps the box.
    pub fn intersects_sphere(&self, center: &Vector3<f64>, radius: f64) -> bool {
        self.distance_squared(center) <= radius * radius
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn plane_distance_is_signed_and_scale_free() {
        let p0 = Vector3::new(0.0, 0.0, 1.0);
        let n = Vector3::new(0.0, 0.0, 2.0);
        assert_relative_eq!(point_plane_signed_distance(&Vector3::new(5.0, 3.0, 4.0), &p0, &n), 3.0);
        assert_relative_eq!(point_plane_signed_distance(&Vector3::new(5.0, 3.0, -1.0), &p0, &n), -2.0);
    }

    #[test]
    fn aabb_sphere_distance() {
        let mut b = Aabb::empty();
        assert!(b.is_empty());
        b.grow(&Vector3::new(0.0, 0.0, 0.0));
        b.grow(&Vector3::new(1.0, 1.0, 1.0));
        assert!(!b.is_empty());
        assert_eq!(b.distance_squared(&Vector3::new(0.5, 0.5, 0.5)), 0.0);
        assert_relative_eq!(b.distance_squared(&Vector3::new(2.0, 2.0, 0.5)), 2.0);
        assert!(b.intersects_sphere(&Vector3::new(2.0, 0.5, 0.5), 1.0));
        assert!(!b.intersects_sphere(&Vector3::new(2.0, 2.0, 0.5), 1.4));
        let s = Aabb::from_sphere(&Vector3::new(1.0, 2.0, 3.0), 0.5);
        assert_eq!(s.min, Vector3::new(0.5, 1.5, 2.5));
    }
}
