//! Notifications: delivering the registry's event log to the configured sinks (`[[notify]]`).
//!
//! The registry writes an event and its deliveries in the transaction of the change; this
//! module only sends them. A pass claims due deliveries with a lease (so a daemon and a
//! `check` never send one delivery twice in the same attempt), sends each (a chat sink with
//! more than `digest_after` due gets one digest), and records the attempt: delivered, retried
//! with jittered exponential backoff (a `Retry-After` on 429/503 honoured, capped at 1 h) until
//! `max_age`, then failed. A redirect is a failure, never followed; a 410 disables the sink
//! until its configuration changes. Sink URLs and secrets are expanded only here, per send,
//! and never appear in a message, a log line or the registry.

pub mod feed;
pub mod render;
pub mod sign;

use crate::config::{Config, SinkConfig, SinkKind};
use crate::core::event::{EventData, EventKind};
use crate::metrics::Metrics;
use crate::registry::events::{now_ms, AttemptResult, Claimed, StoredEvent};
use crate::registry::{Registry, RegistryError};
use std::time::Duration;

/// Longest wait between attempts, and the cap on a `Retry-After`.
pub const MAX_RETRY_WAIT: Duration = Duration::from_secs(3600);
/// The first retry comes after about this long (jittered down to half), doubling after.
pub const FIRST_RETRY: Duration = Duration::from_secs(5);
/// Deliveries claimed in one pass.
const CLAIM_BATCH: usize = 200;
/// Chat digests are built from at most this many due events per pass (the rest follow).
const DIGEST_MAX: usize = 5000;

/// How one send ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Delivered {
        status: u16,
    },
    /// Worth retrying: a status, a timeout, a connection error. `retry_after` from a 429/503.
    Retry {
        status: Option<u16>,
        class: &'static str,
        retry_after: Option<Duration>,
    },
    /// 410 Gone: the sink is disabled until its configuration changes.
    Gone,
    /// Never worth retrying with this configuration (a secret that cannot be read).
    Failed {
        status: Option<u16>,
        class: &'static str,
    },
}

impl Sent {
    /// The metric outcome label.
    pub fn outcome(&self) -> &'static str {
        match self {
            Sent::Delivered { .. } => "delivered",
            Sent::Retry { .. } => "retry",
            Sent::Gone => "gone",
            Sent::Failed { .. } => "failed",
        }
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            Sent::Delivered { status } => Some(*status),
            Sent::Retry { status, .. } | Sent::Failed { status, .. } => *status,
            Sent::Gone => Some(410),
        }
    }

    /// The error class (`None` when delivered).
    pub fn class(&self) -> Option<&'static str> {
        match self {
            Sent::Delivered { .. } => None,
            Sent::Retry { class, .. } | Sent::Failed { class, .. } => Some(class),
            Sent::Gone => Some("gone"),
        }
    }
}

/// The class of an HTTP status that is not a success.
fn status_class(status: u16) -> &'static str {
    match status {
        300..=399 => "redirect",
        429 => "rate_limited",
        400..=499 => "http_4xx",
        _ => "http_5xx",
    }
}

/// `Retry-After` as seconds or an HTTP date, capped at [`MAX_RETRY_WAIT`].
fn retry_after(value: Option<&reqwest::header::HeaderValue>) -> Option<Duration> {
    let text = value?.to_str().ok()?.trim();
    let wait = match text.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => {
            let at = httpdate::parse_http_date(text).ok()?;
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or(Duration::ZERO)
        }
    };
    Some(wait.min(MAX_RETRY_WAIT))
}

/// Expands a template (`${VAR}`, `${file:PATH}`) off the async threads; errors name the
/// variable or file only.
async fn expand(template: &str) -> Result<String, crate::fetch::SecretError> {
    let template = template.to_string();
    match tokio::task::spawn_blocking(move || crate::fetch::secrets::expand_header_value(&template))
        .await
    {
        Ok(r) => r,
        Err(_) => Err(crate::fetch::SecretError::Timeout {
            within: Duration::ZERO,
        }),
    }
}

