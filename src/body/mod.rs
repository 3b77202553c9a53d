//! Bodies as struct-of-arrays, their shapes and mass properties. Owned bodies
//! come first, ghosts after (LAMMPS `nlocal + nghost`).
pub mod mass;
pub mod mesh;
pub mod shape;

pub use mass::MassProperties;
pub use mesh::{MeshError, TriMesh};
pub use shape::Shape;

use nalgebra::{Matrix3, UnitQuaternion, Vector3};

/// Bit `k` of a DOF mask set means DOF `k` is free: 0..3 translation x,y,z;
/// 3..6 rotation about x,y,z.
pub type DofMask = u8;
/// All six DOFs free.
pub const DOF_ALL: DofMask = 0b11_1111;
/// 2D (x-y plane): translation z, rotation x and rotation y locked.
pub const DOF_2D: DofMask = 0b10_0011;
/// Fixed body: nothing moves.
pub const DOF_NONE: DofMask = 0;

/// Whether DOF `k` (0..6) is free under `mask`.
pub fn dof_free(mask: DofMask, k: usize) -> bool {
    mask & (1 << k) != 0
}

/// One body as plain values; used to build and to move single bodies.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    pub id: u64,
    pub shape: u32,
    pub material: u32,
    pub position: Vector3<f64>,
    pub orientation: UnitQuaternion<f64>,
    pub velocity: Vector3<f64>,
    pub angular_velocity: Vector3<f64>,
    pub mass: f64,
    /// Body-frame inertia tensor about the centre of mass.
    pub inertia: Matrix3<f64>,
    pub fixed: bool,
    pub dof_mask: DofMask,
}

impl Body {
    /// A body at rest in the reference orientation, its mass and inertia from
    /// the shape's unit-density properties `mp` and the material's `density`;
    /// all DOFs locked when fixed, the 2D ones free in `dim` = 2.
    #[allow(clippy::too_many_arguments)]
    pub fn at_rest(id: u64, shape: u32, material: u32, position: Vector3<f64>, mp: &mass::MassProperties, density: f64, fixed: bool, dim: u8) -> Self {
        let dof_mask = if fixed {
            DOF_NONE
        } else if dim == 2 {
            DOF_2D
        } else {
            DOF_ALL
        };
        Body {
            id,
            shape,
            material,
            position,
            orientation: UnitQuaternion::identity(),
            velocity: Vector3::zeros(),
            angular_velocity: Vector3::zeros(),
            mass: density * mp.volume,
            inertia: density * mp.inertia,
            fixed,
            dof_mask,
        }
    }
}

/// Bodies as struct-of-arrays. Positions are centres of mass; orientations map
/// body frame to world frame; angular velocity is in the world frame.
#[derive(Clone, Debug, Default)]
pub struct Bodies {
    pub id: Vec<u64>,
    pub shape: Vec<u32>,
    pub material: Vec<u32>,
    pub position: Vec<Vector3<f64>>,
    pub orientation: Vec<UnitQuaternion<f64>>,
    pub velocity: Vec<Vector3<f64>>,
    pub angular_velocity: Vec<Vector3<f64>>,
    pub mass: Vec<f64>,
    pub inertia: Vec<Matrix3<f64>>,
    pub fixed: Vec<bool>,
    pub dof_mask: Vec<DofMask>,
}

impl Bodies {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    pub fn push(&mut self, b: Body) {
        self.id.push(b.id);
        self.shape.push(b.shape);
        self.material.push(b.material);
        self.position.push(b.position);
        self.orientation.push(b.orientation);
        self.velocity.push(b.velocity);
        self.angular_velocity.push(b.angular_velocity);
        self.mass.push(b.mass);
        self.inertia.push(b.inertia);
        self.fixed.push(b.fixed);
        self.dof_mask.push(b.dof_mask);
    }

