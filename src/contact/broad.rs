//! Broad phase (time-step stage 2 "contact"): linked cells over the local
//! bodies give candidate pairs; a Verlet list keeps them until some body has
//! moved more than half the skin.
//!
//! Rules:
//! - A pair `(i, j)` of local indices (`i < j`) is a candidate when the
//!   bounding spheres are within `margin = skin + contact_distance`:
//!   `|x_i − x_j| < r_i + r_j + margin`. Pairs of two fixed bodies are skipped.
//! - **Big bodies.** A body whose bounding radius exceeds [`BIG_RATIO`] times
//!   the mean bounding radius of the local bodies is "big" (a long wall mesh
//!   among spheres, say). Big bodies are left out of the grid and tested
//!   against every body (O(N) each), so the cell size, `2 × (largest
//!   non-big radius) + margin`, stays near the grain size and no contact is
//!   missed. The grid is coarsened if it would have more than
//!   [`MAX_CELLS_PER_BODY`] cells per body (sparse boxes).
//! - **Walls.** Every non-fixed body is tested against every wall by plane
//!   distance: `(x_i − p_w)·n̂_w − r_i < margin` (walls are few).
//! - Candidate lists are sorted ascending, so results never depend on cell
//!   traversal order. The grid is a counting sort (no hashing, no allocation
//!   per pair; buffers are reused between builds).
use super::{ContactShapes, DetectParams, EntityLists};
use crate::body::Bodies;
use crate::scene::Wall;
use nalgebra::Vector3;

/// A body is big when its bounding radius exceeds `BIG_RATIO ×` the mean
/// bounding radius of the local bodies.
pub const BIG_RATIO: f64 = 4.0;

/// The grid is coarsened until it has at most this many cells per body.
pub const MAX_CELLS_PER_BODY: usize = 4;

/// Marks a big body in the cell index array.
const BIG: u32 = u32::MAX;

/// Reusable linked-cell buffers (a counting sort of the bodies by cell).
#[derive(Clone, Debug, Default)]
pub struct LinkedCells {
    /// Cell of each body, or `BIG`.
    body_cell: Vec<u32>,
    /// Start of each cell's run in `items` (length: cells + 1).
    cell_start: Vec<u32>,
    /// Body indices grouped by cell, ascending within a cell.
    items: Vec<u32>,
    /// Indices of the big bodies, ascending.
    big: Vec<u32>,
}

