//! The exact mesh-contact gaps of [`super::types::MeshKind`] with their
//! gradients in closed form: what every residual evaluation of a mesh pack
//! needs (the Newton line search evaluates the residual once or more per
//! iteration). Forward differentiation ([`super::jet::Dual`]) carried a
//! 9-entry gradient through every operation, a tenth of a tetrapod step;
//! here each rotation contributes one transposed Jacobian product
//! ([`Turn::jt`]). The Hessian (consistent tangent) stays with
//! [`super::jet::Jet`]. Pure, no MPI.
use super::types::{MeshKind, Vec12};
use nalgebra::Vector3;

/// The Rodrigues rotation Q(α) (eq 6) of one body's increment.
struct Rotation {
    alpha: Vector3<f64>,
    /// k = 4 / (4 + α·α).
    k: f64,
}

impl Rotation {
    fn new(alpha: Vector3<f64>) -> Self {
        Self { alpha, k: 4.0 * (1.0 / (alpha.dot(&alpha) + 4.0)) }
    }

    /// The rotation of `v`: its cross products, made once for both the
    /// value ([`Turn::change`]) and the gradient ([`Turn::jt`]).
    fn turn<'a>(&'a self, v: &'a Vector3<f64>) -> Turn<'a> {
        let c1 = self.alpha.cross(v);
        let c2 = self.alpha.cross(&c1);
        Turn { q: self, v, c1, c2 }
    }
}

/// One vector v turned by a [`Rotation`]: c1 = α × v, c2 = α × c1.
struct Turn<'a> {
    q: &'a Rotation,
    v: &'a Vector3<f64>,
    c1: Vector3<f64>,
    c2: Vector3<f64>,
}

impl Turn<'_> {
    /// Q(α) v − v = k (c1 + ½ c2).
    fn change(&self) -> Vector3<f64> {
        self.q.k * (self.c1 + 0.5 * self.c2)
    }

    /// Q(α) v.
    fn turned(&self) -> Vector3<f64> {
        self.v + self.change()
    }

    /// Jᵀ u with J = ∂(Q(α) v)/∂α = k (−[v]× − ½[c1]× − ½[α]×[v]×) −
    /// ½ k² (c1 + ½ c2) αᵀ (∂k/∂α = −½ k² α).
    fn jt(&self, u: &Vector3<f64>) -> Vector3<f64> {
        let (a, v, k) = (&self.q.alpha, self.v, self.q.k);
        k * (v.cross(u) + 0.5 * self.c1.cross(u) - 0.5 * v.cross(&a.cross(u))) - (0.5 * k * k * (self.c1 + 0.5 * self.c2).dot(u)) * a
    }
}

