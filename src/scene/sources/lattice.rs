//! Lattice, checked lattice (mesh bodies closer than their bounding spheres)
//! and pyramid sources, each computed for one region only.
use crate::body::mesh::TriMesh;
use crate::geometry::mesh_distance;
use crate::scene::generate::orientation_at;
use nalgebra::{Isometry3, Translation3, UnitQuaternion, Vector3};

/// Index range [a, b) along one axis of centres x = o + s·(i − half), i in
/// 0..n, that can lie in [lo, hi] (one extra on each side; callers filter).
pub(super) fn index_range(o: f64, s: f64, half: f64, n: u64, lo: f64, hi: f64) -> (u64, u64) {
    let clamp = |t: f64| t.max(0.0).min(n as f64) as u64;
    if s <= 0.0 || n == 0 {
        return (0, n);
    }
    (clamp(((lo - o) / s + half).floor() - 1.0), clamp(((hi - o) / s + half).ceil() + 2.0))
}

/// Calls `f(j, centre)` for the lattice bodies whose centre may lie in
/// [lo, hi] (a superset: callers keep those they own).
pub fn lattice_in(origin: Vector3<f64>, n: [u64; 3], spacing: f64, lo: Vector3<f64>, hi: Vector3<f64>, mut f: impl FnMut(u64, Vector3<f64>)) {
    let r: Vec<(u64, u64)> = (0..3).map(|a| index_range(origin[a], spacing, 0.0, n[a], lo[a], hi[a])).collect();
    for k in r[2].0..r[2].1 {
        for j in r[1].0..r[1].1 {
            for i in r[0].0..r[0].1 {
                let p = origin + spacing * Vector3::new(i as f64, j as f64, k as f64);
                f(i + n[0] * (j + n[1] * k), p);
            }
        }
    }
}

/// Orientation draws a body of a checked lattice tries before it gives up.
pub const MAX_ORIENTATION_DRAWS: u64 = 2_000;
/// Salt of the streams of a checked lattice's later orientation draws.
const DRAW_SALT: u64 = 0x6472_6177_0000_0001;
/// Lattice cells beyond a region a checked lattice also computes: a body's
/// orientation depends on its neighbours of earlier colours, theirs on
/// earlier ones still, at most 7 cells away (8 colours).
const CHECKED_HALO: u64 = 8;

/// Orientation draw `k` of body `j`: draw 0 is `orientation_at(seed, j)`
/// (the orientation an unchecked lattice or random pack gives), each later
/// draw comes from a stream of its own.
pub fn orientation_draw(seed: u64, j: u64, k: u64) -> UnitQuaternion<f64> {
    if k == 0 {
        orientation_at(seed, j)
    } else {
        orientation_at(seed ^ DRAW_SALT.wrapping_mul(k), j)
    }
}

/// Colour of lattice cell (i, j, k): adjacent cells (also diagonally) never
/// share one.
fn lattice_color(c: [u64; 3]) -> u64 {
    c[0] % 2 + 2 * (c[1] % 2) + 4 * (c[2] % 2)
}

/// A body of a checked lattice: index within its source, centre, orientation.
pub type Oriented = (u64, Vector3<f64>, UnitQuaternion<f64>);

/// A lattice body that found no orientation keeping the gap to its
/// neighbours: body `j` of the source, in lattice cell `cell`, after `draws`
/// draws. An error type so that it crosses the module edge as one (start-up
/// builds its own message from the fields).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("lattice body {j} (cell {cell:?}) found no orientation keeping the gap to its neighbours in {draws} draw(s)")]
pub struct Blocked {
    pub j: u64,
    pub cell: [u64; 3],
    pub draws: u64,
}

