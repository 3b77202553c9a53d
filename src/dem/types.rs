//! Types shared by a contact element ([`super::assemble`]) and its
//! derivatives ([`super::jet`], [`super::mesh_grad`]): the fixed-size blocks
//! and the kinds of exact mesh gap.
use nalgebra::{SMatrix, SVector};

/// 12-vectors and 12×12 matrices over (u_a, α_a, u_b, α_b).
pub type Vec12 = SVector<f64, 12>;
pub type Mat12 = SMatrix<f64, 12, 12>;

/// How the gap of an exact mesh contact is measured, with d = p_b' − p_a'.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum MeshKind {
    /// Face of b (or a wall) against a vertex of a: g = (Q_b d_b)·d, d_b the
    /// contact normal at i (minus the face's outward normal).
    PlaneOnB,
    /// Face of a against a vertex of b: g = (Q_a d_a)·d, d_a the face's
    /// outward normal.
    PlaneOnA,
    /// Edge–edge (eq 35): m = Q_a d_a × Q_b d_b (edge directions),
    /// g = ±m·d/|m|, the sign of configuration i.
    Lines { sign: f64 },
    /// Vertex of a against the edge of b (direction d_b): g = |d − (d·e)e|,
    /// e = Q_b d_b.
    PointLineB,
    /// Edge of a (direction d_a) against a vertex of b.
    PointLineA,
    /// Vertex–vertex: g = |d|.
    Points,
}
