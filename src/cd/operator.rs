//! CD, step 3a: the contact operator of one step (paper eqs 15–20). B is
//! assembled as a PETSc MPIAIJ matrix — one row per contact of this rank,
//! columns the six DOFs `6·global_index + k` of every body — M⁻¹ is kept as
//! local 6×6 blocks, and N f = Δt B M⁻¹ Bᵀ f is applied matrix-free
//! (MatMultTranspose, block solve, MatMult).
use crate::body::dof_free;
use crate::body::Bodies;
use crate::contact::{Contacts, WALL_INDEX};
use crate::parallel::exchange::Layout;
use crate::parallel::Comm;
use crate::petsc::{Mat, PetscInt, Result, SplitCsr, Vector};
use super::friction::{Constraint, Set};
use nalgebra::{DMatrix, Matrix3, Matrix6, Vector3, Vector6};

/// Generalized inverse mass of local body `i` (owned or ghost): 1/m on free
/// translational DOFs, the inverse of the free sub-block of the world-frame
/// inertia on the rotational ones, zero rows and columns on masked DOFs
/// (all zero for a fixed body).
pub fn inverse_mass(bodies: &Bodies, i: usize) -> Matrix6<f64> {
    let mask = bodies.dof_mask[i];
    let mut out = Matrix6::zeros();
    if bodies.fixed[i] || mask == 0 {
        return out;
    }
    let m = bodies.mass[i];
    for k in 0..3 {
        if dof_free(mask, k) && m > 0.0 {
            out[(k, k)] = 1.0 / m;
        }
    }
    let free: Vec<usize> = (0..3).filter(|k| dof_free(mask, 3 + k)).collect();
    if !free.is_empty() {
        let j = bodies.world_inertia(i);
        let n = free.len();
        let sub = DMatrix::from_fn(n, n, |r, c| j[(free[r], free[c])]);
        if let Some(inv) = sub.try_inverse() {
            for r in 0..n {
                for c in 0..n {
                    out[(3 + free[r], 3 + free[c])] = inv[(r, c)];
                }
            }
        }
    }
    out
}

/// M⁻¹ of one body by its non-zero blocks (96 bytes, not a 288-byte 6×6):
/// 1/m on the translational diagonal and the rotational 3×3 block (the
/// blocks [`inverse_mass`] fills; the rest is zero about the centre of mass).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockInverse {
    pub lin: Vector3<f64>,
    pub rot: Matrix3<f64>,
}

impl BlockInverse {
    pub fn of(m: &Matrix6<f64>) -> Self {
        Self { lin: Vector3::new(m[(0, 0)], m[(1, 1)], m[(2, 2)]), rot: m.fixed_view::<3, 3>(3, 3).into_owned() }
    }

    /// The full 6×6 matrix.
    pub fn matrix(&self) -> Matrix6<f64> {
        let mut m = Matrix6::zeros();
        m.set_partial_diagonal(self.lin.iter().copied());
        m.fixed_view_mut::<3, 3>(3, 3).copy_from(&self.rot);
        m
    }
}

/// `M⁻¹ v` by its blocks: the sums of the full 6×6 product without its
/// terms in zero (a sweep applies it to every body).
impl std::ops::Mul<Vector6<f64>> for BlockInverse {
    type Output = Vector6<f64>;
    fn mul(self, v: Vector6<f64>) -> Vector6<f64> {
        let r = self.rot * Vector3::new(v[3], v[4], v[5]);
        Vector6::new(self.lin.x * v[0], self.lin.y * v[1], self.lin.z * v[2], r.x, r.y, r.z)
    }
}

/// Entries of a row half below this fraction of its largest are round-off.
const ROUNDOFF: f64 = 1e-10;

/// The two halves of contact `i`'s row of B: on body a `[−n, −(r_a × n)]`,
/// on body b `[n, r_b × n]` (zero for a wall), each with the body's masked
/// DOFs zeroed. `B v` is then the normal relative velocity (positive when
/// opening) and `Bᵀ f` pushes a and b apart.
pub fn jacobian_rows(contacts: &Contacts, i: usize, bodies: &Bodies) -> (Vector6<f64>, Vector6<f64>) {
    row_halves(contacts, i, bodies, &contacts.normal[i])
}

