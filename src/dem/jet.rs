//! Forward-mode differentiation of the exact mesh-contact gaps: [`Dual`]
//! carries a value and its gradient, [`Jet`] also the Hessian, so the gaps
//! of [`super::assemble`] get their consistent linearisation (eq 48) without
//! hand-derived second derivatives of the Rodrigues rotation. A gap depends
//! on the translations only through w = u_b − u_a (eq 26), so both work on
//! the 9 reduced variables (w, α_a, α_b) and the Hessian is stored packed
//! (45 entries, not 144): [`Lift::grad12`] and [`Jet::hess12`] expand to the
//! contact's 12 increments (u_a, α_a, u_b, α_b). A rotation depends on
//! three of them only: [`Jet3`] ([`Dual3`]) differentiates it over those
//! three (10 numbers, not 55) and [`Lift`] places the result among the
//! nine, which made the mesh Jacobian several times cheaper. Pure, no MPI.
use super::types::{Mat12, Vec12};
use nalgebra::{SVector, Vector3};
use std::ops::{Add, Mul, Sub};

/// Number of reduced variables (w, α_a, α_b).
pub const NV: usize = 9;
/// Packed upper-triangle entries of a 9×9 symmetric Hessian.
const NH: usize = NV * (NV + 1) / 2;
type Vec9 = SVector<f64, NV>;

/// (i, j), i ≤ j, of packed Hessian entry k.
const PACKED: [(usize, usize); NH] = {
    let mut t = [(0, 0); NH];
    let (mut i, mut k) = (0, 0);
    while i < NV {
        let mut j = i;
        while j < NV {
            t[k] = (i, j);
            j += 1;
            k += 1;
        }
        i += 1;
    }
    t
};

/// Reduced variable of increment `i` (0..12) and its sign: u_a → −w,
/// α_a → α_a, u_b → +w, α_b → α_b.
fn reduced(i: usize) -> (usize, f64) {
    match i {
        0..=2 => (i, -1.0),
        3..=5 => (i, 1.0),
        6..=8 => (i - 6, 1.0),
        _ => (i - 3, 1.0),
    }
}

/// The 9 reduced variables at the increments `x`: w, α_a, α_b.
pub fn reduce(x: &Vec12) -> Vec9 {
    Vec9::from_fn(|k, _| match k {
        0..=2 => x[6 + k] - x[k],
        3..=5 => x[k],
        _ => x[k + 3],
    })
}

fn expand(g: &Vec9) -> Vec12 {
    Vec12::from_fn(|i, _| {
        let (k, s) = reduced(i);
        s * g[k]
    })
}

/// Arithmetic the gap formulas need.
pub trait Num: Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> {
    fn constant(v: f64) -> Self;
    /// Reduced variable number `i` (0..9) at value `v`.
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

/// A value with its gradient over N variables: [`Dual`] over the 9
/// reduced ones, [`Dual3`] over one body's Rodrigues parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DualN<const N: usize> {
    pub v: f64,
    pub g: SVector<f64, N>,
}

pub type Dual = DualN<NV>;
pub type Dual3 = DualN<3>;

/// A value with its gradient and (packed) Hessian.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jet {
    pub v: f64,
    pub g: Vec9,
    h: [f64; NH],
}

impl<const N: usize> Num for DualN<N> {
    #[inline]
    fn constant(v: f64) -> Self {
        Self { v, g: SVector::zeros() }
    }
    #[inline]
    fn variable(i: usize, v: f64) -> Self {
        let mut g = SVector::zeros();
        g[i] = 1.0;
        Self { v, g }
    }
    #[inline]
    fn value(&self) -> f64 {
        self.v
    }
    #[inline]
    fn scale(&self, s: f64) -> Self {
        Self { v: s * self.v, g: s * self.g }
    }
    #[inline]
    fn chain(&self, f: f64, f1: f64, _f2: f64) -> Self {
        Self { v: f, g: f1 * self.g }
    }
}

