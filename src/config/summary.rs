//! The human summary printed by `stiffgrain check`.
use crate::scene::Scene;
use std::fmt::Write;

/// Bytes a body costs on its owner: state, mass properties, solver vectors.
const BYTES_PER_BODY: usize = 8 + 4 + 4 + 3 * 24 + 32 + 8 + 72 + 2 + 6 * 8 * 6;
/// Bytes a contact costs (geometry, forces, matrix rows: 12 nonzeros).
const BYTES_PER_CONTACT: usize = 2 * 8 + 8 + 4 * 24 + 8 * 4 + 12 * 12;
/// Contacts per body in a dense packing of spheres.
const CONTACTS_PER_BODY: usize = 6;

/// Bodies per shape, total mass, bounding box and a memory estimate.
pub fn summary(scene: &Scene, ranks: usize) -> String {
    let b = &scene.bodies;
    let mut s = String::new();
    let sim = &scene.simulation;
    let steps = (sim.t_end / sim.dt).ceil() as u64;
    let _ = writeln!(s, "solver       {} ({}D), dt = {:e}, t_end = {:e} ({steps} steps)", sim.solver.name(), sim.dim, sim.dt, sim.t_end);
    let _ = writeln!(s, "bodies       {} ({} fixed)", b.len(), b.fixed.iter().filter(|&&f| f).count());
    for (k, name) in scene.shape_names.iter().enumerate() {
        let n = b.shape.iter().filter(|&&x| x as usize == k).count();
        let kind = match &scene.shapes[k] {
            crate::body::Shape::Sphere { radius } => format!("sphere r = {radius:e}"),
            crate::body::Shape::Mesh(m) => format!("mesh, {} triangles", m.triangles.len()),
        };
        let _ = writeln!(s, "  shape {name:<12} {n:>10} bodies  ({kind})");
    }
    let mass: f64 = (0..b.len()).filter(|&i| !b.fixed[i]).map(|i| b.mass[i]).sum();
    let _ = writeln!(s, "mass         {mass:.6e} (moving bodies)");
    let (lo, hi) = scene.bounding_box();
    let _ = writeln!(
        s,
        "bounding box [{:.4e}, {:.4e}, {:.4e}] .. [{:.4e}, {:.4e}, {:.4e}]",
        lo.x, lo.y, lo.z, hi.x, hi.y, hi.z
    );
    let _ = writeln!(s, "walls        {}", scene.walls.len());
    if !scene.loads.is_empty() {
        let _ = writeln!(s, "loads        {}", scene.loads.len());
        let v = |v: &nalgebra::Vector3<f64>| format!("[{:e}, {:e}, {:e}]", v.x, v.y, v.z);
        for l in &scene.loads {
            let _ = writeln!(
                s,
                "  body {:<8} force {} at {} (body frame), moment {}, ramp {:e} .. {:e}",
                l.body,
                v(&l.force),
                v(&l.point),
                v(&l.moment),
                l.t_start,
                l.t_ramp_end
            );
        }
    }
    let mesh_bytes: usize = scene
        .shapes
        .iter()
        .map(|sh| match sh {
            crate::body::Shape::Mesh(m) => m.vertices.len() * 24 + m.triangles.len() * 12,
            _ => 0,
        })
        .sum();
    let total = b.len() * (BYTES_PER_BODY + CONTACTS_PER_BODY * BYTES_PER_CONTACT) + mesh_bytes * ranks.max(1);
    let _ = writeln!(
        s,
        "memory       ~{} in total, ~{} per rank on {} rank(s) (plus ghosts)",
        human(total),
        human(total / ranks.max(1)),
        ranks.max(1)
    );
    let _ = write!(s, "output       {} (frame every {} steps)", scene.output.dir.display(), scene.output.every);
    s
}

fn human(bytes: usize) -> String {
    let b = bytes as f64;
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.1} kB", b / 1e3)
    }
}
