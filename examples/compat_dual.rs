//! One compatibility problem in-process (run under mpirun; used by
//! tests/compat.rs and for BENCHMARKS.md): loads a scene, detects its
//! contacts, solves one CD step (APGD) for the load F̃ = Bᵀ f_CD (eq 37),
//! then solves eq 36 with every method given and prints, from rank 0, one
//! `key=value` line per method (iterations, seconds per solve, feasibility,
//! forces' largest difference to the first method relative to the largest
//! force) and exits 1 if a method did not converge.
//!
//! Usage: `compat_dual CONFIG.toml [--set KEY=VALUE]... [--method newton|apgd|augmented-lagrangian|interior-point]...
//! [--repeat N] [--free-load ID] [--start zero] [--increments K] [--mu-path M1,M2,...]`
//! - `--free-load ID` adds a unit vertical load to body ID (which has no
//!   contact): the problem is then infeasible on that body.
//! - `--start zero`: Newton from u = 0 instead of the bilateral solve.
//! - `--increments K` (with friction): the load in K equal steps, each
//!   solve from the last one's tangential history; a line per step.
//! - `--mu-path M1,M2,...` (with friction): first the same one-shot
//!   problem (zero history) at μ_s = μ_d = M1, M2, ... in turn, each
//!   Newton from the last one's displacements, then the scene's own μ from
//!   the last of them; a line per μ (`seconds` counts them all).
//!
//! A scene with friction gets the frictional CD step (exact Coulomb) and
//! the frictional compatible solve (Tresca rounds from zero tangential
//! history; newton and apgd only), whose line also gives `rounds`.
use mpi::traits::*;
use stiffgrain::cd::{apgd, operator::ContactOperator, rhs};
use stiffgrain::compat::{dual::Dual, dual_apgd, cd_slip, end_velocities, leave_out_open, newton, relative_stiffness, solve as solve_al, solve_dual, tresca, FrictionIn};
use stiffgrain::world::World as Sim;
use stiffgrain::parallel;
use stiffgrain::petsc::{self, Vector};
use stiffgrain::scene::CompatMethod;

struct Args {
    config: String,
    sets: Vec<String>,
    methods: Vec<CompatMethod>,
    repeat: usize,
    free_load: Option<u64>,
    zero_start: bool,
    increments: usize,
    mu_path: Vec<f64>,
}

fn args() -> Args {
    let mut a = Args { config: String::new(), sets: Vec::new(), methods: Vec::new(), repeat: 1, free_load: None, zero_start: false, increments: 1, mu_path: Vec::new() };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--set" => a.sets.push(it.next().expect("--set KEY=VALUE")),
            "--method" => a.methods.push(match it.next().expect("--method NAME").as_str() {
                "newton" => CompatMethod::Newton,
                "apgd" => CompatMethod::Apgd,
                "augmented-lagrangian" => CompatMethod::AugmentedLagrangian,
                "interior-point" => CompatMethod::InteriorPoint,
                m => panic!("unknown method {m}"),
            }),
            "--repeat" => a.repeat = it.next().and_then(|s| s.parse().ok()).expect("--repeat N"),
            "--free-load" => a.free_load = it.next().and_then(|s| s.parse().ok()),
            "--increments" => a.increments = it.next().and_then(|s| s.parse().ok()).expect("--increments K"),
            "--mu-path" => a.mu_path = it.next().expect("--mu-path M1,M2,...").split(',').map(|m| m.parse().expect("--mu-path: a number")).collect(),
            "--start" => a.zero_start = it.next().as_deref() == Some("zero"),
            "--" => break,
            c => a.config = c.to_string(),
        }
    }
    if a.methods.is_empty() {
        a.methods = vec![CompatMethod::Newton, CompatMethod::Apgd];
    }
    a
}

fn main() {
    let universe = mpi::initialize().expect("MPI");
    let world = universe.world();
    stiffgrain::logging::init(world.rank(), std::env::var_os("COMPAT_DUAL_VERBOSE").is_some());
    let args = args();
    // PETSc options after `--` (e.g. -compat_pc_type gamg).
    let petsc_args: Vec<String> = std::env::args().skip_while(|a| a != "--").skip(1).collect();
    let _petsc = petsc::Petsc::initialize(&petsc_args).expect("PETSc");
    let mut scene = stiffgrain::config::load(std::path::Path::new(&args.config), &args.sets).unwrap_or_else(|e| panic!("{e}"));
    let bodies = stiffgrain::startup::populate(&world, &mut scene, &args.config).unwrap_or_else(|e| panic!("{e}")).bodies;
    let ok = run(&world, &scene, bodies, &args).expect("PETSc error");
    if !parallel::all_ok(&world, ok) {
        std::process::exit(1);
    }
}