/// A function of the 9 reduced variables that can take in one of three
/// of them (a [`Jet3`] over the variables `first..first + 3`).
pub trait Lift: Num {
    /// The same derivatives over three variables.
    type Small: Num;
    fn lift(j: &Self::Small, first: usize) -> Self;
    /// The gradient over the 12 increments of the contact.
    fn grad12(&self) -> Vec12;
}

impl Lift for Dual {
    type Small = Dual3;
    #[inline]
    fn lift(j: &Dual3, first: usize) -> Self {
        let mut g = Vec9::zeros();
        g.fixed_rows_mut::<3>(first).copy_from(&j.g);
        Self { v: j.v, g }
    }
    fn grad12(&self) -> Vec12 {
        expand(&self.g)
    }
}

/// `+` and `−` entry by entry: value, gradient and (`h`) packed Hessian.
macro_rules! add_sub {
    ($t:ident $(, $h:ident)?) => {
        add_sub!(@impl [] $t [] $(, $h)?);
    };
    ($t:ident, const $n:ident) => {
        add_sub!(@impl [const $n: usize] $t [$n]);
    };
    (@impl [$($gen:tt)*] $t:ident [$($arg:tt)*] $(, $h:ident)?) => {
        impl<$($gen)*> Add for $t<$($arg)*> {
            type Output = Self;
            #[inline]
            fn add(self, o: Self) -> Self {
                Self { v: self.v + o.v, g: self.g + o.g, $($h: { let mut h = self.$h; h.iter_mut().zip(&o.$h).for_each(|(a, b)| *a += b); h })? }
            }
        }

        impl<$($gen)*> Sub for $t<$($arg)*> {
            type Output = Self;
            #[inline]
            fn sub(self, o: Self) -> Self {
                Self { v: self.v - o.v, g: self.g - o.g, $($h: { let mut h = self.$h; h.iter_mut().zip(&o.$h).for_each(|(a, b)| *a -= b); h })? }
            }
        }
    };
}

add_sub!(DualN, const N);
add_sub!(Jet3, h);
add_sub!(Jet, h);

impl<const N: usize> Mul for DualN<N> {
    type Output = Self;
    #[inline]
    fn mul(self, o: Self) -> Self {
        Self { v: self.v * o.v, g: self.v * o.g + o.v * self.g }
    }
}

/// a·x + b·y + u vᵀ + v uᵀ, packed.
#[inline]
fn hess_combine(a: f64, x: &[f64; NH], b: f64, y: &[f64; NH], u: &Vec9, v: &Vec9) -> [f64; NH] {
    let mut h = [0.0; NH];
    for (k, &(i, j)) in PACKED.iter().enumerate() {
        h[k] = a * x[k] + b * y[k] + u[i] * v[j] + v[i] * u[j];
    }
    h
}

impl Jet {
    /// The Hessian over the 12 increments of the contact.
    pub fn hess12(&self) -> Mat12 {
        let mut full = nalgebra::SMatrix::<f64, NV, NV>::zeros();
        for (k, &(i, j)) in PACKED.iter().enumerate() {
            full[(i, j)] = self.h[k];
            full[(j, i)] = self.h[k];
        }
        Mat12::from_fn(|i, j| {
            let ((ki, si), (kj, sj)) = (reduced(i), reduced(j));
            si * sj * full[(ki, kj)]
        })
    }
}

impl Num for Jet {
    #[inline]
    fn constant(v: f64) -> Self {
        Self { v, g: Vec9::zeros(), h: [0.0; NH] }
    }
    #[inline]
    fn variable(i: usize, v: f64) -> Self {
        let mut g = Vec9::zeros();
        g[i] = 1.0;
        Self { v, g, h: [0.0; NH] }
    }
    #[inline]
    fn value(&self) -> f64 {
        self.v
    }
    #[inline]
    fn scale(&self, s: f64) -> Self {
        Self { v: s * self.v, g: s * self.g, h: self.h.map(|e| s * e) }
    }
    #[inline]
    fn chain(&self, f: f64, f1: f64, f2: f64) -> Self {
        let half = 0.5 * f2 * self.g;
        Self { v: f, g: f1 * self.g, h: hess_combine(f1, &self.h, 0.0, &self.h, &half, &self.g) }
    }
}