/// Appends to `out` the candidate body pairs `(i, j)`, `i < j`, of the bodies
/// with centres `positions` and bounding radii `radii` (see the module rules),
/// then sorts `out`. `out` is cleared first.
pub fn candidate_pairs(
    positions: &[Vector3<f64>],
    radii: &[f64],
    fixed: &[bool],
    margin: f64,
    cells: &mut LinkedCells,
    out: &mut Vec<(usize, usize)>,
) {
    out.clear();
    let n = positions.len();
    assert!(radii.len() == n && fixed.len() == n, "positions, radii and fixed differ in length");
    assert!(n < u32::MAX as usize, "too many local bodies for the cell index");
    if n < 2 {
        return;
    }
    let mean = radii.iter().sum::<f64>() / n as f64;
    let threshold = BIG_RATIO * mean;
    cells.big.clear();
    cells.body_cell.clear();
    cells.body_cell.resize(n, 0);
    let mut lo = Vector3::repeat(f64::INFINITY);
    let mut hi = Vector3::repeat(f64::NEG_INFINITY);
    let mut r_max: f64 = 0.0;
    for i in 0..n {
        if radii[i] > threshold {
            cells.big.push(i as u32);
            cells.body_cell[i] = BIG;
        } else {
            lo = lo.inf(&positions[i]);
            hi = hi.sup(&positions[i]);
            r_max = r_max.max(radii[i]);
        }
    }
    let test = |i: usize, j: usize, out: &mut Vec<(usize, usize)>| {
        if fixed[i] && fixed[j] {
            return;
        }
        let cut = radii[i] + radii[j] + margin;
        if (positions[i] - positions[j]).norm_squared() < cut * cut {
            out.push((i.min(j), i.max(j)));
        }
    };
    let n_small = n - cells.big.len();
    if n_small > 0 {
        let mut h = 2.0 * r_max + margin;
        if !(h > 0.0 && h.is_finite()) {
            h = 1.0;
        }
        let ext = hi - lo;
        let cap = (MAX_CELLS_PER_BODY * n_small).max(27) as f64;
        let dims = loop {
            let d = ext.map(|e| (e / h).floor() + 1.0);
            if d.x * d.y * d.z <= cap {
                break [d.x as usize, d.y as usize, d.z as usize];
            }
            if !h.is_finite() || !(d.x * d.y * d.z).is_finite() {
                // Non-finite positions: one cell (all pairs), never loop forever.
                break [1, 1, 1];
            }
            h *= 1.5;
        };
        let n_cells = dims[0] * dims[1] * dims[2];
        let inv_h = 1.0 / h;
        let cell_of = |x: &Vector3<f64>| -> [usize; 3] {
            let mut c = [0; 3];
            for k in 0..3 {
                c[k] = (((x[k] - lo[k]) * inv_h) as usize).min(dims[k] - 1);
            }
            c
        };
        let flat = |c: [usize; 3]| (c[2] * dims[1] + c[1]) * dims[0] + c[0];
        cells.cell_start.clear();
        cells.cell_start.resize(n_cells + 1, 0);
        for (cell, x) in cells.body_cell.iter_mut().zip(positions) {
            if *cell != BIG {
                let c = flat(cell_of(x));
                *cell = c as u32;
                cells.cell_start[c + 1] += 1;
            }
        }
        for c in 0..n_cells {
            cells.cell_start[c + 1] += cells.cell_start[c];
        }
        cells.items.clear();
        cells.items.resize(n_small, 0);
        {
            // Fill by ascending body index: deterministic, sorted within a cell.
            let mut next: Vec<u32> = cells.cell_start[..n_cells].to_vec();
            for i in 0..n {
                let c = cells.body_cell[i];
                if c != BIG {
                    cells.items[next[c as usize] as usize] = i as u32;
                    next[c as usize] += 1;
                }
            }
        }
        // Half stencil: the cell itself and its 13 "forward" neighbours.
        const FORWARD: [[isize; 3]; 13] = [
            [1, 0, 0],
            [-1, 1, 0],
            [0, 1, 0],
            [1, 1, 0],
            [-1, -1, 1],
            [0, -1, 1],
            [1, -1, 1],
            [-1, 0, 1],
            [0, 0, 1],
            [1, 0, 1],
            [-1, 1, 1],
            [0, 1, 1],
            [1, 1, 1],
        ];
        let (start, items) = (&cells.cell_start, &cells.items);
        for cz in 0..dims[2] {
            for cy in 0..dims[1] {
                for cx in 0..dims[0] {
                    let c = flat([cx, cy, cz]);
                    let here = &items[start[c] as usize..start[c + 1] as usize];
                    if here.is_empty() {
                        continue;
                    }
                    for (k, &i) in here.iter().enumerate() {
                        for &j in &here[k + 1..] {
                            test(i as usize, j as usize, out);
                        }
                    }
                    for d in FORWARD {
                        let (nx, ny, nz) = (cx as isize + d[0], cy as isize + d[1], cz as isize + d[2]);
                        if nx < 0 || ny < 0 || nx >= dims[0] as isize || ny >= dims[1] as isize || nz >= dims[2] as isize {
                            continue;
                        }
                        let c2 = flat([nx as usize, ny as usize, nz as usize]);
                        let there = &items[start[c2] as usize..start[c2 + 1] as usize];
                        for &i in here {
                            for &j in there {
                                test(i as usize, j as usize, out);
                            }
                        }
                    }
                }
            }
        }
    }
    for &b in &cells.big {
        let b = b as usize;
        for j in 0..n {
            // Big–big pairs once (from the smaller index).
            if j == b || (cells.body_cell[j] == BIG && j < b) {
                continue;
            }
            test(b, j, out);
        }
    }
    out.sort_unstable();
}

