//! `[compatibility] method = "interior-point"`: the compatible frictional
//! forces (Hooke, p = 2) over the forces instead of the displacements,
//!
//! ```text
//! min  Σ_i f_n²/2k̃ + |f_t|²/2k_t + eᵀf_t     s.t.  Bᵀ f = F̃,  (μ f_n, f_t) ∈ SOC
//! ```
//!
//! (e the contact's elastic history: the dual of [`super::dual`]'s Π with
//! the Coulomb cone for the Tresca discs), by a primal–dual interior-point
//! method: Mehrotra's predictor–corrector with Nesterov–Todd scaling of
//! each contact's second-order cone (L. Vandenberghe, "The CVXOPT linear
//! and quadratic cone program solvers", 2010). Each step eliminates the
//! forces contact by contact and solves the body-DOF Schur complement
//! S = Σ_i B_iᵀ M_i H_i⁻¹ M_iᵀ B_i, assembled like the Newton Hessian
//! ([`Dual::assemble_blocks`]), by a sparse LU factorisation (MUMPS, through
//! KSP: options prefix `compat_ipm_`); up to
//! [`super::newton::DIRECT_MAX_BODIES`] bodies the whole S on every rank
//! (`redundant`, sequential MUMPS: the same from run to run, which MUMPS's
//! parallel LU is not: 12 to 17 of the 500-grain pour's first 100 steps
//! short from one run to the next, 15 in every run this way).
//! Its equality multipliers are −u, the body displacements.
//!
//! The cone makes the law associated: a contact sliding in the solution
//! would open by μ times its slip. Coulomb's law does not, so an outer loop
//! shifts the normal objective of each contact by μ |z_t| (its plastic
//! slip, the tangential part of the cone's multiplier), the fixed point of
//! De Saxcé's bipotential, until the forces settle. A contact that slides
//! in the CD step ([`super::cd_slip`]) keeps CD's ratio f_t = c f_n: its
//! force is one unknown f_n ≥ 0 along n + c t (conjugate to the
//! displacement along n + c t, where the Newton rounds that finish take
//! the one along n). Contacts bounded by μ_s
//! that end on the cone are re-solved with μ_d.
//!
//! A solve takes 6 to 11 steps. Near a degenerate solution (a contact
//! exactly at its bound that does not slip) it converges only to the
//! square root of its gap, so [`super::solve_dual`] lets the Newton rounds
//! of [`super::tresca`] finish from its displacements. Its accuracy is
//! limited near 1e-10 (relative equilibrium) by the factorisation of S,
//! which floppy contacts make singular (a small regularisation keeps it
//! solvable; each step's KKT solve is refined twice with the same
//! factors); Krylov methods stall on S as the iterates near the cones'
//! boundaries. Where a grain can slide on all its contacts at once, S
//! is singular along that slip and the multipliers grow along it without
//! bound; the steps then shrink to nothing short of the tolerance. Where the problem has no solution (a settled pack standing
//! on nearly all its friction, the compatible-cd chapter) the outer loop
//! does not settle and the solve reports that it stopped short.
//!
//! Measured on the 500-grain pour's step 85 and not kept: a proximal term
//! ρ D on S (D = diag(Bᵀ K̃ B), the centre moved to y every step, kept by
//! the refinement) bounds dy but slows the equilibrium rows as much: stops
//! at 3e-7 (ρ = 1e-4) and 2e-3 (ρ = 1e-2) against 8e-8. Freezing the
//! contacts on their cones at the stalled iterate as rays at its f_t/f_n
//! and solving again: the gap falls to 3e-11 but equilibrium stays at
//! 5e-8, the ratios being only as exact as the stalled iterate.
use super::dual::{Dual, DualResult};
use super::tresca::{Friction, Rounds};
use crate::body::Bodies;
use crate::petsc::{Ksp, NormType, Result, Vector};
use nalgebra::{Matrix3, Vector3};

/// Options prefix of the interior-point solver's KSP.
pub const PREFIX: &str = "compat_ipm_";

