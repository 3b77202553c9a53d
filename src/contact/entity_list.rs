//! Second level of the contact search (time-step stage 2 "contact"), Gay
//! Neto & Wriggers §2.5.1–2.5.2: for each candidate pair of mesh bodies of
//! the first level ([`super::broad`]), a Verlet list of the sub-region pairs
//! (vertex–face, face–vertex, edge–edge, vertex–edge, edge–vertex,
//! vertex–vertex) whose inflated bounding volumes overlap; the narrow phase
//! then evaluates only those ([`super::mesh_mesh::mesh_mesh_listed`]).
//!
//! Rules:
//! - **Volumes.** Each entity is inflated by half the cut-off
//!   `c = inflation + budget` (`inflation = contact_distance + skin`, the
//!   deepest penetration the narrow phase reports, `budget = skin`): a ball
//!   about a vertex, a capsule about an edge, a triangle grown by a ball (it
//!   lies inside the paper's prism: the triangle extruded ± c/2 along its
//!   normal and grown by c/2 in its plane). Two volumes overlap exactly when
//!   the entities are within `c`; the test is a sweep and prune along x of
//!   the entities' world boxes grown by `c` (the entities near the other
//!   body's bounding sphere only), then the exact distance
//!   ([`crate::geometry::distance`]), with a rounding allowance of [`TOL`] ×
//!   the sum of the bounding radii.
//! - **Validity.** Since the build, a point of body `a` moved relative to a
//!   point of body `b` by at most `|Δ(x_b − x_a)| + θ_a R_a + θ_b R_b` (θ the
//!   rotation angle since the build, R the bounding radius), so no entity
//!   distance shrank by more. While that is at most `budget`, every pair now
//!   within `inflation` is in the list; beyond it the list is rebuilt. A pair
//!   that enters the first-level list gets its list built at its first
//!   evaluation. Contacts are then exactly those of the search without lists
//!   ([`super::mesh_mesh::mesh_mesh`]), which the tests check.
//! - **Budget** = the skin: the skin is the distance bodies may move between
//!   first-level builds (expected velocity × Δt × steps between builds), and
//!   the entity lists spend the same budget on relative motion including
//!   rotation × radius.
//! - **Depth.** `inflation` is the reach of the evaluation,
//!   [`super::DetectParams::mesh_reach`]: the contact distance plus the skin
//!   by default, less for a solver that drops closed mesh pairs (the DEM).
//!   A list built with cut-off `C` holds every pair within `reach` while the
//!   relative motion is at most `C − reach`, so a list built for a smaller
//!   reach is rebuilt when the reach grows (a widened contact distance).
//! - Lists sit in the order of the first-level pairs ([`EntityLists::reindex`]
//!   at each first-level build moves them to their pair's new slot, by body
//!   ids, and drops those of pairs that left): the narrow phase walks them in
//!   memory order, no hash lookup per pair and step (a cache miss each, a
//!   tenth of the tetrapod collapse's narrow phase).
//! - Sphere–mesh and mesh–wall keep their direct search: the closest-feature
//!   scan with triangle-sphere culling and the vertex–plane loop cost about
//!   as much as a list lookup.
use super::mesh_mesh::{EntityPairs, PoseScratch, PosedMesh};
use super::BodyPose;
use crate::body::TriMesh;
use crate::geometry::{point_segment_distance_squared, point_triangle_distance_squared, segment_segment_distance_squared, Aabb, MeshFeatures};
use nalgebra::{UnitQuaternion, Vector3};
use std::collections::HashMap;

/// Relative rounding allowance of the overlap test, times `R_a + R_b`.
pub const TOL: f64 = 1e-9;

/// The entity list of one body pair with the poses it was built at.
#[derive(Clone, Debug)]
struct PairList {
    pairs: EntityPairs,
    /// Squared distance of each pair at the build, by kind (field order).
    d2: [Vec<f64>; 6],
    /// The smallest and the largest of them (+∞ and 0 for no pair).
    min_d2: f64,
    max_d2: f64,
    x_a: Vector3<f64>,
    x_b: Vector3<f64>,
    q_a: UnitQuaternion<f64>,
    q_b: UnitQuaternion<f64>,
    /// The cut-off it was built with.
    cutoff: f64,
}

