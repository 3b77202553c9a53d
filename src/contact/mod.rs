//! Contact detection, time-step stage 2 "contact" (ARCHITECTURE.md "One time
//! step"): broad phase (linked cells + Verlet lists of body pairs,
//! [`broad`]), second-level Verlet lists of sub-region pairs for mesh body
//! pairs ([`entity_list`]), narrow phase (one file per shape pair, dispatched
//! by [`narrow_phase`]) and the contact list ([`Contacts`]).
//!
//! Pure and MPI-free: the functions take the local bodies (owned first, ghosts
//! after, local indices `0..bodies.len()`), the shapes and the walls, and
//! return contacts. Adding a shape pair touches only this module: write
//! `contact/<shape>_<shape>.rs` and add an arm to [`narrow_phase`].
pub mod broad;
pub mod edge_edge;
pub mod entity_list;
pub mod feature_hit;
pub mod list;
pub mod mesh_mesh;
pub mod mesh_wall;
pub mod sphere_mesh;
pub mod sphere_sphere;
pub mod sphere_wall;
pub mod vertex_edge;
pub mod vertex_face;
pub mod vertex_vertex;

pub use broad::VerletList;
pub use entity_list::EntityLists;
pub use list::{Contact, ContactKey, Contacts, WALL_ID_BASE, WALL_INDEX};

use crate::body::{Bodies, Shape};
use crate::geometry::MeshFeatures;
use crate::scene::Wall;
use nalgebra::{UnitQuaternion, Vector3};

/// Detection parameters.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DetectParams {
    /// Verlet skin (length, > 0): candidate pairs are those whose bounding
    /// spheres are within `skin + contact_distance`; the list is rebuilt when
    /// some body moved more than `skin / 2` since it was built.
    pub skin: f64,
    /// Detection distance (length, >= 0): a contact is reported when its gap
    /// is below this, so it exists slightly before the surfaces touch.
    pub contact_distance: f64,
    /// Second-level Verlet lists for mesh–mesh pairs ([`entity_list`]); the
    /// contacts are the same without them, only slower to find.
    pub entity_lists: bool,
    /// How deep closed mesh–mesh pairs are sought ([`DetectParams::mesh_reach`]):
    /// `None`, down to the inflation; `Some(d)`, down to `d` (at most the
    /// inflation) and no less than the open contacts need. Not a first-level
    /// parameter: changing it rebuilds only the entity lists it outgrows.
    pub mesh_depth: Option<f64>,
}

/// Per-body depths of the closed mesh–mesh search: body pair (a, b) seeks
/// closed pairs down to `depth(a) + depth(b)` (through
/// [`DetectParams::mesh_reach_at`]), in place of the one
/// [`DetectParams::mesh_depth`] of every pair. Bodies not named (a ghost
/// that arrived since the depths were made) take `default`.
#[derive(Clone, Debug, Default)]
pub struct BodyDepths {
    pub by_id: std::collections::HashMap<u64, f64>,
    pub default: f64,
}

impl BodyDepths {
    /// The value of body `id`.
    pub fn of(&self, id: u64) -> f64 {
        self.by_id.get(&id).copied().unwrap_or(self.default)
    }

    /// The value of each local body of `bodies`, in their order.
    pub fn local(&self, bodies: &Bodies) -> Vec<f64> {
        bodies.id.iter().map(|&id| self.of(id)).collect()
    }
}

impl DetectParams {
    /// Skin and contact distance, with second-level lists.
    pub const fn new(skin: f64, contact_distance: f64) -> Self {
        Self { skin, contact_distance, entity_lists: true, mesh_depth: None }
    }

    /// Per-entity inflation of the mesh–mesh search: `contact_distance +
    /// skin`, the deepest penetration reported by default.
    pub fn inflation(&self) -> f64 {
        self.contact_distance + self.skin
    }

    /// The deepest penetration the mesh–mesh narrow phase reports for meshes
    /// `fa`, `fb` (hits with `−reach ≤ gap < contact_distance` are kept):
    /// [`DetectParams::inflation`] without `mesh_depth`, else
    /// `max(contact_distance + 2 f L, min(mesh_depth, inflation))` with
    /// `f = DUPLICATE_FRACTION`, `L` the longest edge of the two meshes. Every
    /// hit that can drop an open contact by the hierarchy is within
    /// `contact_distance + 2 f L` (rules 1–2: within the open contact's gap;
    /// rule 3: a vertex–face point within `f L` of an edge–edge one), so the
    /// open contacts are the same at any `mesh_depth`; only closed pairs
    /// deeper than the reach are not sought (a solver that drops closed mesh
    /// pairs, the DEM, asks only as deep as a step can close them).
    pub fn mesh_reach(&self, fa: &MeshFeatures, fb: &MeshFeatures) -> f64 {
        self.mesh_reach_at(fa, fb, self.mesh_depth)
    }

