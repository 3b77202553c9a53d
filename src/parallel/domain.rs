//! Spatial decomposition (step 1 of the time step): the scene box cut into a
//! Cartesian grid of rank boxes, or, once the load is uneven, a recursive
//! coordinate bisection (RCB) by work (bodies and the contacts they own).
//! Boxes on the outside reach to
//! infinity, so every point has exactly one owner.
use super::Comm;
use mpi::collective::SystemOperation;
use mpi::traits::*;
use nalgebra::Vector3;

/// The rank boxes: a Cartesian process grid over [lo, hi], or an RCB tree.
#[derive(Clone, Debug, PartialEq)]
pub struct Domain {
    pub lo: Vector3<f64>,
    pub hi: Vector3<f64>,
    /// Ranks along x, y, z for the grid (their product is the rank count).
    pub dims: [usize; 3],
    /// RCB tree (root first) when the domain was rebalanced.
    tree: Option<Vec<Node>>,
}

/// A node of the RCB tree: ranks `r0..r1` share the box `lo..hi`; inner
/// nodes send coordinates below `cut` on `axis` to `left`.
#[derive(Clone, Debug, PartialEq)]
struct Node {
    r0: usize,
    r1: usize,
    lo: Vector3<f64>,
    hi: Vector3<f64>,
    axis: usize,
    cut: f64,
    left: usize,
    right: usize,
}

impl Domain {
    /// The domain as plain numbers (a checkpoint keeps it, so a restart on
    /// the same rank count owns every body where the run did): lo, hi,
    /// dims, then 11 per RCB node.
    pub fn to_flat(&self) -> Vec<f64> {
        let mut v: Vec<f64> = self.lo.iter().chain(self.hi.iter()).copied().collect();
        v.extend(self.dims.iter().map(|&d| d as f64));
        for n in self.tree.iter().flatten() {
            v.extend([n.r0 as f64, n.r1 as f64]);
            v.extend(n.lo.iter().chain(n.hi.iter()));
            v.extend([n.axis as f64, n.cut, n.left as f64, n.right as f64]);
        }
        v
    }

    /// The domain of [`Domain::to_flat`]; None for a malformed list or one
    /// for another rank count.
    pub fn from_flat(v: &[f64], ranks: usize) -> Option<Self> {
        const NODE: usize = 12;
        if v.len() < 9 || (v.len() - 9) % NODE != 0 {
            return None;
        }
        let v3 = |k: usize| Vector3::new(v[k], v[k + 1], v[k + 2]);
        let dims = [v[6] as usize, v[7] as usize, v[8] as usize];
        let nodes: Vec<Node> = v[9..]
            .chunks(NODE)
            .map(|c| Node {
                r0: c[0] as usize,
                r1: c[1] as usize,
                lo: Vector3::new(c[2], c[3], c[4]),
                hi: Vector3::new(c[5], c[6], c[7]),
                axis: c[8] as usize,
                cut: c[9],
                left: c[10] as usize,
                right: c[11] as usize,
            })
            .collect();
        let fits = match nodes.first() {
            Some(root) => root.r1 == ranks && nodes.iter().all(|n| n.left < nodes.len() && n.right < nodes.len()),
            None => dims.iter().product::<usize>() == ranks,
        };
        fits.then(|| Self { lo: v3(0), hi: v3(3), dims, tree: (!nodes.is_empty()).then_some(nodes) })
    }

    /// Chooses the factorisation of `ranks` that makes the rank boxes closest
    /// to cubes (least total cut area); in 2D the z axis is never cut.
    pub fn new(lo: Vector3<f64>, hi: Vector3<f64>, ranks: usize, dim: u8) -> Self {
        let ext = (hi - lo).map(|e| e.max(1e-300));
        let mut best = ([ranks, 1, 1], f64::INFINITY);
        for px in 1..=ranks {
            if ranks % px != 0 {
                continue;
            }
            for py in 1..=ranks / px {
                if (ranks / px) % py != 0 {
                    continue;
                }
                let pz = ranks / px / py;
                if dim == 2 && pz != 1 {
                    continue;
                }
                // Area of the internal cuts, normalised by the box size.
                let area = (px - 1) as f64 * ext.y * ext.z
                    + (py - 1) as f64 * ext.x * ext.z
                    + (pz - 1) as f64 * ext.x * ext.y;
                if area < best.1 - 1e-12 * area.abs() {
                    best = ([px, py, pz], area);
                }
            }
        }
        Self { lo, hi, dims: best.0, tree: None }
    }

