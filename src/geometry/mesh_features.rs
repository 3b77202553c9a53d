//! Sub-regions of a closed triangle mesh (time-step stage 2 "contact"): unique
//! edges, adjacency and the angle-weighted pseudo-normals used to tell inside
//! from outside. Built once per mesh shape, before the first step.
use crate::body::TriMesh;
use nalgebra::Vector3;

/// Bit position of the kind tag in an encoded [`SubRegion`].
const KIND_SHIFT: u32 = 30;
/// Mask of the index part of an encoded [`SubRegion`].
const INDEX_MASK: u32 = (1 << KIND_SHIFT) - 1;
/// Marks "none" in the `u32` adjacency arrays.
pub const NONE: u32 = u32::MAX;

/// A feature of a mesh, the sub-region a contact point lies on.
///
/// Encoding as `u32` ([`SubRegion::encode`]): the top two bits are the kind,
/// the low 30 bits the index:
/// - `Face(t)`   = `t`            (triangle index `t` of the mesh),
/// - `Edge(e)`   = `1 << 30 | e`  (`e` indexes [`MeshFeatures::edges`], the
///   unique mesh edges sorted by their sorted vertex pair `(lo, hi)`, so both
///   triangles sharing an edge give the same id),
/// - `Vertex(v)` = `2 << 30 | v`  (mesh vertex index `v`).
///
/// A sphere has the single sub-region `0`. Indices must be below 2³⁰.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SubRegion {
    /// Triangle `t`.
    Face(u32),
    /// Unique mesh edge `e`.
    Edge(u32),
    /// Mesh vertex `v`.
    Vertex(u32),
}

impl SubRegion {
    /// The `u32` id stored in contacts (see the type's documentation).
    pub fn encode(self) -> u32 {
        let (kind, index) = match self {
            SubRegion::Face(t) => (0, t),
            SubRegion::Edge(e) => (1, e),
            SubRegion::Vertex(v) => (2, v),
        };
        debug_assert!(index <= INDEX_MASK, "sub-region index {index} does not fit in 30 bits");
        (kind << KIND_SHIFT) | (index & INDEX_MASK)
    }

    /// Inverse of [`SubRegion::encode`]; `None` for an invalid kind tag.
    pub fn decode(id: u32) -> Option<Self> {
        let index = id & INDEX_MASK;
        match id >> KIND_SHIFT {
            0 => Some(SubRegion::Face(index)),
            1 => Some(SubRegion::Edge(index)),
            2 => Some(SubRegion::Vertex(index)),
            _ => None,
        }
    }
}

/// Topology and normals of a mesh, in its body frame.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshFeatures {
    /// Unique edges as sorted vertex pairs `(lo, hi)`, in ascending order.
    pub edges: Vec<[u32; 2]>,
    /// For triangle `t`, the edge ids of its edges `v0v1`, `v1v2`, `v2v0`.
    pub triangle_edges: Vec<[u32; 3]>,
    /// The two triangles sharing each edge, ascending (`NONE` if open).
    pub edge_triangles: Vec<[u32; 2]>,
    /// Outward unit normal of each triangle.
    pub face_normals: Vec<Vector3<f64>>,
    /// Unit pseudo-normal of each edge: the normalised sum of the two face
    /// normals (Bærentzen & Aanæs 2005).
    pub edge_normals: Vec<Vector3<f64>>,
    /// Unit angle-weighted pseudo-normal of each vertex (Thürmer & Wüthrich).
    pub vertex_normals: Vec<Vector3<f64>>,
    /// For each edge, the triangle it is reported as when its two faces are
    /// coplanar (the diagonal of a split quad is no real edge), else `NONE`.
    pub edge_flat_face: Vec<u32>,
    /// For each vertex, the triangle it is reported as when all its faces are
    /// coplanar (a vertex inside a flat tessellated face), else `NONE`.
    pub vertex_flat_face: Vec<u32>,
    /// For each triangle, the lowest triangle id of its flat region (the
    /// triangles connected to it through coplanar "edges"): a split quad is one
    /// region, so "the vertex touches this face" is asked per region.
    pub triangle_region: Vec<u32>,
    /// CSR offsets into `vertex_cone_normals`: vertex `v` owns
    /// `vertex_cone_start[v]..vertex_cone_start[v + 1]`.
    pub vertex_cone_start: Vec<u32>,
    /// The distinct outward normals of the faces around each vertex: the
    /// generators of its external cone ([`crate::geometry::in_normal_cone`]).
    pub vertex_cone_normals: Vec<Vector3<f64>>,
    /// A bounding sphere `(centre, radius)` of each triangle, for culling.
    pub triangle_spheres: Vec<(Vector3<f64>, f64)>,
    /// Largest vertex distance from the body-frame origin (centre of mass).
    pub bounding_radius: f64,
    /// Length of the longest edge.
    pub longest_edge: f64,
}