/// Second-level Verlet lists of the mesh body pairs of one rank.
#[derive(Clone, Debug, Default)]
pub struct EntityLists {
    /// The body ids (smaller first) of each first-level pair, and its list
    /// once built.
    keys: Vec<(u64, u64)>,
    lists: Vec<Option<PairList>>,
    builds: u64,
    evaluated: u64,
    /// Pose buffers for the narrow phase of the listed pairs.
    scratch: [PoseScratch; 2],
    /// The pairs of a list that can be within reach now.
    active: EntityPairs,
}

/// An upper bound on the angle of the rotation from `q0` to `q`, within
/// O(θ³) of it: with s = |q ∓ q0| (the sign of the nearer of ±q0) the
/// angle is θ = 4 asin(s/2), and asin x ≤ x / √(1 − x²). No trigonometry
/// and no cancellation for small angles (the quaternions' difference is
/// exact to rounding): it runs for every body pair at every step.
fn angle_bound(q: &UnitQuaternion<f64>, q0: &UnitQuaternion<f64>) -> f64 {
    let (a, b) = (q.coords, q0.coords);
    let s2 = if a.dot(&b) >= 0.0 { (a - b).norm_squared() } else { (a + b).norm_squared() };
    2.0 * s2.sqrt() / (1.0 - 0.25 * s2).sqrt()
}

/// Upper bound on how much any entity distance between bodies `a` and `b`
/// can have shrunk since the poses `(x_a0, q_a0)`, `(x_b0, q_b0)`:
/// `|Δ(x_b − x_a)| + θ_a R_a + θ_b R_b` (θ by [`angle_bound`]).
#[allow(clippy::too_many_arguments)]
pub fn relative_motion(
    a: &BodyPose,
    r_a: f64,
    b: &BodyPose,
    r_b: f64,
    x_a0: &Vector3<f64>,
    q_a0: &UnitQuaternion<f64>,
    x_b0: &Vector3<f64>,
    q_b0: &UnitQuaternion<f64>,
) -> f64 {
    let shift = ((b.position - a.position) - (x_b0 - x_a0)).norm();
    shift + angle_bound(&a.orientation, q_a0) * r_a + angle_bound(&b.orientation, q_b0) * r_b
}

/// An entity near the other body: id and world bounding box.
type Near = (u32, Aabb);

fn aabb_of(points: &[Vector3<f64>]) -> Aabb {
    let mut b = Aabb::empty();
    for p in points {
        b.grow(p);
    }
    b
}

/// Vertices, edges and faces of `m` whose boxes come within `reach` of
/// `centre` (the other body's bounding sphere grown by the cut-off), each
/// with its world bounding box. A first cull in the body frame (one
/// transform of `centre`) drops the entities farther than `reach` from it
/// before any world box is made: none of them can be within the cut-off of
/// the other body (it lies inside its bounding sphere), so the pairs built
/// are the same.
fn near(m: &PosedMesh, centre: &Vector3<f64>, reach: f64) -> [Vec<Near>; 3] {
    let f = m.features;
    let c = m.pose.orientation.inverse_transform_vector(&(centre - m.pose.position));
    // Rounding slack of the body-frame distances against the world ones.
    let r = reach * (1.0 + 1e-9) + 1e-12 * (f.bounding_radius + centre.norm() + m.pose.position.norm());
    let r2 = r * r;
    let v = |k: u32| &m.mesh.vertices[k as usize];
    let within = |b: &Aabb| b.intersects_sphere(centre, reach);
    let verts = (0..m.mesh.vertices.len() as u32)
        .filter(|&k| f.is_real_vertex(k) && (v(k) - c).norm_squared() <= r2)
        .map(|k| (k, aabb_of(&[*m.vertex(k)])))
        .filter(|(_, b)| within(b))
        .collect();
    let edges = (0..f.edges.len() as u32)
        .filter(|&e| {
            let [i, j] = f.edges[e as usize];
            f.is_real_edge(e) && point_segment_distance_squared(&c, v(i), v(j)) <= r2
        })
        .map(|e| (e, aabb_of(&m.edge_ends(e))))
        .filter(|(_, b)| within(b))
        .collect();
    let faces = (0..m.mesh.triangles.len() as u32)
        .filter(|&t| {
            let (s, rs) = f.triangle_spheres[t as usize];
            (s - c).norm() <= r + rs
        })
        .map(|t| (t, aabb_of(&m.triangle(t))))
        .filter(|(_, b)| within(b))
        .collect();
    [verts, edges, faces]
}

