//! The contact list produced by detection (time-step stage 2 "contact") and
//! read by the solvers (stage 3): one `Contact` type and its struct-of-arrays
//! store `Contacts`.
use nalgebra::Vector3;

/// Global id of wall `w` in `Contact::b` is `WALL_ID_BASE + w`; no body id
/// reaches this value.
pub const WALL_ID_BASE: u64 = 1 << 63;

/// Local index `Contact::ib` of a wall (walls are not bodies).
pub const WALL_INDEX: usize = usize::MAX;

/// One contact between body `a` and body (or wall) `b`.
///
/// Conventions: `a` has the smaller global id (a wall is always `b`, since
/// wall ids start at [`WALL_ID_BASE`]); `normal` points from `a` to `b`; `gap`
/// is measured along `normal` between the two surfaces.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// Global id of the first body (the smaller id).
    pub a: u64,
    /// Global id of the second body, or `WALL_ID_BASE + wall index`.
    pub b: u64,
    /// Sub-region of `a` the contact point lies on: `0` for a sphere, an
    /// encoded [`crate::geometry::SubRegion`] for a mesh.
    pub sub_a: u32,
    /// Sub-region of `b` (`0` for a sphere or a wall).
    pub sub_b: u32,
    /// Contact point in the world frame, midway between the two surfaces.
    pub point: Vector3<f64>,
    /// Unit contact normal, world frame, from `a` to `b`.
    pub normal: Vector3<f64>,
    /// Signed gap between the surfaces: positive apart, negative overlap.
    pub gap: f64,
    /// Lever arm of `a`: `point − position of a` (world frame).
    pub r_a: Vector3<f64>,
    /// Lever arm of `b`: `point − position of b`; zero for a wall.
    pub r_b: Vector3<f64>,
    /// Local index of `a` (owned bodies first, ghosts after).
    pub ia: usize,
    /// Local index of `b`, or [`WALL_INDEX`] for a wall.
    pub ib: usize,
}

impl Contact {
    /// The same contact seen from the other side: `a` and `b` (with their
    /// sub-regions, lever arms and indices) swapped, normal reversed.
    pub fn swapped(self) -> Self {
        Self {
            a: self.b,
            b: self.a,
            sub_a: self.sub_b,
            sub_b: self.sub_a,
            point: self.point,
            normal: -self.normal,
            gap: self.gap,
            r_a: self.r_b,
            r_b: self.r_a,
            ia: self.ib,
            ib: self.ia,
        }
    }

    /// This contact with `a` the smaller global id (swapped if needed).
    pub fn ordered(self) -> Self {
        if self.a > self.b {
            self.swapped()
        } else {
            self
        }
    }

    /// True for a contact with a wall.
    pub fn is_wall(&self) -> bool {
        self.b >= WALL_ID_BASE
    }
}

/// Identifies a contact across steps, ranks and files: its two bodies (b a
/// wall's id for a wall) and their sub-regions (face/edge/vertex ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContactKey {
    pub a: u64,
    pub b: u64,
    pub sub_a: u32,
    pub sub_b: u32,
}

impl ContactKey {
    /// As four integers (record fields: a, b, sub_a, sub_b).
    pub fn to_u64s(self) -> [u64; 4] {
        [self.a, self.b, self.sub_a as u64, self.sub_b as u64]
    }

    /// From the four integers of [`ContactKey::to_u64s`].
    pub fn from_u64s(u: &[u64]) -> Self {
        Self { a: u[0], b: u[1], sub_a: u[2] as u32, sub_b: u[3] as u32 }
    }
}

/// Contacts as struct-of-arrays; field meanings as in [`Contact`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Contacts {
    /// See [`Contact::a`].
    pub a: Vec<u64>,
    /// See [`Contact::b`].
    pub b: Vec<u64>,
    /// See [`Contact::sub_a`].
    pub sub_a: Vec<u32>,
    /// See [`Contact::sub_b`].
    pub sub_b: Vec<u32>,
    /// See [`Contact::point`].
    pub point: Vec<Vector3<f64>>,
    /// See [`Contact::normal`].
    pub normal: Vec<Vector3<f64>>,
    /// See [`Contact::gap`].
    pub gap: Vec<f64>,
    /// See [`Contact::r_a`].
    pub r_a: Vec<Vector3<f64>>,
    /// See [`Contact::r_b`].
    pub r_b: Vec<Vector3<f64>>,
    /// See [`Contact::ia`].
    pub ia: Vec<usize>,
    /// See [`Contact::ib`].
    pub ib: Vec<usize>,
}

