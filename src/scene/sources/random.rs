//! The random loose pack by cells: a global grid with fixed quotas, each
//! cell filled from its own stream, so every rank count gets the same bodies.
use super::lattice::index_range;
use super::RadiusClasses;
use crate::scene::generate::SplitMix64;
use nalgebra::Vector3;
use std::collections::HashMap;

/// Salt of the per-cell streams of the random pack.
const CELL_SALT: u64 = 0x6365_6c6c_0000_0001;
/// Target bodies per cell of the random pack's grid: large enough that a
/// cell's fixed quota is rarely blocked by an unlucky arrangement (the pack
/// reaches a solid fraction of about 0.25; 8 a cell gave 0.2), small enough
/// that a rank holds many cells.
const BODIES_PER_CELL: f64 = 27.0;
/// A body of the random pack gives up after this many misses in a row ...
const MAX_MISSES: u64 = 2_000;
/// ... and its cell starts over (same stream, further on) at most this
/// many times: with ~8 bodies a cell, an unlucky arrangement of the first
/// ones is often what blocks the last.
const MAX_RESTARTS: u64 = 200;

/// The global grid of the random pack: m[0] × m[1] × m[2] cells over the
/// box, each at least one exclusion distance wide (or alone on its axis).
/// Cell k (x fastest) takes bodies floor(count·W_k/W) .. floor(count·W_{k+1}/W),
/// W_k the summed weights of the cells before it, a cell's weight the
/// volume its bodies' centres may take (less at the walls), in integers so
/// that every rank gets the same quotas.
#[derive(Clone, Debug, PartialEq)]
pub struct CellGrid {
    pub lo: Vector3<f64>,
    pub hi: Vector3<f64>,
    pub m: [u64; 3],
    pub h: Vector3<f64>,
    pub count: u64,
    /// Per axis: exclusive prefix sums of the cells' integer weights (m + 1 entries).
    prefix: [Vec<u64>; 3],
}

/// Integer weight of a full cell along one axis.
const WEIGHT_SCALE: f64 = 4096.0;

impl CellGrid {
    /// `d`: the largest centre distance at which two bodies can overlap
    /// (2 r_max + gap).
    /// `r`: the mean radius, which keeps centres off the walls.
    pub fn new(lo: Vector3<f64>, hi: Vector3<f64>, count: u64, d: f64, r: f64, dim: u8) -> Self {
        let axes = if dim == 2 { 2 } else { 3 };
        let ext = hi - lo;
        let vol: f64 = (0..axes).map(|a| ext[a]).product();
        let target = (BODIES_PER_CELL * vol / count.max(1) as f64).powf(1.0 / axes as f64).max(d);
        let mut m = [1u64; 3];
        for a in 0..axes {
            m[a] = ((ext[a] / target).floor() as u64).max(1);
        }
        let h = Vector3::new(ext.x / m[0] as f64, ext.y / m[1] as f64, ext.z / m[2] as f64);
        let prefix = [0, 1, 2].map(|a| {
            let mut p = vec![0u64];
            for i in 0..m[a] {
                let w = if a >= axes {
                    1
                } else {
                    let c0 = (lo[a] + i as f64 * h[a]).max(lo[a] + r);
                    let c1 = (lo[a] + (i + 1) as f64 * h[a]).min(hi[a] - r);
                    (((c1 - c0) / h[a]).max(0.0) * WEIGHT_SCALE).round() as u64
                };
                p.push(p[i as usize] + w.max(1));
            }
            p
        });
        Self { lo, hi, m, h, count, prefix }
    }

    /// Summed weights of the cells before cell k (x fastest).
    fn weight_before(&self, k: u64) -> u128 {
        let [i, j, l] = self.coords(k).map(|x| x as usize);
        let [px, py, pz] = &self.prefix;
        let (tx, ty) = (px[px.len() - 1] as u128, py[py.len() - 1] as u128);
        let wz = (pz[l + 1] - pz[l]) as u128;
        let wy = (py[j + 1] - py[j]) as u128;
        pz[l] as u128 * ty * tx + wz * (py[j] as u128 * tx + wy * px[i] as u128)
    }

    pub fn cells(&self) -> u64 {
        self.m[0] * self.m[1] * self.m[2]
    }

    pub fn index(&self, c: [u64; 3]) -> u64 {
        c[0] + self.m[0] * (c[1] + self.m[1] * c[2])
    }

    pub fn coords(&self, k: u64) -> [u64; 3] {
        [k % self.m[0], (k / self.m[0]) % self.m[1], k / (self.m[0] * self.m[1])]
    }

