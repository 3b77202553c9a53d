//! The near null space for algebraic multigrid (`-pc_type gamg`) of the
//! body-DOF matrices: the DEM tangent M/(βΔt²) + K_contact and the
//! compatibility Hessian Bᵀ K̃ B are stiff along the contacts and soft (or
//! singular) along the six rigid motions of the whole assembly, the modes a
//! smoothed aggregation must carry to the coarse levels. Layout: 6 DOFs per
//! body (DOF = 6·index + k: displacement, then rotation).
use crate::body::Bodies;
use crate::parallel::{self, Comm};
use crate::petsc::{NormType, Result, Vector};
use nalgebra::Vector3;

/// Translations along x, y, z and rotations about x, y, z through the
/// centroid of all bodies (the same span as about the origin, better
/// conditioned far from it), zero on the DOFs where `free(6·i + k)` is
/// false, orthonormalised (modified Gram–Schmidt; a mode that vanishes is
/// left out). `like`: a vector of the matrix's layout (6 entries per owned
/// body). Collective.
pub fn rigid_modes(comm: &Comm, bodies: &Bodies, n_owned: usize, like: &Vector, free: impl Fn(usize) -> bool) -> Result<Vec<Vector>> {
    let local: Vector3<f64> = (0..n_owned).map(|i| bodies.position[i]).sum();
    let count = parallel::sum_f64(comm, n_owned as f64).max(1.0);
    let c = Vector3::new(parallel::sum_f64(comm, local.x), parallel::sum_f64(comm, local.y), parallel::sum_f64(comm, local.z)) / count;
    let mut out: Vec<Vector> = Vec::with_capacity(6);
    for m in 0..6 {
        let mut v = like.duplicate()?;
        {
            let mut vv = v.view_mut()?;
            for i in 0..n_owned {
                let mut e = [0.0; 6];
                if m < 3 {
                    e[m] = 1.0;
                } else {
                    // δx = e_axis × (x_i − c), δθ = e_axis.
                    let t = Vector3::ith(m - 3, 1.0).cross(&(bodies.position[i] - c));
                    e[..3].copy_from_slice(t.as_slice());
                    e[m] = 1.0;
                }
                for (k, ek) in e.iter().enumerate() {
                    vv[6 * i + k] = if free(6 * i + k) { *ek } else { 0.0 };
                }
            }
        }
        let nrm0 = v.norm(NormType::Two)?;
        for q in &out {
            let a = v.dot(q)?;
            v.axpy(-a, q)?;
        }
        let nrm = v.norm(NormType::Two)?;
        if nrm > 1e-8 * nrm0 {
            v.scale(1.0 / nrm)?;
            out.push(v);
        }
    }
    Ok(out)
}
