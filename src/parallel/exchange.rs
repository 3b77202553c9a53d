//! Ghosts in LAMMPS's named steps (step 1 of the time step):
//! `migrate` (exchange: owners change), `borders` (build the ghost lists),
//! `forward` (owner -> ghost state every step). Owned bodies come first in
//! `Bodies`, ghosts after.
use super::domain::Domain;
use super::records::{body_from_row, push_body, send_to, FlatRecords, BODY_NF, BODY_NU};
use super::Comm;
use crate::body::{Bodies, Shape};
use crate::scene::Periodic;
use mpi::traits::*;
use nalgebra::Vector3;
use std::collections::HashMap;

/// PETSc numbering: owned bodies are contiguous per rank, body `i < n_owned`
/// has global index `offset + i`; ghosts carry their owner's index.
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub n_owned: usize,
    /// Total bodies on all ranks.
    pub total: u64,
    /// First global index of this rank's owned bodies.
    pub offset: u64,
    /// Global index of every local body (owned, then ghosts).
    pub global_index: Vec<u64>,
    /// Ghost plan: (destination rank, owned local index, the whole periods
    /// along each axis of a periodic image (zero for a plain ghost), the
    /// image's gradient periods in a Lees–Edwards cell), in send order.
    sends: Vec<(usize, usize, [i32; 3], i32)>,
    /// A Lees–Edwards cell's images: how they move.
    shear: Option<ImageMotion>,
}

/// The images of a Lees–Edwards cell: their velocity beyond their owners
/// now, per gradient period (they are placed with the cell's offset and
/// period of the moment, [`Periodic::image_position`]).
#[derive(Clone, Copy, Debug)]
struct ImageMotion {
    flow: usize,
    gradient: usize,
    /// γ̇ L along the flow axis and dL/dt along the gradient axis, m/s.
    speed: f64,
    rate: f64,
}

impl ImageMotion {
    fn of(p: &Periodic, time: f64) -> Option<Self> {
        let s = p.shear?;
        Some(Self { flow: s.flow, gradient: s.gradient, speed: p.shear_speed_at(time), rate: p.gradient_speed() })
    }

    /// An image's velocity beyond its owner, `periods` gradient periods away.
    fn velocity(&self, periods: i32) -> Vector3<f64> {
        let mut v = Vector3::zeros();
        v[self.flow] = periods as f64 * self.speed;
        v[self.gradient] += periods as f64 * self.rate;
        v
    }
}

impl Layout {
    /// The images take the present velocity of the cell `periodic` (its
    /// shear and the rate of its gradient period) at `time`.
    pub fn follow(&mut self, periodic: Option<&Periodic>, time: f64) {
        if let (Some(m), Some(now)) = (self.shear.as_mut(), periodic.and_then(|p| ImageMotion::of(p, time))) {
            (m.speed, m.rate) = (now.speed, now.rate);
        }
    }

    /// The largest speed of an image beyond its owner, m/s (0 without a
    /// Lees–Edwards cell).
    pub fn image_speed(&self) -> f64 {
        self.shear.map_or(0.0, |m| m.velocity(1).norm())
    }
}

/// Sends every owned body whose centre is now in another rank's box to that
/// rank (or whose point `at`, one per owned body, is); drops ghosts. Owned
/// bodies end sorted by id. Returns the bodies this rank sent away, by id
/// with their new rank (their history follows them).
pub fn migrate(comm: &Comm, domain: &Domain, bodies: &mut Bodies, n_owned: usize, at: Option<&[Vector3<f64>]>) -> HashMap<u64, usize> {
    bodies.truncate(n_owned);
    let me = comm.rank() as usize;
    let mut out = FlatRecords::new(BODY_NU, BODY_NF);
    let mut dest = Vec::new();
    let mut leaving = vec![false; n_owned];
    let mut departed = HashMap::new();
    for (i, leave) in leaving.iter_mut().enumerate() {
        let r = domain.owner(at.map_or(&bodies.position[i], |a| &a[i]));
        if r != me {
            push_body(&mut out, bodies, i);
            dest.push(r);
            departed.insert(bodies.id[i], r);
            *leave = true;
        }
    }
    let received = send_to(comm, &out, &dest);
    let mut k = 0;
    bodies.retain(|_| {
        k += 1;
        !leaving[k - 1]
    });
    bodies.reserve_exact(received.len());
    for i in 0..received.len() {
        bodies.push(body_from_row(&received, i));
    }
    bodies.sort_by_id();
    departed
}

