//! Schema -> Scene: checks every value and resolves names to indices.
//! `scene` runs the steps in a fixed order, so a config with several
//! mistakes is always refused for the same (first) one.
mod checks;
mod dem;
mod ignored;
mod shapes;
mod solvers;
mod sources;

use super::schema::*;
use super::{ConfigError, Ignored};
use crate::body::{Bodies, Body, Shape};
use crate::scene::sources::Source;
use crate::scene::{ContactSettings, Material, MeasureSettings, Output, Scene, Servo, ServoTarget, Simulation, Wall, WallMotion};
use nalgebra::{Quaternion, UnitQuaternion, Vector3};
use shapes::Names;

/// The file errors name, and the checks every step shares.
struct Ctx<'a> {
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, key: impl Into<String>, msg: impl Into<String>) -> ConfigError {
        ConfigError::new(self.file, key, msg)
    }
    fn warn(&self, message: String) -> Ignored {
        Ignored { file: self.file.to_string(), message }
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

/// The scene, and the settings its solver does not read.
pub fn scene(file: &str, cfg: Config, config_text: String) -> Result<(Scene, Vec<Ignored>), ConfigError> {
    let c = Ctx { file };
    let simulation = simulation(&c, &cfg.simulation)?;
    let materials = shapes::materials(&c, &cfg.material)?;
    let (mut shapes, mut shape_names) = shapes::shapes(&c, &cfg.shape, cfg.generate.iter().any(|g| g.kind == GenerateKind::File))?;
    let names = Names::new(&c, &cfg.material, &shape_names);
    let (bodies, origin) = explicit_bodies(&c, &cfg.body, &names, &shapes, &materials, &simulation)?;
    let (sources, extra_shapes) = sources::sources(&c, &cfg, &simulation, &shapes, &shape_names, &names, bodies.len() as u64)?;
    for (s, n) in extra_shapes {
        shapes.push(s);
        shape_names.push(n);
    }
    check_bodies_present(&c, &simulation, &bodies, &sources, &origin)?;
    let walls = walls(&c, &cfg, &names)?;
    checks::check_overlaps(&c, &bodies, &shapes, &walls, &origin, &simulation)?;
    let output = output(&c, &cfg.output)?;
    let solver = solvers::solver_settings(&c, &cfg.solver, &simulation)?;
    solvers::check_friction(&c, &cfg.material, &simulation, &solver, cfg.compatibility.method)?;
    let contact = contact(&c, &cfg.contact, &shapes)?;
    let imbalance = cfg.parallel.imbalance;
    if !(imbalance.is_finite() && imbalance >= 1.0) {
        return Err(c.err("parallel.imbalance", format!("must be a number of at least 1, got {imbalance}")));
    }
    let start = solvers::Start { bodies: &bodies, origin: &origin, sources: &sources, shapes: &shapes, materials: &materials, walls: &walls };
    let owned = solvers::owned(&c, &cfg, &simulation, &contact, &start)?;
    let loads = checks::loads(&c, &cfg.load, &simulation, &bodies, &sources)?;
    let periodic = checks::periodic(&c, &cfg.parallel, &bodies, &shapes, &contact, &sources)?;
    let measure = measure(&c, &cfg.measure, simulation.dim)?;
    let ignored = ignored::ignored(&c, &cfg, &config_text);
    let scene = Scene {
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
        dem: owned.dem,
        compat: owned.compat,
        stiffness_pairs: owned.stiffness_pairs,
        loads,
        measure,
        config_text,
        run_id: String::new(),
    };
    Ok((scene, ignored))
}

/// The most steps a run may take (t_end / dt).
pub const MAX_STEPS: f64 = 1e12;
/// The largest gravity magnitude, m/s² (1e7 g).
pub const MAX_GRAVITY: f64 = 1e8;

/// `[simulation]`.
fn simulation(c: &Ctx, s: &SimulationCfg) -> Result<Simulation, ConfigError> {
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
        start_overlap: match s.start_overlap {
            None => crate::scene::START_OVERLAP,
            Some(v) if (0.0..1.0).contains(&v) => v,
            Some(v) => return Err(c.err("simulation.start_overlap", format!("must be at least 0 and below 1 (a fraction of a radius), got {v}"))),
        },
    };
    // Sanity limits: a run of more steps than any machine takes, or a
    // gravity that overflows positions and energies, is a typo.
    let steps = simulation.t_end / simulation.dt;
    if steps > MAX_STEPS {
        return Err(c.err("simulation.dt", format!("t_end / dt = {steps:.3e} steps, above the maximum of {MAX_STEPS:e}: a larger dt or a smaller t_end")));
    }
    if simulation.gravity.norm() > MAX_GRAVITY {
        return Err(c.err("simulation.gravity", format!("|gravity| = {:.3e} m/s² is above the maximum of {MAX_GRAVITY:e} m/s²", simulation.gravity.norm())));
    }
    if simulation.dim == 2 && simulation.gravity.z != 0.0 {
        return Err(c.err("simulation.gravity", "must have z = 0 in 2D (the x-y plane)"));
    }
    Ok(simulation)
}