    /// [`DetectParams::mesh_reach`] with the depth `depth` in place of
    /// `mesh_depth` (a body pair's own, [`BodyDepths`]).
    pub fn mesh_reach_at(&self, fa: &MeshFeatures, fb: &MeshFeatures, depth: Option<f64>) -> f64 {
        let full = self.inflation();
        match depth {
            None => full,
            Some(d) => {
                let hierarchy = self.contact_distance + 2.0 * mesh_mesh::DUPLICATE_FRACTION * fa.longest_edge.max(fb.longest_edge);
                hierarchy.max(d.min(full))
            }
        }
    }

    /// The parameters the first level depends on (all but `mesh_depth`).
    pub fn first_level(&self) -> Self {
        Self { mesh_depth: None, ..*self }
    }
}

/// What a pair function needs to know about one body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyPose {
    /// Global id.
    pub id: u64,
    /// Local index.
    pub index: usize,
    /// Centre of mass, world frame.
    pub position: Vector3<f64>,
    /// Rotation from body frame to world frame.
    pub orientation: UnitQuaternion<f64>,
}

impl BodyPose {
    /// The pose of local body `i`.
    pub fn of(bodies: &Bodies, i: usize) -> Self {
        Self { id: bodies.id[i], index: i, position: bodies.position[i], orientation: bodies.orientation[i] }
    }
}

/// The shapes prepared for detection: each [`Shape`] with its bounding radius
/// and, for meshes, its [`MeshFeatures`] (unique edges, pseudo-normals). Build
/// once per run from `Scene::shapes`; index it like `Bodies::shape`.
#[derive(Clone, Debug)]
pub struct ContactShapes {
    shapes: Vec<Shape>,
    features: Vec<Option<MeshFeatures>>,
    radius: Vec<f64>,
}

impl ContactShapes {
    /// Prepares `shapes` (cost: one sort of the triangle edges per mesh).
    pub fn new(shapes: &[Shape]) -> Self {
        let features = shapes
            .iter()
            .map(|s| match s {
                Shape::Sphere { .. } => None,
                Shape::Mesh(m) => Some(MeshFeatures::new(m)),
            })
            .collect();
        let radius = shapes.iter().map(Shape::bounding_radius).collect();
        Self { shapes: shapes.to_vec(), features, radius }
    }

    /// Number of shapes.
    pub fn len(&self) -> usize {
        self.shapes.len()
    }

    /// True when there is no shape.
    pub fn is_empty(&self) -> bool {
        self.shapes.is_empty()
    }

    /// Shape `k`.
    pub fn shape(&self, k: u32) -> &Shape {
        &self.shapes[k as usize]
    }

    /// Mesh features of shape `k` (`None` for a sphere).
    pub fn features(&self, k: u32) -> Option<&MeshFeatures> {
        self.features[k as usize].as_ref()
    }

    /// Bounding radius of shape `k` about the centre of mass.
    pub fn bounding_radius(&self, k: u32) -> f64 {
        self.radius[k as usize]
    }
}

/// Narrow phase for the body pair `(i, j)` (local indices, any order): pushes
/// the contacts whose gap is below `params.contact_distance` into `out`, with
/// `a` the smaller global id. Dispatches on the shape pair; mesh–mesh gives
/// any number of contacts ([`mesh_mesh::mesh_mesh`], down to the depth
/// [`DetectParams::mesh_reach`]).
pub fn narrow_phase(i: usize, j: usize, bodies: &Bodies, shapes: &ContactShapes, params: &DetectParams, out: &mut Contacts) {
    narrow_phase_at(i, j, bodies, shapes, params, params.mesh_depth, out)
}

/// [`narrow_phase`] with the pair's own closed depth `depth` (see
/// [`DetectParams::mesh_reach_at`]).
fn narrow_phase_at(i: usize, j: usize, bodies: &Bodies, shapes: &ContactShapes, params: &DetectParams, depth: Option<f64>, out: &mut Contacts) {
    let (si, sj) = (bodies.shape[i], bodies.shape[j]);
    let (pi, pj) = (BodyPose::of(bodies, i), BodyPose::of(bodies, j));
    let cd = params.contact_distance;
    let found = match (shapes.shape(si), shapes.shape(sj)) {
        (Shape::Sphere { radius: ri }, Shape::Sphere { radius: rj }) => sphere_sphere::sphere_sphere(&pi, *ri, &pj, *rj, cd),
        (Shape::Sphere { radius }, Shape::Mesh(m)) => {
            let f = shapes.features(sj).expect("mesh shapes have features");
            sphere_mesh::sphere_mesh(&pi, *radius, &pj, m, f, cd)
        }
        (Shape::Mesh(m), Shape::Sphere { radius }) => {
            let f = shapes.features(si).expect("mesh shapes have features");
            sphere_mesh::sphere_mesh(&pj, *radius, &pi, m, f, cd)
        }
        (Shape::Mesh(mi), Shape::Mesh(mj)) => {
            let fi = shapes.features(si).expect("mesh shapes have features");
            let fj = shapes.features(sj).expect("mesh shapes have features");
            let ((p, m, f), (q, n, g)) = if pi.id < pj.id { ((&pi, mi, fi), (&pj, mj, fj)) } else { ((&pj, mj, fj), (&pi, mi, fi)) };
            mesh_mesh::mesh_mesh(p, m, f, q, n, g, cd, params.mesh_reach_at(f, g, depth), out);
            None
        }
    };
    if let Some(c) = found {
        out.push(c);
    }
}