/// Appends to `out` (cleared first) the candidate `(body, wall)` pairs:
/// non-fixed bodies whose bounding sphere is within `margin` of the wall's
/// plane (or behind it); removed walls have none. Sorted by body, then wall.
pub fn candidate_wall_pairs(
    positions: &[Vector3<f64>],
    radii: &[f64],
    fixed: &[bool],
    walls: &[Wall],
    margin: f64,
    out: &mut Vec<(usize, usize)>,
) {
    out.clear();
    let units: Vec<Vector3<f64>> = walls.iter().map(|w| w.normal.normalize()).collect();
    for i in 0..positions.len() {
        if fixed[i] {
            continue;
        }
        for (w, wall) in walls.iter().enumerate() {
            if !wall.removed && (positions[i] - wall.point).dot(&units[w]) - radii[i] < margin {
                out.push((i, w));
            }
        }
    }
}

/// Candidate pairs kept between rebuilds, with the positions they were built
/// at. The list is valid while every body has moved at most `skin / 2` since
/// the build (two bodies then closed in by at most `skin`) and the local
/// bodies (ids, walls and which are removed, parameters) are the same. It also keeps the
/// second-level lists of its mesh pairs ([`EntityLists`]).
#[derive(Clone, Debug, Default)]
pub struct VerletList {
    pairs: Vec<(usize, usize)>,
    wall_pairs: Vec<(usize, usize)>,
    positions: Vec<Vector3<f64>>,
    ids: Vec<u64>,
    /// `removed` of each wall at the build.
    walls_removed: Vec<bool>,
    /// Each wall's point at the build (moving walls).
    wall_points: Vec<Vector3<f64>>,
    params: Option<DetectParams>,
    builds: u64,
    radii: Vec<f64>,
    cells: LinkedCells,
    entities: EntityLists,
}

impl VerletList {
    /// An empty list that needs a build.
    pub fn new() -> Self {
        Self::default()
    }

    /// Rebuilds the candidate pairs of the local `bodies` and walls (linked
    /// cells, see the module rules) with `margin = skin + contact_distance`,
    /// and records the positions.
    pub fn build(&mut self, bodies: &Bodies, shapes: &ContactShapes, walls: &[Wall], params: &DetectParams) {
        self.radii.clear();
        self.radii.extend(bodies.shape.iter().map(|&s| shapes.bounding_radius(s)));
        let margin = params.skin + params.contact_distance;
        candidate_pairs(&bodies.position, &self.radii, &bodies.fixed, margin, &mut self.cells, &mut self.pairs);
        candidate_wall_pairs(&bodies.position, &self.radii, &bodies.fixed, walls, margin, &mut self.wall_pairs);
        self.positions.clear();
        self.positions.extend_from_slice(&bodies.position);
        self.ids.clear();
        self.ids.extend_from_slice(&bodies.id);
        self.walls_removed.clear();
        self.walls_removed.extend(walls.iter().map(|w| w.removed));
        self.wall_points.clear();
        self.wall_points.extend(walls.iter().map(|w| w.point));
        self.params = Some(params.first_level());
        self.builds += 1;
        let ids = &bodies.id;
        self.entities.reindex(self.pairs.iter().map(|&(i, j)| (ids[i].min(ids[j]), ids[i].max(ids[j]))));
    }

    /// True when the list was never built, the number of bodies changed, or
    /// some body moved more than half the skin since the build.
    pub fn needs_rebuild(&self, positions: &[Vector3<f64>]) -> bool {
        let Some(p) = self.params else { return true };
        if positions.len() != self.positions.len() {
            return true;
        }
        let limit = 0.25 * p.skin * p.skin;
        positions.iter().zip(&self.positions).any(|(x, x0)| (x - x0).norm_squared() > limit)
    }

    /// [`VerletList::needs_rebuild`], or the local bodies (ids in local
    /// order), the walls (their number, which are removed) or the parameters
    /// differ from the build.
    pub fn is_stale(&self, bodies: &Bodies, walls: &[Wall], params: &DetectParams) -> bool {
        self.needs_rebuild(&bodies.position)
            || self.params != Some(params.first_level())
            || self.walls_removed.len() != walls.len()
            || self.walls_removed.iter().zip(walls).any(|(&r, w)| r != w.removed)
            // A body and a wall close by at most the skin when each moved at most half of it.
            || self.wall_points.iter().zip(walls).any(|(p, w)| (w.point - p).norm() > 0.5 * params.skin)
            || self.ids != bodies.id
    }

