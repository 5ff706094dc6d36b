//! Prometheus metrics of the daemon (OpenMetrics text on `GET /metrics`).
//!
//! Per-watch series carry a `watch` label (removed when a watch leaves the config); the
//! refresh duration histogram is labelled by outcome only, so 2,000 watches do not make
//! 2,000 histograms.

use crate::refresh::{Action, Outcome};
use crate::registry::WatchStatus;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::sync::atomic::AtomicU64;

type Labels = Vec<(String, String)>;
type FloatGauge = Gauge<f64, AtomicU64>;

pub struct Metrics {
    registry: Registry,
    last_check: Family<Labels, FloatGauge>,
    last_success: Family<Labels, FloatGauge>,
    status: Family<Labels, Gauge>,
    consecutive_failures: Family<Labels, Gauge>,
    fetch_bytes: Family<Labels, Counter>,
    not_modified: Family<Labels, Counter>,
    refreshes: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    duration: Family<Labels, Histogram, fn() -> Histogram>,
    pub pending_reviews: Gauge,
    pub registry_version: Gauge,
    pub watches: Gauge,
    pub in_flight: Gauge,
    pub reload_successful: Gauge,
    pub reload_success_timestamp: FloatGauge,
    pub reloads: Family<Labels, Counter>,
}

fn duration_histogram() -> Histogram {
    // 10 ms .. about 82 s.
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

fn watch_label(watch: &str) -> Labels {
    vec![("watch".to_string(), watch.to_string())]
}

/// Seconds since the Unix epoch, as a float.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("schemawatch");
        let m = Metrics {
            registry: Registry::default(),
            last_check: Family::default(),
            last_success: Family::default(),
            status: Family::default(),
            consecutive_failures: Family::default(),
            fetch_bytes: Family::default(),
            not_modified: Family::default(),
            refreshes: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            pending_reviews: Gauge::default(),
            registry_version: Gauge::default(),
            watches: Gauge::default(),
            in_flight: Gauge::default(),
            reload_successful: Gauge::default(),
            reload_success_timestamp: FloatGauge::default(),
            reloads: Family::default(),
        };
        registry.register(
            "watch_last_check_timestamp_seconds",
            "Unix time of the watch's last completed refresh",
            m.last_check.clone(),
        );
        registry.register(
            "watch_last_success_timestamp_seconds",
            "Unix time of the watch's last refresh that did not fail",
            m.last_success.clone(),
        );
        registry.register(
            "watch_status",
            "1 for the watch's current status, 0 for the others",
            m.status.clone(),
        );
        registry.register(
            "watch_consecutive_failures",
            "Failed refreshes in a row (drives the backoff)",
            m.consecutive_failures.clone(),
        );
        registry.register(
            "fetch_bytes",
            "Document bytes fetched (after decompression)",
            m.fetch_bytes.clone(),
        );
        registry.register(
            "fetch_not_modified",
            "Conditional fetches answered 304 Not Modified",
            m.not_modified.clone(),
        );
        registry.register(
            "refreshes",
            "Completed refresh cycles by outcome",
            m.refreshes.clone(),
        );
        registry.register(
            "refresh_errors",
            "Failed refresh cycles by error class",
            m.errors.clone(),
        );
        registry.register(
            "refresh_duration_seconds",
            "Wall time of one refresh cycle, by outcome",
            m.duration.clone(),
        );
        registry.register(
            "pending_reviews",
            "Open pending reviews",
            m.pending_reviews.clone(),
        );
        registry.register(
            "registry_version",
            "The registry's monotonic version",
            m.registry_version.clone(),
        );
        registry.register("watches", "Configured watches", m.watches.clone());
        registry.register(
            "refreshes_in_flight",
            "Refreshes running now",
            m.in_flight.clone(),
        );
        registry.register(
            "config_last_reload_successful",
            "1 if the last config (re)load succeeded",
            m.reload_successful.clone(),
        );
        registry.register(
            "config_last_reload_success_timestamp_seconds",
            "Unix time of the last successful config (re)load",
            m.reload_success_timestamp.clone(),
        );
        registry.register(
            "config_reloads",
            "Config reload attempts by result",
            m.reloads.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Records one completed refresh of `watch`.
    pub fn record(&self, outcome: &Outcome, seconds: f64, consecutive_failures: i64) {
        let labels = watch_label(&outcome.watch);
        let now = unix_now();
        self.last_check.get_or_create(&labels).set(now);
        if outcome.action != Action::Error {
            self.last_success.get_or_create(&labels).set(now);
        }
        self.set_status(&outcome.watch, outcome.action.status());
        self.consecutive_failures
            .get_or_create(&labels)
            .set(consecutive_failures);
        self.fetch_bytes
            .get_or_create(&labels)
            .inc_by(outcome.fetched_bytes);
        let not_modified = self.not_modified.get_or_create(&labels);
        if outcome.not_modified {
            not_modified.inc();
        }
        let action = vec![("outcome".to_string(), outcome.action.as_str().to_string())];
        self.refreshes.get_or_create(&action).inc();
        self.duration.get_or_create(&action).observe(seconds);
        if let Some(class) = outcome.error_class {
            self.errors
                .get_or_create(&vec![("class".to_string(), class.to_string())])
                .inc();
        }
    }

    /// A refresh abandoned at its deadline (no outcome).
    pub fn record_deadline(&self, watch: &str, seconds: f64) {
        self.last_check
            .get_or_create(&watch_label(watch))
            .set(unix_now());
        self.set_status(watch, WatchStatus::Error);
        let action = vec![("outcome".to_string(), "error".to_string())];
        self.refreshes.get_or_create(&action).inc();
        self.duration.get_or_create(&action).observe(seconds);
        self.errors
            .get_or_create(&vec![("class".to_string(), "deadline".to_string())])
            .inc();
    }

    /// Sets the one-hot `schemawatch_watch_status` series of a watch (one per status).
    pub fn set_status(&self, watch: &str, status: WatchStatus) {
        for s in WatchStatus::ALL {
            let labels = vec![
                ("watch".to_string(), watch.to_string()),
                ("status".to_string(), s.to_string()),
            ];
            self.status
                .get_or_create(&labels)
                .set(i64::from(*s == status));
        }
    }

    /// Drops the per-watch series of a watch that left the config.
    pub fn forget_watch(&self, watch: &str) {
        let labels = watch_label(watch);
        self.last_check.remove(&labels);
        self.last_success.remove(&labels);
        self.consecutive_failures.remove(&labels);
        self.fetch_bytes.remove(&labels);
        self.not_modified.remove(&labels);
        for s in WatchStatus::ALL {
            self.status.remove(&vec![
                ("watch".to_string(), watch.to_string()),
                ("status".to_string(), s.to_string()),
            ]);
        }
    }

    pub fn record_reload(&self, ok: bool) {
        self.reload_successful.set(i64::from(ok));
        if ok {
            self.reload_success_timestamp.set(unix_now());
        }
        let result = if ok { "success" } else { "failure" };
        self.reloads
            .get_or_create(&vec![("result".to_string(), result.to_string())])
            .inc();
    }

    /// The OpenMetrics text exposition.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }
}
