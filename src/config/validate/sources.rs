//! `[[generate]]` entries -> sources, expanded at start-up by each rank.
use super::{Ctx, Names};
use crate::body::Shape;
use crate::config::schema::*;
use crate::config::ConfigError;
use crate::logging::num;
use crate::scene::sources::{FileFormat, RadiusClasses, Source, SourceKind};
use crate::scene::Simulation;
use nalgebra::Vector3;

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

/// Sphere shapes a radius distribution adds, with their names.
type ExtraShapes = Vec<(Shape, String)>;

/// `[[generate]]` entries -> sources (expanded at start-up), plus the sphere
/// shapes their radius distributions add.
pub(super) fn sources(
    c: &Ctx,
    cfg: &Config,
    simulation: &Simulation,
    shapes: &[Shape],
    shape_names: &[String],
    names: &Names,
    n_explicit: u64,
) -> Result<(Vec<Source>, ExtraShapes), ConfigError> {
    let mut out: Vec<Source> = Vec::new();
    let mut extra: Vec<(Shape, String)> = Vec::new();
    let mut next_id = n_explicit;
    for (k, g) in cfg.generate.iter().enumerate() {
        let key = |f: &str| format!("generate[{k}].{f}");
        let kind_name = format!("{:?}", g.kind).to_lowercase();
        let shape = match &g.shape {
            Some(name) => Some(names.shape(key("shape"), name)?),
            None if g.kind == GenerateKind::File => None,
            None => return Err(c.err(key("shape"), format!("required for kind = {kind_name}"))),
        };
        let material = names.material(key("material"), &g.material)?;
        let parity = match &g.material_by_parity {
            None => None,
            Some([even, odd]) => {
                if g.material.is_some() {
                    return Err(c.err(key("material_by_parity"), "give either `material` or `material_by_parity`, not both"));
                }
                Some([names.material(key("material_by_parity"), &Some(even.clone()))?, names.material(key("material_by_parity"), &Some(odd.clone()))?])
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
                            return Err(c.err(key("spacing"), format!("spheres of radius {rmax} spaced {s} apart keep no gap of {gap}: at least 2 R + gap = {} (only mesh shapes may be spaced closer)", num(free))));
                        } else if s < rmax + 0.5 * gap {
                            return Err(c.err(key("spacing"), format!("must be at least R + gap/2 = {} (only adjacent lattice cells may meet), got {s}", num(rmax + 0.5 * gap))));
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
