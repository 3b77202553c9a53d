//! CD with Coulomb friction: the contact frames, the sets the forces of one
//! solve live in, their projections, and the natural-map residuals.
//!
//! A frictional contact has three rows of B (normal, then two tangents) and
//! three force entries f = (f_n, f_t1, f_t2), contiguous per contact; u =
//! N f + p is the end-of-step relative velocity at the contact in the same
//! frame (normal: plus the gap rate Φ/Δt). The exact Coulomb law is
//!
//! 0 ≤ f_n ⊥ u_n ≥ 0,  |f_t| ≤ μ f_n,  u_t ≠ 0 ⇒ f_t = −μ f_n u_t/|u_t|
//!
//! (De Saxcé's form: K_μ ∋ f ⊥ û ∈ K_μ* with û = u + μ|u_t| e_n). It is no
//! convex program; [`super::coulomb`] solves it by APGD with the Coulomb
//! map [`project_coulomb`] in place of a projection. The cone relaxation of Anitescu–Tasora (what Chrono solves) is the QP over
//! K_μ itself; it drops the μ|u_t| shift, so a sliding contact opens at
//! u_n = μ|u_t|.
use crate::body::Bodies;
use crate::contact::Contacts;
use crate::scene::Scene;
use nalgebra::Vector3;

/// A sliding contact is one whose tangential speed exceeds this many times
/// the solve's stopping threshold (below it, the solver's error).
pub const SLIP: f64 = 10.0;

/// Two unit tangents (t1, t2) completing `n` to a right-handed frame: t1 =
/// n × e / |n × e| with e the axis least aligned with n (z on ties, so a
/// 2D scene's in-plane tangent is t1), t2 = n × t1. A function of n alone:
/// every rank builds the same frame.
pub fn tangent_basis(n: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let a = n.abs();
    let e = if a.z <= a.x && a.z <= a.y {
        Vector3::z()
    } else if a.y <= a.x {
        Vector3::y()
    } else {
        Vector3::x()
    };
    let t1 = n.cross(&e).normalize();
    (t1, n.cross(&t1))
}

/// (μ_s, μ_d) of contact `i`: the means of its two materials' (a wall its
/// own material's), the pairing rule of the DEM.
pub fn coefficients(scene: &Scene, bodies: &Bodies, contacts: &Contacts, i: usize) -> (f64, f64) {
    let ma = &scene.materials[bodies.material[contacts.ia[i]] as usize];
    let mb = &scene.materials[contacts.material_b(i, bodies, &scene.walls) as usize];
    (0.5 * (ma.friction_static + mb.friction_static), 0.5 * (ma.friction_dynamic + mb.friction_dynamic))
}

/// True when any material has friction (or rolling resistance): the
/// scene's contacts then have three rows each (six with rolling).
pub fn frictional(scene: &Scene) -> bool {
    rolling(scene) || scene.materials.iter().any(|m| m.friction_static > 0.0 || m.friction_dynamic > 0.0)
}

/// True when any material has rolling or twisting resistance: three more
/// rows per contact, (r1, r2, tw), on the relative angular velocity.
pub fn rolling(scene: &Scene) -> bool {
    scene.materials.iter().any(|m| m.rolling_friction > 0.0 || m.twisting_friction > 0.0)
}

/// (μ_r, μ_tw) of contact `i`: the means of its two materials', as μ.
pub fn rolling_coefficients(scene: &Scene, bodies: &Bodies, contacts: &Contacts, i: usize) -> [f64; 2] {
    let ma = &scene.materials[bodies.material[contacts.ia[i]] as usize];
    let mb = &scene.materials[contacts.material_b(i, bodies, &scene.walls) as usize];
    [0.5 * (ma.rolling_friction + mb.rolling_friction), 0.5 * (ma.twisting_friction + mb.twisting_friction)]
}

/// The set the forces of one solve live in, per contact.
#[derive(Clone, Debug)]
pub enum Set {
    /// f_n ≥ 0 (frictionless; one row per contact).
    Normal,
    /// |f_t| ≤ μ_c f_n (the friction cone K_μ).
    Cone(Vec<f64>),
    /// The cone again, but reached by [`project_coulomb`] (f_n clamped,
    /// then f_t clipped to μ_c f_n): the fixed points of projected
    /// gradient steps are then the exact Coulomb law's solutions, and the
    /// residual is De Saxcé's.
    Coulomb(Vec<f64>),
}