impl Lift for Jet {
    type Small = Jet3;
    #[inline]
    fn lift(j: &Jet3, first: usize) -> Self {
        let mut g = Vec9::zeros();
        g.fixed_rows_mut::<3>(first).copy_from(&j.g);
        let mut h = [0.0; NH];
        for (k3, &(i, l)) in PACKED3.iter().enumerate() {
            h[packed(first + i, first + l)] = j.h[k3];
        }
        Self { v: j.v, g, h }
    }
    fn grad12(&self) -> Vec12 {
        expand(&self.g)
    }
}

/// Packed index of the Hessian entry (i, j), i ≤ j < 9.
const fn packed(i: usize, j: usize) -> usize {
    i * NV - i * (i + 1) / 2 + j
}

/// (i, j), i ≤ j, of the packed 3×3 Hessian of a [`Jet3`].
const PACKED3: [(usize, usize); 6] = [(0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)];




/// A value with its gradient and packed Hessian over three variables
/// (one body's Rodrigues parameters).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jet3 {
    pub v: f64,
    pub g: Vector3<f64>,
    h: [f64; 6],
}

impl Num for Jet3 {
    #[inline]
    fn constant(v: f64) -> Self {
        Self { v, g: Vector3::zeros(), h: [0.0; 6] }
    }
    #[inline]
    fn variable(i: usize, v: f64) -> Self {
        let mut g = Vector3::zeros();
        g[i] = 1.0;
        Self { v, g, h: [0.0; 6] }
    }
    #[inline]
    fn value(&self) -> f64 {
        self.v
    }
    #[inline]
    fn scale(&self, s: f64) -> Self {
        Self { v: s * self.v, g: s * self.g, h: self.h.map(|e| s * e) }
    }
    #[inline]
    fn chain(&self, f: f64, f1: f64, f2: f64) -> Self {
        let mut h = [0.0; 6];
        for (k, &(i, j)) in PACKED3.iter().enumerate() {
            h[k] = f1 * self.h[k] + f2 * self.g[i] * self.g[j];
        }
        Self { v: f, g: f1 * self.g, h }
    }
}

impl Mul for Jet3 {
    type Output = Jet3;
    #[inline]
    fn mul(self, o: Jet3) -> Jet3 {
        let mut h = [0.0; 6];
        for (k, &(i, j)) in PACKED3.iter().enumerate() {
            h[k] = self.v * o.h[k] + o.v * self.h[k] + self.g[i] * o.g[j] + o.g[i] * self.g[j];
        }
        Jet3 { v: self.v * o.v, g: self.v * o.g + o.v * self.g, h }
    }
}

/// Q(α) v − v (`turn`: true) or Q(α) v, differentiated over the three
/// Rodrigues parameters `alpha` (reduced variables `first..first + 3` at
/// `y`), lifted into the nine.
pub fn rotated<T: Lift>(y: &Vec9, first: usize, v: &Vector3<f64>, turn: bool) -> [T; 3] {
    let alpha: [T::Small; 3] = [T::Small::variable(0, y[first]), T::Small::variable(1, y[first + 1]), T::Small::variable(2, y[first + 2])];
    let r = if turn { rotate_change(&alpha, v) } else { rotate(&alpha, v) };
    [T::lift(&r[0], first), T::lift(&r[1], first), T::lift(&r[2], first)]
}

