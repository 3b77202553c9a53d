//! Compatible frictional forces (`compatible-cd` with friction): the rigid
//! limit of a network of normal and tangential springs (k_t = κ k_n) with
//! Coulomb sliders. Where no contact slides the forces are those of the
//! linear spring network on the rigid geometry, which each test solves
//! here by hand (dense 6 × 6 blocks per free body, nalgebra's LU or SVD):
//! a cube on four corners loaded off-centre, a sphere in a V-groove (under
//! Hertz too, against Mindlin's incremental springs integrated along a
//! ramp), and
//! the n = 8 cannonball pyramid with its layers apart in-plane, on 1, 2
//! and 3 ranks. Above its threshold the V-groove's sphere gives the
//! Coulomb-bounded statics. The pyramids are also run under the implicit
//! DEM with the same springs and the load ramped to rest, at two
//! stiffnesses extrapolated to the rigid limit; with touching in-layer
//! neighbours and μ = 0.3 the DEM and the compatible forces slide at the
//! same contacts. In a pour, grains that slide in a CD step carry μ f_n
//! along CD's friction. A solve that stops short reports CD's forces, in
//! equilibrium. On the n = 18 pyramid with touching neighbours, loaded by
//! the nonsmooth Gauss–Seidel's forces, the contacts that slide are left
//! free and the rest are checked to be the springs' forces of one set of
//! body displacements (a least-squares residual by CGLS), on 2 and 3
//! ranks.
mod common;
use common::frames::{frames, Frame};
use nalgebra::{DMatrix, DVector, Matrix3, Vector3};
use std::path::Path;

const WALL: u64 = 1 << 63;

fn v3(a: [f64; 3]) -> Vector3<f64> {
    Vector3::from(a)
}

fn skew(r: &Vector3<f64>) -> Matrix3<f64> {
    r.cross_matrix()
}

/// J with J x = the displacement of the body point at `point` for the body
/// displacement x = (translation, rotation) about `centre`.
fn jacobian(point: Vector3<f64>, centre: Vector3<f64>) -> nalgebra::SMatrix<f64, 3, 6> {
    let mut j = nalgebra::SMatrix::<f64, 3, 6>::zeros();
    j.fixed_view_mut::<3, 3>(0, 0).copy_from(&Matrix3::identity());
    j.fixed_view_mut::<3, 3>(0, 3).copy_from(&(-skew(&(point - centre))));
    j
}

/// The linear spring network on the geometry of `fr`'s contacts that carry
/// a compatible force: per contact K = k (n nᵀ + κ (I − n nᵀ)) (k = 1)
/// between the contact points of its bodies; `free(id)` numbers the free
/// bodies (walls and fixed bodies are None); `load` is the external force
/// and moment on each free body. Returns the force on body b of every such
/// contact (frame order; None for the others). Singular modes (a sphere
/// rolling along a groove) that the load does not drive are left out by
/// the SVD.
fn network(fr: &Frame, free: &dyn Fn(u64) -> Option<usize>, n_free: usize, load: &[[f64; 6]], kappa: f64) -> Vec<Option<Vector3<f64>>> {
    let n = 6 * n_free;
    let mut a = DMatrix::<f64>::zeros(n, n);
    // Per contact: (index of a, index of b, J_a, J_b, K) with d = J_b x_b − J_a x_a.
    type Link = (Option<usize>, Option<usize>, nalgebra::SMatrix<f64, 3, 6>, nalgebra::SMatrix<f64, 3, 6>, Matrix3<f64>);
    let mut links: Vec<Option<Link>> = Vec::new();
    for c in &fr.contacts {
        if c.force_compatible <= 0.0 {
            links.push(None);
            continue;
        }
        let nrm = v3(c.normal);
        let k = nrm * nrm.transpose() + kappa * (Matrix3::identity() - nrm * nrm.transpose());
        let jac = |id: u64| if id < WALL { jacobian(v3(c.point), v3(fr.pos[id as usize])) } else { nalgebra::SMatrix::<f64, 3, 6>::zeros() };
        let (ia, ib) = (free(c.body_a), if c.body_b < WALL { free(c.body_b) } else { None });
        let (ja, jb) = (jac(c.body_a), jac(c.body_b));
        // f_b = −K d; body b gets J_bᵀ f_b, body a −J_aᵀ f_b.
        for (i, ji, si) in [(ia, &ja, -1.0), (ib, &jb, 1.0)] {
            for (j, jj, sj) in [(ia, &ja, -1.0), (ib, &jb, 1.0)] {
                if let (Some(i), Some(j)) = (i, j) {
                    let blk = ji.transpose() * k * jj * (si * sj);
                    let mut v = a.view_mut((6 * i, 6 * j), (6, 6));
                    v += blk;
                }
            }
        }
        links.push(Some((ia, ib, ja, jb, k)));
    }
    let rhs = DVector::from_iterator(n, load.iter().flat_map(|l| l.iter().copied()));
    let x = a.svd(true, true).solve(&rhs, 1e-12).unwrap();
    let at = |i: Option<usize>| i.map_or_else(nalgebra::SVector::<f64, 6>::zeros, |i| x.fixed_rows::<6>(6 * i).into_owned());
    links.iter().map(|l| l.as_ref().map(|(ia, ib, ja, jb, k)| -(k * (jb * at(*ib) - ja * at(*ia))))).collect()
}

/// The compatible force on body b of contact `c` (normal and tangential).
fn compatible(c: &common::frames::Contact) -> Vector3<f64> {
    v3(c.normal) * c.force_compatible + v3(c.force_compatible_tangent)
}

/// max over contacts |f − f_network| / max |f_network|, and that scale.
fn mismatch(fr: &Frame, want: &[Option<Vector3<f64>>]) -> (f64, f64) {
    let scale = want.iter().flatten().map(|f| f.norm()).fold(0.0, f64::max);
    let err = fr.contacts.iter().zip(want).filter_map(|(c, w)| w.map(|w| (compatible(c) - w).norm())).fold(0.0, f64::max);
    (err / scale, scale)
}

/// The frames of `text` run on `np` ranks; every compatible solve converged.
fn run(np: usize, dir: &Path, name: &str, text: &str) -> Vec<Frame> {
    let out = common::run_config(np, dir, name, text).0;
    let s = common::frames::summary(&out);
    assert_eq!(s["compatibility_not_converged"], 0, "{name}: {s}");
    assert!(s["compatibility_solves"].as_u64().unwrap() > 0 && s["compatibility_friction_solves"].as_u64().unwrap() > 0, "{name}: {s}");
    frames(&out)
}

