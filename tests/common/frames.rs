//! Frames and summary of a run's output, as tests read them.
use std::path::Path;

#[derive(Debug, Clone)]
pub struct Contact {
    pub body_a: u64,
    pub body_b: u64,
    pub point: [f64; 3],
    pub force_normal: f64,
    pub gap: f64,
    /// Tangential (friction) force on body b (the wall for a ground contact).
    pub force_tangent: [f64; 3],
    pub normal: [f64; 3],
    /// compatible-cd's normal and tangential forces (zero when absent).
    pub force_compatible: f64,
    pub force_compatible_tangent: [f64; 3],
    /// cd's rolling and twisting moment on body b (zero when absent).
    pub moment_rolling: [f64; 3],
}

#[derive(Debug, Clone)]
pub struct Frame {
    pub t: f64,
    pub pos: Vec<[f64; 3]>,
    pub vel: Vec<[f64; 3]>,
    pub omega: Vec<[f64; 3]>,
    /// w, x, y, z
    pub orientation: Vec<[f64; 4]>,
    pub contacts: Vec<Contact>,
}

pub fn rows<const N: usize>(g: &hdf5::Group, name: &str) -> Vec<[f64; N]> {
    let d = g.dataset(name).unwrap().read_raw::<f64>().unwrap();
    d.chunks(N).map(|c| c.try_into().unwrap()).collect()
}

/// Every frame of `dir/frames.h5`, in time order (bodies in id order).
pub fn frames(dir: &Path) -> Vec<Frame> {
    let f = hdf5::File::open(dir.join("frames.h5")).unwrap();
    let fr = f.group("frames").unwrap();
    let mut out = Vec::new();
    for name in fr.member_names().unwrap() {
        let g = fr.group(&name).unwrap();
        let b = g.group("bodies").unwrap();
        let c = g.group("contacts").unwrap();
        let fnorm = c.dataset("force_normal").unwrap().read_raw::<f64>().unwrap();
        let gap = c.dataset("gap").unwrap().read_raw::<f64>().unwrap();
        let body_a = c.dataset("body_a").unwrap().read_raw::<u64>().unwrap();
        let body_b = c.dataset("body_b").unwrap().read_raw::<u64>().unwrap();
        let point = rows::<3>(&c, "point");
        let ft = rows::<3>(&c, "force_tangent");
        let normal = rows::<3>(&c, "normal");
        let has = |name: &str| c.member_names().unwrap().iter().any(|m| m == name);
        let fc = if has("force_compatible") { c.dataset("force_compatible").unwrap().read_raw::<f64>().unwrap() } else { vec![0.0; fnorm.len()] };
        let fct = if has("force_compatible_tangent") { rows::<3>(&c, "force_compatible_tangent") } else { vec![[0.0; 3]; fnorm.len()] };
        let mr = if has("moment_rolling") { rows::<3>(&c, "moment_rolling") } else { vec![[0.0; 3]; fnorm.len()] };
        let contacts = (0..fnorm.len())
            .map(|k| Contact {
                body_a: body_a[k],
                body_b: body_b[k],
                point: point[k],
                force_normal: fnorm[k],
                gap: gap[k],
                force_tangent: ft[k],
                normal: normal[k],
                force_compatible: fc[k],
                force_compatible_tangent: fct[k],
                moment_rolling: mr[k],
            })
            .collect();
        out.push(Frame {
            t: g.attr("time").unwrap().read_scalar().unwrap(),
            pos: rows::<3>(&b, "position"),
            vel: rows::<3>(&b, "velocity"),
            omega: rows::<3>(&b, "angular_velocity"),
            orientation: rows::<4>(&b, "orientation"),
            contacts,
        });
    }
    out.sort_by(|a, b| a.t.partial_cmp(&b.t).unwrap());
    out
}

pub fn summary(dir: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
}

