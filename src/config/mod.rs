//! Configuration: TOML text (plus `--set` overrides) -> validated [`Scene`].
//! Every error is one line naming the file, the key and what is wrong.
mod overrides;
pub mod schema;
mod summary;
mod validate;

pub use summary::summary;

use crate::scene::Scene;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// A configuration problem: the file (or `--set`), the key, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {key}: {message}")]
pub struct ConfigError {
    pub file: String,
    pub key: String,
    pub message: String,
}

impl ConfigError {
    pub fn new(file: impl Into<String>, key: impl Into<String>, message: impl Into<String>) -> Self {
        Self { file: file.into(), key: key.into(), message: message.into() }
    }
}

/// A setting the scene's solver does not read: the scene runs, and the
/// line is printed once as a warning (rank 0, like every log line).
#[derive(Debug, Clone, PartialEq)]
pub struct Ignored {
    pub file: String,
    pub message: String,
}

impl std::fmt::Display for Ignored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.message)
    }
}

/// Reads `path`, applies `overrides` (`KEY=VALUE`, dotted keys, `[i]` or `.i`
/// for array entries) and validates the result into a scene.
pub fn load(path: &Path, overrides: &[String]) -> Result<Scene, ConfigError> {
    let text = read_resolved(path, overrides)?;
    from_resolved_text(path, &text)
}

/// Reads `path` and applies the overrides, returning the resolved TOML text
/// that [`from_resolved_text`] turns into a scene. A relative path is
/// relative to where it is written: in the file (mesh and body files,
/// `output.dir`) to the file's folder, made absolute here; in an override
/// to the working directory, kept as given. Rank 0 calls this and
/// broadcasts the text.
pub fn read_resolved(path: &Path, overrides: &[String]) -> Result<String, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(&file, "(file)", format!("cannot read: {e}")))?;
    let mut table: toml::Table = toml::from_str(&text).map_err(|e| syntax_error(&file, &text, &e))?;
    make_paths_absolute(&mut table, path.parent().unwrap_or(Path::new(".")));
    for o in overrides {
        overrides::apply(&mut table, o)?;
    }
    toml::to_string(&table).map_err(|e| ConfigError::new(&file, "(file)", format!("cannot serialise: {e}")))
}

/// Applies overrides to resolved TOML text (e.g. a checkpoint's config).
pub fn apply_overrides(label: &str, text: &str, overrides: &[String]) -> Result<String, ConfigError> {
    let mut table: toml::Table = toml::from_str(text).map_err(|e| syntax_error(label, text, &e))?;
    for o in overrides {
        overrides::apply(&mut table, o)?;
    }
    toml::to_string(&table).map_err(|e| ConfigError::new(label, "(file)", format!("cannot serialise: {e}")))
}

/// Validates resolved TOML text into a scene; `path` names the file in
/// errors. Settings the solver does not read are logged as warnings.
pub fn from_resolved_text(path: &Path, text: &str) -> Result<Scene, ConfigError> {
    let (scene, ignored) = validated(path, text)?;
    for w in &ignored {
        log::warn!("{w}");
    }
    Ok(scene)
}

/// The scene of resolved TOML text and the settings its solver ignores.
fn validated(path: &Path, text: &str) -> Result<(Scene, Vec<Ignored>), ConfigError> {
    let file = path.display().to_string();
    let de = toml::Deserializer::new(text);
    let cfg: schema::Config = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        let msg = inner.message().to_string();
        // serde names an unknown key in the message, at its parent's path
        // (serde_path_to_error 0.1.20 already ends the path with it).
        let key = match msg.strip_prefix("unknown field `").and_then(|m| m.split('`').next()) {
            Some(field) if key == "." => field.to_string(),
            Some(field) if key == field || key.ends_with(&format!(".{field}")) => key,
            Some(field) => format!("{key}.{field}"),
            None if key == "." => "(top level)".to_string(),
            None => key,
        };
        ConfigError::new(&file, key, msg.replace('\n', " "))
    })?;
    validate::scene(&file, cfg, text.to_string())
}

fn syntax_error(file: &str, text: &str, e: &toml::de::Error) -> ConfigError {
    let key = match e.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {col}")
        }
        None => "(syntax)".to_string(),
    };
    ConfigError::new(file, key, format!("malformed TOML: {}", e.message().replace('\n', " ")))
}

/// Mesh files of `[[shape]]`, body files of `[[generate]]` and
/// `output.dir`, relative to the config file's folder `base`, made absolute.
fn make_paths_absolute(table: &mut toml::Table, base: &Path) {
    let absolute = |f: &mut String| {
        let p = PathBuf::from(&*f);
        if p.is_relative() {
            let abs = std::path::absolute(base.join(&p)).unwrap_or_else(|_| base.join(&p));
            *f = abs.display().to_string();
        }
    };
    for section in ["shape", "generate"] {
        let Some(toml::Value::Array(entries)) = table.get_mut(section) else { continue };
        for s in entries {
            if let Some(toml::Value::String(f)) = s.get_mut("file") {
                absolute(f);
            }
        }
    }
    if let Some(toml::Value::String(d)) = table.get_mut("output").and_then(|o| o.get_mut("dir")) {
        absolute(d);
    }
}

/// Parses a config straight from text (tests, tools); `label` names it in errors.
pub fn from_str(label: &str, text: &str) -> Result<Scene, ConfigError> {
    let table: toml::Table = toml::from_str(text).map_err(|e| syntax_error(label, text, &e))?;
    let text = toml::to_string(&table).map_err(|e| ConfigError::new(label, "(file)", e.to_string()))?;
    from_resolved_text(Path::new(label), &text)
}

// Deserialize is used through serde_path_to_error.
#[allow(dead_code)]
fn _assert_deserialize<'de, T: Deserialize<'de>>() {}
