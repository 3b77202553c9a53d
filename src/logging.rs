//! A `log` backend that prints from rank 0 only (every rank with `-v`,
//! prefixed by its rank), warnings and errors to stderr.
use log::{Level, LevelFilter, Metadata, Record};

struct RankLogger {
    rank: i32,
    all_ranks: bool,
}

impl log::Log for RankLogger {
    fn enabled(&self, m: &Metadata) -> bool {
        self.rank == 0 || self.all_ranks || m.level() <= Level::Error
    }
    fn log(&self, r: &Record) {
        if !self.enabled(r.metadata()) {
            return;
        }
        let prefix = if self.all_ranks { format!("[{}] ", self.rank) } else { String::new() };
        match r.level() {
            Level::Error => eprintln!("{prefix}error: {}", r.args()),
            Level::Warn => eprintln!("{prefix}warning: {}", r.args()),
            _ => println!("{prefix}{}", r.args()),
        }
    }
    fn flush(&self) {}
}

/// Installs the logger once; `verbose` shows debug messages from every rank.
pub fn init(rank: i32, verbose: bool) {
    let logger = Box::new(RankLogger { rank, all_ranks: verbose });
    if log::set_boxed_logger(logger).is_ok() {
        log::set_max_level(if verbose { LevelFilter::Debug } else { LevelFilter::Info });
    }
}

/// A number for messages: at most 6 significant digits, trailing zeros
/// dropped (`2.6e-2`, not the `2.6000000000000002e-2` of a sum of steps).
pub fn num(x: f64) -> String {
    if !x.is_finite() || x == 0.0 {
        return format!("{x}");
    }
    let s = format!("{x:.5e}");
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let mantissa = if mantissa.contains('.') { mantissa.trim_end_matches('0').trim_end_matches('.') } else { mantissa };
    format!("{mantissa}e{exp}")
}

/// Steps that miss their tolerance and are each warned; after them, every
/// `WARN_EVERY`-th is (a dense frictional pack can miss at every step).
const WARN_FIRST: u64 = 10;
const WARN_EVERY: u64 = 100;

/// Whether the `n`-th step short of its tolerance (1-based) is warned,
/// and the end of its warning line: at the last one warned each time, what
/// follows (the steps are all counted under `counter` in summary.json);
/// later, the count so far.
pub fn step_warning(n: u64, counter: &str) -> Option<String> {
    match n {
        WARN_FIRST => Some(format!("; further such steps are counted in summary.json ({counter}) and warned every {WARN_EVERY}th")),
        n if n < WARN_FIRST => Some(String::new()),
        n if n % WARN_EVERY == 0 => Some(format!("; {n} such steps so far")),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{num, step_warning};

    #[test]
    fn steps_short_of_their_tolerance_are_warned_ten_then_every_hundredth() {
        let warned: Vec<u64> = (1..=1000).filter(|&n| step_warning(n, "c").is_some()).collect();
        let expected: Vec<u64> = (1..=10).chain((1..=10).map(|k| 100 * k)).collect();
        assert_eq!(warned, expected);
        assert_eq!(step_warning(3, "c").unwrap(), "");
        assert!(step_warning(10, "cd_steps_not_converged").unwrap().contains("(cd_steps_not_converged)"));
        assert_eq!(step_warning(300, "c").unwrap(), "; 300 such steps so far");
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(num(0.026000000000000002), "2.6e-2");
        assert_eq!(num(26.0 * 1e-3), "2.6e-2");
        assert_eq!(num(1.0), "1e0");
        assert_eq!(num(-0.5), "-5e-1");
        assert_eq!(num(123456789.0), "1.23457e8");
        assert_eq!(num(0.0), "0");
    }
}
