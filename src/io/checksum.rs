//! The checkpoint's checksum: a wrapping sum of a 64-bit mix of (dataset,
//! element index, element bits) over every element, plus a hash of the
//! attributes and shapes. It does not depend on how the rows were split
//! among ranks, so a file is checked on read at any rank count.
use crate::body::Shape;

pub(super) fn mix(mut z: u64) -> u64 {
    // splitmix64 finaliser
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn name_salt(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x0100_0000_01b3))
}

/// Order-independent checksum of elements `first..first + bits.len()` of a
/// dataset: sums combine across slabs.
pub(super) fn sum_elems(name: &str, first: u64, bits: impl Iterator<Item = u64>) -> u64 {
    let salt = name_salt(name);
    bits.enumerate().fold(0u64, |acc, (i, b)| acc.wrapping_add(mix(b ^ mix(salt ^ mix(first + i as u64)))))
}

pub(super) fn hash_bytes(h: u64, bytes: &[u8]) -> u64 {
    let mut h = mix(h ^ bytes.len() as u64);
    for c in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = mix(h ^ u64::from_le_bytes(w));
    }
    h
}

pub(super) struct Scalars<'a> {
    pub(super) version: &'a str,
    pub(super) solver: &'a str,
    pub(super) dim: u8,
    pub(super) config: &'a str,
    pub(super) step: u64,
    pub(super) time: f64,
    pub(super) dt: f64,
    pub(super) n_bodies: u64,
    /// The solver state's version and (name, rows, n_u, n_f) of its tables.
    pub(super) state: (u32, Vec<(String, u64, usize, usize)>),
    /// The same of the history tables (none in format 2).
    pub(super) history: Vec<(String, u64, usize, usize)>,
    pub(super) format_version: u32,
    pub(super) domain: &'a str,
    pub(super) shapes: &'a [Shape],
    pub(super) shape_names: &'a [String],
}

pub(super) fn scalars_hash(s: &Scalars) -> u64 {
    let mut h = 0x5354_4946_4647_5241u64;
    for t in [s.version, s.solver, s.config, s.domain] {
        h = hash_bytes(h, t.as_bytes());
    }
    for v in [s.dim as u64, s.step, s.time.to_bits(), s.dt.to_bits(), s.n_bodies, s.format_version as u64, s.state.0 as u64] {
        h = mix(h ^ v);
    }
    for (name, n, nu, nf) in s.state.1.iter().chain(&s.history) {
        h = hash_bytes(h, name.as_bytes());
        h = mix(h ^ n ^ mix(*nu as u64) ^ mix(mix(*nf as u64)));
    }
    for (k, shape) in s.shapes.iter().enumerate() {
        h = hash_bytes(h, s.shape_names.get(k).map(|x| x.as_bytes()).unwrap_or(b""));
        match shape {
            Shape::Sphere { radius } => h = mix(h ^ mix(0) ^ radius.to_bits()),
            Shape::Mesh(m) => {
                h = mix(h ^ mix(1) ^ m.vertices.len() as u64 ^ ((m.triangles.len() as u64) << 32));
                for v in &m.vertices {
                    for x in v.iter() {
                        h = mix(h ^ x.to_bits());
                    }
                }
                for t in &m.triangles {
                    h = mix(h ^ t[0] as u64 ^ ((t[1] as u64) << 21) ^ ((t[2] as u64) << 42));
                }
            }
        }
    }
    h
}