impl Contacts {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of contacts.
    pub fn len(&self) -> usize {
        self.a.len()
    }

    /// True when there is no contact.
    pub fn is_empty(&self) -> bool {
        self.a.is_empty()
    }

    /// Removes every contact, keeping the allocations.
    pub fn clear(&mut self) {
        self.a.clear();
        self.b.clear();
        self.sub_a.clear();
        self.sub_b.clear();
        self.point.clear();
        self.normal.clear();
        self.gap.clear();
        self.r_a.clear();
        self.r_b.clear();
        self.ia.clear();
        self.ib.clear();
    }

    /// Appends a contact.
    pub fn push(&mut self, c: Contact) {
        self.a.push(c.a);
        self.b.push(c.b);
        self.sub_a.push(c.sub_a);
        self.sub_b.push(c.sub_b);
        self.point.push(c.point);
        self.normal.push(c.normal);
        self.gap.push(c.gap);
        self.r_a.push(c.r_a);
        self.r_b.push(c.r_b);
        self.ia.push(c.ia);
        self.ib.push(c.ib);
    }

    /// Contact `i` as a value.
    pub fn get(&self, i: usize) -> Contact {
        Contact {
            a: self.a[i],
            b: self.b[i],
            sub_a: self.sub_a[i],
            sub_b: self.sub_b[i],
            point: self.point[i],
            normal: self.normal[i],
            gap: self.gap[i],
            r_a: self.r_a[i],
            r_b: self.r_b[i],
            ia: self.ia[i],
            ib: self.ib[i],
        }
    }

    /// The contacts in order, as values.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Contact> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// The identity of contact `i` across steps and ranks.
    pub fn key(&self, i: usize) -> ContactKey {
        ContactKey { a: self.a[i], b: self.b[i], sub_a: self.sub_a[i], sub_b: self.sub_b[i] }
    }

    /// The material of side b of contact `i`: body b's, or the wall's own.
    pub fn material_b(&self, i: usize, bodies: &crate::body::Bodies, walls: &[crate::scene::Wall]) -> u32 {
        if self.b[i] >= WALL_ID_BASE {
            walls.get((self.b[i] - WALL_ID_BASE) as usize).map_or(bodies.material[self.ia[i]], |w| w.material)
        } else {
            bodies.material[self.ib[i]]
        }
    }

    /// Keeps the contacts `keep(i)` says yes to, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(usize) -> bool) {
        let old = std::mem::take(self);
        for i in 0..old.len() {
            if keep(i) {
                self.push(old.get(i));
            }
        }
    }

    /// Reorders by `(a, b, sub_a, sub_b)`: a canonical order independent of
    /// local numbering (useful to compare runs on different rank counts).
    pub fn sort_canonical(&mut self) {
        if (1..self.len()).all(|i| self.key(i - 1) <= self.key(i)) {
            return;
        }
        let mut idx: Vec<usize> = (0..self.len()).collect();
        idx.sort_by_key(|&i| (self.a[i], self.b[i], self.sub_a[i], self.sub_b[i]));
        let old = std::mem::take(self);
        for i in idx {
            self.push(old.get(i));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(a: u64, b: u64) -> Contact {
        Contact {
            a,
            b,
            sub_a: 1,
            sub_b: 2,
            point: Vector3::new(1.0, 2.0, 3.0),
            normal: Vector3::new(0.0, 0.0, 1.0),
            gap: -0.1,
            r_a: Vector3::new(1.0, 0.0, 0.0),
            r_b: Vector3::new(-1.0, 0.0, 0.0),
            ia: 4,
            ib: 5,
        }
    }

    #[test]
    fn push_get_clear_sort() {
        let mut cs = Contacts::new();
        cs.push(sample(3, 9));
        cs.push(sample(1, 2));
        assert_eq!(cs.len(), 2);
        assert_eq!(cs.get(0), sample(3, 9));
        cs.sort_canonical();
        assert_eq!(cs.iter().map(|c| c.a).collect::<Vec<_>>(), vec![1, 3]);
        cs.clear();
        assert!(cs.is_empty());
    }

    #[test]
    fn ordering_swaps_everything() {
        let c = sample(9, 3).ordered();
        assert_eq!((c.a, c.b, c.sub_a, c.sub_b, c.ia, c.ib), (3, 9, 2, 1, 5, 4));
        assert_eq!(c.normal, Vector3::new(0.0, 0.0, -1.0));
        assert_eq!(c.r_a, Vector3::new(-1.0, 0.0, 0.0));
        assert!(!c.is_wall());
        assert!(sample(3, WALL_ID_BASE + 1).is_wall());
    }
}
