//! Shapes bodies refer to by index. A shape is stored once, in its body frame
//! with the origin at the centre of mass.
use super::mass::MassProperties;
use super::mesh::TriMesh;
use std::sync::Arc;

/// The geometry of a body, in the body frame (origin at the centre of mass).
#[derive(Clone, Debug)]
pub enum Shape {
    Sphere { radius: f64 },
    Mesh(Arc<TriMesh>),
}

impl Shape {
    /// Radius of the smallest origin-centred sphere holding the shape.
    pub fn bounding_radius(&self) -> f64 {
        match self {
            Shape::Sphere { radius } => *radius,
            Shape::Mesh(m) => m.bounding_radius(),
        }
    }

    /// Volume and inertia per unit density, about the centre of mass.
    pub fn unit_mass_properties(&self) -> MassProperties {
        match self {
            Shape::Sphere { radius } => MassProperties::sphere(*radius),
            Shape::Mesh(m) => m.mass_properties(),
        }
    }

    /// Numeric kind tag used in files: 0 sphere, 1 mesh.
    pub fn kind_tag(&self) -> u32 {
        match self {
            Shape::Sphere { .. } => 0,
            Shape::Mesh(_) => 1,
        }
    }
}
