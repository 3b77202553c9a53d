//! Checks across entries: overlapping bodies, loads, the periodic box.
use super::Ctx;
use crate::body::{Bodies, Shape};
use crate::config::schema::{LoadCfg, ParallelCfg};
use crate::config::ConfigError;
use crate::scene::sources::{Source, SourceKind};
use crate::scene::{generate, ContactSettings, Load, Simulation, Wall};

/// `[[load]]` entries -> [`Load`]s: the body must exist and move, at most
/// one load per body, finite values, a ramp that does not run backwards,
/// under any solver (compatible-cd's F̃ = Bᵀ f_CD takes them in through
/// the CD step).
pub(super) fn loads(c: &Ctx, cfg: &[LoadCfg], sim: &Simulation, bodies: &Bodies, sources: &[Source]) -> Result<Vec<Load>, ConfigError> {
    let files = sources.iter().any(|s| s.count.is_none());
    let n = bodies.len() as u64 + sources.iter().filter_map(|s| s.count).sum::<u64>();
    let mut out: Vec<Load> = Vec::new();
    for (i, l) in cfg.iter().enumerate() {
        let key = |f: &str| format!("load[{i}].{f}");
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

/// `[parallel]` periodic axes: a box on them longer than two reaches of the
/// largest body, with every body inside it.
pub(super) fn periodic(
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
    let mut periodic = crate::scene::Periodic::new(lo, hi, cfg.periodic);
    periodic.shear = match (&cfg.lees_edwards, cfg.shear_rate) {
        (None, None) => None,
        (Some(_), None) => return Err(c.err("parallel.shear_rate", "is required with lees_edwards")),
        (None, Some(_)) => return Err(c.err("parallel.lees_edwards", "is required with shear_rate (the flow and gradient axes, e.g. \"xz\")")),
        (Some(axes), Some(rate)) => {
            let v: Vec<Option<usize>> = axes.chars().map(|ch| "xyz".find(ch)).collect();
            match v.as_slice() {
                [Some(f), Some(g)] if f != g && cfg.periodic[*f] && cfg.periodic[*g] => {
                    if !rate.is_finite() {
                        return Err(c.err("parallel.shear_rate", format!("must be a finite number, got {rate}")));
                    }
                    Some(crate::scene::LeesEdwards { flow: *f, gradient: *g, rate })
                }
                _ => return Err(c.err("parallel.lees_edwards", format!("must name two different periodic axes, flow then gradient (e.g. \"xz\"), got \"{axes}\""))),
            }
        }
    };
    let key = |k: &str| format!("parallel.{k}");
    periodic.cell = match cfg.servo_stress {
        None => {
            let set = [
                ("servo_gain", cfg.servo_gain.is_some()),
                ("servo_max_speed", cfg.servo_max_speed.is_some()),
                ("servo_ramp", cfg.servo_ramp.is_some()),
                ("servo_average", cfg.servo_average.is_some()),
            ];
            super::servo_unset(c, &key, &set, "needs parallel.servo_stress")?;
            None
        }
        Some(sigma) => {
            let Some(s) = periodic.shear else {
                return Err(c.err("parallel.servo_stress", "needs a Lees–Edwards cell (lees_edwards, shear_rate): the stress is held on its gradient axis"));
            };
            let target = crate::scene::ServoTarget::Stress(c.positive("parallel.servo_stress", sigma)?);
            let law = super::ServoLaw { gain: cfg.servo_gain, max_speed: cfg.servo_max_speed, ramp: cfg.servo_ramp };
            let mut face = nalgebra::Vector3::zeros();
            face[s.gradient] = hi[s.gradient];
            let servo = super::servo_law(c, &key, target, law, "is required with parallel.servo_stress (the largest rate of the cell's gradient period, m/s)", face)?;
            periodic.average = c.non_negative("parallel.servo_average", cfg.servo_average.unwrap_or(0.0))?;
            Some(servo)
        }
    };
    Ok(Some(periodic))
}

/// Refuses spheres that interpenetrate each other or a wall at the start by
/// more than `start_overlap` of a radius (meshes are checked by their
/// contact detection later).
pub(super) fn check_overlaps(
    c: &Ctx,
    bodies: &Bodies,
    shapes: &[Shape],
    walls: &[Wall],
    origin: &[String],
    simulation: &crate::scene::Simulation,
) -> Result<(), ConfigError> {
    let radius = |i: usize| match shapes[bodies.shape[i] as usize] {
        Shape::Sphere { radius } => Some(radius),
        Shape::Mesh(_) => None,
    };
    let spheres: Vec<usize> = (0..bodies.len()).filter(|&i| radius(i).is_some()).collect();
    let tol = |r: f64| simulation.start_overlap * r;
    let hint = || simulation.overlap_hint();
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
                "{} overlapping pair(s) of bodies (ids {}{}); bodies {i} and {j} overlap by {:.3e} ({})",
                pairs.len(),
                list.join(", "),
                if pairs.len() > 5 { ", ..." } else { "" },
                -gap,
                hint(),
            ),
        ));
    }
    for (w, wall) in walls.iter().enumerate() {
        for &i in &spheres {
            let d = (bodies.position[i] - wall.point).dot(&wall.normal) - radius(i).unwrap();
            if d < -tol(radius(i).unwrap()) && !bodies.fixed[i] {
                return Err(c.err(&origin[i], format!("body {i} penetrates wall[{w}] by {:.3e} ({})", -d, hint())));
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
