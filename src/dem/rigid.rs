//! Rigid bodies for the DEM (stage 3 "solver", `dem`): Rodrigues rotation
//! parameters (Gay Neto & Wriggers eqs 6–9, update eq 7), Newmark (eqs
//! 20–21) with the modified Newmark for rotations (eq 22), the inertial
//! residual with its consistent tangent (eqs 17–19, pole at the centre of
//! mass) and external loads with pseudo-moments (eqs 23–25). Pure, no MPI.
use nalgebra::{Matrix3, Matrix6, UnitQuaternion, Vector3, Vector6};

/// skew(v): skew(v) w = v × w.
pub fn skew(v: &Vector3<f64>) -> Matrix3<f64> {
    Matrix3::new(0.0, -v.z, v.y, v.z, 0.0, -v.x, -v.y, v.x, 0.0)
}

/// The rotation tensor of Rodrigues parameters α = 2 tan(θ/2) e (eq 6).
pub fn rotation(alpha: &Vector3<f64>) -> Matrix3<f64> {
    let a = skew(alpha);
    Matrix3::identity() + (4.0 / (4.0 + alpha.norm_squared())) * (a + 0.5 * a * a)
}

/// Rodrigues parameters of the composed rotation Q(α^Δ) Q(α^i) (eq 7).
pub fn compose(ad: &Vector3<f64>, ai: &Vector3<f64>) -> Vector3<f64> {
    (4.0 / (4.0 - ad.dot(ai))) * (ad + ai + 0.5 * ad.cross(ai))
}

/// Ξ(α) of ω = Ξ α̇ (eqs 8–9).
pub fn xi(alpha: &Vector3<f64>) -> Matrix3<f64> {
    (4.0 / (4.0 + alpha.norm_squared())) * (Matrix3::identity() + 0.5 * skew(alpha))
}

/// The unit quaternion of Q(α): (1, α/2) normalised.
pub fn quaternion(alpha: &Vector3<f64>) -> UnitQuaternion<f64> {
    UnitQuaternion::from_quaternion(nalgebra::Quaternion::new(1.0, 0.5 * alpha.x, 0.5 * alpha.y, 0.5 * alpha.z))
}

/// Newmark constants α₁..α₆ of eq 21 for (β, γ, Δt).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Newmark {
    pub a1: f64,
    pub a2: f64,
    pub a3: f64,
    pub a4: f64,
    pub a5: f64,
    pub a6: f64,
}

impl Newmark {
    pub fn new(beta: f64, gamma: f64, dt: f64) -> Self {
        Self {
            a1: 1.0 / (beta * dt * dt),
            a2: 1.0 / (beta * dt),
            a3: (1.0 - 2.0 * beta) / (2.0 * beta),
            a4: gamma / (beta * dt),
            a5: 1.0 - gamma / beta,
            a6: (1.0 - gamma / (2.0 * beta)) * dt,
        }
    }
}

/// The known state of one body at configuration i, and its loads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RigidState {
    pub mass: f64,
    /// World-frame inertia J^i about the centre of mass.
    pub inertia: Matrix3<f64>,
    pub velocity: Vector3<f64>,
    pub acceleration: Vector3<f64>,
    pub angular_velocity: Vector3<f64>,
    pub angular_acceleration: Vector3<f64>,
    /// External force at the centre of mass (weight m g and any other).
    pub force: Vector3<f64>,
    /// External moment about the centre of mass (world frame).
    pub moment: Vector3<f64>,
    /// A force applied at a material point `point_offset` (world frame, at
    /// configuration i, relative to the centre of mass); it rotates with
    /// the body.
    pub point_force: Vector3<f64>,
    pub point_offset: Vector3<f64>,
}

/// The state at configuration i+1 from the increments (eqs 21–22).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Updated {
    pub velocity: Vector3<f64>,
    pub acceleration: Vector3<f64>,
    pub angular_velocity: Vector3<f64>,
    pub angular_acceleration: Vector3<f64>,
    /// Q^Δ as a quaternion (Q^{i+1} = Q^Δ Q^i).
    pub rotation: UnitQuaternion<f64>,
}

/// Velocities and accelerations at i+1 (eqs 21 and 22).
pub fn update(s: &RigidState, nm: &Newmark, u: &Vector3<f64>, alpha: &Vector3<f64>) -> Updated {
    let q = rotation(alpha);
    Updated {
        velocity: nm.a4 * u + nm.a5 * s.velocity + nm.a6 * s.acceleration,
        acceleration: nm.a1 * u - nm.a2 * s.velocity - nm.a3 * s.acceleration,
        angular_velocity: q * (nm.a4 * alpha + nm.a5 * s.angular_velocity + nm.a6 * s.angular_acceleration),
        angular_acceleration: q * (nm.a1 * alpha - nm.a2 * s.angular_velocity - nm.a3 * s.angular_acceleration),
        rotation: quaternion(alpha),
    }
}

