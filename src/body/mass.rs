//! Mass properties of spheres and of closed triangle meshes (divergence
//! theorem: a signed tetrahedron per triangle with the origin as apex).
use nalgebra::{Matrix3, Vector3};

/// Volume, centroid and inertia about the centroid, for unit density.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MassProperties {
    pub volume: f64,
    pub centroid: Vector3<f64>,
    /// Inertia tensor about the centroid per unit density (multiply by density).
    pub inertia: Matrix3<f64>,
}

impl MassProperties {
    pub fn sphere(radius: f64) -> Self {
        let volume = 4.0 / 3.0 * std::f64::consts::PI * radius.powi(3);
        let i = 0.4 * volume * radius * radius;
        Self { volume, centroid: Vector3::zeros(), inertia: Matrix3::from_diagonal_element(i) }
    }

    /// Mass properties of the solid bounded by a closed, outward-oriented
    /// triangle surface. Each triangle (a, b, c) and the origin span a signed
    /// tetrahedron with volume det[a b c]/6 and second moment
    /// det(A) A C₀ Aᵀ, C₀ the canonical tetrahedron's covariance.
    pub fn closed_mesh(vertices: &[Vector3<f64>], triangles: &[[u32; 3]]) -> Self {
        let c0 = Matrix3::new(2.0, 1.0, 1.0, 1.0, 2.0, 1.0, 1.0, 1.0, 2.0) / 120.0;
        let mut volume = 0.0;
        let mut first = Vector3::zeros();
        let mut second = Matrix3::zeros();
        for t in triangles {
            let (a, b, c) = (vertices[t[0] as usize], vertices[t[1] as usize], vertices[t[2] as usize]);
            let m = Matrix3::from_columns(&[a, b, c]);
            let det = m.determinant();
            volume += det / 6.0;
            first += det / 24.0 * (a + b + c);
            second += det * m * c0 * m.transpose();
        }
        let centroid = if volume != 0.0 { first / volume } else { Vector3::zeros() };
        // Shift the second moment to the centroid (parallel axis theorem).
        let cov = second - volume * centroid * centroid.transpose();
        let inertia = Matrix3::from_diagonal_element(cov.trace()) - cov;
        Self { volume, centroid, inertia }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn cube() -> (Vec<Vector3<f64>>, Vec<[u32; 3]>) {
        let m = crate::body::TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        (m.vertices.clone(), m.triangles.clone())
    }

    #[test]
    fn unit_cube_has_volume_one_and_inertia_one_sixth() {
        let (v, t) = cube();
        assert_eq!(t.len(), 12);
        let mp = MassProperties::closed_mesh(&v, &t);
        assert_relative_eq!(mp.volume, 1.0, epsilon = 1e-14);
        assert_relative_eq!(mp.centroid.norm(), 0.0, epsilon = 1e-14);
        for i in 0..3 {
            assert_relative_eq!(mp.inertia[(i, i)], 1.0 / 6.0, epsilon = 1e-14);
            for j in 0..3 {
                if i != j {
                    assert_relative_eq!(mp.inertia[(i, j)], 0.0, epsilon = 1e-14);
                }
            }
        }
    }

    #[test]
    fn shifted_cube_keeps_inertia_and_moves_centroid() {
        let (v, t) = cube();
        let shift = Vector3::new(3.0, -2.0, 5.0);
        let v: Vec<_> = v.iter().map(|p| p + shift).collect();
        let mp = MassProperties::closed_mesh(&v, &t);
        assert_relative_eq!(mp.volume, 1.0, epsilon = 1e-12);
        assert_relative_eq!(mp.centroid, shift, epsilon = 1e-12);
        assert_relative_eq!(mp.inertia, Matrix3::from_diagonal_element(1.0 / 6.0), epsilon = 1e-12);
    }

    #[test]
    fn tessellated_sphere_approaches_analytic() {
        let r = 0.7;
        let coarse = crate::body::TriMesh::icosphere(r, 2);
        let fine = crate::body::TriMesh::icosphere(r, 5);
        let exact = MassProperties::sphere(r);
        let err = |m: &crate::body::TriMesh| {
            let mp = m.mass_properties();
            let ev = (mp.volume - exact.volume).abs() / exact.volume;
            // 2/5 m r² with m = volume of the mesh itself (unit density).
            let ei = (mp.inertia[(0, 0)] - exact.inertia[(0, 0)]).abs() / exact.inertia[(0, 0)];
            (ev, ei)
        };
        let (ev_c, ei_c) = err(&coarse);
        let (ev_f, ei_f) = err(&fine);
        assert!(ev_f < 1e-3 && ei_f < 2e-3, "fine sphere: volume err {ev_f}, inertia err {ei_f}");
        assert!(ev_f < ev_c / 10.0 && ei_f < ei_c / 10.0, "refinement must converge");
        let mp = fine.mass_properties();
        let ratio = mp.inertia[(1, 1)] / (mp.volume * r * r);
        assert_relative_eq!(ratio, 0.4, epsilon = 2e-3);
    }
}
