//! The measurements of a granular-mechanics lab test over the cell (or a
//! configured box), from the bodies and the step's contact forces: the
//! Love–Weber stress tensor, the solid fraction, the coordination number
//! (all bodies, and the backbone without rattlers), the fabric tensor and
//! the inertial number. Distributed: each rank sums its own contacts and
//! bodies; rattlers are found by a rendezvous of the contacts by body id,
//! so the answer does not depend on the rank count (beyond rounding).
//!
//! Conventions (the guide's "Lab measurements"): compression positive,
//! σ = V⁻¹ Σ_c f_c ⊗ ℓ_c, f_c the force on body b and ℓ_c the branch
//! vector from a's centre to b's (to the contact point for a wall or a
//! fixed body: those are the boundary, the free bodies the material).
use crate::parallel::records::{send_to, FlatRecords};
use crate::parallel::{self, Comm};
use crate::world::{ReportedForces, World};
use mpi::traits::*;
use nalgebra::{Matrix3, Vector3};
use std::collections::HashMap;

/// A contact carries force when its normal force exceeds this fraction of
/// the largest normal force of the step (solvers leave round-off behind).
pub const FORCE_CARRYING: f64 = 1e-9;

/// The lab measurements at one instant (the same on every rank).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Measures {
    /// The box measured in, m: [lo, hi].
    pub box_lo: [f64; 3],
    pub box_hi: [f64; 3],
    /// Its volume, m³ (area in 2D).
    pub volume: f64,
    /// Free bodies measured.
    pub bodies: u64,
    /// Solid volume of the free bodies (centre in the box) / volume.
    pub solid_fraction: f64,
    /// Force-carrying contacts per free body (a contact with a wall or a
    /// fixed body counts once, for its free body).
    pub coordination: f64,
    /// The same over the backbone: rattlers (fewer force-carrying contacts
    /// than `measure.rattler_contacts`) removed until none is left.
    pub coordination_backbone: f64,
    /// Fraction of the free bodies that are rattlers.
    pub rattler_fraction: f64,
    /// Love–Weber stress, Pa, compression positive: stress[i][j] = V⁻¹ Σ f_i ℓ_j.
    pub stress: [[f64; 3]; 3],
    /// p = tr σ / d, Pa.
    pub pressure: f64,
    /// q/p (q = √(3/2 s:s), s the deviator of σ's symmetric part), or τ/σ_n
    /// = σ_ab/σ_bb with `measure.shear`.
    pub stress_ratio: f64,
    /// ⟨n ⊗ n⟩ over the force-carrying contacts between free bodies.
    pub fabric: [[f64; 3]; 3],
    /// I = ε̇ d √(ρ/p): ε̇ the largest axial strain rate of the walls' cell
    /// (or the shear rate of a Lees–Edwards cell), d the mean equivalent
    /// diameter, ρ the mean density.
    pub inertial_number: f64,
}

impl Measures {
    /// The values of a series row, in the order of [`crate::io::MEASURE_COLUMNS`].
    pub fn series_values(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.box_lo.iter().chain(&self.box_hi).copied().collect();
        v.extend([
            self.volume,
            self.solid_fraction,
            self.coordination,
            self.coordination_backbone,
            self.rattler_fraction,
            self.pressure,
            self.stress_ratio,
            self.inertial_number,
        ]);
        v.extend(self.stress.iter().flatten());
        v.extend(self.fabric.iter().flatten());
        v
    }
}

/// Mean and standard deviation of a measurement over a steady state.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct MeanStd {
    pub mean: f64,
    pub std: f64,
}

/// A shear run's steady state (summary.json `steady`): the stress ratio,
/// the solid fraction, the inertial number and the coordination over the
/// second half of the strain, and the strain γ̇ t_end at the end.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Steady {
    pub stress_ratio: MeanStd,
    pub solid_fraction: MeanStd,
    pub inertial_number: MeanStd,
    pub coordination: MeanStd,
    pub strain: f64,
}

