//! Prometheus metrics of the daemon (OpenMetrics text on `GET /metrics`).
//!
//! Bounded by default: aggregates are labelled by kind, action, status or error class, never
//! by watch. Series labelled by watch (`watch_status{watch,status}`, the last-check and
//! last-success timestamps, consecutive failures) exist only when per-watch metrics are on
//! (`[server] per_watch_metrics`, decided once at start), and then one `watch_status` series
//! per watch (its current status, value 1), not one per status.

use crate::refresh::{Action, Outcome};
use crate::registry::WatchStatus;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

type Labels = Vec<(String, String)>;
type FloatGauge = Gauge<f64, AtomicU64>;

pub struct Metrics {
    registry: Registry,
    per_watch: bool,
    last_check: Family<Labels, FloatGauge>,
    last_success: Family<Labels, FloatGauge>,
    status: Family<Labels, Gauge>,
    consecutive_failures: Family<Labels, Gauge>,
    by_status: Family<Labels, Gauge>,
    pub overdue: Gauge,
    fetch_bytes: Family<Labels, Counter>,
    not_modified: Family<Labels, Counter>,
    refreshes: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    duration: Family<Labels, Histogram, fn() -> Histogram>,
    schedule_lag: Histogram,
    /// Failed refreshes since start by class (the `/v1/summary` and `summary` log view of
    /// `refresh_errors_total`, summed over kinds).
    errors_by_class: Mutex<BTreeMap<&'static str, u64>>,
    pub pending_reviews: Gauge,
    /// Unix time the oldest open review was queued; 0 with none open (no watch label).
    pub oldest_pending_review: FloatGauge,
    pub registry_version: Gauge,
    /// In-scope accepted sunsets within their watch's `sunset_warning` (no watch label).
    pub sunsets_approaching: Gauge,
    pub watches: Gauge,
    pub in_flight: Gauge,
    pub reload_successful: Gauge,
    pub reload_success_timestamp: FloatGauge,
    pub reloads: Family<Labels, Counter>,
    /// Delivery attempts by sink and outcome (`delivered`, `retry`, `failed`, `gone`).
    notifications: Family<Labels, Counter>,
    /// Pending deliveries by sink.
    notifications_pending: Family<Labels, Gauge>,
    /// Time from an event's commit to its delivery.
    notification_latency: Histogram,
    /// The series one refresh moves, by (kind, action), created on first use and then reused:
    /// a refresh builds no label sets.
    handles: Mutex<HashMap<(&'static str, &'static str), RefreshHandles>>,
    /// `watches_by_status`, one gauge per `WatchStatus::ALL` entry, created up front.
    by_status_handles: Vec<Gauge>,
}

#[derive(Clone)]
struct RefreshHandles {
    fetch_bytes: Counter,
    not_modified: Counter,
    refreshes: Counter,
    duration: Histogram,
}

fn duration_histogram() -> Histogram {
    // 10 ms .. about 82 s.
    Histogram::new(exponential_buckets(0.01, 2.0, 14))
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `{kind, action, outcome}`: `outcome` is the label earlier releases documented and `action`
/// the name the aggregate was specified with; both carry the check action, so the second label
/// adds no series.
fn action_labels(kind: &str, action: &str) -> Labels {
    labels(&[("kind", kind), ("action", action), ("outcome", action)])
}

fn watch_label(watch: &str) -> Labels {
    labels(&[("watch", watch)])
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
        Metrics::new(true)
    }
}

