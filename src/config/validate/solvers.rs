//! Which settings each solver owns, resolved only for the solver that runs
//! the scene: `[solver]` (cd, compatible-cd), `[compatibility]`
//! (compatible-cd; its `stiffness` pairs also for the DEM's
//! `pair_stiffness`), `[dem]` (see `dem.rs`).
use super::{dem, Ctx};
use crate::body::{Bodies, Shape};
use crate::config::schema::*;
use crate::config::ConfigError;
use crate::scene::sources::Source;
use crate::scene::{CompatSettings, ContactSettings, DemSettings, DtControl, Material, Simulation, SolverKind, SolverOwned, SolverSettings, StepControlSettings, Wall};
use std::collections::HashMap;

type StiffnessPairs = Vec<((u32, u32), f64)>;

/// `[solver]` -> [`SolverSettings`], for the solvers that take a CD step.
pub(super) fn solver_settings(c: &Ctx, cfg: &SolverCfg, sim: &Simulation) -> Result<SolverOwned<SolverSettings>, ConfigError> {
    let solver = sim.solver;
    if solver == SolverKind::Dem {
        return Ok(SolverOwned::unused("[solver]"));
    }
    let adaptive = match cfg.dt_control {
        DtControl::Fixed => false,
        DtControl::Iterations if solver == SolverKind::Cd => true,
        DtControl::Iterations => return Err(c.err("solver.dt_control", "\"iterations\" is for solver = \"cd\"; compatible-cd takes every step at simulation.dt")),
    };
    let step_control = if adaptive {
        let dt_min = match cfg.dt_min {
            Some(v) => c.positive("solver.dt_min", v)?,
            None => sim.dt / 64.0,
        };
        if dt_min > sim.dt {
            return Err(c.err("solver.dt_min", format!("must not exceed simulation.dt = {}", sim.dt)));
        }
        if cfg.target_iterations == 0 {
            return Err(c.err("solver.target_iterations", "must be at least 1"));
        }
        Some(StepControlSettings { dt_min, target_iterations: cfg.target_iterations as u64 })
    } else {
        None
    };
    let settings = SolverSettings {
        tolerance: c.positive("solver.tolerance", cfg.tolerance)?,
        max_iterations: match cfg.max_iterations {
            0 => return Err(c.err("solver.max_iterations", "must be at least 1")),
            n => n,
        },
        method: cfg.method,
        pgs_order: cfg.pgs_order,
        anderson: match cfg.anderson {
            m @ 0..=50 => m as usize,
            _ => return Err(c.err("solver.anderson", "must be at most 50 (the sweeps mixed; 0 turns the acceleration off)")),
        },
        friction_law: cfg.friction_law,
        scaling: cfg.scaling,
        step_control,
    };
    Ok(SolverOwned::resolved("[solver]", settings))
}

/// Friction where the solver has none: PGS, and compatible-cd's
/// augmented-Lagrangian method (frictionless), refuse a material with μ_s
/// or μ_d > 0.
pub(super) fn check_friction(
    c: &Ctx,
    materials: &[MaterialCfg],
    sim: &Simulation,
    solver: &SolverOwned<SolverSettings>,
    compat_method: Option<crate::scene::CompatMethod>,
) -> Result<(), ConfigError> {
    // Rolling and twisting rows are cd's alone: compatible-cd's
    // compatibility problem has no moments at its contacts.
    let rolling = materials.iter().enumerate().find_map(|(i, m)| {
        if m.rolling_friction > 0.0 {
            Some((i, "rolling_friction"))
        } else if m.twisting_friction > 0.0 {
            Some((i, "twisting_friction"))
        } else {
            None
        }
    });
    if let (Some((i, key)), SolverKind::CompatibleCd) = (rolling, sim.solver) {
        return Err(c.err(format!("material[{i}].{key}"), "compatible-cd has no rolling or twisting resistance (use solver = \"cd\", or set it to 0)"));
    }
    let with = materials.iter().enumerate().find_map(|(i, m)| {
        if m.friction > 0.0 {
            Some((i, "friction"))
        } else if m.friction_dynamic.is_some_and(|mu| mu > 0.0) {
            Some((i, "friction_dynamic"))
        } else {
            None
        }
    });
    let Some((i, key)) = with.or(rolling) else { return Ok(()) };
    if sim.solver == SolverKind::CompatibleCd && compat_method == Some(crate::scene::CompatMethod::AugmentedLagrangian) {
        return Err(c.err("compatibility.method", format!("\"augmented-lagrangian\" is frictionless and material[{i}] has {key} (use method = \"newton\", the default, or \"apgd\")")));
    }
    if solver.get().map(|s| s.method) == Some(crate::scene::CdMethod::Newton) {
        return Err(c.err("solver.method", format!("\"newton\" is frictionless and material[{i}] has {} (use method = \"auto\", the default, \"pgs\" or \"apgd\")", if key.starts_with("friction") { "friction" } else { key })));
    }
    Ok(())
}