/// `[[body]]` entries (ids 0, 1, ... in file order), with the entry each
/// body came from, to name it in errors.
fn explicit_bodies(
    c: &Ctx,
    cfg: &[BodyCfg],
    names: &Names,
    shapes: &[Shape],
    materials: &[Material],
    simulation: &Simulation,
) -> Result<(Bodies, Vec<String>), ConfigError> {
    let mut bodies = Bodies::new();
    let mut origin: Vec<String> = Vec::new();
    for (i, b) in cfg.iter().enumerate() {
        let key = |k: &str| format!("body[{i}].{k}");
        let shape = names.shape(key("shape"), &b.shape)?;
        let material = names.material(key("material"), &b.material)?;
        let position = c.finite3(&key("position"), b.position)?;
        let mp = shapes[shape as usize].unit_mass_properties();
        let density = materials[material as usize].density;
        let mut body = Body::at_rest(bodies.len() as u64, shape, material, position, &mp, density, b.fixed, simulation.dim);
        if let Some(q) = b.orientation {
            let q = Quaternion::new(q[0], q[1], q[2], q[3]);
            if !(q.norm() > 0.0 && q.norm().is_finite()) {
                return Err(c.err(key("orientation"), "must be a non-zero quaternion (w, x, y, z)"));
            }
            body.orientation = UnitQuaternion::from_quaternion(q);
        }
        if let Some(dofs) = &b.dofs {
            body.dof_mask = dof_mask(c, &key("dofs"), dofs, b.fixed, simulation.dim)?;
        }
        if !b.fixed {
            body.velocity = c.finite3(&key("velocity"), b.velocity)?;
            body.angular_velocity = c.finite3(&key("angular_velocity"), b.angular_velocity)?;
            for k in 0..3 {
                if !crate::body::dof_free(body.dof_mask, k) && body.velocity[k] != 0.0 || !crate::body::dof_free(body.dof_mask, 3 + k) && body.angular_velocity[k] != 0.0 {
                    return Err(c.err(key("velocity"), "a body's initial velocity must lie along its free `dofs`"));
                }
            }
        }
        bodies.push(body);
        origin.push(format!("body[{i}]"));
    }
    Ok((bodies, origin))
}

/// `[[body]] dofs` -> the mask of free DOFs: known names, no repeats, not
/// empty (that is `fixed = true`), not with `fixed`, and in 2D only x, y, rz.
fn dof_mask(c: &Ctx, key: &str, dofs: &[String], fixed: bool, dim: u8) -> Result<crate::body::DofMask, ConfigError> {
    const NAMES: [&str; 6] = ["x", "y", "z", "rx", "ry", "rz"];
    if fixed {
        return Err(c.err(key, "a fixed body has no free dofs: give `fixed = true` or `dofs`, not both"));
    }
    if dofs.is_empty() {
        return Err(c.err(key, "is empty: a body that does not move is `fixed = true`"));
    }
    let mut mask = 0;
    for d in dofs {
        let Some(k) = NAMES.iter().position(|n| n == d) else {
            return Err(c.err(key, format!("unknown dof \"{d}\" (one of \"x\", \"y\", \"z\", \"rx\", \"ry\", \"rz\")")));
        };
        if mask & (1 << k) != 0 {
            return Err(c.err(key, format!("\"{d}\" is listed twice")));
        }
        mask |= 1 << k;
    }
    if dim == 2 && mask & !crate::body::DOF_2D != 0 {
        return Err(c.err(key, "a 2D scene moves bodies only along x, y and about rz"));
    }
    Ok(mask)
}