/// Builds the ghost lists and appends the ghosts: a body is copied to every
/// rank whose box lies within R_body + R_max(that rank) + `extra` of its
/// centre, so that any pair closer than `extra` is complete on both owners.
/// A body larger than a rank box reaches every box it overlaps. With
/// periodic axes, bodies near a face are also sent as images shifted by the
/// period (to this rank too, when it holds the other face).
pub fn borders(
    comm: &Comm,
    domain: &Domain,
    bodies: &mut Bodies,
    n_owned: usize,
    shapes: &[Shape],
    extra: f64,
    periodic: Option<&Periodic>,
    time: f64,
) -> Layout {
    bodies.truncate(n_owned);
    let me = comm.rank() as usize;
    let size = comm.size() as usize;
    let radius = |i: usize| shapes[bodies.shape[i] as usize].bounding_radius();
    let local_max = (0..n_owned).map(radius).fold(0.0, f64::max);
    let mut rmax = vec![0.0f64; size];
    comm.all_gather_into(&local_max, &mut rmax[..]);
    let global_max = rmax.iter().copied().fold(0.0, f64::max);

    let mut counts = vec![0u64; size];
    comm.all_gather_into(&(n_owned as u64), &mut counts[..]);
    let offset: u64 = counts[..me].iter().sum();
    let total: u64 = counts.iter().sum();

    let mut sends = Vec::new();
    for i in 0..n_owned {
        let ri = radius(i);
        let reach = ri + global_max + extra;
        let mut images = vec![([0; 3], 0)];
        if let Some(per) = periodic {
            images.extend(per.images(&bodies.position[i], reach, time).into_iter().map(|im| (per.image_wraps(&im.shift, im.periods, time), im.periods)));
        }
        for (wraps, periods) in images {
            let plain = wraps == [0; 3] && periods == 0;
            let p = match periodic {
                Some(per) if !plain => per.image_position(&bodies.position[i], periods, &wraps, time),
                _ => bodies.position[i],
            };
            for r in domain.ranks_near(&p, reach) {
                let own_copy = r == me && plain;
                if !own_copy && super::domain::distance_to_box(&p, &domain.rank_box(r)) <= ri + rmax[r] + extra {
                    sends.push((r, i, wraps, periods));
                }
            }
        }
    }
    let mut layout = Layout {
        n_owned,
        total,
        offset,
        global_index: (0..n_owned as u64).map(|i| offset + i).collect(),
        sends,
        shear: periodic.and_then(|p| ImageMotion::of(p, time)),
    };
    let (ghosts, index) = send_ghosts(comm, bodies, &layout, periodic, time);
    bodies.reserve_exact(ghosts.len());
    for i in 0..ghosts.len() {
        bodies.push(body_from_row(&ghosts, i));
    }
    layout.global_index.extend(index.keys);
    layout
}

/// Refreshes the ghosts' state from their owners along the existing lists
/// (same ghosts, same order) at `time`, a Lees–Edwards image's with the
/// cell `periodic` as it is then (its offset, period and their rates).
pub fn forward(comm: &Comm, bodies: &mut Bodies, layout: &mut Layout, periodic: Option<&Periodic>, time: f64) {
    layout.follow(periodic, time);
    let (ghosts, _) = send_ghosts(comm, bodies, layout, periodic, time);
    assert_eq!(ghosts.len(), bodies.len() - layout.n_owned, "ghost lists changed without borders()");
    for k in 0..ghosts.len() {
        bodies.set(layout.n_owned + k, body_from_row(&ghosts, k));
    }
}

