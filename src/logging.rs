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
