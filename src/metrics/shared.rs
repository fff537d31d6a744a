//! The figures of the shared state read at each scrape: connections of both listeners,
//! MongoDB's opcounters, the pool and the store's statement times, the metadata cache,
//! the fast verification path — each read from the counter its area keeps, which
//! `serverStatus` reads too.
//!
//! Not for: a front end's own figures (cursors, sessions, its limits: its `MetricSource`).

use super::{MetricSource, Samples};
use crate::state::{AppState, ServerCounters};

impl MetricSource for AppState {
    fn sample(&self, samples: &mut Samples) {
        let counters = &self.counters;
        let get = ServerCounters::get;
        for (listener, current, total) in [
            (
                "mongo",
                &counters.connections_current,
                &counters.connections_total,
            ),
            (
                "rest",
                &counters.rest_connections_current,
                &counters.rest_connections_total,
            ),
        ] {
            samples.gauge(
                "docgate_connections",
                "Client connections open now, by listener",
                &[("listener", listener)],
                get(current) as f64,
            );
            samples.counter(
                "docgate_connections_opened",
                "Client connections accepted since start, by listener",
                &[("listener", listener)],
                get(total),
            );
        }
        for (kind, counter) in [
            ("insert", &counters.op_insert),
            ("query", &counters.op_query),
            ("update", &counters.op_update),
            ("delete", &counters.op_delete),
            ("getmore", &counters.op_getmore),
            ("command", &counters.op_command),
        ] {
            samples.counter(
                "docgate_mongo_opcounters",
                "serverStatus opcounters: operations by type since start",
                &[("type", kind)],
                get(counter),
            );
        }
        self.sample_store(samples);
        self.sample_caches(samples);
        samples.gauge(
            "docgate_limit",
            "Each limit as configured, by its setting (0: none)",
            &[("limit", "shutdown_grace_seconds")],
            self.settings.shutdown_grace.as_secs_f64(),
        );
        samples.gauge(
            "docgate_uptime_seconds",
            "Seconds since the process started serving",
            &[],
            self.started.elapsed().as_secs_f64(),
        );
    }
}

impl AppState {
    fn sample_store(&self, samples: &mut Samples) {
        let pool = self.store.pool_status();
        let backend = [("backend", self.store.backend_name())];
        for (name, help, value) in [
            (
                "docgate_pool_max_connections",
                "Most connections the pool opens (pool.max)",
                pool.max_size,
            ),
            (
                "docgate_pool_connections",
                "Connections the pool holds now",
                pool.size,
            ),
            (
                "docgate_pool_connections_in_use",
                "Pooled connections checked out now (a transaction holds one for its life)",
                pool.in_use,
            ),
            (
                "docgate_pool_waiting",
                "Callers waiting for a pooled connection now",
                pool.waiting,
            ),
        ] {
            samples.gauge(name, help, &backend, value as f64);
        }
        let counters = self.store.counters();
        let get = ServerCounters::get;
        samples.counter(
            "docgate_pool_checkouts",
            "Connections checked out of the pool since start",
            &backend,
            get(&counters.checkouts),
        );
        samples.counter(
            "docgate_pool_waits",
            "Checkouts that found a full pool busy and waited",
            &backend,
            get(&counters.waits),
        );
        samples.counter(
            "docgate_pool_timeouts",
            "Checkouts that waited pool.wait_timeout in vain",
            &backend,
            get(&counters.timeouts),
        );
        samples.histogram(
            "docgate_store_statement_duration_seconds",
            "Time the backend took per statement (SQLite: per call on the connection)",
            &counters.statement_seconds,
        );
    }

    fn sample_caches(&self, samples: &mut Samples) {
        let cache = self.catalog.counters();
        let get = ServerCounters::get;
        for (kind, result, counter) in [
            ("catalog", "hit", &cache.snapshot_hits),
            ("catalog", "miss", &cache.snapshot_misses),
            ("records", "hit", &cache.record_hits),
            ("records", "miss", &cache.record_misses),
        ] {
            samples.counter(
                "docgate_metadata_cache_lookups",
                "Metadata cache lookups by cache (catalog: collections and indexes; records: \
                 users, REST modules, ...) and result",
                &[("cache", kind), ("result", result)],
                get(counter),
            );
        }
        for (source, counter) in [
            ("local", &cache.local_invalidations),
            ("announced", &cache.announced_invalidations),
        ] {
            samples.counter(
                "docgate_catalog_invalidations",
                "Times the metadata cache was dropped: after this process changed the catalog \
                 (local), or on another instance's announcement (announced)",
                &[("source", source)],
                get(counter),
            );
        }
        let verifier = self.auth.verifier();
        for (result, value) in [
            ("hit", verifier.cache_hits()),
            ("miss", verifier.cache_misses()),
        ] {
            samples.counter(
                "docgate_auth_fast_path_lookups",
                "Password verifications (PLAIN, HTTP Basic) answered by the fast path's cache \
                 (hit) or not (miss)",
                &[("result", result)],
                value,
            );
        }
        samples.counter(
            "docgate_auth_pbkdf2_runs",
            "Password verifications that ran PBKDF2",
            &[],
            verifier.pbkdf2_runs(),
        );
    }
}
