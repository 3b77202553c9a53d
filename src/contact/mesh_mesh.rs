//! Narrow phase mesh–mesh (time-step stage 2 "contact"), after Gay Neto &
//! Wriggers §2.4–2.5 and §3.6.
//!
//! 1. Sub-regions: the real vertices, real edges (not the diagonal of a flat
//!    tessellated face) and triangles of both meshes, posed in the world.
//! 2. Candidates ([`EntityPairs`]): either the second-level Verlet list of the
//!    body pair ([`super::entity_list`], [`mesh_mesh_listed`]), or, without
//!    lists ([`mesh_mesh`]), the features of one body within the other's
//!    bounding sphere inflated by `inflation` (= contact distance + skin),
//!    then per-entity world boxes (a vertex, the box of an edge or a face,
//!    each grown by `inflation / 2`) tested pairwise.
//! 3. Local problems in closed form with their validity ranges, one file per
//!    pair: [`super::vertex_face`], [`super::edge_edge`],
//!    [`super::vertex_edge`], [`super::vertex_vertex`]. Face–face and
//!    edge–face are represented by their edges and vertices (Fig. 4). A pair
//!    is kept when `−inflation ≤ gap < contact_distance`: its two points are
//!    `|gap|` apart, so both candidate sources (each holding every pair of
//!    entities within `inflation`) give the same contacts.
//! 4. Contact hierarchy for concave regions (§3.6): [`apply_hierarchy`].
//!
//! Known limit: a vertex deeper than `inflation` behind a face is not seen.
use super::edge_edge::{edge_edge, EdgeGeom};
use super::feature_hit::{FeatureHit, GapWindow};
use super::vertex_edge::vertex_edge;
use super::vertex_face::vertex_face;
use super::vertex_vertex::vertex_vertex;
use super::{BodyPose, Contact, Contacts};
use crate::body::TriMesh;
use crate::geometry::mesh_features::NONE;
use crate::geometry::{Aabb, MeshFeatures, SubRegion};
use nalgebra::Vector3;

/// A valid sub-region pair: the feature of `a`, of `b`, and the solution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairHit {
    /// Sub-region of body `a`.
    pub sa: SubRegion,
    /// Sub-region of body `b`.
    pub sb: SubRegion,
    /// Local solution.
    pub hit: FeatureHit,
}

impl PairHit {
    /// The sub-regions seen from side `b` when `from_b`, else from side `a`:
    /// `(feature on that side, feature on the other side)`.
    fn seen_from(&self, from_b: bool) -> (SubRegion, SubRegion) {
        if from_b {
            (self.sb, self.sa)
        } else {
            (self.sa, self.sb)
        }
    }
}

/// Reusable buffers of a [`PosedMesh`] (see [`PosedMesh::new_sparse`]).
#[derive(Clone, Debug, Default)]
pub struct PoseScratch {
    x: Vec<Vector3<f64>>,
    face_normals: Vec<Vector3<f64>>,
    vertex_normals: Vec<Vector3<f64>>,
    cone: Vec<Vector3<f64>>,
    marks: Marks,
}

/// Which entries [`PosedMesh::new_sparse`] posed already: an entry is
/// posed in this call when its mark equals `now`. An entity named by many
/// pairs (a vertex against every face near it) is posed once.
#[derive(Clone, Debug, Default)]
struct Marks {
    now: u32,
    x: Vec<u32>,
    vertex: Vec<u32>,
    face: Vec<u32>,
}

impl Marks {
    /// A new call: no entry posed yet.
    fn next(&mut self, n_vertices: usize, n_faces: usize) {
        self.x.resize(n_vertices, 0);
        self.vertex.resize(n_vertices, 0);
        self.face.resize(n_faces, 0);
        if self.now == u32::MAX {
            for m in [&mut self.x, &mut self.vertex, &mut self.face] {
                m.fill(0);
            }
            self.now = 0;
        }
        self.now += 1;
    }

    /// True the first time entry `k` of `marks` is asked for in this call.
    fn first(marks: &mut [u32], now: u32, k: u32) -> bool {
        let m = &mut marks[k as usize];
        let first = *m != now;
        *m = now;
        first
    }
}

/// A mesh body posed in the world: vertices, normals and vertex cones
/// transformed once per body pair.
pub struct PosedMesh<'a> {
    /// The body.
    pub pose: &'a BodyPose,
    /// Its mesh (body frame).
    pub mesh: &'a TriMesh,
    /// Its features (body frame).
    pub features: &'a MeshFeatures,
    x: Vec<Vector3<f64>>,
    face_normals: Vec<Vector3<f64>>,
    vertex_normals: Vec<Vector3<f64>>,
    cone: Vec<Vector3<f64>>,
    marks: Marks,
}

impl<'a> PosedMesh<'a> {
    /// Poses `mesh` at `pose`.
    pub fn new(pose: &'a BodyPose, mesh: &'a TriMesh, features: &'a MeshFeatures) -> Self {
        let r = pose.orientation.to_rotation_matrix();
        Self {
            pose,
            mesh,
            features,
            x: mesh.vertices.iter().map(|v| pose.position + r * v).collect(),
            face_normals: features.face_normals.iter().map(|n| r * n).collect(),
            vertex_normals: features.vertex_normals.iter().map(|n| r * n).collect(),
            cone: features.vertex_cone_normals.iter().map(|n| r * n).collect(),
            marks: Marks::default(),
        }
    }

