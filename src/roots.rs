//! The root of a non-increasing function of a step length inside a
//! bracket, by false position with the Illinois modification: the line
//! searches of the DEM's Newton (on its incremental energy) and of the
//! compatibility Tresca rounds (on Π) both look for the step where the
//! directional derivative changes sign.

/// A root of a non-increasing `h` in [`a`, `b`] with `h(a)` = `ha` > 0 >
/// `hb` = `h(b)` (`hb` = −∞ allowed: the middle is tried instead).
/// Each trial point is kept at least `clamp` × the bracket's width from
/// both ends; an end that stays put twice in a row has its value halved
/// (Illinois), so that the bracket closes from both sides. Stops at the
/// first trial with |h| ≤ `tol`, returning it; after `evals` trials, or
/// once the bracket is down to 1e-12 of `b`, returns `a` if it is above
/// 0 (the function was seen positive there), else `b`.
#[allow(clippy::too_many_arguments)]
pub fn illinois<E>(mut a: f64, mut ha: f64, mut b: f64, mut hb: f64, tol: f64, clamp: f64, evals: usize, mut h: impl FnMut(f64) -> Result<f64, E>) -> Result<f64, E> {
    let mut side = 0;
    for _ in 0..evals {
        if b - a <= 1e-12 * b {
            break;
        }
        let c = if hb.is_finite() { a + (b - a) * ha / (ha - hb) } else { 0.5 * (a + b) };
        let c = c.clamp(a + clamp * (b - a), b - clamp * (b - a));
        let hc = h(c)?;
        if hc.abs() <= tol {
            return Ok(c);
        }
        if hc > 0.0 {
            (a, ha) = (c, hc);
            if side == 1 {
                hb *= 0.5;
            }
            side = 1;
        } else {
            (b, hb) = (c, hc);
            if side == -1 {
                ha *= 0.5;
            }
            side = -1;
        }
    }
    Ok(if a > 0.0 { a } else { b })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// The root of `h` on [0, 4] with `tol` and the number of evaluations.
    fn root(h: impl Fn(f64) -> f64, tol: f64, clamp: f64, evals: usize) -> (f64, usize) {
        let mut n = 0;
        let x = illinois(0.0, h(0.0), 4.0, h(4.0), tol, clamp, evals, |x| -> Result<f64, Infallible> {
            n += 1;
            Ok(h(x))
        })
        .unwrap();
        (x, n)
    }

    #[test]
    fn a_linear_function_is_solved_by_one_secant() {
        let (x, n) = root(|x| 1.0 - x, 1e-14, 0.0, 20);
        assert!((x - 1.0).abs() < 1e-14, "{x}");
        assert_eq!(n, 1);
    }

    /// A convex h: plain false position keeps the same end and closes the
    /// bracket linearly and slowly; Illinois halves that end's value and
    /// converges superlinearly.
    #[test]
    fn a_one_sided_bracket_closes_from_both_ends() {
        let h = |x: f64| (-x).exp() - 0.5; // root ln 2
        let (x, n) = root(h, 1e-12, 0.0, 40);
        assert!((x - 2f64.ln()).abs() < 1e-11, "{x}");
        assert!(n <= 10, "{n} evaluations");
    }

    /// −∞ at the far end (the DEM: a closed gap) bisects.
    #[test]
    fn an_infinite_end_bisects() {
        let h = |x: f64| if x < 3.0 { 1.0 - x } else { f64::NEG_INFINITY };
        let mut seen = Vec::new();
        let x = illinois(0.0, 1.0, 4.0, f64::NEG_INFINITY, 1e-12, 0.0, 20, |x| -> Result<f64, Infallible> {
            seen.push(x);
            Ok(h(x))
        })
        .unwrap();
        assert_eq!(seen[0], 2.0);
        assert!((x - 1.0).abs() < 1e-12, "{x}");
    }

    /// Out of evaluations: the last point where h was positive, or the far
    /// end when none was.
    #[test]
    fn without_a_root_in_time_the_last_positive_point_is_returned() {
        let h = |x: f64| 1.0 - x;
        let mut tried = Vec::new();
        let x = illinois(0.0, 1.0, 4.0, -3.0, 0.0, 0.4, 1, |x| -> Result<f64, Infallible> {
            tried.push(x);
            Ok(h(x))
        })
        .unwrap();
        // The secant's 1.0 is clamped to 0.4 × 4 = 1.6 (h < 0): b moves, a stays 0.
        assert_eq!(tried, vec![1.6]);
        assert_eq!(x, 1.6);
        let x = illinois(0.0, 3.0, 4.0, -1.0, 0.0, 0.4, 1, |x| -> Result<f64, Infallible> { Ok(3.0 - x) }).unwrap();
        // The secant's 3.0 is clamped to 2.4 (h > 0): a moves there.
        assert_eq!(x, 2.4);
        let x = illinois(0.0, 1.0, 4.0, -3.0, 0.0, 0.0, 0, |_| -> Result<f64, Infallible> { unreachable!() }).unwrap();
        assert_eq!(x, 4.0);
    }
}