/// A 0.1 m cube (1.5 kg) on its four bottom corners (vertex–face contacts
/// with the floor), under gravity and a load at an off-centre point.
fn table_text(kappa: f64) -> String {
    format!(
        "[simulation]\nsolver = \"compatible-cd\"\nt_end = 0.003\ndt = 1e-3\ngravity = [0.0, 0.0, -10.0]\n\n\
         [[material]]\nname = \"block\"\ndensity = 1500.0\nfriction = 10.0\n\n\
         [[shape]]\nname = \"cube\"\nkind = \"box\"\nsize = [0.1, 0.1, 0.1]\n\n\
         [[body]]\nshape = \"cube\"\nposition = [0.0, 0.0, 0.05]\n\n\
         [[load]]\nbody = 0\nforce = [3.0, 1.0, -5.0]\npoint = [0.02, -0.03, 0.05]\n\n\
         [[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [0.0, 0.0, 1.0]\n\n\
         [contact]\ndistance = 0.001\nskin = 0.002\n\n\
         [solver]\ntolerance = 1e-12\n\n\
         [compatibility]\ntangential_ratio = {kappa:?}\n\n\
         [output]\ndir = \"OUTDIR\"\nevery = 1\n"
    )
}

#[test]
fn a_table_loaded_off_centre_carries_the_forces_of_the_linear_spring_network() {
    let dir = tempfile::tempdir().unwrap();
    let (force, point) = (Vector3::new(3.0, 1.0, -5.0), Vector3::new(0.02, -0.03, 0.05));
    let moment = point.cross(&force);
    let w = force + Vector3::new(0.0, 0.0, -15.0);
    let load = [[w.x, w.y, w.z, moment.x, moment.y, moment.z]];
    for (kappa, np) in [(2.0 / 7.0, 1), (1.0, 1), (2.0 / 7.0, 2)] {
        let fr = run(np, dir.path(), &format!("table-{kappa:.3}"), &table_text(kappa));
        for f in &fr[1..] {
            assert_eq!(f.contacts.len(), 4, "four legs");
            let want = network(f, &|id| (id == 0).then_some(0), 1, &load, kappa);
            let (err, scale) = mismatch(f, &want);
            eprintln!("κ = {kappa:.3}, {np} rank(s), t = {:.3}: legs within {err:.2e} of the network (largest leg force {scale:.3} N)", f.t);
            assert!(err <= 1e-9, "κ = {kappa}, {np} rank(s), t = {}: the legs are {err:e} off the spring network", f.t);
            // Tangential forces there are: the network is not CD's answer.
            assert!(f.contacts.iter().all(|c| v3(c.force_compatible_tangent).norm() > 0.01 * scale));
        }
    }
}

/// A sphere (r = 0.05, 1500 kg/m³) in a V-groove of two walls at β = 30°
/// to the floor, under gravity (−10 z) and a horizontal load `fx` across
/// the groove; μ = `mu`; `extra` lines in `[compatibility]`.
fn groove_text(fx: f64, mu: f64, extra: &str) -> String {
    let (s, c) = (0.5f64, 0.75f64.sqrt());
    let z = 0.05 / c;
    format!(
        "[simulation]\nsolver = \"compatible-cd\"\nt_end = 0.003\ndt = 1e-3\ngravity = [0.0, 0.0, -10.0]\n\n\
         [[material]]\nname = \"steel\"\ndensity = 1500.0\nfriction = {mu:?}\n\n\
         [[shape]]\nname = \"ball\"\nkind = \"sphere\"\nradius = 0.05\n\n\
         [[body]]\nshape = \"ball\"\nposition = [0.0, 0.0, {z:?}]\n\n\
         [[load]]\nbody = 0\nforce = [{fx:?}, 0.0, 0.0]\n\n\
         [[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [{s:?}, 0.0, {c:?}]\n\n\
         [[wall]]\npoint = [0.0, 0.0, 0.0]\nnormal = [{:?}, 0.0, {c:?}]\n\n\
         [contact]\ndistance = 0.001\nskin = 0.002\n\n\
         [solver]\ntolerance = 1e-12\n\n\
         [compatibility]\n{extra}\n\n\
         [output]\ndir = \"OUTDIR\"\nevery = 1\n",
        -s
    )
}

#[test]
fn a_sphere_in_a_v_groove_sticks_with_the_network_forces_then_slides_at_mu_n() {
    let dir = tempfile::tempdir().unwrap();
    let (mu, beta) = (0.25, 30f64.to_radians());
    let mg = 1500.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.05f64.powi(3) * 10.0;
    for np in [1, 2] {
        // Below the threshold: the network, whose tangential forces wedge
        // the sphere (|f_t| / f_n = 0.19 at the unloaded wall).
        let fx = 0.5;
        let fr = run(np, dir.path(), &format!("groove-stick-{np}"), &groove_text(fx, mu, ""));
        let load = [[fx, 0.0, -mg, 0.0, 0.0, 0.0]];
        for f in &fr[1..] {
            let want = network(f, &|id| (id == 0).then_some(0), 1, &load, 2.0 / 7.0);
            let (err, _) = mismatch(f, &want);
            let ratio = f.contacts.iter().map(|c| v3(c.force_compatible_tangent).norm() / c.force_compatible).fold(0.0, f64::max);
            eprintln!("{np} rank(s), F = {fx}: within {err:.2e} of the network, largest |f_t|/f_n = {ratio:.4}");
            assert!(err <= 1e-9, "{np} rank(s): sticking sphere {err:e} off the network");
            assert!(ratio < mu && ratio > 0.1);
        }
        // Above it the network would need |f_t| > μ f_n at the unloaded
        // wall, which slides: |f_t| = μ f_n there, equal tangential forces
        // (moment balance about the centre), and the statics
        // (N1 − N2) sin β = −F, (N1 + N2) cos β + 2 μ N1 sin β = m g.
        let fx = 2.0;
        let fr = run(np, dir.path(), &format!("groove-slide-{np}"), &groove_text(fx, mu, ""));
        let n1 = (mg - fx / beta.tan()) / (2.0 * beta.cos() + 2.0 * mu * beta.sin());
        let n2 = n1 + fx / beta.sin();
        for f in &fr[1..] {
            // The wall with normal (+sin β, 0, cos β) is the unloaded one.
            let by = |sx: f64| f.contacts.iter().find(|c| c.normal[0] * sx < 0.0).unwrap();
            let (c1, c2) = (by(1.0), by(-1.0));
            let (t1, t2) = (v3(c1.force_compatible_tangent).norm(), v3(c2.force_compatible_tangent).norm());
            let e = [(c1.force_compatible - n1) / n1, (c2.force_compatible - n2) / n2, (t1 - mu * n1) / (mu * n1), (t2 - mu * n1) / (mu * n1)];
            let err = e.iter().map(|x| x.abs()).fold(0.0, f64::max);
            eprintln!("{np} rank(s), F = {fx}: N1 = {:.9} (statics {n1:.9}), N2 = {:.9} ({n2:.9}), |f_t| = {t1:.9}, {t2:.9} (μ N1 = {:.9})", c1.force_compatible, c2.force_compatible, mu * n1);
            assert!(err <= 1e-8, "{np} rank(s): sliding sphere {err:e} off the Coulomb statics");
            let v = f.vel[0].iter().map(|x| x.abs()).fold(0.0, f64::max);
            assert!(v <= 1e-9, "the rigid sphere stays: CD finds admissible forces (speed {v})");
        }
    }
}

