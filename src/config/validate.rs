//! Schema -> Scene: checks every value and resolves names to indices.
use super::schema::*;
use super::ConfigError;
use crate::body::{Bodies, Body, Shape, TriMesh};
use crate::scene::sources::{FileFormat, RadiusClasses, Source, SourceKind};
use crate::scene::{generate, CompatSettings, ContactSettings, DemSettings, Load, SolverKind, Material, Output, Scene, Simulation, SolverSettings, Wall, WallMotion};
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use std::collections::HashMap;
use std::sync::Arc;

struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, key: impl Into<String>, msg: impl Into<String>) -> ConfigError {
        ConfigError::new(self.file, key, msg)
    }
    fn positive(&self, key: &str, v: f64) -> Result<f64, ConfigError> {
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(self.err(key, format!("must be a positive number, got {v}")))
        }
    }
    fn non_negative(&self, key: &str, v: f64) -> Result<f64, ConfigError> {
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(self.err(key, format!("must be zero or positive, got {v}")))
        }
    }
    fn finite3(&self, key: &str, v: [f64; 3]) -> Result<Vector3<f64>, ConfigError> {
        if v.iter().all(|x| x.is_finite()) {
            Ok(Vector3::from(v))
        } else {
            Err(self.err(key, "must hold three finite numbers"))
        }
    }
}