/// [`narrow_phase`] for the body pair `(i, j)` through its second-level list
/// in `lists` (at first-level slot `slot`, the pair's index in the Verlet list) when both are meshes,
/// else [`narrow_phase`] itself. Same contacts, same order. `depth`: the
/// pair's closed depth (see [`DetectParams::mesh_reach_at`]).
#[allow(clippy::too_many_arguments)]
pub fn narrow_phase_listed(
    i: usize,
    j: usize,
    bodies: &Bodies,
    shapes: &ContactShapes,
    params: &DetectParams,
    depth: Option<f64>,
    lists: &mut EntityLists,
    slot: usize,
    out: &mut Contacts,
) {
    let (si, sj) = (bodies.shape[i], bodies.shape[j]);
    let (Shape::Mesh(mi), Shape::Mesh(mj)) = (shapes.shape(si), shapes.shape(sj)) else {
        return narrow_phase_at(i, j, bodies, shapes, params, depth, out);
    };
    let fi = shapes.features(si).expect("mesh shapes have features");
    let fj = shapes.features(sj).expect("mesh shapes have features");
    let (pi, pj) = (BodyPose::of(bodies, i), BodyPose::of(bodies, j));
    let ((p, m, f), (q, n, g)) = if pi.id < pj.id { ((&pi, mi, fi), (&pj, mj, fj)) } else { ((&pj, mj, fj), (&pi, mi, fi)) };
    let reach = params.mesh_reach_at(f, g, depth);
    let (pairs, scratch) = lists.get(slot, p, m, f, q, n, g, reach, params.skin);
    mesh_mesh::mesh_mesh_listed(p, m, f, q, n, g, pairs, params.contact_distance, reach, scratch, out);
}

/// Narrow phase for local body `i` against wall `w`: pushes the contacts
/// whose gap is below `params.contact_distance` (one for a sphere, one per
/// close vertex for a mesh) into `out`.
pub fn narrow_phase_wall(
    i: usize,
    w: usize,
    bodies: &Bodies,
    shapes: &ContactShapes,
    walls: &[Wall],
    params: &DetectParams,
    out: &mut Contacts,
) {
    let p = BodyPose::of(bodies, i);
    let cd = params.contact_distance;
    match shapes.shape(bodies.shape[i]) {
        Shape::Sphere { radius } => {
            if let Some(c) = sphere_wall::sphere_wall(&p, *radius, w, &walls[w], cd) {
                out.push(c);
            }
        }
        Shape::Mesh(m) => mesh_wall::mesh_wall(&p, m, w, &walls[w], cd, out),
    }
}

/// Detects the contacts of the local bodies; the top-level call of stage 2.
///
/// `bodies` holds the owned bodies at `0..n_owned` and ghosts after. The
/// Verlet list is rebuilt when it is stale (some body moved more than
/// `skin / 2`, or the local bodies changed: see [`VerletList::is_stale`]);
/// the narrow phase then runs on its candidate pairs, through the second-level
/// lists for mesh pairs when `params.entity_lists`. `out` is cleared and
/// receives every contact whose smaller-id body is owned (local index
/// `< n_owned`), and every wall contact of an owned body — so over all ranks
/// each contact exists exactly once. Order: body pairs in ascending local
/// index pairs, then wall contacts by (body, wall). Returns true when the
/// Verlet list was rebuilt. `depths`: each local body's closed depth
/// ([`BodyDepths::local`]), else `params.mesh_depth` for every pair.
#[allow(clippy::too_many_arguments)]
pub fn detect(
    bodies: &Bodies,
    n_owned: usize,
    shapes: &ContactShapes,
    walls: &[Wall],
    params: &DetectParams,
    depths: Option<&[f64]>,
    verlet: &mut VerletList,
    out: &mut Contacts,
) -> bool {
    out.clear();
    let rebuilt = verlet.is_stale(bodies, walls, params);
    if rebuilt {
        verlet.build(bodies, shapes, walls, params);
    }
    let (pairs, lists) = verlet.pairs_and_entity_lists();
    for (slot, &(i, j)) in pairs.iter().enumerate() {
        let owner = if bodies.id[i] < bodies.id[j] { i } else { j };
        if owner < n_owned {
            let depth = depths.map_or(params.mesh_depth, |d| Some(d[i] + d[j]));
            if params.entity_lists {
                narrow_phase_listed(i, j, bodies, shapes, params, depth, lists, slot, out);
            } else {
                narrow_phase_at(i, j, bodies, shapes, params, depth, out);
            }
        }
    }
    for &(i, w) in verlet.wall_pairs() {
        if i < n_owned {
            narrow_phase_wall(i, w, bodies, shapes, walls, params, out);
        }
    }
    rebuilt
}