/// Fraction of the step to the cone boundary taken.
const STEP_FRACTION: f64 = 0.99;

/// Outer (De Saxcé) iterations before a solve stops short.
const MAX_OUTER: u32 = 60;

/// Relative change of the forces between outer iterations at which they
/// have settled; the dual residual and gap of an inner solve are met
/// to these (the primal residual, equilibrium, to the feasibility
/// tolerance).
const SETTLED: f64 = 1e-8;
const GAP: f64 = 1e-10;

/// The dual residual and gap an inner solve's best iterate must meet when
/// it stops on lost accuracy.
const DUAL_OK: f64 = 1e-7;
const GAP_OK: f64 = 1e-9;

/// Regularisation of the Schur complement (× diag(Bᵀ K̃ B)): the
/// equilibrium rows of DOFs only floppy combinations of contacts move are
/// dependent.
const REG: f64 = 1e-13;

/// Refinement passes of each interior-point step's KKT solve.
const REFINE: usize = 2;

/// How a contact's force is parametrised by its cone variable w.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    /// No force (left out of the truss).
    Off,
    /// w = (μ f_n, f_t) in the second-order cone.
    Cone(f64),
    /// f = w₀ (1, c) with w₀ ≥ 0 (w₁, w₂ carry no force): a contact
    /// sliding in CD at f_t/f_n = c, or without friction (c = 0).
    Ray([f64; 2]),
}

impl Kind {
    /// M: f (n, t1, t2) = M w.
    fn m(&self) -> Matrix3<f64> {
        match *self {
            Kind::Off => Matrix3::zeros(),
            Kind::Cone(mu) => Matrix3::from_diagonal(&Vector3::new(1.0 / mu, 1.0, 1.0)),
            Kind::Ray(c) => Matrix3::new(1.0, 0.0, 0.0, c[0], 0.0, 0.0, c[1], 0.0, 0.0),
        }
    }
}

fn jdot(a: &Vector3<f64>, b: &Vector3<f64>) -> f64 {
    a[0] * b[0] - a[1] * b[1] - a[2] * b[2]
}

/// Nesterov–Todd scaling of one cone at (s, z) in its interior: W
/// (symmetric) and W⁻¹ with W s = W⁻¹ z.
fn nt_scaling(s: &Vector3<f64>, z: &Vector3<f64>) -> (Matrix3<f64>, Matrix3<f64>) {
    let j = Matrix3::from_diagonal(&Vector3::new(1.0, -1.0, -1.0));
    let (ns, nz) = (jdot(s, s).sqrt(), jdot(z, z).sqrt());
    let (sb, zb) = (s / ns, z / nz);
    let gam = ((1.0 + sb.dot(&zb)) / 2.0).sqrt();
    let wb = (zb + j * sb) / (2.0 * gam);
    let beta = (nz / ns).sqrt();
    let v = (wb + Vector3::x()) / (2.0 * (wb[0] + 1.0)).sqrt();
    let jv = j * v;
    (beta * (2.0 * v * v.transpose() - j), (2.0 * jv * jv.transpose() - j) / beta)
}

/// x with λ ∘ x = r (the Jordan product (λᵀx, λ₀ x₁ + x₀ λ₁)).
fn arw_solve(l: &Vector3<f64>, r: &Vector3<f64>) -> Vector3<f64> {
    let x0 = (l[0] * r[0] - l[1] * r[1] - l[2] * r[2]) / jdot(l, l);
    Vector3::new(x0, (r[1] - x0 * l[1]) / l[0], (r[2] - x0 * l[2]) / l[0])
}

fn jprod(a: &Vector3<f64>, b: &Vector3<f64>) -> Vector3<f64> {
    Vector3::new(a.dot(b), a[0] * b[1] + b[0] * a[1], a[0] * b[2] + b[0] * a[2])
}