pub fn scene(file: &str, cfg: Config, config_text: String) -> Result<Scene, ConfigError> {
    let c = Ctx { file };
    let s = &cfg.simulation;
    if s.dim != 2 && s.dim != 3 {
        return Err(c.err("simulation.dim", format!("must be 2 or 3, got {}", s.dim)));
    }
    let simulation = Simulation {
        solver: s.solver,
        dim: s.dim,
        t_end: c.positive("simulation.t_end", s.t_end)?,
        dt: c.positive("simulation.dt", s.dt)?,
        gravity: c.finite3("simulation.gravity", s.gravity)?,
        until_static: s.until_static.map(|v| c.positive("simulation.until_static", v)).transpose()?,
    };
    if simulation.dim == 2 && simulation.gravity.z != 0.0 {
        return Err(c.err("simulation.gravity", "must have z = 0 in 2D (the x-y plane)"));
    }

    let materials = materials(&c, &cfg.material)?;
    let mat_index: HashMap<&str, u32> =
        cfg.material.iter().enumerate().map(|(i, m)| (m.name.as_str(), i as u32)).collect();
    let find_mat = |key: String, name: &Option<String>| -> Result<u32, ConfigError> {
        match name {
            None => Ok(0),
            Some(n) => mat_index.get(n.as_str()).copied().ok_or_else(|| {
                c.err(key, format!("unknown material `{n}` (known: {})", names(cfg.material.iter().map(|m| &m.name))))
            }),
        }
    };

    let (shapes, shape_names) = shapes(&c, &cfg.shape)?;
    let shape_index: HashMap<&str, u32> =
        shape_names.iter().enumerate().map(|(i, n)| (n.as_str(), i as u32)).collect();
    let find_shape = |key: String, name: &str| -> Result<u32, ConfigError> {
        shape_index
            .get(name)
            .copied()
            .ok_or_else(|| c.err(key, format!("unknown shape `{name}` (known: {})", names(shape_names.iter()))))
    };

    let make = |id: u64, shape: u32, material: u32, position: Vector3<f64>, fixed: bool| -> Body {
        let mp = shapes[shape as usize].unit_mass_properties();
        Body::at_rest(id, shape, material, position, &mp, materials[material as usize].density, fixed, simulation.dim)
    };

    let mut bodies = Bodies::new();
    // Which config entry each body came from, to name it in errors.
    let mut origin: Vec<String> = Vec::new();
    for (i, b) in cfg.body.iter().enumerate() {
        let key = |k: &str| format!("body[{i}].{k}");
        let shape = find_shape(key("shape"), &b.shape)?;
        let material = find_mat(key("material"), &b.material)?;
        let mut body = make(bodies.len() as u64, shape, material, c.finite3(&key("position"), b.position)?, b.fixed);
        if let Some(q) = b.orientation {
            let q = Quaternion::new(q[0], q[1], q[2], q[3]);
            if !(q.norm() > 0.0 && q.norm().is_finite()) {
                return Err(c.err(key("orientation"), "must be a non-zero quaternion (w, x, y, z)"));
            }
            body.orientation = UnitQuaternion::from_quaternion(q);
        }
        if !b.fixed {
            body.velocity = c.finite3(&key("velocity"), b.velocity)?;
            body.angular_velocity = c.finite3(&key("angular_velocity"), b.angular_velocity)?;
        }
        bodies.push(body);
        origin.push(format!("body[{i}]"));
    }

    let (sources, extra_shapes) = sources(&c, &cfg, &simulation, &shapes, &shape_names, &materials, &find_shape, &find_mat, bodies.len() as u64)?;
    let mut shapes = shapes;
    let mut shape_names = shape_names;
    for (s, n) in extra_shapes {
        shapes.push(s);
        shape_names.push(n);
    }

    if bodies.is_empty() && sources.is_empty() {
        return Err(c.err("body", "the scene is empty: add [[body]] or [[generate]] entries"));
    }
    if simulation.dim == 2 {
        if let Some(i) = (0..bodies.len()).find(|&i| bodies.position[i].z != 0.0 || bodies.velocity[i].z != 0.0) {
            return Err(c.err(&origin[i], format!("body {i}: in 2D every body lies in z = 0 and moves in x-y")));
        }
    }

    let mut walls = Vec::new();
    for (i, w) in cfg.wall.iter().enumerate() {
        let key = |f: &str| format!("wall[{i}].{f}");
        let n = c.finite3(&key("normal"), w.normal)?;
        if n.norm() == 0.0 {
            return Err(c.err(key("normal"), "must not be zero"));
        }
        let point = c.finite3(&key("point"), w.point)?;
        let motion = match (&w.velocity, &w.path) {
            (Some(_), Some(_)) => return Err(c.err(key("path"), "give either velocity or path, not both")),
            (Some(v), None) => WallMotion::Velocity(c.finite3(&key("velocity"), *v)?),
            (None, Some(path)) => {
                let mut out = Vec::with_capacity(path.len());
                let mut last = 0.0;
                for (k, p) in path.iter().enumerate() {
                    if !p.iter().all(|x| x.is_finite()) || p[0] <= last {
                        return Err(c.err(format!("wall[{i}].path[{k}]"), format!("must be [t, x, y, z] with t increasing from above 0, got {p:?}")));
                    }
                    last = p[0];
                    out.push((p[0], Vector3::new(p[1], p[2], p[3])));
                }
                WallMotion::Path(out)
            }
            (None, None) => WallMotion::Fixed,
        };
        walls.push(Wall {
            point,
            origin: point,
            motion,
            normal: n.normalize(),
            material: find_mat(key("material"), &w.material)?,
            until: match w.until {
                Some(t) => c.non_negative(&key("until"), t)?,
                None => f64::INFINITY,
            },
            removed: false,
        });
    }

    check_overlaps(&c, &bodies, &shapes, &walls, &origin)?;

    let o = &cfg.output;
    if o.dir.as_os_str().is_empty() {
        return Err(c.err("output.dir", "must not be empty"));
    }
    let parent = o.dir.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(std::path::Path::new("."));
    if !parent.is_dir() {
        return Err(c.err("output.dir", format!("parent directory {} does not exist", parent.display())));
    }
    if o.thermo_every == 0 {
        return Err(c.err("output.thermo_every", "must be at least 1"));
    }
    if o.checkpoint_keep == 0 {
        return Err(c.err("output.checkpoint_keep", "must be at least 1"));
    }
    let output = Output {
        dir: o.dir.clone(),
        every: o.every,
        checkpoint_every: o.checkpoint_every,
        checkpoint_keep: o.checkpoint_keep,
        checkpoint_at_end: o.checkpoint_at_end,
        thermo_every: o.thermo_every,
        thermo_seconds: c.positive("output.thermo_seconds", o.thermo_seconds)?,
    };
    let solver = SolverSettings {
        tolerance: c.positive("solver.tolerance", cfg.solver.tolerance)?,
        max_iterations: match cfg.solver.max_iterations {
            0 => return Err(c.err("solver.max_iterations", "must be at least 1")),
            n => n,
        },
        method: cfg.solver.method,
        pgs_order: cfg.solver.pgs_order,
    };
    // Defaults scale with the smallest body: a skin of a fifth of its radius,
    // and a detection distance of a tenth.
    let rmin = shapes.iter().map(|s| s.bounding_radius()).fold(f64::INFINITY, f64::min);
    let contact = ContactSettings {
        skin: match cfg.contact.skin {
            Some(v) => c.positive("contact.skin", v)?,
            None => 0.2 * rmin,
        },
        distance: match cfg.contact.distance {
            Some(v) => c.non_negative("contact.distance", v)?,
            None => 0.1 * rmin,
        },
        entity_lists: cfg.contact.entity_lists.unwrap_or(true),
    };
    let imbalance = cfg.parallel.imbalance;
    if !(imbalance.is_finite() && imbalance >= 1.0) {
        return Err(c.err("parallel.imbalance", format!("must be a number of at least 1, got {imbalance}")));
    }
    // The heaviest moving body, explicit or generated (files: their `shape`).
    let mut m_max = (0..bodies.len()).filter(|&i| !bodies.fixed[i]).map(|i| bodies.mass[i]).fold(0.0, f64::max);
    for src in sources.iter().filter(|s| !s.fixed) {
        let mats = src.parity.map_or(vec![src.material], |m| m.to_vec());
        for &sh in &src.classes.shape {
            for &m in &mats {
                m_max = m_max.max(materials[m as usize].density * shapes[sh as usize].unit_mass_properties().volume);
            }
        }
    }
    let dem = dem_settings(&c, &cfg.dem, &simulation, m_max, &contact)?;
    if simulation.solver == SolverKind::Dem {
        check_dem_gaps(&c, &bodies, &shapes, &walls, &origin)?;
        if let Some(src) = sources.iter().find(|s| touching_by_construction(s)) {
            return Err(c.err(
                format!("{}.gap", src.key),
                "solver = \"dem\" needs a positive initial gap between all bodies (set `gap` > 0 in the generators): neighbours of this generator touch",
            ));
        }
    }
    let compat = compat_settings(&c, &cfg.compatibility, &mat_index)?;
    let loads = loads(&c, &cfg.load, &simulation, &bodies, &sources)?;
    let periodic = periodic(&c, &cfg.parallel, &bodies, &shapes, &contact, &sources)?;
    Ok(Scene {
        simulation,
        materials,
        shapes,
        shape_names,
        bodies,
        sources,
        walls,
        output,
        solver,
        contact,
        imbalance,
        periodic,
        dem,
        compat,
        loads,
        config_text,
    })
}