/// The feasible set of one solve over B's rows (one per contact for
/// `Normal`, three for the others): `act` 1 on the rows with a non-zero
/// row of B and 0 on the others (their force is held at zero).
#[derive(Clone, Debug)]
pub struct Constraint {
    pub act: Vec<f64>,
    pub set: Set,
    /// APGD's metric, per row: the step along row i is s_i × its gradient
    /// (None: s = 1). One value per contact over its rows, so the discs
    /// and cones keep their shape.
    pub scale: Option<Vec<f64>>,
    /// With rolling resistance, (μ_r, μ_tw) per contact: each contact has
    /// six rows, the three of `set` then (r1, r2, tw) bounded by
    /// |f_r| ≤ μ_r f_n and |f_tw| ≤ μ_tw f_n (see [`project_rolling`]).
    /// Empty without.
    pub roll: Vec<[f64; 2]>,
}

impl Constraint {
    /// Rows per contact: 1 (`Normal`), 3, or 6 with rolling resistance.
    pub fn rows(&self) -> usize {
        match (&self.set, self.roll.is_empty()) {
            (Set::Normal, _) => 1,
            (_, true) => 3,
            (_, false) => 6,
        }
    }

    /// Projects `x` (one rank's entries) onto the set, in place.
    pub fn project(&self, x: &mut [f64]) {
        let rows = self.rows();
        match &self.set {
            Set::Normal => {
                for (x, a) in x.iter_mut().zip(&self.act) {
                    *x = x.max(0.0) * a;
                }
            }
            Set::Cone(mu) | Set::Coulomb(mu) => {
                let cone = matches!(self.set, Set::Cone(_));
                for (k, (c, a)) in x.chunks_exact_mut(rows).zip(self.act.chunks_exact(rows)).enumerate() {
                    let z = [c[0] * a[0], c[1] * a[1], c[2] * a[2]];
                    let f = if cone { project_cone(z, mu[k]) } else { project_coulomb(z, mu[k]) };
                    c[..3].copy_from_slice(&f);
                    if rows == 6 {
                        let r = project_rolling([c[3] * a[3], c[4] * a[4], c[5] * a[5]], f[0], self.roll[k]);
                        c[3..].copy_from_slice(&r);
                    }
                }
            }
        }
    }

    /// This rank's largest natural-map residual |f − P(f − u)| per contact,
    /// u = `nx` + `p` (for f ≥ 0 it is |min(f, u)|); with rolling rows the
    /// 2-norm of the frictional and the rolling block's.
    pub fn residual(&self, x: &[f64], nx: &[f64], p: &[f64]) -> f64 {
        let frictional = |mu: &[f64], k: usize, f: &[f64], u: &[f64]| {
            let (f3, u3) = ([f[0], f[1], f[2]], [u[0], u[1], u[2]]);
            match self.set {
                Set::Cone(_) => natural_map(f3, u3, |z| project_cone(z, mu[k])),
                _ => coulomb_residual(f3, u3, mu[k]),
            }
        };
        match (&self.set, self.rows()) {
            (Set::Normal, _) => x.iter().zip(nx).zip(p).zip(&self.act).map(|(((x, n), p), a)| x.min(n + p).abs() * a).fold(0.0, f64::max),
            (Set::Cone(mu) | Set::Coulomb(mu), 3) => blocks::<3>(x, nx, p, &self.act).enumerate().map(|(k, (f, u))| frictional(mu, k, &f, &u)).fold(0.0, f64::max),
            (Set::Cone(mu) | Set::Coulomb(mu), _) => blocks::<6>(x, nx, p, &self.act)
                .enumerate()
                .map(|(k, (f, u))| norm2(frictional(mu, k, &f, &u), rolling_residual([f[3], f[4], f[5]], [u[3], u[4], u[5]], f[0], self.roll[k])))
                .fold(0.0, f64::max),
        }
    }
}

/// The contacts' (f, u = nx + p) as masked blocks of their `N` rows.
fn blocks<'a, const N: usize>(x: &'a [f64], nx: &'a [f64], p: &'a [f64], act: &'a [f64]) -> impl Iterator<Item = ([f64; N], [f64; N])> + 'a {
    x.chunks_exact(N).zip(nx.chunks_exact(N)).zip(p.chunks_exact(N)).zip(act.chunks_exact(N)).map(|(((x, n), p), a)| {
        let f = std::array::from_fn(|r| x[r] * a[r]);
        let u = std::array::from_fn(|r| (n[r] + p[r]) * a[r]);
        (f, u)
    })
}

