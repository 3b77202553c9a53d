//! The DEM's contact elements of a step (Gay Neto & Wriggers §2.4): each
//! detected contact's kinematics (spheres, walls, mesh degenerations), its
//! friction element with the stored tangential gap, the gap rates that
//! bound Δt at impact.
use super::assemble::{ContactElement, Kinematics, MeshKind, TangentialElement, Vec12};
use super::law::TangentialLaw;
use super::state::*;
use crate::body::dof_free;
use crate::body::{Bodies, Shape};
use crate::contact::{WALL_ID_BASE, WALL_INDEX};
use crate::parallel::{self};
use crate::solver::{History, StepContext};
use nalgebra::Vector3;

pub(super) fn v3(x: &[f64]) -> Vector3<f64> {
    Vector3::new(x[0], x[1], x[2])
}

pub(super) fn mask3(v: Vector3<f64>, mask: u8, first: usize) -> Vector3<f64> {
    Vector3::from_fn(|k, _| if dof_free(mask, first + k) { v[k] } else { 0.0 })
}

pub(super) fn sphere_radius(ctx: &StepContext, bodies: &Bodies, i: usize) -> Option<f64> {
    match ctx.shapes.shape(bodies.shape[i]) {
        Shape::Sphere { radius } => Some(*radius),
        Shape::Mesh(_) => None,
    }
}

/// World direction of edge `e` of local mesh body `i`.
pub(super) fn edge_direction(ctx: &StepContext, bodies: &Bodies, i: usize, e: u32) -> Option<Vector3<f64>> {
    let Shape::Mesh(m) = ctx.shapes.shape(bodies.shape[i]) else { return None };
    let [p, q] = ctx.shapes.features(bodies.shape[i])?.edges.get(e as usize)?.map(|v| m.vertices[v as usize]);
    Some((bodies.orientation[i] * (q - p)).normalize())
}

/// Exact kinematics of contact `k` when body a is a mesh (against a mesh or
/// a wall), from its sub-regions: the points of configuration i are
/// point ∓ n g/2 (contact/ puts `point` midway). `None` for other pairs.
pub(super) fn mesh_kinematics(ctx: &StepContext, bodies: &Bodies, k: usize, wall: bool) -> Option<Kinematics> {
    use crate::geometry::SubRegion::{Edge, Face, Vertex};
    let c = ctx.contacts;
    let (ia, ib) = (c.ia[k], c.ib[k]);
    let (n, g) = (c.normal[k], c.gap[k]);
    let r_a = c.r_a[k] - 0.5 * g * n;
    let r_b = if wall { Vector3::zeros() } else { c.r_b[k] + 0.5 * g * n };
    let zero = Vector3::zeros();
    let sa = crate::geometry::SubRegion::decode(c.sub_a[k])?;
    let (kind, d_a, d_b) = if wall {
        match sa {
            Vertex(_) => (MeshKind::PlaneOnB, zero, n),
            _ => return None,
        }
    } else {
        if sphere_radius(ctx, bodies, ib).is_some() {
            return None;
        }
        match (sa, crate::geometry::SubRegion::decode(c.sub_b[k])?) {
            (Vertex(_), Face(_)) => (MeshKind::PlaneOnB, zero, n),
            (Face(_), Vertex(_)) => (MeshKind::PlaneOnA, n, zero),
            (Edge(ea), Edge(eb)) => {
                let (da, db) = (edge_direction(ctx, bodies, ia, ea)?, edge_direction(ctx, bodies, ib, eb)?);
                (MeshKind::Lines { sign: da.cross(&db).dot(&n).signum() }, da, db)
            }
            (Vertex(_), Edge(eb)) => (MeshKind::PointLineB, zero, edge_direction(ctx, bodies, ib, eb)?),
            (Edge(ea), Vertex(_)) => (MeshKind::PointLineA, edge_direction(ctx, bodies, ia, ea)?, zero),
            (Vertex(_), Vertex(_)) => (MeshKind::Points, zero, zero),
            _ => return None,
        }
    };
    Some(Kinematics::Mesh { kind, d0: g * n, r_a, r_b, d_a, d_b })
}