/// `[compatibility]` -> [`CompatSettings`].
fn compat_settings(c: &Ctx, cfg: &CompatibilityCfg, mat_index: &HashMap<&str, u32>) -> Result<CompatSettings, ConfigError> {
    let d = CompatSettings::default();
    let p = match (cfg.law, cfg.p) {
        (Some(_), Some(_)) => return Err(c.err("compatibility.p", "give either `law` or `p`, not both")),
        (Some(ContactLaw::Hooke), None) | (None, None) => 2.0,
        (Some(ContactLaw::Hertz), None) => 2.5,
        (None, Some(p)) if p.is_finite() && p > 1.0 => p,
        (None, Some(p)) => return Err(c.err("compatibility.p", format!("must be a number greater than 1, got {p}"))),
    };
    let every = match cfg.every {
        Some(0) => return Err(c.err("compatibility.every", "must be at least 1")),
        Some(n) => n,
        None => d.every,
    };
    let tol = |key: &str, v: Option<f64>, dflt: f64| match v {
        Some(v) => c.positive(key, v),
        None => Ok(dflt),
    };
    let count = |key: &str, v: Option<u32>, dflt: u32| match v {
        Some(0) => Err(c.err(key, "must be at least 1")),
        Some(n) => Ok(n),
        None => Ok(dflt),
    };
    let mut pair_stiffness = Vec::new();
    for (i, s) in cfg.stiffness.iter().enumerate() {
        let key = |f: &str| format!("compatibility.stiffness[{i}].{f}");
        let mut m = [0u32; 2];
        for (j, name) in s.materials.iter().enumerate() {
            m[j] = *mat_index.get(name.as_str()).ok_or_else(|| {
                let mut known: Vec<&str> = mat_index.keys().copied().collect();
                known.sort();
                c.err(key("materials"), format!("unknown material `{name}` (known: {})", known.join(", ")))
            })?;
        }
        let pair = (m[0].min(m[1]), m[0].max(m[1]));
        if pair_stiffness.iter().any(|(q, _)| *q == pair) {
            return Err(c.err(key("materials"), "this pair of materials is already listed"));
        }
        pair_stiffness.push((pair, c.positive(&key("k"), s.k)?));
    }
    let method = cfg.method.unwrap_or_default();
    let max_default = if method == crate::scene::CompatMethod::Apgd { 200_000 } else { d.max_iterations };
    Ok(CompatSettings {
        p,
        method,
        max_iterations: count("compatibility.max_iterations", cfg.max_iterations, max_default)?,
        every,
        feasibility_tolerance: tol("compatibility.feasibility_tolerance", cfg.feasibility_tolerance, d.feasibility_tolerance)?,
        optimality_tolerance: tol("compatibility.optimality_tolerance", cfg.optimality_tolerance, d.optimality_tolerance)?,
        max_outer: count("compatibility.max_outer", cfg.max_outer, d.max_outer)?,
        max_inner: count("compatibility.max_inner", cfg.max_inner, d.max_inner)?,
        pair_stiffness,
    })
}

/// Resolves the `[dem]` table; defaults derived from the scene.
fn dem_settings(
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
    if gbar > contact.distance && sim.solver == SolverKind::Dem {
        return Err(c.err("dem.gbar", format!("must not exceed contact.distance = {} (contacts would act before they are detected)", contact.distance)));
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
    if beta > 0.5 || gamma > 1.0 {
        return Err(c.err("dem.beta", format!("Newmark needs 0 < beta <= 0.5 and 0 < gamma <= 1, got {beta}, {gamma}")));
    }
    let dt_max = opt("dem.dt_max", d.dt_max, sim.dt)?;
    let dt_min = opt("dem.dt_min", d.dt_min, dt_max / 1024.0)?;
    if dt_min > dt_max {
        return Err(c.err("dem.dt_min", format!("must not exceed dem.dt_max = {dt_max}")));
    }
    let newton_tolerance = opt("dem.newton_tolerance", d.newton_tolerance, 1e-10 * weight)?;
    let newton_max_iterations = match d.newton_max_iterations {
        Some(0) => return Err(c.err("dem.newton_max_iterations", "must be at least 1")),
        Some(n) => n,
        None => 30,
    };
    let gap_fraction = opt("dem.gap_fraction", d.gap_fraction, 0.1)?;
    if gap_fraction >= 1.0 {
        return Err(c.err("dem.gap_fraction", format!("must lie in (0, 1), got {gap_fraction}")));
    }
    let gap_change = opt("dem.gap_change", d.gap_change, 0.2)?;
    let easy_iterations = d.easy_iterations.unwrap_or(4);
    if easy_iterations >= newton_max_iterations {
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
    })
}

