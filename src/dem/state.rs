//! What the DEM keeps between steps as World history (`crate::history`):
//! Newmark accelerations per body, the tangential gap per contact; and the
//! update of the bodies to configuration i+1.
use super::elements::*;
use super::rigid::{self, Newmark, RigidState};
use crate::body::Bodies;
use crate::solver::History;
use nalgebra::Vector3;

/// Version of the checkpoint tables of [`DemSolver::state`] (1 kept the
/// accelerations and friction history in its own tables, now World history).
pub(super) const STATE_VERSION: u32 = 2;

/// History columns: Newmark accelerations (ü, ω̇) per body; per contact the
/// tangential gap, the normal it lies against, and sliding (0 or 1).
pub(super) const ACCELERATION: &str = "acceleration";

pub(super) const ANGULAR_ACCELERATION: &str = "angular_acceleration";

pub(super) const GAP_T: &str = "gap_t";

pub(super) const GAP_T_NORMAL: &str = "gap_t_normal";

pub(super) const SLIDING: &str = "sliding";

/// The Newmark accelerations (ü, ω̇) of owned body `i` from the history; a
/// body never stepped starts in free flight.
pub(super) fn acceleration(history: &History, bodies: &Bodies, i: usize, gravity: &Vector3<f64>) -> (Vector3<f64>, Vector3<f64>) {
    let h = &history.body;
    match h.get(&bodies.id[i]) {
        Some(row) => (v3(h.col(ACCELERATION).of(row)), v3(h.col(ANGULAR_ACCELERATION).of(row))),
        None if bodies.fixed[i] => (Vector3::zeros(), Vector3::zeros()),
        None => (mask3(*gravity, bodies.dof_mask[i], 0), Vector3::zeros()),
    }
}

/// Moves the owned bodies to configuration i+1 (eqs 3, 5, 21, 22) and keeps
/// their accelerations.
pub(super) fn finish(states: &[RigidState], nm: &Newmark, all: &[f64], bodies: &mut Bodies, history: &mut History) {
    let (acc_col, wacc_col) = (history.body.col(ACCELERATION), history.body.col(ANGULAR_ACCELERATION));
    for (i, st) in states.iter().enumerate() {
        let mask = bodies.dof_mask[i];
        let u = mask3(Vector3::new(all[6 * i], all[6 * i + 1], all[6 * i + 2]), mask, 0);
        let a = mask3(Vector3::new(all[6 * i + 3], all[6 * i + 4], all[6 * i + 5]), mask, 3);
        let up = rigid::update(st, nm, &u, &a);
        bodies.position[i] += u;
        bodies.orientation[i] = up.rotation * bodies.orientation[i];
        bodies.velocity[i] = mask3(up.velocity, mask, 0);
        bodies.angular_velocity[i] = mask3(up.angular_velocity, mask, 3);
        let row = history.body.entry(bodies.id[i]);
        acc_col.of_mut(row).copy_from_slice(mask3(up.acceleration, mask, 0).as_slice());
        wacc_col.of_mut(row).copy_from_slice(mask3(up.angular_acceleration, mask, 3).as_slice());
    }
}
