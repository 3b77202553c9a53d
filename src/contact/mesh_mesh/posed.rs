//! Mesh bodies posed in the world for the mesh–mesh narrow phase: vertices,
//! normals and vertex cones turned once per body pair (all, or only the
//! entities a second-level list names).
use crate::body::TriMesh;
use crate::contact::edge_edge::EdgeGeom;
use crate::contact::BodyPose;
use crate::geometry::mesh_features::NONE;
use crate::geometry::MeshFeatures;
use nalgebra::Vector3;

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
    pub(super) x: Vec<Vector3<f64>>,
    pub(super) face_normals: Vec<Vector3<f64>>,
    pub(super) vertex_normals: Vec<Vector3<f64>>,
    pub(super) cone: Vec<Vector3<f64>>,
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
    /// an evaluation of a short [`super::EntityPairs`] list reads, at a cost
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

    pub(super) fn vertex_cone(&self, v: u32) -> &[Vector3<f64>] {
        let f = self.features;
        &self.cone[f.vertex_cone_start[v as usize] as usize..f.vertex_cone_start[v as usize + 1] as usize]
    }

    pub(super) fn edge(&self, e: u32) -> EdgeGeom {
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
    pub(super) fn inclusive(&self, t: u32) -> [bool; 3] {
        self.features.triangle_edges[t as usize].map(|e| self.features.edge_flat_face[e as usize] == t)
    }

    /// True when flat region of triangle `t` contains a triangle with vertex `v`.
    pub(super) fn region_touches_vertex(&self, t: u32, v: u32) -> bool {
        let r = self.features.triangle_region[t as usize];
        self.mesh
            .triangles
            .iter()
            .enumerate()
            .any(|(s, tri)| self.features.triangle_region[s] == r && tri.contains(&v))
    }
}