/// Derivative of Ξ(α)ᵀ y with respect to α at fixed y.
fn d_xi_t_y(alpha: &Vector3<f64>, y: &Vector3<f64>) -> Matrix3<f64> {
    let k = 4.0 / (4.0 + alpha.norm_squared());
    -(0.5 * k * k) * (y - 0.5 * alpha.cross(y)) * alpha.transpose() + (0.5 * k) * skew(y)
}

/// Residual r = (f_t − f_e, μ_t − μ_e) of one body (eq 63 without contact)
/// at the increments (u^Δ, α^Δ), and its consistent tangent ∂r/∂(u, α).
///
/// With the pole at the centre of mass: f_t = m ü^{i+1} (eq 19), μ_t = Ξᵀ m_t
/// with m_t = ω × Jω + J ω̇ (eq 19), ω, ω̇ from eq 22, J^{i+1} = Q^Δ J^i Q^Δᵀ
/// (eq 15); since Ξᵀ Q^Δ = Ξ, μ_t = Ξ h with h = w₁ × J^i w₁ + J^i w₂
/// (w₁, w₂ the brackets of eq 22). External: f_e = force + point force,
/// μ_e = Ξᵀ (moment + r^{i+1} × point force) with r^{i+1} = Q^Δ r^i
/// (eqs 24–25).
pub fn residual(s: &RigidState, nm: &Newmark, u: &Vector3<f64>, alpha: &Vector3<f64>) -> (Vector6<f64>, Matrix6<f64>) {
    let mut r = Vector6::zeros();
    let mut k = Matrix6::zeros();
    // translation
    let rf = s.mass * (nm.a1 * u - nm.a2 * s.velocity - nm.a3 * s.acceleration) - s.force - s.point_force;
    r.fixed_rows_mut::<3>(0).copy_from(&rf);
    k.fixed_view_mut::<3, 3>(0, 0).copy_from(&(s.mass * nm.a1 * Matrix3::identity()));
    // rotation: inertia
    let j = &s.inertia;
    let w1 = nm.a4 * alpha + nm.a5 * s.angular_velocity + nm.a6 * s.angular_acceleration;
    let w2 = nm.a1 * alpha - nm.a2 * s.angular_velocity - nm.a3 * s.angular_acceleration;
    let jw1 = j * w1;
    let h = w1.cross(&jw1) + j * w2;
    let dh = nm.a4 * (skew(&w1) * j - skew(&jw1)) + nm.a1 * j;
    let kk = 4.0 / (4.0 + alpha.norm_squared());
    let xi_a = xi(alpha);
    let mu_t = xi_a * h;
    let dmu_t = -(0.5 * kk * kk) * (h + 0.5 * alpha.cross(&h)) * alpha.transpose()
        + kk * ((Matrix3::identity() + 0.5 * skew(alpha)) * dh - 0.5 * skew(&h));
    // rotation: external pseudo-moments
    let q = rotation(alpha);
    let arm = q * s.point_offset;
    let y = s.moment + arm.cross(&s.point_force);
    let mu_e = xi_a.transpose() * y;
    let dy = skew(&s.point_force) * skew(&arm) * xi_a;
    let dmu_e = d_xi_t_y(alpha, &y) + xi_a.transpose() * dy;
    r.fixed_rows_mut::<3>(3).copy_from(&(mu_t - mu_e));
    k.fixed_view_mut::<3, 3>(3, 3).copy_from(&(dmu_t - dmu_e));
    (r, k)
}