/// The Hertzian spring network (f_n = k δ^{3/2}, k = 1: forces do not
/// depend on k in the rigid limit) of body 0 against the walls of `fr`'s
/// contacts, with Mindlin's incremental tangential springs,
/// df_t = κ ∂f_n/∂δ ds, loaded quasi-statically from unloaded contacts by
/// `load` (force and moment on body 0) ramped in `steps` increments graded
/// as (j/steps)³ (k_t ∝ δ^{1/2} changes fastest at the start); each
/// increment by Newton on the body's displacement (SVD steps: modes the
/// load does not drive stay still) with k_t at the increment's mid-point
/// approach, from the previous increment's state. No contact slides.
/// Returns the force on the wall of every contact (frame order).
fn hertz_ramp(fr: &Frame, load: &[f64; 6], kappa: f64, steps: usize) -> Vec<Vector3<f64>> {
    type V6 = nalgebra::SVector<f64, 6>;
    let (x0, cs) = (v3(fr.pos[0]), &fr.contacts);
    assert!(cs.iter().all(|c| c.body_a == 0 && c.body_b >= WALL), "body 0 against walls");
    let js: Vec<_> = cs.iter().map(|c| jacobian(v3(c.point), x0)).collect();
    // d = −J x: the wall's displacement relative to the body's point.
    let approach = |i: usize, x: &V6| v3(cs[i].normal).dot(&(js[i] * x)).max(0.0);
    // Force on the wall at the increment's end x, from the state (x_old, f_t_old); and its f_t.
    let force = |i: usize, x: &V6, x_old: &V6, ft_old: &Vector3<f64>| {
        let n = v3(cs[i].normal);
        let tangential = |x: &V6| {
            let d = -(js[i] * x);
            d - n * n.dot(&d)
        };
        let kt = kappa * 1.5 * (0.5 * (approach(i, x) + approach(i, x_old))).sqrt();
        let ft = ft_old - kt * (tangential(x) - tangential(x_old));
        (n * approach(i, x).powf(1.5) + ft, ft)
    };
    let load = V6::from_column_slice(load);
    let (mut x, mut f_t) = (V6::zeros(), vec![Vector3::zeros(); cs.len()]);
    for step in 1..=steps {
        let target = load * (step as f64 / steps as f64).powi(3);
        let x_old = x;
        // The body in equilibrium: the contacts push it with −(force on the wall).
        let residual = |x: &V6| (0..cs.len()).fold(target, |r, i| r - js[i].transpose() * force(i, x, &x_old, &f_t[i]).0);
        if step == 1 {
            // Start the first increment loaded: the linear network's shape, small.
            let a = js.iter().zip(cs).fold(nalgebra::SMatrix::<f64, 6, 6>::zeros(), |a, (j, c)| {
                let n = v3(c.normal);
                a + j.transpose() * (n * n.transpose() + kappa * (Matrix3::identity() - n * n.transpose())) * j
            });
            x = a.svd(true, true).solve(&target, 1e-12).unwrap() * 1e-3;
        }
        for _ in 0..100 {
            let r = residual(&x);
            if r.norm() <= 1e-14 * target.norm() {
                break;
            }
            let h = 1e-7 * x.norm().max(1e-300);
            let jm = nalgebra::SMatrix::<f64, 6, 6>::from_fn(|_, _| 0.0);
            let jm = (0..6).fold(jm, |mut jm, k| {
                let mut xh = x;
                xh[k] += h;
                jm.set_column(k, &((residual(&xh) - r) / h));
                jm
            });
            let dx = jm.svd(true, true).solve(&(-r), 1e-10 * jm.norm()).unwrap();
            let mut lambda = 1.0;
            while residual(&(x + lambda * dx)).norm() > r.norm() && lambda > 1e-6 {
                lambda *= 0.5;
            }
            x += lambda * dx;
        }
        for (i, ft) in f_t.iter_mut().enumerate() {
            *ft = force(i, &x, &x_old, ft).1;
        }
    }
    (0..cs.len()).map(|i| v3(cs[i].normal) * approach(i, &x).powf(1.5) + f_t[i]).collect()
}

