//! Closed triangle meshes: loading (STL ASCII/binary, OBJ), checks, and
//! built-in generators. A loaded mesh is moved so that its centroid is at the
//! origin: body positions are centres of mass.
use super::mass::MassProperties;
use nalgebra::Vector3;
use std::collections::HashMap;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    #[error("cannot read mesh: {0}")]
    Io(String),
    #[error("unsupported mesh format (use .stl or .obj)")]
    Format,
    #[error("mesh has no triangles")]
    Empty,
    #[error("triangle {0} is degenerate (zero area)")]
    Degenerate(usize),
    #[error("mesh is not closed: edge ({0}, {1}) of triangle {2} has no opposite edge")]
    Open(u32, u32, usize),
    #[error("mesh is not consistently oriented or not manifold at edge ({0}, {1}), triangle {2}")]
    Orientation(u32, u32, usize),
    #[error("mesh encloses no positive volume (inside-out?)")]
    NegativeVolume,
}

/// A closed, outward-oriented triangle surface in its body frame.
#[derive(Clone, Debug, PartialEq)]
pub struct TriMesh {
    pub vertices: Vec<Vector3<f64>>,
    pub triangles: Vec<[u32; 3]>,
}

impl TriMesh {
    /// Checks the surface and moves its centroid to the origin.
    pub fn new(vertices: Vec<Vector3<f64>>, triangles: Vec<[u32; 3]>) -> Result<Self, MeshError> {
        let mut m = Self { vertices, triangles };
        m.check()?;
        let c = m.mass_properties().centroid;
        for v in &mut m.vertices {
            *v -= c;
        }
        Ok(m)
    }