/// The halves of the row of B along direction `d` at contact `i` (the
/// normal, or a tangent of a frictional contact): `B v` is the velocity of
/// b's point relative to a's along `d`.
pub fn row_halves(contacts: &Contacts, i: usize, bodies: &Bodies, d: &Vector3<f64>) -> (Vector6<f64>, Vector6<f64>) {
    let ta = contacts.r_a[i].cross(d);
    let mut ja = Vector6::new(-d.x, -d.y, -d.z, -ta.x, -ta.y, -ta.z);
    clean_row(&mut ja, bodies.dof_mask[contacts.ia[i]]);
    let ib = contacts.ib[i];
    let jb = if ib == WALL_INDEX {
        Vector6::zeros()
    } else {
        let tb = contacts.r_b[i].cross(d);
        let mut jb = Vector6::new(d.x, d.y, d.z, tb.x, tb.y, tb.z);
        clean_row(&mut jb, bodies.dof_mask[ib]);
        jb
    };
    (ja, jb)
}

/// The halves of the rolling (twisting) row about direction `d` at contact
/// `i`, scaled by its rolling radius `radius`: `B v` is R (ω_b − ω_a)·d, a
/// speed, so its force is the moment over R (N) and sits beside f_n in the
/// same units.
pub fn spin_halves(contacts: &Contacts, i: usize, bodies: &Bodies, d: &Vector3<f64>, radius: f64) -> (Vector6<f64>, Vector6<f64>) {
    let t = radius * d;
    let mut ja = Vector6::new(0.0, 0.0, 0.0, -t.x, -t.y, -t.z);
    clean_row(&mut ja, bodies.dof_mask[contacts.ia[i]]);
    let ib = contacts.ib[i];
    let jb = if ib == WALL_INDEX {
        Vector6::zeros()
    } else {
        let mut jb = Vector6::new(0.0, 0.0, 0.0, t.x, t.y, t.z);
        clean_row(&mut jb, bodies.dof_mask[ib]);
        jb
    };
    (ja, jb)
}

/// Rolling resistance of one step's contacts: the rolling radius R of each
/// (R_a R_b / (R_a + R_b) over its spheres; zero, so no rows, between two
/// meshes) and its (μ_r, μ_tw).
pub struct Rolling {
    pub radius: Vec<f64>,
    pub mu: Vec<[f64; 2]>,
}

/// Zeroes masked DOFs and round-off entries: a sphere's lever arm r × n is
/// ~1e-20 |r|, not zero, and keeping it would double B's non-zeros and make
/// the sphere's rotations look coupled to its contacts.
fn clean_row(j: &mut Vector6<f64>, mask: u8) {
    for k in 0..6 {
        if !dof_free(mask, k) {
            j[k] = 0.0;
        }
    }
    let big = j.amax();
    j.apply(|x| {
        if x.abs() <= ROUNDOFF * big {
            *x = 0.0
        }
    });
}

/// Rows of B per contact: 1 frictionless, 3 with friction (n, t1, t2), 6
/// with rolling resistance as well (then r1, r2, tw).
pub fn rows_per_contact(friction: bool, rolling: bool) -> usize {
    match (friction, rolling) {
        (false, _) => 1,
        (true, false) => 3,
        (true, true) => 6,
    }
}

