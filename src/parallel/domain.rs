//! Spatial decomposition (step 1 of the time step): the scene box cut into a
//! Cartesian grid of rank boxes. Boxes on the grid's faces reach to infinity,
//! so every point has exactly one owner.
use nalgebra::Vector3;

/// A Cartesian process grid over the box [lo, hi].
#[derive(Clone, Debug, PartialEq)]
pub struct Domain {
    pub lo: Vector3<f64>,
    pub hi: Vector3<f64>,
    /// Ranks along x, y, z; their product is the rank count.
    pub dims: [usize; 3],
}

impl Domain {
    /// Chooses the factorisation of `ranks` that makes the rank boxes closest
    /// to cubes (least total cut area); in 2D the z axis is never cut.
    pub fn new(lo: Vector3<f64>, hi: Vector3<f64>, ranks: usize, dim: u8) -> Self {
        let ext = (hi - lo).map(|e| e.max(1e-300));
        let mut best = ([ranks, 1, 1], f64::INFINITY);
        for px in 1..=ranks {
            if ranks % px != 0 {
                continue;
            }
            for py in 1..=ranks / px {
                if (ranks / px) % py != 0 {
                    continue;
                }
                let pz = ranks / px / py;
                if dim == 2 && pz != 1 {
                    continue;
                }
                // Area of the internal cuts, normalised by the box size.
                let area = (px - 1) as f64 * ext.y * ext.z
                    + (py - 1) as f64 * ext.x * ext.z
                    + (pz - 1) as f64 * ext.x * ext.y;
                if area < best.1 - 1e-12 * area.abs() {
                    best = ([px, py, pz], area);
                }
            }
        }
        Self { lo, hi, dims: best.0 }
    }

    pub fn ranks(&self) -> usize {
        self.dims.iter().product()
    }

    fn cell_of(&self, p: &Vector3<f64>, axis: usize) -> usize {
        let n = self.dims[axis];
        let t = (p[axis] - self.lo[axis]) / (self.hi[axis] - self.lo[axis]) * n as f64;
        if t.is_nan() {
            return 0;
        }
        (t.floor().max(0.0) as usize).min(n - 1)
    }

    fn rank_of(&self, c: [usize; 3]) -> usize {
        c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])
    }

    fn coords(&self, rank: usize) -> [usize; 3] {
        [rank % self.dims[0], (rank / self.dims[0]) % self.dims[1], rank / (self.dims[0] * self.dims[1])]
    }

    /// The rank whose box holds `p`.
    pub fn owner(&self, p: &Vector3<f64>) -> usize {
        self.rank_of([self.cell_of(p, 0), self.cell_of(p, 1), self.cell_of(p, 2)])
    }

    /// Box of `rank`; faces on the boundary of the grid are at ±infinity.
    pub fn rank_box(&self, rank: usize) -> (Vector3<f64>, Vector3<f64>) {
        let c = self.coords(rank);
        let mut lo = Vector3::zeros();
        let mut hi = Vector3::zeros();
        for a in 0..3 {
            let h = (self.hi[a] - self.lo[a]) / self.dims[a] as f64;
            lo[a] = if c[a] == 0 { f64::NEG_INFINITY } else { self.lo[a] + c[a] as f64 * h };
            hi[a] = if c[a] + 1 == self.dims[a] { f64::INFINITY } else { self.lo[a] + (c[a] + 1) as f64 * h };
        }
        (lo, hi)
    }

    /// Ranks (in increasing order) whose box lies within `reach` of `p`.
    pub fn ranks_near(&self, p: &Vector3<f64>, reach: f64) -> Vec<usize> {
        let r = Vector3::repeat(reach);
        let (a, b) = (p - r, p + r);
        let (mut lo, mut hi) = ([0; 3], [0; 3]);
        for axis in 0..3 {
            lo[axis] = self.cell_of(&a, axis);
            hi[axis] = self.cell_of(&b, axis);
        }
        let mut out = Vec::new();
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                for x in lo[0]..=hi[0] {
                    let rank = self.rank_of([x, y, z]);
                    if distance_to_box(p, &self.rank_box(rank)) <= reach {
                        out.push(rank);
                    }
                }
            }
        }
        out
    }
}

/// Euclidean distance from `p` to the box (0 inside).
pub fn distance_to_box(p: &Vector3<f64>, b: &(Vector3<f64>, Vector3<f64>)) -> f64 {
    let mut d2 = 0.0;
    for a in 0..3 {
        let d = (b.0[a] - p[a]).max(p[a] - b.1[a]).max(0.0);
        d2 += d * d;
    }
    d2.sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_follow_the_box_shape() {
        let lo = Vector3::zeros();
        assert_eq!(Domain::new(lo, Vector3::new(4.0, 1.0, 1.0), 4, 3).dims, [4, 1, 1]);
        assert_eq!(Domain::new(lo, Vector3::new(1.0, 1.0, 1.0), 8, 3).dims, [2, 2, 2]);
        assert_eq!(Domain::new(lo, Vector3::new(1.0, 1.0, 1.0), 4, 2).dims[2], 1);
        assert_eq!(Domain::new(lo, Vector3::new(1.0, 1.0, 1.0), 3, 3).ranks(), 3);
    }

    #[test]
    fn every_point_has_one_owner_inside_its_box() {
        let d = Domain::new(Vector3::zeros(), Vector3::new(3.0, 2.0, 1.0), 6, 3);
        let mut rng = crate::scene::generate::SplitMix64::new(3);
        for _ in 0..1000 {
            let p = Vector3::new(rng.uniform() * 5.0 - 1.0, rng.uniform() * 4.0 - 1.0, rng.uniform() * 3.0 - 1.0);
            let r = d.owner(&p);
            assert_eq!(distance_to_box(&p, &d.rank_box(r)), 0.0);
            assert!(d.ranks_near(&p, 0.0).contains(&r));
            // Brute force agrees with the grid query.
            let reach = 0.4;
            let brute: Vec<usize> = (0..6).filter(|&k| distance_to_box(&p, &d.rank_box(k)) <= reach).collect();
            assert_eq!(d.ranks_near(&p, reach), brute);
        }
    }
}
