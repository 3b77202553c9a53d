//! The fixed-size blocks of a contact element, shared by the element
//! ([`super::assemble`]) and its derivatives ([`super::jet`]).
use nalgebra::{SMatrix, SVector};

/// 12-vectors and 12×12 matrices over (u_a, α_a, u_b, α_b).
pub type Vec12 = SVector<f64, 12>;
pub type Mat12 = SMatrix<f64, 12, 12>;