#[test]
fn a_hertzian_sphere_in_a_v_groove_carries_the_forces_of_mindlins_springs_loaded_by_a_ramp() {
    // Under Hertz (p = 5/2) the tangential spring of a contact loaded
    // quasi-statically from rest is Mindlin's incremental one integrated
    // along the load's ramp. The groove couples normal and tangential
    // forces (the tangential forces wedge the sphere), so the network with
    // Mindlin's tangent κ ∂f_n/∂δ taken as the secant (the ramp of 3/2 κ)
    // gives other forces, which the test checks it would tell apart.
    let dir = tempfile::tempdir().unwrap();
    let (fx, mu, kappa) = (0.5, 0.25, 2.0 / 7.0);
    let mg = 1500.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.05f64.powi(3) * 10.0;
    let load = [fx, 0.0, -mg, 0.0, 0.0, 0.0];
    for np in [1, 2] {
        let fr = run(np, dir.path(), &format!("groove-hertz-{np}"), &groove_text(fx, mu, "law = \"hertz\""));
        for f in &fr[1..] {
            let (coarse, fine) = (hertz_ramp(f, &load, kappa, 200), hertz_ramp(f, &load, kappa, 400));
            // The mid-point rule's error falls as steps⁻²: Richardson's limit.
            let limit: Vec<_> = fine.iter().zip(&coarse).map(|(a, b)| a + (a - b) / 3.0).collect();
            let tangent = hertz_ramp(f, &load, 1.5 * kappa, 400);
            let scale = fine.iter().map(|f| f.norm()).fold(0.0, f64::max);
            let apart = |a: &[Vector3<f64>], b: &[Vector3<f64>]| a.iter().zip(b).map(|(a, b)| (a - b).norm()).fold(0.0, f64::max) / scale;
            let got: Vec<_> = f.contacts.iter().map(compatible).collect();
            let (err, ramp, other) = (apart(&got, &limit), apart(&fine, &coarse), apart(&fine, &tangent));
            let ratio = fine.iter().zip(&f.contacts).map(|(w, c)| (w - v3(c.normal) * v3(c.normal).dot(w)).norm() / v3(c.normal).dot(w)).fold(0.0, f64::max);
            eprintln!("{np} rank(s), t = {:.3}: within {err:.2e} of Mindlin's ramp (200 and 400 steps {ramp:.1e} apart, |f_t|/f_n up to {ratio:.3}); the tangent as secant {other:.2e} away", f.t);
            assert!(ratio < mu, "the ramp must not slide: |f_t|/f_n = {ratio}");
            assert!(ramp <= 1e-5, "the ramp's own discretisation {ramp:e}");
            assert!(other >= 1e-2, "the test tells the laws apart ({other:e})");
            assert!(err <= 1e-8, "{np} rank(s): {err:e} off Mindlin's ramp");
        }
    }
}

/// The implicit DEM's activation gap ḡ in the pyramids (1 % of r): its
/// spheres are ḡ/2 smaller than the rigid ones at the same centres, so
/// its contacts rest at gap ḡ exactly where the rigid spheres touch.
const GBAR: f64 = 1e-4;

/// The n = 8 cannonball pyramid, r = 1 cm, 2000 kg/m³, base fixed, spheres
/// `gap` apart in each layer and every layer resting exactly on the one
/// below (centre distance 2r), μ = `mu`, κ = `kappa`: explicit bodies (ids
/// in layer order, the base first). Under compatible-cd gravity acts from
/// the first step. With `dem = Some(ε₁)` the same centres under the
/// implicit DEM: Hookean (n₁ = 1) with ε_t = κ ε₁, spheres of radius
/// r − ḡ/2 and the same masses, and instead of gravity a load m g on every
/// free sphere ramped over 10 steps of 0.1 s, then 10 more to rest
/// (critical damping; Newmark β = 0.36, γ = 0.7).
fn pyramid_text(gap: f64, kappa: f64, mu: f64, every: u32, dem: Option<f64>) -> (String, usize) {
    let (n, r) = (8, 0.01f64);
    let d = 2.0 * r + gap;
    let dz = (4.0 * r * r - d * d / 2.0).sqrt();
    let (radius, density) = match dem {
        Some(_) => (r - GBAR / 2.0, 2000.0 * (r / (r - GBAR / 2.0)).powi(3)),
        None => (r, 2000.0),
    };
    let weight = 2000.0 * 4.0 / 3.0 * std::f64::consts::PI * r.powi(3) * 9.81;
    let (mut bodies, mut loads) = (String::new(), String::new());
    let mut base = 0;
    for layer in 0..n {
        let m = n - layer;
        let half = (m as f64 - 1.0) / 2.0;
        for j in 0..m {
            for i in 0..m {
                let p = [(i as f64 - half) * d, (j as f64 - half) * d, r + layer as f64 * dz];
                let id = bodies.matches("[[body]]").count();
                bodies += &format!("[[body]]\nshape = \"ball\"\nposition = {p:?}\nfixed = {}\n\n", layer == 0);
                base += (layer == 0) as usize;
                if layer > 0 {
                    loads += &format!("[[load]]\nbody = {id}\nforce = [0.0, 0.0, {:?}]\nt_ramp_end = 1.0\n\n", -weight);
                }
            }
        }
    }
    let head = |solver: &str, t_end: f64, dt: f64, g: f64| {
        format!(
            "[simulation]\nsolver = \"{solver}\"\nt_end = {t_end:?}\ndt = {dt:?}\ngravity = [0.0, 0.0, {:?}]\n\n\
             [[material]]\nname = \"grain\"\ndensity = {density:?}\nfriction = {mu:?}\n\n\
             [[shape]]\nname = \"ball\"\nkind = \"sphere\"\nradius = {radius:?}\n\n{bodies}",
            -g
        )
    };
    let text = match dem {
        None => format!(
            "{}[contact]\ndistance = {:?}\nskin = {:?}\n\n\
             [solver]\ntolerance = 1e-10\nmax_iterations = 100000\n\n\
             [compatibility]\ntangential_ratio = {kappa:?}\n\n\
             [output]\ndir = \"OUTDIR\"\nevery = {every}\n",
            head("compatible-cd", 0.002, 1e-3, 9.81),
            0.5 * gap.max(GBAR),
            gap.max(GBAR)
        ),
        Some(eps1) => format!(
            "{}{loads}[contact]\ndistance = {:?}\n\n\
             [dem]\ngbar = {GBAR:?}\nf = 0.5\nn1 = 1.0\neps1 = {eps1:?}\neps_t = {:?}\ndamping = 1.0\ndamping_t = 1.0\nbeta = 0.36\ngamma = 0.7\n\n\
             [output]\ndir = \"OUTDIR\"\nevery = {every}\n",
            head("dem", 2.0, 0.1, 0.0),
            1.5 * GBAR,
            kappa * eps1
        ),
    };
    (text, base)
}

/// The DEM's base reactions at ε₁ = 1e6 and 2e6 N/m on `np` ranks,
/// extrapolated linearly in 1/ε₁ to the rigid limit (Richardson: the
/// error is the O(f/ε₁) change of geometry), with the two themselves.
/// The stiffer run's last frame comes with them.
fn dem_limit(np: usize, dir: &Path, name: &str, gap: f64, kappa: f64, mu: f64) -> ([Vec<(u64, [f64; 3])>; 3], Frame) {
    let mut at = Vec::new();
    let mut last = None;
    for eps1 in [1e6, 2e6] {
        let text = pyramid_text(gap, kappa, mu, 1, Some(eps1)).0;
        let out = common::run_config(np, dir, &format!("{name}-dem-{eps1:e}"), &text).0;
        at.push(common::reactions(&out));
        last = frames(&out).pop();
    }
    let limit = at[1].iter().zip(&at[0]).map(|(b, a)| (b.0, [0, 1, 2].map(|k| 2.0 * b.1[k] - a.1[k]))).collect();
    let [soft, stiff]: [_; 2] = at.try_into().unwrap();
    ([limit, soft, stiff], last.unwrap())
}

