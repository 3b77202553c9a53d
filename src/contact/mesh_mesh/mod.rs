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
//!
//! Files: [`posed`] (meshes in the world), [`candidates`] (pairs to
//! evaluate), [`evaluate`] (local problems), [`hierarchy`] (§3.6 rules);
//! this file joins them into contacts.
mod candidates;
mod evaluate;
mod hierarchy;
mod posed;

pub use candidates::{box_culled_pairs, EntityPairs};
pub use evaluate::{evaluate_pairs, mesh_mesh_candidates};
pub use hierarchy::{
    apply_hierarchy, rule_edge_edge_duplicates_vertex_face, rule_vertex_edge_covered_by_both_faces, rule_vertex_vertex_covered_by_neighbour,
    DUPLICATE_FRACTION,
};
pub use posed::{PoseScratch, PosedMesh};

use super::feature_hit::FeatureHit;
use super::{BodyPose, Contact, Contacts};
use crate::body::TriMesh;
use crate::geometry::{MeshFeatures, SubRegion};

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
mod tests;