/// The contact elements of this step from the detected contacts.
pub(super) fn elements(ctx: &StepContext, bodies: &Bodies) -> Vec<ContactElement> {
    ctx.contacts
        .iter()
        .enumerate()
        .map(|(k, c)| {
            let (ia, ib) = (c.ia, c.ib);
            let wall = ib == WALL_INDEX;
            let kin = match (sphere_radius(ctx, bodies, ia), (!wall).then(|| sphere_radius(ctx, bodies, ib)).flatten()) {
                (Some(ra), Some(rb)) => Kinematics::Spheres { xa: bodies.position[ia], xb: bodies.position[ib], ra, rb },
                (None, _) => mesh_kinematics(ctx, bodies, k, wall).unwrap_or(Kinematics::Linear {
                    g0: c.gap,
                    n: c.normal,
                    r_a: c.r_a,
                    r_b: if wall { Vector3::zeros() } else { c.r_b },
                }),
                _ => Kinematics::Linear { g0: c.gap, n: c.normal, r_a: c.r_a, r_b: if wall { Vector3::zeros() } else { c.r_b } },
            };
            let (g0, grad0, n0) = super::assemble::gap_grad(&kin, &Vec12::zeros());
            let ma = bodies.mass[ia];
            let m_eff = if wall || bodies.fixed[ib] {
                ma
            } else if bodies.fixed[ia] {
                bodies.mass[ib]
            } else {
                ma * bodies.mass[ib] / (ma + bodies.mass[ib])
            };
            let scale = if ctx.scene.dem.pair_stiffness {
                ctx.scene.pair_stiffness(bodies.material[ia], ctx.contacts.material_b(k, bodies, &ctx.scene.walls))
            } else {
                1.0
            };
            ContactElement { kin, g_start: g0, n_start: n0, grad_start: grad0, m_eff, scale }
        })
        .collect()
}

/// The friction elements of this step: coefficients as the means of the
/// two materials' (a wall's own material for a wall), none when both
/// are zero; the stored tangential gap of the same contact (same ids and
/// sub-regions) rotated from its old normal onto the current one and
/// projected on the tangent plane (zero for a new contact).
pub(super) fn tangential_elements(
    ctx: &StepContext,
    bodies: &Bodies,
    elements: &[ContactElement],
    history: &History,
) -> Vec<Option<TangentialElement>> {
    let c = ctx.contacts;
    let h = &history.contact;
    let (gt_col, normal_col, sliding_col) = (h.col(GAP_T), h.col(GAP_T_NORMAL), h.col(SLIDING));
    let mats = &ctx.scene.materials;
    (0..c.len())
        .map(|k| {
            let ma = &mats[bodies.material[c.ia[k]] as usize];
            let mb = &mats[c.material_b(k, bodies, &ctx.scene.walls) as usize];
            let mu_s = 0.5 * (ma.friction_static + mb.friction_static);
            let mu_d = 0.5 * (ma.friction_dynamic + mb.friction_dynamic);
            if mu_s == 0.0 && mu_d == 0.0 {
                return None;
            }
            let n = elements[k].n_start;
            let p = nalgebra::Matrix3::identity() - n * n.transpose();
            let (gt_start, sliding) = match h.get(&c.key(k)) {
                Some(row) => (p * rotate_onto(&v3(gt_col.of(row)), &v3(normal_col.of(row)), &n), sliding_col.of(row)[0] != 0.0),
                None => (Vector3::zeros(), false),
            };
            let (r_a, r_b) = match elements[k].kin {
                Kinematics::Spheres { ra, rb, .. } => (n * ra, -n * rb),
                Kinematics::Linear { r_a, r_b, .. } => (r_a, r_b),
                // the midpoint, as for the other kinds
                Kinematics::Mesh { d0, r_a, r_b, .. } => (r_a + 0.5 * d0, r_b - 0.5 * d0),
            };
            // eq 54's c_t from a damping ratio, like eq 52 in the normal direction
            let c_t = 2.0 * ctx.scene.dem.damping_t * (ctx.scene.dem.eps_t * elements[k].m_eff).sqrt();
            let law = TangentialLaw { eps_t: ctx.scene.dem.eps_t, c_t, mu_s, mu_d };
            Some(TangentialElement::new(law, gt_start, sliding, n, r_a, r_b))
        })
        .collect()
}