    /// Poses only the entities `verts`, `edges` and `faces` of `mesh`: what
    /// an evaluation of a short [`EntityPairs`] list reads, at a cost
    /// proportional to the list, each entity once however many pairs name
    /// it. The buffers come from `scratch` (give them back with
    /// [`PosedMesh::into_scratch`]); entries not posed keep stale values and
    /// are never read. Each posed value is computed by the same
    /// expression as in [`PosedMesh::new`], so results agree bit for bit.
    pub fn new_sparse(
        pose: &'a BodyPose,
        mesh: &'a TriMesh,
        features: &'a MeshFeatures,
        scratch: PoseScratch,
        verts: impl Iterator<Item = u32>,
        edges: impl Iterator<Item = u32>,
        faces: impl Iterator<Item = u32>,
    ) -> Self {
        let r = pose.orientation.to_rotation_matrix();
        let PoseScratch { mut x, mut face_normals, mut vertex_normals, mut cone, mut marks } = scratch;
        x.resize(mesh.vertices.len(), Vector3::zeros());
        face_normals.resize(features.face_normals.len(), Vector3::zeros());
        vertex_normals.resize(features.vertex_normals.len(), Vector3::zeros());
        cone.resize(features.vertex_cone_normals.len(), Vector3::zeros());
        marks.next(mesh.vertices.len(), features.face_normals.len());
        let now = marks.now;
        let f = features;
        let put_x = |x: &mut Vec<Vector3<f64>>, mx: &mut [u32], v: u32| {
            if Marks::first(mx, now, v) {
                x[v as usize] = pose.position + r * mesh.vertices[v as usize];
            }
        };
        let put_n = |normals: &mut Vec<Vector3<f64>>, mf: &mut [u32], t: u32| {
            if Marks::first(mf, now, t) {
                normals[t as usize] = r * f.face_normals[t as usize];
            }
        };
        for v in verts {
            put_x(&mut x, &mut marks.x, v);
            if Marks::first(&mut marks.vertex, now, v) {
                vertex_normals[v as usize] = r * f.vertex_normals[v as usize];
                let ks = f.vertex_cone_start[v as usize] as usize..f.vertex_cone_start[v as usize + 1] as usize;
                for (c, n) in cone[ks.clone()].iter_mut().zip(&f.vertex_cone_normals[ks]) {
                    *c = r * n;
                }
            }
        }
        for e in edges {
            for v in f.edges[e as usize] {
                put_x(&mut x, &mut marks.x, v);
            }
            for t in f.edge_triangles[e as usize].into_iter().filter(|&t| t != NONE) {
                put_n(&mut face_normals, &mut marks.face, t);
            }
        }
        for t in faces {
            for v in mesh.triangles[t as usize] {
                put_x(&mut x, &mut marks.x, v);
            }
            put_n(&mut face_normals, &mut marks.face, t);
        }
        Self { pose, mesh, features, x, face_normals, vertex_normals, cone, marks }
    }

    /// The buffers back, for the next [`PosedMesh::new_sparse`].
    pub fn into_scratch(self) -> PoseScratch {
        PoseScratch { x: self.x, face_normals: self.face_normals, vertex_normals: self.vertex_normals, cone: self.cone, marks: self.marks }
    }

    /// World position of vertex `v`.
    pub fn vertex(&self, v: u32) -> &Vector3<f64> {
        &self.x[v as usize]
    }

    /// World end points of edge `e`.
    pub fn edge_ends(&self, e: u32) -> [Vector3<f64>; 2] {
        self.features.edges[e as usize].map(|v| self.x[v as usize])
    }

    /// World corners of triangle `t`.
    pub fn triangle(&self, t: u32) -> [Vector3<f64>; 3] {
        self.mesh.triangles[t as usize].map(|i| self.x[i as usize])
    }

    fn vertex_cone(&self, v: u32) -> &[Vector3<f64>] {
        let f = self.features;
        &self.cone[f.vertex_cone_start[v as usize] as usize..f.vertex_cone_start[v as usize + 1] as usize]
    }

    fn edge(&self, e: u32) -> EdgeGeom {
        let [i, j] = self.features.edges[e as usize];
        let [t0, t1] = self.features.edge_triangles[e as usize];
        EdgeGeom {
            p0: self.x[i as usize],
            p1: self.x[j as usize],
            n1: self.face_normals[t0 as usize],
            n2: self.face_normals[t1 as usize],
        }
    }

    /// Triangle edges that are inclusive in `t`'s validity range: flat
    /// diagonals owned by `t` (the lower triangle id of the two).
    fn inclusive(&self, t: u32) -> [bool; 3] {
        self.features.triangle_edges[t as usize].map(|e| self.features.edge_flat_face[e as usize] == t)
    }

    /// True when flat region of triangle `t` contains a triangle with vertex `v`.
    fn region_touches_vertex(&self, t: u32, v: u32) -> bool {
        let r = self.features.triangle_region[t as usize];
        self.mesh
            .triangles
            .iter()
            .enumerate()
            .any(|(s, tri)| self.features.triangle_region[s] == r && tri.contains(&v))
    }
}

/// Features of one body near the other, each with its inflated box.
struct Near {
    verts: Vec<(u32, Aabb)>,
    edges: Vec<(u32, Aabb)>,
    faces: Vec<(u32, Aabb)>,
}

fn grown(mut b: Aabb, pad: f64) -> Aabb {
    b.min.add_scalar_mut(-pad);
    b.max.add_scalar_mut(pad);
    b
}

fn boxes_overlap(a: &Aabb, b: &Aabb) -> bool {
    (0..3).all(|k| a.min[k] <= b.max[k] && b.min[k] <= a.max[k])
}

fn segment_point_distance(p0: &Vector3<f64>, p1: &Vector3<f64>, c: &Vector3<f64>) -> f64 {
    let w = p1 - p0;
    let t = ((c - p0).dot(&w) / w.norm_squared()).clamp(0.0, 1.0);
    (p0 + w * t - c).norm()
}

/// The features of `m` that can reach within `reach` of `centre`, with their
/// boxes grown by `pad` (first-level cull by the other body's inflated
/// bounding sphere, then the per-entity volumes).
fn near_features(m: &PosedMesh, centre: &Vector3<f64>, reach: f64, pad: f64) -> Near {
    let f = m.features;
    let verts = (0..m.x.len() as u32)
        .filter(|&v| f.is_real_vertex(v) && (m.x[v as usize] - centre).norm() <= reach)
        .map(|v| (v, Aabb::from_sphere(&m.x[v as usize], pad)))
        .collect();
    let edges = (0..f.edges.len() as u32)
        .filter(|&e| f.is_real_edge(e))
        .filter_map(|e| {
            let [i, j] = f.edges[e as usize].map(|k| m.x[k as usize]);
            (segment_point_distance(&i, &j, centre) <= reach).then(|| {
                let mut b = Aabb::empty();
                b.grow(&i);
                b.grow(&j);
                (e, grown(b, pad))
            })
        })
        .collect();
    let faces = (0..m.mesh.triangles.len() as u32)
        .filter_map(|t| {
            let (c, r) = f.triangle_spheres[t as usize];
            let c = m.pose.position + m.pose.orientation * c;
            ((c - centre).norm() - r <= reach).then(|| {
                let mut b = Aabb::empty();
                for p in m.triangle(t) {
                    b.grow(&p);
                }
                (t, grown(b, pad))
            })
        })
        .collect();
    Near { verts, edges, faces }
}