    /// Forces a rebuild at the next [`super::detect`] (e.g. after fixing or
    /// freeing a body).
    pub fn invalidate(&mut self) {
        self.params = None;
    }

    /// Candidate body pairs `(i, j)`, `i < j` local indices, ascending.
    pub fn pairs(&self) -> &[(usize, usize)] {
        &self.pairs
    }

    /// The candidate body pairs and the second-level lists, to run the
    /// narrow phase through them.
    pub fn pairs_and_entity_lists(&mut self) -> (&[(usize, usize)], &mut EntityLists) {
        (&self.pairs, &mut self.entities)
    }

    /// The second-level lists of the mesh body pairs.
    pub fn entity_lists(&self) -> &EntityLists {
        &self.entities
    }

    /// Candidate `(body, wall)` pairs, ascending.
    pub fn wall_pairs(&self) -> &[(usize, usize)] {
        &self.wall_pairs
    }

    /// Number of builds so far (a counter for statistics and tests).
    pub fn builds(&self) -> u64 {
        self.builds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn brute(positions: &[Vector3<f64>], radii: &[f64], fixed: &[bool], margin: f64) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for i in 0..positions.len() {
            for j in i + 1..positions.len() {
                if !(fixed[i] && fixed[j]) && (positions[i] - positions[j]).norm() < radii[i] + radii[j] + margin {
                    v.push((i, j));
                }
            }
        }
        v
    }

    fn lcg(s: &mut u64) -> f64 {
        *s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (*s >> 11) as f64 / (1u64 << 53) as f64
    }

    #[test]
    fn cells_match_brute_force_with_big_and_fixed_bodies() {
        let mut s = 42;
        let mut pos = Vec::new();
        let mut rad = Vec::new();
        let mut fixed = Vec::new();
        for _ in 0..600 {
            pos.push(Vector3::new(20.0 * lcg(&mut s), 10.0 * lcg(&mut s), 5.0 * lcg(&mut s)));
            rad.push(0.3 + 0.3 * lcg(&mut s));
            fixed.push(lcg(&mut s) < 0.2);
        }
        // Two big bodies (one fixed) and an isolated far one (sparse box).
        pos.push(Vector3::new(10.0, 5.0, 2.5));
        rad.push(12.0);
        fixed.push(true);
        pos.push(Vector3::new(3.0, 5.0, 2.5));
        rad.push(6.0);
        fixed.push(false);
        pos.push(Vector3::new(1e4, 0.0, 0.0));
        rad.push(0.4);
        fixed.push(false);
        let mut cells = LinkedCells::default();
        let mut out = Vec::new();
        candidate_pairs(&pos, &rad, &fixed, 0.15, &mut cells, &mut out);
        assert_eq!(cells.big.len(), 2);
        assert_eq!(out, brute(&pos, &rad, &fixed, 0.15));
        assert!(out.len() > 600);
    }

    #[test]
    fn wall_candidates_by_plane_distance() {
        let pos = vec![Vector3::new(0.0, 0.0, 1.05), Vector3::new(0.0, 0.0, 1.2), Vector3::new(0.0, 0.0, -3.0)];
        let rad = vec![1.0; 3];
        let walls = vec![Wall::new(Vector3::zeros(), Vector3::new(0.0, 0.0, 2.0), 0)];
        let mut out = Vec::new();
        candidate_wall_pairs(&pos, &rad, &[false, false, false], &walls, 0.1, &mut out);
        assert_eq!(out, vec![(0, 0), (2, 0)]);
        candidate_wall_pairs(&pos, &rad, &[true, false, false], &walls, 0.1, &mut out);
        assert_eq!(out, vec![(2, 0)]);
        let removed = vec![Wall { removed: true, ..walls[0].clone() }];
        candidate_wall_pairs(&pos, &rad, &[false, false, false], &removed, 0.1, &mut out);
        assert!(out.is_empty());
    }
}