/// The bodies (index, centre, orientation) of a lattice of `mesh` bodies
/// spaced closer than their bounding spheres whose centre may lie in
/// [lo, hi] (a superset: callers keep those they own). Each body keeps a
/// surface gap of at least `gap` to its neighbours: cells are decided colour
/// by colour (8 colours, so that adjacent cells differ; with spacing ≥
/// R + gap/2 only adjacent cells can meet), each body taking the first of
/// its orientation draws ([`orientation_draw`]; the identity alone without
/// `random_orientation`) whose mesh keeps `gap` to every adjacent body of
/// an earlier colour. A body's orientation thus depends only on bodies
/// within 7 cells, and the region is computed with a halo of
/// `CHECKED_HALO` cells: every rank count gets the same bodies. A body of the
/// region that finds no orientation in `MAX_ORIENTATION_DRAWS` is an error.
#[allow(clippy::too_many_arguments)]
pub fn checked_lattice_in(
    origin: Vector3<f64>,
    n: [u64; 3],
    spacing: f64,
    mesh: &TriMesh,
    gap: f64,
    seed: u64,
    random_orientation: bool,
    lo: Vector3<f64>,
    hi: Vector3<f64>,
) -> Result<Vec<Oriented>, Blocked> {
    let inner: Vec<(u64, u64)> = (0..3).map(|a| index_range(origin[a], spacing, 0.0, n[a], lo[a], hi[a])).collect();
    if inner.iter().any(|r| r.0 >= r.1) {
        return Ok(Vec::new());
    }
    let outer: Vec<(u64, u64)> = (0..3).map(|a| (inner[a].0.saturating_sub(CHECKED_HALO), (inner[a].1 + CHECKED_HALO).min(n[a]))).collect();
    let dims: Vec<u64> = outer.iter().map(|r| r.1 - r.0).collect();
    let slot = |c: [u64; 3]| ((c[0] - outer[0].0) + dims[0] * ((c[1] - outer[1].0) + dims[1] * (c[2] - outer[2].0))) as usize;
    let index = |c: [u64; 3]| c[0] + n[0] * (c[1] + n[1] * c[2]);
    let centre = |c: [u64; 3]| origin + spacing * Vector3::new(c[0] as f64, c[1] as f64, c[2] as f64);
    let inside = |c: [u64; 3], r: &[(u64, u64)]| (0..3).all(|a| c[a] >= r[a].0 && c[a] < r[a].1);
    let reach = 2.0 * mesh.bounding_radius() + gap;
    let draws = if random_orientation { MAX_ORIENTATION_DRAWS } else { 1 };
    let mut pose: Vec<Option<Isometry3<f64>>> = vec![None; (dims[0] * dims[1] * dims[2]) as usize];
    let mut blocked = None;
    for color in 0..8 {
        for k in outer[2].0..outer[2].1 {
            for j in outer[1].0..outer[1].1 {
                for i in outer[0].0..outer[0].1 {
                    let c = [i, j, k];
                    if lattice_color(c) != color {
                        continue;
                    }
                    let p = centre(c);
                    let mut near = Vec::new();
                    for dk in -1i64..=1 {
                        for dj in -1i64..=1 {
                            for di in -1i64..=1 {
                                let q = [i as i64 + di, j as i64 + dj, k as i64 + dk];
                                if q.iter().any(|&x| x < 0) || (di, dj, dk) == (0, 0, 0) {
                                    continue;
                                }
                                let q = q.map(|x| x as u64);
                                if inside(q, &outer) && (centre(q) - p).norm() < reach {
                                    if let Some(other) = pose[slot(q)] {
                                        near.push(other);
                                    }
                                }
                            }
                        }
                    }
                    let found = (0..draws).find_map(|d| {
                        let q = if random_orientation { orientation_draw(seed, index(c), d) } else { UnitQuaternion::identity() };
                        let at = Isometry3::from_parts(Translation3::from(p), q);
                        near.iter().all(|o| mesh_distance(mesh, &at, mesh, o, gap) >= gap).then_some(at)
                    });
                    match found {
                        Some(at) => pose[slot(c)] = Some(at),
                        // Near the halo's edge a body may be blocked by
                        // neighbours it would not have: only the region's count.
                        None if inside(c, &inner) && blocked.is_none() => blocked = Some(Blocked { j: index(c), cell: c, draws }),
                        None => {}
                    }
                }
            }
        }
    }
    if let Some(b) = blocked {
        return Err(b);
    }
    let mut out = Vec::new();
    for k in inner[2].0..inner[2].1 {
        for j in inner[1].0..inner[1].1 {
            for i in inner[0].0..inner[0].1 {
                let c = [i, j, k];
                if let Some(at) = pose[slot(c)] {
                    out.push((index(c), at.translation.vector, at.rotation));
                }
            }
        }
    }
    Ok(out)
}

