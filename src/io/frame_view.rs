//! Output stage helpers for what ParaView draws beyond the bodies: the walls
//! as finite quads, the line of each contact (centre of a to centre of b, or
//! to the contact point for a wall), and the contact force summed per body.
//! The per-body lookups are collective and go to the rank that holds the
//! body's slab of the id-sorted frame (one all-to-all there and back), so
//! they cost the same whatever the rank count.
use super::redistribute::Redistributed;
use crate::parallel::records::alltoallv;
use mpi::Count;
use crate::scene::{Periodic, Wall};
use mpi::traits::*;
use nalgebra::Vector3;

/// Ids of walls in `body_b` start here (`contact::WALL_ID_BASE`; io does
/// not import contact).
pub const WALL_ID_BASE: u64 = 1 << 63;

/// One wall drawn as a quad: its index in the scene's walls, the time it
/// is removed at, and its four corners (counter-clockwise seen from the side
/// its normal points to).
#[derive(Clone, Debug, PartialEq)]
pub struct WallQuad {
    pub index: u64,
    pub until: f64,
    pub corners: [Vector3<f64>; 4],
}

/// The walls at time `t` (moving walls moved) as quads on their planes
/// spanning the box `lo`..`hi` (the bodies' bounding box, or the periodic
/// box on periodic axes): centred on the box centre's projection, wide
/// enough to cover the box's shadow.
pub fn wall_quads(walls: &[Wall], lo: Vector3<f64>, hi: Vector3<f64>, t: f64) -> Vec<WallQuad> {
    let centre = 0.5 * (lo + hi);
    let corners: Vec<Vector3<f64>> =
        (0..8).map(|k| Vector3::new(if k & 1 == 0 { lo.x } else { hi.x }, if k & 2 == 0 { lo.y } else { hi.y }, if k & 4 == 0 { lo.z } else { hi.z })).collect();
    walls
        .iter()
        .enumerate()
        .map(|(k, w)| {
            let n = w.normal.normalize();
            // Tangents: the axis least aligned with n, made orthogonal to it.
            let axis = (0..3).min_by(|&i, &j| n[i].abs().total_cmp(&n[j].abs())).unwrap_or(0);
            let t1 = (Vector3::ith(axis, 1.0) - n * n[axis]).normalize();
            let t2 = n.cross(&t1);
            let c = centre - n * (centre - w.position(t)).dot(&n);
            let half = |t: &Vector3<f64>| corners.iter().map(|p| (p - c).dot(t).abs()).fold(0.0, f64::max);
            let (a, b) = (t1 * half(&t1), t2 * half(&t2));
            WallQuad { index: k as u64, until: w.until, corners: [c - a - b, c + a - b, c + a + b, c - a + b] }
        })
        .collect()
}

/// Whether a wall removed at `until` is drawn at time `t`: the rule of
/// `World::set_time` (gone from t >= until, within 1e-9 dt).
pub fn wall_shown(until: f64, t: f64, dt: f64) -> bool {
    t < until - 1e-9 * dt
}

/// First id of each rank's slab of the id-sorted bodies (`u64::MAX` for an
/// empty slab), the same on every rank. Collective.
fn slab_starts<C: Communicator>(comm: &C, b: &Redistributed) -> Vec<u64> {
    let first = b.records.keys.first().copied().unwrap_or(u64::MAX);
    let mut all = vec![0u64; comm.size() as usize];
    comm.all_gather_into(&first, &mut all[..]);
    all
}

/// The rank whose slab holds `id`: the last non-empty slab starting at or
/// before it (slabs are in id order).
fn holder(starts: &[u64], id: u64) -> usize {
    starts.iter().rposition(|&s| s != u64::MAX && s <= id).unwrap_or(0)
}

/// Where each of `n` items goes (the rank holding its body's slab), as a
/// counting sort: per-rank counts and, per position of the send buffer,
/// the item placed there (items without an id are left out).
fn plan(starts: &[u64], n: usize, id: &impl Fn(usize) -> Option<u64>) -> (Vec<Count>, Vec<usize>) {
    let mut send_n = vec![0 as Count; starts.len()];
    for i in 0..n {
        if let Some(id) = id(i) {
            send_n[holder(starts, id)] += 1;
        }
    }
    let mut next: Vec<usize> = send_n
        .iter()
        .scan(0usize, |acc, &c| {
            let d = *acc;
            *acc += c as usize;
            Some(d)
        })
        .collect();
    let mut order = vec![0usize; send_n.iter().sum::<Count>() as usize];
    for i in 0..n {
        if let Some(id) = id(i) {
            let r = holder(starts, id);
            order[next[r]] = i;
            next[r] += 1;
        }
    }
    (send_n, order)
}

