//! Element contributions of the DEM residual (stage 3 "solver", `dem`; eq
//! 63): the contact residual and tangent of one contact, 12×12 for two
//! bodies and 6×6 against a wall, from the normal law along the contact
//! normal. Pure functions of the increments of the two bodies; no MPI.
use super::law::{friction, friction_tangent, normal_total, Friction, NormalLaw, TangentialLaw};
use super::jet::{Jet, Lift};
use super::rigid::skew;
use crate::scene::DemTangent;
use nalgebra::{Matrix3, SMatrix, Vector3};

/// 3×12 maps from the increments to a vector at the contact.
pub type Mat3x12 = SMatrix<f64, 3, 12>;

// MeshKind lives in types.rs (mesh_grad.rs needs it too); re-exported
// here beside the Kinematics that carries it.
pub use super::types::{Mat12, MeshKind, Vec12};

/// How the gap of a contact depends on the increments.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kinematics {
    /// Exact sphere–sphere: g = |x_b + u_b − x_a − u_a| − R_a − R_b.
    Spheres { xa: Vector3<f64>, xb: Vector3<f64>, ra: f64, rb: f64 },
    /// Sphere–wall and sphere–mesh through the
    /// point, normal and lever arms from contact/: the gap to first order,
    /// g = g₀ + n·(u_b + α_b × r_b − u_a − α_a × r_a) (exact for a sphere on
    /// a wall, whose lever arm is parallel to n). `b` is absent for a wall.
    Linear { g0: f64, n: Vector3<f64>, r_a: Vector3<f64>, r_b: Vector3<f64> },
    /// Exact mesh contact (mesh–mesh degenerations of §2.4.2 and mesh–wall):
    /// the contact points of configuration i stay attached to their bodies,
    /// p' = c + u + Q(α) r (eq 26 at fixed convective coordinates), and so
    /// do the directions `d_a`, `d_b` (a plane normal or an edge direction);
    /// the gap follows from the degeneration [`MeshKind`]. `d0` is
    /// point_b − point_a at configuration i (= g₀ n₀). A wall is a `b`
    /// without increments (x₆..₁₂ = 0).
    Mesh { kind: MeshKind, d0: Vector3<f64>, r_a: Vector3<f64>, r_b: Vector3<f64>, d_a: Vector3<f64>, d_b: Vector3<f64> },
}

/// One contact as the solver sees it for one step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactElement {
    pub kin: Kinematics,
    /// Gap at configuration i (the start of the step).
    pub g_start: f64,
    /// Normal at configuration i (for the penetration test of §2.4.7).
    pub n_start: Vector3<f64>,
    /// ∂g/∂x at configuration i (the gap rate at the step's start).
    pub grad_start: Vec12,
    /// m_A m_B / (m_A + m_B) (m_A for a wall or a fixed partner).
    pub m_eff: f64,
    /// Factor on the normal law (force and its derivatives); 1 unless
    /// `[dem] pair_stiffness` scales contacts by their materials.
    pub scale: f64,
}

/// Gap, its gradient and Hessian with respect to the 12 increments, and
/// the current normal.
pub fn gap(kin: &Kinematics, x: &Vec12) -> (f64, Vec12, Mat12, Vector3<f64>) {
    match *kin {
        Kinematics::Spheres { xa, xb, .. } => {
            let (g, grad, n) = gap_grad(kin, x);
            let l = (xb + x.fixed_rows::<3>(6) - xa - x.fixed_rows::<3>(0)).norm();
            let h = (Matrix3::identity() - n * n.transpose()) / l;
            let mut hess = Mat12::zeros();
            hess.fixed_view_mut::<3, 3>(0, 0).copy_from(&h);
            hess.fixed_view_mut::<3, 3>(6, 6).copy_from(&h);
            hess.fixed_view_mut::<3, 3>(0, 6).copy_from(&-h);
            hess.fixed_view_mut::<3, 3>(6, 0).copy_from(&-h);
            (g, grad, hess, n)
        }
        Kinematics::Linear { .. } => {
            let (g, grad, n) = gap_grad(kin, x);
            (g, grad, Mat12::zeros(), n)
        }
        Kinematics::Mesh { kind, d0, r_a, r_b, d_a, d_b } => {
            let (g, n) = mesh_gap::<Jet>(kind, &d0, &r_a, &r_b, &d_a, &d_b, x);
            (g.v, g.grad12(), g.hess12(), n)
        }
    }
}

