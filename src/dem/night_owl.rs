//! Night-owl contacts (Gay Neto & Wriggers §2.6.3), the DEM's review of a
//! step: the global search at the step's end finds contacts the step did
//! not model, and the step is redone with them (a larger contact distance
//! for new pairs, half the Δt for a degeneration found below the
//! penetration floor). Also the rule for mesh pairs detected closed.
use crate::body::{Bodies, Shape};
use crate::contact::{BodyDepths, ContactKey, WALL_ID_BASE};
use crate::parallel::exchange::forward_displacements;
use crate::parallel::records::{ask_all, send_to, FlatRecords};
use crate::parallel::{self, Comm};
use crate::world::World;
use std::collections::HashSet;

/// A step is redone at most this many times with a larger contact
/// distance for night-owl contacts, then accepted with a warning.
pub const MAX_NIGHT_OWL_REDOS: u32 = 3;

/// The penetration floor of a night owl, as a fraction of the law's
/// penalty/barrier switch gap f ḡ_n (eq 49): above the switch a contact
/// carries at most the ~100 weights eps1 is sized for, so a degeneration
/// that takes over from a listed one under an ordinary load is no owl.
pub const PENETRATION_FLOOR: f64 = 0.5;

/// A contact unseen in a step that the search at its end found.
#[derive(Clone, Copy, Debug)]
pub struct NightOwl {
    pub a: u64,
    pub b: u64,
    pub gap: f64,
    /// Its body pair had no contact in the step: the redo detects out to a
    /// larger distance.
    pub new_pair: bool,
    /// Its sub-region pair was not in the step and its gap is already below
    /// the penetration floor: the redo takes half the step, so that it
    /// enters the list before it is closed (the start configuration may
    /// hold it outside its validity range at any distance).
    pub penetrating: bool,
}

/// The mesh pairs detected with a closed gap: their indices (to drop) and
/// keys. The barrier law keeps every tracked gap open and the night-owl checks
/// track every pair that closes within a step, so a closed one is a
/// projection through a thin tip or across a concave region (§3.6), not a
/// contact (it would end every step at once: "gap closed").
pub fn closed_mesh_pairs(world: &World) -> (Vec<usize>, HashSet<ContactKey>) {
    let c = world.contacts();
    let closed: Vec<usize> = (0..c.len()).filter(|&k| c.gap[k] <= 0.0 && world.is_mesh_pair(c, k)).collect();
    for &k in &closed {
        log::debug!("dropped mesh pair {}-{} (sub {} {}) with closed gap {:e}", c.a[k], c.b[k], c.sub_a[k], c.sub_b[k], c.gap[k]);
    }
    let keys = closed.iter().map(|&k| c.key(k)).collect();
    (closed, keys)
}

/// The largest distance a surface point of each owned body moved since
/// `start` (the owned bodies, same order): |Δx| plus, for a mesh, the
/// bounding radius times the rotation angle. A gap changes by at most the
/// sum of its two bodies' values.
pub fn displacements(world: &World, start: &Bodies) -> Vec<f64> {
    let (b, n) = (world.bodies(), world.n_owned());
    assert_eq!(n, start.len(), "the owned bodies changed within the step");
    (0..n)
        .map(|i| {
            let turn = match world.shapes().shape(b.shape[i]) {
                Shape::Sphere { .. } => 0.0,
                Shape::Mesh(_) => world.shapes().bounding_radius(b.shape[i]) * (b.orientation[i] * start.orientation[i].inverse()).angle(),
            };
            (b.position[i] - start.position[i]).norm() + turn
        })
        .collect()
}

/// [`displacements`] of the owned bodies with those of the ghosts (from
/// their owners; a Lees–Edwards image's with its drift over `dt`), by body
/// id; bodies not named take the largest of all, `largest`. Collective.
pub fn step_displacements(world: &World, owned: &[f64], largest: f64, dt: f64) -> BodyDepths {
    let ghosts = forward_displacements(world.comm(), world.layout(), owned, dt);
    let by_id = world.bodies().id.iter().copied().zip(owned.iter().chain(&ghosts).copied()).collect();
    BodyDepths { by_id, default: largest }
}