    /// Bodies in cells before cell `k`.
    pub fn before(&self, k: u64) -> u64 {
        if k >= self.cells() {
            return self.count;
        }
        let total = self.weight_before(self.cells() - 1) + {
            let [px, py, pz] = &self.prefix;
            let last = |p: &Vec<u64>| (p[p.len() - 1] - p[p.len() - 2]) as u128;
            last(pz) * last(py) * last(px)
        };
        (self.count as u128 * self.weight_before(k) / total) as u64
    }

    /// Phase in which a cell is filled: cells of one colour are never
    /// neighbours, so they fill independently.
    pub fn color(c: [u64; 3]) -> usize {
        (c[0] % 2 + 2 * (c[1] % 2) + 4 * (c[2] % 2)) as usize
    }

    pub fn cell_box(&self, c: [u64; 3]) -> (Vector3<f64>, Vector3<f64>) {
        let a = self.lo + Vector3::new(c[0] as f64 * self.h.x, c[1] as f64 * self.h.y, c[2] as f64 * self.h.z);
        // The last cell ends exactly at hi.
        let mut b = a + self.h;
        for ax in 0..3 {
            if c[ax] + 1 == self.m[ax] {
                b[ax] = self.hi[ax];
            }
        }
        (a, b)
    }

    pub fn centre(&self, c: [u64; 3]) -> Vector3<f64> {
        let (a, b) = self.cell_box(c);
        0.5 * (a + b)
    }

    /// Cells whose centre may lie in [lo, hi] (a superset).
    pub fn cells_in(&self, lo: Vector3<f64>, hi: Vector3<f64>) -> Vec<[u64; 3]> {
        let r: Vec<(u64, u64)> = (0..3).map(|a| index_range(self.lo[a] + 0.5 * self.h[a], self.h[a], 0.0, self.m[a], lo[a], hi[a])).collect();
        let mut out = Vec::new();
        for k in r[2].0..r[2].1 {
            for j in r[1].0..r[1].1 {
                for i in r[0].0..r[0].1 {
                    out.push([i, j, k]);
                }
            }
        }
        out
    }

    /// The (up to 26) cells next to `c`.
    pub fn neighbours(&self, c: [u64; 3]) -> Vec<[u64; 3]> {
        let mut out = Vec::with_capacity(26);
        for dk in -1i64..=1 {
            for dj in -1i64..=1 {
                for di in -1i64..=1 {
                    if di == 0 && dj == 0 && dk == 0 {
                        continue;
                    }
                    let q = [c[0] as i64 + di, c[1] as i64 + dj, c[2] as i64 + dk];
                    if (0..3).all(|a| q[a] >= 0 && q[a] < self.m[a] as i64) {
                        out.push([q[0] as u64, q[1] as u64, q[2] as u64]);
                    }
                }
            }
        }
        out
    }
}

/// Bodies placed so far (own and neighbours'), hashed on a grid of the
/// exclusion distance for the overlap checks.
pub struct Packing {
    d: f64,
    grid: HashMap<[i64; 3], Vec<u32>>,
    pub position: Vec<Vector3<f64>>,
    pub radius: Vec<f64>,
}

impl Packing {
    /// `d`: the largest centre distance at which two bodies can overlap.
    pub fn new(d: f64) -> Self {
        Self { d, grid: HashMap::new(), position: Vec::new(), radius: Vec::new() }
    }

    fn key(&self, p: &Vector3<f64>) -> [i64; 3] {
        [(p.x / self.d).floor() as i64, (p.y / self.d).floor() as i64, (p.z / self.d).floor() as i64]
    }

    pub fn len(&self) -> usize {
        self.position.len()
    }

    pub fn is_empty(&self) -> bool {
        self.position.is_empty()
    }

    /// Removes the bodies inserted after the first `n`.
    pub fn truncate(&mut self, n: usize) {
        while self.position.len() > n {
            let p = self.position.pop().unwrap_or_default();
            self.radius.pop();
            let k = self.key(&p);
            if let Some(v) = self.grid.get_mut(&k) {
                v.pop();
                if v.is_empty() {
                    self.grid.remove(&k);
                }
            }
        }
    }

    pub fn insert(&mut self, p: Vector3<f64>, r: f64) {
        let k = self.key(&p);
        self.grid.entry(k).or_default().push(self.position.len() as u32);
        self.position.push(p);
        self.radius.push(r);
    }

    /// True when a body of radius `r` at `p` keeps a surface gap of at least
    /// `gap` to every body held.
    pub fn free(&self, p: &Vector3<f64>, r: f64, gap: f64) -> bool {
        let c = self.key(p);
        (-1..=1).all(|i| {
            (-1..=1).all(|j| {
                (-1..=1).all(|k| {
                    self.grid.get(&[c[0] + i, c[1] + j, c[2] + k]).is_none_or(|v| {
                        v.iter().all(|&q| (self.position[q as usize] - p).norm() >= self.radius[q as usize] + r + gap)
                    })
                })
            })
        })
    }
}