/// Sub-region pairs of two meshes `a` and `b` to evaluate, by kind, each
/// list ascending by `(feature of a, feature of b)`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntityPairs {
    /// (vertex of `a`, face of `b`).
    pub vertex_face: Vec<(u32, u32)>,
    /// (face of `a`, vertex of `b`).
    pub face_vertex: Vec<(u32, u32)>,
    /// (edge of `a`, edge of `b`).
    pub edge_edge: Vec<(u32, u32)>,
    /// (vertex of `a`, edge of `b`).
    pub vertex_edge: Vec<(u32, u32)>,
    /// (edge of `a`, vertex of `b`).
    pub edge_vertex: Vec<(u32, u32)>,
    /// (vertex of `a`, vertex of `b`).
    pub vertex_vertex: Vec<(u32, u32)>,
}

impl EntityPairs {
    /// Total number of pairs.
    pub fn len(&self) -> usize {
        self.vertex_face.len()
            + self.face_vertex.len()
            + self.edge_edge.len()
            + self.vertex_edge.len()
            + self.edge_vertex.len()
            + self.vertex_vertex.len()
    }

    /// True when there is no pair.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties every list, keeping the allocations.
    pub fn clear(&mut self) {
        for l in self.lists_mut() {
            l.clear();
        }
    }

    /// The six lists in field order (vertex–face, face–vertex, edge–edge,
    /// vertex–edge, edge–vertex, vertex–vertex).
    pub fn lists(&self) -> [&Vec<(u32, u32)>; 6] {
        [&self.vertex_face, &self.face_vertex, &self.edge_edge, &self.vertex_edge, &self.edge_vertex, &self.vertex_vertex]
    }

    /// [`EntityPairs::lists`], mutable.
    pub fn lists_mut(&mut self) -> [&mut Vec<(u32, u32)>; 6] {
        [
            &mut self.vertex_face,
            &mut self.face_vertex,
            &mut self.edge_edge,
            &mut self.vertex_edge,
            &mut self.edge_vertex,
            &mut self.vertex_vertex,
        ]
    }

    /// The vertices, edges and faces of side `a` (`side_b` false) or `b` that
    /// the pairs name (with repeats).
    fn entities(&self, side_b: bool) -> (impl Iterator<Item = u32> + '_, impl Iterator<Item = u32> + '_, impl Iterator<Item = u32> + '_) {
        let pick = move |&(x, y): &(u32, u32)| if side_b { y } else { x };
        let (v_lists, e_lists, f_lists) = if side_b {
            ([&self.face_vertex, &self.edge_vertex, &self.vertex_vertex], [&self.vertex_edge, &self.edge_edge], [&self.vertex_face])
        } else {
            ([&self.vertex_face, &self.vertex_edge, &self.vertex_vertex], [&self.edge_vertex, &self.edge_edge], [&self.face_vertex])
        };
        (
            v_lists.into_iter().flat_map(move |l| l.iter().map(pick)),
            e_lists.into_iter().flat_map(move |l| l.iter().map(pick)),
            f_lists.into_iter().flat_map(move |l| l.iter().map(pick)),
        )
    }
}

/// The candidate pairs of the search without lists: features of each body
/// within the other's bounding sphere grown by `inflation`, then world boxes
/// grown by `inflation / 2` that overlap. Holds every pair of entities within
/// `inflation` of each other.
pub fn box_culled_pairs(a: &PosedMesh, b: &PosedMesh, inflation: f64) -> EntityPairs {
    let pad = 0.5 * inflation;
    let na = near_features(a, &b.pose.position, b.features.bounding_radius + inflation, pad);
    let nb = near_features(b, &a.pose.position, a.features.bounding_radius + inflation, pad);
    let mut p = EntityPairs::default();
    let cross = |xs: &[(u32, Aabb)], ys: &[(u32, Aabb)], out: &mut Vec<(u32, u32)>| {
        for &(x, bx) in xs {
            for &(y, by) in ys {
                if boxes_overlap(&bx, &by) {
                    out.push((x, y));
                }
            }
        }
    };
    cross(&na.verts, &nb.faces, &mut p.vertex_face);
    cross(&na.faces, &nb.verts, &mut p.face_vertex);
    cross(&na.edges, &nb.edges, &mut p.edge_edge);
    cross(&na.verts, &nb.edges, &mut p.vertex_edge);
    cross(&na.edges, &nb.verts, &mut p.edge_vertex);
    cross(&na.verts, &nb.verts, &mut p.vertex_vertex);
    p
}

/// Solves the local problem of every pair in `pairs` and keeps the valid ones
/// with `−reach ≤ gap < contact_distance`, before the hierarchy rules. Order:
/// that of `pairs` (vertex(a)–face(b), face(a)–vertex(b), edge–edge,
/// vertex(a)–edge(b), edge(a)–vertex(b), vertex–vertex).
pub fn evaluate_pairs(a: &PosedMesh, b: &PosedMesh, pairs: &EntityPairs, contact_distance: f64, reach: f64) -> Vec<PairHit> {
    let mut out = Vec::new();
    // The two points are |gap| apart: deeper pairs need not be candidates.
    let w = &GapWindow { min: -reach, max: contact_distance };
    let mut keep = |sa: SubRegion, sb: SubRegion, h: Option<FeatureHit>| {
        if let Some(hit) = h {
            out.push(PairHit { sa, sb, hit });
        }
    };
    for &(v, t) in &pairs.vertex_face {
        let h = vertex_face(&a.x[v as usize], &a.vertex_normals[v as usize], &b.triangle(t), &b.face_normals[t as usize], b.inclusive(t), w);
        keep(SubRegion::Vertex(v), SubRegion::Face(t), h);
    }
    for &(t, v) in &pairs.face_vertex {
        let h = vertex_face(&b.x[v as usize], &b.vertex_normals[v as usize], &a.triangle(t), &a.face_normals[t as usize], a.inclusive(t), w);
        keep(SubRegion::Face(t), SubRegion::Vertex(v), h.map(FeatureHit::swapped));
    }
    for &(ea, eb) in &pairs.edge_edge {
        keep(SubRegion::Edge(ea), SubRegion::Edge(eb), edge_edge(&a.edge(ea), &b.edge(eb), w));
    }
    for &(v, e) in &pairs.vertex_edge {
        keep(SubRegion::Vertex(v), SubRegion::Edge(e), vertex_edge(&a.x[v as usize], a.vertex_cone(v), &b.edge(e), w));
    }
    for &(e, v) in &pairs.edge_vertex {
        let h = vertex_edge(&b.x[v as usize], b.vertex_cone(v), &a.edge(e), w);
        keep(SubRegion::Edge(e), SubRegion::Vertex(v), h.map(FeatureHit::swapped));
    }
    for &(va, vb) in &pairs.vertex_vertex {
        let h = vertex_vertex(
            &a.x[va as usize],
            a.vertex_cone(va),
            &a.vertex_normals[va as usize],
            &b.x[vb as usize],
            b.vertex_cone(vb),
            &b.vertex_normals[vb as usize],
            w,
        );
        keep(SubRegion::Vertex(va), SubRegion::Vertex(vb), h);
    }
    out
}

