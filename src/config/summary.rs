//! The human summary printed by `stiffgrain check`.
use crate::scene::memory::{human, MemoryEstimate, CONTACTS_PER_BODY};
use crate::scene::Scene;
use std::fmt::Write;

/// Bodies per shape, total mass, bounding box and the memory estimate of
/// the distributed layout (made by `startup::estimate`). Generated bodies are
/// counted by their sources (radius classes: expected numbers).
pub fn summary(scene: &Scene, mem: &MemoryEstimate) -> String {
    let b = &scene.bodies;
    let ranks = mem.ranks;
    let mut s = String::new();
    let sim = &scene.simulation;
    let steps = (sim.t_end / sim.dt).ceil() as u64;
    let _ = writeln!(s, "solver       {} ({}D), dt = {:e}, t_end = {:e} ({steps} steps)", sim.solver.name(), sim.dim, sim.dt, sim.t_end);
    // Expected bodies per shape and moving mass of the sources.
    let mut per_shape = vec![0.0f64; scene.shapes.len()];
    // fold from +0.0: an empty f64 sum is -0.0.
    let mut mass: f64 = (0..b.len()).filter(|&i| !b.fixed[i]).map(|i| b.mass[i]).fold(0.0, |a, m| a + m);
    for &sh in &b.shape {
        per_shape[sh as usize] += 1.0;
    }
    for src in &scene.sources {
        let n = src.count.unwrap_or(0) as f64;
        let rho = scene.materials[src.material as usize].density;
        let mut prev = 0.0;
        for (c, &sh) in src.classes.shape.iter().enumerate() {
            let share = n * (src.classes.cumulative[c] - prev);
            prev = src.classes.cumulative[c];
            per_shape[sh as usize] += share;
            if !src.fixed {
                mass += share * rho * scene.shapes[sh as usize].unit_mass_properties().volume;
            }
        }
    }
    let files = scene.sources.iter().filter(|s| s.count.is_none()).count();
    let _ = writeln!(
        s,
        "bodies       {}{} ({} explicit, {} fixed)",
        scene.known_count(),
        if files > 0 { format!(" + {} from file(s)", mem.bodies - scene.known_count()) } else { String::new() },
        b.len(),
        b.fixed.iter().filter(|&&f| f).count()
    );
    for (k, name) in scene.shape_names.iter().enumerate() {
        let n = per_shape[k].round() as u64;
        let kind = match &scene.shapes[k] {
            crate::body::Shape::Sphere { radius } => format!("sphere r = {radius:e}"),
            crate::body::Shape::Mesh(m) => format!("mesh, {} triangles", m.triangles.len()),
        };
        let _ = writeln!(s, "  shape {name:<12} {n:>10} bodies  ({kind})");
    }
    // File bodies are read at start-up, not by `check`: their mass and
    // extent are not known here.
    let only_files = files > 0 && scene.known_count() == 0;
    if only_files {
        let _ = writeln!(s, "mass         of the file bodies: known at start-up");
    } else {
        let _ = writeln!(s, "mass         {mass:.6e} (moving bodies{})", if files > 0 { ", without the file bodies" } else { "" });
    }
    let (lo, hi) = scene.bounding_box();
    if (0..3).any(|d| lo[d] > hi[d]) {
        let _ = writeln!(s, "bounding box {}", if files > 0 { "of the file bodies: known at start-up" } else { "none (no bodies)" });
    } else {
        let _ = writeln!(
            s,
            "bounding box [{:.4e}, {:.4e}, {:.4e}] .. [{:.4e}, {:.4e}, {:.4e}]{}",
            lo.x,
            lo.y,
            lo.z,
            hi.x,
            hi.y,
            hi.z,
            if files > 0 { " (without the file bodies)" } else { "" }
        );
    }
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
    let h = human;
    let _ = writeln!(
        s,
        "memory       ~{} per rank on {ranks} rank(s): {} bodies per rank with ghosts x ~{} bytes (with {} contacts each), ~{} in total",
        h(mem.bytes_per_rank),
        mem.bodies_per_rank,
        mem.bytes_per_body,
        CONTACTS_PER_BODY,
        h(mem.bytes_per_rank.saturating_mul(ranks as u64))
    );
    if let Some(node) = mem.node_memory {
        let _ = writeln!(s, "node memory  {} for {} rank(s) on this node", h(node), mem.ranks_on_node);
    }
    let _ = write!(s, "output       {} (frame every {} steps)", scene.output.dir.display(), scene.output.every);
    s
}
