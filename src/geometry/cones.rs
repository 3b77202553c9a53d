//! External cones of mesh features (narrow phase, time-step stage 2
//! "contact"): the validity-range checks of the master–master sub-region
//! pairs (Gay Neto & Wriggers §2.4.4). A contact direction `d` (unit, pointing
//! out of the body) is admissible at an edge when it lies on the arc between
//! the edge's two face normals, and at a vertex when it lies in the cone
//! spanned by the vertex's distinct adjacent face normals. For convex features
//! these are exactly the normal cones; for a concave edge the arc is the
//! opening of the groove (Fig. 9 of the paper: a vertex in a concave region
//! projects validly onto the edge and both faces; the contact hierarchy of
//! §3.6 then decides, see `contact::mesh_mesh`).
use nalgebra::{Matrix3, Vector3};

/// Angular tolerance (radians) of the cone tests: directions this close to a
/// cone boundary count as inside, so a face lying flat on a face (normal on
/// the boundary of both edges' cones) still gives its edge and vertex
/// contacts — also while the faces rock against each other. With 1e-9 the
/// edge–edge pairs of two stacked blocks (Fig. 4c) switched off whenever
/// the upper block tilted by a few µrad the wrong way and came back
/// pre-compressed: the block rocked on a diagonal and the pile of §3.2
/// never came to rest (configs/pile-of-blocks.toml). 0.01 rad (0.6°) is
/// well above the tilts of resting or settling blocks (< 1e-3 rad measured)
/// and small against the angles between real faces.
pub const CONE_TOL: f64 = 0.01;

/// Angle between two vectors, accurate near 0 and π.
pub fn angle(a: &Vector3<f64>, b: &Vector3<f64>) -> f64 {
    a.cross(b).norm().atan2(a.dot(b))
}

/// True when unit `d` lies on the shorter great-circle arc between unit `n1`
/// and `n2` (within `tol` radians): the external cone of an edge with face
/// normals `n1`, `n2`, for directions perpendicular to the edge.
/// `tol` bounds both the angle past an end of the arc (to half of it, as
/// the angle sum grows twice as fast) and the angle out of the arc's plane
/// (where the angle sum grows only quadratically).
pub fn in_arc(d: &Vector3<f64>, n1: &Vector3<f64>, n2: &Vector3<f64>, tol: f64) -> bool {
    let c = n1.cross(n2);
    let cn = c.norm();
    let off_plane = if cn > 1e-12 { d.dot(&c).abs() / cn } else { 0.0 };
    off_plane <= tol.sin() && angle(n1, d) + angle(d, n2) <= angle(n1, n2) + tol
}

/// True when unit `d` lies in the convex cone spanned by the unit generators
/// `gens` (within `tol`): the external cone of a vertex with adjacent face
/// normals `gens`. By Carathéodory a direction in a 3-D cone lies in the cone
/// of at most three generators, so single generators, arcs of pairs and
/// triples are tried.
pub fn in_normal_cone(d: &Vector3<f64>, gens: &[Vector3<f64>], tol: f64) -> bool {
    let n = gens.len();
    for i in 0..n {
        if angle(d, &gens[i]) <= tol {
            return true;
        }
        for j in i + 1..n {
            if in_arc(d, &gens[i], &gens[j], tol) {
                return true;
            }
            for k in j + 1..n {
                let m = Matrix3::from_columns(&[gens[i], gens[j], gens[k]]);
                if m.determinant().abs() < 1e-12 {
                    continue;
                }
                if let Some(inv) = m.try_inverse() {
                    let x = inv * d;
                    // Tolerance on the coefficients ~ angular tolerance.
                    if x.iter().all(|&c| c >= -tol) {
                        return true;
                    }
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIGHT: f64 = 1e-9;

    #[test]
    fn cone_tolerance_admits_small_tilts_only() {
        let (x, z) = (Vector3::x(), Vector3::z());
        let past = |psi: f64| Vector3::new(-psi.sin(), 0.0, psi.cos()); // past z, away from x
        assert!(in_arc(&past(0.004), &x, &z, CONE_TOL));
        assert!(!in_arc(&past(0.006), &x, &z, CONE_TOL));
        let out = |psi: f64| Vector3::new(psi.cos(), psi.sin(), psi.cos()).normalize(); // out of the xz plane
        assert!(in_arc(&out(0.009), &x, &z, CONE_TOL));
        assert!(!in_arc(&out(0.02), &x, &z, CONE_TOL));
        let g = [Vector3::x(), Vector3::y(), Vector3::z()];
        assert!(in_normal_cone(&Vector3::new(1.0, 1.0, -0.005).normalize(), &g, CONE_TOL));
        assert!(!in_normal_cone(&Vector3::new(1.0, 1.0, -0.03).normalize(), &g, CONE_TOL));
    }

    #[test]
    fn arc_between_two_normals() {
        let (x, z) = (Vector3::x(), Vector3::z());
        assert!(in_arc(&Vector3::new(1.0, 0.0, 1.0).normalize(), &x, &z, TIGHT));
        assert!(in_arc(&x, &x, &z, TIGHT));
        assert!(!in_arc(&Vector3::new(-1.0, 0.0, 1.0).normalize(), &x, &z, TIGHT));
        assert!(!in_arc(&Vector3::new(1.0, 0.1, 1.0).normalize(), &x, &z, TIGHT));
    }

    #[test]
    fn cube_corner_cone_is_the_octant() {
        let g = [Vector3::x(), Vector3::y(), Vector3::z()];
        assert!(in_normal_cone(&Vector3::new(1.0, 2.0, 3.0).normalize(), &g, TIGHT));
        assert!(in_normal_cone(&Vector3::new(1.0, 1.0, 0.0).normalize(), &g, TIGHT));
        assert!(in_normal_cone(&Vector3::z(), &g, TIGHT));
        assert!(!in_normal_cone(&Vector3::new(1.0, 1.0, -0.01).normalize(), &g, TIGHT));
        assert!(!in_normal_cone(&Vector3::new(-1.0, 1.0, 1.0).normalize(), &g, TIGHT));
        assert!(!in_normal_cone(&Vector3::x(), &[], TIGHT));
    }
}