/// Calls `f(j, centre, layer)` for the pyramid bodies (same order and
/// positions as `generate::pyramid`) whose centre may lie in [lo, hi].
#[allow(clippy::too_many_arguments)]
pub fn pyramid_in(
    origin: Vector3<f64>,
    n: u32,
    r: f64,
    gap: f64,
    layer_gap: f64,
    lo: Vector3<f64>,
    hi: Vector3<f64>,
    mut f: impl FnMut(u64, Vector3<f64>, u32),
) {
    let d = 2.0 * r + gap;
    let dz = d / 2f64.sqrt() + layer_gap;
    let mut before = 0u64;
    for layer in 0..n {
        let m = (n - layer) as u64;
        let z = origin.z + r + layer as f64 * dz;
        if z >= lo.z - dz && z <= hi.z + dz {
            let half = (m as f64 - 1.0) / 2.0;
            let (i0, i1) = index_range(origin.x, d, half, m, lo.x, hi.x);
            let (j0, j1) = index_range(origin.y, d, half, m, lo.y, hi.y);
            for j in j0..j1 {
                for i in i0..i1 {
                    let p = Vector3::new(origin.x + (i as f64 - half) * d, origin.y + (j as f64 - half) * d, z);
                    f(before + j * m + i, p, layer);
                }
            }
        }
        before += m * m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::generate::{lattice, pyramid};

    #[test]
    fn lattice_and_pyramid_by_region_match_the_whole() {
        let o = Vector3::new(0.1, -0.2, 0.3);
        let all = lattice(o, [5, 4, 3], 0.5);
        let mut got = vec![None; all.len()];
        // Four boxes covering space, each body claimed by the box holding it.
        let cut = Vector3::new(1.0, 0.4, 0.0);
        let inf = f64::INFINITY;
        for (lo, hi) in [
            (Vector3::new(-inf, -inf, -inf), Vector3::new(cut.x, cut.y, inf)),
            (Vector3::new(cut.x, -inf, -inf), Vector3::new(inf, cut.y, inf)),
            (Vector3::new(-inf, cut.y, -inf), Vector3::new(cut.x, inf, inf)),
            (Vector3::new(cut.x, cut.y, -inf), Vector3::new(inf, inf, inf)),
        ] {
            lattice_in(o, [5, 4, 3], 0.5, lo, hi, |j, p| {
                if p.x >= lo.x && p.x < hi.x && p.y >= lo.y && p.y < hi.y {
                    assert!(got[j as usize].replace(p).is_none());
                }
            });
        }
        assert_eq!(got.into_iter().map(Option::unwrap).collect::<Vec<_>>(), all);
        let all = pyramid(o, 6, 0.5, 0.1, 0.05);
        let mut got = vec![None; all.len()];
        for (lo, hi) in [(Vector3::repeat(-inf), Vector3::new(inf, inf, 1.5)), (Vector3::new(-inf, -inf, 1.5), Vector3::repeat(inf))] {
            pyramid_in(o, 6, 0.5, 0.1, 0.05, lo, hi, |j, p, layer| {
                if p.z >= lo.z && p.z < hi.z {
                    assert!(got[j as usize].replace((p, layer)).is_none());
                }
            });
        }
        assert_eq!(got.into_iter().map(Option::unwrap).collect::<Vec<_>>(), all);
    }

    #[test]
    fn checked_lattice_keeps_the_gap_and_is_the_same_by_region() {
        let t = TriMesh::tetrapod(0.62, 0.124, 9);
        let (o, n, s, gap) = (Vector3::new(0.1, -0.2, 0.7), [5u64, 4, 3], 0.9, 0.01);
        let inf = f64::INFINITY;
        let all = checked_lattice_in(o, n, s, &t, gap, 6, true, Vector3::repeat(-inf), Vector3::repeat(inf)).unwrap();
        assert_eq!(all.iter().map(|b| b.0).collect::<Vec<_>>(), (0..60).collect::<Vec<_>>());
        // Regions: each body claimed by the box holding its centre.
        let cut = Vector3::new(1.2, 0.5, 1.5);
        let mut got = vec![None; all.len()];
        for (lo, hi) in [
            (Vector3::new(-inf, -inf, -inf), Vector3::new(cut.x, cut.y, inf)),
            (Vector3::new(cut.x, -inf, -inf), Vector3::new(inf, cut.y, cut.z)),
            (Vector3::new(cut.x, -inf, cut.z), Vector3::new(inf, cut.y, inf)),
            (Vector3::new(-inf, cut.y, -inf), Vector3::new(inf, inf, inf)),
        ] {
            for (j, p, q) in checked_lattice_in(o, n, s, &t, gap, 6, true, lo, hi).unwrap() {
                if (0..3).all(|a| p[a] >= lo[a] && p[a] < hi[a]) {
                    assert!(got[j as usize].replace((j, p, q)).is_none());
                }
            }
        }
        assert_eq!(got.into_iter().map(Option::unwrap).collect::<Vec<_>>(), all);
        let pose = |b: &(u64, Vector3<f64>, UnitQuaternion<f64>)| Isometry3::from_parts(Translation3::from(b.1), b.2);
        let mut redrawn = 0;
        let mut closest = f64::INFINITY;
        for (x, a) in all.iter().enumerate() {
            redrawn += usize::from(a.2 != orientation_at(6, a.0));
            for b in &all[x + 1..] {
                closest = closest.min(mesh_distance(&t, &pose(a), &t, &pose(b), 1.0));
            }
        }
        assert!(closest >= gap, "two bodies {closest} apart");
        assert!(redrawn > 0, "no orientation redrawn: the test checks nothing");
        // The same orientations alone (no checks) overlap.
        let mut overlaps = 0;
        for (x, a) in all.iter().enumerate() {
            for b in &all[x + 1..] {
                let (pa, pb) = (Isometry3::from_parts(Translation3::from(a.1), orientation_at(6, a.0)), Isometry3::from_parts(Translation3::from(b.1), orientation_at(6, b.0)));
                overlaps += usize::from(mesh_distance(&t, &pa, &t, &pb, gap) < gap);
            }
        }
        assert!(overlaps > 0);
    }

    #[test]
    fn checked_lattice_without_random_orientation_reports_the_blocked_body() {
        let t = TriMesh::tetrapod(0.62, 0.124, 9);
        let inf = f64::INFINITY;
        // Two bodies, the same orientation, 0.3 m apart: the cores overlap.
        let e = checked_lattice_in(Vector3::zeros(), [2, 1, 1], 0.3, &t, 0.01, 1, false, Vector3::repeat(-inf), Vector3::repeat(inf));
        assert_eq!(e, Err(Blocked { j: 1, cell: [1, 0, 0], draws: 1 }));
    }

}
