//! The user guide (docs/src, built by scripts/docs with mdBook).
//!
//! Its links: `links_in_the_guide_and_readme_resolve` fails on a relative
//! link (or `#anchor`) of docs/src/*.md, README.md or BENCHMARKS.md that
//! does not resolve, and on a chapter missing from SUMMARY.md.
//!
//! The config reference of the user guide, `docs/src/config-reference.md`,
//! is generated from the TOML schema (`src/config/schema.rs`, derived with
//! `schemars` from its doc comments and `x-unit`, `x-default`, `x-solvers`
//! extensions). `the_solvers_column_agrees_with_the_ignored_warnings` runs
//! `stiffgrain check` to hold the solver column to the program's warnings.
//! `config_reference_is_current` fails when a key of the schema
//! is missing from the committed file, or the file is not what the schema
//! generates; the ignored test `write_config_reference` rewrites it:
//!
//!     cargo test --release --test docs -- --ignored write_config_reference
use serde_json::{Map, Value};
use std::path::PathBuf;
use stiffgrain::config::schema::Config;

const SOLVERS: [&str; 3] = ["cd", "compatible-cd", "dem"];
/// Tables in the order of the reference; a table of the schema not named
/// here follows them, so none is ever left out.
const ORDER: [&str; 13] =
    ["simulation", "material", "shape", "body", "generate", "wall", "load", "output", "contact", "parallel", "solver", "compatibility", "dem"];

fn reference_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("docs/src/config-reference.md")
}

/// One key of the reference.
struct Key {
    /// Dotted path, e.g. `dem.gbar`, `generate.radius.min`.
    path: String,
    ty: String,
    unit: String,
    default: Option<String>,
    required: bool,
    solvers: Vec<String>,
    description: String,
}

/// One table (`[name]` or `[[name]]`) and its keys.
struct Table {
    path: String,
    array: bool,
    description: String,
    solvers: Vec<String>,
    keys: Vec<Key>,
}

struct Schema {
    defs: Map<String, Value>,
}

impl Schema {
    /// `v` with its `$ref` resolved: the definition's fields, then `v`'s own
    /// (a field's doc comment and default sit beside its `$ref`).
    fn resolve(&self, v: &Value) -> Map<String, Value> {
        let mut out = Map::new();
        if let Some(r) = v.get("$ref").and_then(Value::as_str) {
            let name = r.trim_start_matches("#/$defs/");
            let def = self.defs.get(name).unwrap_or_else(|| panic!("unknown $ref {r}"));
            out.extend(self.resolve(def));
        }
        if let Some(m) = v.as_object() {
            for (k, x) in m {
                if k != "$ref" {
                    out.insert(k.clone(), x.clone());
                }
            }
        }
        out
    }

    /// The allowed string values of an enum: `enum` (ours or an extension),
    /// or the `const`s of a `oneOf` with documented variants.
    fn values(&self, m: &Map<String, Value>) -> Option<Vec<(String, Option<String>)>> {
        if let Some(e) = m.get("enum").and_then(Value::as_array) {
            return Some(e.iter().filter_map(Value::as_str).map(|s| (s.to_string(), None)).collect());
        }
        let one = m.get("oneOf").and_then(Value::as_array)?;
        let mut out = Vec::new();
        for v in one {
            let r = self.resolve(v);
            let value = r.get("const").or_else(|| r.get("enum").and_then(|e| e.get(0)))?.as_str()?.to_string();
            out.push((value, r.get("description").and_then(Value::as_str).map(one_line)));
        }
        Some(out)
    }

    /// A value of the type of `v`, as TOML (for the required keys of a table).
    fn dummy(&self, v: &Value) -> String {
        let m = self.resolve(v);
        if let Some(values) = self.values(&m) {
            return format!("\"{}\"", values[0].0);
        }
        let ty = match m.get("type") {
            Some(Value::String(t)) => t.as_str(),
            _ => "string",
        };
        match ty {
            "number" => "1.0".into(),
            "integer" => "1".into(),
            "boolean" => "false".into(),
            "array" => {
                let n = m.get("minItems").and_then(Value::as_u64).unwrap_or(1) as usize;
                format!("[{}]", vec![self.dummy(&m["items"]); n].join(", "))
            }
            _ => "\"x\"".into(),
        }
    }