/// Sends `body` to `sink` once: signed when it is a webhook (`id` is the `webhook-id`).
pub async fn send(sink: &SinkConfig, timeout: Duration, id: &str, body: Vec<u8>) -> Sent {
    let Ok(url) = expand(&sink.url).await else {
        return Sent::Failed {
            status: None,
            class: "secret_unavailable",
        };
    };
    let Ok(url) = url::Url::parse(url.trim()) else {
        return Sent::Failed {
            status: None,
            class: "bad_url",
        };
    };
    if !matches!(url.scheme(), "http" | "https") {
        return Sent::Failed {
            status: None,
            class: "bad_url",
        };
    }
    let mut keys = Vec::new();
    for (i, template) in sink.secrets.iter().enumerate() {
        let Ok(secret) = expand(template).await else {
            return Sent::Failed {
                status: None,
                class: "secret_unavailable",
            };
        };
        match sign::key(&secret, i) {
            Ok(k) => keys.push(k),
            Err(_) => {
                return Sent::Failed {
                    status: None,
                    class: "bad_secret",
                }
            }
        }
    }
    let mut request = crate::fetch::FetchRequest::new(crate::fetch::Source::Url(url.clone()));
    request.timeout = timeout;
    request.connect_timeout = timeout.min(Duration::from_secs(10));
    request.proxy = sink.proxy.clone();
    request.ca_file = sink.ca_file.clone();
    let client = match crate::fetch::client_for(&request).await {
        Ok(c) => c,
        Err(_) => {
            return Sent::Retry {
                status: None,
                class: "client",
                retry_after: None,
            }
        }
    };
    let mut post = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json");
    if sink.kind == SinkKind::Webhook {
        let timestamp = (now_ms() / 1000).max(0);
        post = post
            .header("webhook-id", id)
            .header("webhook-timestamp", timestamp.to_string())
            .header(
                "webhook-signature",
                sign::signature(&keys, id, timestamp, &body),
            );
    }
    // The error is classified, never printed: reqwest's message would carry the URL.
    match post.body(body).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            let after = retry_after(response.headers().get(reqwest::header::RETRY_AFTER));
            // The body is never read beyond what closing needs, and never shown.
            drop(response);
            match status {
                200..=299 => Sent::Delivered { status },
                410 => Sent::Gone,
                429 | 503 => Sent::Retry {
                    status: Some(status),
                    class: status_class(status),
                    retry_after: after,
                },
                _ => Sent::Retry {
                    status: Some(status),
                    class: status_class(status),
                    retry_after: None,
                },
            }
        }
        Err(e) => Sent::Retry {
            status: None,
            class: if e.is_timeout() {
                "timeout"
            } else if e.is_connect() {
                "connect"
            } else {
                "send"
            },
            retry_after: None,
        },
    }
}

/// The wait before attempt `attempts + 1`: `FIRST_RETRY × 2^(attempts-1)` up to an hour, times
/// a jitter in [0.5, 1); never less than a `Retry-After`.
pub fn retry_wait(attempts: i64, jitter: f64, retry_after: Option<Duration>) -> Duration {
    let exponent = (attempts.max(1) - 1).min(20) as u32;
    let wait = FIRST_RETRY
        .saturating_mul(1u32 << exponent.min(16))
        .min(MAX_RETRY_WAIT)
        .mul_f64(0.5 + jitter.clamp(0.0, 1.0) / 2.0);
    match retry_after {
        Some(after) => wait.max(after),
        None => wait,
    }
}

/// A jitter fraction in [0, 1) from the clock and the delivery (not a secret, just spread).
fn jitter(seq: i64, sink: &str) -> f64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ (now_ms() as u64).rotate_left(17) ^ seq as u64;
    for b in sink.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let z = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// A sink's configuration digest: a 410 disables the sink until this changes. Over the
/// expanded URL (a new URL in the same variable is a new configuration), never stored as text.
pub async fn config_digest(sink: &SinkConfig) -> String {
    let url = expand(&sink.url).await.unwrap_or_default();
    let text = format!(
        "{}\u{0}{}\u{0}{}\u{0}{}",
        sink.kind.as_str(),
        url,
        sink.proxy.as_deref().unwrap_or(""),
        sink.ca_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    );
    crate::core::fingerprint::digest_text("schemawatch.sink.v1", &text)
}

