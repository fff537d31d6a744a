//! Throttling of failed authentication attempts per user name *and* client address.
//!
//! After `security.credentials.attempts` consecutive failures (default 5) of one user name
//! from one client address, that name is locked for that address for
//! `security.credentials.lock_time` (default 10 minutes here): every attempt from there is
//! refused with the same 18 AuthenticationFailed as a wrong password, before any credential
//! is looked at. The same user from another address is not affected, so an outsider who
//! guesses wrong five times cannot lock the administrator out for everyone. A success resets
//! the count. Names are tracked whether or not the user exists, so locking does not tell an
//! attacker which users are real. A lock is logged (warn) and listed by `serverStatus`.
//!
//! State lives in a bounded moka cache (`max_tracked` name/address pairs); a pair idle for
//! longer than `max(lock_time, 15 minutes)` is forgotten, failures and all. An attacker who
//! sprays more than `max_tracked` pairs within that time can push a lock out early; the bound
//! is what keeps the spray from exhausting memory.

use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use moka::future::Cache;

use super::AuthError;

/// `security.credentials.*` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThrottleSettings {
    /// `security.credentials.attempts`: failures before the lock; 0 disables throttling.
    pub attempts: u32,
    /// `security.credentials.lock_time`: how long a user stays locked.
    pub lock_time: Duration,
    /// How many user names are tracked at most.
    pub max_tracked: u64,
}

impl Default for ThrottleSettings {
    fn default() -> Self {
        ThrottleSettings {
            attempts: 5,
            lock_time: Duration::from_secs(600),
            max_tracked: 100_000,
        }
    }
}

#[derive(Debug, Default)]
struct Attempts {
    failures: u32,
    locked_until: Option<Instant>,
}

/// Who is throttled: a user name (as `db.name`) from one client address.
type ThrottleKey = (String, IpAddr);

/// A lock in force, as `serverStatus` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActiveLock {
    pub user: String,
    pub client: IpAddr,
    pub remaining: Duration,
}

/// Failed-attempt counts and locks, per user name and client address.
pub struct Throttle {
    settings: ThrottleSettings,
    users: Cache<ThrottleKey, Arc<Mutex<Attempts>>>,
    locks_total: AtomicU64,
}