const VERT: usize = 0;
const EDGE: usize = 1;
const FACE: usize = 2;

/// Sweep and prune along x: asks `exact(x, y)` for every pair of `xs` and
/// `ys` whose boxes, those of `xs` grown by `c`, overlap, and appends the
/// pairs it gives a squared distance for to `out` (ascending) with the
/// distances to `d2` (same order).
fn sweep(xs: &[Near], ys: &[Near], c: f64, out: &mut Vec<(u32, u32)>, d2: &mut Vec<f64>, exact: &dyn Fn(u32, u32) -> Option<f64>) {
    let grow = |b: &Aabb| Aabb { min: b.min.add_scalar(-c), max: b.max.add_scalar(c) };
    let xs: Vec<Near> = xs.iter().map(|&(i, b)| (i, grow(&b))).collect();
    let mut ox: Vec<usize> = (0..xs.len()).collect();
    let mut oy: Vec<usize> = (0..ys.len()).collect();
    ox.sort_unstable_by(|&i, &j| xs[i].1.min.x.total_cmp(&xs[j].1.min.x));
    oy.sort_unstable_by(|&i, &j| ys[i].1.min.x.total_cmp(&ys[j].1.min.x));
    let overlap = |a: &Aabb, b: &Aabb| (0..3).all(|k| a.min[k] <= b.max[k] && b.min[k] <= a.max[k]);
    let (mut ax, mut ay): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    let mut found: Vec<(u32, u32, f64)> = Vec::new();
    while i < ox.len() || j < oy.len() {
        let take_x = j == oy.len() || (i < ox.len() && xs[ox[i]].1.min.x <= ys[oy[j]].1.min.x);
        if take_x {
            let (id, b) = xs[ox[i]];
            ay.retain(|&k| ys[k].1.max.x >= b.min.x);
            for &k in &ay {
                if overlap(&b, &ys[k].1) {
                    if let Some(d) = exact(id, ys[k].0) {
                        found.push((id, ys[k].0, d));
                    }
                }
            }
            ax.push(ox[i]);
            i += 1;
        } else {
            let (id, b) = ys[oy[j]];
            ax.retain(|&k| xs[k].1.max.x >= b.min.x);
            for &k in &ax {
                if overlap(&xs[k].1, &b) {
                    if let Some(d) = exact(xs[k].0, id) {
                        found.push((xs[k].0, id, d));
                    }
                }
            }
            ay.push(oy[j]);
            j += 1;
        }
    }
    found.sort_unstable_by_key(|&(x, y, _)| (x, y));
    out.extend(found.iter().map(|&(x, y, _)| (x, y)));
    d2.extend(found.iter().map(|&(_, _, d)| d));
}

/// The entity pairs of `a` and `b` within `cutoff` of each other (plus
/// rounding, see the module rules), each kind ascending.
pub fn build_pairs(a: &PosedMesh, b: &PosedMesh, cutoff: f64) -> EntityPairs {
    build_pairs_with_distances(a, b, cutoff).0
}