/// What the DEM's defaults and start checks look at.
pub(super) struct Start<'a> {
    pub bodies: &'a Bodies,
    /// The config entry of each explicit body.
    pub origin: &'a [String],
    pub sources: &'a [Source],
    pub shapes: &'a [Shape],
    pub materials: &'a [Material],
    pub walls: &'a [Wall],
}

/// The `[dem]` and `[compatibility]` settings, resolved for the solver
/// that owns them.
pub(super) struct Owned {
    pub dem: SolverOwned<DemSettings>,
    pub compat: SolverOwned<CompatSettings>,
    pub stiffness_pairs: StiffnessPairs,
}

pub(super) fn owned(c: &Ctx, cfg: &Config, sim: &Simulation, contact: &ContactSettings, start: &Start) -> Result<Owned, ConfigError> {
    let mut out = Owned {
        dem: SolverOwned::unused("[dem]"),
        compat: SolverOwned::unused("[compatibility]"),
        stiffness_pairs: Vec::new(),
    };
    match sim.solver {
        SolverKind::Cd => {}
        SolverKind::CompatibleCd => {
            let (settings, pairs) = compat_settings(c, &cfg.compatibility, &cfg.material)?;
            out.compat = SolverOwned::resolved("[compatibility]", settings);
            out.stiffness_pairs = pairs;
        }
        SolverKind::Dem => {
            let m_max = dem::heaviest_moving_mass(start.bodies, start.sources, start.materials, start.shapes);
            let settings = dem::dem_settings(c, &cfg.dem, sim, m_max, contact)?;
            dem::check_dem_gaps(c, start.bodies, start.shapes, start.walls, start.origin, start.sources)?;
            if settings.pair_stiffness {
                out.stiffness_pairs = stiffness_pairs(c, &cfg.compatibility.stiffness, &cfg.material)?;
            }
            out.dem = SolverOwned::resolved("[dem]", settings);
        }
    }
    Ok(out)
}

/// `[compatibility]` -> [`CompatSettings`] and the pairs' relative stiffness.
fn compat_settings(c: &Ctx, cfg: &CompatibilityCfg, materials: &[MaterialCfg]) -> Result<(CompatSettings, StiffnessPairs), ConfigError> {
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
    let pair_stiffness = stiffness_pairs(c, &cfg.stiffness, materials)?;
    let method = cfg.method.unwrap_or_default();
    if method == crate::scene::CompatMethod::InteriorPoint {
        if p != 2.0 {
            return Err(c.err("compatibility.method", format!("\"interior-point\" solves the Hookean law (p = 2), not p = {p} (use method = \"newton\", the default)")));
        }
        if !materials.iter().any(|m| m.friction > 0.0 || m.friction_dynamic.is_some_and(|mu| mu > 0.0)) {
            return Err(c.err("compatibility.method", "\"interior-point\" solves the frictional problem and no material has friction (use method = \"newton\", the default)"));
        }
    }
    let max_default = if method == crate::scene::CompatMethod::Apgd { 200_000 } else { d.max_iterations };
    let settings = CompatSettings {
        p,
        method,
        max_iterations: count("compatibility.max_iterations", cfg.max_iterations, max_default)?,
        every,
        feasibility_tolerance: tol("compatibility.feasibility_tolerance", cfg.feasibility_tolerance, d.feasibility_tolerance)?,
        optimality_tolerance: tol("compatibility.optimality_tolerance", cfg.optimality_tolerance, d.optimality_tolerance)?,
        max_outer: count("compatibility.max_outer", cfg.max_outer, d.max_outer)?,
        max_inner: count("compatibility.max_inner", cfg.max_inner, d.max_inner)?,
        tangential_ratio: tol("compatibility.tangential_ratio", cfg.tangential_ratio, d.tangential_ratio)?,
    };
    Ok((settings, pair_stiffness))
}

/// `[[compatibility.stiffness]]` -> relative stiffness of material pairs
/// (indices sorted), each pair once.
fn stiffness_pairs(c: &Ctx, cfg: &[StiffnessCfg], materials: &[MaterialCfg]) -> Result<StiffnessPairs, ConfigError> {
    let mat_index: HashMap<&str, u32> = materials.iter().enumerate().map(|(i, m)| (m.name.as_str(), i as u32)).collect();
    let mut pair_stiffness = Vec::new();
    for (i, s) in cfg.iter().enumerate() {
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
    Ok(pair_stiffness)
}