/// B, M⁻¹ and the per-contact data of one step on this rank.
pub struct ContactOperator {
    /// B: local rows = `rows` per contact of this rank (normal, then the
    /// two tangents of a frictional scene), local columns = 6·n_owned.
    pub b: Mat,
    /// Rows of B per contact: 1 (frictionless), 3 (n, t1, t2) or, with
    /// rolling resistance, 6 (n, t1, t2, r1, r2, tw: the rolling rows about
    /// t1 and t2, the twisting row about n).
    pub rows: usize,
    /// The tangents (t1, t2) of each contact (empty when `rows` is 1).
    pub tangents: Vec<(Vector3<f64>, Vector3<f64>)>,
    /// 1 on the rows of B that are not zero, 0 on the others, per row.
    pub row_act: Vec<f64>,
    pub dt: f64,
    pub n_owned: usize,
    /// M⁻¹ of every local body (owned, then ghosts).
    pub minv: Vec<BlockInverse>,
    /// Normal row halves of B per local contact (see [`jacobian_rows`]).
    pub ja: Vec<Vector6<f64>>,
    pub jb: Vec<Vector6<f64>>,
    /// Tangential row halves (t1, t2) per local contact, as `ja`, `jb`
    /// (empty when `rows` is 1).
    pub jt: Vec<[(Vector6<f64>, Vector6<f64>); 2]>,
    /// Rolling and twisting row halves (r1, r2, tw) per local contact
    /// (empty when `rows` is not 6).
    pub jr: Vec<[(Vector6<f64>, Vector6<f64>); 3]>,
    /// (μ_r, μ_tw) per local contact (empty when `rows` is not 6).
    pub roll: Vec<[f64; 2]>,
    /// Local indices of each contact's bodies (`ib` may be `WALL_INDEX`).
    pub ia: Vec<usize>,
    pub ib: Vec<usize>,
    /// False for a contact whose row of B is zero (both bodies fixed, or
    /// the normal only along masked DOFs): its force is held at zero.
    pub active: Vec<bool>,
    /// First global row of this rank (`rows` × its first contact).
    pub row_offset: PetscInt,
    /// Scratch body vectors for the N apply.
    u: Vector,
    w: Vector,
    /// Number of N applications so far (for throughput reports).
    pub applies: u64,
}

impl ContactOperator {
    /// Assembles B for `contacts`, with two tangential rows per contact
    /// when `friction`, and three rolling rows more with `rolling`.
    /// Collective.
    pub fn assemble(comm: &Comm, bodies: &Bodies, layout: &Layout, contacts: &Contacts, dt: f64, friction: bool, rolling: Option<Rolling>) -> Result<Self> {
        let n_owned = layout.n_owned;
        let nc = contacts.len();
        let rows = rows_per_contact(friction, rolling.is_some());
        let minv: Vec<BlockInverse> = (0..bodies.len()).map(|i| BlockInverse::of(&inverse_mass(bodies, i))).collect();
        let tangents: Vec<(Vector3<f64>, Vector3<f64>)> = if friction { contacts.normal.iter().map(super::friction::tangent_basis).collect() } else { Vec::new() };
        let mut ja = Vec::with_capacity(nc);
        let mut jb = Vec::with_capacity(nc);
        let mut jt = Vec::with_capacity(if friction { nc } else { 0 });
        let mut jr = Vec::with_capacity(if rows == 6 { nc } else { 0 });
        let mut active = Vec::with_capacity(nc);
        let mut row_act = Vec::with_capacity(rows * nc);
        // Row entries (global column, value) of a row of contact i with
        // exact zeros dropped.
        let row_of = |i: usize, a: &Vector6<f64>, b: &Vector6<f64>, row: &mut Vec<(PetscInt, f64)>| {
            row.clear();
            for (local, half) in [(contacts.ia[i], a), (contacts.ib[i], b)] {
                if local == WALL_INDEX {
                    continue;
                }
                let base = 6 * layout.global_index[local] as PetscInt;
                for k in 0..6 {
                    if half[k] != 0.0 {
                        row.push((base + k as PetscInt, half[k]));
                    }
                }
            }
        };
        // The halves of row k of contact i (k = 0 normal, 1–2 tangents,
        // 3–5 rolling about t1, t2 and twisting about n).
        let radius = |i: usize| rolling.as_ref().map_or(0.0, |r| r.radius[i]);
        let halves = |i: usize, k: usize| match k {
            0 => jacobian_rows(contacts, i, bodies),
            1 => row_halves(contacts, i, bodies, &tangents[i].0),
            2 => row_halves(contacts, i, bodies, &tangents[i].1),
            3 => spin_halves(contacts, i, bodies, &tangents[i].0, radius(i)),
            4 => spin_halves(contacts, i, bodies, &tangents[i].1, radius(i)),
            _ => spin_halves(contacts, i, bodies, &contacts.normal[i], radius(i)),
        };
        let mut row = Vec::with_capacity(12);
        let first = layout.offset as PetscInt * 6;
        // Diagonal block by global index: a periodic image of an owned body
        // is a ghost whose columns are local.
        let owned = first..first + 6 * n_owned as PetscInt;
        // B straight into PETSc's own storage: MatSetValues searched each
        // row's place, a tenth of a settled frictional step.
        let mut csr = SplitCsr::with_capacity(rows * nc, 8 * rows * nc);
        for i in 0..nc {
            for k in 0..rows {
                let (a, b) = halves(i, k);
                row_of(i, &a, &b, &mut row);
                if k == 0 {
                    active.push(!row.is_empty());
                    ja.push(a);
                    jb.push(b);
                } else if k == 1 {
                    jt.push([(a, b), (a, b)]);
                } else if k == 2 {
                    jt[i][1] = (a, b);
                } else if k == 3 {
                    jr.push([(a, b); 3]);
                } else {
                    jr[i][k - 3] = (a, b);
                }
                // A tangent of a contact without a normal row carries no force.
                row_act.push(if !row.is_empty() && active[i] { 1.0 } else { 0.0 });
                csr.push_row(&mut row, &owned);
            }
        }
        let bmat = Mat::aij_from_split(comm, 6 * n_owned as PetscInt, 6 * layout.total as PetscInt, csr)?;
        let row_offset = bmat.ownership_range()?.start;
        let (u, _) = bmat.create_vecs()?;
        let w = u.duplicate()?;
        Ok(Self {
            b: bmat,
            rows,
            tangents,
            row_act,
            dt,
            n_owned,
            minv,
            ja,
            jb,
            jt,
            jr,
            roll: rolling.map_or(Vec::new(), |r| r.mu),
            ia: contacts.ia.clone(),
            ib: contacts.ib.clone(),
            active,
            row_offset,
            u,
            w,
            applies: 0,
        })
    }

