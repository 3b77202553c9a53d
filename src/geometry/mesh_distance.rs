//! Distance between two closed triangle meshes at given poses (start-up:
//! the overlap check of generators that place meshes closer than their
//! bounding spheres; tests: the gaps of a stored pack). Not part of the time
//! step: the narrow phase works on sub-region pairs (`contact::mesh_mesh`).
//!
//! Two closed surfaces that do not cross are nearest at a vertex–triangle or
//! an edge–edge pair; they cross exactly when an edge of one pierces a
//! triangle of the other. A pair of bodies whose surfaces neither cross nor
//! come near may still overlap when one holds the other whole: a vertex of
//! each is then tested against the other body by its winding number.
use super::distance::{point_triangle_distance_squared, segment_segment_distance_squared};
use super::Aabb;
use crate::body::mesh::TriMesh;
use nalgebra::{Isometry3, Point3, Vector3};

/// Smallest distance between the surfaces of the closed meshes `a` at pose
/// `pa` and `b` at `pb` (body frame to world), or 0 when the bodies overlap
/// (surfaces crossing, or one inside the other). Pairs of triangles farther
/// apart than `cutoff` are not examined: a result ≥ `cutoff` only says the
/// bodies are at least `cutoff` apart (it is then `f64::INFINITY`).
pub fn mesh_distance(a: &TriMesh, pa: &Isometry3<f64>, b: &TriMesh, pb: &Isometry3<f64>, cutoff: f64) -> f64 {
    // Work in a's body frame.
    let rel = pa.inverse() * pb;
    let va: &[Vector3<f64>] = &a.vertices;
    let vb: Vec<Vector3<f64>> = b.vertices.iter().map(|v| (rel * Point3::from(*v)).coords).collect();
    let boxes = |v: &[Vector3<f64>], tris: &[[u32; 3]], pad: f64| -> Vec<Aabb> {
        tris.iter()
            .map(|t| {
                let mut bx = Aabb::empty();
                for &i in t {
                    bx.grow(&v[i as usize]);
                }
                Aabb { min: bx.min.add_scalar(-pad), max: bx.max.add_scalar(pad) }
            })
            .collect()
    };
    let (ba, bb) = (boxes(va, &a.triangles, 0.5 * cutoff), boxes(&vb, &b.triangles, 0.5 * cutoff));
    let whole = |bx: &[Aabb]| {
        bx.iter().fold(Aabb::empty(), |mut w, q| {
            w.grow(&q.min);
            w.grow(&q.max);
            w
        })
    };
    let (wa, wb) = (whole(&ba), whole(&bb));
    let overlap = |p: &Aabb, q: &Aabb| (0..3).all(|k| p.min[k] <= q.max[k] && q.min[k] <= p.max[k]);
    // Sweep along x over the boxes that meet the other body's box, sorted
    // by their lower x.
    let order = |bx: &[Aabb], other: &Aabb| {
        let mut o: Vec<usize> = (0..bx.len()).filter(|&i| overlap(&bx[i], other)).collect();
        o.sort_by(|&i, &j| bx[i].min.x.total_cmp(&bx[j].min.x));
        o
    };
    let (oa, ob) = (order(&ba, &wb), order(&bb, &wa));
    let mut best = f64::INFINITY;
    // A box of b starting more than the widest b box before a's box starts
    // ends before it (and before every later one of a).
    let wide = ob.iter().map(|&j| bb[j].max.x - bb[j].min.x).fold(0.0, f64::max);
    let mut start = 0;
    for &i in &oa {
        while start < ob.len() && bb[ob[start]].min.x < ba[i].min.x - wide {
            start += 1;
        }
        for &j in &ob[start..] {
            if bb[j].min.x > ba[i].max.x {
                break;
            }
            if !overlap(&ba[i], &bb[j]) {
                continue;
            }
            let ta = a.triangles[i].map(|k| va[k as usize]);
            let tb = b.triangles[j].map(|k| vb[k as usize]);
            // Most boxes of the long, thin triangles of a mesh overlap with
            // the triangles a plane apart: skip those farther than the cutoff.
            let reach = cutoff.min(best);
            if beyond_plane(&ta, &tb, reach) || beyond_plane(&tb, &ta, reach) {
                continue;
            }
            best = best.min(triangle_distance(&ta, &tb));
            if best == 0.0 {
                return 0.0;
            }
        }
    }
    // The surfaces do not cross: the bodies overlap only if one holds the
    // other (then every vertex of it is inside; the surfaces may still be near).
    // (A body inside the other lies inside its box.)
    let within = |p: &Aabb, q: &Aabb| (0..3).all(|k| p.min[k] >= q.min[k] && p.max[k] <= q.max[k]);
    if within(&wb, &wa) && winding_number(va, &a.triangles, &vb[0]).abs() > 0.5 {
        return 0.0;
    }
    let a_in_b = (rel.inverse() * Point3::from(va[0])).coords;
    if within(&wa, &wb) && winding_number(&b.vertices, &b.triangles, &a_in_b).abs() > 0.5 {
        return 0.0;
    }
    if best < cutoff {
        best
    } else {
        f64::INFINITY
    }
}

