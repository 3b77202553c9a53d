//! solver = "dem": the `[dem]` table (defaults derived from the scene) and
//! the start checks of the barrier law.
use super::Ctx;
use crate::body::{Bodies, Shape};
use crate::config::schema::DemCfg;
use crate::config::ConfigError;
use crate::logging::num;
use crate::scene::sources::{Source, SourceKind};
use crate::scene::{generate, ContactSettings, DemSettings, Material, Simulation, Wall};

/// The heaviest moving body, explicit or generated (files: their `shape`).
pub(super) fn heaviest_moving_mass(bodies: &Bodies, sources: &[Source], materials: &[Material], shapes: &[Shape]) -> f64 {
    let mut m_max = (0..bodies.len()).filter(|&i| !bodies.fixed[i]).map(|i| bodies.mass[i]).fold(0.0, f64::max);
    for src in sources.iter().filter(|s| !s.fixed) {
        let mats = src.parity.map_or(vec![src.material], |m| m.to_vec());
        for &sh in &src.classes.shape {
            for &m in &mats {
                m_max = m_max.max(materials[m as usize].density * shapes[sh as usize].unit_mass_properties().volume);
            }
        }
    }
    m_max
}

/// Resolves the `[dem]` table; defaults derived from the scene.
pub(super) fn dem_settings(
    c: &Ctx,
    d: &DemCfg,
    sim: &Simulation,
    m_max: f64,
    contact: &ContactSettings,
) -> Result<DemSettings, ConfigError> {
    let opt = |key: &str, v: Option<f64>, default: f64| -> Result<f64, ConfigError> {
        match v {
            Some(v) => c.positive(key, v),
            None => Ok(default),
        }
    };
    if contact.distance <= 0.0 && d.gbar.is_none() {
        return Err(c.err("dem.gbar", "needs contact.distance > 0 (or an explicit dem.gbar)"));
    }
    let gbar = opt("dem.gbar", d.gbar, 0.5 * contact.distance)?;
    if gbar > contact.distance {
        return Err(c.err("dem.gbar", format!("must not exceed contact.distance = {} (contacts would act before they are detected)", num(contact.distance))));
    }
    let f = opt("dem.f", d.f, 0.5)?;
    if f >= 1.0 {
        return Err(c.err("dem.f", format!("must lie in (0, 1), got {f}")));
    }
    let n1 = opt("dem.n1", d.n1, 1.5)?;
    if n1 < 1.0 {
        return Err(c.err("dem.n1", format!("must be at least 1, got {n1}")));
    }
    let n2 = d.n2.unwrap_or(-2.0);
    if !(n2.is_finite() && n2 < 0.0) {
        return Err(c.err("dem.n2", format!("must be negative (a barrier), got {n2}")));
    }
    let m_max = if m_max > 0.0 { m_max } else { 1.0 };
    let weight = m_max * sim.gravity.norm().max(1.0);
    let eps1 = opt("dem.eps1", d.eps1, 100.0 * weight / (gbar * (1.0 - f)).powf(n1))?;
    let damping = c.non_negative("dem.damping", d.damping.unwrap_or(0.0))?;
    let damping_cap = d.damping_cap.map(|k| c.non_negative("dem.damping_cap", k)).transpose()?.unwrap_or(f64::INFINITY);
    let k_switch = eps1 * n1 * (gbar * (1.0 - f)).powf(n1 - 1.0);
    let eps_t = opt("dem.eps_t", d.eps_t, k_switch)?;
    let damping_t = c.non_negative("dem.damping_t", d.damping_t.unwrap_or(0.0))?;
    let beta = opt("dem.beta", d.beta, 0.3)?;
    let gamma = opt("dem.gamma", d.gamma, 0.5)?;
    // β beyond Newmark's classical 1/2: β = (γ + 1/2)²/4 is the family's
    // strongest high-frequency dissipation (spectral radius (2γ − 1)/(2γ + 1)).
    for (key, v) in [("dem.beta", beta), ("dem.gamma", gamma)] {
        if v > 1.0 {
            return Err(c.err(key, format!("Newmark needs 0 < {} <= 1, got {v}", &key[4..])));
        }
    }
    let dt_max = opt("dem.dt_max", d.dt_max, sim.dt)?;
    let dt_min = opt("dem.dt_min", d.dt_min, dt_max / 1024.0)?;
    if dt_min > dt_max {
        return Err(c.err("dem.dt_min", format!("must not exceed dem.dt_max = {dt_max}")));
    }
    let newton_tolerance = opt("dem.newton_tolerance", d.newton_tolerance, 1e-10 * weight)?;
    let newton = d.newton.unwrap_or_default();
    let fixed = newton == crate::scene::DemNewton::Fixed;
    let newton_max_iterations = match d.newton_max_iterations {
        Some(0) => return Err(c.err("dem.newton_max_iterations", "must be at least 1")),
        Some(n) => n,
        None if fixed => 1,
        None => 30,
    };
    let gap_fraction = opt("dem.gap_fraction", d.gap_fraction, 0.1)?;
    if gap_fraction >= 1.0 {
        return Err(c.err("dem.gap_fraction", format!("must lie in (0, 1), got {gap_fraction}")));
    }
    let gap_change = opt("dem.gap_change", d.gap_change, 0.2)?;
    let easy_iterations = d.easy_iterations.unwrap_or(4);
    if fixed {
        if d.easy_iterations.is_some() {
            return Err(c.err("dem.easy_iterations", "has no effect with dem.newton = \"fixed\" (Δt grows after every step); remove it"));
        }
    } else if easy_iterations >= newton_max_iterations {
        return Err(c.err("dem.easy_iterations", format!("must be below dem.newton_max_iterations = {newton_max_iterations}, got {easy_iterations}")));
    }
    Ok(DemSettings {
        gbar,
        f,
        eps1,
        n1,
        n2,
        damping,
        damping_cap,
        eps_t,
        damping_t,
        beta,
        gamma,
        dt_min,
        dt_max,
        newton_tolerance,
        newton_max_iterations,
        gap_fraction,
        gap_change,
        easy_iterations,
        tangent: d.tangent.unwrap_or_default(),
        pair_stiffness: d.pair_stiffness.unwrap_or(false),
        closed_depth: d.closed_depth.unwrap_or_default(),
        line_search: d.line_search.unwrap_or_default(),
        first_tangent: d.first_tangent.unwrap_or_default(),
        newton,
    })
}