    /// Collective: recursive coordinate bisection of the owned `positions` of
    /// all ranks with their `weights` (the work of each body), each cut
    /// splitting the weight of a node in proportion to its ranks (bisection
    /// on the cut coordinate with global sums). Every rank builds the same
    /// tree. In 2D the z axis is never cut.
    pub fn rcb(comm: &Comm, positions: &[Vector3<f64>], weights: &[f64], dim: u8) -> Self {
        debug_assert_eq!(positions.len(), weights.len());
        let size = comm.size() as usize;
        let inf = Vector3::repeat(f64::INFINITY);
        let mut nodes = vec![Node { r0: 0, r1: size, lo: -inf, hi: inf, axis: 0, cut: 0.0, left: 0, right: 0 }];
        let mut node_of = vec![0usize; positions.len()];
        let mut level = vec![0usize];
        let axes = if dim == 2 { 2 } else { 3 };
        while !level.is_empty() {
            let split: Vec<usize> = level.iter().copied().filter(|&k| nodes[k].r1 - nodes[k].r0 > 1).collect();
            if split.is_empty() {
                break;
            }
            let slot = |k: usize| split.iter().position(|&x| x == k);
            // Extent of each node's bodies, to cut its longest axis.
            let mut lo = vec![f64::INFINITY; 3 * split.len()];
            let mut hi = vec![f64::NEG_INFINITY; 3 * split.len()];
            for (i, p) in positions.iter().enumerate() {
                if let Some(s) = slot(node_of[i]) {
                    for a in 0..3 {
                        lo[3 * s + a] = lo[3 * s + a].min(p[a]);
                        hi[3 * s + a] = hi[3 * s + a].max(p[a]);
                    }
                }
            }
            let mut glo = vec![0.0f64; lo.len()];
            let mut ghi = vec![0.0f64; hi.len()];
            comm.all_reduce_into(&lo[..], &mut glo[..], SystemOperation::min());
            comm.all_reduce_into(&hi[..], &mut ghi[..], SystemOperation::max());
            let mut lo_cut = vec![0.0; split.len()];
            let mut hi_cut = vec![0.0; split.len()];
            for (s, &k) in split.iter().enumerate() {
                let ext = |a: usize| ghi[3 * s + a] - glo[3 * s + a];
                let axis = (0..axes).fold(0, |b, a| if ext(a) > ext(b) { a } else { b });
                nodes[k].axis = axis;
                (lo_cut[s], hi_cut[s]) = if ext(axis).is_finite() { (glo[3 * s + axis], ghi[3 * s + axis]) } else { (0.0, 0.0) };
            }
            let mut total = vec![0.0f64; split.len()];
            let mut local_total = vec![0.0f64; split.len()];
            for (&k, &w) in node_of.iter().zip(weights) {
                if let Some(s) = slot(k) {
                    local_total[s] += w;
                }
            }
            comm.all_reduce_into(&local_total[..], &mut total[..], SystemOperation::sum());
            // Bisection on each node's cut so that the left share matches its ranks.
            for _ in 0..60 {
                let trial: Vec<f64> = (0..split.len()).map(|s| 0.5 * (lo_cut[s] + hi_cut[s])).collect();
                let mut below = vec![0.0f64; split.len()];
                for (i, p) in positions.iter().enumerate() {
                    if let Some(s) = slot(node_of[i]) {
                        if p[nodes[split[s]].axis] < trial[s] {
                            below[s] += weights[i];
                        }
                    }
                }
                let mut gbelow = vec![0.0f64; split.len()];
                comm.all_reduce_into(&below[..], &mut gbelow[..], SystemOperation::sum());
                for (s, &k) in split.iter().enumerate() {
                    let n = nodes[k].r1 - nodes[k].r0;
                    let want = total[s] * (n / 2) as f64 / n as f64;
                    if gbelow[s] < want {
                        lo_cut[s] = trial[s];
                    } else {
                        hi_cut[s] = trial[s];
                    }
                }
            }
            let mut next = Vec::new();
            for (s, &k) in split.iter().enumerate() {
                let (axis, cut) = (nodes[k].axis, 0.5 * (lo_cut[s] + hi_cut[s]));
                let (r0, r1) = (nodes[k].r0, nodes[k].r1);
                let rm = r0 + (r1 - r0) / 2;
                let (mut lhi, mut rlo) = (nodes[k].hi, nodes[k].lo);
                lhi[axis] = cut;
                rlo[axis] = cut;
                let l = Node { r0, r1: rm, lo: nodes[k].lo, hi: lhi, axis: 0, cut: 0.0, left: 0, right: 0 };
                let r = Node { r0: rm, r1, lo: rlo, hi: nodes[k].hi, axis: 0, cut: 0.0, left: 0, right: 0 };
                nodes[k].cut = cut;
                nodes[k].left = nodes.len();
                nodes.push(l);
                nodes[k].right = nodes.len();
                nodes.push(r);
                next.extend([nodes[k].left, nodes[k].right]);
            }
            for (i, p) in positions.iter().enumerate() {
                let k = node_of[i];
                if slot(k).is_some() {
                    node_of[i] = if p[nodes[k].axis] < nodes[k].cut { nodes[k].left } else { nodes[k].right };
                }
            }
            level = next;
        }
        let (mut lo, mut hi) = (Vector3::repeat(f64::INFINITY), Vector3::repeat(f64::NEG_INFINITY));
        for p in positions {
            lo = lo.inf(p);
            hi = hi.sup(p);
        }
        let mut glo = [0.0; 3];
        let mut ghi = [0.0; 3];
        comm.all_reduce_into(lo.as_slice(), &mut glo[..], SystemOperation::min());
        comm.all_reduce_into(hi.as_slice(), &mut ghi[..], SystemOperation::max());
        Self { lo: Vector3::from(glo), hi: Vector3::from(ghi), dims: [0; 3], tree: Some(nodes) }
    }