    /// Number of contacts on this rank.
    pub fn n_local(&self) -> usize {
        self.ja.len()
    }

    /// A zero vector with `rows` entries per contact (row layout of B).
    pub fn contact_vec(&self) -> Result<Vector> {
        let (_, mut y) = self.b.create_vecs()?;
        y.zero()?;
        Ok(y)
    }

    /// A zero vector with six entries per owned body (column layout of B).
    pub fn body_vec(&self) -> Result<Vector> {
        let (mut x, _) = self.b.create_vecs()?;
        x.zero()?;
        Ok(x)
    }

    /// `out = N f = Δt B M⁻¹ Bᵀ f`. Collective.
    pub fn apply_n(&mut self, f: &Vector, out: &mut Vector) -> Result<()> {
        self.b.mult_transpose(f, &mut self.u)?;
        {
            let (ug, mut wg) = (self.u.view()?, self.w.view_mut()?);
            // M⁻¹ is [diag(1/m), 0; 0, J⁻¹] about the centre of mass.
            for ((u, w), m) in ug.chunks_exact(6).zip(wg.chunks_exact_mut(6)).zip(&self.minv) {
                for k in 0..3 {
                    w[k] = m.lin[k] * u[k];
                }
                let rot = m.rot * Vector3::new(u[3], u[4], u[5]);
                w[3..].copy_from_slice(rot.as_slice());
            }
        }
        self.b.mult(&self.w, out)?;
        out.scale(self.dt)?;
        self.applies += 1;
        Ok(())
    }

    /// The feasible set `set` over this operator's rows (inactive rows held
    /// at zero).
    pub fn constraint(&self, set: Set) -> Constraint {
        let roll = if matches!(set, Set::Normal) { Vec::new() } else { self.roll.clone() };
        Constraint { act: self.row_act.clone(), set, scale: None, roll }
    }

    /// The same set with APGD's metric scaled by 1/N_cc, the inverse of
    /// the diagonal of N at each contact's normal row (Jacobi scaling).
    pub fn constraint_scaled(&self, set: Set) -> Constraint {
        let scale = (0..self.n_local())
            .flat_map(|i| {
                let d = self.diagonal(i);
                let s = if d > 0.0 { 1.0 / d } else { 0.0 };
                std::iter::repeat_n(s, self.rows)
            })
            .collect();
        Constraint { scale: Some(scale), ..self.constraint(set) }
    }

    /// N_cc at local contact `i`'s normal row, Δt (j_a M_a⁻¹ j_aᵀ + j_b M_b⁻¹ j_bᵀ).
    pub fn diagonal(&self, i: usize) -> f64 {
        let mut d = self.ja[i].dot(&(self.minv[self.ia[i]] * self.ja[i]));
        if self.ib[i] != WALL_INDEX {
            d += self.jb[i].dot(&(self.minv[self.ib[i]] * self.jb[i]));
        }
        self.dt * d
    }