/// True when every vertex of `u` lies farther than `d` from the plane of
/// `t`, on one side (then the triangles are farther than `d` apart).
fn beyond_plane(t: &[Vector3<f64>; 3], u: &[Vector3<f64>; 3], d: f64) -> bool {
    let n = (t[1] - t[0]).cross(&(t[2] - t[0]));
    let len = n.norm();
    if len == 0.0 {
        return false;
    }
    let s = u.map(|p| n.dot(&(p - t[0])) / len);
    s.iter().all(|&x| x > d) || s.iter().all(|&x| x < -d)
}

/// Distance between two triangles, 0 when they cross or touch.
pub fn triangle_distance(ta: &[Vector3<f64>; 3], tb: &[Vector3<f64>; 3]) -> f64 {
    for k in 0..3 {
        if segment_crosses_triangle(&ta[k], &ta[(k + 1) % 3], tb) || segment_crosses_triangle(&tb[k], &tb[(k + 1) % 3], ta) {
            return 0.0;
        }
    }
    let mut d2 = f64::INFINITY;
    for k in 0..3 {
        d2 = d2.min(point_triangle_distance_squared(&ta[k], tb)).min(point_triangle_distance_squared(&tb[k], ta));
        for l in 0..3 {
            d2 = d2.min(segment_segment_distance_squared(&ta[k], &ta[(k + 1) % 3], &tb[l], &tb[(l + 1) % 3]));
        }
    }
    d2.sqrt()
}

/// True when the segment [p, q] meets the (closed) triangle `t` at a single
/// point (Möller–Trumbore on the segment's parameter in [0, 1]). A segment
/// in the triangle's plane is left to the edge–edge distances.
fn segment_crosses_triangle(p: &Vector3<f64>, q: &Vector3<f64>, t: &[Vector3<f64>; 3]) -> bool {
    let (e1, e2, d) = (t[1] - t[0], t[2] - t[0], q - p);
    let h = d.cross(&e2);
    let det = e1.dot(&h);
    if det.abs() <= 1e-14 * e1.norm() * e2.norm() * d.norm() {
        return false;
    }
    let s = p - t[0];
    let u = s.dot(&h) / det;
    if !(0.0..=1.0).contains(&u) {
        return false;
    }
    let qv = s.cross(&e1);
    let v = d.dot(&qv) / det;
    if v < 0.0 || u + v > 1.0 {
        return false;
    }
    let w = e2.dot(&qv) / det;
    (0.0..=1.0).contains(&w)
}

/// Winding number of the closed, outward-oriented surface (`v`, `tris`)
/// about the point `p`: 1 inside, 0 outside (sum of the triangles' signed
/// solid angles over 4π, Van Oosterom & Strackee).
pub fn winding_number(v: &[Vector3<f64>], tris: &[[u32; 3]], p: &Vector3<f64>) -> f64 {
    let mut omega = 0.0;
    for t in tris {
        let [a, b, c] = t.map(|k| v[k as usize] - p);
        let (la, lb, lc) = (a.norm(), b.norm(), c.norm());
        let num = a.dot(&b.cross(&c));
        let den = la * lb * lc + a.dot(&b) * lc + a.dot(&c) * lb + b.dot(&c) * la;
        omega += 2.0 * num.atan2(den);
    }
    omega / (4.0 * std::f64::consts::PI)
}

#[cfg(test)]
mod tests {
    use super::*;
    use nalgebra::{Translation3, UnitQuaternion};

    fn pose(x: f64, y: f64, z: f64, axis: Vector3<f64>, angle: f64) -> Isometry3<f64> {
        Isometry3::from_parts(Translation3::new(x, y, z), UnitQuaternion::from_scaled_axis(axis * angle))
    }

