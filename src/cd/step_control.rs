//! Δt of `cd` steps chosen from the contact solve's iterations
//! (`solver.dt_control = "iterations"`). With
//! friction the iterations a step needs grow faster than its Δt (the CD
//! chapter, "The step for frictional pours"): a hard step is worth halving,
//! a pack falling freely or at rest takes the longest step. Δt moves on the
//! ladder dt_max / 2^k and the controller keeps, per rung, the recent cost
//! of a step in iterations; it moves to the rung with the lower cost per
//! unit of simulated time. The decisions read only global iteration counts,
//! so every rank takes the same Δt; the state is checkpointed, so a restart
//! continues the same sequence. Nonsmooth Gauss–Seidel's sweeps depend on
//! the rank count (Jacobi between ranks), and so do the steps taken: this
//! is why the control is not the default.

/// A step's cost beyond its iterations (detection, assembly of B, the
/// update of the bodies), in iterations: about 20 sweeps on the
/// 500-sphere frictional pour (BENCHMARKS.md) with the sweeps of the time.
/// Since the sweeps got cheaper it is nearer 40 there (from the solve
/// times of two runs with other steps), but 40 here, though it took the
/// 500- and 2,500-sphere pours 1.3× and 1.7× faster to t = 0.4 and 0.3 s,
/// held the 10⁴-sphere pour on longer steps through its landing, which
/// then took more than twice as long (to t = 0.069 s 117 s against 42 s,
/// one run): kept at 20.
const STEP_OVERHEAD: f64 = 20.0;
/// Easy steps in a row before Δt doubles onto a rung of unknown cost.
const GROW_AFTER: u32 = 4;
/// Steps after which a rung's cost is forgotten: the pack has changed.
const MEMORY: u64 = 100;
/// A longer rung known to be cheaper is gone back to only if measured
/// within this many steps (just tried): an older cheap figure, from a pack
/// falling freely, says nothing of the pack now forming, and a long step
/// taken on it can cost a hundred times the sweeps.
const RECENT: u64 = 2 * GROW_AFTER as u64;
/// Width of a checkpointed state before the rungs' (level, easy, steps).
const HEAD: usize = 3;

/// The controller; Δt = `dt_max` / 2^`level`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepControl {
    dt_max: f64,
    /// The shortest rung (dt_max / 2^levels ≥ solver.dt_min).
    levels: u32,
    /// Steps with at most this many iterations (and converged) are easy:
    /// after a few, a longer rung is tried; harder ones try a shorter rung.
    target: u64,
    level: u32,
    /// Easy steps in a row.
    easy: u32,
    /// Steps taken under this controller.
    steps: u64,
    /// Per rung: (running estimate of the step's cost in iterations, up to
    /// a harder step at once and down by halves; the step it was last
    /// updated at).
    cost: Vec<Option<(f64, u64)>>,
}

impl StepControl {
    pub fn new(dt_max: f64, dt_min: f64, target: u64) -> Self {
        let mut levels = 0;
        while levels < 60 && dt_max * 0.5f64.powi(levels as i32 + 1) >= dt_min * (1.0 - 1e-12) {
            levels += 1;
        }
        Self { dt_max, levels, target, level: 0, easy: 0, steps: 0, cost: vec![None; levels as usize + 1] }
    }

    /// The Δt of the next step.
    pub fn dt(&self) -> f64 {
        self.dt_max * 0.5f64.powi(self.level as i32)
    }

    /// A rung's cost per unit of simulated time (in iterations per dt_max),
    /// if measured within the last [`MEMORY`] steps.
    fn rate(&self, level: u32) -> Option<f64> {
        self.rate_within(level, MEMORY)
    }

    /// [`Self::rate`] if measured within the last `age` steps.
    fn rate_within(&self, level: u32, age: u64) -> Option<f64> {
        let (mean, at) = self.cost.get(level as usize).copied().flatten()?;
        (self.steps - at <= age).then(|| mean * 2f64.powi(level as i32))
    }

    /// After a step at [`Self::dt`] that took `iterations` and did or did
    /// not reach the tolerance: the next step's rung.
    pub fn after_step(&mut self, iterations: u64, converged: bool) {
        self.steps += 1;
        let k = self.level;
        let c = iterations as f64 + STEP_OVERHEAD;
        let fresh = self.rate(k).is_some();
        let slot = &mut self.cost[k as usize];
        *slot = Some(match *slot {
            // Up at once, down by halves: a rung is judged by its hard steps
            // (a forming pack's long steps alternate between a few hundred
            // sweeps and a few thousand).
            Some((mean, _)) if fresh => (c.max(0.5 * (mean + c)), self.steps),
            _ => (c, self.steps),
        });
        let here = self.rate(k).expect("updated above");
        let easy = converged && iterations <= self.target;
        self.easy = if easy { self.easy + 1 } else { 0 };
        let shorter = (k < self.levels).then(|| self.rate(k + 1));
        // The longer rung, just tried, was cheaper per simulated time: go
        // back to it; or the steps here are easy and it is not known to
        // cost more: try it.
        let grow = k > 0
            && match (self.rate_within(k - 1, RECENT), self.rate(k - 1)) {
                (Some(r), _) if r < here => true,
                (_, Some(r)) if r >= here => false,
                _ => self.easy >= GROW_AFTER,
            };
        // A step above the target tries the shorter rung unless that is
        // known to cost more.
        let shrink = !easy && shorter.is_some_and(|r| r.map_or(true, |r| r < here));
        if grow {
            self.level -= 1;
            self.easy = 0;
        } else if shrink {
            self.level += 1;
            self.easy = 0;
        }
    }