/// Gap, its gradient over the contact's 12 increments (u_a, α_a, u_b, α_b)
/// and the current normal (a to b) of a mesh contact at the increments `x`:
/// the same values as [`super::jet`]'s forward differentiation of the same
/// formulas, to rounding.
#[allow(clippy::too_many_arguments)]
pub fn mesh_gap_grad(
    kind: MeshKind,
    d0: &Vector3<f64>,
    r_a: &Vector3<f64>,
    r_b: &Vector3<f64>,
    d_a: &Vector3<f64>,
    d_b: &Vector3<f64>,
    x: &Vec12,
) -> (f64, Vec12, Vector3<f64>) {
    let w = Vector3::new(x[6] - x[0], x[7] - x[1], x[8] - x[2]);
    let qa = Rotation::new(Vector3::new(x[3], x[4], x[5]));
    let qb = Rotation::new(Vector3::new(x[9], x[10], x[11]));
    let (arm_a, arm_b) = (qa.turn(r_a), qb.turn(r_b));
    // d = d0 + w + (Q_b − I) r_b − (Q_a − I) r_a
    let d = d0 + w + (arm_b.change() - arm_a.change());
    // ∂g/∂d = p (so ∂g/∂w = p, ∂g/∂α_a = −J_a(r_a)ᵀ p, ∂g/∂α_b = J_b(r_b)ᵀ p),
    // plus the terms of a rotated direction: s_a = ∂g/∂(Q_a d_a) with the
    // turn of d_a, s_b likewise.
    let (g, n, p, s_a, s_b) = match kind {
        MeshKind::PlaneOnB => {
            let dir = qb.turn(d_b);
            let e = dir.turned();
            (e.dot(&d), e, e, None, Some((dir, d)))
        }
        MeshKind::PlaneOnA => {
            let dir = qa.turn(d_a);
            let e = dir.turned();
            (e.dot(&d), e, e, Some((dir, d)), None)
        }
        MeshKind::Lines { sign } => {
            // g = ±m·d/|m|, m = e_a × e_b: ∂g/∂m = ±(d − (m·d) m/l²)/l.
            let (dir_a, dir_b) = (qa.turn(d_a), qb.turn(d_b));
            let (ea, eb) = (dir_a.turned(), dir_b.turned());
            let m = ea.cross(&eb);
            let l = m.norm();
            let md = m.dot(&d);
            let q = sign * (d - (md / (l * l)) * m) / l;
            // ∂m = ∂e_a × e_b + e_a × ∂e_b
            ((md * (1.0 / l)) * sign, sign * (m / l), sign * (m / l), Some((dir_a, eb.cross(&q))), Some((dir_b, q.cross(&ea))))
        }
        MeshKind::PointLineB | MeshKind::PointLineA => {
            // g = |d − (d·e) e|: ∂g = (ŵ − c e)·∂d − (c d + s ŵ)·∂e, c = ŵ·e (≈ 0), s = d·e.
            let on_b = kind == MeshKind::PointLineB;
            let dir = if on_b { qb.turn(d_b) } else { qa.turn(d_a) };
            let e = dir.turned();
            let s = d.dot(&e);
            let wv = d - s * e;
            let l = wv.dot(&wv).sqrt();
            let wh = wv / l;
            let c = wh.dot(&e);
            let se = -(c * d + s * wh);
            let (p, turned) = (wh - c * e, Some((dir, se)));
            if on_b { (l, wh, p, None, turned) } else { (l, wh, p, turned, None) }
        }
        MeshKind::Points => {
            let l = d.dot(&d).sqrt();
            (l, d / l, d / l, None, None)
        }
    };
    let mut ga = -arm_a.jt(&p);
    if let Some((dir, s)) = s_a {
        ga += dir.jt(&s);
    }
    let mut gb = arm_b.jt(&p);
    if let Some((dir, s)) = s_b {
        gb += dir.jt(&s);
    }
    let mut grad = Vec12::zeros();
    grad.fixed_rows_mut::<3>(0).copy_from(&-p);
    grad.fixed_rows_mut::<3>(3).copy_from(&ga);
    grad.fixed_rows_mut::<3>(6).copy_from(&p);
    grad.fixed_rows_mut::<3>(9).copy_from(&gb);
    (g, grad, n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dem::jet::Num;
    use crate::scene::generate::SplitMix64;

    /// A vector with entries uniform in [−s, s] (as in assemble.rs's tests,
    /// which compare this file's gaps with the dual numbers').
    fn random_vec(rng: &mut SplitMix64, s: f64) -> Vector3<f64> {
        Vector3::new(rng.uniform() - 0.5, rng.uniform() - 0.5, rng.uniform() - 0.5) * 2.0 * s
    }

    /// Jᵀ u against the forward-differentiated rotation, at rotations up to
    /// about a radian (where the ∂k/∂α term matters).
    #[test]
    fn rotation_jacobian_transpose_matches_forward_differentiation() {
        use crate::dem::jet::{rotate, Dual3};
        let mut rng = SplitMix64::new(17);
        for _ in 0..200 {
            let (alpha, v, u) = (random_vec(&mut rng, 1.0), random_vec(&mut rng, 1.0), random_vec(&mut rng, 1.0));
            let a: [Dual3; 3] = [Dual3::variable(0, alpha.x), Dual3::variable(1, alpha.y), Dual3::variable(2, alpha.z)];
            let q = rotate(&a, &v);
            let want = q[0].g * u.x + q[1].g * u.y + q[2].g * u.z;
            let r = Rotation::new(alpha);
            assert!((r.turn(&v).jt(&u) - want).norm() < 1e-14, "{:?} vs {want:?}", r.turn(&v).jt(&u));
            assert!((r.turn(&v).turned() - Vector3::new(q[0].v, q[1].v, q[2].v)).norm() < 1e-15);
        }
    }
}