/// The largest α with x + α d in the cone (∞ if any).
fn max_step(x: &Vector3<f64>, d: &Vector3<f64>) -> f64 {
    let (a, b, c) = (jdot(d, d), 2.0 * jdot(x, d), jdot(x, x));
    let mut out = if d[0] < 0.0 { -x[0] / d[0] } else { f64::INFINITY };
    // Roots of a α² + b α + c (c > 0 inside).
    if a.abs() > 1e-300 {
        let disc = b * b - 4.0 * a * c;
        if disc >= 0.0 {
            let sq = disc.sqrt();
            let q = -0.5 * (b + b.signum() * sq);
            for r in [q / a, if q != 0.0 { c / q } else { f64::INFINITY }] {
                if r > 0.0 {
                    out = out.min(r);
                }
            }
        }
    } else if b < 0.0 {
        out = out.min(-c / b);
    }
    out
}

/// H⁻¹ r with two steps of refinement: near the cones' boundaries H's
/// condition number reaches 1e16.
fn refined(h: &Matrix3<f64>, hinv: &Matrix3<f64>, r: &Vector3<f64>) -> Vector3<f64> {
    let mut x = hinv * r;
    for _ in 0..2 {
        x += hinv * (r - h * x);
    }
    x
}

/// One interior-point solve for the objective shifts `q` (per contact, in
/// w); returns the iterations, KSP iterations and whether it met its
/// tolerances. `w`, `z` and `y` hold the result. Collective.
#[allow(clippy::too_many_arguments)]
fn solve_once(dual: &Dual, ksp: &mut Ksp, h: &mut crate::petsc::Mat, kind: &[Kind], p: &[Vector3<f64>], q: &[Vector3<f64>], tol: f64, max_it: u32, w: &mut [Vector3<f64>], z: &mut [Vector3<f64>], y: &mut Vector) -> Result<(u64, u64, bool, f64)> {
    let comm = dual.comm;
    let nc = kind.len();
    let on: Vec<bool> = kind.iter().map(|k| *k != Kind::Off).collect();
    let cones = crate::parallel::sum_u64(comm, on.iter().filter(|&&o| o).count() as u64).max(1) as f64;
    let ms: Vec<Matrix3<f64>> = kind.iter().map(Kind::m).collect();
    for i in 0..nc {
        (w[i], z[i]) = if on[i] { (Vector3::x(), Vector3::x()) } else { (Vector3::zeros(), Vector3::zeros()) };
    }
    y.zero()?;
    let qnorm = crate::parallel::sum_f64(comm, q.iter().map(|v| v.norm_squared()).sum()).sqrt().max(1.0);
    let (mut f, mut by) = (dual.op.contact_vec()?, dual.op.contact_vec()?);
    let (mut rp, mut rhs, mut dy) = (dual.ft.duplicate()?, dual.ft.duplicate()?, dual.ft.duplicate()?);
    // The best iterate by max(primal, dual, gap): near the end the dual
    // residual loses accuracy first.
    let mut best: Option<(f64, Vec<Vector3<f64>>, Vec<Vector3<f64>>, Vector, [f64; 3])> = None;
    let (mut worse, mut linear, mut it) = (0, 0u64, 0u64);
    loop {
        // rp = Bᵀ M w − F̃, rd = P w + q − Mᵀ B y − z.
        {
            let mut fv = f.view_mut()?;
            for i in 0..nc {
                let fi = ms[i] * w[i];
                fv[3 * i..3 * i + 3].copy_from_slice(fi.as_slice());
            }
        }
        dual.op.b.mult_transpose(&f, &mut rp)?;
        rp.axpy(-1.0, &dual.ft)?;
        dual.op.b.mult(y, &mut by)?;
        let rd: Vec<Vector3<f64>> = {
            let bv = by.view()?;
            (0..nc).map(|i| if on[i] { p[i].component_mul(&w[i]) + q[i] - ms[i].transpose() * Vector3::from_column_slice(&bv[3 * i..3 * i + 3]) - z[i] } else { Vector3::zeros() }).collect()
        };
        let mut sums = [0.0; 3];
        for i in 0..nc {
            sums[0] += w[i].dot(&z[i]);
            sums[1] += rd[i].norm_squared();
            sums[2] += p[i].component_mul(&w[i]).dot(&w[i]);
        }
        crate::parallel::sum_f64s(comm, &mut sums);
        let gap = sums[0];
        let pres = rp.norm(NormType::Two)? / dual.ft_norm;
        let dres = sums[1].sqrt() / qnorm;
        let gap_rel = gap / sums[2].max(1.0);
        let merit = pres.max(dres).max(gap_rel);
        log::debug!("compatibility: interior point {it}: primal {pres:e}, dual {dres:e}, gap {gap_rel:e}");
        if best.as_ref().is_none_or(|b| merit < b.0) {
            best = Some((merit, w.to_vec(), z.to_vec(), y.try_clone()?, [pres, dres, gap_rel]));
            worse = 0;
        } else {
            worse += 1;
        }
        if (pres <= tol && dres <= SETTLED && gap_rel <= GAP) || worse >= 2 || it >= max_it as u64 || crate::parallel::signals::agreed(comm) {
            break;
        }
        it += 1;
        // Scaling, H = P + WᵀW, and the Schur complement's blocks M H⁻¹ Mᵀ.
        let mut ws = Vec::with_capacity(nc);
        let mut hinv = Vec::with_capacity(nc);
        let mut hm = Vec::with_capacity(nc);
        let mut g = Vec::with_capacity(9 * nc);
        let mut finite = true;
        for i in 0..nc {
            if !on[i] {
                ws.push((Matrix3::zeros(), Matrix3::zeros(), Vector3::zeros()));
                hinv.push(Matrix3::zeros());
                hm.push(Matrix3::zeros());
                g.extend([0.0; 9]);
                continue;
            }
            let (wm, wi) = nt_scaling(&w[i], &z[i]);
            let lam = wm * w[i];
            let hm_i = Matrix3::from_diagonal(&p[i]) + wm.transpose() * wm;
            let hi = hm_i.try_inverse().unwrap_or_else(Matrix3::zeros);
            let gi = ms[i] * hi * ms[i].transpose();
            finite &= gi.iter().all(|x| x.is_finite()) && lam.iter().all(|x| x.is_finite());
            g.extend(gi.transpose().iter());
            ws.push((wm, wi, lam));
            hinv.push(hi);
            hm.push(hm_i);
        }
        if !crate::parallel::all_ok(comm, finite) {
            break;
        }
        dual.assemble_blocks(&g, REG, h)?;
        ksp.set_operators(h, h)?;
        // One KKT solve for the complementarity right-hand sides `rc`:
        // returns (dw, dz) and leaves dy in `dy`. The forces are eliminated
        // contact by contact, S dy = −rp − A H⁻¹ (g − rd) (A = Bᵀ M) is
        // solved, and H dw = Aᵀ dy + g − rd; `extra` (in w) is added to
        // H⁻¹ (g − rd) in S's right-hand side (a refinement's current dw).
        let mut kkt = |rc: &[Vector3<f64>], dy: &mut Vector| -> Result<(Vec<Vector3<f64>>, Vec<Vector3<f64>>, u64)> {
            let zero = vec![Vector3::zeros(); nc];
            let mut reduced = |g: &[Vector3<f64>], rdv: &[Vector3<f64>], extra: &[Vector3<f64>], dy: &mut Vector| -> Result<(Vec<Vector3<f64>>, Vec<Vector3<f64>>, u64)> {
                {
                    let mut fv = f.view_mut()?;
                    for i in 0..nc {
                        let x = if on[i] { ms[i] * (refined(&hm[i], &hinv[i], &(g[i] - rdv[i])) + extra[i]) } else { Vector3::zeros() };
                        fv[3 * i..3 * i + 3].copy_from_slice(x.as_slice());
                    }
                }
                dual.op.b.mult_transpose(&f, &mut rhs)?;
                rhs.axpy(1.0, &rp)?;
                rhs.scale(-1.0)?;
                {
                    let mut rv = rhs.view_mut()?;
                    for (x, &free) in rv.iter_mut().zip(&dual.free) {
                        if !free {
                            *x = 0.0;
                        }
                    }
                }
                dy.zero()?;
                ksp.solve(&rhs, dy)?;
                let its = ksp.iteration_number()?.max(0) as u64;
                dual.op.b.mult(dy, &mut by)?;
                let bv = by.view()?;
                let (mut dw, mut aty) = (vec![Vector3::zeros(); nc], vec![Vector3::zeros(); nc]);
                for i in 0..nc {
                    if on[i] {
                        aty[i] = ms[i].transpose() * Vector3::from_column_slice(&bv[3 * i..3 * i + 3]);
                        dw[i] = refined(&hm[i], &hinv[i], &(aty[i] + g[i] - rdv[i]));
                    }
                }
                Ok((dw, aty, its))
            };
            // W dw + W⁻¹ dz = t with λ ∘ t = rc; g = Wᵀ t.
            let t: Vec<Vector3<f64>> = (0..nc).map(|i| if on[i] { arw_solve(&ws[i].2, &rc[i]) } else { Vector3::zeros() }).collect();
            let g: Vec<Vector3<f64>> = (0..nc).map(|i| ws[i].0.transpose() * t[i]).collect();
            let (mut dw, aty, mut its) = reduced(&g, &rd, &zero, dy)?;
            // dz from the dual equation P dw − Aᵀdy − dz = −rd, so that H's
            // round-off does not stay in the dual residual.
            let mut dz: Vec<Vector3<f64>> = (0..nc).map(|i| if on[i] { p[i].component_mul(&dw[i]) - aty[i] + rd[i] } else { Vector3::zeros() }).collect();
            // Iterative refinement of the whole system: S is assembled from
            // H⁻¹ blocks that near the cones' boundaries lose most of their
            // digits, and regularised; the residuals of the equilibrium and
            // complementarity rows are solved for again with the same factors.
            let mut ddy = dy.duplicate()?;
            for _ in 0..REFINE {
                let gr: Vec<Vector3<f64>> = (0..nc)
                    .map(|i| {
                        if !on[i] {
                            return Vector3::zeros();
                        }
                        let (wm, wi, _) = &ws[i];
                        -(wm.transpose() * (wm * dw[i] + wi * dz[i] - t[i]))
                    })
                    .collect();
                let (ddw, daty, k) = reduced(&gr, &zero, &dw, &mut ddy)?;
                its += k;
                for i in 0..nc {
                    if on[i] {
                        dw[i] += ddw[i];
                        dz[i] += p[i].component_mul(&ddw[i]) - daty[i];
                    }
                }
                dy.axpy(1.0, &ddy)?;
            }
            Ok((dw, dz, its))
        };
        let steps = |dw: &[Vector3<f64>], dz: &[Vector3<f64>]| -> f64 {
            let local = (0..nc).filter(|&i| on[i]).map(|i| max_step(&w[i], &dw[i]).min(max_step(&z[i], &dz[i]))).fold(f64::INFINITY, f64::min);
            -crate::parallel::max_f64(comm, -local)
        };
        // Predictor (affine scaling), then Mehrotra's corrector.
        let rc: Vec<Vector3<f64>> = ws.iter().map(|s| -jprod(&s.2, &s.2)).collect();
        let mut dya = dy.duplicate()?;
        let (dwa, dza, its) = kkt(&rc, &mut dya)?;
        linear += its;
        let a_aff = steps(&dwa, &dza).min(1.0);
        let mut after = 0.0;
        for i in 0..nc {
            after += (w[i] + a_aff * dwa[i]).dot(&(z[i] + a_aff * dza[i]));
        }
        let after = crate::parallel::sum_f64(comm, after);
        let sigma = (after / gap).max(0.0).powi(3);
        let mu_g = gap / cones;
        let rc: Vec<Vector3<f64>> = (0..nc)
            .map(|i| {
                if !on[i] {
                    return Vector3::zeros();
                }
                let (wm, wi, lam) = &ws[i];
                -jprod(lam, lam) - jprod(&(wi * dza[i]), &(wm * dwa[i])) + sigma * mu_g * Vector3::x()
            })
            .collect();
        let (dw, dz, its) = kkt(&rc, &mut dy)?;
        linear += its;
        let a = (STEP_FRACTION * steps(&dw, &dz)).min(1.0);
        for i in 0..nc {
            w[i] += a * dw[i];
            z[i] += a * dz[i];
        }
        y.axpy(a, &dy)?;
    }
    let (_, bw, bz, by_, [pres, dres, gap_rel]) = best.expect("the first iterate is kept");
    w.copy_from_slice(&bw);
    z.copy_from_slice(&bz);
    y.copy_from(&by_)?;
    Ok((it, linear, pres <= tol && dres <= DUAL_OK && gap_rel <= GAP_OK, pres))
}