/// A scene has bodies, and in 2D they lie and move in the x-y plane.
fn check_bodies_present(c: &Ctx, simulation: &Simulation, bodies: &Bodies, sources: &[Source], origin: &[String]) -> Result<(), ConfigError> {
    if bodies.is_empty() && sources.is_empty() {
        return Err(c.err("body", "the scene is empty: add [[body]] or [[generate]] entries"));
    }
    if simulation.dim == 2 {
        if let Some(i) = (0..bodies.len()).find(|&i| bodies.position[i].z != 0.0 || bodies.velocity[i].z != 0.0) {
            return Err(c.err(&origin[i], format!("body {i}: in 2D every body lies in z = 0 and moves in x-y")));
        }
    }
    Ok(())
}

/// `[[wall]]` entries: a plane, its motion (a velocity or a path) and the
/// time it is removed.
fn walls(c: &Ctx, cfg: &Config, names: &Names) -> Result<Vec<Wall>, ConfigError> {
    let mut walls = Vec::new();
    for (i, w) in cfg.wall.iter().enumerate() {
        let key = |f: &str| format!("wall[{i}].{f}");
        let n = c.finite3(&key("normal"), w.normal)?;
        if n.norm() == 0.0 {
            return Err(c.err(key("normal"), "must not be zero"));
        }
        let point = c.finite3(&key("point"), w.point)?;
        let n = n.normalize();
        let servo = servo(c, i, w, &n, point)?;
        let motion = match (&w.velocity, &w.path) {
            _ if servo.is_some() && (w.velocity.is_some() || w.path.is_some()) => {
                return Err(c.err(key(if w.velocity.is_some() { "velocity" } else { "path" }), "a servo wall moves by its control: give no velocity or path"))
            }
            _ if servo.is_some() => WallMotion::Servo(servo.expect("checked")),
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
            normal: n,
            material: names.material(key("material"), &w.material)?,
            until: match w.until {
                Some(t) => c.non_negative(&key("until"), t)?,
                None => f64::INFINITY,
            },
            removed: false,
        });
    }
    Ok(walls)
}

/// A wall's stress control (`servo_*` keys), if it has a target.
fn servo(c: &Ctx, i: usize, w: &WallCfg, n: &Vector3<f64>, point: Vector3<f64>) -> Result<Option<Servo>, ConfigError> {
    let key = |f: &str| format!("wall[{i}].{f}");
    let target = match (w.servo_stress, w.servo_force) {
        (Some(_), Some(_)) => return Err(c.err(key("servo_force"), "give either servo_stress or servo_force, not both")),
        (Some(s), None) => {
            if !n.iter().any(|x| (x.abs() - 1.0).abs() < 1e-12) {
                return Err(c.err(key("normal"), "a wall with servo_stress needs a normal along an axis (the cross-section is the cell's); use servo_force otherwise"));
            }
            ServoTarget::Stress(c.positive(&key("servo_stress"), s)?)
        }
        (None, Some(f)) => ServoTarget::Force(c.positive(&key("servo_force"), f)?),
        (None, None) => {
            let set = [("servo_gain", w.servo_gain.is_some()), ("servo_max_speed", w.servo_max_speed.is_some()), ("servo_ramp", w.servo_ramp.is_some())];
            servo_unset(c, &key, &set, "needs servo_stress or servo_force")?;
            return Ok(None);
        }
    };
    let law = ServoLaw { gain: w.servo_gain, max_speed: w.servo_max_speed, ramp: w.servo_ramp };
    servo_law(c, &key, target, law, "is required with a servo target (the wall's largest speed, m/s)", point).map(Some)
}

/// A servo's optional keys: gain (default 1), largest speed (required) and ramp (default 0).
struct ServoLaw {
    gain: Option<f64>,
    max_speed: Option<f64>,
    ramp: Option<f64>,
}

