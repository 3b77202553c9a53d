//! DEM interface laws (stage 3 "solver", `dem`): the hybrid penalty/barrier
//! normal law (Gay Neto & Wriggers eqs 49–51), viscous normal damping
//! (eqs 52–53) and the Coulomb stick/slip tangential law (eqs 54–58).
//! Pure functions of the gap (and rates) with their derivatives; no MPI.
use nalgebra::Vector3;

/// Hybrid normal law (eq 49): zero for g ≥ ḡ, `ε₁ (ḡ − g)^{n₁}` for
/// ḡ̄ ≤ g < ḡ, and the barrier `ε₂ g^{n₂} + c₂` for g < ḡ̄ (n₂ < 0), with
/// ḡ̄ = f ḡ and ε₂, c₂ from the matching conditions (eqs 50–51).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NormalLaw {
    /// ε₁ (force / length^{n₁}).
    pub eps1: f64,
    /// n₁ ≥ 1.
    pub n1: f64,
    /// n₂ < 0 (barrier intensity).
    pub n2: f64,
    /// Activation gap ḡ.
    pub gbar: f64,
    /// Switch gap ḡ̄ = f ḡ.
    pub gswitch: f64,
    /// ε₂ (eq 51).
    pub eps2: f64,
    /// c₂ (eq 51).
    pub c2: f64,
    /// Largest damping force as a multiple κ of the elastic one
    /// (`[dem] damping_cap`; ∞: eq 53 alone). See [`normal_total`].
    pub damping_cap: f64,
}

impl NormalLaw {
    /// The law from ε₁, n₁, n₂, ḡ and f (0 < f < 1); ε₂ and c₂ by eq 51.
    pub fn new(eps1: f64, n1: f64, n2: f64, gbar: f64, f: f64) -> Self {
        let gs = f * gbar;
        let eps2 = -eps1 * n1 * (gbar - gs).powf(n1 - 1.0) / (n2 * gs.powf(n2 - 1.0));
        let c2 = eps1 * (gbar - gs).powf(n1) - eps2 * gs.powf(n2);
        Self { eps1, n1, n2, gbar, gswitch: gs, eps2, c2, damping_cap: f64::INFINITY }
    }

    /// The same law with the damping force capped at κ f_n (see [`normal_total`]).
    pub fn with_damping_cap(self, kappa: f64) -> Self {
        Self { damping_cap: kappa, ..self }
    }

    /// Normal force magnitude f_n(g) ≥ 0 (repulsive). Infinite for g ≤ 0.
    pub fn force(&self, g: f64) -> f64 {
        self.eval(g).0
    }

    /// df_n/dg (≤ 0).
    pub fn slope(&self, g: f64) -> f64 {
        self.eval(g).1
    }

    /// d²f_n/dg².
    pub fn curvature(&self, g: f64) -> f64 {
        self.eval(g).2
    }

    /// (f_n, f_n', f_n'') at `g` from one power of the gap (eqs 49–50,
    /// f_n = ε₁ (ḡ − g)^n₁ above the switch, ε₂ g^n₂ + c₂ below): a contact
    /// evaluation needs all three, and four `powf` were a twentieth of a
    /// mesh step. Infinite (and −∞ slope) for g ≤ 0.
    pub fn eval(&self, g: f64) -> (f64, f64, f64) {
        if g >= self.gbar {
            (0.0, 0.0, 0.0)
        } else if g >= self.gswitch {
            let x = self.gbar - g;
            let q = x.powf(self.n1 - 1.0);
            let curv = if self.n1 == 1.0 { 0.0 } else { self.eps1 * self.n1 * (self.n1 - 1.0) * q / x };
            (self.eps1 * q * x, -self.eps1 * self.n1 * q, curv)
        } else if g > 0.0 {
            let q = g.powf(self.n2 - 1.0);
            (self.eps2 * q * g + self.c2, self.eps2 * self.n2 * q, self.eps2 * self.n2 * (self.n2 - 1.0) * q / g)
        } else {
            (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY)
        }
    }

    /// The gap at which the law gives force `f > 0` (its inverse; f_n is
    /// strictly decreasing on (0, ḡ)).
    pub fn inverse(&self, f: f64) -> f64 {
        let fs = self.force(self.gswitch);
        if f <= fs {
            self.gbar - (f / self.eps1).powf(1.0 / self.n1)
        } else {
            ((f - self.c2) / self.eps2).powf(1.0 / self.n2)
        }
    }
}

