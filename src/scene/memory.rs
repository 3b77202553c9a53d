//! The memory model of a scene's distributed layout: what a body and a
//! contact cost at the peak of a step (measured), and the estimate start-up
//! makes from it for a rank count (`startup::estimate`). Kept apart from
//! start-up so that `config`'s summary can print it without importing it.

/// Bytes a body costs on its owner at the peak of a CD step, from the heap
/// profile in BENCHMARKS.md ("Where the memory of a CD step goes"): the
/// `Bodies` arrays 222, the neighbour reference and global index 32, the
/// Verlet list's copies and cells 52, M⁻¹ blocks 96, B's two body vectors 96.
pub const BYTES_PER_BODY: u64 = 222 + 32 + 52 + 96 + 96;
/// Bytes per contact at that peak: `Contacts` 164, B's row halves and
/// indices in the solver 116, B in PETSc 44, APGD's contact vectors 107,
/// the warm start 40, Verlet candidate pairs 27.
pub const BYTES_PER_CONTACT: u64 = 164 + 116 + 44 + 107 + 40 + 27;
/// Contacts per body in a dense packing of spheres: six neighbours, each
/// contact held once (the measured lattice has 1.8).
pub const CONTACTS_PER_BODY: u64 = 3;
/// Memory of a rank before any body: MPI, PETSc, HDF5, the binary.
pub const BASE_BYTES: u64 = 64 << 20;

/// The distributed memory layout of a scene.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryEstimate {
    pub bodies: u64,
    pub ranks: usize,
    /// Bytes per body including its share of contacts.
    pub bytes_per_body: u64,
    /// Owned plus ghost bodies of the average rank.
    pub bodies_per_rank: u64,
    pub bytes_per_rank: u64,
    /// This node's memory and the ranks sharing it.
    pub node_memory: Option<u64>,
    pub ranks_on_node: usize,
}

/// Bytes as kB, MB, GB, TB, PB.
pub fn human(bytes: u64) -> String {
    let b = bytes as f64;
    for (unit, scale) in [("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)] {
        if b >= scale {
            return format!("{:.1} {unit}", b / scale);
        }
    }
    format!("{:.1} kB", b / 1e3)
}