/// A body of the random pack: index within its source, centre, class, velocity.
#[derive(Clone, Debug, PartialEq)]
pub struct Placed {
    pub j: u64,
    pub position: Vector3<f64>,
    pub class: usize,
    pub velocity: Vector3<f64>,
}

/// Fills cell `c` of the random pack with its quota, from the cell's own
/// stream (seeded by `seed` and the cell index): each body draws its radius
/// class, then centres uniform in the cell (within the box by its radius)
/// until one keeps `gap` to every body in `packing`, which must hold the
/// bodies of every neighbouring cell of an earlier colour. Returns the
/// bodies (also inserted into `packing`), or the number placed when a body
/// missed `MAX_MISSES` times in a row.
#[allow(clippy::too_many_arguments)]
pub fn fill_cell(
    grid: &CellGrid,
    c: [u64; 3],
    classes: &RadiusClasses,
    gap: f64,
    speed: f64,
    dim: u8,
    seed: u64,
    packing: &mut Packing,
) -> Result<Vec<Placed>, u64> {
    let k = grid.index(c);
    let first = grid.before(k);
    let quota = grid.before(k + 1) - first;
    let mut rng = SplitMix64::new(SplitMix64::new(seed ^ CELL_SALT ^ k.wrapping_mul(0xD1B5_4A32_D192_ED03)).next_u64());
    let (clo, chi) = grid.cell_box(c);
    let axes = if dim == 2 { 2 } else { 3 };
    let mut out = Vec::with_capacity(quota as usize);
    let held = packing.len();
    let mut best = 0;
    'restart: for _ in 0..MAX_RESTARTS {
        packing.truncate(held);
        out.clear();
        for s in 0..quota {
            let class = if classes.radius.len() == 1 { 0 } else { classes.pick(rng.uniform()) };
            let r = classes.radius[class];
            let mut misses = 0;
            loop {
                let mut p = Vector3::zeros();
                for a in 0..axes {
                    let (a0, a1) = (clo[a].max(grid.lo[a] + r), chi[a].min(grid.hi[a] - r));
                    p[a] = a0 + rng.uniform() * (a1 - a0).max(0.0);
                }
                if packing.free(&p, r, gap) {
                    packing.insert(p, r);
                    out.push(Placed { j: first + s, position: p, class, velocity: Vector3::zeros() });
                    break;
                }
                misses += 1;
                if misses >= MAX_MISSES {
                    best = best.max(s);
                    continue 'restart;
                }
            }
        }
        break;
    }
    if (out.len() as u64) < quota {
        packing.truncate(held);
        return Err(best);
    }
    for b in &mut out {
        for a in 0..dim as usize {
            b.velocity[a] = speed * (2.0 * rng.uniform() - 1.0);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::generate::close_pairs;

    #[test]
    fn cell_pack_places_the_count_without_overlap_in_any_cell_order() {
        let (lo, hi) = (Vector3::zeros(), Vector3::new(6.0, 4.0, 4.0));
        let classes = RadiusClasses { shape: vec![0, 1], radius: vec![0.1, 0.15], cumulative: vec![0.5, 1.0] };
        let grid = CellGrid::new(lo, hi, 2000, 0.3 + 0.01, 0.125, 3);
        assert!(grid.cells() >= 8, "{:?}", grid.m);
        let run = |reverse: bool| {
            let mut packing = Packing::new(0.31);
            let mut out = Vec::new();
            for color in 0..8 {
                let mut cells: Vec<u64> = (0..grid.cells()).filter(|&k| CellGrid::color(grid.coords(k)) == color).collect();
                if reverse {
                    cells.reverse();
                }
                for k in cells {
                    out.extend(fill_cell(&grid, grid.coords(k), &classes, 0.01, 1.0, 3, 5, &mut packing).unwrap());
                }
            }
            out.sort_by_key(|b| b.j);
            out
        };
        let a = run(false);
        assert_eq!(a, run(true));
        assert_eq!(a.iter().map(|b| b.j).collect::<Vec<_>>(), (0..2000).collect::<Vec<_>>());
        let spheres: Vec<_> = a.iter().map(|b| (b.position, classes.radius[b.class] + 0.005)).collect();
        assert!(close_pairs(&spheres).is_empty());
        for b in &a {
            let r = classes.radius[b.class];
            assert!((0..3).all(|k| b.position[k] >= lo[k] + r && b.position[k] <= hi[k] - r));
        }
        let big = a.iter().filter(|b| b.class == 1).count();
        assert!((big as f64 - 1000.0).abs() < 100.0, "{big} of 2000 in the larger class");
    }
}
