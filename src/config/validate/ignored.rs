//! Settings the chosen solver does not read: one warning line for each
//! table or group of keys, so that a setting is never dropped in silence
//! (a scene written for one solver still runs under another).
use super::Ctx;
use crate::config::schema::{Config, MaterialCfg};
use crate::config::Ignored;
use crate::scene::SolverKind;

/// The warnings for `cfg` under its solver. `text` is the resolved TOML,
/// which tells a table the user wrote from one serde filled with defaults.
pub(super) fn ignored(c: &Ctx, cfg: &Config, text: &str) -> Vec<Ignored> {
    let given: toml::Table = toml::from_str(text).unwrap_or_default();
    let solver = cfg.simulation.solver;
    let by = format!("is ignored by solver \"{}\"", solver.name());
    let mut out = Vec::new();
    match solver {
        SolverKind::Cd | SolverKind::CompatibleCd => {
            if given.contains_key("dem") {
                out.push(c.warn(format!("[dem] {by}")));
            }
            if solver == SolverKind::Cd && given.contains_key("compatibility") {
                out.push(c.warn(format!("[compatibility] {by}")));
            }
            if cfg.solver.dt_control != crate::scene::DtControl::Iterations {
                let set = given.get("solver").and_then(|t| t.as_table());
                let keys: Vec<String> = ["dt_min", "target_iterations"].iter().filter(|k| set.is_some_and(|t| t.contains_key(**k))).map(|k| format!("solver.{k}")).collect();
                if !keys.is_empty() {
                    out.push(c.warn(format!("{} {} (only solver.dt_control = \"iterations\" reads them)", keys.join(", "), are(&keys, "is ignored"))));
                }
            }
        }
        SolverKind::Dem => {
            if given.contains_key("solver") {
                out.push(c.warn(format!("[solver] {by} (the DEM's Newton settings are in [dem])")));
            }
            let compat = given.get("compatibility").and_then(|t| t.as_table());
            let pair_stiffness = cfg.dem.pair_stiffness.unwrap_or(false);
            match compat {
                Some(_) if !pair_stiffness => out.push(c.warn(format!("[compatibility] {by} (its stiffness pairs only with dem.pair_stiffness = true)"))),
                Some(t) => {
                    let keys: Vec<String> = t.keys().filter(|k| *k != "stiffness").map(|k| format!("compatibility.{k}")).collect();
                    if !keys.is_empty() {
                        out.push(c.warn(format!("{} {}", keys.join(", "), are(&keys, &by))));
                    }
                }
                None => {}
            }
            let restitution = material_keys(&cfg.material, |m| if m.restitution > 0.0 { vec!["restitution"] } else { Vec::new() });
            if !restitution.is_empty() {
                out.push(c.warn(format!("{} {} (the DEM damps with dem.damping)", restitution.join(", "), are(&restitution, &by))));
            }
            let rolling = material_keys(&cfg.material, |m| {
                [("rolling_friction", m.rolling_friction), ("twisting_friction", m.twisting_friction)].into_iter().filter(|(_, v)| *v > 0.0).map(|(k, _)| k).collect()
            });
            if !rolling.is_empty() {
                out.push(c.warn(format!("{} {} (the DEM has no rolling resistance)", rolling.join(", "), are(&rolling, &by))));
            }
        }
    }
    out
}

/// `material[i].key` for the keys `pick` finds set in each material.
fn material_keys(materials: &[MaterialCfg], pick: impl Fn(&MaterialCfg) -> Vec<&'static str>) -> Vec<String> {
    materials.iter().enumerate().flat_map(|(i, m)| pick(m).into_iter().map(move |k| format!("material[{i}].{k}"))).collect()
}