impl Steady {
    /// From the frames' columns `[time, stress ratio, solid fraction,
    /// inertial number, coordination]` of a Lees–Edwards run of shear rate
    /// `rate` (strain γ̇ t) that ended at `t_end`: the rows with
    /// t ≥ t_end / 2. None without such a row.
    pub fn of(c: &[Vec<f64>; 5], rate: f64, t_end: f64) -> Option<Self> {
        let n = c.iter().map(Vec::len).min().unwrap_or(0);
        let rows: Vec<usize> = (0..n).filter(|&k| c[0][k] >= 0.5 * t_end).collect();
        if rows.is_empty() {
            return None;
        }
        let stats = |v: &[f64]| {
            let n = rows.len() as f64;
            let mean = rows.iter().map(|&k| v[k]).sum::<f64>() / n;
            MeanStd { mean, std: (rows.iter().map(|&k| (v[k] - mean).powi(2)).sum::<f64>() / n).sqrt() }
        };
        Some(Self {
            stress_ratio: stats(&c[1]),
            solid_fraction: stats(&c[2]),
            inertial_number: stats(&c[3]),
            coordination: stats(&c[4]),
            strain: rate.abs() * t_end,
        })
    }
}

fn rows(m: &Matrix3<f64>) -> [[f64; 3]; 3] {
    [[m[(0, 0)], m[(0, 1)], m[(0, 2)]], [m[(1, 0)], m[(1, 1)], m[(1, 2)]], [m[(2, 0)], m[(2, 1)], m[(2, 2)]]]
}

/// The stress ratio of `s` (compression positive) in `dim` dimensions:
/// q/p, or σ_ab/σ_bb for a shear `(a, b)`. Zero without pressure.
pub fn stress_ratio(s: &Matrix3<f64>, dim: usize, shear: Option<(usize, usize)>) -> f64 {
    let sym = 0.5 * (s + s.transpose());
    if let Some((a, b)) = shear {
        return if sym[(b, b)] != 0.0 { sym[(a, b)] / sym[(b, b)] } else { 0.0 };
    }
    let p = (0..dim).map(|k| sym[(k, k)]).sum::<f64>() / dim as f64;
    if p == 0.0 {
        return 0.0;
    }
    let mut dev = sym;
    for k in 0..dim {
        dev[(k, k)] -= p;
    }
    (1.5 * dev.component_mul(&dev).sum()).sqrt() / p
}