    fn type_name(&self, v: &Value) -> String {
        let m = self.resolve(v);
        if let Some(values) = self.values(&m) {
            return values.iter().map(|(s, _)| format!("\"{s}\"")).collect::<Vec<_>>().join(" \\| ");
        }
        if let Some(any) = m.get("anyOf").and_then(Value::as_array) {
            return any.iter().filter(|x| x.get("type") != Some(&Value::from("null"))).map(|x| self.type_name(x)).collect::<Vec<_>>().join(" or ");
        }
        let ty = match m.get("type") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).find(|t| *t != "null").unwrap_or("null").to_string(),
            _ => panic!("no type in {v}"),
        };
        match ty.as_str() {
            "number" => "float".into(),
            "integer" => "integer".into(),
            "boolean" => "bool".into(),
            "string" => "string".into(),
            "object" => "table".into(),
            "array" => {
                let item = self.type_name(m.get("items").expect("array items"));
                match (m.get("minItems"), m.get("maxItems")) {
                    (Some(a), Some(b)) if a == b => format!("[{item}; {a}]"),
                    _ => format!("[{item}, ...]"),
                }
            }
            t => panic!("unexpected type {t}"),
        }
    }

    /// The tables of `Config`, sub-tables (`[[compatibility.stiffness]]`)
    /// right after their parent.
    fn tables(&self, root: &Value) -> Vec<Table> {
        let props = root["properties"].as_object().expect("Config properties");
        let mut names: Vec<&String> = props.keys().collect();
        names.sort_by_key(|n| (ORDER.iter().position(|o| o == n).unwrap_or(ORDER.len()), n.to_string()));
        let mut out = Vec::new();
        for name in names {
            self.table(name, &props[name], &[], &mut out);
        }
        out
    }

    fn table(&self, path: &str, field: &Value, parent_solvers: &[String], out: &mut Vec<Table>) {
        let f = self.resolve(field);
        let (array, def) = if f.get("type") == Some(&Value::from("array")) { (true, self.resolve(&f["items"])) } else { (false, f.clone()) };
        let solvers = solvers_of(&f).or_else(|| solvers_of(&def)).unwrap_or_else(|| parent_solvers.to_vec());
        let description = def.get("description").or_else(|| f.get("description")).and_then(Value::as_str).map(one_line).unwrap_or_default();
        let idx = out.len();
        out.push(Table { path: path.to_string(), array, description, solvers: solvers.clone(), keys: Vec::new() });
        let mut keys = Vec::new();
        self.keys(path, &def, &solvers, &mut keys, out);
        out[idx].keys = keys;
    }

    fn keys(&self, prefix: &str, def: &Map<String, Value>, solvers: &[String], keys: &mut Vec<Key>, out: &mut Vec<Table>) {
        let required: Vec<&str> = def.get("required").and_then(Value::as_array).map(|r| r.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
        let Some(props) = def.get("properties").and_then(Value::as_object) else { return };
        for (name, v) in props {
            let path = format!("{prefix}.{name}");
            let m = self.resolve(v);
            let key_solvers = solvers_of(&m).unwrap_or_else(|| solvers.to_vec());
            let is_array_of_tables = m.get("type") == Some(&Value::from("array")) && self.resolve(&m["items"]).contains_key("properties");
            if is_array_of_tables {
                self.table(&path, v, &key_solvers, out);
                continue;
            }
            let inner = self.resolve(&Value::Object(m.clone()));
            let nullable_object = inner.get("anyOf").and_then(Value::as_array).and_then(|a| a.iter().map(|x| self.resolve(x)).find(|x| x.contains_key("properties")));
            if let Some(obj) = nullable_object.or_else(|| inner.contains_key("properties").then(|| inner.clone())) {
                // An inline table (`radius = { min, max, classes }`): its keys.
                self.keys(&path, &obj, &key_solvers, keys, out);
                continue;
            }
            let mut description = m.get("description").and_then(Value::as_str).map(one_line).unwrap_or_default();
            if let Some(values) = self.values(&m) {
                let documented: Vec<String> = values.iter().filter_map(|(s, d)| d.as_ref().map(|d| format!("`\"{s}\"`: {d}"))).collect();
                if !documented.is_empty() {
                    description = format!("{description} {}", documented.join(" "));
                }
            }
            keys.push(Key {
                path,
                ty: self.type_name(v),
                unit: m.get("x-unit").and_then(Value::as_str).unwrap_or("").to_string(),
                default: m.get("default").map(toml_value).or_else(|| m.get("x-default").and_then(Value::as_str).map(str::to_string)),
                required: required.contains(&name.as_str()),
                solvers: key_solvers,
                description,
            });
        }
    }
}