/// `[[load]]` entries -> [`Load`]s: the body must exist and move, at most
/// one load per body, finite values, a ramp that does not run backwards,
/// and only with the DEM solver.
fn loads(c: &Ctx, cfg: &[LoadCfg], sim: &Simulation, bodies: &Bodies, sources: &[Source]) -> Result<Vec<Load>, ConfigError> {
    let files = sources.iter().any(|s| s.count.is_none());
    let n = bodies.len() as u64 + sources.iter().filter_map(|s| s.count).sum::<u64>();
    let mut out: Vec<Load> = Vec::new();
    for (i, l) in cfg.iter().enumerate() {
        let key = |f: &str| format!("load[{i}].{f}");
        if sim.solver != SolverKind::Dem {
            return Err(c.err(format!("load[{i}]"), format!("external loads need solver = \"dem\", not \"{}\"", sim.solver.name())));
        }
        if l.body >= n && !files {
            return Err(c.err(key("body"), format!("no body with id {} (the scene has {n} bodies, ids 0..{})", l.body, n - 1)));
        }
        if fixed_body(bodies, sources, l.body) == Some(true) {
            return Err(c.err(key("body"), format!("body {} is fixed: a load on it does nothing", l.body)));
        }
        if let Some(j) = out.iter().position(|o| o.body == l.body) {
            return Err(c.err(key("body"), format!("body {} already has a load (load[{j}]); give at most one [[load]] per body", l.body)));
        }
        if l.force.is_none() && l.moment.is_none() {
            return Err(c.err(format!("load[{i}]"), "give a `force`, a `moment` or both"));
        }
        if l.point.is_some() && l.force.is_none() {
            return Err(c.err(key("point"), "a point of application needs a `force`"));
        }
        let force = c.finite3(&key("force"), l.force.unwrap_or_default())?;
        let point = c.finite3(&key("point"), l.point.unwrap_or_default())?;
        let moment = c.finite3(&key("moment"), l.moment.unwrap_or_default())?;
        if sim.dim == 2 {
            if force.z != 0.0 || point.z != 0.0 {
                return Err(c.err(key(if force.z != 0.0 { "force" } else { "point" }), "must have z = 0 in 2D (the x-y plane)"));
            }
            if moment.x != 0.0 || moment.y != 0.0 {
                return Err(c.err(key("moment"), "must be about z only in 2D ([0, 0, Mz])"));
            }
        }
        let t_start = c.non_negative(&key("t_start"), l.t_start.unwrap_or(0.0))?;
        let t_ramp_end = l.t_ramp_end.unwrap_or(t_start);
        if !t_ramp_end.is_finite() {
            return Err(c.err(key("t_ramp_end"), format!("must be a finite time, got {t_ramp_end}")));
        }
        if t_ramp_end < t_start {
            return Err(c.err(key("t_ramp_end"), format!("must not come before t_start = {t_start}, got {t_ramp_end}")));
        }
        out.push(Load { body: l.body, force, point, moment, t_start, t_ramp_end });
    }
    Ok(out)
}

/// The barrier law cannot start from touching bodies: for solver = "dem"
/// every pair of spheres and every sphere–wall pair must start with a
/// positive gap. Lists the offending pairs by id.
fn check_dem_gaps(c: &Ctx, bodies: &Bodies, shapes: &[Shape], walls: &[Wall], origin: &[String]) -> Result<(), ConfigError> {
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
    Ok(())
}

