//! CD, step 3b (alternative): projected Gauss–Seidel on the LCP (21),
//! 0 ≤ f ⊥ Nf + p ≥ 0.
//!
//! Inside a rank the contacts are visited one at a time in the configured
//! order (`forward` or `reverse` contact-list order), each updated to
//! f_i ← max(0, f_i − (Nf + p)_i / N_ii) with `w = M⁻¹ Bᵀ f` kept up to date
//! incrementally. Between ranks it is Jacobi: at the start of each sweep
//! `Bᵀ f` is formed globally (MatMultTranspose) and the ghost bodies' entries
//! are fetched from their owners (MatMult with a 0/1 gather matrix), so the
//! other ranks' contributions are frozen during the sweep.
//!
//! PGS is order-dependent: where N is singular (more contacts than the
//! bodies' DOFs can resolve, e.g. a beam on three supports) the forces it
//! returns depend on the contact order (paper Fig. 1) — the velocities, which
//! are unique, do not. Stopping rule as in [`super::apgd`]; the residual is
//! evaluated exactly at the start of every sweep.
use super::apgd::{threshold, QpResult};
use super::operator::ContactOperator;
use crate::contact::WALL_INDEX;
use crate::parallel::exchange::Layout;
use crate::parallel::Comm;
use crate::petsc::{InsertMode, Mat, PetscInt, Result, Vector};
use crate::scene::PgsOrder;
use nalgebra::Vector6;

/// Gathers the ghost bodies' entries of a body vector: rows = 6 per ghost
/// of this rank, one 1 per row at the ghost's global DOF.
fn ghost_gather(comm: &Comm, layout: &Layout, n_local_bodies: usize) -> Result<Mat> {
    let n_owned = layout.n_owned;
    let n_ghost = n_local_bodies - n_owned;
    let own = layout.offset..layout.offset + n_owned as u64;
    let (mut d_nnz, mut o_nnz) = (Vec::with_capacity(6 * n_ghost), Vec::with_capacity(6 * n_ghost));
    for g in 0..n_ghost {
        let mine = own.contains(&layout.global_index[n_owned + g]);
        for _ in 0..6 {
            d_nnz.push(mine as PetscInt);
            o_nnz.push((!mine) as PetscInt);
        }
    }
    let mut m = Mat::aij(comm, 6 * n_ghost as PetscInt, 6 * n_owned as PetscInt, 0, &d_nnz, 0, &o_nnz)?;
    let row0 = m.ownership_range()?.start;
    for g in 0..n_ghost {
        let col0 = 6 * layout.global_index[n_owned + g] as PetscInt;
        for k in 0..6 {
            let row = row0 + (6 * g + k) as PetscInt;
            m.set_values(&[row], &[col0 + k as PetscInt], &[1.0], InsertMode::Insert)?;
        }
    }
    m.assemble()?;
    Ok(m)
}

/// Solves (21) in place by PGS; `f` holds the warm start on entry. Collective.
#[allow(clippy::too_many_arguments)]
pub fn pgs(
    comm: &Comm,
    op: &ContactOperator,
    layout: &Layout,
    n_local_bodies: usize,
    p: &Vector,
    f: &mut Vector,
    tol: f64,
    max_it: u32,
    order: PgsOrder,
) -> Result<QpResult> {
    let thr = threshold(p, tol)?;
    // Frictionless only (`config` refuses pgs with friction): one row per contact.
    debug_assert_eq!(op.rows, 1);
    op.constraint(super::friction::Set::Normal).project(&mut f.view_mut()?);
    let gather = ghost_gather(comm, layout, n_local_bodies)?;
    let (_, mut ghost_u) = gather.create_vecs()?;
    let mut u = op.body_vec()?;
    let nc = op.n_local();
    let dt = op.dt;
    // M⁻¹ jᵀ per contact side and the diagonal of N.
    let ma: Vec<Vector6<f64>> = (0..nc).map(|i| op.minv[op.ia[i]] * op.ja[i]).collect();
    let mb: Vec<Vector6<f64>> =
        (0..nc).map(|i| if op.ib[i] == WALL_INDEX { Vector6::zeros() } else { op.minv[op.ib[i]] * op.jb[i] }).collect();
    let diag: Vec<f64> = (0..nc).map(|i| dt * (op.ja[i].dot(&ma[i]) + op.jb[i].dot(&mb[i]))).collect();
    let pl: Vec<f64> = p.view()?.to_vec();
    let mut fl: Vec<f64> = f.view()?.to_vec();
    let order: Vec<usize> = match order {
        PgsOrder::Forward => (0..nc).collect(),
        PgsOrder::Reverse => (0..nc).rev().collect(),
    };
    let mut w = vec![Vector6::<f64>::zeros(); n_local_bodies];
    let mut sweeps = 0u64;
    let mut res;
    loop {
        // w = M⁻¹ Bᵀ f on owned and ghost bodies (all ranks' contributions).
        {
            let mut fv = f.view_mut()?;
            fv.copy_from_slice(&fl);
        }
        op.b.mult_transpose(f, &mut u)?;
        gather.mult(&u, &mut ghost_u)?;
        {
            let (uv, gv) = (u.view()?, ghost_u.view()?);
            for (j, wj) in w.iter_mut().enumerate() {
                let s = if j < op.n_owned { &uv[6 * j..6 * j + 6] } else { &gv[6 * (j - op.n_owned)..6 * (j - op.n_owned) + 6] };
                *wj = op.minv[j] * Vector6::from_column_slice(s);
            }
        }
        let local_res = (0..nc)
            .filter(|&i| op.active[i])
            .map(|i| fl[i].min(normal_velocity(op, &w, i) * dt + pl[i]).abs())
            .fold(0.0, f64::max);
        res = crate::parallel::max_f64(comm, local_res);
        if res <= thr || sweeps >= max_it as u64 || crate::parallel::signals::agreed_at(comm, sweeps) {
            break;
        }
        sweeps += 1;
        for &i in &order {
            if !op.active[i] || diag[i] <= 0.0 {
                fl[i] = 0.0;
                continue;
            }
            let r = normal_velocity(op, &w, i) * dt + pl[i];
            // A contact on a ghost: its owner's rank moves the same body in
            // the same sweep without seeing this update (Jacobi across
            // ranks); half steps there keep the two from overshooting in
            // turn. The fixed point (the LCP's solution) is the same.
            let omega = if op.ib[i] != WALL_INDEX && op.ib[i] >= op.n_owned { 0.5 } else { 1.0 };
            let new = (fl[i] - omega * r / diag[i]).max(0.0);
            let df = new - fl[i];
            if df != 0.0 {
                w[op.ia[i]] += ma[i] * df;
                if op.ib[i] != WALL_INDEX {
                    w[op.ib[i]] += mb[i] * df;
                }
                fl[i] = new;
            }
        }
    }
    Ok(QpResult { iterations: sweeps, residual: res, threshold: thr, converged: res <= thr, ..Default::default() })
}

/// `(B w)_i` from the local copy of w.
fn normal_velocity(op: &ContactOperator, w: &[Vector6<f64>], i: usize) -> f64 {
    let mut s = op.ja[i].dot(&w[op.ia[i]]);
    if op.ib[i] != WALL_INDEX {
        s += op.jb[i].dot(&w[op.ib[i]]);
    }
    s
}