fn solvers_of(m: &Map<String, Value>) -> Option<Vec<String>> {
    m.get("x-solvers").and_then(Value::as_array).map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A default as it would be written in TOML.
fn toml_value(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        Value::Array(a) => format!("[{}]", a.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Object(_) => "(table)".into(),
        Value::Null => "none".into(),
        x => x.to_string(),
    }
}

fn cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn solvers_cell(s: &[String]) -> String {
    if s.len() == SOLVERS.len() {
        "all".into()
    } else {
        s.join(", ")
    }
}

fn tables() -> Vec<Table> {
    let root = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
    let schema = Schema { defs: root["$defs"].as_object().cloned().unwrap_or_default() };
    let all: Vec<String> = SOLVERS.iter().map(|s| s.to_string()).collect();
    let mut t = schema.tables(&root);
    for table in &mut t {
        if table.solvers.is_empty() {
            table.solvers = all.clone();
        }
        for k in &mut table.keys {
            if k.solvers.is_empty() {
                k.solvers = all.clone();
            }
        }
    }
    t
}

/// The reference as Markdown.
fn generate() -> String {
    let mut s = String::new();
    s.push_str("# Config reference\n\n");
    s.push_str("<!-- Generated from src/config/schema.rs by `cargo test --release --test docs -- --ignored write_config_reference`; do not edit by hand. -->\n\n");
    s.push_str(
        "Every key of a scene's TOML file, table by table. Units are SI throughout \
         (m, kg, s, N, Pa, rad); `1` marks a dimensionless number. *Default* is the \
         value taken when the key is left out: `required` keys must be given, `none` \
         means the feature is off unless given. *Solvers* names the solvers that read \
         the key: a table or key that the scene's solver does not read is not an error, \
         the run prints one `is ignored by solver` warning line for it. An unknown key is an error. Any key can be overridden on the command line, \
         `--set dem.gbar=1e-4`, `--set 'generate[0].count=[10, 10, 10]'`.\n\n",
    );
    s.push_str("Tables: ");
    let links: Vec<String> = tables().iter().map(|t| format!("[`{}`](#{})", header(t), anchor(t))).collect();
    s.push_str(&links.join(", "));
    s.push_str(".\n");
    for t in tables() {
        s.push_str(&format!("\n## `{}`\n\n", header(&t)));
        if !t.description.is_empty() {
            s.push_str(&format!("{}\n\n", t.description));
        }
        s.push_str(&format!("Read by: {}.\n\n", solvers_cell(&t.solvers)));
        s.push_str("| key | type | unit | default | solvers | description |\n|---|---|---|---|---|---|\n");
        for k in &t.keys {
            let default = if k.required { "required".to_string() } else { k.default.clone().unwrap_or_else(|| "none".into()) };
            s.push_str(&format!(
                "| `{}` | {} | {} | {} | {} | {} |\n",
                k.path,
                k.ty,
                cell(&k.unit),
                cell(&default),
                solvers_cell(&k.solvers),
                cell(&k.description)
            ));
        }
    }
    s
}

fn header(t: &Table) -> String {
    if t.array {
        format!("[[{}]]", t.path)
    } else {
        format!("[{}]", t.path)
    }
}

/// mdBook's heading id of `## `header``: lower case, alphanumerics, `-` and `_` kept.
fn anchor(t: &Table) -> String {
    header(t).to_lowercase().chars().filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_').collect()
}

#[test]
fn every_key_is_documented_with_a_type_and_a_default() {
    let mut problems = Vec::new();
    for t in tables() {
        for k in &t.keys {
            if k.description.is_empty() {
                problems.push(format!("{}: no doc comment", k.path));
            }
            if !k.required && k.default.is_none() {
                problems.push(format!("{}: optional without a default or x-default", k.path));
            }
            for s in &k.solvers {
                if !SOLVERS.contains(&s.as_str()) {
                    problems.push(format!("{}: unknown solver {s}", k.path));
                }
            }
        }
    }
    assert!(problems.is_empty(), "src/config/schema.rs:\n{}", problems.join("\n"));
    // The schema holds the keys we know it must, with their units.
    let all: Vec<Key> = tables().into_iter().flat_map(|t| t.keys).collect();
    let find = |p: &str| all.iter().find(|k| k.path == p).unwrap_or_else(|| panic!("{p} not in the schema"));
    assert_eq!(find("simulation.dt").unit, "s");
    assert!(find("simulation.dt").required);
    assert_eq!(find("generate.radius.min").unit, "m");
    assert_eq!(find("dem.gbar").solvers, ["dem"]);
    assert_eq!(find("compatibility.stiffness.k").solvers, ["compatible-cd", "dem"]);
    assert_eq!(find("material.friction").solvers, SOLVERS);
    assert_eq!(find("output.every").default.as_deref(), Some("100"));
}

/// The values the reference lists for an enum key are values serde takes
/// (for the enums of `scene`, listed by hand in `schema.rs`).
#[test]
fn listed_enum_values_are_accepted() {
    let root = serde_json::to_value(schemars::schema_for!(Config)).unwrap();
    let schema = Schema { defs: root["$defs"].as_object().cloned().unwrap_or_default() };
    let mut checked = 0;
    for t in tables() {
        // The table's definition, down its dotted path.
        let mut def = schema.resolve(&root);
        for seg in t.path.split('.') {
            def = schema.resolve(&def["properties"][seg]);
            if def.get("type") == Some(&Value::from("array")) {
                def = schema.resolve(&def["items"]);
            }
        }
        for k in &t.keys {
            let name = k.path.rsplit('.').next().unwrap();
            let Some(v) = def.get("properties").and_then(|p| p.get(name)) else { continue };
            let Some(values) = schema.values(&schema.resolve(v)) else { continue };
            for (value, _) in values.iter().map(|(v, d)| (v.clone(), d.clone())).chain([("no-such-value".to_string(), None)]) {
                let mut toml = String::from("[simulation]\nsolver = \"cd\"\nt_end = 1.0\ndt = 1.0\n");
                let section = if t.array { format!("\n[[{}]]\n", t.path) } else { format!("\n[{}]\n", t.path) };
                if t.path == "simulation" {
                    toml = format!("[simulation]\nt_end = 1.0\ndt = 1.0\n{name} = \"{value}\"\n");
                } else {
                    toml.push_str(&section);
                    for r in def.get("required").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).filter(|r| *r != name) {
                        toml.push_str(&format!("{r} = {}\n", schema.dummy(&def["properties"][r])));
                    }
                    toml.push_str(&format!("{name} = \"{value}\"\n"));
                }
                let parsed = toml::from_str::<Config>(&toml);
                if value == "no-such-value" {
                    assert!(parsed.is_err(), "{}: accepts any value", k.path);
                } else {
                    assert!(parsed.is_ok(), "{} = \"{value}\" is listed but refused: {:?}", k.path, parsed.err());
                    checked += 1;
                }
            }
        }
    }
    assert!(checked >= 20, "only {checked} enum values checked");
}