/// [`build_pairs`] with the squared distance of every pair, by kind in the
/// order of [`EntityPairs`]' fields (vertex–face, face–vertex, edge–edge,
/// vertex–edge, edge–vertex, vertex–vertex), each in its list's order.
pub fn build_pairs_with_distances(a: &PosedMesh, b: &PosedMesh, cutoff: f64) -> (EntityPairs, [Vec<f64>; 6]) {
    let tol = TOL * (a.features.bounding_radius + b.features.bounding_radius);
    let c = cutoff + tol;
    let c2 = c * c;
    let na = near(a, &b.pose.position, b.features.bounding_radius + c);
    let nb = near(b, &a.pose.position, a.features.bounding_radius + c);
    let mut p = EntityPairs::default();
    let mut d: [Vec<f64>; 6] = Default::default();
    let [d_vf, d_fv, d_ee, d_ve, d_ev, d_vv] = &mut d;
    let within = |d2: f64| (d2 <= c2).then_some(d2);
    let tri_a = |t: u32| a.triangle(t);
    let tri_b = |t: u32| b.triangle(t);
    sweep(&na[VERT], &nb[FACE], c, &mut p.vertex_face, d_vf, &|v, t| within(point_triangle_distance_squared(a.vertex(v), &tri_b(t))));
    sweep(&na[FACE], &nb[VERT], c, &mut p.face_vertex, d_fv, &|t, v| within(point_triangle_distance_squared(b.vertex(v), &tri_a(t))));
    sweep(&na[EDGE], &nb[EDGE], c, &mut p.edge_edge, d_ee, &|ea, eb| {
        let ([p1, q1], [p2, q2]) = (a.edge_ends(ea), b.edge_ends(eb));
        within(segment_segment_distance_squared(&p1, &q1, &p2, &q2))
    });
    sweep(&na[VERT], &nb[EDGE], c, &mut p.vertex_edge, d_ve, &|v, e| {
        let [p, q] = b.edge_ends(e);
        within(point_segment_distance_squared(a.vertex(v), &p, &q))
    });
    sweep(&na[EDGE], &nb[VERT], c, &mut p.edge_vertex, d_ev, &|e, v| {
        let [p, q] = a.edge_ends(e);
        within(point_segment_distance_squared(b.vertex(v), &p, &q))
    });
    sweep(&na[VERT], &nb[VERT], c, &mut p.vertex_vertex, d_vv, &|va, vb| within((a.vertex(va) - b.vertex(vb)).norm_squared()));
    (p, d)
}

impl EntityLists {
    /// No list yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the lists to the slots of the new first-level pairs `keys`
    /// (body ids, smaller first, in the pairs' order); lists of pairs no
    /// longer in it are dropped.
    pub fn reindex(&mut self, keys: impl Iterator<Item = (u64, u64)>) {
        let mut old: HashMap<(u64, u64), PairList> =
            self.keys.drain(..).zip(self.lists.drain(..)).filter_map(|(k, l)| Some((k, l?))).collect();
        self.keys.extend(keys);
        self.lists.extend(self.keys.iter().map(|k| old.remove(k)));
    }

    /// The entity pairs of the body pair `(a, b)` (`a` the smaller id) of
    /// first-level slot `slot` that can be within `inflation` now: its list, built with cut-off
    /// `inflation + budget` when missing or when the relative motion `m`
    /// since its build exceeds its cut-off less `inflation` (`budget` for a
    /// list built at this `inflation`), keeping the pairs that were within
    /// `inflation + m` at the build (the others are farther than
    /// `inflation` now, and no hit of theirs is in the evaluation's window).
    /// Also hands out the pose buffers.
    #[allow(clippy::too_many_arguments)]
    pub fn get(
        &mut self,
        slot: usize,
        a: &BodyPose,
        mesh_a: &TriMesh,
        fa: &MeshFeatures,
        b: &BodyPose,
        mesh_b: &TriMesh,
        fb: &MeshFeatures,
        inflation: f64,
        budget: f64,
    ) -> (&EntityPairs, &mut [PoseScratch; 2]) {
        debug_assert_eq!(self.keys[slot], (a.id, b.id), "slot of another body pair (ids smaller first)");
        let EntityLists { lists, builds, evaluated, scratch, active, .. } = self;
        let (ra, rb) = (fa.bounding_radius, fb.bounding_radius);
        let motion = |l: &PairList| relative_motion(a, ra, b, rb, &l.x_a, &l.q_a, &l.x_b, &l.q_b);
        let build = || {
            let cutoff = inflation + budget;
            let (pairs, d2) = build_pairs_with_distances(&PosedMesh::new(a, mesh_a, fa), &PosedMesh::new(b, mesh_b, fb), cutoff);
            let max_d2 = d2.iter().flatten().copied().fold(0.0, f64::max);
            let min_d2 = d2.iter().flatten().copied().fold(f64::INFINITY, f64::min);
            PairList { pairs, d2, min_d2, max_d2, x_a: a.position, x_b: b.position, q_a: a.orientation, q_b: b.orientation, cutoff }
        };
        let entry = &mut lists[slot];
        let m = entry.as_ref().map_or(f64::INFINITY, motion);
        let m = if entry.as_ref().is_some_and(|l| m <= l.cutoff - inflation) {
            m
        } else {
            *builds += 1;
            *entry = None;
            0.0
        };
        let list = &*entry.get_or_insert_with(build);
        let limit = inflation + m + TOL * (ra + rb);
        let l2 = limit * limit;
        if list.max_d2 <= l2 {
            *evaluated += list.pairs.len() as u64;
            return (&list.pairs, scratch);
        }
        active.clear();
        // Most body pairs of a pack have no entity within reach: no scan.
        if list.min_d2 > l2 {
            return (active, scratch);
        }
        for ((src, dst), d2) in list.pairs.lists().into_iter().zip(active.lists_mut()).zip(&list.d2) {
            dst.extend(src.iter().zip(d2).filter(|&(_, &d)| d <= l2).map(|(&p, _)| p));
        }
        *evaluated += active.len() as u64;
        (active, scratch)
    }

