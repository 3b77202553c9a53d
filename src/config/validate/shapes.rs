//! `[[material]]` and `[[shape]]` entries, and the name lookups the rest of
//! validation resolves references with.
use super::Ctx;
use crate::body::{Shape, TriMesh};
use crate::config::schema::*;
use crate::config::ConfigError;
use crate::logging::num;
use crate::scene::Material;
use nalgebra::Vector3;
use std::collections::HashMap;
use std::sync::Arc;

/// Material and shape names -> indices, for the entries that refer to them
/// (the shapes as `[[shape]]` lists them, before radius distributions add any).
pub(super) struct Names<'a> {
    c: &'a Ctx<'a>,
    materials: &'a [MaterialCfg],
    material_index: HashMap<&'a str, u32>,
    shapes: Vec<String>,
}

impl<'a> Names<'a> {
    pub(super) fn new(c: &'a Ctx<'a>, materials: &'a [MaterialCfg], shapes: &[String]) -> Self {
        let material_index = materials.iter().enumerate().map(|(i, m)| (m.name.as_str(), i as u32)).collect();
        Self { c, materials, material_index, shapes: shapes.to_vec() }
    }

    /// The material `name` (the first one when none is named); `key` names the entry.
    pub(super) fn material(&self, key: String, name: &Option<String>) -> Result<u32, ConfigError> {
        match name {
            None => Ok(0),
            Some(n) => self.material_index.get(n.as_str()).copied().ok_or_else(|| {
                self.c.err(key, format!("unknown material `{n}` (known: {})", names(self.materials.iter().map(|m| &m.name))))
            }),
        }
    }

    /// The shape `name`; `key` names the entry.
    pub(super) fn shape(&self, key: String, name: &str) -> Result<u32, ConfigError> {
        self.shapes
            .iter()
            .position(|s| s == name)
            .map(|i| i as u32)
            .ok_or_else(|| self.c.err(key, format!("unknown shape `{name}` (known: {})", names(self.shapes.iter()))))
    }
}

fn names<'a>(it: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = it.map(|s| s.as_str()).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// `[[material]]` entries: unique names, physical ranges.
pub(super) fn materials(c: &Ctx, cfg: &[MaterialCfg]) -> Result<Vec<Material>, ConfigError> {
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
            rolling_friction: c.non_negative(&key("rolling_friction"), m.rolling_friction)?,
            twisting_friction: c.non_negative(&key("twisting_friction"), m.twisting_friction)?,
            restitution: m.restitution,
        });
    }
    Ok(out)
}

/// `[[shape]]` entries, with their names.
/// `files`: the scene reads bodies from a file, which may bring their shapes.
pub(super) fn shapes(c: &Ctx, cfg: &[ShapeCfg], files: bool) -> Result<(Vec<Shape>, Vec<String>), ConfigError> {
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
                    return Err(c.err(key("arm_length"), format!("must exceed 2 × arm_radius = {}, got {l}", num(2.0 * r))));
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
    // Body files may bring their own shapes (a radius column, a frame's
    // spheres); anything else needs one here.
    if shapes.is_empty() && !files {
        return Err(c.err("shape", "at least one [[shape]] is needed (or a [[generate]] kind = \"file\" whose bodies carry their radius)"));
    }
    Ok((shapes, names))
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