/// Viscous normal damping (eq 52): returns (f_d, ∂f_d/∂g, ∂f_d/∂ġ) for the
/// damping force f_d = −2ζ √(−f_n'(g) m) ġ (positive f_d is repulsive, like
/// f_n; ġ > 0 separating), m = m_A m_B / (m_A + m_B).
pub fn damping(law: &NormalLaw, zeta: f64, m_eff: f64, g: f64, gdot: f64) -> (f64, f64, f64) {
    let (_, slope, curvature) = law.eval(g);
    damping_from(zeta, m_eff, slope, curvature, gdot)
}

/// [`damping`] from the law's slope and curvature at the gap.
fn damping_from(zeta: f64, m_eff: f64, slope: f64, curvature: f64, gdot: f64) -> (f64, f64, f64) {
    let k = -slope;
    if zeta == 0.0 || k <= 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let c = 2.0 * zeta * (k * m_eff).sqrt();
    // dc/dg = 2ζ √m · d√k/dg = 2ζ √m (−f'') / (2√k)
    let dc = zeta * m_eff.sqrt() * (-curvature) / k.sqrt();
    (-c * gdot, -dc * gdot, -c)
}

/// Total normal force with the clamp of eq 53 (never tensile) and the
/// optional cap f_d ≤ κ f_n: returns (F, ∂F/∂g, ∂F/∂ġ) with
/// F = f_n + clamp(f_d, −f_n, κ f_n).
///
/// Why the cap: for n₁ = 1 the stiffness −f_n' jumps from 0 to ε₁ at ḡ, so
/// eq 52's damping force 2ζ√(ε₁ m)|ġ| appears at full size the moment an
/// approaching contact activates: the residual is discontinuous there and
/// Newton cycles between "active, pushed back" and "inactive, falling in"
/// (a dropped pyramid took 36 Newton iterations per step and Δt ≈ 1e-5 s).
/// Capped, F is continuous (f_n → 0 at ḡ); vibrations about a rest state
/// of amplitude below κ/(2ζ) of its approach keep eq 52's damping exactly.
pub fn normal_total(law: &NormalLaw, zeta: f64, m_eff: f64, g: f64, gdot: f64) -> (f64, f64, f64) {
    let (fnn, slope, curvature) = law.eval(g);
    if fnn == 0.0 {
        return (0.0, 0.0, 0.0);
    }
    let (fd, dfd_g, dfd_gdot) = damping_from(zeta, m_eff, slope, curvature, gdot);
    let f = fnn + fd;
    if f <= 0.0 {
        (0.0, 0.0, 0.0)
    } else if fd > law.damping_cap * fnn {
        ((1.0 + law.damping_cap) * fnn, (1.0 + law.damping_cap) * slope, 0.0)
    } else {
        (f, slope + dfd_g, dfd_gdot)
    }
}

/// Tangential law parameters (eqs 54–58).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TangentialLaw {
    /// Tangential penalty stiffness ε_t.
    pub eps_t: f64,
    /// Tangential viscous coefficient c_t.
    pub c_t: f64,
    /// Static coefficient μ_s.
    pub mu_s: f64,
    /// Dynamic coefficient μ_d.
    pub mu_d: f64,
}

/// Result of the tangential law at one contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Friction {
    /// Friction force f_t (in the tangent plane).
    pub force: Vector3<f64>,
    /// True when the contact slides in configuration i+1.
    pub sliding: bool,
    /// Tangential gap to store for the next step (eq 58 when sliding).
    pub gap_t: Vector3<f64>,
}

/// Coulomb stick/slip (eqs 54–58): `gt` is the accumulated tangential gap
/// g_t^{i+1} (eq 44), `gt_dot` its rate, `f_n` the normal force, `sliding`
/// the status at configuration i.
pub fn friction(law: &TangentialLaw, gt: Vector3<f64>, gt_dot: Vector3<f64>, f_n: f64, sliding: bool) -> Friction {
    let fe = law.eps_t * gt;
    let ftr = fe + law.c_t * gt_dot;
    let limit = if sliding { law.mu_d } else { law.mu_s } * f_n;
    let slides = ftr.norm() > limit;
    let force = if slides {
        let t = ftr / ftr.norm();
        law.mu_d * f_n * t
    } else {
        ftr
    };
    let mu = if sliding { law.mu_d } else { law.mu_s };
    let gap_t = if fe.norm() > mu * f_n && fe.norm() > 0.0 {
        law.mu_d * f_n / law.eps_t * fe / fe.norm()
    } else {
        gt
    };
    Friction { force, sliding: slides, gap_t }
}

