//! The local problem of each candidate pair in closed form (one file per
//! kind in `contact/`), kept when valid and within the gap window.
use super::candidates::{box_culled_pairs, EntityPairs};
use super::posed::PosedMesh;
use super::PairHit;
use crate::contact::edge_edge::edge_edge;
use crate::contact::feature_hit::{FeatureHit, GapWindow};
use crate::contact::vertex_edge::vertex_edge;
use crate::contact::vertex_face::vertex_face;
use crate::contact::vertex_vertex::vertex_vertex;
use crate::geometry::SubRegion;

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
/// lists ([`super::box_culled_pairs`], [`evaluate_pairs`]).
pub fn mesh_mesh_candidates(a: &PosedMesh, b: &PosedMesh, contact_distance: f64, inflation: f64) -> Vec<PairHit> {
    evaluate_pairs(a, b, &box_culled_pairs(a, b, inflation), contact_distance, inflation)
}
