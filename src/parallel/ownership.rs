//! Which rank owns which body. Until the spatial decomposition lands, bodies
//! are owned in contiguous blocks of ids, which already makes every result
//! independent of the rank count.
use crate::body::Bodies;

/// Owner of body `id` among `ranks` ranks when ids 0..n are split in blocks.
pub fn block_owner(id: u64, n: u64, ranks: usize) -> usize {
    ((id as u128 * ranks as u128) / n.max(1) as u128) as usize
}

/// Keeps only the bodies this rank owns (every rank holds the whole scene).
pub fn keep_owned(bodies: &mut Bodies, rank: usize, ranks: usize) {
    let n = bodies.len() as u64;
    bodies.retain(|b| block_owner(b.id, n, ranks) == rank);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_cover_every_id_once_in_order() {
        for ranks in 1..6 {
            for n in [1u64, 2, 7, 100] {
                let owners: Vec<usize> = (0..n).map(|i| block_owner(i, n, ranks)).collect();
                assert!(owners.windows(2).all(|w| w[0] <= w[1]));
                assert!(owners.iter().all(|&r| r < ranks));
            }
        }
    }
}
