//! The contact hierarchy for concave regions (Gay Neto & Wriggers §3.6):
//! rules that drop a hit another hit of the same pair already carries.
use super::posed::PosedMesh;
use super::PairHit;
use crate::geometry::SubRegion;

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
