//! Memory of this process and this node, from /proc (Linux).
use super::Comm;
use mpi::traits::*;

/// A `Key:   N kB` value of a /proc status-style file, in bytes.
fn proc_kb(path: &str, key: &str) -> Option<u64> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kb: u64 = line[key.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kb * 1024)
}

/// Peak resident set size of this process so far (VmHWM), in bytes (0 if unknown).
pub fn peak_rss() -> u64 {
    proc_kb("/proc/self/status", "VmHWM:").unwrap_or(0)
}

/// Physical memory of this node (MemTotal), in bytes (None if unknown).
pub fn node_memory() -> Option<u64> {
    proc_kb("/proc/meminfo", "MemTotal:")
}

/// Collective: the number of ranks sharing this rank's node.
pub fn ranks_on_node(comm: &Comm) -> usize {
    comm.split_shared(0).size() as usize
}

/// Collective: [min, mean, max] over ranks of a per-rank value.
pub fn min_mean_max(comm: &Comm, x: f64) -> [f64; 3] {
    let n = comm.size() as f64;
    [-super::max_f64(comm, -x), super::sum_f64(comm, x) / n, super::max_f64(comm, x)]
}

#[cfg(test)]
mod tests {
    #[test]
    fn peak_rss_and_node_memory_are_read() {
        let mut big = vec![0u8; 64 << 20];
        for (i, b) in big.iter_mut().enumerate() {
            *b = i as u8;
        }
        std::hint::black_box(&big);
        assert!(super::peak_rss() >= 64 << 20, "{}", super::peak_rss());
        assert!(super::node_memory().unwrap() > super::peak_rss());
        drop(big);
    }
}