    #[test]
    fn cubes_face_to_face_edge_to_edge_and_overlapping() {
        let c = TriMesh::cuboid(Vector3::new(1.0, 1.0, 1.0));
        let id = Isometry3::identity();
        // Face to face, 0.3 apart.
        let d = mesh_distance(&c, &id, &c, &pose(1.3, 0.2, -0.1, Vector3::z(), 0.0), 1.0);
        assert!((d - 0.3).abs() < 1e-12, "{d}");
        // Beyond the cutoff.
        assert_eq!(mesh_distance(&c, &id, &c, &pose(1.3, 0.0, 0.0, Vector3::z(), 0.0), 0.2), f64::INFINITY);
        // Turned 45° about z: its edge faces the first cube's face.
        let h = 0.5 * 2f64.sqrt();
        let d = mesh_distance(&c, &id, &c, &pose(0.5 + h + 0.01, 0.0, 0.0, Vector3::z(), std::f64::consts::FRAC_PI_4), 1.0);
        assert!((d - 0.01).abs() < 1e-12, "{d}");
        // Crossing surfaces.
        assert_eq!(mesh_distance(&c, &id, &c, &pose(0.9, 0.3, 0.2, Vector3::new(1.0, 2.0, 3.0).normalize(), 0.4), 1.0), 0.0);
        // One cube inside the other: no surfaces cross.
        let small = TriMesh::cuboid(Vector3::new(0.2, 0.2, 0.2));
        assert_eq!(mesh_distance(&c, &id, &small, &pose(0.1, 0.0, 0.0, Vector3::x(), 0.3), 1.0), 0.0);
        assert_eq!(mesh_distance(&small, &pose(0.1, 0.0, 0.0, Vector3::x(), 0.3), &c, &id, 1.0), 0.0);
        assert_eq!(mesh_distance(&small, &pose(0.1, 0.0, 0.0, Vector3::x(), 0.3), &c, &id, 0.0), 0.0);
    }

    #[test]
    fn tetrapods_match_a_brute_force_over_all_vertex_face_and_edge_pairs() {
        let t = TriMesh::tetrapod(0.62, 0.124, 9);
        let vs = |m: &TriMesh, p: &Isometry3<f64>| -> Vec<Vector3<f64>> { m.vertices.iter().map(|v| (p * Point3::from(*v)).coords).collect() };
        let mut hits = (0, 0);
        for k in 0..40 {
            let f = k as f64;
            let pa = pose(0.0, 0.0, 0.0, Vector3::new(1.0, 0.3 * f, -0.2).normalize(), 0.37 * f);
            let pb = pose(0.7 + 0.01 * f, 0.2, -0.1, Vector3::new(-0.4, 1.0, 0.1 * f).normalize(), 0.91 * f);
            let d = mesh_distance(&t, &pa, &t, &pb, 0.5);
            let (a, b) = (vs(&t, &pa), vs(&t, &pb));
            let mut brute = f64::INFINITY;
            for ta in &t.triangles {
                for tb in &t.triangles {
                    brute = brute.min(triangle_distance(&ta.map(|i| a[i as usize]), &tb.map(|i| b[i as usize])));
                }
            }
            if brute >= 0.5 {
                assert_eq!(d, f64::INFINITY);
            } else {
                assert!((d - brute).abs() < 1e-12, "case {k}: {d} vs {brute}");
            }
            if d == 0.0 {
                hits.0 += 1;
            } else if d < 0.5 {
                hits.1 += 1;
            }
        }
        assert!(hits.0 > 3 && hits.1 > 3, "cases: {hits:?} (overlapping, near)");
    }

    #[test]
    fn winding_number_inside_and_outside_a_tetrapod() {
        let t = TriMesh::tetrapod(0.62, 0.124, 9);
        assert!((winding_number(&t.vertices, &t.triangles, &Vector3::zeros()) - 1.0).abs() < 1e-9);
        let tip = Vector3::new(1.0, 1.0, 1.0).normalize() * 0.6;
        assert!((winding_number(&t.vertices, &t.triangles, &tip) - 1.0).abs() < 1e-9);
        assert!(winding_number(&t.vertices, &t.triangles, &Vector3::new(0.3, 0.3, -0.3)).abs() < 1e-9);
    }
}
