//! ARCHITECTURE.md's import table, held to the code.
//!
//! The table ("Module map and who may import whom") has one row per unit of
//! src/ (a folder `name/` or a file `name.rs` at the top of src/), listed
//! from the bottom up, and a `may import` cell of comma-separated unit names
//! (`—` for none). The checks:
//! - every `crate::unit` path in src/ (in `use` lines and inline paths,
//!   grouped `crate::{a, b}` too; `super::` paths that climb out of their
//!   folder; `stiffgrain::unit` in main.rs) names a unit its row allows;
//! - a row allows only units listed above it (the arrows point one way);
//! - every unit of src/ has a row, every row a unit, and every allowed
//!   import is used (the table describes the code, it is not a wish list).
//!
//! Comments and string literals are skipped; lib.rs (which only declares the
//! units) is not checked.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One row of the import table.
#[derive(Debug)]
struct Row {
    unit: String,
    may_import: BTreeSet<String>,
}

const TABLE_HEADING: &str = "## Module map and who may import whom";

/// The rows of the import table in ARCHITECTURE.md, in order, or why they
/// cannot be read.
fn parse_table(md: &str) -> Result<Vec<Row>, String> {
    let start = md.find(TABLE_HEADING).ok_or_else(|| format!("no heading {TABLE_HEADING:?}"))?;
    let mut lines = md[start..].lines().skip(1).skip_while(|l| !l.trim_start().starts_with('|'));
    let header = lines.next().ok_or("no table under the heading")?;
    let cells = |l: &str| l.trim().trim_matches('|').split('|').map(|c| c.trim().to_string()).collect::<Vec<_>>();
    let col = cells(header).iter().position(|c| c == "may import").ok_or_else(|| format!("no column \"may import\" in {header:?}"))?;
    let mut rows: Vec<Row> = Vec::new();
    for line in lines.skip(1).take_while(|l| l.trim_start().starts_with('|')) {
        let c = cells(line);
        let unit = unit_name(&c[0]).ok_or_else(|| format!("not a unit (`name/` or `name.rs`): {:?}", c[0]))?;
        let cell = c.get(col).ok_or_else(|| format!("row {unit}: no \"may import\" cell"))?;
        let mut may_import = BTreeSet::new();
        if cell != "—" && !cell.is_empty() {
            for name in cell.split(',') {
                let name = unit_name(name.trim()).ok_or_else(|| format!("row {unit}: not a unit name: {:?} (the cell is comma-separated names only)", name.trim()))?;
                if !rows.iter().any(|r| r.unit == name) {
                    return Err(format!("row {unit} may import {name}, which is not listed above it (rows go from the bottom up)"));
                }
                may_import.insert(name);
            }
        }
        if rows.iter().any(|r| r.unit == unit) {
            return Err(format!("two rows for {unit}"));
        }
        rows.push(Row { unit, may_import });
    }
    if rows.is_empty() {
        return Err("the import table has no rows".into());
    }
    Ok(rows)
}