    pub fn get(&self, i: usize) -> Body {
        Body {
            id: self.id[i],
            shape: self.shape[i],
            material: self.material[i],
            position: self.position[i],
            orientation: self.orientation[i],
            velocity: self.velocity[i],
            angular_velocity: self.angular_velocity[i],
            mass: self.mass[i],
            inertia: self.inertia[i],
            fixed: self.fixed[i],
            dof_mask: self.dof_mask[i],
        }
    }

    /// Overwrites body `i`.
    pub fn set(&mut self, i: usize, b: Body) {
        self.id[i] = b.id;
        self.shape[i] = b.shape;
        self.material[i] = b.material;
        self.position[i] = b.position;
        self.orientation[i] = b.orientation;
        self.velocity[i] = b.velocity;
        self.angular_velocity[i] = b.angular_velocity;
        self.mass[i] = b.mass;
        self.inertia[i] = b.inertia;
        self.fixed[i] = b.fixed;
        self.dof_mask[i] = b.dof_mask;
    }

    /// Room for `n` more bodies without growing (a rank's ghosts arrive at
    /// once: a doubled capacity would be slack the size of the rank).
    pub fn reserve_exact(&mut self, n: usize) {
        self.id.reserve_exact(n);
        self.shape.reserve_exact(n);
        self.material.reserve_exact(n);
        self.position.reserve_exact(n);
        self.orientation.reserve_exact(n);
        self.velocity.reserve_exact(n);
        self.angular_velocity.reserve_exact(n);
        self.mass.reserve_exact(n);
        self.inertia.reserve_exact(n);
        self.fixed.reserve_exact(n);
        self.dof_mask.reserve_exact(n);
    }

    /// Drops every body from index `n` on (the ghosts, when `n` = owned count).
    pub fn truncate(&mut self, n: usize) {
        self.id.truncate(n);
        self.shape.truncate(n);
        self.material.truncate(n);
        self.position.truncate(n);
        self.orientation.truncate(n);
        self.velocity.truncate(n);
        self.angular_velocity.truncate(n);
        self.mass.truncate(n);
        self.inertia.truncate(n);
        self.fixed.truncate(n);
        self.dof_mask.truncate(n);
    }

    /// Keeps the bodies for which `keep` is true, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&Body) -> bool) {
        let kept: Vec<usize> = (0..self.len()).filter(|&i| keep(&self.get(i))).collect();
        self.permute(&kept);
    }

    /// Reorders the bodies by ascending id.
    pub fn sort_by_id(&mut self) {
        let mut idx: Vec<usize> = (0..self.len()).collect();
        idx.sort_by_key(|&i| self.id[i]);
        self.permute(&idx);
    }

    /// Keeps bodies `order[0], order[1], …` in that order, one array at a
    /// time (a large rank holds one array twice, not all of them).
    fn permute(&mut self, order: &[usize]) {
        fn pick<T: Copy>(v: &mut Vec<T>, order: &[usize]) {
            *v = order.iter().map(|&i| v[i]).collect();
        }
        pick(&mut self.id, order);
        pick(&mut self.shape, order);
        pick(&mut self.material, order);
        pick(&mut self.position, order);
        pick(&mut self.orientation, order);
        pick(&mut self.velocity, order);
        pick(&mut self.angular_velocity, order);
        pick(&mut self.mass, order);
        pick(&mut self.inertia, order);
        pick(&mut self.fixed, order);
        pick(&mut self.dof_mask, order);
    }

    /// World-frame inverse inertia of body `i` (zero on locked rotational DOFs).
    pub fn world_inertia(&self, i: usize) -> Matrix3<f64> {
        let r = self.orientation[i].to_rotation_matrix();
        r.matrix() * self.inertia[i] * r.matrix().transpose()
    }

    /// Kinetic energy of bodies `0..n` (translational + rotational).
    pub fn kinetic_energy(&self, n: usize) -> f64 {
        (0..n)
            .map(|i| {
                let v = self.velocity[i];
                let w = self.angular_velocity[i];
                0.5 * self.mass[i] * v.norm_squared() + 0.5 * w.dot(&(self.world_inertia(i) * w))
            })
            .sum()
    }
}