/// [`gap`] without the Hessian: what the residual needs, at every
/// evaluation (for spheres the Hessian was most of the residual's cost).
pub fn gap_grad(kin: &Kinematics, x: &Vec12) -> (f64, Vec12, Vector3<f64>) {
    let mut grad = Vec12::zeros();
    match *kin {
        Kinematics::Spheres { xa, xb, ra, rb } => {
            let d = xb + x.fixed_rows::<3>(6) - xa - x.fixed_rows::<3>(0);
            let l = d.norm();
            let n = d / l;
            grad.fixed_rows_mut::<3>(0).copy_from(&-n);
            grad.fixed_rows_mut::<3>(6).copy_from(&n);
            (l - ra - rb, grad, n)
        }
        Kinematics::Linear { g0, n, r_a, r_b } => {
            grad.fixed_rows_mut::<3>(0).copy_from(&-n);
            grad.fixed_rows_mut::<3>(3).copy_from(&-r_a.cross(&n));
            grad.fixed_rows_mut::<3>(6).copy_from(&n);
            grad.fixed_rows_mut::<3>(9).copy_from(&r_b.cross(&n));
            (g0 + grad.dot(x), grad, n)
        }
        Kinematics::Mesh { kind, d0, r_a, r_b, d_a, d_b } => super::mesh_grad::mesh_gap_grad(kind, &d0, &r_a, &r_b, &d_a, &d_b, x),
    }
}

/// The exact gap of a mesh contact over the increments, and the current
/// normal (from a to b).
fn mesh_gap<T: Lift>(kind: MeshKind, d0: &Vector3<f64>, r_a: &Vector3<f64>, r_b: &Vector3<f64>, d_a: &Vector3<f64>, d_b: &Vector3<f64>, x: &Vec12) -> (T, Vector3<f64>) {
    use super::jet::{add3, constant3, cross, dot, mul3, reduce, rotated, sub3, value3, variables};
    let y = reduce(x);
    // d = d0 + (u_b − u_a) + (Q_b − I) r_b − (Q_a − I) r_a
    let turn = sub3(&rotated::<T>(&y, 6, r_b, true), &rotated::<T>(&y, 3, r_a, true));
    let d = add3(&add3(&constant3(d0), &variables(&y, 0)), &turn);
    let unit = |w: &[T; 3]| -> (T, Vector3<f64>) {
        let l = dot(w, w).sqrt();
        (l, value3(w) / l.value())
    };
    let off_line = |e: &[T; 3]| sub3(&d, &mul3(dot(&d, e), e));
    match kind {
        MeshKind::PlaneOnB => {
            let n = rotated::<T>(&y, 6, d_b, false);
            (dot(&n, &d), value3(&n))
        }
        MeshKind::PlaneOnA => {
            let n = rotated::<T>(&y, 3, d_a, false);
            (dot(&n, &d), value3(&n))
        }
        MeshKind::Lines { sign } => {
            let m = cross(&rotated::<T>(&y, 3, d_a, false), &rotated::<T>(&y, 6, d_b, false));
            let (l, n) = unit(&m);
            ((dot(&m, &d) * l.recip()).scale(sign), sign * n)
        }
        MeshKind::PointLineB => unit(&off_line(&rotated::<T>(&y, 6, d_b, false))),
        MeshKind::PointLineA => unit(&off_line(&rotated::<T>(&y, 3, d_a, false))),
        MeshKind::Points => unit(&d),
    }
}

/// Absolute round-off of the gap evaluated by [`gap`] at `x` (a few ulps
/// of the largest coordinate involved): multiplied by the contact
/// stiffness it gives the residual noise that limits Newton near a barrier.
pub fn gap_noise(kin: &Kinematics, x: &Vec12) -> f64 {
    let xs = x.abs().max();
    let size = match *kin {
        Kinematics::Spheres { xa, xb, ra, rb } => xa.abs().max() + xb.abs().max() + ra + rb + 2.0 * xs,
        Kinematics::Linear { g0, r_a, r_b, .. } => g0.abs() + (1.0 + r_a.norm() + r_b.norm()) * xs,
        Kinematics::Mesh { d0, r_a, r_b, .. } => d0.norm() + (1.0 + r_a.norm() + r_b.norm()) * xs,
    };
    4.0 * f64::EPSILON * size
}

/// Normal contact force on b (positive: repulsive), gap, residual and
/// tangent of one contact at the increments `x`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContactEval {
    pub force: f64,
    pub gap: f64,
    pub normal: Vector3<f64>,
    /// Contribution to the residual (eq 63: + contact), r = −F ∂g/∂x.
    pub residual: Vec12,
    /// ∂residual/∂x.
    pub tangent: Mat12,
    /// dF/dg along the step, ∂F/∂g + ∂F/∂ġ / Δt (≤ 0 while compressed).
    pub stiffness: f64,
    /// ∂g/∂x.
    pub grad: Vec12,
}