#[test]
fn config_reference_is_current() {
    let path = reference_path();
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let missing: Vec<String> =
        tables().iter().flat_map(|t| t.keys.iter().map(|k| k.path.clone())).filter(|p| !committed.contains(&format!("| `{p}` |"))).collect();
    let regenerate = "regenerate with `cargo test --release --test docs -- --ignored write_config_reference`";
    assert!(missing.is_empty(), "{} lacks the schema keys {missing:?}; {regenerate}", path.display());
    assert!(committed == generate(), "{} differs from what src/config/schema.rs generates; {regenerate}", path.display());
}

#[test]
#[ignore = "writer: regenerates docs/src/config-reference.md"]
fn write_config_reference() {
    std::fs::write(reference_path(), generate()).unwrap();
}

/// The id mdBook (and GitHub) gives a heading: lower case, alphanumerics,
/// `-` and `_` kept, spaces to `-`, the rest dropped.
fn heading_id(text: &str) -> String {
    text.trim().to_lowercase().chars().filter_map(|c| if c.is_alphanumeric() || c == '-' || c == '_' { Some(c) } else if c == ' ' { Some('-') } else { None }).collect()
}

/// The lines of a Markdown file outside fenced code blocks, with inline
/// code removed.
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || line.starts_with("    ") && !line.trim_start().starts_with(['-', '|', '[', '!']) {
            continue;
        }
        let mut kept = String::new();
        for (k, part) in line.split('`').enumerate() {
            if k % 2 == 0 {
                kept.push_str(part);
            }
        }
        out.push((i + 1, kept));
    }
    out
}