fn periodic(
    c: &Ctx,
    cfg: &ParallelCfg,
    bodies: &Bodies,
    shapes: &[Shape],
    contact: &ContactSettings,
    sources: &[Source],
) -> Result<Option<crate::scene::Periodic>, ConfigError> {
    if !cfg.periodic.iter().any(|&p| p) {
        return Ok(None);
    }
    let lo = c.finite3("parallel.box_min", cfg.box_min.ok_or_else(|| c.err("parallel.box_min", "required with periodic axes"))?)?;
    let hi = c.finite3("parallel.box_max", cfg.box_max.ok_or_else(|| c.err("parallel.box_max", "required with periodic axes"))?)?;
    let rmax = shapes.iter().map(|s| s.bounding_radius()).fold(0.0, f64::max);
    // A body must never meet its own image: the period exceeds two reaches.
    let reach = 2.0 * rmax + contact.skin + contact.distance;
    for a in 0..3 {
        if cfg.periodic[a] && hi[a] - lo[a] <= 2.0 * reach {
            return Err(c.err("parallel.box_max", format!("the periodic box must be longer than {:.4e} on axis {a}", 2.0 * reach)));
        }
    }
    for i in 0..bodies.len() {
        let p = bodies.position[i];
        if (0..3).any(|a| cfg.periodic[a] && (p[a] < lo[a] || p[a] >= hi[a])) {
            return Err(c.err("parallel.box_min", format!("body {i} lies outside the periodic box")));
        }
    }
    for src in sources {
        if let Some((a, b)) = src.bounds() {
            let r = src.classes.max();
            if (0..3).any(|k| cfg.periodic[k] && (a[k] + r < lo[k] || b[k] - r >= hi[k])) {
                return Err(c.err(&src.key, "places bodies outside the periodic box"));
            }
        }
    }
    Ok(Some(crate::scene::Periodic { lo, hi, axes: cfg.periodic }))
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = it.map(|s| s.as_str()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

fn materials(c: &Ctx, cfg: &[MaterialCfg]) -> Result<Vec<Material>, ConfigError> {
    if cfg.is_empty() {
        return Err(c.err("material", "at least one [[material]] with a name and a density is needed"));
    }
    let mut out = Vec::new();
    for (i, m) in cfg.iter().enumerate() {
        let key = |f: &str| format!("material[{i}].{f}");
        if cfg[..i].iter().any(|o| o.name == m.name) {
            return Err(c.err(key("name"), format!("duplicate material name `{}`", m.name)));
        }
        if let Some(e) = m.young {
            c.positive(&key("young"), e)?;
        }
        if let Some(nu) = m.poisson {
            if !(nu > -1.0 && nu < 0.5) {
                return Err(c.err(key("poisson"), format!("must lie in (-1, 0.5), got {nu}")));
            }
        }
        if !(0.0..=1.0).contains(&m.restitution) {
            return Err(c.err(key("restitution"), format!("must lie in [0, 1], got {}", m.restitution)));
        }
        let mu_s = c.non_negative(&key("friction"), m.friction)?;
        let mu_d = c.non_negative(&key("friction_dynamic"), m.friction_dynamic.unwrap_or(mu_s))?;
        out.push(Material {
            name: m.name.clone(),
            density: c.positive(&key("density"), m.density)?,
            young: m.young,
            poisson: m.poisson,
            friction_static: mu_s,
            friction_dynamic: mu_d,
            restitution: m.restitution,
        });
    }
    Ok(out)
}

fn shapes(c: &Ctx, cfg: &[ShapeCfg]) -> Result<(Vec<Shape>, Vec<String>), ConfigError> {
    let mut shapes = Vec::new();
    let mut names = Vec::new();
    for (i, s) in cfg.iter().enumerate() {
        let key = |f: &str| format!("shape[{i}].{f}");
        if names.contains(&s.name) {
            return Err(c.err(key("name"), format!("duplicate shape name `{}`", s.name)));
        }
        let unused = |f: &str, present: bool| -> Result<(), ConfigError> {
            if present {
                Err(c.err(key(f), format!("does not apply to kind = {:?}", s.kind).to_lowercase()))
            } else {
                Ok(())
            }
        };
        let unused_tetrapod = || -> Result<(), ConfigError> {
            unused("arm_length", s.arm_length.is_some())?;
            unused("arm_radius", s.arm_radius.is_some())?;
            unused("segments", s.segments.is_some())
        };
        let shape = match s.kind {
            ShapeKind::Sphere => {
                unused("size", s.size.is_some())?;
                unused("file", s.file.is_some())?;
                unused_tetrapod()?;
                let r = s.radius.ok_or_else(|| c.err(key("radius"), "required for kind = sphere"))?;
                Shape::Sphere { radius: c.positive(&key("radius"), r)? }
            }
            ShapeKind::Box => {
                unused("radius", s.radius.is_some())?;
                unused("file", s.file.is_some())?;
                unused_tetrapod()?;
                let size = s.size.ok_or_else(|| c.err(key("size"), "required for kind = box"))?;
                for d in size {
                    c.positive(&key("size"), d)?;
                }
                Shape::Mesh(Arc::new(TriMesh::cuboid(Vector3::from(size))))
            }
            ShapeKind::Mesh => {
                unused("radius", s.radius.is_some())?;
                unused("size", s.size.is_some())?;
                unused_tetrapod()?;
                let f = s.file.as_ref().ok_or_else(|| c.err(key("file"), "required for kind = mesh"))?;
                if !f.is_file() {
                    return Err(c.err(key("file"), format!("mesh file {} not found", f.display())));
                }
                let scale = c.positive(&key("scale"), s.scale.unwrap_or(1.0))?;
                let m = TriMesh::load(f, scale).map_err(|e| c.err(key("file"), format!("{}: {e}", f.display())))?;
                Shape::Mesh(Arc::new(m))
            }
            ShapeKind::Tetrapod => {
                unused("radius", s.radius.is_some())?;
                unused("size", s.size.is_some())?;
                unused("file", s.file.is_some())?;
                unused("scale", s.scale.is_some())?;
                let l = s.arm_length.ok_or_else(|| c.err(key("arm_length"), "required for kind = tetrapod"))?;
                let r = s.arm_radius.ok_or_else(|| c.err(key("arm_radius"), "required for kind = tetrapod"))?;
                let l = c.positive(&key("arm_length"), l)?;
                let r = c.positive(&key("arm_radius"), r)?;
                if l <= 2.0 * r {
                    return Err(c.err(key("arm_length"), format!("must exceed 2 × arm_radius = {}, got {l}", 2.0 * r)));
                }
                let n = s.segments.unwrap_or(12);
                if !(3..=1024).contains(&n) {
                    return Err(c.err(key("segments"), format!("must be between 3 and 1024, got {n}")));
                }
                Shape::Mesh(Arc::new(TriMesh::tetrapod(l, r, n)))
            }
        };
        shapes.push(shape);
        names.push(s.name.clone());
    }
    if shapes.is_empty() {
        return Err(c.err("shape", "at least one [[shape]] is needed"));
    }
    Ok((shapes, names))
}

/// Refuses spheres that interpenetrate each other or a wall at the start
/// (meshes are checked by their contact detection later).
fn check_overlaps(
    c: &Ctx,
    bodies: &Bodies,
    shapes: &[Shape],
    walls: &[Wall],
    origin: &[String],
) -> Result<(), ConfigError> {
    let radius = |i: usize| match shapes[bodies.shape[i] as usize] {
        Shape::Sphere { radius } => Some(radius),
        Shape::Mesh(_) => None,
    };
    let spheres: Vec<usize> = (0..bodies.len()).filter(|&i| radius(i).is_some()).collect();
    let tol = |r: f64| crate::scene::START_OVERLAP * r;
    let mut pairs = Vec::new();
    for (a, b) in generate::close_pairs(&spheres.iter().map(|&i| (bodies.position[i], radius(i).unwrap())).collect::<Vec<_>>()) {
        let (i, j) = (spheres[a], spheres[b]);
        let (ri, rj) = (radius(i).unwrap(), radius(j).unwrap());
        let gap = (bodies.position[i] - bodies.position[j]).norm() - ri - rj;
        if gap < -tol(ri.min(rj)) && !(bodies.fixed[i] && bodies.fixed[j]) {
            pairs.push((i, j, gap));
        }
    }
    if let Some(&(i, j, gap)) = pairs.first() {
        let list: Vec<String> = pairs.iter().take(5).map(|(i, j, _)| format!("{i}-{j}")).collect();
        return Err(c.err(
            &origin[j],
            format!(
                "{} overlapping pair(s) of bodies (ids {}{}); bodies {i} and {j} overlap by {:.3e}",
                pairs.len(),
                list.join(", "),
                if pairs.len() > 5 { ", ..." } else { "" },
                -gap
            ),
        ));
    }
    for (w, wall) in walls.iter().enumerate() {
        for &i in &spheres {
            let d = (bodies.position[i] - wall.point).dot(&wall.normal) - radius(i).unwrap();
            if d < -tol(radius(i).unwrap()) && !bodies.fixed[i] {
                return Err(c.err(&origin[i], format!("body {i} penetrates wall[{w}] by {:.3e}", -d)));
            }
        }
    }
    Ok(())
}

/// Whether body `id` is fixed, when the config alone says (not for files).
fn fixed_body(bodies: &Bodies, sources: &[Source], id: u64) -> Option<bool> {
    if (id as usize) < bodies.len() {
        return Some(bodies.fixed[id as usize]);
    }
    let src = sources.iter().find(|s| s.count.is_some_and(|n| id >= s.first_id && id < s.first_id + n))?;
    Some(match &src.kind {
        SourceKind::Pyramid { n, fix_base, .. } => src.fixed || (*fix_base && id - src.first_id < (*n as u64).pow(2)),
        _ => src.fixed,
    })
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

/// `radius = {...}` -> radius classes, with one derived sphere shape per
/// class (named `<shape>#<c>`), pushed to `extra` (indices from `first_shape`).
fn radius_classes(
    c: &Ctx,
    key: &dyn Fn(&str) -> String,
    cfg: &RadiusCfg,
    base: &str,
    first_shape: u32,
    extra: &mut Vec<(Shape, String)>,
) -> Result<RadiusClasses, ConfigError> {
    let k = key("radius");
    let (radii, fractions): (Vec<f64>, Vec<f64>) = match (cfg.min, cfg.max, &cfg.values, &cfg.fractions) {
        (Some(lo), Some(hi), None, None) => {
            let lo = c.positive(&k, lo)?;
            let hi = c.positive(&k, hi)?;
            if hi < lo {
                return Err(c.err(&k, format!("max = {hi} is below min = {lo}")));
            }
            let n = cfg.classes.unwrap_or(16);
            if !(1..=1024).contains(&n) {
                return Err(c.err(&k, format!("classes must be between 1 and 1024, got {n}")));
            }
            let r = (0..n).map(|i| if n == 1 { 0.5 * (lo + hi) } else { lo + (hi - lo) * i as f64 / (n - 1) as f64 }).collect();
            (r, vec![1.0 / n as f64; n as usize])
        }
        (None, None, Some(v), Some(f)) if cfg.classes.is_none() => {
            if v.is_empty() || v.len() != f.len() || v.len() > 1024 {
                return Err(c.err(&k, "values and fractions need the same length (1 to 1024 entries)"));
            }
            for &r in v {
                c.positive(&k, r)?;
            }
            for &x in f {
                c.non_negative(&k, x)?;
            }
            let sum: f64 = f.iter().sum();
            if (sum - 1.0).abs() > 1e-6 {
                return Err(c.err(&k, format!("fractions must sum to 1, got {sum}")));
            }
            (v.clone(), f.iter().map(|x| x / sum).collect())
        }
        _ => return Err(c.err(&k, "give either { min, max, classes } or { values, fractions }")),
    };
    let mut out = RadiusClasses { shape: Vec::new(), radius: Vec::new(), cumulative: Vec::new() };
    let mut acc = 0.0;
    for (i, (r, f)) in radii.iter().zip(&fractions).enumerate() {
        acc += f;
        out.shape.push(first_shape + extra.len() as u32);
        out.radius.push(*r);
        out.cumulative.push(if i + 1 == radii.len() { 1.0 } else { acc });
        extra.push((Shape::Sphere { radius: *r }, format!("{base}#{i}")));
    }
    Ok(out)
}

type FindShape<'a> = dyn Fn(String, &str) -> Result<u32, ConfigError> + 'a;
type FindMat<'a> = dyn Fn(String, &Option<String>) -> Result<u32, ConfigError> + 'a;
/// Sphere shapes a radius distribution adds, with their names.
type ExtraShapes = Vec<(Shape, String)>;

/// `[[generate]]` entries -> sources (expanded at start-up), plus the sphere
/// shapes their radius distributions add.
#[allow(clippy::too_many_arguments)]
fn sources(
    c: &Ctx,
    cfg: &Config,
    simulation: &Simulation,
    shapes: &[Shape],
    shape_names: &[String],
    _materials: &[crate::scene::Material],
    find_shape: &FindShape,
    find_mat: &FindMat,
    n_explicit: u64,
) -> Result<(Vec<Source>, ExtraShapes), ConfigError> {
    let mut out: Vec<Source> = Vec::new();
    let mut extra: Vec<(Shape, String)> = Vec::new();
    let mut next_id = n_explicit;
    for (k, g) in cfg.generate.iter().enumerate() {
        let key = |f: &str| format!("generate[{k}].{f}");
        let kind_name = format!("{:?}", g.kind).to_lowercase();
        let shape = match &g.shape {
            Some(name) => Some(find_shape(key("shape"), name)?),
            None if g.kind == GenerateKind::File => None,
            None => return Err(c.err(key("shape"), format!("required for kind = {kind_name}"))),
        };
        let material = find_mat(key("material"), &g.material)?;
        let parity = match &g.material_by_parity {
            None => None,
            Some([even, odd]) => {
                if g.material.is_some() {
                    return Err(c.err(key("material_by_parity"), "give either `material` or `material_by_parity`, not both"));
                }
                Some([find_mat(key("material_by_parity"), &Some(even.clone()))?, find_mat(key("material_by_parity"), &Some(odd.clone()))?])
            }
        };
        let gap = c.non_negative(&key("gap"), g.gap)?;
        let velocity = c.finite3(&key("velocity"), g.velocity)?;
        if simulation.dim == 2 && velocity.z != 0.0 {
            return Err(c.err(key("velocity"), "in 2D every body lies in z = 0 and moves in x-y"));
        }
        let need3 = |f: &str, v: Option<[f64; 3]>| -> Result<Vector3<f64>, ConfigError> {
            let v = v.ok_or_else(|| c.err(key(f), format!("required for kind = {kind_name}")))?;
            c.finite3(&key(f), v)
        };
        let unused = |f: &str, present: bool| -> Result<(), ConfigError> {
            if present {
                Err(c.err(key(f), format!("does not apply to kind = {kind_name}")))
            } else {
                Ok(())
            }
        };
        if g.kind != GenerateKind::File {
            unused("file", g.file.is_some())?;
            unused("format", g.format.is_some())?;
            unused("frame", g.frame.is_some())?;
        }
        if g.kind != GenerateKind::Random {
            unused("method", g.method.is_some())?;
        }
        if g.kind != GenerateKind::Lattice {
            unused("spacing", g.spacing.is_some())?;
        }
        let classes = match (&g.radius, shape) {
            (Some(rc), Some(sh)) => {
                if !matches!(g.kind, GenerateKind::Lattice | GenerateKind::Random) {
                    return Err(c.err(key("radius"), "a radius distribution is for kind = lattice or random"));
                }
                if !matches!(shapes[sh as usize], Shape::Sphere { .. }) {
                    return Err(c.err(key("radius"), "a radius distribution needs a sphere `shape`"));
                }
                let first = (shapes.len() + extra.len()) as u32;
                radius_classes(c, &key, rc, &shape_names[sh as usize], first, &mut extra)?
            }
            (Some(_), None) => return Err(c.err(key("radius"), "needs a sphere `shape`")),
            (None, Some(sh)) => RadiusClasses::single(sh, shapes[sh as usize].bounding_radius()),
            (None, None) => RadiusClasses { shape: Vec::new(), radius: Vec::new(), cumulative: Vec::new() },
        };
        let rmax = classes.max();
        let (kind, count) = match g.kind {
            GenerateKind::Lattice => {
                let origin = need3("origin", g.origin)?;
                let n = match &g.count {
                    Some(CountCfg::Three(n)) if n.iter().all(|&x| x >= 1) => *n,
                    Some(_) => return Err(c.err(key("count"), "must be [nx, ny, nz], each at least 1")),
                    None => return Err(c.err(key("count"), "required for kind = lattice")),
                };
                let count = n[0].checked_mul(n[1]).and_then(|m| m.checked_mul(n[2]));
                let count = count.ok_or_else(|| c.err(key("count"), format!("{n:?} overflows the body count")))?;
                if simulation.dim == 2 && (n[2] != 1 || origin.z != 0.0) {
                    return Err(c.err(format!("generate[{k}]"), "in 2D every body lies in z = 0: give count = [nx, ny, 1] and origin z = 0"));
                }
                let free = 2.0 * rmax + gap;
                let (spacing, checked) = match g.spacing {
                    None => (free, None),
                    Some(s) => {
                        let s = c.positive(&key("spacing"), s)?;
                        if s >= free {
                            (s, None)
                        } else if !matches!(shape.map(|sh| &shapes[sh as usize]), Some(Shape::Mesh(_))) || classes.radius.len() > 1 {
                            return Err(c.err(key("spacing"), format!("spheres of radius {rmax} spaced {s} apart keep no gap of {gap}: at least 2 R + gap = {free} (only mesh shapes may be spaced closer)")));
                        } else if s < rmax + 0.5 * gap {
                            return Err(c.err(key("spacing"), format!("must be at least R + gap/2 = {} (only adjacent lattice cells may meet), got {s}", rmax + 0.5 * gap)));
                        } else {
                            (s, Some(gap))
                        }
                    }
                };
                (SourceKind::Lattice { origin, n, spacing, checked }, count)
            }
            GenerateKind::Pyramid => {
                if !matches!(shapes[shape.unwrap() as usize], Shape::Sphere { .. }) {
                    return Err(c.err(key("shape"), "a pyramid is built of spheres"));
                }
                if simulation.dim == 2 {
                    return Err(c.err(format!("generate[{k}]"), "a pyramid is three-dimensional (simulation.dim = 2)"));
                }
                let origin = need3("origin", g.origin)?;
                let n = g.n.ok_or_else(|| c.err(key("n"), "required for kind = pyramid"))?;
                if n == 0 {
                    return Err(c.err(key("n"), "must be at least 1"));
                }
                let layer_gap = c.non_negative(&key("layer_gap"), g.layer_gap)?;
                let count = (n as u64) * (n as u64 + 1) * (2 * n as u64 + 1) / 6;
                let fix_base = g.fix_base.unwrap_or(true);
                (SourceKind::Pyramid { origin, n, radius: rmax, gap, layer_gap, fix_base }, count)
            }
            GenerateKind::Random => {
                let lo = need3("box_min", g.box_min)?;
                let hi = need3("box_max", g.box_max)?;
                if (0..3).any(|d| hi[d] - lo[d] < 2.0 * rmax) {
                    return Err(c.err(key("box_max"), "the box must be larger than one body in every direction"));
                }
                let count = match &g.count {
                    Some(CountCfg::One(n)) if *n >= 1 => *n,
                    Some(_) => return Err(c.err(key("count"), "must be a single number, at least 1")),
                    None => return Err(c.err(key("count"), "required for kind = random")),
                };
                let sequential = g.method == Some(RandomMethod::Sequential);
                if sequential && classes.radius.len() > 1 {
                    return Err(c.err(key("method"), "method = \"sequential\" takes one radius (no `radius` distribution)"));
                }
                let speed = c.non_negative(&key("random_speed"), g.random_speed)?;
                (SourceKind::Random { lo, hi, gap, speed, sequential }, count)
            }
            GenerateKind::File => {
                let path = g.file.clone().ok_or_else(|| c.err(key("file"), "required for kind = file"))?;
                let format = match g.format {
                    Some(f) => f,
                    None => match path.extension().and_then(|e| e.to_str()).unwrap_or("") {
                        "h5" | "hdf5" => FileFormat::Frames,
                        "csv" => FileFormat::Csv,
                        "data" => FileFormat::LammpsData,
                        "dump" | "lammpstrj" => FileFormat::LammpsDump,
                        e => return Err(c.err(key("format"), format!("cannot tell the format from the extension `.{e}`: give format = \"frames\", \"csv\", \"lammps-data\" or \"lammps-dump\""))),
                    },
                };
                if g.frame.is_some() && format != FileFormat::Frames {
                    return Err(c.err(key("frame"), "only for a frames.h5 file"));
                }
                unused("count", g.count.is_some())?;
                unused("random_orientation", g.random_orientation)?;
                (SourceKind::File { path, format, frame: g.frame }, u64::MAX)
            }
        };
        if g.random_orientation && !matches!(g.kind, GenerateKind::Random | GenerateKind::Lattice) {
            return Err(c.err(key("random_orientation"), "only for kind = random or lattice"));
        }
        let count = (count != u64::MAX).then_some(count);
        out.push(Source {
            key: format!("generate[{k}]"),
            kind,
            first_id: next_id,
            count,
            classes,
            material,
            parity,
            velocity,
            fixed: g.fixed,
            random_orientation: g.random_orientation,
            seed: g.seed,
        });
        if let Some(n) = count {
            next_id = next_id.checked_add(n).ok_or_else(|| c.err(key("count"), "the body count overflows"))?;
        }
    }
    // Files come after every counted body, in file order (set at start-up).
    Ok((out, extra))
}

#[cfg(test)]
mod tests {
    use crate::body::Shape;

    fn scene(shape: &str) -> String {
        format!(
            "[simulation]\nsolver = \"dem\"\ndim = 3\nt_end = 0.1\ndt = 1e-3\n\n[[material]]\nname = \"c\"\ndensity = 2400.0\nyoung = 3e10\npoisson = 0.2\n\n[[shape]]\nname = \"t\"\n{shape}\n\n[[body]]\nshape = \"t\"\nposition = [0.0, 0.0, 1.0]\n"
        )
    }

    #[test]
    fn tetrapod_shape_from_config() {
        let s = crate::config::from_str("t.toml", &scene("kind = \"tetrapod\"\narm_length = 1.0\narm_radius = 0.3\nsegments = 8")).unwrap();
        let Shape::Mesh(m) = &s.shapes[0] else { panic!("a tetrapod is a mesh") };
        m.check().unwrap();
        assert_eq!(m.triangles.len(), 4 * (1 + 6 + 8 + 3 * 8));
    }

    #[test]
    fn tetrapod_config_errors_name_the_key() {
        let e = crate::config::from_str("t.toml", &scene("kind = \"tetrapod\"\narm_radius = 0.3")).unwrap_err().to_string();
        assert!(e.contains("t.toml") && e.contains("shape[0].arm_length") && e.contains("required"), "{e}");
        let e = crate::config::from_str("t.toml", &scene("kind = \"tetrapod\"\narm_length = 0.5\narm_radius = 0.3")).unwrap_err().to_string();
        assert!(e.contains("shape[0].arm_length") && e.contains("2 × arm_radius"), "{e}");
        let e = crate::config::from_str("t.toml", &scene("kind = \"tetrapod\"\narm_length = 1.0\narm_radius = 0.3\nsegments = 2")).unwrap_err().to_string();
        assert!(e.contains("shape[0].segments"), "{e}");
        let e = crate::config::from_str("t.toml", &scene("kind = \"box\"\nsize = [1.0, 1.0, 1.0]\narm_radius = 0.3")).unwrap_err().to_string();
        assert!(e.contains("shape[0].arm_radius") && e.contains("does not apply"), "{e}");
        let e = crate::config::from_str("t.toml", &scene("kind = \"tetrapod\"\narm_length = 1.0\narm_radius = 0.3\narm_count = 4")).unwrap_err().to_string();
        assert!(e.contains("arm_count"), "{e}");
    }
}