/// The rolling block (f_r1, f_r2, f_tw) clipped to its bounds given the
/// (projected) normal force f_n: the rolling pair to the disc of radius
/// μ_r f_n, the twist to [−μ_tw f_n, μ_tw f_n]. As the Coulomb map, a fixed
/// point of f = P(f − u/L) resists rolling (twisting) below its bound and
/// opposes it at the bound.
pub fn project_rolling(f: [f64; 3], f_n: f64, [mu_r, mu_tw]: [f64; 2]) -> [f64; 3] {
    let d = project_disc([0.0, f[0], f[1]], mu_r * f_n.max(0.0));
    let g = mu_tw * f_n.max(0.0);
    [d[1], d[2], f[2].clamp(-g, g)]
}

/// |f − P(f − u)| of the rolling block with f_n held.
pub fn rolling_residual(f: [f64; 3], u: [f64; 3], f_n: f64, mu: [f64; 2]) -> f64 {
    let z = project_rolling([f[0] - u[0], f[1] - u[1], f[2] - u[2]], f_n, mu);
    ((f[0] - z[0]).powi(2) + (f[1] - z[1]).powi(2) + (f[2] - z[2]).powi(2)).sqrt()
}

/// |f − P(f − u)|.
fn natural_map(f: [f64; 3], u: [f64; 3], project: impl Fn([f64; 3]) -> [f64; 3]) -> f64 {
    let z = project([f[0] - u[0], f[1] - u[1], f[2] - u[2]]);
    ((f[0] - z[0]).powi(2) + (f[1] - z[1]).powi(2) + (f[2] - z[2]).powi(2)).sqrt()
}

/// The exact Coulomb law's residual of one contact: De Saxcé's natural map
/// |f − P_K(f − û)|, û = u + μ|u_t| e_n; zero exactly where (f, u) obey
/// Signorini and Coulomb with coefficient μ.
pub fn coulomb_residual(f: [f64; 3], u: [f64; 3], mu: f64) -> f64 {
    let shifted = [u[0] + mu * norm2(u[1], u[2]), u[1], u[2]];
    natural_map(f, shifted, |z| project_cone(z, mu))
}

/// |(a, b)|: forces and speeds are far from overflow, so no `hypot` (several
/// times slower, and this runs per contact in every APGD iteration).
#[inline]
pub fn norm2(a: f64, b: f64) -> f64 {
    (a * a + b * b).sqrt()
}

/// Projection onto {f_n ≥ 0, |f_t| ≤ g}.
pub fn project_disc(f: [f64; 3], g: f64) -> [f64; 3] {
    let s = norm2(f[1], f[2]);
    let k = if s > g { if s > 0.0 { g.max(0.0) / s } else { 0.0 } } else { 1.0 };
    [f[0].max(0.0), f[1] * k, f[2] * k]
}

/// The Coulomb map onto K_μ: f_n clamped at zero, then f_t clipped to the
/// disc of radius μ f_n. Not the orthogonal projection: f = P(f − u/L)
/// holds exactly where f obeys Signorini and Coulomb (a clipped f_t points
/// against u_t, and u_n is left alone), with no μ|u_t| dilation.
pub fn project_coulomb(f: [f64; 3], mu: f64) -> [f64; 3] {
    project_disc(f, mu * f[0].max(0.0))
}