/// "is ignored by ..." for one key, "are ignored by ..." for several.
fn are(keys: &[String], by: &str) -> String {
    if keys.len() > 1 {
        by.replacen("is ", "are ", 1)
    } else {
        by.to_string()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{validated, ConfigError, Ignored};
    use crate::scene::Scene;
    use std::path::Path;

    /// A scene of materials `a` and `b` (`mat_a`, `mat_b`: their extra
    /// keys) under `solver`, with `extra` appended; the scene and its warnings.
    fn with(solver: &str, mat_a: &str, mat_b: &str, extra: &str) -> Result<(Scene, Vec<String>), ConfigError> {
        let text = format!(
            "[simulation]\nsolver = \"{solver}\"\nt_end = 0.1\ndt = 1e-3\n\n[[material]]\nname = \"a\"\ndensity = 1000.0\n{mat_a}\n\n[[material]]\nname = \"b\"\ndensity = 1000.0\n{mat_b}\n\n[[shape]]\nname = \"s\"\nkind = \"sphere\"\nradius = 0.5\n\n[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, 1.0]\n\n{extra}"
        );
        let table: toml::Table = toml::from_str(&text).unwrap();
        let (scene, ignored) = validated(Path::new("t.toml"), &toml::to_string(&table).unwrap())?;
        Ok((scene, ignored.iter().map(Ignored::to_string).collect()))
    }

    fn check(solver: &str, extra: &str) -> Result<(Scene, Vec<String>), ConfigError> {
        with(solver, "", "", extra)
    }

    fn warnings(solver: &str, mat_a: &str, mat_b: &str) -> Vec<String> {
        with(solver, mat_a, mat_b, "").unwrap().1
    }

    #[test]
    fn another_solvers_table_is_named_once_and_not_resolved() {
        let (scene, w) = check("cd", "[contact]\ndistance = 0.0\n\n[dem]\ngbar = -1.0\n\n[compatibility]\nmethod = \"apgd\"\n").unwrap();
        assert_eq!(w, ["t.toml: [dem] is ignored by solver \"cd\"", "t.toml: [compatibility] is ignored by solver \"cd\""]);
        assert!(scene.dem.get().is_none() && scene.compat.get().is_none() && scene.solver.get().is_some());
        let (scene, w) = check("compatible-cd", "[dem]\n\n[compatibility]\nmethod = \"apgd\"\n").unwrap();
        assert_eq!(w, ["t.toml: [dem] is ignored by solver \"compatible-cd\""]);
        assert_eq!(scene.compat.max_iterations, 200_000);
        let (scene, w) = check("dem", "[solver]\ntolerance = -1.0\n").unwrap();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].starts_with("t.toml: [solver] is ignored by solver \"dem\""), "{w:?}");
        assert!(scene.solver.get().is_none() && scene.dem.get().is_some());
    }

    #[test]
    fn the_owning_solver_still_refuses_bad_values() {
        let e = check("dem", "[contact]\ndistance = 0.0\n").unwrap_err().to_string();
        assert_eq!(e, "t.toml: dem.gbar: needs contact.distance > 0 (or an explicit dem.gbar)");
        let e = check("cd", "[solver]\nmax_iterations = 0\n").unwrap_err().to_string();
        assert_eq!(e, "t.toml: solver.max_iterations: must be at least 1");
        let e = check("compatible-cd", "[compatibility]\nevery = 0\n").unwrap_err().to_string();
        assert_eq!(e, "t.toml: compatibility.every: must be at least 1");
    }

    #[test]
    fn friction_is_read_by_every_solver_and_refused_by_newton_and_the_augmented_lagrangian() {
        assert!(warnings("cd", "", "").is_empty());
        assert!(warnings("cd", "friction = 0.5", "friction_dynamic = 0.2").is_empty());
        assert!(warnings("compatible-cd", "friction = 0.5", "").is_empty());
        let e = with("compatible-cd", "friction = 0.5", "", "[compatibility]\nmethod = \"augmented-lagrangian\"\n").unwrap_err().to_string();
        assert_eq!(e, "t.toml: compatibility.method: \"augmented-lagrangian\" is frictionless and material[0] has friction (use method = \"newton\", the default, or \"apgd\")");
        assert!(with("cd", "", "friction_dynamic = 0.2", "[solver]\nmethod = \"pgs\"\n").is_ok());
        let e = with("cd", "", "friction_dynamic = 0.2", "[solver]\nmethod = \"newton\"\n").unwrap_err().to_string();
        assert_eq!(e, "t.toml: solver.method: \"newton\" is frictionless and material[1] has friction (use method = \"auto\", the default, \"pgs\" or \"apgd\")");
        assert!(warnings("dem", "friction = 0.5", "").is_empty());
    }

    #[test]
    fn rolling_resistance_is_cds_warned_of_by_the_dem_and_refused_by_compatible_cd_and_newton() {
        assert!(warnings("cd", "rolling_friction = 0.1", "twisting_friction = 0.05").is_empty());
        let w = warnings("dem", "friction = 0.5\nrolling_friction = 0.1", "twisting_friction = 0.05");
        assert_eq!(w, ["t.toml: material[0].rolling_friction, material[1].twisting_friction are ignored by solver \"dem\" (the DEM has no rolling resistance)"]);
        let e = with("compatible-cd", "friction = 0.5", "twisting_friction = 0.05", "").unwrap_err().to_string();
        assert_eq!(e, "t.toml: material[1].twisting_friction: compatible-cd has no rolling or twisting resistance (use solver = \"cd\", or set it to 0)");
        let e = with("cd", "rolling_friction = 0.1", "", "[solver]\nmethod = \"newton\"\n").unwrap_err().to_string();
        assert_eq!(e, "t.toml: solver.method: \"newton\" is frictionless and material[0] has rolling_friction (use method = \"auto\", the default, \"pgs\" or \"apgd\")");
        let e = with("cd", "rolling_friction = -0.1", "", "").unwrap_err().to_string();
        assert_eq!(e, "t.toml: material[0].rolling_friction: must be zero or positive, got -0.1");
    }

    #[test]
    fn the_interior_point_method_refuses_frictionless_and_non_hookean_scenes() {
        let ip = "[compatibility]\nmethod = \"interior-point\"\n";
        assert!(with("compatible-cd", "friction = 0.5", "", ip).is_ok());
        let e = with("compatible-cd", "", "", ip).unwrap_err().to_string();
        assert_eq!(e, "t.toml: compatibility.method: \"interior-point\" solves the frictional problem and no material has friction (use method = \"newton\", the default)");
        let e = with("compatible-cd", "friction = 0.5", "", &format!("{ip}law = \"hertz\"\n")).unwrap_err().to_string();
        assert_eq!(e, "t.toml: compatibility.method: \"interior-point\" solves the Hookean law (p = 2), not p = 2.5 (use method = \"newton\", the default)");
    }

    #[test]
    fn restitution_under_dem_is_named_in_one_line() {
        assert_eq!(warnings("dem", "", "restitution = 0.5"), ["t.toml: material[1].restitution is ignored by solver \"dem\" (the DEM damps with dem.damping)"]);
        assert!(warnings("cd", "restitution = 0.5", "").is_empty());
    }

    #[test]
    fn dem_reads_only_the_stiffness_pairs_of_compatibility_and_only_with_pair_stiffness() {
        let pairs = "[[compatibility.stiffness]]\nmaterials = [\"a\", \"b\"]\nk = 0.2\n";
        let (scene, w) = check("dem", &format!("[dem]\npair_stiffness = true\n\n{pairs}")).unwrap();
        assert!(w.is_empty(), "{w:?}");
        assert_eq!(scene.stiffness_pairs, [((0, 1), 0.2)]);
        assert_eq!(scene.pair_stiffness(1, 0), 0.2);
        let (_, w) = check("dem", &format!("[dem]\npair_stiffness = true\n\n[compatibility]\nmethod = \"apgd\"\np = 3.0\n\n{pairs}")).unwrap();
        assert_eq!(w, ["t.toml: compatibility.method, compatibility.p are ignored by solver \"dem\""]);
        let (scene, w) = check("dem", pairs).unwrap();
        assert_eq!(w, ["t.toml: [compatibility] is ignored by solver \"dem\" (its stiffness pairs only with dem.pair_stiffness = true)"]);
        assert!(scene.stiffness_pairs.is_empty());
    }
}