fn headings(path: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut fenced = false;
    let mut ids = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced && line.starts_with('#') {
            ids.push(heading_id(line.trim_start_matches('#')));
        }
    }
    ids
}

/// The targets of the Markdown links `[text](target)` and `![alt](target)` of a line.
fn link_targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        let Some(j) = after.find(')') else { break };
        out.push(after[..j].split_whitespace().next().unwrap_or("").to_string());
        rest = &after[j..];
    }
    out
}

#[test]
fn links_in_the_guide_and_readme_resolve() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let src = root.join("docs/src");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&src).unwrap().filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.extension().is_some_and(|e| e == "md")).collect();
    files.sort();
    let chapters: Vec<String> = files.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).filter(|n| n != "SUMMARY.md").collect();
    files.push(root.join("README.md"));
    files.push(root.join("BENCHMARKS.md"));
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line_no, line) in prose_lines(&text) {
            for target in link_targets(&line) {
                if target.is_empty() || target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                checked += 1;
                let (path, anchor) = match target.split_once('#') {
                    Some((p, a)) => (p, Some(a)),
                    None => (target.as_str(), None),
                };
                let resolved = if path.is_empty() { file.clone() } else { file.parent().unwrap().join(path) };
                let here = format!("{}:{line_no}: {target}", file.strip_prefix(&root).unwrap().display());
                if !resolved.exists() {
                    broken.push(format!("{here}: no such file"));
                } else if let Some(a) = anchor {
                    if resolved.extension().is_some_and(|e| e == "md") && !headings(&resolved).iter().any(|h| h == a) {
                        broken.push(format!("{here}: no heading with this id"));
                    }
                }
            }
        }
    }
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).unwrap();
    for c in &chapters {
        if !summary.contains(&format!("({c})")) {
            broken.push(format!("docs/src/{c}: not in SUMMARY.md"));
        }
    }
    assert!(broken.is_empty(), "broken links in the documents:\n{}", broken.join("\n"));
    assert!(checked > 50, "only {checked} links checked: is the link parser broken?");
}