/// Orthogonal projection onto the cone K_μ = {|f_t| ≤ μ f_n}.
pub fn project_cone(f: [f64; 3], mu: f64) -> [f64; 3] {
    let s = norm2(f[1], f[2]);
    if s <= mu * f[0] {
        f
    } else if mu * s <= -f[0] {
        [0.0, 0.0, 0.0]
    } else {
        let n = (f[0] + mu * s) / (1.0 + mu * mu);
        let k = if s > 0.0 { mu * n / s } else { 0.0 };
        [n, f[1] * k, f[2] * k]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tangent_basis_is_orthonormal_and_right_handed() {
        for n in [Vector3::z(), -Vector3::x(), Vector3::new(1.0, 1.0, 0.0).normalize(), Vector3::new(0.3, -0.5, 0.8).normalize()] {
            let (t1, t2) = tangent_basis(&n);
            assert!(t1.dot(&n).abs() < 1e-15 && t2.dot(&n).abs() < 1e-15 && t1.dot(&t2).abs() < 1e-15);
            assert!((t1.norm() - 1.0).abs() < 1e-15 && (t2.norm() - 1.0).abs() < 1e-15);
            assert!((t1.cross(&t2) - n).norm() < 1e-15);
        }
        // In the xy-plane (a 2D scene) t1 stays in the plane.
        let (t1, _) = tangent_basis(&Vector3::new(0.6, 0.8, 0.0));
        assert_eq!(t1.z, 0.0);
    }

    #[test]
    fn cone_projection_is_the_nearest_point_of_the_cone() {
        let mu = 0.5;
        for f in [[1.0, 0.2, 0.1], [1.0, 2.0, -1.0], [-1.0, 0.1, 0.0], [-0.1, 3.0, 4.0], [0.0, 0.0, 0.0]] {
            let p = project_cone(f, mu);
            assert!(p[1].hypot(p[2]) <= mu * p[0] + 1e-15, "{p:?} outside");
            // Moreau: f − P(f) is in the polar cone and orthogonal to P(f).
            let r = [f[0] - p[0], f[1] - p[1], f[2] - p[2]];
            assert!((r[0] * p[0] + r[1] * p[1] + r[2] * p[2]).abs() < 1e-14);
            // ... and −(f − P(f)) lies in the dual cone {u_n ≥ μ|u_t|}.
            assert!(-r[0] + 1e-14 >= mu * r[1].hypot(r[2]));
            // No point of a fine sample of the cone's surface is nearer.
            let d = |q: [f64; 3]| (0..3).map(|k| (f[k] - q[k]).powi(2)).sum::<f64>();
            for i in 0..200 {
                let fn_ = i as f64 * 0.02;
                for j in 0..64 {
                    let a = j as f64 * std::f64::consts::TAU / 64.0;
                    let q = [fn_, mu * fn_ * a.cos(), mu * fn_ * a.sin()];
                    assert!(d(q) >= d(p) - 1e-9);
                }
            }
        }
    }

    #[test]
    fn coulomb_residual_vanishes_on_stick_slip_and_separation_only() {
        let mu = 0.4;
        // stick: u = 0, |f_t| < μ f_n
        assert_eq!(coulomb_residual([1.0, 0.1, 0.2], [0.0, 0.0, 0.0], mu), 0.0);
        // slip: |f_t| = μ f_n against u_t, u_n = 0
        let ut = [0.0, 3.0, -4.0];
        let slip = [2.0, -0.8 * 3.0 / 5.0, 0.8 * 4.0 / 5.0];
        assert!(coulomb_residual(slip, ut, mu) < 1e-15);
        // separation: f = 0, u_n > 0
        assert_eq!(coulomb_residual([0.0, 0.0, 0.0], [1.0, 5.0, 0.0], mu), 0.0);
        // the cone relaxation's answer for a sliding contact (u_n = μ|u_t|)
        // is not Coulomb: the contact opens while it pushes.
        assert!(coulomb_residual(slip, [mu * 5.0, 3.0, -4.0], mu) > 0.1);
        // friction along the sliding, or above the bound, is not Coulomb either
        assert!(coulomb_residual([2.0, 0.48, -0.64], ut, mu) > 0.1);
        assert!(coulomb_residual([1.0, 0.6, 0.0], [0.0, 0.0, 0.0], mu) > 0.1);
    }

    #[test]
    fn the_coulomb_map_fixes_exactly_the_coulomb_solutions() {
        let mu = 0.4;
        let fixed = |f: [f64; 3], u: [f64; 3]| {
            let z = project_coulomb([f[0] - 0.5 * u[0], f[1] - 0.5 * u[1], f[2] - 0.5 * u[2]], mu);
            (0..3).all(|k| (z[k] - f[k]).abs() < 1e-14)
        };
        let cases = [
            ([1.0, 0.1, 0.2], [0.0, 0.0, 0.0]),
            ([2.0, -0.48, 0.64], [0.0, 3.0, -4.0]),
            ([0.0, 0.0, 0.0], [1.0, 5.0, 0.0]),
            ([2.0, -0.48, 0.64], [0.4 * 5.0, 3.0, -4.0]),
            ([2.0, 0.48, -0.64], [0.0, 3.0, -4.0]),
            ([1.0, 0.6, 0.0], [0.0, 0.0, 0.0]),
        ];
        for (f, u) in cases {
            assert_eq!(fixed(f, u), coulomb_residual(f, u, mu) < 1e-14, "f = {f:?}, u = {u:?}");
        }
    }
}
