//! The database profiler and the slow-operation threshold, as MongoDB's `profile` command
//! sets them: a level per database (0 off, 1 slow operations, 2 every operation) and a
//! `filter` per database (a query over the profile entry that decides instead of the
//! threshold), and, for the whole server, `slowms` (starts at `--slow-op-threshold`) and
//! `sampleRate` (the share of slow operations logged and profiled).
//!
//! `system.profile` is kept in memory, per database, bounded like MongoDB's default capped
//! collection (1 MiB of entries, oldest dropped first), and lost at restart (MongoDB's
//! profiler settings are too).
//!
//! Not for: what an entry holds (the front end that ran the operation builds it), reading
//! `system.profile` with `find`/`aggregate` (the front end runs the query over
//! [`Profiler::entries`]), or the log line of a slow operation.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use bson::Document;

use crate::query::Filter;

/// Bytes of entries kept per database (MongoDB's default `system.profile` size).
pub const PROFILE_BYTES: usize = 1024 * 1024;

/// One database's profiling settings.
#[derive(Debug, Clone, Default)]
struct DatabaseProfiling {
    level: i32,
    /// The filter as given, and parsed.
    filter: Option<(Document, Filter)>,
}

/// The settings `profile` answers (its `was`, `slowms`, `sampleRate` and `filter`).
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileSettings {
    pub level: i32,
    pub slow_ms: i64,
    pub sample_rate: f64,
    pub filter: Option<Document>,
}

/// What `profile` changes; `None` leaves a setting as it is.
#[derive(Debug, Default)]
pub struct ProfileChange {
    /// 0, 1 or 2 (-1, reading only, is `None`).
    pub level: Option<i32>,
    pub slow_ms: Option<i64>,
    pub sample_rate: Option<f64>,
    /// `Some(None)`: unset the filter.
    pub filter: Option<Option<(Document, Filter)>>,
}

/// What to do with a finished operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Verdict {
    /// Log it as a slow operation.
    pub log: bool,
    /// Record it in its database's `system.profile`.
    pub profile: bool,
}

/// Entries of one database, oldest first, and their size.
#[derive(Debug, Default)]
struct ProfileLog {
    entries: VecDeque<Document>,
    bytes: usize,
}

/// Profiling levels and filters, `slowms`, `sampleRate`, and every `system.profile`.
#[derive(Debug)]
pub struct Profiler {
    slow_ms: AtomicI64,
    /// `sampleRate` as its bits (an f64).
    sample_rate: AtomicI64,
    databases: Mutex<HashMap<String, DatabaseProfiling>>,
    logs: Mutex<HashMap<String, ProfileLog>>,
}

impl Profiler {
    /// A profiler with every level 0 and `slowms` at `slow_threshold`.
    pub fn new(slow_threshold: Duration) -> Profiler {
        Profiler {
            slow_ms: AtomicI64::new(i64::try_from(slow_threshold.as_millis()).unwrap_or(i64::MAX)),
            sample_rate: AtomicI64::new(1.0f64.to_bits() as i64),
            databases: Mutex::new(HashMap::new()),
            logs: Mutex::new(HashMap::new()),
        }
    }

    /// The settings of database `db`.
    pub fn settings(&self, db: &str) -> ProfileSettings {
        let database = self
            .databases
            .lock()
            .ok()
            .and_then(|databases| databases.get(db).cloned())
            .unwrap_or_default();
        ProfileSettings {
            level: database.level,
            slow_ms: self.slow_ms.load(Ordering::Relaxed),
            sample_rate: self.sample_rate(),
            filter: database.filter.map(|(given, _)| given),
        }
    }

    fn sample_rate(&self) -> f64 {
        f64::from_bits(self.sample_rate.load(Ordering::Relaxed) as u64)
    }

    /// Applies `change` to database `db` (level and filter) and the server (`slowms`,
    /// `sampleRate`); answers the settings before.
    pub fn configure(&self, db: &str, change: ProfileChange) -> ProfileSettings {
        let before = self.settings(db);
        if let Some(slow_ms) = change.slow_ms {
            self.slow_ms.store(slow_ms, Ordering::Relaxed);
        }
        if let Some(rate) = change.sample_rate {
            self.sample_rate
                .store(rate.to_bits() as i64, Ordering::Relaxed);
        }
        if let Ok(mut databases) = self.databases.lock() {
            let database = databases.entry(db.to_string()).or_default();
            if let Some(level) = change.level {
                database.level = level;
            }
            if let Some(filter) = change.filter {
                database.filter = filter;
            }
        }
        let after = self.settings(db);
        if after != before {
            tracing::info!(
                db,
                from = ?(before.level, before.slow_ms, before.sample_rate),
                to = ?(after.level, after.slow_ms, after.sample_rate),
                filter = after.filter.as_ref().map(|f| f.to_string()),
                "Profiler settings changed"
            );
        }
        before
    }