fn run(world: &parallel::Comm, scene: &stiffgrain::scene::Scene, bodies: stiffgrain::body::Bodies, args: &Args) -> petsc::Result<bool> {
    let dt = scene.simulation.dt;
    let mut sim = Sim::new(world, scene, bodies, None, true, &Default::default(), 0.0, None);
    sim.detect();
    let frictional = stiffgrain::cd::friction::frictional(scene);
    let mut op = ContactOperator::assemble(world, sim.bodies(), sim.layout(), sim.contacts(), dt, frictional, None)?;
    let ext = stiffgrain::cd::external_velocity(scene, sim.bodies(), sim.layout().n_owned, 0.0, dt);
    let images = stiffgrain::parallel::exchange::image_velocities(world, sim.layout());
    let p = rhs(&op, scene, sim.bodies(), sim.contacts(), &ext, images.as_ref(), 0.0, dt)?;
    let mut f_cd = op.contact_vec()?;
    let nc = sim.contacts().len();
    let (mu_s, mu_d): (Vec<f64>, Vec<f64>) = (0..nc).map(|i| stiffgrain::cd::friction::coefficients(scene, sim.bodies(), sim.contacts(), i)).unzip();
    let (no_slip, no_history) = (vec![false; nc], vec![nalgebra::Vector3::zeros(); nc]);
    let cd = if frictional {
        let coef = stiffgrain::cd::coulomb::Coefficients { mu_s: &mu_s, mu_d: &mu_d, sliding: &no_slip };
        let s = &scene.solver;
        stiffgrain::cd::coulomb::solve(world, &mut op, &p, &mut f_cd, &coef, s.friction_law, &stiffgrain::cd::coulomb::Inner::Apgd { scaled: true }, s.tolerance, s.max_iterations)?.qp
    } else {
        let normal = op.constraint(stiffgrain::cd::friction::Set::Normal);
        apgd::apgd(world, &mut op, &normal, &p, &mut f_cd, scene.solver.tolerance, scene.solver.max_iterations)?
    };
    let mut k = relative_stiffness(scene, sim.bodies(), sim.contacts());
    // As compatible-cd does: contacts CD leaves open are not truss bars.
    let thr = apgd::threshold(&p, scene.solver.tolerance)?;
    let w = end_velocities(&mut op, &f_cd, &p)?;
    let open = leave_out_open(world, &op, &f_cd, &w, thr, &mut k)?;
    if world.rank() == 0 && open > 0 {
        println!("open_contacts={open}");
    }
    // As compatible-cd does: contacts sliding in CD keep CD's ratio f_t/f_n.
    let slip = if frictional { cd_slip(&f_cd, &w, thr.max(cd.residual), &k, &mu_s, &mu_d)? } else { Vec::new() };
    let set = &scene.compat;
    let contacts = parallel::sum_u64(world, sim.contacts().len() as u64);
    let mut reference: Option<Vec<f64>> = None;
    let mut all_ok = true;
    // The config's max_iterations is for its own method.
    let max = |m: CompatMethod, dflt: u32| if set.method == m { set.max_iterations } else { dflt };
    for &method in &args.methods {
        if frictional && method == CompatMethod::AugmentedLagrangian {
            eprintln!("compat_dual: the augmented Lagrangian is frictionless; skipped");
            continue;
        }
        let (mut times, mut cpu) = (Vec::new(), Vec::new());
        let (mut f, mut its, mut lin, mut feas, mut conv) = (Vec::new(), 0u64, 0u64, 0.0, false);
        let mut rounds = 0;
        for _ in 0..args.repeat {
            world.barrier();
            let (t0, c0) = (std::time::Instant::now(), cpu_seconds());
            if frictional {
                let mut s: stiffgrain::scene::CompatSettings = (**set).clone();
                s.method = method;
                s.max_iterations = max(method, if method == CompatMethod::Apgd { 200_000 } else { 100 });
                // The load in `increments` equal steps, each from the last one's history.
                let (mut anchor, mut was) = (no_history.clone(), no_slip.clone());
                (its, lin, rounds) = (0, 0, 0);
                // A continuation in μ: the one-shot problem at each μ of the
                // path, Newton from the last one's displacements.
                let mut warm = None;
                let sliding_total = |s: &[bool]| parallel::sum_u64(world, s.iter().filter(|&&x| x).count() as u64);
                for &m in &args.mu_path {
                    let mu = vec![m; nc];
                    let fr = FrictionIn { coulomb: tresca::Friction { mu_s: &mu, mu_d: &mu, was_sliding: &no_slip, kappa: set.tangential_ratio, slip: &slip }, anchor: &no_history };
                    let (r, _) = solve_dual(world, &op, sim.layout(), sim.bodies(), sim.contacts(), &f_cd, &k, &s, &mut warm, Some(&fr))?;
                    let sliding = sliding_total(r.friction.as_ref().map_or(&[][..], |o| &o.sliding[..]));
                    if world.rank() == 0 {
                        println!("mu={m} newton={} feasibility={:e} converged={} sliding={sliding}", r.outer, r.feasibility, r.converged);
                    }
                }
                for j in 1..=args.increments {
                    let fr = FrictionIn {
                        coulomb: tresca::Friction { mu_s: &mu_s, mu_d: &mu_d, was_sliding: &was, kappa: set.tangential_ratio, slip: &slip },
                        anchor: &anchor,
                    };
                    // (One increment solves f_cd itself: nothing extra in the timed solve.)
                    let scaled = match args.increments {
                        1 => None,
                        n => {
                            let mut load = f_cd.try_clone()?;
                            load.scale(j as f64 / n as f64)?;
                            Some(load)
                        }
                    };
                    let load = scaled.as_ref().unwrap_or(&f_cd);
                    // Cold, as compatible-cd's increments would be, but for the
                    // first after a μ path.
                    let mut w = if j == 1 { warm.take() } else { None };
                    let (r, _) = solve_dual(world, &op, sim.layout(), sim.bodies(), sim.contacts(), load, &k, &s, &mut w, Some(&fr))?;
                    let out = r.friction.expect("frictional");
                    rounds += out.rounds;
                    let (outer, inner) = (r.outer as u64, r.inner);
                    its += if method == CompatMethod::Apgd { inner } else { outer };
                    lin += if method == CompatMethod::Apgd { 0 } else { inner };
                    (f, feas, conv) = (r.f, r.feasibility, r.converged);
                    if args.increments > 1 {
                        let sliding = sliding_total(&out.sliding);
                        if world.rank() == 0 {
                            println!("increment={j} feasibility={feas:e} converged={conv} sliding={sliding}");
                        }
                    }
                    (anchor, was) = (out.anchor, out.sliding);
                }
            } else if method == CompatMethod::AugmentedLagrangian {
                let r = solve_al(world, &mut op, &f_cd, &k, set)?;
                (f, its, lin, feas, conv) = (r.f, r.outer as u64, r.inner, r.feasibility, r.converged);
            } else {
                let mut ft = op.body_vec()?;
                op.b.mult_transpose(&f_cd, &mut ft)?;
                if let Some(id) = args.free_load {
                    add_load(&sim, &mut ft, id)?;
                }
                let dual = Dual::new(world, &op, sim.layout(), sim.bodies(), sim.contacts(), ft, &k, set.p, 0.0)?;
                let u0 = if args.zero_start {
                    let mut u = dual.diag.duplicate()?;
                    u.zero()?;
                    Some(u)
                } else {
                    None
                };
                let r = match method {
                    CompatMethod::Apgd => dual_apgd::solve(&dual, u0, set.feasibility_tolerance, max(CompatMethod::Apgd, 200_000) as u64)?,
                    _ => newton::solve(&dual, sim.bodies(), u0, set.feasibility_tolerance, max(CompatMethod::Newton, 100))?,
                };
                let unsupported = parallel::sum_u64(world, dual.unsupported.len() as u64);
                if world.rank() == 0 && unsupported > 0 {
                    println!("unsupported_bodies={unsupported}");
                }
                (f, its, lin, feas, conv) = (r.f, r.iterations, r.linear, r.feasibility, r.converged);
            }
            cpu.push(cpu_seconds() - c0);
            world.barrier();
            times.push(t0.elapsed().as_secs_f64());
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        cpu.sort_by(f64::total_cmp);
        // Slowest rank's median CPU time (on a shared machine wall time
        // counts the other jobs too; MPI waits spin, so it is an upper bound).
        let cpu_median = parallel::max_f64(world, cpu[cpu.len() / 2]);
        let fmax = parallel::max_f64(world, f.iter().fold(0.0, |m, x| m.max(x.abs())));
        let diff = match &reference {
            Some(r) => parallel::max_f64(world, r.iter().zip(&f).fold(0.0, |m, (a, b)| m.max((a - b).abs()))) / fmax,
            None => 0.0,
        };
        let fsum = parallel::sum_f64(world, f.iter().map(|x| x.abs()).sum());
        if world.rank() == 0 {
            println!(
                "method={method:?} ranks={} contacts={contacts} p={} iterations={its} linear={lin} rounds={rounds} seconds={median:.4} cpu_seconds={cpu_median:.4} \
                 feasibility={feas:e} converged={conv} f_max={fmax:e} f_sum={fsum:e} diff={diff:e}",
                world.size(),
                set.p
            );
        }
        all_ok &= conv;
        if reference.is_none() {
            reference = Some(f);
        }
    }
    Ok(all_ok)
}

/// Adds a unit load along z to body `id` on the rank that owns it.
fn add_load(sim: &Sim, ft: &mut Vector, id: u64) -> petsc::Result<()> {
    let mut v = ft.view_mut()?;
    for i in 0..sim.layout().n_owned {
        if sim.bodies().id[i] == id {
            v[6 * i + 2] += 1.0;
        }
    }
    Ok(())
}

/// CPU time (user + system) of this process so far, from /proc/self/stat
/// (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return 0.0 };
    // Fields after the command name (which is in parentheses).
    let rest = stat.rsplit_once(')').map_or("", |x| x.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime, stime are fields 14 and 15 of stat: 12 and 13 after ')'.
    let ticks: f64 = f.get(11).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0) + f.get(12).and_then(|x| x.parse::<f64>().ok()).unwrap_or(0.0);
    ticks / 100.0
}