/// All valid sub-region pairs of `a` and `b` with `−inflation ≤ gap <
/// contact_distance`, before the hierarchy rules, from the search without
/// lists ([`box_culled_pairs`], [`evaluate_pairs`]).
pub fn mesh_mesh_candidates(a: &PosedMesh, b: &PosedMesh, contact_distance: f64, inflation: f64) -> Vec<PairHit> {
    evaluate_pairs(a, b, &box_culled_pairs(a, b, inflation), contact_distance, inflation)
}

/// Side `b` when `from_b`, else side `a`.
fn side<'m, 'a>(a: &'m PosedMesh<'a>, b: &'m PosedMesh<'a>, from_b: bool) -> &'m PosedMesh<'a> {
    if from_b {
        b
    } else {
        a
    }
}

/// True when vertex `v` of one side (`from_b`) has a vertex–face contact in
/// `hits` with a triangle of the other side lying in the flat region of
/// triangle `t`.
fn vertex_touches_region(hits: &[PairHit], other: &PosedMesh, from_b: bool, v: u32, t: u32) -> bool {
    let r = other.features.triangle_region[t as usize];
    hits.iter().any(|h| match h.seen_from(from_b) {
        (SubRegion::Vertex(w), SubRegion::Face(s)) => w == v && other.features.triangle_region[s as usize] == r,
        _ => false,
    })
}

/// Hierarchy rule 1 (§3.6, Fig. 9): a vertex–edge contact is dropped when
/// the vertex already has vertex–face contacts with both faces of that edge
/// (a vertex in a concave groove pushes on the two faces, not on the
/// groove's edge as well). Applies to the hit `h`; false for other kinds.
pub fn rule_vertex_edge_covered_by_both_faces(h: &PairHit, hits: &[PairHit], a: &PosedMesh, b: &PosedMesh) -> bool {
    for from_b in [false, true] {
        if let (SubRegion::Vertex(v), SubRegion::Edge(e)) = h.seen_from(from_b) {
            let other = side(a, b, !from_b);
            let [t0, t1] = other.features.edge_triangles[e as usize];
            return vertex_touches_region(hits, other, from_b, v, t0) && vertex_touches_region(hits, other, from_b, v, t1);
        }
    }
    false
}

/// Hierarchy rule 2 (§3.6): a vertex–vertex contact is dropped when a face
/// or an edge adjacent to one of the two vertices already has a contact with
/// the other vertex (vertex–face or vertex–edge): the neighbour carries it.
pub fn rule_vertex_vertex_covered_by_neighbour(h: &PairHit, hits: &[PairHit], a: &PosedMesh, b: &PosedMesh) -> bool {
    let (SubRegion::Vertex(va), SubRegion::Vertex(vb)) = (h.sa, h.sb) else {
        return false;
    };
    // (vertex x on side X, vertex y on the other side, y seen from its side)
    for (x, y, y_from_b) in [(va, vb, true), (vb, va, false)] {
        let x_mesh = side(a, b, !y_from_b);
        let covered = hits.iter().any(|k| match k.seen_from(y_from_b) {
            (SubRegion::Vertex(w), SubRegion::Face(t)) => w == y && x_mesh.region_touches_vertex(t, x),
            (SubRegion::Vertex(w), SubRegion::Edge(e)) => w == y && x_mesh.features.edges[e as usize].contains(&x),
            _ => false,
        });
        if covered {
            return true;
        }
    }
    false
}

/// Fraction of the edge length within which an edge–edge contact point and a
/// vertex–face contact point count as the same contact (rule 3).
pub const DUPLICATE_FRACTION: f64 = 1e-3;

/// Hierarchy rule 3: an edge–edge contact is dropped when it duplicates a
/// vertex–face contact at a shared end: an end vertex of one edge touches a
/// face adjacent to the other edge, at a point within
/// [`DUPLICATE_FRACTION`] × the first edge's length of the edge–edge point.
pub fn rule_edge_edge_duplicates_vertex_face(h: &PairHit, hits: &[PairHit], a: &PosedMesh, b: &PosedMesh) -> bool {
    let (SubRegion::Edge(ea), SubRegion::Edge(eb)) = (h.sa, h.sb) else {
        return false;
    };
    let p = h.hit.midpoint();
    for (ex, ey, x_from_b) in [(ea, eb, false), (eb, ea, true)] {
        let xm = side(a, b, x_from_b);
        let ym = side(a, b, !x_from_b);
        let ends = xm.features.edges[ex as usize];
        let len = (xm.x[ends[1] as usize] - xm.x[ends[0] as usize]).norm();
        let faces = ym.features.edge_triangles[ey as usize].map(|t| ym.features.triangle_region[t as usize]);
        let dup = hits.iter().any(|k| match k.seen_from(x_from_b) {
            (SubRegion::Vertex(w), SubRegion::Face(t)) => {
                ends.contains(&w)
                    && faces.contains(&ym.features.triangle_region[t as usize])
                    && (k.hit.midpoint() - p).norm() <= DUPLICATE_FRACTION * len
            }
            _ => false,
        });
        if dup {
            return true;
        }
    }
    false
}

/// The contact hierarchy of §3.6: removes from `hits` every pair that one of
/// the named rules drops. Each rule looks at the full list before removal, so
/// the result does not depend on the order of the rules.
pub fn apply_hierarchy(hits: &mut Vec<PairHit>, a: &PosedMesh, b: &PosedMesh) {
    let drop: Vec<bool> = hits
        .iter()
        .map(|h| {
            rule_vertex_edge_covered_by_both_faces(h, hits, a, b)
                || rule_vertex_vertex_covered_by_neighbour(h, hits, a, b)
                || rule_edge_edge_duplicates_vertex_face(h, hits, a, b)
        })
        .collect();
    let mut k = 0;
    hits.retain(|_| {
        k += 1;
        !drop[k - 1]
    });
}