    /// Loads an STL (ASCII or binary) or OBJ file, scaled by `scale`.
    pub fn load(path: &Path, scale: f64) -> Result<Self, MeshError> {
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("").to_ascii_lowercase();
        let (v, t) = match ext.as_str() {
            "stl" => {
                let mut f = std::fs::File::open(path).map_err(|e| MeshError::Io(e.to_string()))?;
                let s = stl_io::read_stl(&mut f).map_err(|e| MeshError::Io(e.to_string()))?;
                let v = s.vertices.iter().map(|p| Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64)).collect();
                let t = s.faces.iter().map(|f| f.vertices.map(|i| i as u32)).collect();
                (v, t)
            }
            "obj" => {
                let opts = tobj::LoadOptions { triangulate: true, single_index: true, ..Default::default() };
                let (models, _) = tobj::load_obj(path, &opts).map_err(|e| MeshError::Io(e.to_string()))?;
                let mut v = Vec::new();
                let mut t = Vec::new();
                for m in models {
                    let base = v.len() as u32;
                    v.extend(m.mesh.positions.chunks(3).map(|p| Vector3::new(p[0] as f64, p[1] as f64, p[2] as f64)));
                    t.extend(m.mesh.indices.chunks(3).map(|c| [base + c[0], base + c[1], base + c[2]]));
                }
                (v, t)
            }
            _ => return Err(MeshError::Format),
        };
        let v = v.into_iter().map(|p: Vector3<f64>| p * scale).collect();
        Self::new(v, t)
    }

    /// Closed, manifold, consistently oriented, no degenerate triangle,
    /// positive volume.
    pub fn check(&self) -> Result<(), MeshError> {
        if self.triangles.is_empty() {
            return Err(MeshError::Empty);
        }
        let n = self.vertices.len() as u32;
        let scale = self.bounding_radius().max(f64::MIN_POSITIVE);
        let mut directed: HashMap<(u32, u32), usize> = HashMap::new();
        for (k, t) in self.triangles.iter().enumerate() {
            if t.iter().any(|&i| i >= n) || t[0] == t[1] || t[1] == t[2] || t[0] == t[2] {
                return Err(MeshError::Degenerate(k));
            }
            let [a, b, c] = t.map(|i| self.vertices[i as usize]);
            if (b - a).cross(&(c - a)).norm() <= 1e-14 * scale * scale {
                return Err(MeshError::Degenerate(k));
            }
            for (i, j) in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
                // The same directed edge twice means flipped or non-manifold.
                if directed.insert((i, j), k).is_some() {
                    return Err(MeshError::Orientation(i, j, k));
                }
            }
        }
        for (&(i, j), &k) in &directed {
            if !directed.contains_key(&(j, i)) {
                return Err(MeshError::Open(i, j, k));
            }
        }
        if MassProperties::closed_mesh(&self.vertices, &self.triangles).volume <= 0.0 {
            return Err(MeshError::NegativeVolume);
        }
        Ok(())
    }

    pub fn mass_properties(&self) -> MassProperties {
        MassProperties::closed_mesh(&self.vertices, &self.triangles)
    }

    pub fn bounding_radius(&self) -> f64 {
        self.vertices.iter().map(|v| v.norm()).fold(0.0, f64::max)
    }

    /// A box with edge lengths `size`, two triangles per face (as in the DEM paper).
    pub fn cuboid(size: Vector3<f64>) -> Self {
        let h = size / 2.0;
        let vertices = (0..8)
            .map(|i| {
                Vector3::new(
                    if i & 1 == 0 { -h.x } else { h.x },
                    if i & 2 == 0 { -h.y } else { h.y },
                    if i & 4 == 0 { -h.z } else { h.z },
                )
            })
            .collect();
        // Outward counter-clockwise quads, split along a diagonal.
        let quads = [[0, 2, 3, 1], [4, 5, 7, 6], [0, 1, 5, 4], [2, 6, 7, 3], [0, 4, 6, 2], [1, 3, 7, 5]];
        let triangles = quads.iter().flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]]).collect();
        Self { vertices, triangles }
    }

    /// A sphere of radius `r` from an icosahedron refined `levels` times.
    pub fn icosphere(r: f64, levels: u32) -> Self {
        let p = (1.0 + 5f64.sqrt()) / 2.0;
        let mut v: Vec<Vector3<f64>> = [
            [-1.0, p, 0.0], [1.0, p, 0.0], [-1.0, -p, 0.0], [1.0, -p, 0.0],
            [0.0, -1.0, p], [0.0, 1.0, p], [0.0, -1.0, -p], [0.0, 1.0, -p],
            [p, 0.0, -1.0], [p, 0.0, 1.0], [-p, 0.0, -1.0], [-p, 0.0, 1.0],
        ]
        .iter()
        .map(|a| Vector3::from(*a).normalize())
        .collect();
        let mut t: Vec<[u32; 3]> = vec![
            [0, 11, 5], [0, 5, 1], [0, 1, 7], [0, 7, 10], [0, 10, 11], [1, 5, 9], [5, 11, 4],
            [11, 10, 2], [10, 7, 6], [7, 1, 8], [3, 9, 4], [3, 4, 2], [3, 2, 6], [3, 6, 8],
            [3, 8, 9], [4, 9, 5], [2, 4, 11], [6, 2, 10], [8, 6, 7], [9, 8, 1],
        ];
        for _ in 0..levels {
            let mut mid: HashMap<(u32, u32), u32> = HashMap::new();
            let mut midpoint = |a: u32, b: u32, v: &mut Vec<Vector3<f64>>| {
                *mid.entry((a.min(b), a.max(b))).or_insert_with(|| {
                    v.push(((v[a as usize] + v[b as usize]) / 2.0).normalize());
                    (v.len() - 1) as u32
                })
            };
            let mut next = Vec::with_capacity(t.len() * 4);
            for [a, b, c] in t {
                let ab = midpoint(a, b, &mut v);
                let bc = midpoint(b, c, &mut v);
                let ca = midpoint(c, a, &mut v);
                next.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
            }
            t = next;
        }
        Self { vertices: v.into_iter().map(|x| x * r).collect(), triangles: t }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_meshes_pass_checks() {
        TriMesh::cuboid(Vector3::new(1.0, 2.0, 3.0)).check().unwrap();
        TriMesh::icosphere(1.0, 3).check().unwrap();
    }

    #[test]
    fn flipped_triangle_is_refused() {
        let mut m = TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        m.triangles[3].swap(0, 1);
        assert!(matches!(m.check(), Err(MeshError::Orientation(..))));
    }

    #[test]
    fn open_mesh_is_refused() {
        let mut m = TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        m.triangles.pop();
        assert!(matches!(m.check(), Err(MeshError::Open(..))));
    }

    #[test]
    fn inside_out_mesh_is_refused() {
        let mut m = TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        for t in &mut m.triangles {
            t.swap(0, 1);
        }
        assert!(matches!(m.check(), Err(MeshError::NegativeVolume)));
    }

    #[test]
    fn stl_round_trip() {
        let m = TriMesh::cuboid(Vector3::new(2.0, 1.0, 1.0));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("box.stl");
        let tris: Vec<stl_io::Triangle> = m
            .triangles
            .iter()
            .map(|t| {
                let p = t.map(|i| m.vertices[i as usize]);
                let n = (p[1] - p[0]).cross(&(p[2] - p[0])).normalize();
                stl_io::Triangle {
                    normal: stl_io::Normal::new([n.x as f32, n.y as f32, n.z as f32]),
                    vertices: p.map(|q| stl_io::Vertex::new([q.x as f32, q.y as f32, q.z as f32])),
                }
            })
            .collect();
        stl_io::write_stl(&mut std::fs::File::create(&path).unwrap(), tris.iter()).unwrap();
        let back = TriMesh::load(&path, 1.0).unwrap();
        assert!((back.mass_properties().volume - 2.0).abs() < 1e-6);
    }
}