/// Size of the terms summed in each entry of [`residual`] (not of their
/// sum): ε times it bounds the round-off of that entry, the floor under
/// which Newton cannot push the residual (see `dem::solver`).
pub fn residual_scale(s: &RigidState, nm: &Newmark, u: &Vector3<f64>, alpha: &Vector3<f64>) -> Vector6<f64> {
    let lin = s.mass * (nm.a1 * u.norm() + nm.a2 * s.velocity.norm() + nm.a3 * s.acceleration.norm())
        + s.force.norm()
        + s.point_force.norm();
    let jn = s.inertia.norm();
    let w1 = nm.a4 * alpha.norm() + nm.a5.abs() * s.angular_velocity.norm() + nm.a6.abs() * s.angular_acceleration.norm();
    let rot = jn * (nm.a1 * alpha.norm() + nm.a2 * s.angular_velocity.norm() + nm.a3 * s.angular_acceleration.norm() + w1 * w1)
        + s.moment.norm()
        + s.point_offset.norm() * s.point_force.norm();
    Vector6::new(lin, lin, lin, rot, rot, rot)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A stiff spring (ωΔt = 1e4) stepped by eq 21: its velocity shrinks
    /// by the spectral radius (2γ − 1)/(2γ + 1) = 1/3 per step at γ = 1,
    /// β = (γ + 1/2)²/4, and not at all at β = 1/2 (it flips sign).
    #[test]
    fn newmark_damps_a_stiff_mode_at_the_spectral_radius() {
        let (m, dt) = (1.0, 1e-3);
        let k = m * (1e4 / dt) * (1e4 / dt);
        for (beta, radius) in [(0.5625, 1.0 / 3.0), (0.5, 1.0)] {
            let nm = Newmark::new(beta, 1.0, dt);
            let (mut x, mut v, mut a) = (0.0, 1.0, 0.0);
            let mut ratio = 0.0;
            // (The radius is a double eigenvalue: the ratio of two steps
            // approaches it like 1 + 1/n, hence many steps, rescaled.)
            for _ in 0..2000 {
                // m ü^{i+1} + k (x + u) = 0 with ü^{i+1} = α₁u − α₂v − α₃a.
                let u = (m * (nm.a2 * v + nm.a3 * a) - k * x) / (m * nm.a1 + k);
                let v1 = nm.a4 * u + nm.a5 * v + nm.a6 * a;
                (a, ratio) = (nm.a1 * u - nm.a2 * v - nm.a3 * a, v1 / v);
                (x, v) = (x + u, v1);
                let s = v.abs();
                (x, v, a) = (x / s, v / s, a / s);
            }
            assert!((ratio.abs() - radius).abs() < 1e-3, "beta {beta}: |v| shrinks by {ratio} per step, want {radius}");
            assert!(ratio < 0.0, "beta {beta}: the velocity flips sign every step");
        }
    }

    fn state() -> RigidState {
        RigidState {
            mass: 2.5,
            inertia: Matrix3::new(3.0, 0.2, -0.1, 0.2, 2.0, 0.3, -0.1, 0.3, 1.5),
            velocity: Vector3::new(0.3, -0.2, 1.0),
            acceleration: Vector3::new(0.0, 0.1, -9.81),
            angular_velocity: Vector3::new(1.0, -2.0, 0.5),
            angular_acceleration: Vector3::new(0.2, 0.1, -0.3),
            force: Vector3::new(0.0, 0.0, -24.5),
            moment: Vector3::new(0.1, 0.2, -0.3),
            point_force: Vector3::new(1.0, -2.0, 0.5),
            point_offset: Vector3::new(0.2, 0.1, -0.3),
        }
    }

    #[test]
    fn rodrigues_identities() {
        let a = Vector3::new(0.3, -0.5, 0.8);
        let b = Vector3::new(-0.2, 0.1, 0.4);
        let q = rotation(&a);
        assert!((q.transpose() * q - Matrix3::identity()).norm() < 1e-14);
        assert!((q - *quaternion(&a).to_rotation_matrix().matrix()).norm() < 1e-14);
        // eq 7 against the product of rotation tensors (eq 5)
        let c = compose(&a, &b);
        assert!((rotation(&c) - rotation(&a) * rotation(&b)).norm() < 1e-13);
        // Ξᵀ Q = Ξ
        assert!((xi(&a).transpose() * q - xi(&a)).norm() < 1e-14);
        // α = 2 tan(θ/2) e
        let th: f64 = 0.7;
        let e = Vector3::new(1.0, 2.0, 2.0) / 3.0;
        let qa = rotation(&(2.0 * (th / 2.0).tan() * e));
        let qr = nalgebra::Rotation3::from_axis_angle(&nalgebra::Unit::new_normalize(e), th);
        assert!((qa - qr.matrix()).norm() < 1e-14);
        // ω = Ξ α̇ (eq 8): (Q(α + h α̇) − Q(α)) Qᵀ / h → skew(ω)
        let ad = Vector3::new(0.7, 0.1, -0.4);
        let h = 1e-7;
        let dq = (rotation(&(a + h * ad)) - rotation(&(a - h * ad))) / (2.0 * h) * q.transpose();
        assert!((dq - skew(&(xi(&a) * ad))).norm() < 1e-7);
    }

    #[test]
    fn tangent_matches_finite_differences() {
        let s = state();
        let nm = Newmark::new(0.3, 0.5, 1e-2);
        for (u, a) in [
            (Vector3::new(1e-3, -2e-3, 5e-4), Vector3::new(0.01, -0.02, 0.015)),
            (Vector3::new(0.1, 0.2, -0.1), Vector3::new(0.3, -0.4, 0.2)),
        ] {
            let (_, k) = residual(&s, &nm, &u, &a);
            let x0 = Vector6::new(u.x, u.y, u.z, a.x, a.y, a.z);
            let f = |x: &Vector6<f64>| residual(&s, &nm, &x.fixed_rows::<3>(0).into(), &x.fixed_rows::<3>(3).into()).0;
            let mut fd = Matrix6::zeros();
            for j in 0..6 {
                let h = 1e-6 * (1.0 + x0[j].abs());
                let mut e = Vector6::zeros();
                e[j] = h;
                fd.set_column(j, &((f(&(x0 + e)) - f(&(x0 - e))) / (2.0 * h)));
            }
            let err = (k - fd).norm() / k.norm();
            assert!(err < 1e-6, "tangent error {err:e}\n{k}\n{fd}");
        }
    }

    /// Solves one body's step by Newton on its own residual.
    fn step(s: &RigidState, nm: &Newmark) -> (Vector3<f64>, Vector3<f64>) {
        let mut x = Vector6::zeros();
        for _ in 0..50 {
            let (r, k) = residual(s, nm, &x.fixed_rows::<3>(0).into(), &x.fixed_rows::<3>(3).into());
            if r.norm() < 1e-13 * (1.0 + s.mass) {
                break;
            }
            x -= k.lu().solve(&r).unwrap();
        }
        (x.fixed_rows::<3>(0).into(), x.fixed_rows::<3>(3).into())
    }

    #[test]
    fn free_flight_is_exact_with_gamma_half() {
        let g = Vector3::new(0.5, -1.0, -9.81);
        let (x0, v0) = (Vector3::new(1.0, 2.0, 3.0), Vector3::new(1.0, 0.5, 4.0));
        let mut s = RigidState {
            mass: 2.0,
            inertia: Matrix3::identity(),
            velocity: v0,
            acceleration: g,
            angular_velocity: Vector3::zeros(),
            angular_acceleration: Vector3::zeros(),
            force: 2.0 * g,
            moment: Vector3::zeros(),
            point_force: Vector3::zeros(),
            point_offset: Vector3::zeros(),
        };
        let dt = 0.05;
        let nm = Newmark::new(0.3, 0.5, dt);
        let mut x = x0;
        for n in 1..=40 {
            let (u, a) = step(&s, &nm);
            let up = update(&s, &nm, &u, &a);
            x += u;
            s.velocity = up.velocity;
            s.acceleration = up.acceleration;
            let t = n as f64 * dt;
            let exact = x0 + v0 * t + 0.5 * g * t * t;
            assert!((x - exact).norm() < 1e-11 * exact.norm(), "step {n}: {x} vs {exact}");
            assert!((s.velocity - (v0 + g * t)).norm() < 1e-11);
        }
    }

    #[test]
    fn torque_free_symmetric_body_conserves_angular_momentum() {
        let jb = Matrix3::from_diagonal(&Vector3::new(1.0, 1.0, 2.5));
        let mut q = UnitQuaternion::from_euler_angles(0.3, -0.2, 0.1);
        let jw = |q: &UnitQuaternion<f64>| q.to_rotation_matrix().matrix() * jb * q.to_rotation_matrix().matrix().transpose();
        let w0 = Vector3::new(1.0, 0.5, 3.0);
        let mut s = RigidState {
            mass: 1.0,
            inertia: jw(&q),
            velocity: Vector3::zeros(),
            acceleration: Vector3::zeros(),
            angular_velocity: w0,
            angular_acceleration: Vector3::zeros(),
            force: Vector3::zeros(),
            moment: Vector3::zeros(),
            point_force: Vector3::zeros(),
            point_offset: Vector3::zeros(),
        };
        // consistent initial ω̇ = −J⁻¹(ω × Jω)
        s.angular_acceleration = -s.inertia.try_inverse().unwrap() * w0.cross(&(s.inertia * w0));
        let l0 = s.inertia * w0;
        let e0 = 0.5 * w0.dot(&l0);
        let nm = Newmark::new(0.3, 0.5, 0.01);
        for _ in 0..300 {
            let (_, a) = step(&s, &nm);
            let up = update(&s, &nm, &Vector3::zeros(), &a);
            q = up.rotation * q;
            s.inertia = jw(&q);
            s.angular_velocity = up.angular_velocity;
            s.angular_acceleration = up.angular_acceleration;
        }
        let l = s.inertia * s.angular_velocity;
        // eq 22 keeps |L| to O(Δt²) (not to round-off): measured 1.6e-5
        // relative after 300 steps of ω Δt ≈ 0.03.
        assert!((l - l0).norm() < 1e-4 * l0.norm(), "L drifted: {l} vs {l0}");
        let e = 0.5 * s.angular_velocity.dot(&l);
        assert!((e - e0).abs() < 1e-2 * e0, "energy {e} vs {e0}");
    }
}