/// The 2-norm of the difference of two sets of reactions, relative to `b`'s.
fn apart(a: &[(u64, [f64; 3])], b: &[(u64, [f64; 3])]) -> f64 {
    assert_eq!(a.iter().map(|r| r.0).collect::<Vec<_>>(), b.iter().map(|r| r.0).collect::<Vec<_>>());
    let d: f64 = a.iter().zip(b).map(|(x, y)| (v3(x.1) - v3(y.1)).norm_squared()).sum();
    let s: f64 = b.iter().map(|y| v3(y.1).norm_squared()).sum();
    (d / s).sqrt()
}

#[test]
fn the_n8_pyramid_without_in_layer_contacts_carries_the_linear_spring_network_on_1_2_3_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let m = 2000.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.01f64.powi(3);
    for (kappa, ranks) in [(2.0 / 7.0, &[1, 2, 3][..]), (1.0, &[2][..])] {
        let (text, base) = pyramid_text(2e-4, kappa, 10.0, 1, None);
        let mut reactions = Vec::new();
        for &np in ranks {
            let out = common::run_config(np, dir.path(), &format!("pyramid-{kappa:.3}"), &text).0;
            let fr = frames(&out);
            let f = fr.last().unwrap();
            let n_free = f.pos.len() - base;
            assert!(f.contacts.iter().filter(|c| c.force_compatible > 0.0).all(|c| (v3(f.pos[c.body_a as usize]) - v3(f.pos[c.body_b as usize])).norm() < 0.0201));
            let load: Vec<[f64; 6]> = (0..n_free).map(|_| [0.0, 0.0, -m * 9.81, 0.0, 0.0, 0.0]).collect();
            let want = network(f, &|id| (id as usize >= base).then(|| id as usize - base), n_free, &load, kappa);
            // The base's reactions: the forces on the fixed spheres.
            let mut net = vec![Vector3::zeros(); base];
            for (c, w) in f.contacts.iter().zip(&want) {
                if let (Some(w), true) = (w, (c.body_a as usize) < base) {
                    net[c.body_a as usize] -= w;
                }
            }
            let got = common::reactions(&out);
            assert_eq!(got.len(), base);
            let diff: f64 = got.iter().map(|(id, r)| (v3(*r) - net[*id as usize]).norm_squared()).sum::<f64>().sqrt();
            let size: f64 = net.iter().map(|r| r.norm_squared()).sum::<f64>().sqrt();
            let (err, _) = mismatch(f, &want);
            let tangential = f.contacts.iter().map(|c| v3(c.force_compatible_tangent).norm() / c.force_compatible.max(1e-300)).fold(0.0, f64::max);
            eprintln!(
                "κ = {kappa:.3}, {np} rank(s): base reactions within {:.2e} (2-norm, relative) of the network, contact forces within {err:.2e}; largest |f_t|/f_n = {tangential:.3}",
                diff / size
            );
            assert!(diff / size <= 1e-6, "κ = {kappa}, {np} rank(s): base reactions {:e} off the spring network", diff / size);
            assert!(err <= 1e-6);
            // The project's implicit DEM with the same springs, the load
            // ramped to rest, at two stiffnesses extrapolated to the limit.
            let ([limit, soft, stiff], _) = dem_limit(np, dir.path(), &format!("pyramid-{kappa:.3}"), 2e-4, kappa, 10.0);
            let e = apart(&limit, &got);
            eprintln!(
                "κ = {kappa:.3}, {np} rank(s): the DEM's base reactions within {:.2e} (ε₁ = 1e6), {:.2e} (2e6), {e:.2e} (extrapolated)",
                apart(&soft, &got),
                apart(&stiff, &got)
            );
            assert!(e <= 1e-4, "κ = {kappa}, {np} rank(s): the extrapolated DEM {e:e} off the compatible forces");
            reactions.push(got);
        }
        for r in &reactions[1..] {
            let d = r.iter().zip(&reactions[0]).map(|(a, b)| (v3(a.1) - v3(b.1)).norm()).fold(0.0, f64::max);
            assert!(d <= 1e-9, "κ = {kappa}: reactions {d} N apart between rank counts");
        }
    }
}

/// The (body_a, body_b) pairs of `fr` whose tangential force is at the
/// Coulomb bound μ f_n (to 1e-3), and how many pairs carry a force.
fn at_the_bound(fr: &Frame, mu: f64, compatible: bool) -> (Vec<(u64, u64)>, usize) {
    let force = |c: &common::frames::Contact| match compatible {
        true => (c.force_compatible, v3(c.force_compatible_tangent).norm()),
        false => (c.force_normal, v3(c.force_tangent).norm()),
    };
    let loaded: Vec<_> = fr.contacts.iter().filter(|c| force(c).0 > 0.0).collect();
    let mut pairs: Vec<_> = loaded.iter().filter(|c| force(c).1 >= (1.0 - 1e-3) * mu * force(c).0).map(|c| (c.body_a, c.body_b)).collect();
    pairs.sort();
    (pairs, loaded.len())
}

#[test]
fn the_n8_pyramid_with_touching_neighbours_slides_where_the_dem_slides() {
    // Touching in-layer neighbours, μ = 0.3: no consistent no-slip state
    // exists, so contacts slide. The compatible forces (gravity at once)
    // against the DEM with the load ramped over 10 steps, extrapolated;
    // and how far the DEM itself moves when the load comes in one step.
    let dir = tempfile::tempdir().unwrap();
    let (kappa, mu) = (2.0 / 7.0, 0.3);
    let (text, _) = pyramid_text(0.0, kappa, mu, 1, None);
    let out = common::run_config(2, dir.path(), "touching", &text).0;
    let got = common::reactions(&out);
    let compat = frames(&out).pop().unwrap();
    let ([limit, soft, stiff], dem) = dem_limit(2, dir.path(), "touching", 0.0, kappa, mu);
    let sudden = pyramid_text(0.0, kappa, mu, 1000, Some(2e6)).0.replace("t_ramp_end = 1.0", "t_ramp_end = 0.1");
    let sudden = common::reactions(&common::run_config(2, dir.path(), "touching-sudden", &sudden).0);
    let e = apart(&limit, &got);
    let (slid, loaded) = at_the_bound(&compat, mu, true);
    let (dem_slid, dem_loaded) = at_the_bound(&dem, mu, false);
    eprintln!(
        "touching, μ = {mu}: the DEM's base reactions within {:.2e} (ε₁ = 1e6), {:.2e} (2e6), {e:.2e} (extrapolated) of the compatible ones; \
         the DEM loaded in one step instead of ten: {:.2e} from the ramp (2e6); at the Coulomb bound: {} of {loaded} loaded contacts (compatible), {} of {dem_loaded} (DEM, 2e6)",
        apart(&soft, &got),
        apart(&stiff, &got),
        apart(&sudden, &stiff),
        slid.len(),
        dem_slid.len()
    );
    assert!(e <= 1e-4, "the extrapolated DEM {e:e} off the compatible forces");
    assert!(!slid.is_empty() && loaded == dem_loaded && slid == dem_slid, "compatible and DEM slide at different contacts");
}