/// `config/`, `` `world.rs` ``, `scene` → the unit's name.
fn unit_name(cell: &str) -> Option<String> {
    let s = cell.trim().trim_matches('`');
    let s = s.strip_suffix('/').or_else(|| s.strip_suffix(".rs")).unwrap_or(s);
    (!s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')).then(|| s.to_string())
}

/// The unit a file belongs to and its module path (`dem/solver.rs` →
/// ("dem", [dem, solver])); `rel` is relative to src/.
fn module_of(rel: &str) -> (String, Vec<String>) {
    let rel = rel.strip_suffix(".rs").unwrap_or(rel);
    let mut path: Vec<String> = rel.split('/').map(str::to_string).collect();
    if path.len() > 1 && path.last().map(String::as_str) == Some("mod") {
        path.pop();
    }
    (path[0].clone(), path)
}

/// `text` with comments and the contents of string and char literals
/// blanked out (newlines kept, so line numbers stay).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |ch: char| if ch == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < c.len() {
        let at = |k: usize| c.get(i + k).copied().unwrap_or('\0');
        if at(0) == '/' && at(1) == '/' {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if at(0) == '/' && at(1) == '*' {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
        } else if (at(0) == 'r' && (at(1) == '"' || (at(1) == '#' && (at(2) == '"' || at(2) == '#'))))
            && !(i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // Raw string r"..." / r#"..."#.
            let mut hashes = 0;
            i += 1;
            while c.get(i) == Some(&'#') {
                hashes += 1;
                i += 1;
            }
            i += 1; // the opening quote
            out.push_str(&" ".repeat(hashes + 2));
            while i < c.len() {
                if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                    out.push_str(&" ".repeat(hashes + 1));
                    i += hashes + 1;
                    break;
                }
                out.push(blank(c[i]));
                i += 1;
            }
        } else if at(0) == '"' {
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    out.push(blank(c[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if at(0) == '\'' && (at(2) == '\'' || (at(1) == '\\' && (at(3) == '\'' || c[i + 1..].iter().take(12).any(|&x| x == '\'')))) {
            // A char literal ('a', '\n', '\u{..}'), not a lifetime.
            out.push(' ');
            i += 1;
            while i < c.len() && c[i] != '\'' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push(' ');
            i += 1;
        } else {
            out.push(at(0));
            i += 1;
        }
    }
    out
}

/// Every unit of the crate that the file `rel` (relative to src/) names:
/// (line, unit, the path as written).
fn imports(rel: &str, text: &str) -> Vec<(usize, String, String)> {
    let (_, file_path) = module_of(rel);
    let code: Vec<char> = code_only(text).chars().collect();
    let is_ident = |ch: char| ch.is_alphanumeric() || ch == '_';
    let ident_at = |k: usize| -> String { code[k..].iter().take_while(|&&ch| is_ident(ch)).collect() };
    let skip_ws = |mut k: usize| {
        while k < code.len() && code[k].is_whitespace() {
            k += 1;
        }
        k
    };
    let roots: &[&str] = if rel == "main.rs" { &["crate", "stiffgrain"] } else { &["crate"] };
    let mut found = Vec::new();
    let mut line = 1;
    let mut depth = 0usize;
    // Inline modules (`mod tests {`) open at a brace depth: their names
    // extend the module path that `super::` climbs.
    let mut inline: Vec<(usize, String)> = Vec::new();
    let mut pending_mod: Option<String> = None;
    let mut i = 0;
    while i < code.len() {
        let ch = code[i];
        if ch == '\n' {
            line += 1;
        }
        if ch == '{' {
            depth += 1;
            if let Some(name) = pending_mod.take() {
                inline.push((depth, name));
            }
            i += 1;
            continue;
        }
        if ch == '}' {
            if inline.last().is_some_and(|(d, _)| *d == depth) {
                inline.pop();
            }
            depth = depth.saturating_sub(1);
            i += 1;
            continue;
        }
        if ch == ';' {
            pending_mod = None;
        }
        if !is_ident(ch) || (i > 0 && (is_ident(code[i - 1]) || code[i - 1] == ':')) {
            i += 1;
            continue;
        }
        let word = ident_at(i);
        let after = i + word.chars().count();
        if word == "mod" {
            let k = skip_ws(after);
            let name = ident_at(k);
            if !name.is_empty() {
                pending_mod = Some(name);
            }
            i = after;
            continue;
        }
        let start_line = line;
        // The module the path starts from: the crate root, or where a chain
        // of `super::` climbs to.
        let mut k = after;
        let mut from_root = roots.contains(&word.as_str());
        if word == "super" {
            let mut path: Vec<String> = file_path.iter().cloned().chain(inline.iter().map(|(_, n)| n.clone())).collect();
            path.pop();
            while code.get(k) == Some(&':') && code.get(k + 1) == Some(&':') && ident_at(k + 2) == "super" {
                path.pop();
                k += 2 + "super".len();
            }
            from_root = path.is_empty();
        }
        if from_root && code.get(k) == Some(&':') && code.get(k + 1) == Some(&':') {
            let k = skip_ws(k + 2);
            let names: Vec<String> = if code.get(k) == Some(&'{') {
                // A group: the first name of each top-level item.
                let mut names = Vec::new();
                let (mut d, mut j, mut item_start) = (0, k + 1, true);
                while j < code.len() {
                    match code[j] {
                        '{' => d += 1,
                        '}' if d == 0 => break,
                        '}' => d -= 1,
                        ',' if d == 0 => item_start = true,
                        ch if is_ident(ch) && item_start => {
                            names.push(ident_at(j));
                            item_start = false;
                        }
                        _ => {}
                    }
                    j += 1;
                }
                names
            } else {
                vec![ident_at(k)]
            };
            for name in names.into_iter().filter(|n| !n.is_empty() && n != "self") {
                found.push((start_line, name.clone(), format!("{word}::{name}")));
            }
        }
        i = after;
    }
    found
}

/// Every file of src/ as (path relative to src/, text), sorted.
fn sources(src: &Path) -> Vec<(String, String)> {
    fn walk(dir: &Path, src: &Path, out: &mut Vec<(String, String)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, src, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(src).unwrap().to_str().unwrap().replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(src, src, &mut out);
    out.sort();
    out
}

/// What the table and the sources disagree on. `forbidden`: one line per
/// import the table does not allow (`src/FILE:LINE: unit imports X (path),
/// which its row does not allow`) or per file whose unit has no row;
/// `stale`: rows of no unit, and allowed imports no file makes.
struct Findings {
    forbidden: Vec<String>,
    stale: Vec<String>,
}

fn check(rows: &[Row], files: &[(String, String)]) -> Findings {
    let table: BTreeMap<&str, &Row> = rows.iter().map(|r| (r.unit.as_str(), r)).collect();
    let mut forbidden = Vec::new();
    let mut used: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (rel, text) in files.iter().filter(|(rel, _)| rel != "lib.rs") {
        let (unit, _) = module_of(rel);
        used.entry(unit.clone()).or_default();
        let Some(row) = table.get(unit.as_str()) else {
            forbidden.push(format!("src/{rel}: its unit `{unit}` has no row in ARCHITECTURE.md's import table"));
            continue;
        };
        for (line, name, written) in imports(rel, text) {
            if name == unit {
                continue;
            }
            if row.may_import.contains(&name) {
                used.get_mut(&unit).unwrap().insert(name);
            } else {
                forbidden.push(format!("src/{rel}:{line}: `{unit}` imports `{name}` ({written}), which its row in ARCHITECTURE.md does not allow"));
            }
        }
    }
    let mut stale = Vec::new();
    for row in rows {
        match used.get(&row.unit) {
            None => stale.push(format!("ARCHITECTURE.md: a row for `{}`, which is no unit of src/", row.unit)),
            Some(u) => {
                for name in row.may_import.difference(u) {
                    stale.push(format!("ARCHITECTURE.md: `{}` may import `{name}`, but no file of it does: drop it from the row", row.unit));
                }
            }
        }
    }
    Findings { forbidden, stale }
}

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn real_rows() -> Vec<Row> {
    let md = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    parse_table(&md).unwrap_or_else(|e| panic!("ARCHITECTURE.md: {e}"))
}

#[test]
fn src_imports_only_what_architecture_md_allows() {
    let f = check(&real_rows(), &sources(&root().join("src")));
    assert!(f.forbidden.is_empty(), "imports the layering forbids (fix the import, or the table and its reason):\n{}", f.forbidden.join("\n"));
}

#[test]
fn the_import_table_allows_only_what_src_uses() {
    let f = check(&real_rows(), &sources(&root().join("src")));
    assert!(f.stale.is_empty(), "ARCHITECTURE.md's import table is out of date:\n{}", f.stale.join("\n"));
}

// The check itself.

const SMALL_TABLE: &str = "# x\n\n## Module map and who may import whom\n\ntext\n\n\
| unit | one job | may import |\n|---|---|---|\n\
| `body/` | bodies | — |\n\
| `geometry/` | distances, body | body |\n\
| `world.rs` | state | body, geometry |\n\
| `main.rs` | cli | world |\n\nRules.\n";

fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

#[test]
fn a_forbidden_import_fails_naming_file_line_and_import() {
    let rows = parse_table(SMALL_TABLE).unwrap();
    let clean = [
        ("lib.rs", "pub mod body;\npub mod world;\n"),
        ("body/mod.rs", "//! Not `crate::world` in a comment.\npub mod shape;\nconst S: &str = \"crate::world::World\";\nconst C: char = '\"';\nfn f<'a>(x: &'a str) -> &'a str { x }\n"),
        ("body/shape.rs", "use super::S;\n#[cfg(test)]\nmod tests {\n    use super::super::S;\n}\n"),
        ("geometry/mod.rs", "use crate::body::Shape;\n"),
        ("world.rs", "use crate::{body::{self, Bodies}, geometry};\n/* crate::main:: */\n"),
        ("main.rs", "use stiffgrain::{world};\nfn main() { stiffgrain::world::run(); }\n"),
    ];
    let f = check(&rows, &files(&clean));
    assert!(f.forbidden.is_empty() && f.stale.is_empty(), "{:?} {:?}", f.forbidden, f.stale);

    // The same tree with one layering error each: upwards by `use`, by an
    // inline path, inside a group, by `super::` out of the folder, and a
    // file of a unit the table does not know.
    for (rel, text, want) in [
        ("body/shape.rs", "use super::S;\n\nuse crate::world::World;\n", "src/body/shape.rs:3: `body` imports `world` (crate::world)"),
        ("geometry/mod.rs", "use crate::body::Shape;\nfn f() { crate::world::run() }\n", "src/geometry/mod.rs:2: `geometry` imports `world`"),
        ("world.rs", "use crate::{\n    body::Bodies,\n    geometry,\n    main,\n};\n", "src/world.rs:1: `world` imports `main`"),
        ("body/mod.rs", "mod x {\n}\nuse super::geometry;\n", "src/body/mod.rs:3: `body` imports `geometry` (super::geometry)"),
        ("timers.rs", "", "src/timers.rs: its unit `timers` has no row"),
    ] {
        let mut tree = files(&clean);
        match tree.iter_mut().find(|(r, _)| r == rel) {
            Some(f) => f.1 = text.to_string(),
            None => tree.push((rel.to_string(), text.to_string())),
        }
        let f = check(&rows, &tree);
        assert_eq!(f.forbidden.len(), 1, "{rel}: {:?}", f.forbidden);
        assert!(f.forbidden[0].starts_with(want), "{rel}: {} does not start with {want}", f.forbidden[0]);
    }
}

#[test]
fn the_real_table_refuses_an_upward_import_into_src() {
    let mut tree = sources(&root().join("src"));
    tree.push(("geometry/upwards.rs".into(), "//! A distance that needs a solver.\nuse crate::dem::DemSolver;\n".into()));
    let f = check(&real_rows(), &tree);
    assert_eq!(f.forbidden.iter().filter(|l| l.starts_with("src/geometry/upwards.rs:2: `geometry` imports `dem`")).count(), 1, "{:?}", f.forbidden);
}

#[test]
fn an_allowed_but_unused_import_and_a_badly_ordered_table_are_reported() {
    let rows = parse_table(SMALL_TABLE).unwrap();
    let tree = files(&[("body/mod.rs", ""), ("geometry/mod.rs", ""), ("world.rs", "use crate::body::B;\n"), ("main.rs", "use stiffgrain::world;\n")]);
    let f = check(&rows, &tree);
    assert!(f.forbidden.is_empty(), "{:?}", f.forbidden);
    assert_eq!(
        f.stale,
        [
            "ARCHITECTURE.md: `geometry` may import `body`, but no file of it does: drop it from the row",
            "ARCHITECTURE.md: `world` may import `geometry`, but no file of it does: drop it from the row"
        ]
    );
    // A row may import only rows above it: the arrows point one way.
    let upside_down = SMALL_TABLE.replace("| `body/` | bodies | — |", "| `body/` | bodies | world |");
    assert!(parse_table(&upside_down).unwrap_err().contains("row body may import world, which is not listed above it"));
    // Names only in the cell.
    let prose = SMALL_TABLE.replace("| body, geometry |", "| body, geometry (for distances) |");
    assert!(parse_table(&prose).unwrap_err().contains("not a unit name"));
}