impl Metrics {
    /// `per_watch`: whether series labelled by watch are kept (fixed for the process).
    pub fn new(per_watch: bool) -> Metrics {
        let mut registry = Registry::with_prefix("schemawatch");
        let m = Metrics {
            registry: Registry::default(),
            per_watch,
            last_check: Family::default(),
            last_success: Family::default(),
            status: Family::default(),
            consecutive_failures: Family::default(),
            by_status: Family::default(),
            overdue: Gauge::default(),
            fetch_bytes: Family::default(),
            not_modified: Family::default(),
            refreshes: Family::default(),
            errors: Family::default(),
            duration: Family::new_with_constructor(duration_histogram),
            // 5 ms .. about 164 s.
            schedule_lag: Histogram::new(exponential_buckets(0.005, 2.0, 16)),
            errors_by_class: Mutex::new(BTreeMap::new()),
            pending_reviews: Gauge::default(),
            oldest_pending_review: FloatGauge::default(),
            registry_version: Gauge::default(),
            sunsets_approaching: Gauge::default(),
            watches: Gauge::default(),
            in_flight: Gauge::default(),
            reload_successful: Gauge::default(),
            reload_success_timestamp: FloatGauge::default(),
            reloads: Family::default(),
            notifications: Family::default(),
            notifications_pending: Family::default(),
            // 10 ms .. about 23 h.
            notification_latency: Histogram::new(exponential_buckets(0.01, 3.0, 16)),
            handles: Mutex::new(HashMap::new()),
            by_status_handles: Vec::new(),
        };
        let mut m = m;
        m.by_status_handles = WatchStatus::ALL
            .iter()
            .map(|s| {
                m.by_status
                    .get_or_create(&labels(&[("status", s.as_str())]))
                    .clone()
            })
            .collect();
        if per_watch {
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
                "The watch's current status (one series per watch, value 1)",
                m.status.clone(),
            );
            registry.register(
                "watch_consecutive_failures",
                "Failed refreshes in a row (drives the backoff)",
                m.consecutive_failures.clone(),
            );
        }
        registry.register(
            "watches_by_status",
            "Configured watches by current status",
            m.by_status.clone(),
        );
        registry.register(
            "watches_overdue",
            "Watches past their due time by more than their interval",
            m.overdue.clone(),
        );
        registry.register(
            "fetch_bytes",
            "Document bytes fetched (after decompression), by kind",
            m.fetch_bytes.clone(),
        );
        registry.register(
            "fetch_not_modified",
            "Conditional fetches answered 304 Not Modified, by kind",
            m.not_modified.clone(),
        );
        registry.register(
            "refreshes",
            "Completed refresh cycles by kind and check action (labels action and outcome: the same value)",
            m.refreshes.clone(),
        );
        registry.register(
            "refresh_errors",
            "Failed refresh cycles by kind and error class",
            m.errors.clone(),
        );
        registry.register(
            "refresh_duration_seconds",
            "Wall time of one refresh cycle, by kind and check action (action = outcome)",
            m.duration.clone(),
        );
        registry.register(
            "schedule_lag_seconds",
            "How late refreshes start after their due time (waiting for a max_concurrency slot)",
            m.schedule_lag.clone(),
        );
        registry.register(
            "pending_reviews",
            "Open pending reviews",
            m.pending_reviews.clone(),
        );
        registry.register(
            "oldest_pending_review_timestamp_seconds",
            "Unix time the oldest open review was queued (0 when none is open)",
            m.oldest_pending_review.clone(),
        );
        registry.register(
            "registry_version",
            "The registry's monotonic version",
            m.registry_version.clone(),
        );
        registry.register(
            "sunsets_approaching",
            "Endpoints in use whose accepted sunset is within sunset_warning",
            m.sunsets_approaching.clone(),
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
        registry.register(
            "notifications",
            "Notification delivery attempts by sink and outcome (delivered, retry, failed, gone)",
            m.notifications.clone(),
        );
        registry.register(
            "notifications_pending",
            "Deliveries waiting to be sent, by sink",
            m.notifications_pending.clone(),
        );
        registry.register(
            "notification_delivery_seconds",
            "Time from an event's commit to its successful delivery",
            m.notification_latency.clone(),
        );
        // Every status has its series from the start (0 until a watch has it).
        for s in WatchStatus::ALL {
            m.by_status
                .get_or_create(&labels(&[("status", s.as_str())]))
                .set(0);
        }
        Metrics { registry, ..m }
    }

    /// One delivery attempt's end; `latency` (seconds since the event) when delivered.
    pub fn record_notification(&self, sink: &str, outcome: &str, latency: Option<f64>) {
        self.notifications
            .get_or_create(&labels(&[("sink", sink), ("outcome", outcome)]))
            .inc();
        if let Some(l) = latency {
            self.notification_latency.observe(l);
        }
    }

    /// Pending deliveries of each configured sink (0 for a sink with none).
    pub fn set_notifications_pending(&self, sinks: &[String], pending: &[(String, i64)]) {
        for sink in sinks {
            // Every outcome's series exists from the start, so `increase()` sees a sink's
            // first failure (a counter first seen at 1 has no increase).
            for outcome in ["delivered", "retry", "failed", "gone"] {
                let _ = self
                    .notifications
                    .get_or_create(&labels(&[("sink", sink), ("outcome", outcome)]));
            }
            let n = pending
                .iter()
                .find(|(s, _)| s == sink)
                .map_or(0, |(_, n)| *n);
            self.notifications_pending
                .get_or_create(&labels(&[("sink", sink)]))
                .set(n);
        }
    }