/// Two unit normals closer than this (1 − cos θ) are coplanar.
const FLAT_TOLERANCE: f64 = 1e-10;

impl MeshFeatures {
    /// Builds the features of `mesh` (sorting, no hashing: deterministic).
    pub fn new(mesh: &TriMesh) -> Self {
        let nt = mesh.triangles.len();
        let nv = mesh.vertices.len();
        let vert = |i: u32| mesh.vertices[i as usize];
        // Every triangle edge as (lo, hi, triangle, k), sorted to group equal edges.
        let mut te: Vec<(u32, u32, u32, u8)> = Vec::with_capacity(3 * nt);
        for (t, tri) in mesh.triangles.iter().enumerate() {
            for k in 0..3 {
                let (i, j) = (tri[k], tri[(k + 1) % 3]);
                te.push((i.min(j), i.max(j), t as u32, k as u8));
            }
        }
        te.sort_unstable();
        let mut edges: Vec<[u32; 2]> = Vec::with_capacity(3 * nt / 2);
        let mut edge_triangles: Vec<[u32; 2]> = Vec::with_capacity(3 * nt / 2);
        let mut triangle_edges = vec![[NONE; 3]; nt];
        for &(lo, hi, t, k) in &te {
            if edges.last() != Some(&[lo, hi]) {
                edges.push([lo, hi]);
                edge_triangles.push([t, NONE]);
            } else {
                let last = edge_triangles.last_mut().expect("edge pushed above");
                if last[1] == NONE {
                    last[1] = t;
                }
            }
            triangle_edges[t as usize][k as usize] = (edges.len() - 1) as u32;
        }
        let face_normals: Vec<Vector3<f64>> = mesh
            .triangles
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(vert);
                (b - a).cross(&(c - a)).normalize()
            })
            .collect();
        let mut edge_normals = Vec::with_capacity(edges.len());
        let mut edge_flat_face = Vec::with_capacity(edges.len());
        for tr in &edge_triangles {
            let n0 = face_normals[tr[0] as usize];
            if tr[1] == NONE {
                edge_normals.push(n0);
                edge_flat_face.push(NONE);
                continue;
            }
            let n1 = face_normals[tr[1] as usize];
            edge_normals.push((n0 + n1).normalize());
            edge_flat_face.push(if n0.dot(&n1) >= 1.0 - FLAT_TOLERANCE { tr[0] } else { NONE });
        }
        let mut vertex_sum = vec![Vector3::zeros(); nv];
        let mut vertex_first = vec![NONE; nv];
        for (t, tri) in mesh.triangles.iter().enumerate() {
            let p = tri.map(vert);
            for k in 0..3 {
                let e1 = p[(k + 1) % 3] - p[k];
                let e2 = p[(k + 2) % 3] - p[k];
                let angle = e1.angle(&e2);
                let v = tri[k] as usize;
                vertex_sum[v] += face_normals[t] * angle;
                if vertex_first[v] == NONE {
                    vertex_first[v] = t as u32;
                }
            }
        }
        let mut vertex_flat_face = vertex_first.clone();
        for (t, tri) in mesh.triangles.iter().enumerate() {
            for &v in tri {
                let f = vertex_first[v as usize];
                if face_normals[f as usize].dot(&face_normals[t]) < 1.0 - FLAT_TOLERANCE {
                    vertex_flat_face[v as usize] = NONE;
                }
            }
        }
        let vertex_normals =
            vertex_sum.iter().map(|s| if s.norm() > 0.0 { s.normalize() } else { Vector3::zeros() }).collect();
        let triangle_spheres = mesh
            .triangles
            .iter()
            .map(|t| {
                let p = t.map(vert);
                let c = (p[0] + p[1] + p[2]) / 3.0;
                let r = p.iter().map(|q| (q - c).norm()).fold(0.0, f64::max);
                (c, r)
            })
            .collect();
        // Flat regions: union-find over coplanar edges, representative = lowest id.
        let mut region: Vec<u32> = (0..nt as u32).collect();
        fn root(r: &mut [u32], mut t: u32) -> u32 {
            while r[t as usize] != t {
                r[t as usize] = r[r[t as usize] as usize];
                t = r[t as usize];
            }
            t
        }
        for (e, tr) in edge_triangles.iter().enumerate() {
            if edge_flat_face[e] != NONE {
                let (a, b) = (root(&mut region, tr[0]), root(&mut region, tr[1]));
                let (lo, hi) = (a.min(b), a.max(b));
                region[hi as usize] = lo;
            }
        }
        let triangle_region: Vec<u32> = (0..nt as u32).map(|t| root(&mut region, t)).collect();
        // Distinct face normals around each vertex.
        let mut around: Vec<Vec<Vector3<f64>>> = vec![Vec::new(); nv];
        for (t, tri) in mesh.triangles.iter().enumerate() {
            let n = face_normals[t];
            for &v in tri {
                let list = &mut around[v as usize];
                if !list.iter().any(|m: &Vector3<f64>| m.dot(&n) >= 1.0 - FLAT_TOLERANCE) {
                    list.push(n);
                }
            }
        }
        let mut vertex_cone_start = Vec::with_capacity(nv + 1);
        let mut vertex_cone_normals = Vec::new();
        vertex_cone_start.push(0);
        for list in around {
            vertex_cone_normals.extend(list);
            vertex_cone_start.push(vertex_cone_normals.len() as u32);
        }
        Self {
            triangle_region,
            vertex_cone_start,
            vertex_cone_normals,
            triangle_edges,
            edge_triangles,
            face_normals,
            edge_normals,
            vertex_normals,
            edge_flat_face,
            vertex_flat_face,
            triangle_spheres,
            bounding_radius: mesh.bounding_radius(),
            longest_edge: edges.iter().map(|&[i, j]| (vert(j) - vert(i)).norm()).fold(0.0, f64::max),
            edges,
        }
    }

    /// Generators of the external cone of vertex `v` (body frame).
    pub fn vertex_cone(&self, v: u32) -> &[Vector3<f64>] {
        let (s, e) = (self.vertex_cone_start[v as usize], self.vertex_cone_start[v as usize + 1]);
        &self.vertex_cone_normals[s as usize..e as usize]
    }

    /// True for a real edge (not the diagonal of a flat tessellated face).
    pub fn is_real_edge(&self, e: u32) -> bool {
        self.edge_flat_face[e as usize] == NONE
    }

    /// True for a real vertex (not inside a flat tessellated face).
    pub fn is_real_vertex(&self, v: u32) -> bool {
        self.vertex_flat_face[v as usize] == NONE
    }

    /// Id of the mesh edge between vertices `a` and `b`, if there is one.
    pub fn edge_id(&self, a: u32, b: u32) -> Option<u32> {
        self.edges.binary_search(&[a.min(b), a.max(b)]).ok().map(|e| e as u32)
    }

    /// The mesh sub-region of feature `feature` of triangle `t`. Edges and
    /// vertices whose faces are all coplanar are reported as a face (the
    /// lowest-numbered adjacent triangle), so a split quad has no diagonal.
    pub fn sub_region(&self, mesh: &TriMesh, t: usize, feature: super::TriFeature) -> SubRegion {
        use super::TriFeature;
        match feature {
            TriFeature::Face => SubRegion::Face(t as u32),
            TriFeature::Edge(k) => {
                let e = self.triangle_edges[t][k as usize];
                match self.edge_flat_face[e as usize] {
                    NONE => SubRegion::Edge(e),
                    f => SubRegion::Face(f),
                }
            }
            TriFeature::Vertex(k) => {
                let v = mesh.triangles[t][k as usize];
                match self.vertex_flat_face[v as usize] {
                    NONE => SubRegion::Vertex(v),
                    f => SubRegion::Face(f),
                }
            }
        }
    }

    /// Outward unit pseudo-normal of a sub-region (face normal, edge or
    /// angle-weighted vertex pseudo-normal). For a closest point `c` of the
    /// mesh to `p` on sub-region `s`, `(p - c) · pseudo_normal(s) < 0` iff `p`
    /// is inside the closed mesh (Bærentzen & Aanæs 2005).
    pub fn pseudo_normal(&self, s: SubRegion) -> Vector3<f64> {
        match s {
            SubRegion::Face(t) => self.face_normals[t as usize],
            SubRegion::Edge(e) => self.edge_normals[e as usize],
            SubRegion::Vertex(v) => self.vertex_normals[v as usize],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::TriFeature;
    use approx::assert_relative_eq;

    #[test]
    fn encoding_round_trips_and_kinds_differ() {
        for s in [SubRegion::Face(0), SubRegion::Face(7), SubRegion::Edge(0), SubRegion::Edge(5), SubRegion::Vertex(3)] {
            assert_eq!(SubRegion::decode(s.encode()), Some(s));
        }
        assert_eq!(SubRegion::Face(4).encode(), 4);
        assert_eq!(SubRegion::Edge(4).encode(), (1 << 30) + 4);
        assert_eq!(SubRegion::Vertex(4).encode(), (2 << 30) + 4);
        assert_eq!(SubRegion::decode(3 << 30), None);
    }

    #[test]
    fn cube_has_18_edges_6_of_them_flat_diagonals() {
        let m = TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        let f = MeshFeatures::new(&m);
        assert_eq!(f.edges.len(), 18);
        assert_eq!(f.edge_flat_face.iter().filter(|&&x| x != NONE).count(), 6);
        assert!(f.edge_triangles.iter().all(|t| t[1] != NONE));
        // Both triangles see a shared edge under the same id.
        for (t, tri) in m.triangles.iter().enumerate() {
            for k in 0..3 {
                assert_eq!(Some(f.triangle_edges[t][k]), f.edge_id(tri[k], tri[(k + 1) % 3]));
            }
        }
        // Corners of a cube: pseudo-normal along the diagonal, no flat vertex.
        for (v, p) in m.vertices.iter().enumerate() {
            assert_relative_eq!(f.vertex_normals[v], p.normalize(), epsilon = 1e-12);
            assert_eq!(f.vertex_flat_face[v], NONE);
        }
        // Each face (two triangles) is one flat region; a corner has 3 cone normals.
        let mut regions = f.triangle_region.clone();
        regions.sort();
        regions.dedup();
        assert_eq!(regions.len(), 6);
        assert!((0..8).all(|v| f.vertex_cone(v).len() == 3));
        assert!(f.is_real_edge(f.edge_id(6, 7).unwrap()));
        // A real edge: pseudo-normal at 45°; a diagonal reports as a face.
        let e = f.edge_id(6, 7).unwrap();
        assert_relative_eq!(f.edge_normals[e as usize], Vector3::new(0.0, 1.0, 1.0).normalize(), epsilon = 1e-12);
        let d = f.edge_id(4, 7).unwrap();
        let s = f.sub_region(&m, f.edge_triangles[d as usize][1] as usize, TriFeature::Edge(
            (0..3).find(|&k| f.triangle_edges[f.edge_triangles[d as usize][1] as usize][k] == d).unwrap() as u8,
        ));
        assert_eq!(s, SubRegion::Face(f.edge_triangles[d as usize][0]));
    }
}