/// Narrow phase for two mesh bodies: pushes into `out` one contact per valid
/// sub-region pair with gap below `contact_distance` that survives the
/// hierarchy, ordered (`a` the smaller id), point midway, lever arms from
/// the centres of mass. `inflation` (≥ `contact_distance`, usually contact
/// distance + skin) sizes the per-entity bounding volumes and is the deepest
/// penetration seen.
#[allow(clippy::too_many_arguments)]
pub fn mesh_mesh(
    pa: &BodyPose,
    mesh_a: &TriMesh,
    fa: &MeshFeatures,
    pb: &BodyPose,
    mesh_b: &TriMesh,
    fb: &MeshFeatures,
    contact_distance: f64,
    inflation: f64,
    out: &mut Contacts,
) {
    let a = PosedMesh::new(pa, mesh_a, fa);
    let b = PosedMesh::new(pb, mesh_b, fb);
    let mut hits = mesh_mesh_candidates(&a, &b, contact_distance, inflation.max(contact_distance));
    apply_hierarchy(&mut hits, &a, &b);
    push_hits(&hits, pa, pb, out);
}

/// [`mesh_mesh`] evaluating only `pairs`, the second-level Verlet list of the
/// body pair (sub-regions of `pa` first): the same contacts as [`mesh_mesh`]
/// when `pairs` holds every pair of entities within `inflation` of each other
/// (see [`super::entity_list`]). `scratch`: reused pose buffers.
#[allow(clippy::too_many_arguments)]
pub fn mesh_mesh_listed(
    pa: &BodyPose,
    mesh_a: &TriMesh,
    fa: &MeshFeatures,
    pb: &BodyPose,
    mesh_b: &TriMesh,
    fb: &MeshFeatures,
    pairs: &EntityPairs,
    contact_distance: f64,
    inflation: f64,
    scratch: &mut [PoseScratch; 2],
    out: &mut Contacts,
) {
    if pairs.is_empty() {
        return;
    }
    let (va, ea, ta) = pairs.entities(false);
    let a = PosedMesh::new_sparse(pa, mesh_a, fa, std::mem::take(&mut scratch[0]), va, ea, ta);
    let (vb, eb, tb) = pairs.entities(true);
    let b = PosedMesh::new_sparse(pb, mesh_b, fb, std::mem::take(&mut scratch[1]), vb, eb, tb);
    let mut hits = evaluate_pairs(&a, &b, pairs, contact_distance, inflation.max(contact_distance));
    apply_hierarchy(&mut hits, &a, &b);
    push_hits(&hits, pa, pb, out);
    scratch[0] = a.into_scratch();
    scratch[1] = b.into_scratch();
}