    /// The state a checkpoint keeps: (level, easy, steps) and, per rung,
    /// (mean, updated at) with a negative mean for "none".
    pub fn state(&self) -> Vec<f64> {
        let mut v = vec![self.level as f64, self.easy as f64, self.steps as f64];
        for c in &self.cost {
            let (mean, at) = c.unwrap_or((-1.0, 0));
            v.extend([mean, at as f64]);
        }
        v
    }

    /// Takes back [`Self::state`]. A ladder of another length (dt_min or
    /// simulation.dt changed at the restart) keeps only the rung, clamped.
    pub fn restore(&mut self, v: &[f64]) {
        if v.len() < HEAD {
            return;
        }
        self.level = (v[0].max(0.0) as u32).min(self.levels);
        if v.len() != HEAD + 2 * self.cost.len() {
            return;
        }
        self.easy = v[1] as u32;
        self.steps = v[2] as u64;
        for (c, r) in self.cost.iter_mut().zip(v[HEAD..].chunks(2)) {
            *c = (r[0] >= 0.0).then(|| (r[0], r[1] as u64));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Iterations growing as Δt² (the frictional pour's measured trend,
    /// 400 at dt_max): the cost per dt_max of rung k is (400 / 4^k + 20) 2^k
    /// = 420, 240, 180, 210, ...; the controller settles on rung 2 and
    /// only looks at rung 1 again when its cost is forgotten.
    #[test]
    fn hard_steps_settle_on_the_cheapest_rung() {
        let mut c = StepControl::new(1e-3, 1e-3 / 64.0, 25);
        assert_eq!(c.levels, 6);
        let mut levels = Vec::new();
        for _ in 0..250 {
            let it = (400.0 * (c.dt() / 1e-3).powi(2)).round() as u64;
            c.after_step(it, true);
            levels.push(c.level);
        }
        assert_eq!(&levels[..3], &[1, 2, 2]);
        assert!(levels.iter().all(|&l| l == 1 || l == 2), "{levels:?}");
        assert!(levels.iter().filter(|&&l| l == 1).count() <= 3, "{levels:?}");
        assert_eq!(c.level, 2);
    }

    /// A pack falls freely (10 iterations a step at dt_max), then lands
    /// and forms: iterations 4000 (Δt/dt_max)², so the cost per dt_max of
    /// rungs 0..6 is 4020, 2040, 1080, 660, 570, 765, 1405 and rung 4 is
    /// the cheapest. The cheap figures of the fall do not pull the
    /// controller back onto the long steps.
    #[test]
    fn the_cost_of_a_free_fall_does_not_pull_a_forming_pack_onto_long_steps() {
        let mut c = StepControl::new(1.0, 1.0 / 64.0, 25);
        for _ in 0..10 {
            c.after_step(10, true);
        }
        assert_eq!(c.level, 0);
        let mut levels = Vec::new();
        for _ in 0..60 {
            c.after_step((4000.0 * c.dt().powi(2)).round() as u64, true);
            levels.push(c.level);
        }
        assert_eq!(&levels[..5], &[1, 2, 3, 4, 4], "{levels:?}");
        assert!(levels[4..].iter().all(|&l| l == 4 || l == 5), "{levels:?}");
        assert_eq!(c.level, 4);
    }

    /// A pack that forms gradually: iterations A (Δt/dt_max)² with A
    /// growing from 10 (a free fall) to 4000 over 60 steps. Once a step at
    /// dt_max would cost A ≥ 300 iterations (12 × the target), none is
    /// taken there: the fall's old figures do not count.
    #[test]
    fn a_pack_forming_gradually_is_not_sent_back_to_the_fall_s_steps() {
        let mut c = StepControl::new(1.0, 1.0 / 64.0, 25);
        for s in 0..120 {
            let a = 10.0 * 400f64.powf(s.min(60) as f64 / 60.0);
            assert!(a < 300.0 || c.level > 0, "step {s}: A = {a:.0} at dt_max");
            c.after_step((a * c.dt().powi(2)).round() as u64, true);
        }
        assert_eq!(c.level, 4);
    }

    /// A stall that no Δt cures (every step at max_iterations) does not
    /// drive Δt down the ladder: one shorter step shows it costs more.
    #[test]
    fn a_stall_whatever_the_step_keeps_the_longest_step() {
        let mut c = StepControl::new(1.0, 1.0 / 64.0, 25);
        let mut levels = Vec::new();
        for _ in 0..30 {
            c.after_step(5000, false);
            levels.push(c.level);
        }
        assert_eq!(levels[..2], [1, 0]);
        assert_eq!(levels.iter().filter(|&&l| l == 1).count(), 1, "{levels:?}");
    }

    /// Easy steps (a pack come to rest) take the controller back to dt_max
    /// once the costs of the hard phase are forgotten.
    #[test]
    fn easy_steps_grow_back_to_the_longest_step() {
        let mut c = StepControl::new(1.0, 1.0 / 8.0, 25);
        for _ in 0..3 {
            c.after_step((10000.0 * c.dt().powi(3)).round() as u64, true);
        }
        assert_eq!(c.level, 3);
        c.after_step(0, true);
        assert_eq!(c.level, 3, "the longer rung is known to cost more");
        for _ in 0..MEMORY as usize + 3 * GROW_AFTER as usize {
            c.after_step(0, true);
        }
        assert_eq!(c.level, 0);
        assert_eq!(c.dt(), 1.0);
    }

    #[test]
    fn state_round_trips() {
        let mut c = StepControl::new(2e-3, 1e-4, 25);
        for it in [10, 300, 80, 500, 5, 0, 70] {
            c.after_step(it, it < 400);
        }
        let mut d = StepControl::new(2e-3, 1e-4, 25);
        d.restore(&c.state());
        assert_eq!(c, d);
    }
}