/// The measurements now, from the forces `reported` by the solver as in
/// [`World::reactions`] (compatible-cd's compatible forces). `t` is the
/// time (the walls' rates). Collective.
pub fn measure(world: &World, reported: Option<ReportedForces>, t: f64) -> Measures {
    let (comm, scene) = (world.comm(), world.scene());
    let settings = &scene.measure;
    let dim = scene.simulation.dim as usize;
    let (lo, hi) = settings.region.unwrap_or_else(|| world.cell_box());
    let inside = |x: &Vector3<f64>| settings.region.is_none() || (0..3).all(|a| x[a] >= lo[a] && x[a] < hi[a]);
    // No free body and no walls leave no cell: nothing is measured.
    let volume = Some((0..dim).map(|a| hi[a] - lo[a]).product::<f64>()).filter(|v| v.is_finite() && *v > 0.0).unwrap_or(0.0);
    let per_volume = if volume > 0.0 { 1.0 / volume } else { 0.0 };
    // Bodies: count, solid volume, mass, equivalent diameters.
    let b = world.bodies();
    let mut sums = [0.0; 4];
    for i in (0..world.n_owned()).filter(|&i| !b.fixed[i] && inside(&b.position[i])) {
        let rho = scene.materials[b.material[i] as usize].density;
        let v = b.mass[i] / rho;
        sums[0] += 1.0;
        sums[1] += v;
        sums[2] += b.mass[i];
        sums[3] += (6.0 * v / std::f64::consts::PI).cbrt();
    }
    // Contacts: stress, force-carrying ends, fabric.
    let (c, f) = (world.contacts(), world.answer_forces(reported));
    let sides = world.contact_sides();
    let f_n = |k: usize| f.f_n.get(k).copied().unwrap_or(0.0);
    let largest = parallel::max_f64(comm, (0..c.len()).map(|k| f_n(k).abs()).fold(0.0, f64::max));
    let mut stress = Matrix3::zeros();
    let mut fabric = Matrix3::zeros();
    let (mut ends, mut inner) = (0.0, 0.0);
    // Force-carrying contact ends by body id: (body, partner or BOUNDARY).
    let mut links = FlatRecords::new(1, 0);
    let mut dest = Vec::new();
    let size = comm.size() as u64;
    for k in 0..c.len().min(sides.len()) {
        let force = c.normal[k] * f_n(k) + f.f_t.get(k).copied().unwrap_or_else(Vector3::zeros);
        let s = sides[k];
        let a_in = !s.fixed.0 && inside(&(c.point[k] - s.arm_a));
        let b_in = !s.fixed.1 && inside(&(c.point[k] - s.arm_b));
        if a_in {
            stress += force * s.arm_a.transpose();
        }
        if b_in {
            stress -= force * s.arm_b.transpose();
        }
        if f_n(k) <= FORCE_CARRYING * largest || largest == 0.0 {
            continue;
        }
        if a_in && b_in {
            fabric += c.normal[k] * c.normal[k].transpose();
            inner += 1.0;
        }
        for (me, other, mine, theirs) in [(c.a[k], c.b[k], a_in, b_in), (c.b[k], c.a[k], b_in, a_in)] {
            if mine {
                ends += 1.0;
                links.push(me, &[if theirs { other } else { BOUNDARY }], &[]);
                dest.push((me % size) as usize);
            }
        }
    }
    let mut flat: Vec<f64> = stress.iter().chain(fabric.iter()).copied().collect();
    flat.extend(sums);
    flat.extend([ends, inner]);
    parallel::sum_f64s(comm, &mut flat);
    let stress = Matrix3::from_column_slice(&flat[0..9]) * per_volume;
    let fabric = if flat[23] > 0.0 { Matrix3::from_column_slice(&flat[9..18]) / flat[23] } else { Matrix3::zeros() };
    let [n, solid, mass, diameters] = [flat[18], flat[19], flat[20], flat[21]];
    let ends = flat[22];
    let (alive, alive_ends) = backbone(comm, &send_to(comm, &links, &dest), settings.rattler_contacts as usize);
    let pressure = (0..dim).map(|k| stress[(k, k)]).sum::<f64>() / dim as f64;
    let rate = strain_rate(world, t, &lo, &hi, dim);
    let inertial_number = if pressure > 0.0 && n > 0.0 && solid > 0.0 { rate * diameters / n * (mass / solid / pressure).sqrt() } else { 0.0 };
    Measures {
        box_lo: if volume > 0.0 { [lo.x, lo.y, lo.z] } else { [0.0; 3] },
        box_hi: if volume > 0.0 { [hi.x, hi.y, hi.z] } else { [0.0; 3] },
        volume,
        bodies: n as u64,
        solid_fraction: solid * per_volume,
        coordination: if n > 0.0 { ends / n } else { 0.0 },
        coordination_backbone: if alive > 0 { alive_ends as f64 / alive as f64 } else { 0.0 },
        rattler_fraction: if n > 0.0 { 1.0 - alive as f64 / n } else { 0.0 },
        stress: rows(&stress),
        pressure,
        stress_ratio: stress_ratio(&stress, dim, settings.shear),
        fabric: rows(&fabric),
        inertial_number,
    }
}