/// The body a claimed delivery sends.
fn body_for(sink: &SinkConfig, event: &StoredEvent, config: &Config) -> Vec<u8> {
    let public_url = config.server.public_url.as_ref();
    match sink.kind {
        SinkKind::Webhook => render::webhook(event, public_url, sink.include_changes),
        SinkKind::Slack => render::slack(event, public_url),
        SinkKind::Teams => render::teams(event, public_url),
    }
}

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PassSummary {
    pub delivered: usize,
    pub retried: usize,
    pub failed: usize,
    /// Claimed deliveries sent as part of a digest.
    pub digested: usize,
}

impl PassSummary {
    pub fn attempts(&self) -> usize {
        self.delivered + self.retried + self.failed
    }
}

/// One pass: claims every due delivery of the configured, enabled sinks (in batches) and
/// sends it. `owner` names the claiming process. Registry errors end the pass.
pub async fn deliver_due(
    registry: &mut Registry,
    config: &Config,
    owner: &str,
    metrics: Option<&Metrics>,
) -> Result<PassSummary, RegistryError> {
    let mut summary = PassSummary::default();
    let names: Vec<String> = config.notify.iter().map(|s| s.name.clone()).collect();
    registry.fail_removed_sinks(&names)?;
    let mut digests = Vec::new();
    for sink in &config.notify {
        digests.push((sink.name.clone(), config_digest(sink).await));
    }
    let disabled = registry.sync_sinks(&digests)?;
    let mut enabled: Vec<String> = names
        .iter()
        .filter(|n| !disabled.contains(n))
        .cloned()
        .collect();
    let timeout = config.notifications.timeout;
    let max_age_ms = config.notifications.max_age.as_millis() as i64;
    // Claimed rows are leased for a whole batch's sends, one sink after another.
    loop {
        let now = now_ms();
        let lease_ms = (timeout.as_millis() as i64 + 5_000) * CLAIM_BATCH as i64;
        let mut claimed = registry.claim_due(owner, now, now + lease_ms, DIGEST_MAX, &enabled)?;
        if claimed.is_empty() {
            break;
        }
        // Chat sinks with more than `digest_after` due: one digest for all of them.
        let mut batch: Vec<Claimed> = Vec::new();
        for sink in config.notify.iter().filter(|s| s.kind.is_chat()) {
            let due: Vec<Claimed> = claimed
                .iter()
                .filter(|c| c.sink == sink.name)
                .cloned()
                .collect();
            if due.len() > config.notifications.digest_after {
                claimed.retain(|c| c.sink != sink.name);
                let events: Vec<&StoredEvent> = due.iter().map(|c| &c.event).collect();
                let body = render::digest(sink.kind, &events, config.server.public_url.as_ref());
                let id = format!("digest-{}", due.first().map_or(0, |c| c.event.sequence));
                let sent = send(sink, timeout, &id, body).await;
                summary.digested += due.len();
                for c in &due {
                    record(
                        registry,
                        config,
                        owner,
                        c,
                        &sent,
                        max_age_ms,
                        metrics,
                        &mut summary,
                    )?;
                }
            }
        }
        // The rest one by one, at most a batch per claim (others are released by the lease).
        claimed.truncate(CLAIM_BATCH);
        batch.extend(claimed);
        for c in &batch {
            let Some(sink) = config.sink(&c.sink) else {
                continue;
            };
            if !enabled.contains(&c.sink) {
                continue;
            }
            let body = body_for(sink, &c.event, config);
            let sent = send(sink, timeout, &c.event.id, body).await;
            record(
                registry,
                config,
                owner,
                c,
                &sent,
                max_age_ms,
                metrics,
                &mut summary,
            )?;
            if sent == Sent::Gone {
                // Everything else of this sink waits for its configuration to change.
                enabled.retain(|n| *n != c.sink);
            }
        }
        if batch.len() < CLAIM_BATCH && summary.digested == 0 {
            // Nothing more was due when this batch was claimed.
            if registry
                .next_due_ms(&enabled)?
                .is_none_or(|at| at > now_ms())
            {
                break;
            }
        }
    }
    if let Some(m) = metrics {
        m.set_notifications_pending(&names, &registry.pending_by_sink()?);
    }
    Ok(summary)
}