    /// Number of body pairs holding a list.
    pub fn len(&self) -> usize {
        self.lists.iter().flatten().count()
    }

    /// True when no body pair holds a list.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of list builds so far.
    pub fn builds(&self) -> u64 {
        self.builds
    }

    /// Number of entity pairs handed to the narrow phase so far.
    pub fn evaluated(&self) -> u64 {
        self.evaluated
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pose(id: u64, x: Vector3<f64>, q: UnitQuaternion<f64>) -> BodyPose {
        BodyPose { id, index: id as usize, position: x, orientation: q }
    }

    #[test]
    fn relative_motion_ignores_common_translation_and_counts_rotation() {
        let q0 = UnitQuaternion::identity();
        let (xa, xb) = (Vector3::new(0.0, 0.0, 0.0), Vector3::new(1.0, 0.0, 0.0));
        let shift = Vector3::new(0.3, -0.2, 0.1);
        let m = relative_motion(&pose(0, xa + shift, q0), 1.0, &pose(1, xb + shift, q0), 2.0, &xa, &q0, &xb, &q0);
        assert!(m < 1e-15);
        let turned = UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.01);
        let m = relative_motion(&pose(0, xa, q0), 1.0, &pose(1, xb + Vector3::x() * 0.02, turned), 2.0, &xa, &q0, &xb, &q0);
        // θ = 0.01 within its O(θ³) allowance, never below it.
        assert!((0.02 + 0.01 * 2.0..=0.02 + (0.01 + 1e-6) * 2.0).contains(&m), "{m}");
        // The bound holds at all angles, for either sign of a quaternion,
        // and stays accurate for tiny ones (to the quaternions' own rounding,
        // a few 1e-16).
        let q1 = UnitQuaternion::from_axis_angle(&Vector3::x_axis(), 0.3);
        for theta in [1e-9, 1e-4, 0.1, 1.0, 2.0, 3.0, std::f64::consts::PI] {
            let axis = nalgebra::Unit::new_normalize(Vector3::new(0.3, -0.5, 0.8));
            let q = UnitQuaternion::from_axis_angle(&axis, theta) * q1;
            let neg = UnitQuaternion::new_unchecked(-q.into_inner());
            for b in [angle_bound(&q, &q1), angle_bound(&neg, &q1)] {
                assert!(b >= theta - 1e-15 && b <= theta * (1.0 + 0.1 * theta * theta) + 1e-15, "θ = {theta}: {b}");
            }
        }
    }