/// The partner of a contact end on the boundary (a wall, a fixed body, a
/// body outside the box): never removed.
const BOUNDARY: u64 = u64::MAX;

/// The backbone from the force-carrying contact ends this rank holds (all
/// those of the bodies whose id is this rank modulo the rank count): bodies
/// with fewer than `k` ends to bodies still there (or to the boundary) are
/// removed, and their partners told, until no rank removes one. Returns the
/// backbone's bodies and contact ends over all ranks. Collective.
fn backbone(comm: &Comm, ends: &FlatRecords, k: usize) -> (u64, u64) {
    let mut partners: HashMap<u64, Vec<u64>> = HashMap::new();
    for i in 0..ends.len() {
        partners.entry(ends.keys[i]).or_default().push(ends.u_row(i)[0]);
    }
    let size = comm.size() as u64;
    loop {
        let gone: Vec<u64> = partners.iter().filter(|(_, p)| p.len() < k).map(|(&id, _)| id).collect();
        let mut notes = FlatRecords::new(1, 0);
        let mut dest = Vec::new();
        for id in &gone {
            for &p in &partners[id] {
                if p != BOUNDARY {
                    notes.push(p, &[*id], &[]);
                    dest.push((p % size) as usize);
                }
            }
            partners.remove(id);
        }
        if parallel::all_ok(comm, gone.is_empty()) {
            break;
        }
        let got = send_to(comm, &notes, &dest);
        for i in 0..got.len() {
            if let Some(p) = partners.get_mut(&got.keys[i]) {
                let removed = got.u_row(i)[0];
                p.retain(|&q| q != removed);
            }
        }
    }
    let mut counts = [partners.len() as u64, partners.values().map(|p| p.len() as u64).sum()];
    let local = counts;
    comm.all_reduce_into(&local[..], &mut counts[..], mpi::collective::SystemOperation::sum());
    (counts[0], counts[1])
}

/// The largest |axial strain rate| of the cell the walls bound, 1/s: on
/// each axis with an acting wall on both sides, the rate of their distance
/// over it (over the next Δt of the scene).
fn strain_rate(world: &World, t: f64, lo: &Vector3<f64>, hi: &Vector3<f64>, dim: usize) -> f64 {
    let dt = world.scene().simulation.dt;
    let velocity = |a: usize, side: f64, at: f64| {
        world
            .walls()
            .iter()
            .filter(|w| !w.removed && (w.normal[a] - side).abs() < 1e-12 && (w.point[a] - at).abs() <= 1e-12 * (1.0 + at.abs()))
            .map(|w| (w.position(t + dt)[a] - w.position(t)[a]) / dt)
            .next()
    };
    // A Lees–Edwards cell shears at its rate.
    let shear = world.scene().periodic.as_ref().and_then(|p| p.shear).map_or(0.0, |s| s.rate.abs());
    (0..dim)
        .filter_map(|a| {
            let (v_lo, v_hi) = (velocity(a, 1.0, lo[a])?, velocity(a, -1.0, hi[a])?);
            Some(((v_hi - v_lo) / (hi[a] - lo[a])).abs())
        })
        .fold(shear, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stress_ratio_of_a_triaxial_state_is_q_over_p() {
        // σ1 = 3, σ2 = σ3 = 1: p = 5/3, q = 2.
        let s = Matrix3::from_diagonal(&Vector3::new(1.0, 1.0, 3.0));
        assert!((stress_ratio(&s, 3, None) - 2.0 / (5.0 / 3.0)).abs() < 1e-14);
        let iso = Matrix3::from_diagonal(&Vector3::new(2.0, 2.0, 2.0));
        assert_eq!(stress_ratio(&iso, 3, None), 0.0);
        let mut shear = iso;
        shear[(0, 2)] = 0.5;
        shear[(2, 0)] = 0.5;
        assert!((stress_ratio(&shear, 3, Some((0, 2))) - 0.25).abs() < 1e-15);
    }
}
