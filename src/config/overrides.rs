//! `--set KEY=VALUE` overrides on the parsed TOML table.
use super::ConfigError;

/// Sets `KEY=VALUE` in `table`. KEY is dotted (`simulation.dt`), with `[i]` or
/// `.i` selecting an entry of an array of tables (`generate[0].n`). VALUE is
/// read as a TOML value, else taken as a string.
pub fn apply(table: &mut toml::Table, assignment: &str) -> Result<(), ConfigError> {
    let err = |key: &str, msg: String| ConfigError::new("--set", key, msg);
    let (key, value) = assignment
        .split_once('=')
        .ok_or_else(|| err(assignment, "expected KEY=VALUE".into()))?;
    let key = key.trim();
    let value = parse_value(value.trim());
    let parts: Vec<String> = key.replace('[', ".").replace(']', "").split('.').map(str::to_string).collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err(err(key, "empty key segment".into()));
    }
    let (first, rest) = parts.split_first().expect("split gives at least one segment");
    if rest.is_empty() {
        table.insert(first.clone(), value);
        return Ok(());
    }
    if !table.contains_key(first) && rest[0].parse::<usize>().is_ok() {
        return Err(err(key, format!("there is no `{first}` array to index")));
    }
    let root = table.entry(first.clone()).or_insert_with(|| toml::Value::Table(Default::default()));
    set_in(root, rest, value).map_err(|m| err(key, m))
}

fn set_in(cur: &mut toml::Value, path: &[String], value: toml::Value) -> Result<(), String> {
    let (seg, rest) = path.split_first().expect("non-empty path");
    let slot = match cur {
        toml::Value::Table(t) => {
            if !t.contains_key(seg) && rest.first().is_some_and(|r| r.parse::<usize>().is_ok()) {
                return Err(format!("there is no `{seg}` array to index"));
            }
            t.entry(seg.clone()).or_insert_with(|| toml::Value::Table(Default::default()))
        }
        toml::Value::Array(a) => {
            let i: usize = seg.parse().map_err(|_| format!("`{seg}` is not an array index"))?;
            let len = a.len();
            a.get_mut(i).ok_or_else(|| format!("index {i} out of range (the array has {len})"))?
        }
        _ => return Err(format!("`{seg}` is below a value that is not a table")),
    };
    if rest.is_empty() {
        *slot = value;
        Ok(())
    } else {
        set_in(slot, rest, value)
    }
}

fn parse_value(s: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {s}")) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(s.into())),
        Err(_) => toml::Value::String(s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_nested_and_indexed_keys() {
        let mut t: toml::Table = toml::from_str("[simulation]\ndt = 1.0\n[[generate]]\nn = 3\n").unwrap();
        apply(&mut t, "simulation.dt=0.5").unwrap();
        apply(&mut t, "generate[0].n=7").unwrap();
        apply(&mut t, "output.dir=runs/a").unwrap();
        assert_eq!(t["simulation"]["dt"].as_float(), Some(0.5));
        assert_eq!(t["generate"][0]["n"].as_integer(), Some(7));
        assert_eq!(t["output"]["dir"].as_str(), Some("runs/a"));
        assert!(apply(&mut t, "generate[4].n=1").is_err());
        assert!(apply(&mut t, "nonsense").is_err());
    }
}
