//! Contact statistics of every frame of a run, for the box benchmarks
//! (configs/box-*.toml; README "Polyhedra examples"):
//!
//! ```text
//! frame_stats OUT/frames.h5 GBAR
//! ```
//! prints per frame: step, time, listed contacts, active (gap < GBAR, the
//! DEM's ḡ_n) body–body and body–wall contacts, and the largest |x|, |y|
//! and z of a body centre (the spread of the pack).
fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: frame_stats FRAMES.h5 GBAR");
        std::process::exit(2);
    }
    let gbar: f64 = args[2].parse().expect("GBAR must be a number");
    let f = hdf5::File::open(&args[1]).expect("cannot open the frames file");
    let frames = f.group("frames").unwrap();
    println!("{:>9} {:>12} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}", "step", "time", "listed", "bb_act", "bw_act", "max|x|", "max|y|", "max_z");
    for name in frames.member_names().unwrap() {
        let g = frames.group(&name).unwrap();
        let t: f64 = g.attr("time").unwrap().read_scalar().unwrap();
        let c = g.group("contacts").unwrap();
        let gap = c.dataset("gap").unwrap().read_raw::<f64>().unwrap();
        let b = c.dataset("body_b").unwrap().read_raw::<u64>().unwrap();
        let wall = 1u64 << 63;
        let bb = (0..gap.len()).filter(|&k| gap[k] < gbar && b[k] < wall).count();
        let bw = (0..gap.len()).filter(|&k| gap[k] < gbar && b[k] >= wall).count();
        let p = g.group("bodies").unwrap().dataset("position").unwrap().read_raw::<f64>().unwrap();
        let m = |k: usize, abs: bool| {
            p.chunks(3).map(|r| if abs { r[k].abs() } else { r[k] }).fold(f64::NEG_INFINITY, f64::max)
        };
        println!("{name:>9} {t:>12.6} {:>8} {bb:>8} {bw:>8} {:>8.3} {:>8.3} {:>8.3}", gap.len(), m(0, true), m(1, true), m(2, false));
    }
}
