//! Scene generators: lattice, cannonball pyramid, random loose pack. All are
//! deterministic and indexable: a body's position, radius and orientation
//! follow from its index within the generator (the random pack: from its cell
//! of a global grid), so each rank computes only the bodies of its region and
//! every rank count gets the same scene (see `crate::startup`).
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use std::collections::HashMap;

/// Centres of an nx × ny × nz lattice starting at `origin` with `spacing`.
pub fn lattice(origin: Vector3<f64>, n: [u64; 3], spacing: f64) -> Vec<Vector3<f64>> {
    let mut out = Vec::with_capacity((n[0] * n[1] * n[2]) as usize);
    for k in 0..n[2] {
        for j in 0..n[1] {
            for i in 0..n[0] {
                out.push(origin + spacing * Vector3::new(i as f64, j as f64, k as f64));
            }
        }
    }
    out
}

/// A square (cannonball) pyramid of spheres of radius `r`: `n` along the base
/// edge, neighbours in a layer `gap` apart, each layer in the hollows of the
/// one below (height d/√2 with d = 2r + gap) plus `layer_gap`. `origin` is the
/// centre of the base layer's bottom. Returns (centre, layer) with layer 0
/// the base; n(n+1)(2n+1)/6 spheres.
pub fn pyramid(origin: Vector3<f64>, n: u32, r: f64, gap: f64, layer_gap: f64) -> Vec<(Vector3<f64>, u32)> {
    let d = 2.0 * r + gap;
    let dz = d / 2f64.sqrt() + layer_gap;
    let mut out = Vec::new();
    for layer in 0..n {
        let m = n - layer;
        let half = (m as f64 - 1.0) / 2.0;
        for j in 0..m {
            for i in 0..m {
                let p = origin
                    + Vector3::new((i as f64 - half) * d, (j as f64 - half) * d, r + layer as f64 * dz);
                out.push((p, layer));
            }
        }
    }
    out
}

/// SplitMix64: a tiny generator whose stream is fixed forever, so scenes are
/// reproducible across versions and machines.
pub struct SplitMix64(u64);

