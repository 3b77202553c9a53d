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
//! Each step costs 2m + 3 dot products of the local vectors (in one pass),
//! one all-reduce of 2m + 3 numbers and one combination of m vectors.
use nalgebra::{DMatrix, DVector};
use std::collections::VecDeque;

/// Relative Tikhonov term of the least-squares normal equations.
const RIDGE: f64 = 1e-10;

/// Entries per block of a step's passes: six vectors of it fit in a
/// first-level cache, so each history vector is read once per step.
const BLOCK: usize = 512;

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
    /// Vectors no longer in use, kept for the next ones: a step allocates
    /// nothing once the history is full.
    spare: Vec<Vec<f64>>,
    /// Restarts so far (a state change, or a singular least-squares problem).
    pub restarts: u64,
}

impl Anderson {
    /// Depth `m` ≥ 1.
    pub fn new(m: usize) -> Self {
        Self { m, last: None, dg: VecDeque::new(), dr: VecDeque::new(), gram: VecDeque::new(), spare: Vec::new(), restarts: 0 }
    }

    fn restart(&mut self) {
        self.spare.extend(self.dg.drain(..).chain(self.dr.drain(..)));
        self.gram.clear();
        self.restarts += 1;
    }

    /// A vector of `n` entries, recycled where one is spare (its contents
    /// are overwritten by the caller).
    fn take(&mut self, n: usize) -> Vec<f64> {
        let mut v = self.spare.pop().unwrap_or_default();
        v.resize(n, 0.0);
        v
    }

    /// Takes the pair (x, g(x)) of this rank's entries and returns the next
    /// iterate in `g` (left as g(x) while the history is too short).
    /// `sum` adds a slice over the ranks in place (collective).
    pub fn step(&mut self, sum: impl FnOnce(&mut [f64]), x: &[f64], g: &mut [f64]) {
        let n = g.len();
        let mut r = self.take(n);
        let mut keep_g = self.take(n);
        let k = self.dr.len();
        // One pass in blocks that stay in the first-level cache: r = g − x,
        // the previous pair's r and g turned into Δr = r − r_prev and
        // Δg = g − g_prev in place, and the global sums: ‖r‖², and with a
        // previous pair Δr·Δr_j (j < k), Δr·Δr, Δr·r and Δr_j·r.
        let mut prev = self.last.take();
        let mut sums = vec![0.0; 2 * k + 3];
        for lo in (0..n).step_by(BLOCK) {
            let hi = (lo + BLOCK).min(n);
            let (rb, gb) = (&mut r[lo..hi], &g[lo..hi]);
            for ((r, g), x) in rb.iter_mut().zip(gb).zip(&x[lo..hi]) {
                *r = g - x;
            }
            keep_g[lo..hi].copy_from_slice(gb);
            sums[0] += dot(rb, rb);
            if let Some((lr, lg, _)) = &mut prev {
                let d = &mut lr[lo..hi];
                for (d, r) in d.iter_mut().zip(rb.iter()) {
                    *d = r - *d;
                }
                for (d, g) in lg[lo..hi].iter_mut().zip(gb) {
                    *d = g - *d;
                }
                for (j, dj) in self.dr.iter().enumerate() {
                    let dj = &dj[lo..hi];
                    sums[1 + j] += dot(d, dj);
                    sums[1 + k + j] += dot(dj, rb);
                }
                sums[1 + 2 * k] += dot(d, d);
                sums[2 + 2 * k] += dot(d, rb);
            }
        }
        sum(&mut sums);
        let norm = sums[0].sqrt();
        let Some((d, dg, last_norm)) = prev else {
            self.last = Some((r, keep_g, norm));
            return;
        };
        self.last = Some((r, keep_g, norm));
        if norm > last_norm {
            // A state changed (or the mixing overshot): restart from here.
            self.spare.extend([d, dg]);
            self.restart();
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
        self.dg.push_back(dg);
        self.dr.push_back(d);
        if self.dr.len() > self.m {
            let (old_r, old_g) = (self.dr.pop_front(), self.dg.pop_front());
            self.spare.extend(old_r.into_iter().chain(old_g));
            self.gram.pop_front();
            for gj in self.gram.iter_mut() {
                gj.pop_front();
            }
            dr_r.remove(0);
        }
        let h = self.dr.len();
        let mut a = DMatrix::from_fn(h, h, |i, j| self.gram[i][j]);
        let trace: f64 = (0..h).map(|i| a[(i, i)]).sum();
        for i in 0..h {
            a[(i, i)] += RIDGE * trace.max(f64::MIN_POSITIVE);
        }
        // Every rank holds the same reduced numbers, so every rank decides alike.
        let Some(chol) = a.cholesky() else {
            self.restart();
            return;
        };
        let gamma = chol.solve(&DVector::from_vec(dr_r));
        for lo in (0..n).step_by(BLOCK) {
            let hi = (lo + BLOCK).min(n);
            for (gam, dgj) in gamma.iter().zip(&self.dg) {
                for (g, d) in g[lo..hi].iter_mut().zip(&dgj[lo..hi]) {
                    *g -= gam * d;
                }
            }
        }
    }
}

/// a · b with eight partial sums: a single running sum waits on each
/// addition's latency, and these dot products were a sixth of a sweep.
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = ca.remainder().iter().zip(cb.remainder()).map(|(a, b)| a * b).sum();
    let mut acc = [0.0; 8];
    for (a, b) in ca.zip(cb) {
        for l in 0..8 {
            acc[l] += a[l] * b[l];
        }
    }
    acc.iter().sum::<f64>() + tail
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

    /// Over more entries than a block (the passes run in several): a
    /// diagonal map with four distinct values has a Krylov space of
    /// dimension 4, so depth 4 again ends at the fixed point within 4 + 1
    /// mixed steps.
    #[test]
    fn across_several_blocks_it_still_terminates_like_gmres() {
        let n = 3 * BLOCK + 17;
        let a: Vec<f64> = (0..n).map(|i| [0.9, 0.5, -0.3, 0.2][i % 4]).collect();
        let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.7).sin() + 0.5).collect();
        let fixed: Vec<f64> = a.iter().zip(&b).map(|(a, b)| b / (1.0 - a)).collect();
        let mut acc = Anderson::new(4);
        let mut x = vec![0.0; n];
        for _ in 0..6 {
            let mut g: Vec<f64> = a.iter().zip(&b).zip(&x).map(|((a, b), x)| a * x + b).collect();
            acc.step(|_| {}, &x, &mut g);
            x = g;
        }
        let err = x.iter().zip(&fixed).map(|(x, f)| (x - f).powi(2)).sum::<f64>().sqrt();
        let size = fixed.iter().map(|f| f * f).sum::<f64>().sqrt();
        assert!(err <= 1e-10 * size, "error {err}");
        assert_eq!(acc.restarts, 0);
    }

    /// The eight-way dot product equals the plain sum (to round-off) on
    /// lengths with and without a remainder.
    #[test]
    fn the_split_dot_product_is_the_dot_product() {
        for n in [0, 3, 8, 21, 1000] {
            let a: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
            let b: Vec<f64> = (0..n).map(|i| (i as f64 * 0.11).cos() - 0.2).collect();
            let plain: f64 = a.iter().zip(&b).map(|(a, b)| a * b).sum();
            let scale: f64 = a.iter().zip(&b).map(|(a, b)| (a * b).abs()).sum();
            assert!((dot(&a, &b) - plain).abs() <= 1e-14 * scale.max(1.0), "n = {n}");
        }
    }
}