    /// Whether series labelled by watch are kept.
    pub fn per_watch(&self) -> bool {
        self.per_watch
    }

    /// Records one completed refresh of a watch of `kind` (its status is moved by the caller,
    /// which keeps the per-status counts).
    fn handles(&self, kind: &'static str, action: &'static str) -> RefreshHandles {
        let mut handles = match self.handles.lock() {
            Ok(h) => h,
            Err(poisoned) => poisoned.into_inner(),
        };
        handles
            .entry((kind, action))
            .or_insert_with(|| {
                let by_kind = labels(&[("kind", kind)]);
                let action = action_labels(kind, action);
                RefreshHandles {
                    fetch_bytes: self.fetch_bytes.get_or_create(&by_kind).clone(),
                    not_modified: self.not_modified.get_or_create(&by_kind).clone(),
                    refreshes: self.refreshes.get_or_create(&action).clone(),
                    duration: self.duration.get_or_create(&action).clone(),
                }
            })
            .clone()
    }

    pub fn record(
        &self,
        kind: &'static str,
        outcome: &Outcome,
        seconds: f64,
        consecutive_failures: i64,
    ) {
        if self.per_watch {
            let labels = watch_label(&outcome.watch);
            let now = unix_now();
            self.last_check.get_or_create(&labels).set(now);
            if outcome.action != Action::Error {
                self.last_success.get_or_create(&labels).set(now);
            }
            self.consecutive_failures
                .get_or_create(&labels)
                .set(consecutive_failures);
        }
        let h = self.handles(kind, outcome.action.as_str());
        h.fetch_bytes.inc_by(outcome.fetched_bytes);
        if outcome.not_modified {
            h.not_modified.inc();
        }
        h.refreshes.inc();
        h.duration.observe(seconds);
        if let Some(class) = outcome.error_class {
            self.record_error(kind, class.as_str());
        }
    }

    fn record_error(&self, kind: &str, class: &'static str) {
        self.errors
            .get_or_create(&labels(&[("kind", kind), ("class", class)]))
            .inc();
        let mut by_class = match self.errors_by_class.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        *by_class.entry(class).or_default() += 1;
    }

    /// A refresh abandoned at its deadline (no outcome).
    pub fn record_deadline(&self, kind: &str, watch: &str, seconds: f64) {
        if self.per_watch {
            self.last_check
                .get_or_create(&watch_label(watch))
                .set(unix_now());
        }
        let action = action_labels(kind, "error");
        self.refreshes.get_or_create(&action).inc();
        self.duration.get_or_create(&action).observe(seconds);
        self.record_error(kind, "deadline");
    }

    /// How late a refresh started after it was due.
    pub fn record_lag(&self, seconds: f64) {
        self.schedule_lag.observe(seconds);
    }

    /// Failed refreshes since start, by class.
    pub fn errors_by_class(&self) -> BTreeMap<&'static str, u64> {
        match self.errors_by_class.lock() {
            Ok(m) => m.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// A watch moved from `old` to `new` (`None`: not configured). The caller serializes
    /// calls, so the counts and the per-watch series always match the watches' statuses.
    pub fn move_status(&self, watch: &str, old: Option<WatchStatus>, new: Option<WatchStatus>) {
        if old == new {
            return;
        }
        let gauge = |s: WatchStatus| {
            WatchStatus::ALL
                .iter()
                .position(|x| *x == s)
                .and_then(|i| self.by_status_handles.get(i))
        };
        if let Some(old) = old {
            if let Some(g) = gauge(old) {
                g.dec();
            }
            if self.per_watch {
                self.status
                    .remove(&labels(&[("watch", watch), ("status", old.as_str())]));
            }
        }
        if let Some(new) = new {
            if let Some(g) = gauge(new) {
                g.inc();
            }
            if self.per_watch {
                self.status
                    .get_or_create(&labels(&[("watch", watch), ("status", new.as_str())]))
                    .set(1);
            }
        }
    }

    /// Drops the per-watch series of a watch that left the config (its status series goes
    /// with `move_status(.., None)`).
    pub fn forget_watch(&self, watch: &str) {
        let labels = watch_label(watch);
        self.last_check.remove(&labels);
        self.last_success.remove(&labels);
        self.consecutive_failures.remove(&labels);
    }

    pub fn record_reload(&self, ok: bool) {
        self.reload_successful.set(i64::from(ok));
        if ok {
            self.reload_success_timestamp.set(unix_now());
        }
        let result = if ok { "success" } else { "failure" };
        self.reloads
            .get_or_create(&labels(&[("result", result)]))
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