#[test]
fn apgd_gives_newtons_compatible_frictional_forces() {
    // The same elastic–frictional problem by Tresca rounds of APGD: the
    // table (no slip) and the groove's sphere above its threshold (slip).
    let dir = tempfile::tempdir().unwrap();
    for (name, newton, apgd) in [
        ("table", table_text(2.0 / 7.0), table_text(2.0 / 7.0).replace("[compatibility]\n", "[compatibility]\nmethod = \"apgd\"\n")),
        ("groove", groove_text(2.0, 0.25, ""), groove_text(2.0, 0.25, "method = \"apgd\"")),
    ] {
        let a = run(1, dir.path(), &format!("{name}-newton"), &newton);
        let b = run(1, dir.path(), &format!("{name}-apgd"), &apgd);
        let (a, b) = (a.last().unwrap(), b.last().unwrap());
        let scale = a.contacts.iter().map(|c| compatible(c).norm()).fold(0.0, f64::max);
        let d = a.contacts.iter().zip(&b.contacts).map(|(x, y)| (compatible(x) - compatible(y)).norm()).fold(0.0, f64::max);
        eprintln!("{name}: APGD within {:.2e} of Newton (relative)", d / scale);
        assert!(d <= 1e-8 * scale, "{name}: APGD's forces {d} N from Newton's");
    }
}

/// 500 grains (r = 1–1.5 mm, 2000 kg/m³) falling from a loose random pack
/// into a 25 mm box, μ = 0.5, compatible forces at every step: the first
/// grains land and collide, sliding, from step 18 on.
fn pour_text(t_end: f64) -> String {
    let wall = |p: [f64; 3], n: [f64; 3]| format!("[[wall]]\npoint = {p:?}\nnormal = {n:?}\n\n");
    format!(
        "[simulation]\nsolver = \"compatible-cd\"\nt_end = {t_end:?}\ndt = 1e-3\ngravity = [0.0, 0.0, -9.81]\n\n\
         [[material]]\nname = \"grain\"\ndensity = 2000.0\nfriction = 0.5\n\n\
         [[shape]]\nname = \"ball\"\nkind = \"sphere\"\nradius = 1.25e-3\n\n\
         [[generate]]\nkind = \"random\"\nshape = \"ball\"\ncount = 500\nradius = {{ min = 1.0e-3, max = 1.5e-3, classes = 11 }}\n\
         box_min = [0.0, 0.0, 0.0]\nbox_max = [0.025, 0.025, 0.05]\ngap = 1e-4\nseed = 15\n\n\
         {}{}{}{}{}\
         [contact]\ndistance = 1e-3\nskin = 1e-3\n\n\
         [output]\ndir = \"OUTDIR\"\nevery = 1\n",
        wall([0.0; 3], [0.0, 0.0, 1.0]),
        wall([0.0; 3], [1.0, 0.0, 0.0]),
        wall([0.025, 0.0, 0.0], [-1.0, 0.0, 0.0]),
        wall([0.0; 3], [0.0, 1.0, 0.0]),
        wall([0.0, 0.025, 0.0], [0.0, -1.0, 0.0]),
    )
}

/// The relative velocity of body b against body a at the contact point
/// (walls at rest), tangential part.
fn slip(f: &Frame, c: &common::frames::Contact) -> Vector3<f64> {
    let p = v3(c.point);
    let at = |id: u64| if id >= WALL { Vector3::zeros() } else { v3(f.vel[id as usize]) + v3(f.omega[id as usize]).cross(&(p - v3(f.pos[id as usize]))) };
    let (v, n) = (at(c.body_b) - at(c.body_a), v3(c.normal));
    v - n * n.dot(&v)
}

#[test]
fn grains_sliding_in_a_collision_carry_mu_f_n_along_cds_friction() {
    // A contact that slides in the CD step is at its bound along the slip
    // in the rigid limit: its compatible tangential force is μ times its
    // compatible normal force, along CD's friction. Solved as a spring
    // instead, the step has no finite displacement (step 29 of this pour
    // stopped at feasibility 5e-3).
    let (dir, mu) = (tempfile::tempdir().unwrap(), 0.5);
    for np in [1, 2] {
        let fr = run(np, dir.path(), &format!("pour-{np}"), &pour_text(0.029));
        let (mut sliding, mut worst, mut over) = (0, 0.0f64, 0.0f64);
        for f in &fr[1..] {
            for c in f.contacts.iter().filter(|c| c.force_compatible > 0.0) {
                let (ft, ft_cd) = (v3(c.force_compatible_tangent), v3(c.force_tangent));
                over = over.max(ft.norm() / (mu * c.force_compatible) - 1.0);
                let on_cone = c.force_normal > 0.0 && ft_cd.norm() >= (1.0 - 1e-6) * mu * c.force_normal;
                if on_cone && slip(f, c).norm() > 1e-3 {
                    sliding += 1;
                    let want = ft_cd.normalize() * mu * c.force_compatible;
                    worst = worst.max((ft - want).norm() / want.norm());
                }
            }
        }
        eprintln!("{np} rank(s): {sliding} sliding contacts within {worst:.2e} of μ f_n along CD's friction; largest |f_t|/(μ f_n) − 1 = {over:.2e}");
        assert!(sliding >= 10, "{np} rank(s): the pour's collisions slide ({sliding} sliding contacts)");
        assert!(worst <= 1e-5, "{np} rank(s): a sliding contact {worst:e} off μ f_n along CD's friction");
        assert!(over <= 1e-9, "{np} rank(s): a compatible force outside the Coulomb cone by {over:e}");
    }
}