impl Mul for Jet {
    type Output = Jet;
    #[inline]
    fn mul(self, o: Jet) -> Jet {
        Jet { v: self.v * o.v, g: self.v * o.g + o.v * self.g, h: hess_combine(self.v, &o.h, o.v, &self.h, &self.g, &o.g) }
    }
}

/// The three reduced variables starting at `first` (w: 0, α_a: 3, α_b: 6)
/// at their values `y` (from [`reduce`]).
pub fn variables<T: Num>(y: &Vec9, first: usize) -> [T; 3] {
    [T::variable(first, y[first]), T::variable(first + 1, y[first + 1]), T::variable(first + 2, y[first + 2])]
}

#[inline]
pub fn constant3<T: Num>(v: &Vector3<f64>) -> [T; 3] {
    [T::constant(v.x), T::constant(v.y), T::constant(v.z)]
}

// (explicit arrays: `[0, 1, 2].map` copied 440-byte jets through memcpy,
// a fifth of a mesh step)
#[inline]
pub fn add3<T: Num>(a: &[T; 3], b: &[T; 3]) -> [T; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

#[inline]
pub fn sub3<T: Num>(a: &[T; 3], b: &[T; 3]) -> [T; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

#[inline]
pub fn mul3<T: Num>(s: T, a: &[T; 3]) -> [T; 3] {
    [s * a[0], s * a[1], s * a[2]]
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
    [k * (c1[0] + c2[0].scale(0.5)), k * (c1[1] + c2[1].scale(0.5)), k * (c1[2] + c2[2].scale(0.5))]
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
    /// central differences over the 12 increments (gradient, Hessian, both
    /// expanded from the reduced variables); the dual's gradient equals the
    /// jet's. A product with the translations checks the u_a / u_b signs.
    #[test]
    fn rotation_jet_matches_rigid_rotation_and_finite_differences() {
        let v = Vector3::new(0.3, -0.7, 0.4);
        let mut x = Vec12::zeros();
        x[0] = 0.05;
        x[7] = -0.02;
        x[9] = 0.21;
        x[10] = -0.13;
        x[11] = 0.37;
        // Q(α_b) v · (v + w)
        let f = |x: &Vec12| {
            let y = reduce(x);
            let q = rotate::<Jet>(&variables(&y, 6), &v);
            (dot(&q, &add3(&constant3(&v), &variables(&y, 0))), q)
        };
        let (s, q) = f(&x);
        let al = Vector3::new(x[9], x[10], x[11]);
        assert!((value3(&q) - rigid::rotation(&al) * v).norm() < 1e-15);
        // the same rotation over three variables, lifted into the nine
        let ql = rotated::<Jet>(&reduce(&x), 6, &v, false);
        for i in 0..3 {
            assert!((ql[i].v - q[i].v).abs() < 1e-15);
            assert!((ql[i].grad12() - q[i].grad12()).norm() < 1e-15);
            assert!((ql[i].hess12() - q[i].hess12()).norm() < 1e-14);
        }
        let qd = rotate::<Dual>(&variables(&reduce(&x), 6), &v);
        let qs = rotated::<Dual>(&reduce(&x), 6, &v, false);
        for i in 0..3 {
            assert!((qd[i].grad12() - q[i].grad12()).norm() < 1e-15);
            assert!((qs[i].grad12() - q[i].grad12()).norm() < 1e-15);
        }
        let (g, hs) = (s.grad12(), s.hess12());
        let h = 1e-5;
        for j in 0..12 {
            let mut d = Vec12::zeros();
            d[j] = h;
            let (p, m) = (f(&(x + d)).0, f(&(x - d)).0);
            let fd = (p.v - m.v) / (2.0 * h);
            assert!((fd - g[j]).abs() < 1e-9, "grad {j}: {fd} vs {}", g[j]);
            let fdh = (p.grad12() - m.grad12()) / (2.0 * h);
            assert!((fdh - hs.column(j)).norm() < 1e-9, "hess {j}: {fdh} vs {}", hs.column(j));
        }
    }
}