/// Residual and consistent tangent of one contact: F(g, ġ) of eqs 49–53
/// with ġ ≈ (g^{i+1} − g^i)/Δt (a secant normal rate in place of the
/// Newmark rate of eq 41), r = −F ∇g, K = −(∂F/∂g + ∂F/∂ġ/Δt) ∇g ∇gᵀ − F ∇²g.
/// Returns `None` when the gap is not positive (outside the barrier's domain).
pub fn contact(el: &ContactElement, law: &NormalLaw, zeta: f64, dt: f64, x: &Vec12) -> Option<ContactEval> {
    contact_with(el, law, zeta, dt, x, Some(DemTangent::Consistent))
}

/// [`contact`] with the tangent of kind `tangent`; `None`: the residual
/// only (`tangent` zero), without the gap's Hessian.
pub fn contact_with(el: &ContactElement, law: &NormalLaw, zeta: f64, dt: f64, x: &Vec12, tangent: Option<DemTangent>) -> Option<ContactEval> {
    contact_at(el, law, zeta, dt, x, tangent, gap_grad(&el.kin, x))
}

/// [`contact_with`] given `gap_grad(&el.kin, x)` (computed once per
/// iterate and shared by the residual, the Jacobian and the step limit).
pub fn contact_at(
    el: &ContactElement,
    law: &NormalLaw,
    zeta: f64,
    dt: f64,
    x: &Vec12,
    tangent: Option<DemTangent>,
    gap: (f64, Vec12, Vector3<f64>),
) -> Option<ContactEval> {
    let e = normal_at(el, law, zeta, dt, gap)?;
    let tangent = tangent.map_or_else(Mat12::zeros, |kind| normal_tangent(el, x, kind, &e));
    Some(ContactEval { force: e.force, gap: e.gap, normal: e.normal, residual: e.residual, tangent, stiffness: e.stiffness, grad: e.grad })
}

/// The normal force, residual and stiffness of one contact (no tangent):
/// what a residual evaluation needs, without a 12×12 matrix per contact.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct NormalEval {
    pub force: f64,
    pub gap: f64,
    pub normal: Vector3<f64>,
    /// r = −F ∂g/∂x.
    pub residual: Vec12,
    /// dF/dg along the step, ∂F/∂g + ∂F/∂ġ / Δt (≤ 0 while compressed).
    pub stiffness: f64,
    /// ∂g/∂x.
    pub grad: Vec12,
}

/// F(g, ġ) of eqs 49–53 at the gap `(g, ∇g, n)`, ġ ≈ (g − g^i)/Δt; `None`
/// when the gap is not positive (outside the barrier's domain).
pub fn normal_at(el: &ContactElement, law: &NormalLaw, zeta: f64, dt: f64, (g, grad, n): (f64, Vec12, Vector3<f64>)) -> Option<NormalEval> {
    if g.is_nan() || g <= 0.0 {
        return None;
    }
    let gdot = (g - el.g_start) / dt;
    let (f, df_dg, df_dgdot) = normal_total(law, zeta, el.m_eff, g, gdot);
    let (f, df_dg, df_dgdot) = (el.scale * f, el.scale * df_dg, el.scale * df_dgdot);
    Some(NormalEval { force: f, gap: g, normal: n, residual: -f * grad, stiffness: df_dg + df_dgdot / dt, grad })
}

/// The tangent of [`normal_at`]'s residual: −(dF/dg) ∇g ∇gᵀ − F ∇²g (the
/// second term only for `Consistent`, and only where F ≠ 0: the gap's
/// Hessian is the costliest part of the mesh kinematics).
pub fn normal_tangent(el: &ContactElement, x: &Vec12, kind: DemTangent, e: &NormalEval) -> Mat12 {
    let mut t = -e.stiffness * e.grad * e.grad.transpose();
    if kind == DemTangent::Consistent && e.force != 0.0 {
        t -= e.force * gap(&el.kin, x).2;
    }
    t
}

/// The translational block K of [`normal_tangent`] for a sphere pair or a
/// sphere on a wall (`Spheres`, `Linear`): the 12×12 tangent is then
/// [K, −K; −K, K] on the two translations (K alone against a wall) and
/// zero on the rotations, so the 3×3-block Jacobian needs 9 entries, not
/// 144. The same arithmetic as the 12×12, so the same bits. `None` for
/// the mesh kinematics.
pub fn normal_tangent_translational(el: &ContactElement, x: &Vec12, kind: DemTangent, e: &NormalEval) -> Option<Matrix3<f64>> {
    let n = e.normal;
    let mut k = (-e.stiffness * n) * n.transpose();
    match el.kin {
        Kinematics::Spheres { xa, xb, .. } => {
            if kind == DemTangent::Consistent && e.force != 0.0 {
                let l = (xb + x.fixed_rows::<3>(6) - xa - x.fixed_rows::<3>(0)).norm();
                k -= e.force * ((Matrix3::identity() - n * n.transpose()) / l);
            }
            Some(k)
        }
        Kinematics::Linear { .. } => Some(k),
        Kinematics::Mesh { .. } => None,
    }
}