#[test]
fn a_forming_pack_converges_where_gmres_breaks_down() {
    // Steps 50 and 51 of this pour on 2 ranks: the grains have formed a
    // pack and the coupled Coulomb solves' GMRES with block ILU breaks
    // down; the sparse LU that then takes over converges both (without it
    // they report CD's forces). `run` asserts that every solve converged.
    let (dir, mu) = (tempfile::tempdir().unwrap(), 0.5);
    let fr = run(2, dir.path(), "formed", &pour_text(0.051));
    let last = fr.last().unwrap();
    let loaded = last.contacts.iter().filter(|c| c.force_compatible > 0.0).count();
    let over = last.contacts.iter().filter(|c| c.force_compatible > 0.0).map(|c| v3(c.force_compatible_tangent).norm() / (mu * c.force_compatible) - 1.0).fold(f64::MIN, f64::max);
    eprintln!("t = {}: {loaded} loaded contacts, largest |f_t|/(μ f_n) − 1 = {over:.2e}", last.t);
    assert!(loaded >= 250, "a formed pack ({loaded} loaded contacts)");
    assert!(over <= 1e-9, "a compatible force outside the Coulomb cone by {over:e}");
}

/// The largest net force on a `free` sphere of mass `m` over a step of
/// `dt` from `before` to `f`, in weights: m (v⁺ − v)/Δt against m g and
/// the compatible contact forces.
fn out_of_balance(before: &Frame, f: &Frame, m: f64, dt: f64, free: &dyn Fn(u64) -> bool) -> f64 {
    let weight = m * 9.81;
    let mut net: Vec<Vector3<f64>> = (0..f.pos.len()).map(|i| Vector3::new(0.0, 0.0, -weight) - m * (v3(f.vel[i]) - v3(before.vel[i])) / dt).collect();
    for c in &f.contacts {
        let on_b = compatible(c);
        if c.body_b < WALL {
            net[c.body_b as usize] += on_b;
        }
        net[c.body_a as usize] -= on_b;
    }
    (0..f.pos.len()).filter(|&i| free(i as u64)).map(|i| net[i].norm()).fold(0.0, f64::max) / weight
}

#[test]
fn a_compatible_solve_that_stops_short_reports_cds_forces_in_equilibrium() {
    // The pyramid of the network test at μ = 0.3, its compatible forces by
    // APGD cut at 5 iterations: every solve stops short, its iterate out
    // of equilibrium (by 4e-7 of a weight). The steps report CD's forces
    // instead, so every free sphere's momentum balance holds with the
    // reported forces.
    let dir = tempfile::tempdir().unwrap();
    let (text, base) = pyramid_text(2e-4, 2.0 / 7.0, 0.3, 1, None);
    let text = text.replace("[compatibility]\n", "[compatibility]\nmethod = \"apgd\"\nmax_iterations = 5\n").replace("tolerance = 1e-10", "tolerance = 1e-9");
    let m = 2000.0 * 4.0 / 3.0 * std::f64::consts::PI * 0.01f64.powi(3);
    let dt = 1e-3;
    for np in [1, 2] {
        let out = common::run_config(np, dir.path(), &format!("short-{np}"), &text).0;
        let s = common::frames::summary(&out);
        let solves = s["compatibility_solves"].as_u64().unwrap();
        assert!(solves > 0 && s["compatibility_not_converged"] == solves, "{np} rank(s): every solve stops short: {s}");
        let fr = frames(&out);
        for (before, f) in fr.iter().zip(&fr[1..]) {
            for c in &f.contacts {
                assert_eq!((c.force_compatible, c.force_compatible_tangent), (c.force_normal, c.force_tangent), "CD's forces reported");
            }
            let worst = out_of_balance(before, f, m, dt, &|id| id >= base as u64);
            eprintln!("{np} rank(s), t = {}: largest net force on a free sphere {worst:.2e} of its weight", f.t);
            assert!(worst <= 1e-9, "{np} rank(s): reported forces out of equilibrium by {worst:e} of a weight");
        }
    }
}

#[test]
fn the_interior_point_method_gives_newtons_compatible_frictional_forces() {
    // The same problem over the forces by interior point: the table (no
    // slip), the groove's sphere above its threshold (slip), and the n = 8
    // pyramid with touching neighbours at μ = 0.3 (contacts slide), on 2
    // ranks, against Newton's forces on 1.
    let dir = tempfile::tempdir().unwrap();
    let ip = |t: String| t.replace("[compatibility]\n", "[compatibility]\nmethod = \"interior-point\"\n");
    let pyramid = pyramid_text(0.0, 2.0 / 7.0, 0.3, 1, None).0.replace("tolerance = 1e-10", "tolerance = 1e-9");
    for (name, newton) in [("table", table_text(2.0 / 7.0)), ("groove", groove_text(2.0, 0.25, "")), ("pyramid", pyramid)] {
        let a = run(1, dir.path(), &format!("{name}-newton"), &newton);
        let b = run(2, dir.path(), &format!("{name}-ip"), &ip(newton.clone()));
        let (a, b) = (a.last().unwrap(), b.last().unwrap());
        let scale = a.contacts.iter().map(|c| compatible(c).norm()).fold(0.0, f64::max);
        let d = a.contacts.iter().zip(&b.contacts).map(|(x, y)| (compatible(x) - compatible(y)).norm()).fold(0.0, f64::max);
        eprintln!("{name}: interior point within {:.2e} of Newton (relative)", d / scale);
        assert!(d <= 1e-8 * scale, "{name}: the interior point's forces {d} N from Newton's");
    }
}

