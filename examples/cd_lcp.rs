//! Checks one CD contact problem in-process (run under mpirun; used by
//! tests/cd.rs): loads a scene, detects its contacts, assembles B and p as
//! the `cd` solver does, solves by APGD and by PGS (forward and reverse) and
//! checks that
//! - the APGD forces satisfy the LCP (21) to the solver tolerance: f ≥ 0,
//!   Nf + p ≥ −r, |min(f, Nf + p)| ≤ r with r = tol · ‖p‖∞;
//! - every method gives the same v⁺ = v + Δt M⁻¹ (Bᵀ f + F_ext), even where
//!   the forces differ.
//!
//! Usage: `cd_lcp CONFIG.toml`; prints one `key=value` line from rank 0 and
//! exits 1 (on every rank) if a check fails.
use mpi::traits::*;
use nalgebra::Vector6;
use stiffgrain::cd::{apgd, operator::ContactOperator, pgs, rhs};
use stiffgrain::world::World;
use stiffgrain::parallel;
use stiffgrain::petsc::{self, NormType, Vector};
use stiffgrain::scene::PgsOrder;

/// Δt M⁻¹ Bᵀ f on the owned bodies.
fn velocity_change(op: &ContactOperator, f: &Vector) -> petsc::Result<Vec<Vector6<f64>>> {
    let mut u = op.body_vec()?;
    op.b.mult_transpose(f, &mut u)?;
    let uv = u.view()?;
    Ok((0..op.n_owned).map(|i| op.dt * (op.minv[i] * Vector6::from_column_slice(&uv[6 * i..6 * i + 6]))).collect())
}

fn main() {
    let universe = mpi::initialize().expect("MPI");
    let world = universe.world();
    let _petsc = petsc::Petsc::initialize(&[]).expect("PETSc");
    let path = std::env::args().nth(1).expect("usage: cd_lcp CONFIG.toml");
    let mut scene = stiffgrain::config::load(std::path::Path::new(&path), &[]).unwrap_or_else(|e| panic!("{e}"));
    let bodies = stiffgrain::startup::populate(&world, &mut scene, &path).unwrap_or_else(|e| panic!("{e}")).bodies;
    let ok = run(&world, &scene, bodies).expect("PETSc error");
    if !parallel::all_ok(&world, ok) {
        std::process::exit(1);
    }
}

fn run(world: &parallel::Comm, scene: &stiffgrain::scene::Scene, bodies: stiffgrain::body::Bodies) -> petsc::Result<bool> {
    let dt = scene.simulation.dt;
    let tol = scene.solver.tolerance;
    let max_it = scene.solver.max_iterations;
    let mut sim = World::new(world, scene, bodies, None, true, &Default::default(), 0.0, None);
    sim.detect();
    let mut op = ContactOperator::assemble(world, sim.bodies(), sim.layout(), sim.contacts(), dt, false, None)?;
    let ext = stiffgrain::cd::external_velocity(scene, sim.bodies(), sim.layout().n_owned, 0.0, dt);
    let images = stiffgrain::parallel::exchange::image_velocities(world, sim.layout());
    let p = rhs(&op, scene, sim.bodies(), sim.contacts(), &ext, images.as_ref(), 0.0, dt)?;
    let normal = op.constraint(stiffgrain::cd::friction::Set::Normal);
    let mut f = op.contact_vec()?;
    let res = apgd::apgd(world, &mut op, &normal, &p, &mut f, tol, max_it)?;
    let mut nf = op.contact_vec()?;
    op.apply_n(&f, &mut nf)?;
    let thr = res.threshold;
    let (mut neg, mut viol, mut compl, mut positive) = (0.0f64, 0.0f64, 0.0f64, 0u64);
    {
        let (fv, nv, pv) = (f.view()?, nf.view()?, p.view()?);
        for i in 0..fv.len() {
            let w = nv[i] + pv[i];
            neg = neg.min(fv[i]);
            if op.active[i] {
                viol = viol.min(w);
                compl = compl.max(fv[i].min(w).abs());
                positive += (fv[i] > 0.0) as u64;
            }
        }
    }
    let neg = -parallel::max_f64(world, -neg);
    let viol = -parallel::max_f64(world, -viol);
    let compl = parallel::max_f64(world, compl);
    let positive = parallel::sum_u64(world, positive);
    let contacts = parallel::sum_u64(world, sim.contacts().len() as u64);
    let fnorm = f.norm(NormType::Infinity)?;

    let dv_apgd = velocity_change(&op, &f)?;
    let vscale = (0..op.n_owned).map(|i| sim.bodies().velocity[i].norm()).fold(0.0, f64::max) + scene.simulation.gravity.norm() * dt;
    let vscale = parallel::max_f64(world, vscale);
    let (mut dv_diff, mut f_diff) = (0.0f64, 0.0f64);
    let mut pgs_iters = Vec::new();
    for order in [PgsOrder::Forward, PgsOrder::Reverse] {
        let mut g = op.contact_vec()?;
        let r = pgs::pgs(world, &op, sim.layout(), sim.bodies().len(), &p, &mut g, tol, max_it, order)?;
        pgs_iters.push(r.iterations);
        let dv = velocity_change(&op, &g)?;
        let d = dv.iter().zip(&dv_apgd).map(|(a, b)| (a - b).amax()).fold(0.0, f64::max);
        dv_diff = dv_diff.max(parallel::max_f64(world, d));
        let mut diff = g.try_clone()?;
        diff.axpy(-1.0, &f)?;
        f_diff = f_diff.max(diff.norm(NormType::Infinity)?);
    }
    let lcp_ok = res.converged && neg >= 0.0 && viol >= -thr * (1.0 + 1e-9) && compl <= thr * (1.0 + 1e-9) && positive > 0;
    // v⁺ agrees to the solver tolerance (relative to the velocity scale).
    let v_ok = dv_diff <= 1e3 * tol * vscale;
    if world.rank() == 0 {
        println!(
            "contacts={contacts} positive={positive} apgd_iterations={} residual={:e} threshold={thr:e} min_f={neg:e} \
             min_w={viol:e} compl={compl:e} f_max={fnorm:e} pgs_iterations={pgs_iters:?} f_diff={f_diff:e} \
             dv_diff={dv_diff:e} v_scale={vscale:e} lcp_ok={lcp_ok} v_ok={v_ok}",
            res.iterations, res.residual
        );
    }
    Ok(lcp_ok && v_ok)
}