/// The tangential (friction) part of one contact for one step (eqs 44,
/// 54–58), in the contact frame of configuration i.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TangentialElement {
    pub law: TangentialLaw,
    /// Tangential gap carried from earlier steps, rotated into this step's
    /// tangent plane (g_t^i).
    pub gt_start: Vector3<f64>,
    /// Sliding at configuration i (selects μ_d or μ_s as the limit).
    pub sliding: bool,
    /// Normal at configuration i; the tangent plane of the step.
    pub n: Vector3<f64>,
    /// Lever arms of the contact point from the centres of a and b.
    pub r_a: Vector3<f64>,
    pub r_b: Vector3<f64>,
}

impl TangentialElement {
    pub fn new(law: TangentialLaw, gt_start: Vector3<f64>, sliding: bool, n: Vector3<f64>, r_a: Vector3<f64>, r_b: Vector3<f64>) -> Self {
        Self { law, gt_start, sliding, n, r_a, r_b }
    }

    /// G = (I − n nᵀ) [−I, skew(r_a), I, −skew(r_b)]: the tangential relative
    /// displacement of the contact point of b with respect to that of a is
    /// G x (rotations to first order, α × r = −skew(r) α).
    pub fn map(&self) -> Mat3x12 {
        let p = Matrix3::identity() - self.n * self.n.transpose();
        let mut d = Mat3x12::zeros();
        d.fixed_view_mut::<3, 3>(0, 0).copy_from(&-Matrix3::identity());
        d.fixed_view_mut::<3, 3>(0, 3).copy_from(&skew(&self.r_a));
        d.fixed_view_mut::<3, 3>(0, 6).copy_from(&Matrix3::identity());
        d.fixed_view_mut::<3, 3>(0, 9).copy_from(&-skew(&self.r_b));
        p * d
    }

    /// G x, from the structure of G (no 3×12 product): the residual's
    /// evaluations need only this and [`TangentialElement::map_t`].
    pub fn apply(&self, x: &Vec12) -> Vector3<f64> {
        let v = |k: usize| Vector3::new(x[k], x[k + 1], x[k + 2]);
        let d = (v(6) - v(0)) + self.r_a.cross(&v(3)) - self.r_b.cross(&v(9));
        d - self.n * self.n.dot(&d)
    }

    /// Gᵀ f.
    pub fn map_t(&self, f: &Vector3<f64>) -> Vec12 {
        let p = f - self.n * self.n.dot(f);
        let (ra, rb) = (p.cross(&self.r_a), self.r_b.cross(&p));
        Vec12::from_column_slice(&[-p.x, -p.y, -p.z, ra.x, ra.y, ra.z, p.x, p.y, p.z, rb.x, rb.y, rb.z])
    }
}