/// The night owls in the global search at the end of a step, which the
/// driver ran at the solver's request ([`World::search`]) and the next step
/// reuses. Returns this rank's night owls: active
/// contacts (gap < ḡ_n) whose body pair had no contact in the step's list,
/// and contacts closer than `floor` whose sub-region pair was not in it
/// (`penetrating`: the step crossed into a degeneration it did not model,
/// e.g. an edge–edge pair beside a listed vertex–face one). Collective.
/// `start`: the owned bodies at the step's start; `closed`: the mesh pairs
/// dropped closed at its start; `moved`: each body's displacement in the
/// step ([`step_displacements`]): a mesh pair closed deeper than the sum of
/// its two bodies' was closed at the start already, a projection through a
/// thin tip, no owl.
pub fn owls_after_step(world: &World, start: &Bodies, closed: &HashSet<ContactKey>, gbar: f64, floor: f64, moved: &BodyDepths) -> Vec<NightOwl> {
    let (comm, c, bodies, layout) = (world.comm(), world.contacts(), world.bodies(), world.layout());
    let new_list = world.next_contacts().expect("the driver ran the search");
    // A contact lives on the owner of its body a. Without a migration the
    // step's list here holds every pair of the new list's a; a body that
    // arrived by migration had its step contacts on its old rank: those
    // pairs are asked of every rank (agreed: rebuilds is global).
    let migrated = world.search_migrated();
    let projection = |k: usize| {
        let reach = moved.of(new_list.a[k]) + moved.of(new_list.b[k]);
        new_list.gap[k] <= 0.0 && world.is_mesh_pair(new_list, k) && (new_list.gap[k] < -reach || closed.contains(&new_list.key(k)))
    };
    let active: Vec<usize> = (0..new_list.len()).filter(|&k| new_list.gap[k] < gbar && !projection(k)).collect();
    let mut owls = Vec::new();
    if active.is_empty() && !migrated {
        return owls;
    }
    let pairs: HashSet<(u64, u64)> = c.a.iter().copied().zip(c.b.iter().copied()).collect();
    let keys: HashSet<ContactKey> = (0..c.len()).map(|k| c.key(k)).collect();
    // The owl a contact is, given whether its pair / its key was listed.
    let classify = |k: usize, pair: bool, key: bool| {
        let (a, b, gap) = (new_list.a[k], new_list.b[k], new_list.gap[k]);
        let penetrating = !key && gap < floor;
        (!pair || penetrating).then_some(NightOwl { a, b, gap, new_pair: !pair, penetrating })
    };
    let mut ask = Vec::new();
    let mut arrived: Option<HashSet<u64>> = None;
    for k in active {
        let key = new_list.key(k);
        let (pair_listed, key_listed) = (pairs.contains(&(key.a, key.b)), keys.contains(&key));
        if key_listed || (pair_listed && new_list.gap[k] >= floor) {
            continue;
        }
        let arrival = migrated && {
            let arrived = arrived.get_or_insert_with(|| {
                let here: HashSet<u64> = start.id.iter().copied().collect();
                (0..layout.n_owned).map(|i| bodies.id[i]).filter(|id| !here.contains(id)).collect()
            });
            arrived.contains(&key.a)
        };
        if arrival {
            ask.push((k, pair_listed));
        } else {
            owls.extend(classify(k, pair_listed, false));
        }
    }
    if migrated {
        if !ask.is_empty() {
            log::debug!("night-owl search: asking the other ranks about {} contact(s) of arrived bodies", ask.len());
        }
        // Query: a | b, sub_a, sub_b; answer: pair listed, key listed.
        let mut q = FlatRecords::new(3, 0);
        for &(k, _) in &ask {
            let u = new_list.key(k).to_u64s();
            q.push(u[0], &u[1..], &[]);
        }
        let yes = ask_all(comm, &q, false, (2, 0), |key, u, _, reply| {
            let key = ContactKey::from_u64s(&[key, u[0], u[1], u[2]]);
            let (pair, listed) = (pairs.contains(&(key.a, key.b)), keys.contains(&key));
            if pair || listed {
                reply.push(0, &[pair as u64, listed as u64], &[]);
            }
        });
        let mut seen: Vec<(bool, bool)> = ask.iter().map(|&(_, pair)| (pair, false)).collect();
        for k in 0..yes.len() {
            let s = &mut seen[yes.keys[k] as usize];
            s.0 |= yes.u_row(k)[0] != 0;
            s.1 |= yes.u_row(k)[1] != 0;
        }
        owls.extend(ask.iter().zip(seen).filter_map(|(&(k, _), (pair, key))| classify(k, pair, key)));
    }
    owls
}

/// The night owls of every rank as "a-b (gap g)" (walls as "wall w"), at
/// most ten, for rank 0's log line. Collective.
pub fn names(comm: &Comm, owls: &[NightOwl]) -> String {
    let mut recs = FlatRecords::new(1, 1);
    for o in owls {
        recs.push(o.a, &[o.b], &[o.gap]);
    }
    let mut got = send_to(comm, &recs, &vec![0; recs.len()]);
    got.sort();
    let mut names: Vec<String> = (0..got.len().min(10))
        .map(|k| {
            let b = got.u_row(k)[0];
            let b = if b >= WALL_ID_BASE { format!("wall {}", b - WALL_ID_BASE) } else { b.to_string() };
            format!("{}-{b} (gap {:.3e})", got.keys[k], got.f_row(k)[0])
        })
        .collect();
    if got.len() > 10 {
        names.push(format!("and {} more", got.len() - 10));
    }
    names.join(", ")
}

/// Global count of the owls `f` selects.
pub fn count(comm: &Comm, owls: &[NightOwl], f: fn(&NightOwl) -> bool) -> u64 {
    parallel::sum_u64(comm, owls.iter().filter(|o| f(o)).count() as u64)
}