    /// True once the domain is an RCB tree.
    pub fn is_rcb(&self) -> bool {
        self.tree.is_some()
    }

    fn leaf(&self, rank: usize) -> &Node {
        let t = self.tree.as_ref().expect("RCB tree");
        let mut k = 0;
        while t[k].r1 - t[k].r0 > 1 {
            k = if rank < t[t[k].left].r1 { t[k].left } else { t[k].right };
        }
        &t[k]
    }

    pub fn ranks(&self) -> usize {
        match &self.tree {
            Some(t) => t[0].r1,
            None => self.dims.iter().product(),
        }
    }

    fn cell_of(&self, p: &Vector3<f64>, axis: usize) -> usize {
        let n = self.dims[axis];
        let t = (p[axis] - self.lo[axis]) / (self.hi[axis] - self.lo[axis]) * n as f64;
        if t.is_nan() {
            return 0;
        }
        (t.floor().max(0.0) as usize).min(n - 1)
    }

    fn rank_of(&self, c: [usize; 3]) -> usize {
        c[0] + self.dims[0] * (c[1] + self.dims[1] * c[2])
    }

    fn coords(&self, rank: usize) -> [usize; 3] {
        [rank % self.dims[0], (rank / self.dims[0]) % self.dims[1], rank / (self.dims[0] * self.dims[1])]
    }

    /// The rank whose box holds `p`.
    pub fn owner(&self, p: &Vector3<f64>) -> usize {
        if let Some(t) = &self.tree {
            let mut k = 0;
            while t[k].r1 - t[k].r0 > 1 {
                k = if p[t[k].axis] < t[k].cut { t[k].left } else { t[k].right };
            }
            return t[k].r0;
        }
        self.rank_of([self.cell_of(p, 0), self.cell_of(p, 1), self.cell_of(p, 2)])
    }

    /// Box of `rank`; faces on the boundary of the grid are at ±infinity.
    pub fn rank_box(&self, rank: usize) -> (Vector3<f64>, Vector3<f64>) {
        if self.tree.is_some() {
            let n = self.leaf(rank);
            return (n.lo, n.hi);
        }
        let c = self.coords(rank);
        let mut lo = Vector3::zeros();
        let mut hi = Vector3::zeros();
        for a in 0..3 {
            let h = (self.hi[a] - self.lo[a]) / self.dims[a] as f64;
            lo[a] = if c[a] == 0 { f64::NEG_INFINITY } else { self.lo[a] + c[a] as f64 * h };
            hi[a] = if c[a] + 1 == self.dims[a] { f64::INFINITY } else { self.lo[a] + (c[a] + 1) as f64 * h };
        }
        (lo, hi)
    }