/// Friction residual and tangent of one contact at the increments `x`,
/// given the normal force `f_n` there: g_t = g_t^i + G x, ġ_t = G x / Δt,
/// f_t from [`friction`] (the force on b is −f_t, on a +f_t), r = Gᵀ f_t.
/// With `tangent` = (dfn, K), dfn the gradient of the normal force (∂F/∂x),
/// adds Gᵀ (∂f_t/∂g_t) G + Gᵀ (∂f_t/∂f_n) dfnᵀ (μ_d t in slip, zero in
/// stick) to K (written in place: a 12×12 returned by value was copied
/// about at every residual). `None` when f_n = 0 (no friction).
pub fn tangential(el: &TangentialElement, dt: f64, f_n: f64, tangent: Option<(&Vec12, &mut Mat12)>, x: &Vec12) -> Option<(Vec12, Friction)> {
    if f_n.is_nan() || f_n <= 0.0 {
        return None;
    }
    let slip = el.apply(x);
    let gt = el.gt_start + slip;
    let gt_dot = slip / dt;
    let fr = friction(&el.law, gt, gt_dot, f_n, el.sliding);
    if let Some((dfn, k)) = tangent {
        let g = el.map();
        let kt = friction_tangent(&el.law, gt, gt_dot, f_n, el.sliding, 1.0 / dt);
        let gt_t = g.transpose();
        *k += gt_t * kt * g;
        if fr.sliding {
            let t = fr.force / fr.force.norm();
            *k += (gt_t * (el.law.mu_d * t)) * dfn.transpose();
        }
    }
    Some((el.map_t(&fr.force), fr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dem::jet::Dual;
    use crate::dem::mesh_grad::mesh_gap_grad;
    use crate::scene::generate::SplitMix64;

    /// A vector with entries uniform in [−s, s].
    fn random_vec(rng: &mut SplitMix64, s: f64) -> Vector3<f64> {
        Vector3::new(rng.uniform() - 0.5, rng.uniform() - 0.5, rng.uniform() - 0.5) * 2.0 * s
    }

    /// Random small configurations: sphere pairs and linear (wall/mesh)
    /// contacts in both law branches, with damping; tangent vs central
    /// differences of the residual.
    #[test]
    fn tangent_matches_finite_differences() {
        let law = NormalLaw::new(2.0e5, 1.5, -2.0, 1e-2, 0.5);
        let mut rng = SplitMix64::new(7);
        let mut checked = 0;
        for case in 0..200 {
            let n = random_vec(&mut rng, 1.0).normalize();
            let g_target = law.gbar * (0.05 + 0.9 * rng.uniform());
            let kin = if case % 2 == 0 {
                let (ra, rb) = (0.5 + rng.uniform(), 0.5 + rng.uniform());
                let xa = random_vec(&mut rng, 1.0);
                Kinematics::Spheres { xa, xb: xa + n * (ra + rb + g_target), ra, rb }
            } else {
                Kinematics::Linear { g0: g_target, n, r_a: random_vec(&mut rng, 0.5), r_b: random_vec(&mut rng, 0.5) }
            };
            let el = ContactElement { kin, g_start: g_target * 1.1, n_start: n, grad_start: Vec12::zeros(), m_eff: 0.7, scale: 1.0 };
            let mut x = Vec12::zeros();
            for k in 0..12 {
                x[k] = (rng.uniform() - 0.5) * 1e-3 * law.gbar;
            }
            let Some(e) = contact(&el, &law, 0.4, 1e-3, &x) else { continue };
            if e.force == 0.0 || (e.gap - law.gswitch).abs() < 1e-3 * law.gbar {
                continue;
            }
            let mut fd = Mat12::zeros();
            for j in 0..12 {
                let h = 1e-7 * law.gbar;
                let mut d = Vec12::zeros();
                d[j] = h;
                let rp = contact(&el, &law, 0.4, 1e-3, &(x + d)).unwrap().residual;
                let rm = contact(&el, &law, 0.4, 1e-3, &(x - d)).unwrap().residual;
                fd.set_column(j, &((rp - rm) / (2.0 * h)));
            }
            let err = (e.tangent - fd).norm() / e.tangent.norm();
            assert!(err < 1e-6, "case {case}: relative error {err:e}");
            checked += 1;
        }
        assert!(checked > 100, "only {checked} configurations checked");
    }

    /// Normal and friction together (stick and slip, with tangential
    /// damping) against central differences of the total residual.
    /// G x and Gᵀ f from G's structure equal the products with the 3×12 map.
    #[test]
    fn tangential_map_products_match_the_dense_map() {
        let mut rng = SplitMix64::new(3);
        let tl = TangentialLaw { eps_t: 1.0, c_t: 0.0, mu_s: 0.5, mu_d: 0.4 };
        for _ in 0..100 {
            let n = random_vec(&mut rng, 1.0).normalize();
            let te = TangentialElement::new(tl, Vector3::zeros(), false, n, random_vec(&mut rng, 0.5), random_vec(&mut rng, 0.5));
            let x = Vec12::from_fn(|_, _| rng.uniform() - 0.5);
            let f = random_vec(&mut rng, 1.0);
            let g = te.map();
            assert!((te.apply(&x) - g * x).norm() < 1e-15);
            assert!((te.map_t(&f) - g.transpose() * f).norm() < 1e-15);
        }
    }

    #[test]
    fn friction_tangent_matches_finite_differences() {
        let law = NormalLaw::new(2.0e5, 1.5, -2.0, 1e-2, 0.5);
        let tl = TangentialLaw { eps_t: 3.0e4, c_t: 0.5, mu_s: 0.5, mu_d: 0.4 };
        let mut rng = SplitMix64::new(11);
        let (mut stick, mut slip) = (0, 0);
        for case in 0..200 {
            let n = random_vec(&mut rng, 1.0).normalize();
            let (r_a, r_b) = (random_vec(&mut rng, 0.5), random_vec(&mut rng, 0.5));
            let g0 = law.gbar * (0.1 + 0.8 * rng.uniform());
            let el = ContactElement { kin: Kinematics::Linear { g0, n, r_a, r_b }, g_start: g0 * 1.05, n_start: n, grad_start: Vec12::zeros(), m_eff: 0.7, scale: 1.0 };
            let p = Matrix3::identity() - n * n.transpose();
            let te = TangentialElement::new(tl, p * random_vec(&mut rng, if case % 2 == 0 { 2e-4 } else { 1e-2 }), case % 3 == 0, n, r_a, r_b);
            let mut x = Vec12::zeros();
            for k in 0..12 {
                x[k] = (rng.uniform() - 0.5) * 1e-2 * law.gbar;
            }
            let total = |x: &Vec12| -> Option<(Vec12, Mat12, bool)> {
                let e = contact(&el, &law, 0.3, 1e-3, x)?;
                let (_, grad, _, _) = gap(&el.kin, x);
                let dfn = if e.force > 0.0 { e.stiffness * grad } else { Vec12::zeros() };
                let mut k = Mat12::zeros();
                let (r, fr) = tangential(&te, 1e-3, e.force, Some((&dfn, &mut k)), x)?;
                assert_eq!(tangential(&te, 1e-3, e.force, None, x).map(|t| t.0), Some(r));
                Some((e.residual + r, e.tangent + k, fr.sliding))
            };
            let Some((_, k, sliding)) = total(&x) else { continue };
            let h = 1e-7 * law.gbar;
            let mut fd = Mat12::zeros();
            let mut same = true;
            for j in 0..12 {
                let mut d = Vec12::zeros();
                d[j] = h;
                let (Some(p), Some(m)) = (total(&(x + d)), total(&(x - d))) else { same = false; break };
                same &= p.2 == sliding && m.2 == sliding;
                fd.set_column(j, &((p.0 - m.0) / (2.0 * h)));
            }
            if !same {
                continue; // on the stick/slip switch
            }
            let err = (k - fd).norm() / k.norm();
            assert!(err < 1e-6, "case {case} (sliding {sliding}): relative error {err:e}");
            if sliding {
                slip += 1;
            } else {
                stick += 1;
            }
        }
        assert!(stick > 20 && slip > 20, "stick {stick}, slip {slip} configurations");
    }

    /// The exact mesh kinematics: the gap against the geometry recomputed
    /// from the moved bodies (rotation matrices of rigid.rs, closest points
    /// of two lines by their 2×2 system), and its gradient and Hessian
    /// against central differences, for every degeneration at random
    /// configurations and increments.
    #[test]
    fn mesh_gaps_are_exact_with_consistent_derivatives() {
        use super::super::rigid::rotation;
        let mut rng = SplitMix64::new(5);
        for case in 0..120 {
            let n = random_vec(&mut rng, 1.0).normalize();
            let g0 = 0.01 * (0.5 + rng.uniform());
            let (r_a, c_b) = (random_vec(&mut rng, 0.6), random_vec(&mut rng, 1.0));
            let r_b = r_a + g0 * n - c_b; // point_b = point_a + g0 n
            let p = Matrix3::identity() - n * n.transpose();
            let (e_a, e_b) = ((p * random_vec(&mut rng, 1.0)).normalize(), (p * random_vec(&mut rng, 1.0)).normalize());
            let (kind, d_a, d_b) = match case % 6 {
                0 => (MeshKind::PlaneOnB, Vector3::zeros(), n),
                1 => (MeshKind::PlaneOnA, n, Vector3::zeros()),
                2 => (MeshKind::Lines { sign: e_a.cross(&e_b).dot(&n).signum() }, e_a, e_b),
                3 => (MeshKind::PointLineB, Vector3::zeros(), e_b),
                4 => (MeshKind::PointLineA, e_a, Vector3::zeros()),
                _ => (MeshKind::Points, Vector3::zeros(), Vector3::zeros()),
            };
            let kin = Kinematics::Mesh { kind, d0: g0 * n, r_a, r_b, d_a, d_b };
            let mut x = Vec12::zeros();
            for k in 0..12 {
                x[k] = (rng.uniform() - 0.5) * if k % 6 < 3 { 2e-4 } else { 2e-3 };
            }
            let (g, grad, hess, normal) = gap(&kin, &x);
            assert!((g - g0).abs() < 0.5 * g0 && g > 0.0, "case {case}: g {g} g0 {g0}");
            // independent geometry
            let (qa, qb) = (rotation(&x.fixed_rows::<3>(3).into()), rotation(&x.fixed_rows::<3>(9).into()));
            let pa = Vector3::from(x.fixed_rows::<3>(0)) + qa * r_a;
            let pb = c_b + Vector3::from(x.fixed_rows::<3>(6)) + qb * r_b;
            let d = pb - pa;
            let exact = match kind {
                MeshKind::PlaneOnB => (qb * n).dot(&d),
                MeshKind::PlaneOnA => (qa * n).dot(&d),
                MeshKind::Lines { sign } => {
                    let (u, w) = (qa * e_a, qb * e_b);
                    // p_a + s u and p_b + t w closest: [u·u −u·w; u·w −w·w] (s, t) = (u·d, w·d)
                    let m = nalgebra::Matrix2::new(u.dot(&u), -u.dot(&w), u.dot(&w), -w.dot(&w));
                    let st = m.try_inverse().unwrap() * nalgebra::Vector2::new(u.dot(&d), w.dot(&d));
                    let v = d + st[1] * w - st[0] * u;
                    sign * v.norm() * v.normalize().dot(&u.cross(&w).normalize()).signum()
                }
                MeshKind::PointLineB => (d - d.dot(&(qb * e_b)) * (qb * e_b)).norm(),
                MeshKind::PointLineA => (d - d.dot(&(qa * e_a)) * (qa * e_a)).norm(),
                MeshKind::Points => d.norm(),
            };
            assert!((g - exact).abs() < 1e-14, "case {case} {kind:?}: {g} vs {exact}");
            assert!((normal.norm() - 1.0).abs() < 1e-12 && normal.dot(&n) > 0.8, "case {case}: normal {normal:?} vs {n:?}");
            // The residual's closed-form gradient (mesh_grad.rs) and the jet's.
            let (gd, gradd, nd) = gap_grad(&kin, &x);
            assert!((gd - g).abs() < 1e-16 && (gradd - grad).norm() < 1e-14 && (nd - normal).norm() < 1e-15, "case {case} {kind:?}");
            let h = 1e-6;
            for j in 0..12 {
                let mut dx = Vec12::zeros();
                dx[j] = h;
                let (gp, grp, _, _) = gap(&kin, &(x + dx));
                let (gm, grm, _, _) = gap(&kin, &(x - dx));
                let fd = (gp - gm) / (2.0 * h);
                assert!((fd - grad[j]).abs() < 1e-8, "case {case} {kind:?}: ∂g/∂x{j} {} vs {fd}", grad[j]);
                let fdh = (grp - grm) / (2.0 * h);
                assert!((fdh - hess.column(j)).norm() < 1e-6 * (1.0 + hess.norm()), "case {case} {kind:?}: Hessian column {j}");
            }
        }
    }

    /// `[dem] tangent = "gauss-newton"` leaves the residual alone and drops
    /// exactly F ∇²g from the consistent tangent (eq 48), here for a loaded
    /// edge–edge mesh contact (where ∇²g is largest: both rotations).
    #[test]
    fn gauss_newton_tangent_drops_only_the_gap_curvature() {
        let law = NormalLaw::new(2.0e5, 1.5, -2.0, 1e-2, 0.5);
        let n: Vector3<f64> = Vector3::new(0.2, -0.3, 1.0).normalize();
        let (e_a, e_b): (Vector3<f64>, Vector3<f64>) = (n.cross(&Vector3::x()).normalize(), n.cross(&Vector3::y()).normalize());
        let g0 = 0.3 * law.gbar;
        let (r_a, c_b) = (Vector3::new(0.3, -0.1, 0.2), Vector3::new(0.1, 0.4, 0.9));
        let kin = Kinematics::Mesh { kind: MeshKind::Lines { sign: e_a.cross(&e_b).dot(&n).signum() }, d0: g0 * n, r_a, r_b: r_a + g0 * n - c_b, d_a: e_a, d_b: e_b };
        let el = ContactElement { kin, g_start: 1.1 * g0, n_start: n, grad_start: Vec12::zeros(), m_eff: 0.7, scale: 1.0 };
        let x = Vec12::from_fn(|k, _| 1e-4 * (k as f64 - 5.5) / 6.0);
        let full = contact(&el, &law, 0.4, 1e-3, &x).unwrap();
        let gn = contact_with(&el, &law, 0.4, 1e-3, &x, Some(DemTangent::GaussNewton)).unwrap();
        let hess = gap(&el.kin, &x).2;
        assert!(full.force > 0.0 && hess.norm() > 0.1, "not a loaded, curved contact: f {} |∇²g| {}", full.force, hess.norm());
        assert_eq!(gn.residual, full.residual);
        let err = (gn.tangent - full.force * hess - full.tangent).norm() / full.tangent.norm();
        assert!(err < 1e-14, "GN tangent − F ∇²g differs from the consistent one by {err:e}");
        assert!((gn.tangent - full.tangent).norm() > 1e-3 * full.force, "the curvature term was not dropped");
    }

    /// The 3×3 translational block that the Jacobian of frictionless
    /// sphere scenes takes is the 12×12 tangent's, to the bit: K on the
    /// diagonal translation blocks, −K off it, zero on the rotations.
    #[test]
    fn translational_block_is_the_full_tangents() {
        let law = NormalLaw::new(2.0e5, 1.5, -2.0, 1e-2, 0.5);
        let mut rng = SplitMix64::new(17);
        let mut checked = 0;
        for case in 0..200 {
            let n = random_vec(&mut rng, 1.0).normalize();
            let g0 = law.gbar * (0.05 + 0.9 * rng.uniform());
            let (ra, rb) = (0.5 + rng.uniform(), 0.5 + rng.uniform());
            let xa = random_vec(&mut rng, 1.0);
            let kin = if case % 2 == 0 {
                Kinematics::Spheres { xa, xb: xa + n * (ra + rb + g0), ra, rb }
            } else {
                Kinematics::Linear { g0, n, r_a: -ra * n, r_b: Vector3::zeros() }
            };
            let el = ContactElement { kin, g_start: g0 * 1.1, n_start: n, grad_start: Vec12::zeros(), m_eff: 0.7, scale: 1.0 };
            let x = Vec12::from_fn(|k, _| if k % 6 < 3 { (rng.uniform() - 0.5) * 1e-3 * law.gbar } else { 0.0 });
            let Some(e) = normal_at(&el, &law, 0.4, 1e-3, gap_grad(&el.kin, &x)) else { continue };
            if e.force == 0.0 {
                continue;
            }
            for kind in [DemTangent::Consistent, DemTangent::GaussNewton] {
                let full = normal_tangent(&el, &x, kind, &e);
                let k = normal_tangent_translational(&el, &x, kind, &e).unwrap();
                for (r, c, sign) in [(0, 0, 1.0), (0, 6, -1.0), (6, 0, -1.0), (6, 6, 1.0)] {
                    assert_eq!(full.fixed_view::<3, 3>(r, c).into_owned(), sign * k, "case {case} {kind:?} block ({r}, {c})");
                }
                // (a wall's lever arm is parallel to n up to round-off, which
                // the 3×3 blocks drop as they always did)
                for r in [3, 9].into_iter().filter(|_| case % 2 == 0) {
                    assert!(full.fixed_rows::<3>(r).iter().all(|&v| v == 0.0) && full.fixed_columns::<3>(r).iter().all(|&v| v == 0.0));
                }
            }
            checked += 1;
        }
        assert!(checked > 100, "only {checked} loaded contacts");
    }

    #[test]
    fn sphere_gap_is_exact_and_linear_gap_first_order() {
        let kin = Kinematics::Spheres { xa: Vector3::zeros(), xb: Vector3::new(0.0, 0.0, 2.1), ra: 1.0, rb: 1.0 };
        let mut x = Vec12::zeros();
        x[6] = 0.3; // u_b x
        let (g, _, _, n) = gap(&kin, &x);
        assert!((g - ((0.09f64 + 2.1 * 2.1).sqrt() - 2.0)).abs() < 1e-15);
        assert!((n.norm() - 1.0).abs() < 1e-15);
        // a sphere on a wall: rotation does not change the gap
        let kin = Kinematics::Linear { g0: 0.1, n: Vector3::z(), r_a: -Vector3::z(), r_b: Vector3::zeros() };
        let mut x = Vec12::zeros();
        x[3] = 0.2;
        x[4] = -0.1;
        assert_eq!(gap(&kin, &x).0, 0.1);
        x[2] = 0.05; // u_a z moves a towards... n points a→b, so +z closes
        assert!((gap(&kin, &x).0 - 0.05).abs() < 1e-15);
    }

    /// Every kind at random configurations and large increments: gap,
    /// gradient and normal equal the dual numbers' evaluation of the same
    /// formulas ([`mesh_gaps_are_exact_with_consistent_derivatives`] checks
    /// those against the moved geometry and central differences).
    #[test]
    fn mesh_gap_grad_matches_the_dual_numbers() {
        let mut rng = SplitMix64::new(23);
        for case in 0..600 {
            let n = random_vec(&mut rng, 1.0).normalize();
            let d0 = (0.01 + 0.05 * rng.uniform()) * n;
            let (r_a, r_b) = (random_vec(&mut rng, 0.6), random_vec(&mut rng, 0.6));
            let (d_a, d_b) = (random_vec(&mut rng, 1.0).normalize(), random_vec(&mut rng, 1.0).normalize());
            let kind = match case % 6 {
                0 => MeshKind::PlaneOnB,
                1 => MeshKind::PlaneOnA,
                2 => MeshKind::Lines { sign: if case % 4 == 2 { 1.0 } else { -1.0 } },
                3 => MeshKind::PointLineB,
                4 => MeshKind::PointLineA,
                _ => MeshKind::Points,
            };
            let x = Vec12::from_fn(|k, _| (rng.uniform() - 0.5) * if k % 6 < 3 { 0.02 } else { 1.0 });
            let (g, grad, normal) = mesh_gap_grad(kind, &d0, &r_a, &r_b, &d_a, &d_b, &x);
            let (gd, nd) = mesh_gap::<Dual>(kind, &d0, &r_a, &r_b, &d_a, &d_b, &x);
            let scale = 1.0 + gd.g.norm();
            assert!((g - gd.v).abs() < 1e-15 * scale, "case {case} {kind:?}: g {g} vs {}", gd.v);
            assert!((grad - gd.grad12()).norm() < 1e-13 * scale, "case {case} {kind:?}: {grad:?} vs {:?}", gd.grad12());
            assert!((normal - nd).norm() < 1e-14, "case {case} {kind:?}");
        }
    }
}
