//! Throttling of failed authentication attempts per user name.
//!
//! After `security.credentials.attempts` consecutive failures (default 5) a user name is
//! locked for `security.credentials.lock_time` (default 10 minutes here): every attempt is
//! refused with the same 18 AuthenticationFailed as a wrong password, before any credential
//! is looked at. A success resets the count. Names are tracked whether or not the user
//! exists, so locking does not tell an attacker which users are real.
//!
//! State lives in a bounded moka cache (`max_tracked` names); a name idle for longer than
//! `max(lock_time, 15 minutes)` is forgotten, failures and all. An attacker who sprays more
//! than `max_tracked` names within that time can push a locked name out early; the bound is
//! what keeps the spray from exhausting memory.

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

/// Failed-attempt counts and locks, per user name.
pub struct Throttle {
    settings: ThrottleSettings,
    users: Cache<String, Arc<Mutex<Attempts>>>,
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
        Throttle { settings, users }
    }

    /// The settings this throttle was made with.
    pub fn settings(&self) -> &ThrottleSettings {
        &self.settings
    }

    /// Call before authenticating `user`: 18 AuthenticationFailed while the name is locked.
    pub async fn check(&self, user: &str) -> Result<(), AuthError> {
        match self.locked_for(user).await {
            Some(_) => Err(AuthError::AuthenticationFailed),
            None => Ok(()),
        }
    }

    /// How much longer `user` stays locked, if it is.
    pub async fn locked_for(&self, user: &str) -> Option<Duration> {
        if self.settings.attempts == 0 {
            return None;
        }
        let state = self.users.get(user).await?;
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

    /// Records a failed attempt; returns whether `user` is now locked.
    pub async fn record_failure(&self, user: &str) -> bool {
        if self.settings.attempts == 0 {
            return false;
        }
        let state = self
            .users
            .get_with_by_ref(user, async { Arc::new(Mutex::new(Attempts::default())) })
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
            return true;
        }
        false
    }

    /// Records a successful authentication: the failure count starts over.
    pub async fn record_success(&self, user: &str) {
        self.users.invalidate(user).await;
    }

    /// Lifts a lock at once (for an administrator).
    pub async fn unlock(&self, user: &str) {
        self.users.invalidate(user).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert!(!throttle.record_failure("alice").await);
            assert_eq!(throttle.check("alice").await, Ok(()));
        }
        assert!(throttle.record_failure("alice").await);
        assert_eq!(
            throttle.check("alice").await,
            Err(AuthError::AuthenticationFailed)
        );
        assert!(throttle.locked_for("alice").await.is_some());
        // Other users are not affected.
        assert_eq!(throttle.check("bob").await, Ok(()));
    }

    #[tokio::test]
    async fn unknown_users_are_locked_the_same_way() {
        // The throttle never knows whether a user exists: any name is counted and locked.
        let throttle = Throttle::new(settings(2, 60_000));
        for name in ["real-user", "no-such-user"] {
            throttle.record_failure(name).await;
            throttle.record_failure(name).await;
            assert_eq!(
                throttle.check(name).await,
                Err(AuthError::AuthenticationFailed)
            );
        }
    }

    #[tokio::test]
    async fn a_success_resets_the_count() {
        let throttle = Throttle::new(settings(3, 60_000));
        throttle.record_failure("carol").await;
        throttle.record_failure("carol").await;
        throttle.record_success("carol").await;
        throttle.record_failure("carol").await;
        throttle.record_failure("carol").await;
        assert_eq!(throttle.check("carol").await, Ok(()));
        assert!(throttle.record_failure("carol").await);
    }

    #[tokio::test]
    async fn the_lock_ends_after_lock_time_and_counting_starts_over() {
        let throttle = Throttle::new(settings(2, 100));
        throttle.record_failure("dave").await;
        assert!(throttle.record_failure("dave").await);
        assert!(throttle.check("dave").await.is_err());
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(throttle.check("dave").await, Ok(()));
        assert!(!throttle.record_failure("dave").await, "count starts over");
    }

    #[tokio::test]
    async fn zero_attempts_disables_throttling_and_unlock_lifts_a_lock() {
        let off = Throttle::new(settings(0, 60_000));
        for _ in 0..10 {
            assert!(!off.record_failure("erin").await);
        }
        assert_eq!(off.check("erin").await, Ok(()));

        let on = Throttle::new(settings(1, 60_000));
        assert!(on.record_failure("frank").await);
        assert!(on.check("frank").await.is_err());
        on.unlock("frank").await;
        assert_eq!(on.check("frank").await, Ok(()));
    }
}