    /// Whether an operation of `db` that took `millis` is logged as slow and profiled;
    /// `entry` (its profile entry) is built only when a filter must look at it.
    pub fn verdict(&self, db: &str, millis: i64, entry: impl FnOnce() -> Document) -> Verdict {
        let (level, filter) = match self.databases.lock() {
            Ok(databases) => match databases.get(db) {
                Some(database) => (
                    database.level,
                    database.filter.as_ref().map(|(_, filter)| filter.clone()),
                ),
                None => (0, None),
            },
            Err(_) => (0, None),
        };
        let slow = match filter {
            Some(filter) => filter.matches(&entry()),
            None => {
                millis >= self.slow_ms.load(Ordering::Relaxed) && {
                    let rate = self.sample_rate();
                    rate >= 1.0 || rand::random::<f64>() < rate
                }
            }
        };
        Verdict {
            log: slow,
            profile: level == 2 || (level == 1 && slow),
        }
    }

    /// Adds `entry` to `db`'s `system.profile`, dropping the oldest past [`PROFILE_BYTES`].
    pub fn record(&self, db: &str, entry: Document) {
        let size = entry.to_vec().map_or(0, |bytes| bytes.len());
        let Ok(mut logs) = self.logs.lock() else {
            return;
        };
        let log = logs.entry(db.to_string()).or_default();
        log.entries.push_back(entry);
        log.bytes += size;
        while log.bytes > PROFILE_BYTES && log.entries.len() > 1 {
            if let Some(oldest) = log.entries.pop_front() {
                log.bytes -= oldest.to_vec().map_or(0, |bytes| bytes.len());
            }
        }
    }

    /// `db`'s `system.profile`, oldest first (its natural order).
    pub fn entries(&self, db: &str) -> Vec<Document> {
        match self.logs.lock() {
            Ok(logs) => logs
                .get(db)
                .map(|log| log.entries.iter().cloned().collect())
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    /// Drops `db`'s `system.profile` (`drop` of it, or of its database).
    pub fn clear(&self, db: &str) {
        if let Ok(mut logs) = self.logs.lock() {
            logs.remove(db);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn levels_decide_what_is_profiled_and_slowms_what_is_slow() {
        let profiler = Profiler::new(Duration::from_millis(100));
        let entry = || doc! {"op": "query"};
        assert_eq!(profiler.verdict("db", 5, entry), Verdict::default());
        assert!(profiler.verdict("db", 150, entry).log);
        assert!(!profiler.verdict("db", 150, entry).profile);
        let before = profiler.configure(
            "db",
            ProfileChange {
                level: Some(1),
                slow_ms: Some(20),
                ..ProfileChange::default()
            },
        );
        assert_eq!((before.level, before.slow_ms), (0, 100));
        assert_eq!(
            profiler.verdict("db", 30, entry),
            Verdict {
                log: true,
                profile: true
            }
        );
        assert!(!profiler.verdict("db", 10, entry).profile);
        assert!(!profiler.verdict("other", 30, entry).profile);
        profiler.configure(
            "db",
            ProfileChange {
                level: Some(2),
                ..ProfileChange::default()
            },
        );
        assert!(profiler.verdict("db", 0, entry).profile);
    }

    #[test]
    fn a_filter_decides_instead_of_the_threshold() {
        let profiler = Profiler::new(Duration::from_millis(100));
        let filter = doc! {"op": "update"};
        profiler.configure(
            "db",
            ProfileChange {
                level: Some(1),
                filter: Some(Some((filter.clone(), Filter::parse(&filter).unwrap()))),
                ..ProfileChange::default()
            },
        );
        assert!(profiler.verdict("db", 0, || doc! {"op": "update"}).profile);
        assert!(!profiler.verdict("db", 500, || doc! {"op": "query"}).profile);
        assert_eq!(profiler.settings("db").filter, Some(filter));
    }

    #[test]
    fn system_profile_keeps_the_newest_within_its_size() {
        let profiler = Profiler::new(Duration::from_millis(100));
        let padding = "x".repeat(1000);
        for n in 0..2000 {
            profiler.record("db", doc! {"n": n, "padding": &padding});
        }
        let entries = profiler.entries("db");
        assert!(
            entries.len() < 2000 && entries.len() > 900,
            "{}",
            entries.len()
        );
        assert_eq!(entries.last().and_then(|e| e.get_i32("n").ok()), Some(1999));
    }
}
