//! Forward-mode differentiation over the 12 increments of one contact
//! (u_a, α_a, u_b, α_b): [`Dual`] carries a value and its gradient, [`Jet`]
//! also the Hessian, so the exact mesh-contact gaps of [`super::assemble`]
//! get their consistent linearisation (eq 48) without hand-derived second
//! derivatives of the Rodrigues rotation. The residual needs only the
//! gradient (the cheap [`Dual`]); the Jacobian the Hessian. Pure, no MPI.
use super::assemble::{Mat12, Vec12};
use nalgebra::Vector3;
use std::ops::{Add, Mul, Sub};

/// Arithmetic the gap formulas need.
pub trait Num: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> {
    fn constant(v: f64) -> Self;
    /// Increment number `i` (0..12) at value `v`.
    fn variable(i: usize, v: f64) -> Self;
    fn value(&self) -> f64;
    fn scale(&self, s: f64) -> Self;
    /// f(self) from f, f′, f″ at the value (chain rule).
    fn chain(&self, f: f64, f1: f64, f2: f64) -> Self;
    fn recip(&self) -> Self {
        let r = 1.0 / self.value();
        self.chain(r, -r * r, 2.0 * r * r * r)
    }
    fn sqrt(&self) -> Self {
        let v = self.value();
        let s = v.sqrt();
        self.chain(s, 0.5 / s, -0.25 / (s * v))
    }
}

/// A value with its gradient.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual {
    pub v: f64,
    pub g: Vec12,
}

/// A value with its gradient and Hessian.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jet {
    pub v: f64,
    pub g: Vec12,
    pub h: Mat12,
}

impl Num for Dual {
    fn constant(v: f64) -> Self {
        Self { v, g: Vec12::zeros() }
    }
    fn variable(i: usize, v: f64) -> Self {
        let mut g = Vec12::zeros();
        g[i] = 1.0;
        Self { v, g }
    }
    fn value(&self) -> f64 {
        self.v
    }
    fn scale(&self, s: f64) -> Self {
        Self { v: s * self.v, g: s * self.g }
    }
    fn chain(&self, f: f64, f1: f64, _f2: f64) -> Self {
        Self { v: f, g: f1 * self.g }
    }
}

impl Add for Dual {
    type Output = Dual;
    fn add(self, o: Dual) -> Dual {
        Dual { v: self.v + o.v, g: self.g + o.g }
    }
}

impl Sub for Dual {
    type Output = Dual;
    fn sub(self, o: Dual) -> Dual {
        Dual { v: self.v - o.v, g: self.g - o.g }
    }
}

impl Mul for Dual {
    type Output = Dual;
    fn mul(self, o: Dual) -> Dual {
        Dual { v: self.v * o.v, g: self.v * o.g + o.v * self.g }
    }
}

impl Num for Jet {
    fn constant(v: f64) -> Self {
        Self { v, g: Vec12::zeros(), h: Mat12::zeros() }
    }
    fn variable(i: usize, v: f64) -> Self {
        let mut g = Vec12::zeros();
        g[i] = 1.0;
        Self { v, g, h: Mat12::zeros() }
    }
    fn value(&self) -> f64 {
        self.v
    }
    fn scale(&self, s: f64) -> Self {
        Self { v: s * self.v, g: s * self.g, h: s * self.h }
    }
    fn chain(&self, f: f64, f1: f64, f2: f64) -> Self {
        Self { v: f, g: f1 * self.g, h: f1 * self.h + f2 * self.g * self.g.transpose() }
    }
}

impl Add for Jet {
    type Output = Jet;
    fn add(self, o: Jet) -> Jet {
        Jet { v: self.v + o.v, g: self.g + o.g, h: self.h + o.h }
    }
}

impl Sub for Jet {
    type Output = Jet;
    fn sub(self, o: Jet) -> Jet {
        Jet { v: self.v - o.v, g: self.g - o.g, h: self.h - o.h }
    }
}

impl Mul for Jet {
    type Output = Jet;
    fn mul(self, o: Jet) -> Jet {
        let cross = self.g * o.g.transpose();
        Jet { v: self.v * o.v, g: self.v * o.g + o.v * self.g, h: self.v * o.h + o.v * self.h + cross + cross.transpose() }
    }
}