/// The servo law towards `target` (walls and the stress-controlled cell share it); `key` names a key in the file.
fn servo_law(c: &Ctx, key: &dyn Fn(&str) -> String, target: ServoTarget, law: ServoLaw, speed_required: &str, point: Vector3<f64>) -> Result<Servo, ConfigError> {
    let Some(v) = law.max_speed else {
        return Err(c.err(key("servo_max_speed"), speed_required));
    };
    let gain = c.positive(&key("servo_gain"), law.gain.unwrap_or(1.0))?;
    let ramp = c.non_negative(&key("servo_ramp"), law.ramp.unwrap_or(0.0))?;
    Ok(Servo::new(target, gain, c.positive(&key("servo_max_speed"), v)?, ramp, point))
}

/// Servo keys given without a target: the first one set is an error.
fn servo_unset(c: &Ctx, key: &dyn Fn(&str) -> String, set: &[(&str, bool)], needs: &str) -> Result<(), ConfigError> {
    match set.iter().find(|(_, s)| *s) {
        Some((k, _)) => Err(c.err(key(k), needs)),
        None => Ok(()),
    }
}

/// `[measure]`.
fn measure(c: &Ctx, m: &MeasureCfg, dim: u8) -> Result<MeasureSettings, ConfigError> {
    let mut out = MeasureSettings::new(dim);
    out.region = match (m.box_min, m.box_max) {
        (None, None) => None,
        (Some(lo), Some(hi)) => {
            let (lo, hi) = (c.finite3("measure.box_min", lo)?, c.finite3("measure.box_max", hi)?);
            if (0..dim as usize).any(|a| hi[a] <= lo[a]) {
                return Err(c.err("measure.box_max", format!("must be above box_min on every axis, got {:?} and {:?}", hi.as_slice(), lo.as_slice())));
            }
            Some((lo, hi))
        }
        (Some(_), None) => return Err(c.err("measure.box_max", "is required with box_min")),
        (None, Some(_)) => return Err(c.err("measure.box_min", "is required with box_max")),
    };
    if let Some(k) = m.rattler_contacts {
        if k == 0 {
            return Err(c.err("measure.rattler_contacts", "must be at least 1"));
        }
        out.rattler_contacts = k;
    }
    if let Some(r) = &m.stress_ratio {
        let axis = |ch: char| "xyz".find(ch).filter(|&a| a < dim as usize);
        out.shear = match r.as_str() {
            "q/p" => None,
            s if s.chars().count() == 2 => {
                let v: Vec<Option<usize>> = s.chars().map(axis).collect();
                match (v[0], v[1]) {
                    (Some(a), Some(b)) if a != b => Some((a, b)),
                    _ => return Err(c.err("measure.stress_ratio", format!("must be \"q/p\" or two different axes such as \"xz\", got \"{r}\""))),
                }
            }
            _ => return Err(c.err("measure.stress_ratio", format!("must be \"q/p\" or two different axes such as \"xz\", got \"{r}\""))),
        };
    }
    Ok(out)
}

/// `[output]`.
fn output(c: &Ctx, o: &OutputCfg) -> Result<Output, ConfigError> {
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
    Ok(Output {
        dir: o.dir.clone(),
        every: o.every,
        checkpoint_every: o.checkpoint_every,
        checkpoint_keep: o.checkpoint_keep,
        checkpoint_at_end: o.checkpoint_at_end,
        thermo_every: o.thermo_every,
        thermo_seconds: c.positive("output.thermo_seconds", o.thermo_seconds)?,
    })
}

/// `[contact]`. Defaults scale with the smallest body: a skin of a fifth of
/// its radius, and a detection distance of a tenth. Without config shapes
/// (bodies from files only) they stay infinite here and start-up sets them
/// from the files' shapes.
fn contact(c: &Ctx, cfg: &ContactCfg, shapes: &[Shape]) -> Result<ContactSettings, ConfigError> {
    let rmin = shapes.iter().map(|s| s.bounding_radius()).fold(f64::INFINITY, f64::min);
    Ok(ContactSettings {
        skin: match cfg.skin {
            Some(v) => c.positive("contact.skin", v)?,
            None => 0.2 * rmin,
        },
        distance: match cfg.distance {
            Some(v) => c.non_negative("contact.distance", v)?,
            None => 0.1 * rmin,
        },
        entity_lists: cfg.entity_lists.unwrap_or(true),
    })
}