/// Solves the frictional compatibility problem of `dual` (Hooke, its
/// friction set, [`Dual::friction`]'s anchors and stiffnesses k_t) by the
/// interior-point method with De Saxcé's outer loop. `anchor` is the
/// elastic history (scaled, along t1, t2). Collective.
pub fn solve(dual: &Dual, bodies: &Bodies, anchor: &[[f64; 2]], kt: &[f64], fr: &Friction, tol: f64, max_it: u32) -> Result<Rounds> {
    let comm = dual.comm;
    let nc = dual.k.len();
    let mut sliding: Vec<bool> = (0..nc).map(|i| fr.was_sliding[i] || fr.slip[i].is_some()).collect();
    let kind_of = |sliding: &[bool]| -> Vec<Kind> {
        (0..nc)
            .map(|i| {
                let mu = if sliding[i] { fr.mu_d[i] } else { fr.mu_s[i] };
                if dual.k[i] <= 0.0 {
                    Kind::Off
                } else if let Some(c) = fr.slip[i] {
                    Kind::Ray(c)
                } else if mu > 0.0 && kt[i] > 0.0 {
                    Kind::Cone(mu)
                } else {
                    Kind::Ray([0.0; 2])
                }
            })
            .collect()
    };
    let mut kind = kind_of(&sliding);
    // P = diag of the complementary energy in w; w₁, w₂ of a ray carry
    // no force and go to zero.
    let p_of = |kind: &[Kind]| -> Vec<Vector3<f64>> {
        (0..nc)
            .map(|i| {
                let (k, t) = (dual.k[i], if kt[i] > 0.0 { kt[i] } else { dual.k[i] });
                match kind[i] {
                    Kind::Off => Vector3::zeros(),
                    Kind::Cone(mu) => Vector3::new(1.0 / (k * mu * mu), 1.0 / t, 1.0 / t),
                    Kind::Ray(_) => Vector3::new(1.0 / k, 1.0 / t, 1.0 / t),
                }
            })
            .collect()
    };
    let mut shift = vec![0.0; nc];
    let mut h = dual.hessian_matrix(bodies, PREFIX)?;
    let mut ksp = Ksp::new(comm)?;
    ksp.set_options_prefix(PREFIX)?;
    ksp.set_operators(&h, &h)?;
    // Interior-point systems grow ill-conditioned as the iterates near the
    // cones' boundaries: Krylov methods stall there (CG with block Jacobi
    // on a 500-grain pour), a sparse direct factorisation does not.
    crate::petsc::options::set_default("-compat_ipm_pc_factor_mat_solver_type", Some("mumps"))?;
    crate::petsc::options::set_default("-compat_ipm_redundant_pc_factor_mat_solver_type", Some("mumps"))?;
    // One application of the factorisation: each step refines its whole
    // KKT solve instead (REFINE), which also corrects S's assembly.
    ksp.set_type("preonly")?;
    ksp.set_pc_type(if super::newton::whole_lu_fits(dual) { "redundant" } else { "lu" })?;
    ksp.set_from_options()?;
    let (mut w, mut z) = (vec![Vector3::zeros(); nc], vec![Vector3::zeros(); nc]);
    let mut y = dual.ft.duplicate()?;
    let (mut iterations, mut linear, mut rounds) = (0u64, 0u64, 0u32);
    let mut prev: Option<Vec<Vector3<f64>>> = None;
    let (converged, pres) = loop {
        rounds += 1;
        let p = p_of(&kind);
        let q: Vec<Vector3<f64>> = (0..nc)
            .map(|i| match kind[i] {
                Kind::Cone(_) => Vector3::new(shift[i], anchor[i][0], anchor[i][1]),
                _ => Vector3::zeros(),
            })
            .collect();
        let (its, lin, met, pres) = solve_once(dual, &mut ksp, &mut h, &kind, &p, &q, tol, max_it, &mut w, &mut z, &mut y)?;
        iterations += its;
        linear += lin;
        // Forces (scaled), the new shifts |z_t| (in w: μ|z_t| on f_n) and
        // the contacts that end on their cone.
        let f: Vec<Vector3<f64>> = (0..nc).map(|i| kind[i].m() * w[i]).collect();
        let fmax = crate::parallel::max_f64(comm, f.iter().map(|v| v.amax()).fold(0.0, f64::max)).max(1e-300);
        let change = prev.as_ref().map_or(f64::INFINITY, |pf| {
            let local = f.iter().zip(pf).map(|(a, b)| (a - b).amax()).fold(0.0, f64::max);
            crate::parallel::max_f64(comm, local) / fmax
        });
        let mut switched = 0u64;
        for i in 0..nc {
            if let Kind::Cone(_) = kind[i] {
                shift[i] = z[i][1].hypot(z[i][2]);
                let on_cone = w[i][0] > 1e-9 * fmax && w[i][1].hypot(w[i][2]) >= (1.0 - 1e-6) * w[i][0];
                if on_cone != sliding[i] && fr.mu_s[i] != fr.mu_d[i] {
                    switched += 1;
                }
                sliding[i] = on_cone;
            }
        }
        let switched = crate::parallel::sum_u64(comm, switched);
        log::debug!("compatibility: interior-point solve {rounds}: {its} steps, primal residual {pres:e}, forces change by {change:e}, {switched} contacts change μ");
        let settled = met && change <= SETTLED && switched == 0;
        if settled || !met || rounds >= MAX_OUTER || crate::parallel::signals::stopping() {
            break (settled, pres);
        }
        if switched > 0 {
            kind = kind_of(&sliding);
        }
        prev = Some(f);
    };
    // Unscaled forces, u = −y, the anchors e' = s_el − B_t u (s_el = −f_t/k_t).
    let mut u = y;
    u.scale(-1.0)?;
    let mut bu = dual.op.contact_vec()?;
    dual.op.b.mult(&u, &mut bu)?;
    let buv = bu.view()?;
    let mut fout = vec![0.0; 3 * nc];
    let mut anchors = vec![[0.0; 2]; nc];
    for i in 0..nc {
        let fi = kind[i].m() * w[i];
        for r in 0..3 {
            fout[3 * i + r] = fi[r] * dual.scale;
        }
        let t = if kt[i] > 0.0 { kt[i] } else { 0.0 };
        if kind[i] != Kind::Off && t > 0.0 {
            anchors[i] = [-fi[1] / t - buv[3 * i + 1], -fi[2] / t - buv[3 * i + 2]];
        }
        if let Kind::Ray(c) = kind[i] {
            sliding[i] = c != [0.0; 2];
        }
    }
    drop(buv);
    let result = DualResult { u, f: fout, iterations, linear, feasibility: pres, converged, stalled: false };
    Ok(Rounds { result, rounds, sliding, anchor: anchors })
}