impl std::fmt::Debug for Throttle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Throttle")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl Throttle {
    /// A throttle with these settings.
    pub fn new(settings: ThrottleSettings) -> Self {
        let idle = settings.lock_time.max(Duration::from_secs(15 * 60));
        let users = Cache::builder()
            .max_capacity(settings.max_tracked)
            .time_to_idle(idle)
            .build();
        Throttle {
            settings,
            users,
            locks_total: AtomicU64::new(0),
        }
    }

    /// The settings this throttle was made with.
    pub fn settings(&self) -> &ThrottleSettings {
        &self.settings
    }

    /// Call before authenticating `user` from `client`: 18 AuthenticationFailed while the
    /// pair is locked.
    pub async fn check(&self, user: &str, client: IpAddr) -> Result<(), AuthError> {
        match self.locked_for(user, client).await {
            Some(_) => Err(AuthError::AuthenticationFailed),
            None => Ok(()),
        }
    }

    /// How much longer `user` stays locked for `client`, if it is.
    pub async fn locked_for(&self, user: &str, client: IpAddr) -> Option<Duration> {
        if self.settings.attempts == 0 {
            return None;
        }
        let state = self.users.get(&(user.to_owned(), client)).await?;
        let mut attempts = state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let until = attempts.locked_until?;
        let now = Instant::now();
        if now < until {
            Some(until - now)
        } else {
            // The lock is over: start counting afresh.
            *attempts = Attempts::default();
            None
        }
    }

    /// Records a failed attempt; returns whether `user` is now locked for `client`.
    pub async fn record_failure(&self, user: &str, client: IpAddr) -> bool {
        if self.settings.attempts == 0 {
            return false;
        }
        let state = self
            .users
            .get_with((user.to_owned(), client), async {
                Arc::new(Mutex::new(Attempts::default()))
            })
            .await;
        let mut attempts = state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let now = Instant::now();
        match attempts.locked_until {
            Some(until) if now < until => return true,
            Some(_) => *attempts = Attempts::default(),
            None => {}
        }
        attempts.failures = attempts.failures.saturating_add(1);
        if attempts.failures >= self.settings.attempts {
            attempts.failures = 0;
            attempts.locked_until = Some(now + self.settings.lock_time);
            self.locks_total.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                user,
                %client,
                attempts = self.settings.attempts,
                lock_time = ?self.settings.lock_time,
                "user locked for this client address after repeated failed authentication"
            );
            return true;
        }
        false
    }

    /// Records a successful authentication: the failure count starts over.
    pub async fn record_success(&self, user: &str, client: IpAddr) {
        self.users.invalidate(&(user.to_owned(), client)).await;
    }

    /// Lifts a lock at once (for an administrator).
    pub async fn unlock(&self, user: &str, client: IpAddr) {
        self.users.invalidate(&(user.to_owned(), client)).await;
    }

    /// How many locks were imposed since start.
    pub fn locks_total(&self) -> u64 {
        self.locks_total.load(Ordering::Relaxed)
    }

    /// The locks in force now (at most `max` of them, in no particular order) and how many
    /// there are in all.
    pub fn active_locks(&self, max: usize) -> (Vec<ActiveLock>, usize) {
        let now = Instant::now();
        let mut listed = Vec::new();
        let mut count = 0;
        for (key, state) in self.users.iter() {
            let attempts = state
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            let Some(until) = attempts.locked_until.filter(|until| *until > now) else {
                continue;
            };
            count += 1;
            if listed.len() < max {
                listed.push(ActiveLock {
                    user: key.0.clone(),
                    client: key.1,
                    remaining: until - now,
                });
            }
        }
        (listed, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOME: IpAddr = IpAddr::V4(std::net::Ipv4Addr::LOCALHOST);
    const ELSEWHERE: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 7));

    fn settings(attempts: u32, lock_ms: u64) -> ThrottleSettings {
        ThrottleSettings {
            attempts,
            lock_time: Duration::from_millis(lock_ms),
            max_tracked: 1000,
        }
    }

    #[tokio::test]
    async fn locks_after_n_failures_with_the_same_error_as_a_wrong_password() {
        let throttle = Throttle::new(settings(3, 60_000));
        for _ in 0..2 {
            assert!(!throttle.record_failure("alice", HOME).await);
            assert_eq!(throttle.check("alice", HOME).await, Ok(()));
        }
        assert!(throttle.record_failure("alice", HOME).await);
        assert_eq!(
            throttle.check("alice", HOME).await,
            Err(AuthError::AuthenticationFailed)
        );
        assert!(throttle.locked_for("alice", HOME).await.is_some());
        // Other users are not affected, nor the same user from another address.
        assert_eq!(throttle.check("bob", HOME).await, Ok(()));
        assert_eq!(throttle.check("alice", ELSEWHERE).await, Ok(()));
        let (locks, count) = throttle.active_locks(10);
        assert_eq!(count, 1);
        assert_eq!((locks[0].user.as_str(), locks[0].client), ("alice", HOME));
        assert_eq!(throttle.locks_total(), 1);
    }

    #[tokio::test]
    async fn unknown_users_are_locked_the_same_way() {
        // The throttle never knows whether a user exists: any name is counted and locked.
        let throttle = Throttle::new(settings(2, 60_000));
        for name in ["real-user", "no-such-user"] {
            throttle.record_failure(name, HOME).await;
            throttle.record_failure(name, HOME).await;
            assert_eq!(
                throttle.check(name, HOME).await,
                Err(AuthError::AuthenticationFailed)
            );
        }
    }

    #[tokio::test]
    async fn a_success_resets_the_count() {
        let throttle = Throttle::new(settings(3, 60_000));
        throttle.record_failure("carol", HOME).await;
        throttle.record_failure("carol", HOME).await;
        throttle.record_success("carol", HOME).await;
        throttle.record_failure("carol", HOME).await;
        throttle.record_failure("carol", HOME).await;
        assert_eq!(throttle.check("carol", HOME).await, Ok(()));
        assert!(throttle.record_failure("carol", HOME).await);
    }

    #[tokio::test]
    async fn the_lock_ends_after_lock_time_and_counting_starts_over() {
        let throttle = Throttle::new(settings(2, 100));
        throttle.record_failure("dave", HOME).await;
        assert!(throttle.record_failure("dave", HOME).await);
        assert!(throttle.check("dave", HOME).await.is_err());
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(throttle.check("dave", HOME).await, Ok(()));
        assert!(
            !throttle.record_failure("dave", HOME).await,
            "count starts over"
        );
    }

    #[tokio::test]
    async fn zero_attempts_disables_throttling_and_unlock_lifts_a_lock() {
        let off = Throttle::new(settings(0, 60_000));
        for _ in 0..10 {
            assert!(!off.record_failure("erin", HOME).await);
        }
        assert_eq!(off.check("erin", HOME).await, Ok(()));

        let on = Throttle::new(settings(1, 60_000));
        assert!(on.record_failure("frank", HOME).await);
        assert!(on.check("frank", HOME).await.is_err());
        on.unlock("frank", HOME).await;
        assert_eq!(on.check("frank", HOME).await, Ok(()));
    }
}