/// The least-squares residual ‖A x − g‖ / ‖g‖ of "these forces are the
/// springs' forces of one set of body displacements x": per loaded
/// contact of `fr` (f_n > 0) nᵀd = −f_n, and where it sticks (|f_t| below
/// μ f_n) also (I − n nᵀ) d = −f_t / κ, with d = J_b x_b − J_a x_a (k = 1,
/// fresh tangential springs; `fixed` bodies and walls do not move). Solved
/// by CGLS on the sparse contact rows; floppy modes do no harm.
fn incompatibility(fr: &Frame, force: &dyn Fn(&common::frames::Contact) -> (f64, Vector3<f64>), fixed: &dyn Fn(u64) -> bool, mu: f64, kappa: f64) -> f64 {
    let nb = fr.pos.len();
    // A row: its (body, 6-row of J) pairs and its right-hand side.
    type Row = (Vec<(usize, [f64; 6])>, f64);
    let mut rows: Vec<Row> = Vec::new();
    for c in &fr.contacts {
        let (f_n, f_t) = force(c);
        if f_n <= 0.0 {
            continue;
        }
        let nrm = v3(c.normal);
        let p = v3(c.point);
        let row = |e: Vector3<f64>, rhs: f64| {
            let mut r = Vec::new();
            for (id, s) in [(c.body_a, -1.0), (c.body_b, 1.0)] {
                if id < WALL && !fixed(id) {
                    let je = jacobian(p, v3(fr.pos[id as usize])).transpose() * e * s;
                    r.push((id as usize, je.into()));
                }
            }
            (r, rhs)
        };
        rows.push(row(nrm, -f_n));
        if f_t.norm() < mu * f_n * (1.0 - 1e-6) {
            for k in 0..3 {
                let e = Vector3::ith(k, 1.0);
                let e_t = e - nrm * nrm.dot(&e);
                rows.push(row(e_t, -e_t.dot(&f_t) / kappa));
            }
        }
    }
    let apply = |x: &[f64]| -> Vec<f64> { rows.iter().map(|(r, _)| r.iter().map(|(b, j)| (0..6).map(|d| j[d] * x[6 * b + d]).sum::<f64>()).sum()).collect() };
    let apply_t = |y: &[f64]| -> Vec<f64> {
        let mut x = vec![0.0; 6 * nb];
        for ((r, _), yi) in rows.iter().zip(y) {
            for (b, j) in r {
                for d in 0..6 {
                    x[6 * b + d] += j[d] * yi;
                }
            }
        }
        x
    };
    let dot = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>();
    let g: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let (mut x, mut r) = (vec![0.0; 6 * nb], g.clone());
    let mut s = apply_t(&r);
    let mut p = s.clone();
    let mut gamma = dot(&s, &s);
    let g0 = gamma;
    for _ in 0..100_000 {
        if gamma <= 1e-28 * g0 {
            break;
        }
        let q = apply(&p);
        let alpha = gamma / dot(&q, &q);
        x.iter_mut().zip(&p).for_each(|(x, p)| *x += alpha * p);
        r.iter_mut().zip(&q).for_each(|(r, q)| *r -= alpha * q);
        s = apply_t(&r);
        let next = dot(&s, &s);
        p = s.iter().zip(&p).map(|(s, p)| s + next / gamma * p).collect();
        gamma = next;
    }
    (dot(&r, &r) / dot(&g, &g)).sqrt()
}

#[test]
fn a_sliding_pyramid_s_compatible_forces_are_the_springs_forces_of_one_displacement_on_2_3_ranks() {
    // The n = 18 cannonball pyramid (2,109 spheres), layers touching, μ =
    // 0.3, loaded by the nonsmooth Gauss–Seidel's CD forces: 4,016 contacts
    // slide. Newton's solve bounded first by CD's normal forces stalls
    // here (near 8e-4), and the one from zero bounds converges. The
    // compatible forces balance every sphere's load, lie in the Coulomb
    // cone and are the springs' forces of one set of displacements — what
    // CD's forces, in equilibrium too, are not.
    let (mu, kappa, r) = (0.3, 2.0 / 7.0, 1.25e-3f64);
    let text = format!(
        "[simulation]\nsolver = \"compatible-cd\"\nt_end = 1e-3\ndt = 1e-3\ngravity = [0.0, 0.0, -9.81]\n\n\
         [[material]]\nname = \"grain\"\ndensity = 2000.0\nfriction = {mu:?}\n\n\
         [[shape]]\nname = \"ball\"\nkind = \"sphere\"\nradius = {r:?}\n\n\
         [[generate]]\nkind = \"pyramid\"\nshape = \"ball\"\norigin = [0.0, 0.0, 0.0]\nn = 18\nlayer_gap = 0.0\nfix_base = true\n\n\
         [solver]\nmethod = \"pgs\"\ntolerance = 1e-8\nmax_iterations = 20000\n\n\
         [compatibility]\ntangential_ratio = {kappa:?}\n\n\
         [output]\ndir = \"OUTDIR\"\nevery = 1\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let m = 2000.0 * 4.0 / 3.0 * std::f64::consts::PI * r.powi(3);
    let dt = 1e-3;
    for np in [2, 3] {
        let fr = run(np, dir.path(), "sliding", &text);
        let (before, f) = (&fr[0], fr.last().unwrap());
        let fixed = |id: u64| f.pos[id as usize][2] < 1.5 * r;
        let (mut over, mut slid) = (f64::MIN, 0);
        for c in &f.contacts {
            if c.force_compatible > 0.0 {
                let ratio = v3(c.force_compatible_tangent).norm() / (mu * c.force_compatible);
                over = over.max(ratio - 1.0);
                slid += (ratio >= 1.0 - 1e-6) as usize;
            }
        }
        let worst = out_of_balance(before, f, m, dt, &|id| !fixed(id));
        let compatible_forces = |c: &common::frames::Contact| (c.force_compatible, v3(c.force_compatible_tangent));
        let cd_forces = |c: &common::frames::Contact| (c.force_normal, v3(c.force_tangent));
        let (e, e_cd) = (incompatibility(f, &compatible_forces, &fixed, mu, kappa), incompatibility(f, &cd_forces, &fixed, mu, kappa));
        let gap = f.contacts.iter().filter(|c| c.force_compatible > 0.0).map(|c| c.gap.abs()).fold(0.0, f64::max);
        eprintln!("{np} rank(s): {slid} contacts at the bound; net force {worst:.2e} of a weight, |f_t|/(μ f_n) − 1 ≤ {over:.2e}, incompatibility {e:.2e} (CD's forces: {e_cd:.2e}), loaded gaps ≤ {gap:.1e} m");
        assert!(slid > 0, "{np} rank(s): no contact slides");
        assert!(worst <= 1e-8, "{np} rank(s): compatible forces out of equilibrium by {worst:e} of a weight");
        assert!(over <= 1e-9, "{np} rank(s): a compatible force outside the Coulomb cone by {over:e}");
        assert!(gap <= 1e-12 * r, "{np} rank(s): the pyramid's loaded contacts touch ({gap:e} m)");
        assert!(e <= 1e-8, "{np} rank(s): the compatible forces are not the springs' forces of one displacement ({e:e})");
        assert!(e_cd >= 1e3 * e, "{np} rank(s): the check does not tell CD's forces ({e_cd:e}) from the compatible ones");
    }
}