#[allow(clippy::too_many_arguments)]
fn record(
    registry: &mut Registry,
    _config: &Config,
    owner: &str,
    c: &Claimed,
    sent: &Sent,
    max_age_ms: i64,
    metrics: Option<&Metrics>,
    summary: &mut PassSummary,
) -> Result<(), RegistryError> {
    let now = now_ms();
    let result = match sent {
        Sent::Delivered { status } => AttemptResult::Delivered { status: *status },
        Sent::Gone => {
            registry.disable_sink(&c.sink, "410 Gone")?;
            tracing::warn!(event = "notification_sink_disabled", sink = %c.sink, status = 410,
                "the receiver answered 410 Gone: the sink is disabled until its configuration changes");
            AttemptResult::Retry {
                status: Some(410),
                class: "gone".into(),
                next_ms: now,
            }
        }
        Sent::Failed { status, class } => AttemptResult::Failed {
            status: *status,
            class: class.to_string(),
        },
        Sent::Retry {
            status,
            class,
            retry_after,
        } => {
            let wait = retry_wait(
                c.attempts + 1,
                jitter(c.event.sequence, &c.sink),
                *retry_after,
            );
            let next = now + wait.as_millis() as i64;
            if next - c.created_ms > max_age_ms {
                AttemptResult::Failed {
                    status: *status,
                    class: class.to_string(),
                }
            } else {
                AttemptResult::Retry {
                    status: *status,
                    class: class.to_string(),
                    next_ms: next,
                }
            }
        }
    };
    let recorded = registry.record_attempt(owner, c.event.sequence, &c.sink, &result)?;
    if !recorded {
        return Ok(());
    }
    let outcome = match &result {
        AttemptResult::Delivered { .. } => {
            summary.delivered += 1;
            "delivered"
        }
        AttemptResult::Retry { .. } => {
            summary.retried += 1;
            sent.outcome()
        }
        AttemptResult::Failed { status, class } => {
            summary.failed += 1;
            tracing::warn!(event = "notification_failed", sink = %c.sink, event_id = %c.event.id,
                notification = c.event.event.as_str(), attempts = c.attempts + 1, class = %class,
                status = status.unwrap_or(0), "a notification was given up");
            "failed"
        }
    };
    if let Some(m) = metrics {
        let latency = matches!(result, AttemptResult::Delivered { .. })
            .then(|| ((now - c.created_ms).max(0) as f64) / 1000.0);
        m.record_notification(&c.sink, outcome, latency);
    }
    Ok(())
}

/// `notify test NAME`: sends a `schemawatch.test` event now, synchronously; never stored.
pub async fn send_test(sink: &SinkConfig, config: &Config) -> Sent {
    let id = format!("test-{:x}", now_ms());
    let timestamp = crate::registry::now_rfc3339();
    let body = match sink.kind {
        SinkKind::Webhook => render::webhook_test(&id, &timestamp),
        kind => render::chat_test(kind),
    };
    send(sink, config.notifications.timeout, &id, body).await
}

/// `registry_replaced`: the registry is gone, so the event cannot be written; sent from
/// memory to every sink that wants it, best effort (not durable, never retried).
pub async fn send_volatile(config: &Config, kind: EventKind, data: EventData) {
    let event = StoredEvent {
        id: format!("volatile-{:x}", now_ms()),
        sequence: 0,
        event: kind,
        created_at: crate::registry::now_rfc3339(),
        data,
    };
    for sink in &config.notify {
        if sink.filter.matches(kind, &event.data) {
            let body = body_for(sink, &event, config);
            let sent = send(sink, config.notifications.timeout, &event.id, body).await;
            tracing::info!(event = "notification_volatile", sink = %sink.name,
                notification = kind.as_str(), outcome = sent.outcome());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_exponentially_within_an_hour_and_honour_retry_after() {
        assert_eq!(
            retry_wait(1, 1.0, None),
            Duration::from_secs(5).mul_f64(1.0)
        );
        assert!(retry_wait(1, 0.0, None) >= Duration::from_millis(2500));
        assert!(retry_wait(4, 0.99, None) > retry_wait(3, 0.99, None));
        assert!(retry_wait(40, 0.99, None) <= MAX_RETRY_WAIT);
        assert_eq!(
            retry_wait(1, 0.0, Some(Duration::from_secs(120))),
            Duration::from_secs(120)
        );
    }
}
