//! The cluster time: a hybrid logical clock whose value every reply of the replica-set face
//! carries (`$clusterTime`, `operationTime`) and that writes tick for their `operationTime`.
//! Seconds come from the wall clock, the increment counts events within a second; the clock
//! only moves forward — a wall clock that steps back, or a client's (or another instance's)
//! later time, never makes it go back.
//!
//! Gossip is not authenticated: docgate does not sign its cluster times (the signature it
//! sends is MongoDB's all-zero one with key id 0) and does not validate the signature of a
//! time a client sends, so a client can move the clock forward at will (never back). MongoDB
//! refuses unsigned gossip only when it runs with keyfile authentication between members,
//! which a one-member set without peers has no use for.
//!
//! Not for: how the time travels in a reply (the mongo front end's `replication` commands).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bson::Timestamp;

/// A cluster time that only moves forward, packed as `seconds << 32 | increment` so that one
/// atomic holds it and `+ 1` carries an exhausted increment into the next second.
#[derive(Debug)]
pub struct ClusterClock {
    packed: AtomicU64,
}

impl Default for ClusterClock {
    fn default() -> Self {
        ClusterClock::new()
    }
}

impl ClusterClock {
    /// A clock at the wall clock's current second, increment 0.
    pub fn new() -> ClusterClock {
        ClusterClock {
            packed: AtomicU64::new(wall_clock()),
        }
    }

    /// The current time, without ticking: never earlier than any time this clock answered,
    /// and not earlier than the wall clock's second.
    pub fn now(&self) -> Timestamp {
        let wall = wall_clock();
        let previous = self.packed.fetch_max(wall, Ordering::AcqRel);
        unpack(previous.max(wall))
    }

    /// A new time, strictly later than every time this clock answered before (a write's
    /// `operationTime`).
    pub fn tick(&self) -> Timestamp {
        let wall = wall_clock();
        let mut current = self.packed.load(Ordering::Acquire);
        loop {
            let next = current.max(wall).saturating_add(1);
            match self.packed.compare_exchange_weak(
                current,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return unpack(next),
                Err(seen) => current = seen,
            }
        }
    }

    /// Moves the clock forward to `time` if it is later (gossip); never back. Callers check
    /// [`ClusterClock::within_drift`] first for times that come from clients.
    pub fn advance_to(&self, time: Timestamp) {
        self.packed.fetch_max(pack(time), Ordering::AcqRel);
    }

    /// Whether a gossiped time is close enough to the wall clock to accept: at most
    /// [`MAX_DRIFT_SECS`] ahead, as MongoDB's `maxAcceptableLogicalClockDriftSecs` (a client
    /// cannot push the clock to the end of time, where ticks could no longer increase).
    pub fn within_drift(&self, time: Timestamp) -> bool {
        let wall = (wall_clock() >> 32) as u32;
        u64::from(time.time) <= u64::from(wall) + MAX_DRIFT_SECS
    }
}

/// How far ahead of the wall clock a gossiped cluster time may be (MongoDB's default of
/// `maxAcceptableLogicalClockDriftSecs`: one year).
pub const MAX_DRIFT_SECS: u64 = 365 * 24 * 60 * 60;

fn pack(time: Timestamp) -> u64 {
    (u64::from(time.time) << 32) | u64::from(time.increment)
}

fn unpack(packed: u64) -> Timestamp {
    Timestamp {
        time: (packed >> 32) as u32,
        increment: packed as u32,
    }
}

/// The wall clock's current second, increment 0.
fn wall_clock() -> u64 {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0);
    u64::from(u32::try_from(seconds).unwrap_or(u32::MAX)) << 32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_strictly_increasing_and_now_does_not_tick() {
        let clock = ClusterClock::new();
        let first = clock.now();
        assert_eq!(clock.now(), first);
        let a = clock.tick();
        let b = clock.tick();
        assert!(a > first && b > a, "{first:?} {a:?} {b:?}");
        assert_eq!(clock.now(), b);
    }

    #[test]
    fn gossip_moves_forward_only() {
        let clock = ClusterClock::new();
        let later = Timestamp {
            time: clock.now().time + 100,
            increment: 7,
        };
        clock.advance_to(later);
        assert_eq!(clock.now(), later);
        clock.advance_to(Timestamp {
            time: 1,
            increment: 0,
        });
        assert_eq!(clock.now(), later);
        assert_eq!(
            clock.tick(),
            Timestamp {
                time: later.time,
                increment: 8
            }
        );
    }

    #[test]
    fn times_too_far_ahead_are_outside_the_drift() {
        let clock = ClusterClock::new();
        let now = clock.now();
        assert!(clock.within_drift(now));
        assert!(clock.within_drift(Timestamp {
            time: now.time + 3600,
            increment: 0
        }));
        assert!(!clock.within_drift(Timestamp {
            time: u32::MAX,
            increment: 0
        }));
    }

    #[test]
    fn an_exhausted_increment_carries_into_the_next_second() {
        let clock = ClusterClock::new();
        let full = Timestamp {
            time: clock.now().time + 10,
            increment: u32::MAX,
        };
        clock.advance_to(full);
        assert_eq!(
            clock.tick(),
            Timestamp {
                time: full.time + 1,
                increment: 0
            }
        );
    }

    #[test]
    fn concurrent_ticks_are_all_distinct() {
        let clock = std::sync::Arc::new(ClusterClock::new());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let clock = clock.clone();
                std::thread::spawn(move || (0..1000).map(|_| clock.tick()).collect::<Vec<_>>())
            })
            .collect();
        let mut all: Vec<Timestamp> = threads
            .into_iter()
            .flat_map(|t| t.join().unwrap_or_default())
            .collect();
        let n = all.len();
        all.sort();
        all.dedup();
        assert_eq!(all.len(), n);
    }
}