/// One contact per hit (see [`mesh_mesh`]).
fn push_hits(hits: &[PairHit], pa: &BodyPose, pb: &BodyPose, out: &mut Contacts) {
    for h in hits {
        let point = h.hit.midpoint();
        out.push(
            Contact {
                a: pa.id,
                b: pb.id,
                sub_a: h.sa.encode(),
                sub_b: h.sb.encode(),
                point,
                normal: h.hit.normal,
                gap: h.hit.gap,
                r_a: point - pa.position,
                r_b: point - pb.position,
                ia: pa.index,
                ib: pb.index,
            }
            .ordered(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use nalgebra::UnitQuaternion;
    use std::f64::consts::FRAC_PI_4;

    type Q = UnitQuaternion<f64>;

    fn pose(id: u64, x: Vector3<f64>, q: Q) -> BodyPose {
        BodyPose { id, index: id as usize + 10, position: x, orientation: q }
    }

    struct Body {
        mesh: TriMesh,
        f: MeshFeatures,
    }

    fn body(mesh: TriMesh) -> Body {
        let f = MeshFeatures::new(&mesh);
        Body { mesh, f }
    }

    fn cube(s: f64) -> Body {
        body(TriMesh::cuboid(Vector3::repeat(s)))
    }

    /// The prism of the L-shaped polygon (0,0) (2,0) (2,1) (1,1) (1,2) (0,2),
    /// height `h`: one concave vertical edge at (1, 1) (vertices 3 and 9).
    fn l_prism(h: f64) -> Body {
        let poly = [(0.0, 0.0), (2.0, 0.0), (2.0, 1.0), (1.0, 1.0), (1.0, 2.0), (0.0, 2.0)];
        let mut vertices: Vec<Vector3<f64>> = poly.iter().map(|&(x, y)| Vector3::new(x, y, 0.0)).collect();
        vertices.extend(poly.iter().map(|&(x, y)| Vector3::new(x, y, h)));
        let fan = [[3, 4, 5], [3, 5, 0], [3, 0, 1], [3, 1, 2]];
        let mut triangles: Vec<[u32; 3]> = fan.iter().map(|t| [t[0], t[2], t[1]]).collect();
        triangles.extend(fan.iter().map(|t| t.map(|i| i + 6)));
        for i in 0..6u32 {
            let j = (i + 1) % 6;
            triangles.push([i, j, j + 6]);
            triangles.push([i, j + 6, i + 6]);
        }
        let m = TriMesh { vertices, triangles };
        m.check().unwrap();
        body(m)
    }

    /// Orientation turning the body corner (−1,−1,−1) straight down.
    fn corner_down() -> Q {
        Q::rotation_between(&Vector3::new(-1.0, -1.0, -1.0), &-Vector3::z()).unwrap()
    }

    fn detect(a: &Body, pa: &BodyPose, b: &Body, pb: &BodyPose, cd: f64) -> Vec<Contact> {
        let mut out = Contacts::new();
        mesh_mesh(pa, &a.mesh, &a.f, pb, &b.mesh, &b.f, cd, cd + 0.01, &mut out);
        out.iter().collect()
    }

    fn raw(a: &Body, pa: &BodyPose, b: &Body, pb: &BodyPose, cd: f64) -> Vec<PairHit> {
        mesh_mesh_candidates(&PosedMesh::new(pa, &a.mesh, &a.f), &PosedMesh::new(pb, &b.mesh, &b.f), cd, cd + 0.01)
    }

    fn kinds(cs: &[Contact]) -> Vec<(u32, u32)> {
        let k = |s: u32| SubRegion::decode(s).map(|r| match r {
            SubRegion::Face(_) => 2,
            SubRegion::Edge(_) => 1,
            SubRegion::Vertex(_) => 0,
        });
        let mut v: Vec<(u32, u32)> = cs.iter().map(|c| (k(c.sub_a).unwrap(), k(c.sub_b).unwrap())).collect();
        v.sort();
        v
    }

    fn count(hits: &[PairHit], f: impl Fn(&PairHit) -> bool) -> usize {
        hits.iter().filter(|h| f(h)).count()
    }

    const G: f64 = 0.02;

    #[test]
    fn offset_cubes_face_to_face_give_vertices_and_edges_at_gap_g() {
        let c = cube(1.0);
        let pa = pose(0, Vector3::zeros(), Q::identity());
        let pb = pose(1, Vector3::new(0.3, 0.2, 1.0 + G), Q::identity());
        let cs = detect(&c, &pa, &c, &pb, 0.05);
        // Fig. 4c: one vertex of each square inside the other, two edge crossings.
        assert_eq!(kinds(&cs), vec![(0, 2), (1, 1), (1, 1), (2, 0)]);
        for k in &cs {
            assert_eq!((k.a, k.b, k.ia, k.ib), (0, 1, 10, 11));
            assert_relative_eq!(k.gap, G, epsilon = 1e-12);
            assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
            assert_relative_eq!(k.point.z, 0.5 + G / 2.0, epsilon = 1e-12);
            assert_relative_eq!(k.r_a, k.point - pa.position, epsilon = 1e-14);
            assert_relative_eq!(k.r_b, k.point - pb.position, epsilon = 1e-14);
        }
        let mut xy: Vec<(i64, i64)> = cs.iter().map(|k| ((k.point.x * 1e6).round() as i64, (k.point.y * 1e6).round() as i64)).collect();
        xy.sort();
        assert_eq!(xy, vec![(-200000, -300000), (-200000, 500000), (500000, -300000), (500000, 500000)]);
        // The same pair seen with ids exchanged: a is still the smaller id.
        let cs2 = detect(&c, &pose(7, pb.position, Q::identity()), &c, &pose(3, pa.position, Q::identity()), 0.05);
        assert_eq!(cs2.len(), 4);
        assert!(cs2.iter().all(|k| k.a == 3 && (k.normal - Vector3::z()).norm() < 1e-12));
        // Farther than the contact distance: nothing.
        assert!(detect(&c, &pa, &c, &pose(1, Vector3::new(0.3, 0.2, 1.06), Q::identity()), 0.05).is_empty());
    }

    /// A block resting on another rocks by tiny angles: the Fig. 4c set
    /// (two vertex–face, two edge–edge) must not change with the sign of
    /// the tilt (the edge–edge normal then leaves the edges' arcs by the
    /// tilt; with a 1e-9 rad cone tolerance they switched off and the
    /// pile of §3.2 rocked forever).
    #[test]
    fn rocking_block_keeps_its_face_to_face_contacts() {
        let c = cube(1.0);
        let pa = pose(0, Vector3::zeros(), Q::identity());
        let turn = Q::from_axis_angle(&Vector3::z_axis(), 0.08);
        for axis in [Vector3::x(), Vector3::y(), Vector3::new(1.0, 1.0, 0.0).normalize()] {
            for tilt in [-1e-3, -1e-6, 1e-6, 1e-3] {
                let q = Q::from_scaled_axis(axis * tilt) * turn;
                let pb = pose(1, Vector3::new(0.09, 0.06, 1.0 + G), q);
                let cs = detect(&c, &pa, &c, &pb, 0.05);
                assert_eq!(kinds(&cs), vec![(0, 2), (1, 1), (1, 1), (2, 0)], "tilt {tilt} about {axis:?}: {cs:?}");
            }
        }
    }

    #[test]
    fn aligned_cubes_face_to_face_give_four_vertex_pairs() {
        let c = cube(1.0);
        let cs = detect(&c, &pose(0, Vector3::zeros(), Q::identity()), &c, &pose(1, Vector3::new(0.0, 0.0, 1.0 + G), Q::identity()), 0.05);
        assert_eq!(kinds(&cs), vec![(0, 0); 4]);
        for k in &cs {
            assert_relative_eq!(k.gap, G, epsilon = 1e-12);
            assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
        }
    }

    fn crossed_edges() -> (BodyPose, BodyPose) {
        let qa = Q::from_axis_angle(&Vector3::x_axis(), FRAC_PI_4);
        let qb = Q::from_axis_angle(&Vector3::y_axis(), FRAC_PI_4);
        (pose(0, Vector3::zeros(), qa), pose(1, Vector3::new(0.05, -0.1, 2f64.sqrt() + G), qb))
    }

    #[test]
    fn crossed_edges_give_one_edge_edge_contact() {
        let c = cube(1.0);
        let (pa, pb) = crossed_edges();
        let cs = detect(&c, &pa, &c, &pb, 0.05);
        assert_eq!(kinds(&cs), vec![(1, 1)]);
        assert_relative_eq!(cs[0].gap, G, epsilon = 1e-12);
        assert_relative_eq!(cs[0].normal, Vector3::z(), epsilon = 1e-12);
        assert_relative_eq!(cs[0].point, Vector3::new(0.05, 0.0, 2f64.sqrt() / 2.0 + G / 2.0), epsilon = 1e-12);
    }

    fn vertex_on_face() -> (BodyPose, BodyPose) {
        (pose(0, Vector3::zeros(), Q::identity()), pose(1, Vector3::new(0.1, 0.2, 0.5 + 3f64.sqrt() / 2.0 + G), corner_down()))
    }

    #[test]
    fn corner_down_on_a_face_gives_one_vertex_face_contact() {
        let c = cube(1.0);
        let (pa, pb) = vertex_on_face();
        let cs = detect(&c, &pa, &c, &pb, 0.05);
        assert_eq!(kinds(&cs), vec![(2, 0)]);
        assert_eq!(SubRegion::decode(cs[0].sub_b), Some(SubRegion::Vertex(0)));
        assert_relative_eq!(cs[0].gap, G, epsilon = 1e-12);
        assert_relative_eq!(cs[0].normal, Vector3::z(), epsilon = 1e-12);
        assert_relative_eq!(cs[0].point, Vector3::new(0.1, 0.2, 0.5 + G / 2.0), epsilon = 1e-12);
    }

    fn vertex_on_ridge() -> (BodyPose, BodyPose) {
        let qa = Q::from_axis_angle(&Vector3::x_axis(), FRAC_PI_4);
        let h = 2f64.sqrt() / 2.0 + 3f64.sqrt() / 2.0 + G;
        (pose(0, Vector3::zeros(), qa), pose(1, Vector3::new(0.1, 0.0, h), corner_down()))
    }

    #[test]
    fn corner_down_on_a_ridge_gives_one_vertex_edge_contact() {
        let c = cube(1.0);
        let (pa, pb) = vertex_on_ridge();
        let cs = detect(&c, &pa, &c, &pb, 0.05);
        assert_eq!(kinds(&cs), vec![(1, 0)]);
        assert_relative_eq!(cs[0].gap, G, epsilon = 1e-12);
        assert_relative_eq!(cs[0].normal, Vector3::z(), epsilon = 1e-12);
    }

    fn corner_to_corner() -> (BodyPose, BodyPose) {
        let s = G / 3f64.sqrt();
        (pose(0, Vector3::zeros(), Q::identity()), pose(1, Vector3::repeat(1.0 + s), Q::identity()))
    }

    #[test]
    fn cubes_corner_to_corner_give_one_vertex_vertex_contact() {
        let c = cube(1.0);
        let (pa, pb) = corner_to_corner();
        let cs = detect(&c, &pa, &c, &pb, 0.05);
        assert_eq!(kinds(&cs), vec![(0, 0)]);
        assert_eq!((SubRegion::decode(cs[0].sub_a), SubRegion::decode(cs[0].sub_b)), (Some(SubRegion::Vertex(7)), Some(SubRegion::Vertex(0))));
        assert_relative_eq!(cs[0].gap, G, epsilon = 1e-12);
        assert_relative_eq!(cs[0].normal, Vector3::repeat(1.0).normalize(), epsilon = 1e-12);
        // Slightly overlapping: each corner is inside the other cube, under its three
        // faces (gap −0.001); the vertex–vertex pair is then dropped by rule 2.
        let cs = detect(&c, &pa, &c, &pose(1, Vector3::repeat(1.0 - 0.001), Q::identity()), 0.05);
        assert_eq!(kinds(&cs), vec![(0, 2), (0, 2), (0, 2), (2, 0), (2, 0), (2, 0)]);
        for k in &cs {
            assert_relative_eq!(k.gap, -0.001, epsilon = 1e-12);
        }
        // Turned off the diagonal so the direction leaves the corners' cones: the faces take over.
        let cs = detect(&c, &pa, &c, &pose(1, Vector3::new(1.0 + G, 0.6, 0.7), Q::identity()), 0.05);
        assert!(kinds(&cs).iter().all(|&k| k != (0, 0)), "{cs:?}");
    }

    #[test]
    fn tetrapod_arm_tip_flat_on_a_face_touches_with_its_tip_ring() {
        let (l, r, n) = (1.0, 0.25, 8);
        let t = body(TriMesh::tetrapod(l, r, n));
        let slab = cube(4.0);
        // Arm 0 (along (1,1,1)) turned straight down; the tip cap lies flat at gap g.
        let q = Q::rotation_between(&Vector3::repeat(1.0), &-Vector3::z()).unwrap();
        let pa = pose(0, Vector3::zeros(), Q::identity());
        let pb = pose(1, Vector3::new(0.3, -0.2, 2.0 + l + G), q);
        let cs = detect(&slab, &pa, &t, &pb, 0.05);
        assert_eq!(kinds(&cs), vec![(2, 0); n as usize], "{cs:?}");
        for k in &cs {
            assert_relative_eq!(k.gap, G, epsilon = 1e-12);
            assert_relative_eq!(k.normal, Vector3::z(), epsilon = 1e-12);
            assert_relative_eq!((k.point - Vector3::new(0.3, -0.2, 2.0 + G / 2.0)).norm(), r / 2.0, epsilon = 1e-12);
        }
    }

    /// Rule 1 scene: a small cube's corner in the concave groove of the L.
    #[test]
    fn rule_vertex_edge_in_concave_groove_is_dropped() {
        let l = l_prism(2.0);
        let c = cube(0.4);
        let pa = pose(0, Vector3::zeros(), Q::identity());
        let pb = pose(1, Vector3::new(1.0 + G + 0.2, 1.0 + G + 0.2, 1.0), Q::identity());
        let hits = raw(&l, &pa, &c, &pb, 0.05);
        let concave = l.f.edge_id(3, 9).unwrap();
        let ve = |h: &PairHit| h.sa == SubRegion::Edge(concave) && matches!(h.sb, SubRegion::Vertex(_));
        assert_eq!(count(&hits, ve), 2, "{hits:?}");
        assert_eq!(count(&hits, |h| matches!((h.sa, h.sb), (SubRegion::Face(_), SubRegion::Vertex(_)))), 8);
        let cs = detect(&l, &pa, &c, &pb, 0.05);
        assert_eq!(kinds(&cs), vec![(2, 0); 8]);
        for k in &cs {
            assert_relative_eq!(k.gap, G, epsilon = 1e-12);
        }
        // Away from the groove's second face the rule does not apply: the vertex–edge
        // pair is simply invalid there (out of the vertex cone), nothing is dropped wrongly.
        let pb = pose(1, Vector3::new(1.0 + G + 0.2, 1.5, 1.0), Q::identity());
        assert_eq!(kinds(&detect(&l, &pa, &c, &pb, 0.05)), vec![(2, 0); 4]);
    }

    /// Rule 2 scene: a small cube's corner above the L's reflex top corner.
    #[test]
    fn rule_vertex_vertex_covered_by_adjacent_edges_is_dropped() {
        let l = l_prism(2.0);
        let c = cube(0.4);
        let pa = pose(0, Vector3::zeros(), Q::identity());
        let pb = pose(1, Vector3::new(1.0 + G + 0.2, 1.0 + G + 0.2, 2.0 + G + 0.2), Q::identity());
        let hits = raw(&l, &pa, &c, &pb, 0.05);
        let vv = |h: &PairHit| (h.sa, h.sb) == (SubRegion::Vertex(9), SubRegion::Vertex(0));
        assert_eq!(count(&hits, vv), 1, "{hits:?}");
        assert_relative_eq!(hits.iter().find(|h| vv(h)).unwrap().hit.gap, G * 3f64.sqrt(), epsilon = 1e-12);
        let cs = detect(&l, &pa, &c, &pb, 0.05);
        // Four vertex–edge contacts remain (the corner on both top edges of the notch,
        // and the two neighbouring cube corners), all at gap √2·g... or g for the neighbours.
        assert_eq!(kinds(&cs), vec![(1, 0); 4]);
        let corner: Vec<&Contact> = cs.iter().filter(|k| SubRegion::decode(k.sub_b) == Some(SubRegion::Vertex(0))).collect();
        assert_eq!(corner.len(), 2);
        for k in corner {
            assert_relative_eq!(k.gap, G * 2f64.sqrt(), epsilon = 1e-12);
        }
    }

    /// Rule 3 scene: cube B turned about z so that its bottom edge crosses
    /// A's top edge at distance `eps` from A's corner, which touches B's face.
    fn rule3_scene(eps: f64) -> (BodyPose, BodyPose) {
        let phi: f64 = 0.3;
        let c = Vector3::new(0.5 - 0.5 * phi.sin(), 0.5 - eps + 0.5 * phi.cos(), 1.0 + G);
        (pose(0, Vector3::zeros(), Q::identity()), pose(1, c, Q::from_axis_angle(&Vector3::z_axis(), phi)))
    }

    #[test]
    fn rule_edge_edge_duplicating_a_vertex_face_is_dropped() {
        let c = cube(1.0);
        let (ea, eb) = (c.f.edge_id(5, 7).unwrap(), c.f.edge_id(0, 1).unwrap());
        let ee = |h: &PairHit| (h.sa, h.sb) == (SubRegion::Edge(ea), SubRegion::Edge(eb));
        let vf = |h: &PairHit| h.sa == SubRegion::Vertex(7) && matches!(h.sb, SubRegion::Face(_));
        let has = |cs: &[Contact], sa: SubRegion| cs.iter().any(|k| SubRegion::decode(k.sub_a) == Some(sa));
        // Close to the corner: both are valid, the edge–edge is dropped.
        let (pa, pb) = rule3_scene(1e-4);
        let hits = raw(&c, &pa, &c, &pb, 0.05);
        assert_eq!((count(&hits, ee), count(&hits, vf)), (1, 1), "{hits:?}");
        let cs = detect(&c, &pa, &c, &pb, 0.05);
        assert!(!has(&cs, SubRegion::Edge(ea)) && has(&cs, SubRegion::Vertex(7)));
        // Farther from the corner: two distinct contacts, both kept.
        let (pa, pb) = rule3_scene(0.05);
        let cs = detect(&c, &pa, &c, &pb, 0.05);
        assert!(has(&cs, SubRegion::Edge(ea)) && has(&cs, SubRegion::Vertex(7)));
    }

    /// First-order gap change n·(δx_b + δθ_b × r_b − δx_a − δθ_a × r_a)
    /// against the gap recomputed at perturbed poses, for every contact of
    /// the scene (matched by sub-regions).
    fn check_gap_derivative(a: &Body, b: &Body, pa: BodyPose, pb: BodyPose, expect: (u32, u32)) {
        let cs = detect(a, &pa, b, &pb, 0.05);
        assert!(kinds(&cs).contains(&expect), "expected {expect:?} in {cs:?}\n{:?}", raw(a, &pa, b, &pb, 0.05));
        // Perturbations of size h: the first-order term is O(h); its error is
        // O(h²/gap) (curvature of the gap), far below 1e-4·h for h = 1e-7,
        // while a wrong normal or lever arm would be off by O(h).
        let h = 1e-7;
        let dirs = [
            (Vector3::new(0.3, -0.5, 0.8), Vector3::new(-0.2, 0.7, 0.4), Vector3::new(0.6, 0.1, -0.9), Vector3::new(0.5, -0.3, 0.2)),
            (Vector3::new(-0.7, 0.2, 0.1), Vector3::new(0.9, -0.1, 0.3), Vector3::new(0.2, 0.8, -0.4), Vector3::new(-0.6, 0.4, 0.7)),
        ];
        for (dxa, dta, dxb, dtb) in dirs {
            let qa = Q::from_scaled_axis(dta * h) * pa.orientation;
            let qb = Q::from_scaled_axis(dtb * h) * pb.orientation;
            let pa2 = BodyPose { position: pa.position + dxa * h, orientation: qa, ..pa };
            let pb2 = BodyPose { position: pb.position + dxb * h, orientation: qb, ..pb };
            let cs2 = detect(a, &pa2, b, &pb2, 0.05);
            for k in &cs {
                let k2 = cs2.iter().find(|c| (c.sub_a, c.sub_b) == (k.sub_a, k.sub_b)).expect("contact persists");
                let predicted = k.normal.dot(&(dxb * h + (dtb * h).cross(&k.r_b) - dxa * h - (dta * h).cross(&k.r_a)));
                let actual = k2.gap - k.gap;
                assert!(
                    (actual - predicted).abs() <= 1e-4 * h && predicted.abs() > 1e-3 * h,
                    "{:?}: actual {actual:e} predicted {predicted:e}",
                    kinds(&[*k])
                );
            }
        }
    }

    #[test]
    fn gap_derivatives_match_finite_differences() {
        let c = cube(1.0);
        let tilt = |p: BodyPose, axis: Vector3<f64>| BodyPose { orientation: Q::from_scaled_axis(axis * 0.01) * p.orientation, ..p };
        let (pa, pb) = crossed_edges();
        check_gap_derivative(&c, &c, tilt(pa, Vector3::z()), tilt(pb, Vector3::x()), (1, 1));
        let (pa, pb) = vertex_on_face();
        check_gap_derivative(&c, &c, tilt(pa, Vector3::new(1.0, 1.0, 0.0)), tilt(pb, Vector3::y()), (2, 0));
        let (pa, pb) = vertex_on_ridge();
        check_gap_derivative(&c, &c, tilt(pa, Vector3::z()), tilt(pb, Vector3::new(0.0, 1.0, 1.0)), (1, 0));
        let (pa, pb) = corner_to_corner();
        check_gap_derivative(&c, &c, tilt(pa, Vector3::new(1.0, -1.0, 0.0)), tilt(pb, Vector3::new(0.0, 1.0, -1.0)), (0, 0));
    }
}