/// The three increments starting at `first` (u_a: 0, α_a: 3, u_b: 6, α_b: 9).
pub fn variables<T: Num>(x: &Vec12, first: usize) -> [T; 3] {
    [0, 1, 2].map(|k| T::variable(first + k, x[first + k]))
}

pub fn constant3<T: Num>(v: &Vector3<f64>) -> [T; 3] {
    [0, 1, 2].map(|k| T::constant(v[k]))
}

pub fn add3<T: Num>(a: &[T; 3], b: &[T; 3]) -> [T; 3] {
    [0, 1, 2].map(|k| a[k] + b[k])
}

pub fn sub3<T: Num>(a: &[T; 3], b: &[T; 3]) -> [T; 3] {
    [0, 1, 2].map(|k| a[k] - b[k])
}

pub fn mul3<T: Num>(s: T, a: &[T; 3]) -> [T; 3] {
    [0, 1, 2].map(|k| s * a[k])
}

pub fn dot<T: Num>(a: &[T; 3], b: &[T; 3]) -> T {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

pub fn cross<T: Num>(a: &[T; 3], b: &[T; 3]) -> [T; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}

/// a × v for a constant `v` (cheaper than [`cross`]).
fn cross_c<T: Num>(a: &[T; 3], v: &Vector3<f64>) -> [T; 3] {
    [a[1].scale(v.z) - a[2].scale(v.y), a[2].scale(v.x) - a[0].scale(v.z), a[0].scale(v.y) - a[1].scale(v.x)]
}

/// Q(α) v − v for Rodrigues parameters α (eq 6): 4/(4 + α·α) (α × v + ½ α × (α × v)).
pub fn rotate_change<T: Num>(alpha: &[T; 3], v: &Vector3<f64>) -> [T; 3] {
    let k = (dot(alpha, alpha) + T::constant(4.0)).recip().scale(4.0);
    let c1 = cross_c(alpha, v);
    let c2 = cross(alpha, &c1);
    [0, 1, 2].map(|i| k * (c1[i] + c2[i].scale(0.5)))
}

/// Q(α) v.
pub fn rotate<T: Num>(alpha: &[T; 3], v: &Vector3<f64>) -> [T; 3] {
    add3(&rotate_change(alpha, v), &constant3(v))
}

/// Values of a 3-vector.
pub fn value3<T: Num>(a: &[T; 3]) -> Vector3<f64> {
    Vector3::new(a[0].value(), a[1].value(), a[2].value())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dem::rigid;

    /// The jet of Q(α) v against the rotation matrix of rigid.rs (value) and
    /// central differences (gradient, Hessian); the dual's gradient equals
    /// the jet's.
    #[test]
    fn rotation_jet_matches_rigid_rotation_and_finite_differences() {
        let v = Vector3::new(0.3, -0.7, 0.4);
        let mut x = Vec12::zeros();
        x[9] = 0.21;
        x[10] = -0.13;
        x[11] = 0.37;
        let f = |x: &Vec12| rotate::<Jet>(&variables(x, 9), &v);
        let y = f(&x);
        let al = Vector3::new(x[9], x[10], x[11]);
        assert!((value3(&y) - rigid::rotation(&al) * v).norm() < 1e-15);
        let yd = rotate::<Dual>(&variables(&x, 9), &v);
        let h = 1e-5;
        for i in 0..3 {
            assert!((yd[i].g - y[i].g).norm() < 1e-15);
            for j in 9..12 {
                let mut d = Vec12::zeros();
                d[j] = h;
                let (p, m) = (f(&(x + d)), f(&(x - d)));
                let fd = (p[i].v - m[i].v) / (2.0 * h);
                assert!((fd - y[i].g[j]).abs() < 1e-9, "grad {i} {j}: {fd} vs {}", y[i].g[j]);
                let fdh = (p[i].g - m[i].g) / (2.0 * h);
                assert!((fdh - y[i].h.column(j)).norm() < 1e-9, "hess {i} {j}");
            }
        }
    }
}