    /// A list serves any reach up to its cut-off less the motion since its
    /// build, handing out only its pairs that can be within the reach: a
    /// smaller reach reuses it, a larger one (a widened contact distance)
    /// rebuilds it with the larger cut-off; after a move within the budget
    /// the pairs handed out hold every pair within the reach.
    #[test]
    fn a_list_serves_smaller_reaches_and_is_rebuilt_for_larger_ones() {
        let tet = TriMesh::tetrapod(1.0, 0.25, 8);
        let f = MeshFeatures::new(&tet);
        let q = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), 0.4);
        let (pa, pb) = (pose(0, Vector3::zeros(), q), pose(1, Vector3::new(1.15, 0.2, 0.1), UnitQuaternion::identity()));
        let mut lists = EntityLists::new();
        lists.reindex([(0, 1)].into_iter());
        let budget = 0.05;
        let n = |l: &mut EntityLists, pb: &BodyPose, reach: f64| l.get(0, &pa, &tet, &f, pb, &tet, &f, reach, budget).0.clone();
        let at = |pb: &BodyPose, cutoff: f64| build_pairs(&PosedMesh::new(&pa, &tet, &f), &PosedMesh::new(pb, &tet, &f), cutoff);
        assert!(!at(&pb, 0.02).is_empty() && at(&pb, 0.02).len() < at(&pb, 0.1).len(), "the scene should have pairs at all distances");
        assert_eq!(n(&mut lists, &pb, 0.1), at(&pb, 0.1));
        assert_eq!(lists.builds(), 1);
        // Smaller reach, no motion: the list is reused, its near part handed out.
        assert_eq!(n(&mut lists, &pb, 0.02), at(&pb, 0.02));
        // A reach up to the cut-off is still covered at zero motion.
        assert_eq!(n(&mut lists, &pb, 0.15), at(&pb, 0.15));
        assert_eq!(lists.builds(), 1);
        // Moved by 0.03 towards a: the pairs within 0.05 now are among those
        // handed out (within 0.05 + 0.03 at the build), nothing rebuilt.
        let moved = pose(1, pb.position - Vector3::new(0.03, 0.0, 0.0), pb.orientation);
        let got = n(&mut lists, &moved, 0.05);
        assert_eq!(lists.builds(), 1);
        let need = at(&moved, 0.05);
        for (g, w) in got.lists().into_iter().zip(need.lists()) {
            assert!(w.iter().all(|p| g.contains(p)), "a pair within the reach is missing");
        }
        assert!(need.len() > at(&pb, 0.05).len(), "the move should bring pairs within reach");
        // Beyond the cut-off: rebuilt with reach + budget.
        assert_eq!(n(&mut lists, &pb, 0.2), at(&pb, 0.2));
        assert_eq!(lists.builds(), 2);
        assert_eq!(n(&mut lists, &pb, 0.25), at(&pb, 0.25));
        assert_eq!(lists.builds(), 2);
        // A new first-level list: the pair's list moves to its new slot and
        // is reused there; a pair that left takes its list with it.
        lists.reindex([(7, 9), (0, 1)].into_iter());
        assert_eq!((lists.len(), lists.builds()), (1, 2));
        assert_eq!(lists.get(1, &pa, &tet, &f, &pb, &tet, &f, 0.25, budget).0, &at(&pb, 0.25));
        assert_eq!(lists.builds(), 2);
        lists.reindex([(7, 9)].into_iter());
        assert!(lists.is_empty());
    }

    /// All real entity pairs within `cutoff`, no culling.
    fn brute(a: &PosedMesh, b: &PosedMesh, cutoff: f64) -> EntityPairs {
        let (fa, fb) = (a.features, b.features);
        let va: Vec<u32> = (0..a.mesh.vertices.len() as u32).filter(|&v| fa.is_real_vertex(v)).collect();
        let vb: Vec<u32> = (0..b.mesh.vertices.len() as u32).filter(|&v| fb.is_real_vertex(v)).collect();
        let ea: Vec<u32> = (0..fa.edges.len() as u32).filter(|&e| fa.is_real_edge(e)).collect();
        let eb: Vec<u32> = (0..fb.edges.len() as u32).filter(|&e| fb.is_real_edge(e)).collect();
        let ta: Vec<u32> = (0..a.mesh.triangles.len() as u32).collect();
        let tb: Vec<u32> = (0..b.mesh.triangles.len() as u32).collect();
        let c2 = cutoff * cutoff;
        let all = |xs: &[u32], ys: &[u32], d2: &dyn Fn(u32, u32) -> f64| -> Vec<(u32, u32)> {
            xs.iter().flat_map(|&x| ys.iter().map(move |&y| (x, y))).filter(|&(x, y)| d2(x, y) <= c2).collect()
        };
        EntityPairs {
            vertex_face: all(&va, &tb, &|v, t| point_triangle_distance_squared(a.vertex(v), &b.triangle(t))),
            face_vertex: all(&ta, &vb, &|t, v| point_triangle_distance_squared(b.vertex(v), &a.triangle(t))),
            edge_edge: all(&ea, &eb, &|x, y| {
                let ([p1, q1], [p2, q2]) = (a.edge_ends(x), b.edge_ends(y));
                segment_segment_distance_squared(&p1, &q1, &p2, &q2)
            }),
            vertex_edge: all(&va, &eb, &|v, e| {
                let [p, q] = b.edge_ends(e);
                point_segment_distance_squared(a.vertex(v), &p, &q)
            }),
            edge_vertex: all(&ea, &vb, &|e, v| {
                let [p, q] = a.edge_ends(e);
                point_segment_distance_squared(b.vertex(v), &p, &q)
            }),
            vertex_vertex: all(&va, &vb, &|x, y| (a.vertex(x) - b.vertex(y)).norm_squared()),
        }
    }

    #[test]
    fn build_keeps_exactly_the_entities_within_the_cutoff() {
        let mesh = TriMesh::cuboid(Vector3::repeat(1.0));
        let f = MeshFeatures::new(&mesh);
        // Two unit cubes face to face 0.1 apart along z.
        let pa = pose(0, Vector3::zeros(), UnitQuaternion::identity());
        let pb = pose(1, Vector3::new(0.0, 0.0, 1.1), UnitQuaternion::identity());
        let (a, b) = (PosedMesh::new(&pa, &mesh, &f), PosedMesh::new(&pb, &mesh, &f));
        assert!(build_pairs(&a, &b, 0.099).is_empty());
        let p = build_pairs(&a, &b, 0.101);
        // Corner over corner: 4 vertex pairs; each top edge of a meets the
        // edge above it and the two bottom and two vertical edges of b at its
        // ends (5 × 4), each vertical edge of a the three edges of b at its
        // top corner (3 × 4); a corner meets 3 edges and 4–5 triangles.
        let counts = [p.vertex_vertex.len(), p.edge_edge.len(), p.vertex_edge.len(), p.edge_vertex.len(), p.vertex_face.len(), p.face_vertex.len()];
        assert_eq!(counts, [4, 32, 12, 12, 18, 18]);
        assert_eq!(p, brute(&a, &b, 0.101));
        // Tetrapod against a turned box, at several distances: the culled
        // build equals the all-pairs enumeration.
        let tet = TriMesh::tetrapod(1.0, 0.25, 8);
        let ft = MeshFeatures::new(&tet);
        let q = UnitQuaternion::from_axis_angle(&Vector3::y_axis(), 0.4) * UnitQuaternion::from_axis_angle(&Vector3::x_axis(), 0.3);
        let pt = pose(0, Vector3::zeros(), q);
        let mut counts = Vec::new();
        for d in [1.0, 1.2, 1.4, 1.6] {
            let pc = pose(1, Vector3::new(d, 0.3, 0.2), UnitQuaternion::from_axis_angle(&Vector3::z_axis(), 0.5));
            let (t, c) = (PosedMesh::new(&pt, &tet, &ft), PosedMesh::new(&pc, &mesh, &f));
            let p = build_pairs(&t, &c, 0.2);
            assert_eq!(p, brute(&t, &c, 0.2 + TOL * (ft.bounding_radius + f.bounding_radius)), "d = {d}");
            counts.push(p.len());
        }
        assert!(counts.iter().all(|&c| c > 10), "{counts:?}");
    }
}
