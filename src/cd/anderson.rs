//! Anderson acceleration (type II, Walker & Ni 2011) of a fixed-point
//! iteration x ← g(x) distributed over the ranks: here the sweeps of
//! nonsmooth Gauss–Seidel ([`super::pgs::pgs_friction`]).
//!
//! From the last m + 1 pairs (x_j, g_j = g(x_j)), r_j = g_j − x_j, the next
//! iterate is x = g_k − Σ γ_j Δg_j with γ = argmin ‖r_k − Σ γ_j Δr_j‖
//! (Δ the differences of consecutive pairs). On a linear map this is GMRES
//! on (I − A) x = b; the sweeps are linear wherever the contacts' states
//! (open, sticking, sliding) stay put, most sweeps of a converging solve. Where
//! ‖r‖ grows (a state changed) the history restarts from the current
//! pair, and the caller projects the mixed iterate back onto the cones.
//!
//! Each step costs 2m dot products of the local vectors, one all-reduce of
//! 2m + 3 numbers and one combination of m vectors.
use nalgebra::{DMatrix, DVector};
use std::collections::VecDeque;

/// Relative Tikhonov term of the least-squares normal equations.
const RIDGE: f64 = 1e-10;

/// The history of one solve.
pub struct Anderson {
    /// Depth: differences kept.
    m: usize,
    /// Of the last pair: r = g − x, g, and ‖r‖ (global).
    last: Option<(Vec<f64>, Vec<f64>, f64)>,
    /// Δg_j and Δr_j, oldest first.
    dg: VecDeque<Vec<f64>>,
    dr: VecDeque<Vec<f64>>,
    /// dr_a · dr_b (global), in the order of `dr`.
    gram: VecDeque<VecDeque<f64>>,
    /// Restarts so far (a state change, or a singular least-squares problem).
    pub restarts: u64,
}

impl Anderson {
    /// Depth `m` ≥ 1.
    pub fn new(m: usize) -> Self {
        Self { m, last: None, dg: VecDeque::new(), dr: VecDeque::new(), gram: VecDeque::new(), restarts: 0 }
    }

    fn restart(&mut self) {
        self.dg.clear();
        self.dr.clear();
        self.gram.clear();
        self.restarts += 1;
    }

    /// Takes the pair (x, g(x)) of this rank's entries and returns the next
    /// iterate in `g` (left as g(x) while the history is too short).
    /// `sum` adds a slice over the ranks in place (collective).
    pub fn step(&mut self, sum: impl FnOnce(&mut [f64]), x: &[f64], g: &mut [f64]) {
        let r: Vec<f64> = g.iter().zip(x).map(|(g, x)| g - x).collect();
        let k = self.dr.len();
        // Global: ‖r‖², and with a previous pair Δr·Δr_j (j < k), Δr·Δr, Δr·r and Δr_j·r.
        let new_dr: Option<Vec<f64>> = self.last.as_ref().map(|(lr, _, _)| r.iter().zip(lr).map(|(r, lr)| r - lr).collect());
        let mut sums = vec![0.0; 2 * k + 3];
        sums[0] = dot(&r, &r);
        if let Some(d) = &new_dr {
            for (j, dj) in self.dr.iter().enumerate() {
                sums[1 + j] = dot(d, dj);
                sums[1 + k + j] = dot(dj, &r);
            }
            sums[1 + 2 * k] = dot(d, d);
            sums[2 + 2 * k] = dot(d, &r);
        }
        sum(&mut sums);
        let norm = sums[0].sqrt();
        let Some(d) = new_dr else {
            self.last = Some((r, g.to_vec(), norm));
            return;
        };
        let (_, lg, last_norm) = self.last.take().expect("a previous pair");
        if norm > last_norm {
            // A state changed (or the mixing overshot): restart from here.
            self.restart();
            self.last = Some((r, g.to_vec(), norm));
            return;
        }
        // Append Δr, Δg; the dot products of the kept ones with r stay valid.
        let mut dr_r: Vec<f64> = sums[1 + k..1 + 2 * k].to_vec();
        let row: VecDeque<f64> = sums[1..1 + k].iter().copied().chain(std::iter::once(sums[1 + 2 * k])).collect();
        for (j, gj) in self.gram.iter_mut().enumerate() {
            gj.push_back(row[j]);
        }
        self.gram.push_back(row);
        dr_r.push(sums[2 + 2 * k]);
        self.dg.push_back(g.iter().zip(&lg).map(|(g, lg)| g - lg).collect());
        self.dr.push_back(d);
        if self.dr.len() > self.m {
            self.dr.pop_front();
            self.dg.pop_front();
            self.gram.pop_front();
            for gj in self.gram.iter_mut() {
                gj.pop_front();
            }
            dr_r.remove(0);
        }
        self.last = Some((r, g.to_vec(), norm));
        let n = self.dr.len();
        let mut a = DMatrix::from_fn(n, n, |i, j| self.gram[i][j]);
        let trace: f64 = (0..n).map(|i| a[(i, i)]).sum();
        for i in 0..n {
            a[(i, i)] += RIDGE * trace.max(f64::MIN_POSITIVE);
        }
        // Every rank holds the same reduced numbers, so every rank decides alike.
        let Some(chol) = a.cholesky() else {
            self.restart();
            return;
        };
        let gamma = chol.solve(&DVector::from_vec(dr_r));
        for (gam, dgj) in gamma.iter().zip(&self.dg) {
            for (g, d) in g.iter_mut().zip(dgj) {
                *g -= gam * d;
            }
        }
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Matrix4, Vector4};

    /// On a linear map of dimension 4, Anderson with depth 4 is GMRES and
    /// ends at the fixed point after at most 4 + 1 mixed steps (round-off
    /// aside), where the plain iteration with spectral radius 0.9 is still
    /// 0.9^6 ≈ 0.5 of its first error away.
    #[test]
    fn on_a_linear_map_it_terminates_like_gmres() {
        let a = Matrix4::new(0.9, 0.05, 0.0, 0.0, 0.05, 0.5, 0.1, 0.0, 0.0, 0.1, -0.3, 0.05, 0.0, 0.0, 0.05, 0.2);
        let b = Vector4::new(1.0, -2.0, 0.5, 3.0);
        let fixed = (Matrix4::identity() - a).try_inverse().unwrap() * b;
        let mut acc = Anderson::new(4);
        let (mut x, mut plain) = (Vector4::zeros(), Vector4::zeros());
        for _ in 0..6 {
            let mut g = a * x + b;
            acc.step(|_| {}, x.as_slice(), g.as_mut_slice());
            x = g;
            plain = a * plain + b;
        }
        assert!((x - fixed).norm() <= 1e-10 * fixed.norm(), "error {}", (x - fixed).norm());
        assert!((plain - fixed).norm() > 0.1 * fixed.norm());
        assert_eq!(acc.restarts, 0);
    }
}