/// Collective: the `f` fields `range` of the bodies `id(0..n)` (any ids of
/// the frame, on any rank), read from the slabs `b`, `range.len()` values
/// per id; missing ids give NaN. The answers come back in the order the
/// questions were sent (the reverse all-to-all), so only the ids travel.
pub fn fetch<C: Communicator>(comm: &C, b: &Redistributed, n: usize, id: impl Fn(usize) -> u64, range: std::ops::Range<usize>) -> Vec<f64> {
    let starts = slab_starts(comm, b);
    let w = range.len();
    let (send_n, order) = plan(&starts, n, &|i| Some(id(i)));
    let mut recv_n = vec![0 as Count; starts.len()];
    comm.all_to_all_into(&send_n[..], &mut recv_n[..]);
    let asked = alltoallv(comm, &order.iter().map(|&i| id(i)).collect::<Vec<u64>>(), &send_n, &recv_n, 1);
    let keys = &b.records.keys;
    let mut reply = Vec::with_capacity(asked.len() * w);
    for q in &asked {
        match keys.binary_search(q) {
            Ok(i) => reply.extend_from_slice(&b.records.f_row(i)[range.clone()]),
            Err(_) => reply.extend(std::iter::repeat_n(f64::NAN, w)),
        }
    }
    drop(asked);
    let ans = alltoallv(comm, &reply, &recv_n, &send_n, w);
    drop(reply);
    let mut out = vec![f64::NAN; n * w];
    for (k, &i) in order.iter().enumerate() {
        out[i * w..(i + 1) * w].copy_from_slice(&ans[k * w..(k + 1) * w]);
    }
    out
}

/// Collective: sums the vectors `item(0..n)` = (body id, vector), given on
/// any rank, into the slabs `b`: one sum per body of this rank's slab, in
/// its order. `None` items are skipped.
pub fn sum_to_bodies<C: Communicator>(
    comm: &C,
    b: &Redistributed,
    n: usize,
    item: impl Fn(usize) -> Option<(u64, Vector3<f64>)>,
) -> Vec<Vector3<f64>> {
    let starts = slab_starts(comm, b);
    let (send_n, order) = plan(&starts, n, &|i| item(i).map(|(id, _)| id));
    let mut recv_n = vec![0 as Count; starts.len()];
    comm.all_to_all_into(&send_n[..], &mut recv_n[..]);
    let keys = alltoallv(comm, &order.iter().map(|&i| item(i).map_or(0, |(id, _)| id)).collect::<Vec<u64>>(), &send_n, &recv_n, 1);
    let vals = {
        let mut v = Vec::with_capacity(3 * order.len());
        order.iter().for_each(|&i| v.extend_from_slice(item(i).map_or([0.0; 3], |(_, v)| [v.x, v.y, v.z]).as_slice()));
        drop(order);
        alltoallv(comm, &v, &send_n, &recv_n, 3)
    };
    // Summed per body in the order of the vectors' bits: the same on any
    // rank count, whichever rank sent which.
    let bits = |k: usize| [vals[3 * k].to_bits(), vals[3 * k + 1].to_bits(), vals[3 * k + 2].to_bits()];
    let mut idx: Vec<usize> = (0..keys.len()).collect();
    idx.sort_unstable_by(|&i, &j| keys[i].cmp(&keys[j]).then_with(|| bits(i).cmp(&bits(j))));
    let slab = &b.records.keys;
    let mut out = vec![Vector3::zeros(); slab.len()];
    for k in idx {
        if let Ok(i) = slab.binary_search(&keys[k]) {
            out[i] += Vector3::new(vals[3 * k], vals[3 * k + 1], vals[3 * k + 2]);
        }
    }
    out
}

/// `p` shifted by whole periods to the image nearest `near` (the b end of a
/// contact across a periodic face is drawn beside a, not across the box).
pub fn nearest_image(periodic: Option<&Periodic>, p: Vector3<f64>, near: &Vector3<f64>) -> Vector3<f64> {
    let Some(per) = periodic else { return p };
    let mut q = p;
    for a in 0..3 {
        if per.axes[a] {
            let l = per.hi[a] - per.lo[a];
            q[a] -= l * ((q[a] - near[a]) / l).round();
        }
    }
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holder_skips_empty_slabs() {
        let s = [0, u64::MAX, 10, 20];
        assert_eq!(holder(&s, 5), 0);
        assert_eq!(holder(&s, 10), 2);
        assert_eq!(holder(&s, 19), 2);
        assert_eq!(holder(&s, 25), 3);
    }

    #[test]
    fn nearest_image_across_a_face() {
        let per = Periodic::new(Vector3::zeros(), Vector3::new(10.0, 10.0, 10.0), [true, false, false]);
        let q = nearest_image(Some(&per), Vector3::new(9.5, 1.0, 1.0), &Vector3::new(0.5, 1.0, 1.0));
        assert!((q - Vector3::new(-0.5, 1.0, 1.0)).norm() < 1e-12);
        assert!((wall_shown(1.0, 0.5, 0.1), wall_shown(1.0, 1.0, 0.1)) == (true, false));
    }
}
