//! Candidate sub-region pairs of two posed meshes ([`EntityPairs`]), and the
//! search without second-level lists that finds them by bounding volumes.
use super::posed::PosedMesh;
use crate::geometry::Aabb;
use nalgebra::Vector3;

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
    pub(super) fn entities(&self, side_b: bool) -> (impl Iterator<Item = u32> + '_, impl Iterator<Item = u32> + '_, impl Iterator<Item = u32> + '_) {
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