    /// The stopping measure over all ranks: the largest natural-map residual
    /// of `c` (`max |min(f, Nf + p)|` without friction), given `nf = N f`.
    /// Collective.
    pub fn residual(&self, comm: &Comm, c: &Constraint, f: &Vector, nf: &Vector, p: &Vector) -> Result<f64> {
        let r = c.residual(&f.view()?, &nf.view()?, &p.view()?);
        Ok(crate::parallel::max_f64(comm, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{Body, DOF_2D, DOF_ALL, DOF_NONE};
    use crate::contact::Contact;
    use nalgebra::{Matrix3, UnitQuaternion, Vector3};

    fn body(id: u64, x: f64, mask: u8) -> Body {
        Body {
            id,
            shape: 0,
            material: 0,
            position: Vector3::new(x, 0.0, 0.0),
            orientation: UnitQuaternion::from_euler_angles(0.3, -0.2, 0.7),
            velocity: Vector3::zeros(),
            angular_velocity: Vector3::zeros(),
            mass: 2.0,
            inertia: Matrix3::from_diagonal(&Vector3::new(1.0, 2.0, 3.0)),
            fixed: mask == DOF_NONE,
            dof_mask: mask,
        }
    }

    #[test]
    fn inverse_mass_inverts_free_block() {
        let mut bs = Bodies::new();
        bs.push(body(0, 0.0, DOF_ALL));
        bs.push(body(1, 1.0, DOF_2D));
        bs.push(body(2, 2.0, DOF_NONE));
        let m = inverse_mass(&bs, 0);
        let j = bs.world_inertia(0);
        let rot = m.fixed_view::<3, 3>(3, 3) * j;
        assert!((rot - Matrix3::identity()).norm() < 1e-12);
        assert_eq!(m[(0, 0)], 0.5);
        let m2 = inverse_mass(&bs, 1);
        assert_eq!(m2[(2, 2)], 0.0);
        assert!((m2[(5, 5)] - 1.0 / bs.world_inertia(1)[(2, 2)]).abs() < 1e-12);
        assert_eq!(m2[(3, 3)], 0.0);
        assert_eq!(inverse_mass(&bs, 2), Matrix6::zeros());
        // The stored blocks are the whole of M⁻¹, and M⁻¹ v is the 6×6 product.
        let v = Vector6::new(1.0, -2.0, 3.0, 0.5, -0.25, 2.0);
        for i in 0..3 {
            let m = inverse_mass(&bs, i);
            assert_eq!(BlockInverse::of(&m).matrix(), m);
            assert_eq!(BlockInverse::of(&m) * v, m * v);
        }
    }

    #[test]
    fn b_gives_opening_velocity_and_bt_pushes_apart() {
        let mut bs = Bodies::new();
        bs.push(body(0, 0.0, DOF_ALL));
        bs.push(body(1, 1.0, DOF_ALL));
        let mut cs = Contacts::new();
        let n = Vector3::new(1.0, 0.0, 0.0);
        cs.push(Contact {
            a: 0,
            b: 1,
            sub_a: 0,
            sub_b: 0,
            point: Vector3::new(0.5, 0.1, 0.0),
            normal: n,
            gap: 0.0,
            r_a: Vector3::new(0.5, 0.1, 0.0),
            r_b: Vector3::new(-0.5, 0.1, 0.0),
            ia: 0,
            ib: 1,
        });
        let (ja, jb) = jacobian_rows(&cs, 0, &bs);
        // b moving along +n opens the gap.
        let vb = Vector6::new(1.0, 0.0, 0.0, 0.0, 0.0, 0.0);
        assert_eq!(jb.dot(&vb), 1.0);
        assert_eq!(ja.dot(&vb), -1.0);
        // Bᵀ f: force +f n on b, −f n on a.
        assert_eq!(jb.fixed_rows::<3>(0).into_owned(), n);
        assert_eq!(ja.fixed_rows::<3>(0).into_owned(), -n);
        // Rotation of a about z with lever arm r_a: point velocity ω × r_a.
        let w = Vector3::new(0.0, 0.0, 2.0);
        let pv = w.cross(&Vector3::new(0.5, 0.1, 0.0));
        let va = Vector6::new(0.0, 0.0, 0.0, w.x, w.y, w.z);
        assert!((ja.dot(&va) - (-pv.dot(&n))).abs() < 1e-15);
    }
}