/// ∂f_t/∂g_t (3×3) of [`friction`] at fixed f_n, ġ_t scaled by `dgdot_dgt`
/// (ġ_t = dgdot_dgt · g_t + const): ε_t + c_t·dgdot_dgt in stick; the
/// projection (μ_d f_n/‖f‖)(I − t tᵀ)(ε_t + c_t·dgdot_dgt) in slip.
pub fn friction_tangent(law: &TangentialLaw, gt: Vector3<f64>, gt_dot: Vector3<f64>, f_n: f64, sliding: bool, dgdot_dgt: f64) -> nalgebra::Matrix3<f64> {
    let s = law.eps_t + law.c_t * dgdot_dgt;
    let fr = friction(law, gt, gt_dot, f_n, sliding);
    let id = nalgebra::Matrix3::identity();
    if !fr.sliding {
        return id * s;
    }
    let ftr = law.eps_t * gt + law.c_t * gt_dot;
    let n = ftr.norm();
    let t = ftr / n;
    (id - t * t.transpose()) * (law.mu_d * f_n / n * s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn law() -> NormalLaw {
        NormalLaw::new(1.0e6, 1.5, -2.0, 1e-3, 0.5)
    }

    #[test]
    fn value_and_slope_continuous_at_switch() {
        let l = law();
        let gs = l.gswitch;
        let h = 1e-12;
        let (lo, hi) = (l.force(gs - h), l.force(gs + h));
        assert!((lo - hi).abs() <= 1e-6 * hi, "{lo} vs {hi}");
        let (slo, shi) = (l.slope(gs - h), l.slope(gs + h));
        assert!((slo - shi).abs() <= 1e-6 * shi.abs(), "{slo} vs {shi}");
        // eq 51 directly
        let left = l.eps2 * gs.powf(l.n2) + l.c2;
        let right = l.eps1 * (l.gbar - gs).powf(l.n1);
        assert!((left - right).abs() <= 1e-9 * right);
        assert_eq!(l.force(l.gbar), 0.0);
        assert_eq!(l.force(2.0 * l.gbar), 0.0);
        assert!(l.eps2 > 0.0);
    }

    #[test]
    fn barrier_diverges_at_contact() {
        let l = law();
        let mut prev = l.force(l.gswitch);
        for k in 1..12 {
            let g = l.gswitch * 10f64.powi(-k);
            let f = l.force(g);
            assert!(f > prev * 10.0, "not growing like a barrier at g = {g}: {f}");
            prev = f;
        }
        assert!(prev > 1e20);
        assert_eq!(l.force(0.0), f64::INFINITY);
    }

    fn rel(a: f64, b: f64) -> f64 {
        (a - b).abs() / b.abs().max(1e-300)
    }

    #[test]
    fn derivatives_match_finite_differences() {
        for l in [law(), NormalLaw::new(3.0e4, 1.0, -1.0, 2e-2, 0.3), NormalLaw::new(5.0, 2.5, -3.0, 0.1, 0.7)] {
            for frac in [0.05, 0.2, 0.45, 0.55, 0.8, 0.95] {
                let g = frac * l.gbar;
                if (g - l.gswitch).abs() < 1e-3 * l.gbar {
                    continue;
                }
                let h = 1e-6 * g;
                let fd = (l.force(g + h) - l.force(g - h)) / (2.0 * h);
                assert!(rel(l.slope(g), fd) < 1e-6, "slope at {g}: {} vs {fd}", l.slope(g));
                let fd2 = (l.slope(g + h) - l.slope(g - h)) / (2.0 * h);
                if l.curvature(g) != 0.0 {
                    assert!(rel(l.curvature(g), fd2) < 1e-6, "curvature at {g}");
                }
                let (zeta, m, gdot) = (0.3, 2.0, -0.7);
                let (f, dg, dgd) = normal_total(&l, zeta, m, g, gdot);
                assert!(f > 0.0);
                let fdg = (normal_total(&l, zeta, m, g + h, gdot).0 - normal_total(&l, zeta, m, g - h, gdot).0) / (2.0 * h);
                assert!(rel(dg, fdg) < 1e-6, "dF/dg at {g}: {dg} vs {fdg}");
                let hd = 1e-6;
                let fdd = (normal_total(&l, zeta, m, g, gdot + hd).0 - normal_total(&l, zeta, m, g, gdot - hd).0) / (2.0 * hd);
                assert!(rel(dgd, fdd) < 1e-6);
                // the inverse
                assert!(rel(l.inverse(l.force(g)), g) < 1e-10);
            }
        }
    }

    #[test]
    fn capped_damping_is_continuous_at_activation_and_exact_below_the_cap() {
        // Hookean n₁ = 1: without the cap an approaching contact's force
        // jumps at ḡ by 2ζ√(ε₁ m)|ġ|; with it, F → 0 as g → ḡ.
        let plain = NormalLaw::new(3.0e4, 1.0, -2.0, 1e-3, 0.5);
        let capped = plain.with_damping_cap(1.0);
        let (zeta, m, approach) = (1.0, 2.0, -0.1);
        let below = plain.gbar * (1.0 - 1e-9);
        assert!(normal_total(&plain, zeta, m, below, approach).0 > 0.5 * 2.0 * (3.0e4 * m).sqrt() * 0.1);
        let f = normal_total(&capped, zeta, m, below, approach).0;
        assert!(f <= 2.0 * plain.force(below) * (1.0 + 1e-12), "{f}");
        // Capped regime: F = (1 + κ) f_n, its derivatives by differences.
        let g = 0.9 * plain.gbar;
        let (f, dg, dgd) = normal_total(&capped, zeta, m, g, approach);
        assert!(rel(f, 2.0 * plain.force(g)) < 1e-12 && dgd == 0.0);
        let h = 1e-6 * g;
        let fdg = (normal_total(&capped, zeta, m, g + h, approach).0 - normal_total(&capped, zeta, m, g - h, approach).0) / (2.0 * h);
        assert!(rel(dg, fdg) < 1e-6, "{dg} vs {fdg}");
        // Below the cap (slow approach) the force is eq 52's exactly.
        let slow = -1e-6;
        assert_eq!(normal_total(&capped, zeta, m, g, slow), normal_total(&plain, zeta, m, g, slow));
    }

    #[test]
    fn damping_never_pulls() {
        let l = law();
        let g = 0.6 * l.gbar;
        let (f, _, _) = normal_total(&l, 5.0, 1.0, g, 1e3);
        assert_eq!(f, 0.0);
        let (f, _, _) = normal_total(&l, 0.5, 1.0, g, -1.0);
        assert!(f > l.force(g));
    }

    #[test]
    fn coulomb_stick_and_slip() {
        let t = TangentialLaw { eps_t: 1e4, c_t: 0.0, mu_s: 0.5, mu_d: 0.4 };
        let fnn = 10.0;
        // stick: 1e4 * 4e-4 = 4 < 5
        let r = friction(&t, Vector3::new(4e-4, 0.0, 0.0), Vector3::zeros(), fnn, false);
        assert!(!r.sliding);
        assert!((r.force.x - 4.0).abs() < 1e-12);
        assert_eq!(r.gap_t, Vector3::new(4e-4, 0.0, 0.0));
        // slip: trial 6 > 5, force = μ_d f_n along the trial, gap reset (eq 58)
        let r = friction(&t, Vector3::new(0.0, 6e-4, 0.0), Vector3::zeros(), fnn, false);
        assert!(r.sliding);
        assert!((r.force - Vector3::new(0.0, 4.0, 0.0)).norm() < 1e-12);
        assert!((r.gap_t - Vector3::new(0.0, 4e-4, 0.0)).norm() < 1e-15);
        // sliding stays sliding above μ_d f_n, sticks below it
        assert!(friction(&t, Vector3::new(4.5e-4, 0.0, 0.0), Vector3::zeros(), fnn, true).sliding);
        assert!(!friction(&t, Vector3::new(3.5e-4, 0.0, 0.0), Vector3::zeros(), fnn, true).sliding);
    }

    #[test]
    fn friction_tangent_matches_finite_differences() {
        let t = TangentialLaw { eps_t: 1e4, c_t: 10.0, mu_s: 0.5, mu_d: 0.4 };
        let gdot = Vector3::new(0.01, -0.02, 0.0);
        for gt in [Vector3::new(1e-4, 2e-4, 0.0), Vector3::new(8e-4, -3e-4, 1e-4)] {
            let k = 100.0; // ġ_t = k g_t + const
            let c0 = gdot - k * gt;
            let f = |g: Vector3<f64>| friction(&t, g, k * g + c0, 10.0, false).force;
            let tan = friction_tangent(&t, gt, gdot, 10.0, false, k);
            for j in 0..3 {
                let h = 1e-9;
                let mut e = Vector3::zeros();
                e[j] = h;
                let col = (f(gt + e) - f(gt - e)) / (2.0 * h);
                let err = (tan.column(j) - col).norm() / tan.norm();
                assert!(err < 1e-6, "column {j}: {err}");
            }
        }
    }
}