#[test]
fn the_link_check_finds_broken_links() {
    assert_eq!(link_targets("see [a](b.md#c) and ![i](images/x.png)"), ["b.md#c", "images/x.png"]);
    assert_eq!(heading_id(" `[[compatibility.stiffness]]`"), "compatibilitystiffness");
    assert_eq!(heading_id(" Solver `dem`"), "solver-dem");
    let lines = prose_lines("a `[x](y)` b\n```\n[z](w)\n```\n[ok](v)\n");
    let targets: Vec<String> = lines.iter().flat_map(|(_, l)| link_targets(l)).collect();
    assert_eq!(targets, ["v"]);
}

/// What `stiffgrain check` prints for a one-sphere scene under `solver`,
/// with `material` appended to its material and `extra` to the file; and
/// whether it succeeded.
fn check_scene(solver: &str, material: &str, extra: &str) -> (bool, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scene.toml");
    let text = format!(
        "[simulation]\nsolver = \"{solver}\"\nt_end = 0.1\ndt = 1e-3\n\n[[material]]\nname = \"m\"\ndensity = 1000.0\n{material}\n\n\
         [[shape]]\nname = \"s\"\nkind = \"sphere\"\nradius = 0.5\n\n[[body]]\nshape = \"s\"\nposition = [0.0, 0.0, 1.0]\n\n{extra}\n"
    );
    std::fs::write(&path, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_stiffgrain")).arg("check").arg(&path).output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

/// The reference's solver column says which solvers read a table or key;
/// the program says it too, by warning that the others ignore it. Every
/// table and key whose solvers are not all three is set in a scene under
/// each solver: the solvers named must not warn about it, the others must
/// (or refuse the scene with a line naming it, where the case says so).
#[test]
fn the_solvers_column_agrees_with_the_ignored_warnings() {
    // (table or key, material lines, extra TOML, what the warning names,
    // the solvers that refuse it)
    let case = |path: &str| -> (&str, &str, &str, &[&str]) {
        match path {
            "solver" => ("", "[solver]\ntolerance = 1e-6", "[solver]", &[]),
            "compatibility" => ("", "[compatibility]\np = 3.0", "compatibility", &[]),
            "compatibility.stiffness" => ("", "[dem]\npair_stiffness = true\n\n[[compatibility.stiffness]]\nmaterials = [\"m\", \"m\"]\nk = 2.0", "compatibility", &[]),
            "dem" => ("", "[dem]\ngbar = 0.01", "[dem]", &[]),
            "material.restitution" => ("restitution = 0.5", "", "material[0].restitution", &[]),
            "material.rolling_friction" => ("rolling_friction = 0.1", "", "material[0].rolling_friction", &["compatible-cd"]),
            "material.twisting_friction" => ("twisting_friction = 0.1", "", "material[0].twisting_friction", &["compatible-cd"]),
            other => panic!("{other} is read by only some solvers: add a case for it to this test"),
        }
    };
    let mut checked = 0;
    for t in tables() {
        let mut subjects: Vec<(String, Vec<String>)> = Vec::new();
        if t.solvers.len() < SOLVERS.len() {
            subjects.push((t.path.clone(), t.solvers.clone()));
        }
        for k in &t.keys {
            if k.solvers != t.solvers {
                subjects.push((k.path.clone(), k.solvers.clone()));
            }
        }
        for (path, readers) in subjects {
            let (material, extra, named, refused_by) = case(&path);
            for solver in SOLVERS {
                let (ok, out) = check_scene(solver, material, extra);
                let warned = out.lines().any(|l| l.contains("is ignored by solver") && l.contains(named));
                if refused_by.contains(&solver) {
                    assert!(!ok && out.lines().any(|l| l.contains(named)), "{path} under {solver} is not refused with a line naming {named}: {out}");
                } else if readers.iter().any(|r| r == solver) {
                    assert!(ok && !warned, "{path} under {solver} (listed as a reader): {out}");
                } else {
                    assert!(ok && warned, "{path} under {solver} (not a reader) gives no warning naming {named}: {out}");
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 15, "only {checked} cases");
}