/// The velocities of contact `k`'s two bodies at configuration i as the
/// 12 components of its increments per unit time (a wall: its mean velocity
/// over a step of length `dt`).
pub(super) fn rates12(ctx: &StepContext, bodies: &Bodies, k: usize, dt: f64) -> Vec12 {
    let (ia, ib) = (ctx.contacts.ia[k], ctx.contacts.ib[k]);
    let mut v = Vec12::zeros();
    v.fixed_rows_mut::<3>(0).copy_from(&bodies.velocity[ia]);
    v.fixed_rows_mut::<3>(3).copy_from(&bodies.angular_velocity[ia]);
    if ib == WALL_INDEX {
        if let Some(w) = ctx.scene.walls.get((ctx.contacts.b[k] - WALL_ID_BASE) as usize) {
            v.fixed_rows_mut::<3>(6).copy_from(&(w.displacement(ctx.time, dt) / dt));
        }
    } else {
        v.fixed_rows_mut::<3>(6).copy_from(&bodies.velocity[ib]);
        v.fixed_rows_mut::<3>(9).copy_from(&bodies.angular_velocity[ib]);
    }
    v
}

/// The largest Δt ≤ `dt` (global) at which no contact closing at its rate
/// of the step's start, ġ = ∇g · (v_a, ω_a, v_b, ω_b), and ending within ḡ,
/// changes its gap by more than `gap_change` of the gap it ends at:
/// |ġ| Δt ≤ c (g − |ġ| Δt), i.e. Δt ≤ c g / (|ġ| (1 + c)). Every contact
/// ending within ḡ at `dt` itself counts, whatever the others allow: with
/// a running limit (a contact counted only if it closed within the Δt the
/// contacts before it left) the result depended on the contacts' order,
/// hence on the rank count (the dropped 8-layer pyramid took another Δt at
/// its second landing on 2 ranks than on 1, and another trajectory).
pub(super) fn impact_dt(ctx: &StepContext, bodies: &Bodies, elements: &[ContactElement], gbar: f64, gap_change: f64, dt: f64) -> f64 {
    let mut limit = dt;
    for (k, el) in elements.iter().enumerate() {
        let v = rates12(ctx, bodies, k, dt);
        let closing = -el.grad_start.dot(&v);
        if closing > 0.0 && el.g_start - closing * dt < gbar {
            limit = limit.min(gap_change * el.g_start / (closing * (1.0 + gap_change)));
        }
    }
    -parallel::max_f64(ctx.comm, -limit)
}

/// `v` turned by the smallest rotation taking unit `from` onto unit `to`
/// (eq 44's Q_c^Δ): R = I + [w]× + [w]×²/(1 + c), w = from × to, c = from·to
/// (no acos: `Rotation3::rotation_between` gave NaN for normals a few ulps
/// apart, whose dot product rounds above 1). `v` unchanged for opposite normals.
pub(super) fn rotate_onto(v: &Vector3<f64>, from: &Vector3<f64>, to: &Vector3<f64>) -> Vector3<f64> {
    let w = from.cross(to);
    let c = from.dot(to);
    if c <= -1.0 + 1e-12 {
        return *v;
    }
    let wv = w.cross(v);
    v + wv + w.cross(&wv) / (1.0 + c)
}

#[cfg(test)]
mod tests {
    use super::rotate_onto;
    use nalgebra::Vector3;

    #[test]
    fn rotate_onto_turns_onto_the_target_and_stays_finite_near_parallel() {
        let r = rotate_onto(&Vector3::new(1.0, 0.0, 2.0), &Vector3::x(), &Vector3::y());
        assert!((r - Vector3::new(0.0, 1.0, 2.0)).norm() < 1e-15, "{r}");
        assert_eq!(rotate_onto(&Vector3::x(), &Vector3::z(), &-Vector3::z()), Vector3::x());
        // Nearly equal normals (cross product just above ε): a finite, tiny turn.
        for k in 0..200 {
            let e = 1e-16 * (1.0 + k as f64 * 0.05);
            let a = Vector3::new(e, 0.3 * e, 1.0).normalize();
            let b = Vector3::new(-0.7 * e, e, 1.0).normalize();
            let v = Vector3::new(1e-3, -2e-3, 0.0);
            let r = rotate_onto(&v, &a, &b);
            assert!(r.iter().all(|x| x.is_finite()) && (r - v).norm() < 1e-12, "{a} {b} {r}");
        }
    }
}