    /// Ranks (in increasing order) whose box lies within `reach` of `p`.
    pub fn ranks_near(&self, p: &Vector3<f64>, reach: f64) -> Vec<usize> {
        if let Some(t) = &self.tree {
            let mut out = Vec::new();
            let mut stack = vec![0];
            while let Some(k) = stack.pop() {
                if distance_to_box(p, &(t[k].lo, t[k].hi)) > reach {
                    continue;
                }
                if t[k].r1 - t[k].r0 == 1 {
                    out.push(t[k].r0);
                } else {
                    stack.extend([t[k].left, t[k].right]);
                }
            }
            out.sort_unstable();
            return out;
        }
        let r = Vector3::repeat(reach);
        let (a, b) = (p - r, p + r);
        let (mut lo, mut hi) = ([0; 3], [0; 3]);
        for axis in 0..3 {
            lo[axis] = self.cell_of(&a, axis);
            hi[axis] = self.cell_of(&b, axis);
        }
        let mut out = Vec::new();
        for z in lo[2]..=hi[2] {
            for y in lo[1]..=hi[1] {
                for x in lo[0]..=hi[0] {
                    let rank = self.rank_of([x, y, z]);
                    if distance_to_box(p, &self.rank_box(rank)) <= reach {
                        out.push(rank);
                    }
                }
            }
        }
        out
    }
}

/// Euclidean distance from `p` to the box (0 inside).
pub fn distance_to_box(p: &Vector3<f64>, b: &(Vector3<f64>, Vector3<f64>)) -> f64 {
    let mut d2 = 0.0;
    for a in 0..3 {
        let d = (b.0[a] - p[a]).max(p[a] - b.1[a]).max(0.0);
        d2 += d * d;
    }
    d2.sqrt()
}

/// Collective: the box the ranks divide for the bodies of every rank
/// (`bodies`: any distribution): their bounding spheres, the periodic box
/// on periodic axes.
pub fn domain_box(comm: &Comm, scene: &crate::scene::Scene, bodies: &crate::body::Bodies) -> (Vector3<f64>, Vector3<f64>) {
    let (mut lo, mut hi) = (Vector3::repeat(f64::INFINITY), Vector3::repeat(f64::NEG_INFINITY));
    for i in 0..bodies.len() {
        let r = scene.shapes[bodies.shape[i] as usize].bounding_radius();
        lo = lo.inf(&bodies.position[i].add_scalar(-r));
        hi = hi.sup(&bodies.position[i].add_scalar(r));
    }
    global_box(comm, lo, hi, scene.periodic.as_ref())
}

/// The union over ranks of the boxes `lo`..`hi`, replaced by the periodic
/// box on periodic axes. Collective.
pub fn global_box(comm: &Comm, lo: Vector3<f64>, hi: Vector3<f64>, periodic: Option<&crate::scene::Periodic>) -> (Vector3<f64>, Vector3<f64>) {
    let (mut glo, mut ghi) = ([0.0; 3], [0.0; 3]);
    comm.all_reduce_into(lo.as_slice(), &mut glo[..], SystemOperation::min());
    comm.all_reduce_into(hi.as_slice(), &mut ghi[..], SystemOperation::max());
    let (mut lo, mut hi) = (Vector3::from(glo), Vector3::from(ghi));
    if let Some(p) = periodic {
        for a in (0..3).filter(|&a| p.axes[a]) {
            (lo[a], hi[a]) = (p.lo[a], p.hi[a]);
        }
    }
    (lo, hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_follow_the_box_shape() {
        let lo = Vector3::zeros();
        assert_eq!(Domain::new(lo, Vector3::new(4.0, 1.0, 1.0), 4, 3).dims, [4, 1, 1]);
        assert_eq!(Domain::new(lo, Vector3::new(1.0, 1.0, 1.0), 8, 3).dims, [2, 2, 2]);
        assert_eq!(Domain::new(lo, Vector3::new(1.0, 1.0, 1.0), 4, 2).dims[2], 1);
        assert_eq!(Domain::new(lo, Vector3::new(1.0, 1.0, 1.0), 3, 3).ranks(), 3);
    }

    #[test]
    fn every_point_has_one_owner_inside_its_box() {
        let d = Domain::new(Vector3::zeros(), Vector3::new(3.0, 2.0, 1.0), 6, 3);
        let mut rng = crate::scene::generate::SplitMix64::new(3);
        for _ in 0..1000 {
            let p = Vector3::new(rng.uniform() * 5.0 - 1.0, rng.uniform() * 4.0 - 1.0, rng.uniform() * 3.0 - 1.0);
            let r = d.owner(&p);
            assert_eq!(distance_to_box(&p, &d.rank_box(r)), 0.0);
            assert!(d.ranks_near(&p, 0.0).contains(&r));
            // Brute force agrees with the grid query.
            let reach = 0.4;
            let brute: Vec<usize> = (0..6).filter(|&k| distance_to_box(&p, &d.rank_box(k)) <= reach).collect();
            assert_eq!(d.ranks_near(&p, reach), brute);
        }
    }
}