/// The increment of SplitMix64's state per draw.
const GOLDEN_GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    /// The stream of `seed` after `n` draws (the state is seed + n γ), so
    /// draw n of a stream costs O(1).
    pub fn at(seed: u64, n: u64) -> Self {
        Self(seed.wrapping_add(n.wrapping_mul(GOLDEN_GAMMA)))
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(GOLDEN_GAMMA);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Positions and velocities of generated bodies.
type PositionsVelocities = (Vec<Vector3<f64>>, Vec<Vector3<f64>>);

/// Random sequential addition of `count` bodies of bounding radius `r` with
/// surface gaps of at least `gap` inside [lo, hi]. In 2D the bodies lie in
/// z = 0. Returns positions and velocities (uniform in ±speed per moving
/// axis), or the number placed when the box is too full.
#[allow(clippy::too_many_arguments)]
pub fn random_pack(
    lo: Vector3<f64>,
    hi: Vector3<f64>,
    count: u64,
    r: f64,
    gap: f64,
    dim: u8,
    seed: u64,
    speed: f64,
) -> Result<PositionsVelocities, u64> {
    let mut rng = SplitMix64::new(seed);
    let d = 2.0 * r + gap;
    let cell = |p: &Vector3<f64>| [(p.x / d).floor() as i64, (p.y / d).floor() as i64, (p.z / d).floor() as i64];
    let mut grid: HashMap<[i64; 3], Vec<usize>> = HashMap::new();
    let mut pos: Vec<Vector3<f64>> = Vec::with_capacity(count as usize);
    // Near jamming the acceptance rate collapses: give up after this many
    // misses in a row.
    const MAX_MISSES: u64 = 50_000;
    let mut misses = 0;
    while (pos.len() as u64) < count {
        misses += 1;
        if misses > MAX_MISSES {
            return Err(pos.len() as u64);
        }
        let mut p = Vector3::zeros();
        for k in 0..3 {
            p[k] = lo[k] + r + rng.uniform() * (hi[k] - lo[k] - 2.0 * r);
        }
        if dim == 2 {
            p.z = 0.0;
        }
        let c = cell(&p);
        let free = (-1..=1).all(|i| {
            (-1..=1).all(|j| {
                (-1..=1).all(|k| {
                    grid.get(&[c[0] + i, c[1] + j, c[2] + k])
                        .is_none_or(|v| v.iter().all(|&q| (pos[q] - p).norm() >= d))
                })
            })
        });
        if free {
            grid.entry(c).or_default().push(pos.len());
            pos.push(p);
            misses = 0;
        }
    }
    let vel = pos
        .iter()
        .map(|_| {
            let mut v = Vector3::zeros();
            for k in 0..dim as usize {
                v[k] = speed * (2.0 * rng.uniform() - 1.0);
            }
            v
        })
        .collect();
    Ok((pos, vel))
}

/// `count` orientations uniform on SO(3) (Shoemake's subgroup algorithm,
/// Graphics Gems III), from their own stream of `seed` so the positions of
/// a random pack do not depend on whether its bodies are turned.
pub fn random_orientations(count: usize, seed: u64) -> Vec<UnitQuaternion<f64>> {
    let mut rng = SplitMix64::new(seed ^ 0x6F72_6965_6E74_6174);
    let tau = std::f64::consts::TAU;
    (0..count)
        .map(|_| {
            let (u1, u2, u3) = (rng.uniform(), rng.uniform(), rng.uniform());
            let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
            let q = Quaternion::new(b * (tau * u3).cos(), a * (tau * u2).sin(), a * (tau * u2).cos(), b * (tau * u3).sin());
            UnitQuaternion::from_quaternion(q)
        })
        .collect()
}

/// Orientation `j` of the stream of [`random_orientations`]`(_, seed)`,
/// without drawing the ones before it.
pub fn orientation_at(seed: u64, j: u64) -> UnitQuaternion<f64> {
    let mut rng = SplitMix64::at(seed ^ 0x6F72_6965_6E74_6174, 3 * j);
    let tau = std::f64::consts::TAU;
    let (u1, u2, u3) = (rng.uniform(), rng.uniform(), rng.uniform());
    let (a, b) = ((1.0 - u1).sqrt(), u1.sqrt());
    let q = Quaternion::new(b * (tau * u3).cos(), a * (tau * u2).sin(), a * (tau * u2).cos(), b * (tau * u3).sin());
    UnitQuaternion::from_quaternion(q)
}

/// Index pairs (a < b, sorted) of spheres (centre, radius) that touch or
/// overlap, by a uniform grid of cell size twice the largest radius.
pub fn close_pairs(spheres: &[(Vector3<f64>, f64)]) -> Vec<(usize, usize)> {
    let rmax = spheres.iter().map(|s| s.1).fold(0.0, f64::max);
    if spheres.is_empty() || rmax <= 0.0 {
        return Vec::new();
    }
    let h = 2.0 * rmax;
    let cell = |p: &Vector3<f64>| [(p.x / h).floor() as i64, (p.y / h).floor() as i64, (p.z / h).floor() as i64];
    let mut grid: HashMap<[i64; 3], Vec<usize>> = HashMap::new();
    for (i, s) in spheres.iter().enumerate() {
        grid.entry(cell(&s.0)).or_default().push(i);
    }
    let mut out = Vec::new();
    for (a, s) in spheres.iter().enumerate() {
        let c = cell(&s.0);
        for i in -1..=1 {
            for j in -1..=1 {
                for k in -1..=1 {
                    for &b in grid.get(&[c[0] + i, c[1] + j, c[2] + k]).map(|v| v.as_slice()).unwrap_or(&[]) {
                        if b > a && (spheres[b].0 - s.0).norm() <= s.1 + spheres[b].1 {
                            out.push((a, b));
                        }
                    }
                }
            }
        }
    }
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pyramid_count_and_touching_layers() {
        let r = 1.0;
        let p = pyramid(Vector3::zeros(), 20, r, 0.0, 0.0);
        assert_eq!(p.len(), 2870);
        // With no gaps each upper sphere touches exactly four below.
        let pts: Vec<_> = p.iter().map(|(x, _)| (*x, r)).collect();
        let pairs = close_pairs(&pts);
        let top = p.len() - 1;
        let below = pairs.iter().filter(|&&(a, b)| b == top || a == top).count();
        assert_eq!(below, 4);
        for &(a, b) in &pairs {
            assert!(((pts[a].0 - pts[b].0).norm() - 2.0 * r).abs() < 1e-12);
        }
    }

    #[test]
    fn random_orientations_are_uniform_and_deterministic() {
        let q = random_orientations(20_000, 3);
        assert_eq!(q, random_orientations(20_000, 3));
        assert_ne!(q[0], random_orientations(1, 4)[0]);
        // Uniform on SO(3): a body axis turned by q is uniform on the
        // sphere (mean 0, E[z^2] = 1/3); the angle has E[θ] = π/2 + 2/π.
        let z: Vec<Vector3<f64>> = q.iter().map(|q| q * Vector3::z()).collect();
        let n = z.len() as f64;
        let mean = z.iter().sum::<Vector3<f64>>() / n;
        assert!(mean.norm() < 0.03, "{mean}");
        let zz = z.iter().map(|v| v.z * v.z).sum::<f64>() / n;
        assert!((zz - 1.0 / 3.0).abs() < 0.01, "{zz}");
        let angle = q.iter().map(|q| q.angle()).sum::<f64>() / n;
        let expected = std::f64::consts::FRAC_PI_2 + 2.0 / std::f64::consts::PI;
        assert!((angle - expected).abs() < 0.02, "{angle} vs {expected}");
    }

    #[test]
    fn orientation_at_jumps_into_the_stream() {
        let q = random_orientations(50, 9);
        for j in [0usize, 1, 17, 49] {
            assert_eq!(orientation_at(9, j as u64), q[j]);
        }
    }

    #[test]
    fn random_pack_has_no_overlaps_and_is_deterministic() {
        let lo = Vector3::zeros();
        let hi = Vector3::new(10.0, 10.0, 10.0);
        let (a, _) = random_pack(lo, hi, 300, 0.4, 0.0, 3, 7, 0.0).unwrap();
        let (b, _) = random_pack(lo, hi, 300, 0.4, 0.0, 3, 7, 0.0).unwrap();
        assert_eq!(a, b);
        let pts: Vec<_> = a.iter().map(|x| (*x, 0.4)).collect();
        assert!(close_pairs(&pts).is_empty());
        assert!(a.iter().all(|p| (0..3).all(|k| p[k] >= 0.4 && p[k] <= 9.6)));
        assert!(random_pack(lo, hi, 5_000, 0.4, 0.0, 3, 7, 0.0).unwrap_err() > 300);
    }
}