/// The barrier law cannot start from touching bodies: for solver = "dem"
/// every pair of spheres and every sphere–wall pair must start with a
/// positive gap, and no generator may place touching neighbours. Lists the
/// offending pairs by id.
pub(super) fn check_dem_gaps(
    c: &Ctx,
    bodies: &Bodies,
    shapes: &[Shape],
    walls: &[Wall],
    origin: &[String],
    sources: &[Source],
) -> Result<(), ConfigError> {
    let radius = |i: usize| match shapes[bodies.shape[i] as usize] {
        Shape::Sphere { radius } => Some(radius),
        Shape::Mesh(_) => None,
    };
    let spheres: Vec<usize> = (0..bodies.len()).filter(|&i| radius(i).is_some()).collect();
    let mut pairs: Vec<String> = Vec::new();
    let mut first = None;
    for (a, b) in generate::close_pairs(&spheres.iter().map(|&i| (bodies.position[i], radius(i).unwrap())).collect::<Vec<_>>()) {
        let (i, j) = (spheres[a], spheres[b]);
        let gap = (bodies.position[i] - bodies.position[j]).norm() - radius(i).unwrap() - radius(j).unwrap();
        if gap <= 0.0 && !(bodies.fixed[i] && bodies.fixed[j]) {
            pairs.push(format!("{}-{}", bodies.id[i].min(bodies.id[j]), bodies.id[i].max(bodies.id[j])));
            first.get_or_insert(j);
        }
    }
    for (w, wall) in walls.iter().enumerate() {
        for &i in &spheres {
            let d = (bodies.position[i] - wall.point).dot(&wall.normal) - radius(i).unwrap();
            if d <= 0.0 && !bodies.fixed[i] {
                pairs.push(format!("{}-wall[{w}]", bodies.id[i]));
                first.get_or_insert(i);
            }
        }
    }
    if let Some(i) = first {
        let shown: Vec<&str> = pairs.iter().take(20).map(|s| s.as_str()).collect();
        return Err(c.err(
            &origin[i],
            format!(
                "solver = \"dem\" needs a positive initial gap between all bodies (set `gap` > 0 in the generators); {} touching or overlapping pair(s): {}{}",
                pairs.len(),
                shown.join(", "),
                if pairs.len() > 20 { ", ..." } else { "" }
            ),
        ));
    }
    if let Some(src) = sources.iter().find(|s| touching_by_construction(s)) {
        return Err(c.err(
            format!("{}.gap", src.key),
            "solver = \"dem\" needs a positive initial gap between all bodies (set `gap` > 0 in the generators): neighbours of this generator touch",
        ));
    }
    Ok(())
}

/// Lattices and pyramids without a gap place touching neighbours.
fn touching_by_construction(s: &Source) -> bool {
    match &s.kind {
        SourceKind::Lattice { n, spacing, checked: None, .. } => *spacing <= 2.0 * s.classes.max() && !s.fixed && n.iter().any(|&k| k > 1),
        SourceKind::Lattice { n, checked: Some(gap), .. } => *gap <= 0.0 && !s.fixed && n.iter().any(|&k| k > 1),
        SourceKind::Pyramid { n, radius, gap, .. } => *gap <= 0.0 && *n > 1 && !s.fixed && *radius > 0.0,
        _ => false,
    }
}