fn send_ghosts(comm: &Comm, bodies: &Bodies, layout: &Layout, periodic: Option<&Periodic>, time: f64) -> (FlatRecords, FlatRecords) {
    let mut recs = FlatRecords::new(BODY_NU, BODY_NF);
    let mut index = FlatRecords::new(0, 0);
    let dest: Vec<usize> = layout.sends.iter().map(|&(r, _, _, _)| r).collect();
    for &(_, i, wraps, periods) in &layout.sends {
        push_body(&mut recs, bodies, i);
        let row = recs.f.len() - BODY_NF;
        if let (Some(p), false) = (periodic, wraps == [0; 3] && periods == 0) {
            recs.f[row..row + 3].copy_from_slice(p.image_position(&bodies.position[i], periods, &wraps, time).as_slice());
        }
        // A Lees–Edwards image moves at the images' velocity (at f[7..10]).
        if let (Some(m), true) = (layout.shear, periods != 0) {
            let v = m.velocity(periods);
            for a in 0..3 {
                recs.f[row + 7 + a] += v[a];
            }
        }
        index.push(layout.global_index[i], &[], &[]);
    }
    (send_to(comm, &recs, &dest), send_to(comm, &index, &dest))
}

/// Forwards `width` values per owned body (`owned[width*i..width*(i+1)]`
/// for owned body i) to the ghost copies along the existing lists; returns
/// them in ghost order (`width` per ghost). Reads only `owned` and the
/// layout's ghost plan; collective. The same values as the owner's: a
/// ghost's history row, say ([`forward_increments`] for the DEM's
/// increments, which an image changes).
pub fn forward_values(comm: &Comm, layout: &Layout, owned: &[f64], width: usize) -> Vec<f64> {
    forward_with(comm, layout, owned, width, |_, _| {})
}

/// [`forward_values`] of the 6 increments (translation, rotation) per body
/// over a step of `dt`: a Lees–Edwards image also drifts at its velocity
/// beyond its owner, so its increment is the owner's plus that drift.
pub fn forward_increments(comm: &Comm, layout: &Layout, owned: &[f64], dt: f64) -> Vec<f64> {
    let shear = layout.shear;
    forward_with(comm, layout, owned, 6, |row, periods| {
        if let (Some(m), true) = (shear, periods != 0) {
            let v = m.velocity(periods);
            for a in 0..3 {
                row[a] += v[a] * dt;
            }
        }
    })
}

/// [`forward_values`] of one displacement length per body over a step of
/// `dt`: a Lees–Edwards image's also counts its drift.
pub fn forward_displacements(comm: &Comm, layout: &Layout, owned: &[f64], dt: f64) -> Vec<f64> {
    let shear = layout.shear;
    forward_with(comm, layout, owned, 1, |row, periods| {
        if let Some(m) = shear {
            row[0] += m.velocity(periods).norm() * dt;
        }
    })
}

/// In a Lees–Edwards cell, the velocity at which each ghost moves beyond
/// its owner (periods·γ̇L along the flow axis, periods·dL/dt along the
/// gradient axis for an image, zero for a plain ghost), in ghost order:
/// what a row of B acting on the owners' velocities misses. `None` outside
/// such a cell. Collective.
pub fn image_velocities(comm: &Comm, layout: &Layout) -> Option<Vec<Vector3<f64>>> {
    let m = layout.shear?;
    let zeros = vec![0.0; 3 * layout.n_owned];
    let v = forward_with(comm, layout, &zeros, 3, |row, periods| row.copy_from_slice(m.velocity(periods).as_slice()));
    Some(v.chunks_exact(3).map(Vector3::from_column_slice).collect())
}

fn forward_with(comm: &Comm, layout: &Layout, owned: &[f64], width: usize, image: impl Fn(&mut [f64], i32)) -> Vec<f64> {
    let mut recs = FlatRecords::new(0, width);
    let dest: Vec<usize> = layout.sends.iter().map(|&(r, _, _, _)| r).collect();
    let mut row = vec![0.0; width];
    for &(_, i, _, periods) in &layout.sends {
        row.copy_from_slice(&owned[width * i..width * (i + 1)]);
        image(&mut row, periods);
        recs.push(layout.global_index[i], &[], &row);
    }
    let got = send_to(comm, &recs, &dest);
    assert_eq!(got.len(), layout.global_index.len() - layout.n_owned, "ghost lists changed without borders()");
    got.f
}
