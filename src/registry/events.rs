//! The event log and its deliveries (migration 0005). An event row is written by the
//! transaction that makes the change it reports, whichever process makes it; deliveries (one
//! per event × matching sink) are claimed with a lease so one attempt is sent by one process.

use super::sql::{self, values, Db};
use super::{now_rfc3339, Registry, Result, WatchState, WatchStatus};
use crate::core::event::{EventData, EventKind, Routes};
use serde::Serialize;
use std::sync::Arc;

/// Delivery states.
pub const PENDING: &str = "pending";
pub const DELIVERED: &str = "delivered";
pub const FAILED: &str = "failed";

/// One stored event.
#[derive(Debug, Clone, Serialize)]
pub struct StoredEvent {
    /// `<registry id>-<sequence>`: globally unique, stable across retries and restarts.
    pub id: String,
    pub sequence: i64,
    pub event: EventKind,
    pub created_at: String,
    pub data: EventData,
}

/// A delivery claimed for one attempt.
#[derive(Debug, Clone)]
pub struct Claimed {
    pub event: StoredEvent,
    pub sink: String,
    /// Attempts made before this one.
    pub attempts: i64,
    pub created_ms: i64,
}

/// One row of `notify list` / `GET /v1/notifications`.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryRow {
    pub sink: String,
    pub event_id: String,
    pub sequence: i64,
    pub event: String,
    pub watch: Option<String>,
    pub state: String,
    pub attempts: i64,
    pub created_at: String,
    pub updated_at: Option<String>,
    pub next_attempt_at: Option<String>,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
}

/// How an attempt ended, as the registry records it.
#[derive(Debug, Clone)]
pub enum AttemptResult {
    Delivered {
        status: u16,
    },
    /// Try again at `next_ms` (unless past `max_age`, then failed).
    Retry {
        status: Option<u16>,
        class: String,
        next_ms: i64,
    },
    /// Never retried.
    Failed {
        status: Option<u16>,
        class: String,
    },
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn ms_rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(t).to_string()
}

/// Writes one event in `tx` and a delivery for each sink of `routes` that wants it. Answers
/// the event's sequence number.
pub(crate) fn emit(
    db: &mut Db<'_>,
    routes: &Routes,
    kind: EventKind,
    data: &EventData,
) -> Result<i64> {
    db.execute(
        "UPDATE registry_meta SET event_seq = event_seq + 1 WHERE id = 1",
        &[],
    )?;
    let seq: i64 = db
        .query_opt(
            "SELECT event_seq FROM registry_meta WHERE id = 1",
            &[],
            |r| r.get(0),
        )?
        .ok_or_else(no_meta)?;
    let json = serde_json::to_string(data).map_err(|e| super::RegistryError::BadRow {
        table: "events",
        key: seq.to_string(),
        problem: e.to_string(),
    })?;
    db.execute(
        "INSERT INTO events (seq, event, watch, created_at, data_json) VALUES (?1, ?2, ?3, ?4, ?5)",
        values![
            seq,
            kind.as_str(),
            data.watch.as_deref(),
            &now_rfc3339(),
            &json
        ],
    )?;
    let now = now_ms();
    for sink in routes.sinks_for(kind, data) {
        db.execute(
            "INSERT INTO deliveries (event_seq, sink, state, attempts, created_ms, next_attempt_ms)
             VALUES (?1, ?2, ?3, 0, ?4, ?4)",
            values![seq, sink, PENDING, now],
        )?;
    }
    super::failpoint::hit("event.after_insert")?;
    Ok(seq)
}

/// Writes the events a watch state change implies (`watch_stale`, `refresh_failed`,
/// `watch_recovered`, `report_only`), judged against the stored state, then the state itself.
pub(crate) fn upsert_watch_emitting(
    db: &mut Db<'_>,
    routes: &Routes,
    s: &WatchState,
    report: Option<&crate::core::model::DriftReport>,
    error_class: Option<crate::core::event::ErrorClass>,
) -> Result<()> {
    let before: Option<(WatchStatus, i64)> = db.query_opt(
        "SELECT status, consecutive_failures FROM watch_state WHERE watch = ?1",
        values![&s.watch],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    let (was, failures_before) = before.unwrap_or((WatchStatus::Idle, 0));
    let base = || EventData::for_watch(&s.watch, s.kind.as_str());
    let threshold = routes.error_after.max(1);
    if s.status == WatchStatus::Stale && was != WatchStatus::Stale {
        emit(db, routes, EventKind::WatchStale, &base())?;
    }
    if s.status == WatchStatus::Error
        && failures_before < threshold
        && s.consecutive_failures >= threshold
    {
        let mut data = base();
        data.consecutive_failures = Some(s.consecutive_failures);
        data.error_class = error_class;
        emit(db, routes, EventKind::RefreshFailed, &data)?;
    }
    if failures_before >= threshold
        && s.consecutive_failures == 0
        && !matches!(s.status, WatchStatus::Error | WatchStatus::Stale)
    {
        let mut data = base();
        data.consecutive_failures = Some(failures_before);
        emit(db, routes, EventKind::WatchRecovered, &data)?;
    }
    if s.status == WatchStatus::ReportOnly && was != WatchStatus::ReportOnly {
        let data = match report {
            Some(r) => base().with_report(r),
            None => base(),
        };
        emit(db, routes, EventKind::ReportOnly, &data)?;
    }
    super::upsert_watch(db, s)
}

fn event_from_row(registry_id: &str, r: &sql::Row<'_, '_>) -> Result<StoredEvent> {
    let seq: i64 = r.get(0)?;
    let kind: String = r.get(1)?;
    let json: String = r.get(3)?;
    Ok(StoredEvent {
        id: format!("{registry_id}-{seq}"),
        sequence: seq,
        // An unknown name (written by a newer release) reads as a failure notice of its own.
        event: EventKind::parse(&kind).unwrap_or(EventKind::RefreshFailed),
        created_at: r.get(2)?,
        data: serde_json::from_str(&json).unwrap_or_default(),
    })
}

/// The registry's id and creation time (`registry_meta`, written once by migration 0005).
fn registry_id_in(db: &mut Db<'_>) -> Result<(String, String)> {
    db.query_opt(
        "SELECT registry_id, created_at FROM registry_meta WHERE id = 1",
        &[],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?
    .ok_or_else(no_meta)
}

fn no_meta() -> super::RegistryError {
    super::RegistryError::BadRow {
        table: "registry_meta",
        key: "1".into(),
        problem: "no registry_meta row".into(),
    }
}

/// Filters of the delivery listing.
#[derive(Debug, Clone, Default)]
pub struct DeliveryQuery {
    pub sink: Option<String>,
    pub state: Option<String>,
    /// Rows after this (sequence, sink) in listing order (newest first).
    pub before: Option<(i64, String)>,
    pub limit: usize,
}

impl Registry {
    /// Puts sinks and retention in force for the events this connection alone writes.
    pub fn set_routes(&mut self, routes: Arc<Routes>) {
        self.routes = Some(routes);
    }

    /// The routes in force for this connection's writes.
    pub fn current_routes(&self) -> Arc<Routes> {
        match &self.routes {
            Some(r) => r.clone(),
            None => match super::process_routes().read() {
                Ok(r) => r.clone(),
                Err(poisoned) => poisoned.into_inner().clone(),
            },
        }
    }

    /// The registry's id (generated once, by migration 0005) and creation time.
    pub fn registry_id(&self) -> Result<(String, String)> {
        self.read(registry_id_in)
    }

    /// Events, newest first: those with a sequence below `before` (all when `None`), of one
    /// watch when given, at most `limit`.
    pub fn events(
        &self,
        watch: Option<&str>,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<StoredEvent>> {
        self.read(|db| {
            let (id, _) = registry_id_in(db)?;
            db.query(
                "SELECT seq, event, created_at, data_json FROM events
                 WHERE (?1 IS NULL OR watch = ?1) AND (?2 IS NULL OR seq < ?2)
                 ORDER BY seq DESC LIMIT ?3",
                values![watch, before, limit as i64],
                |r| event_from_row(&id, r),
            )
        })
    }

    /// The highest event sequence written so far.
    pub fn event_sequence(&self) -> Result<i64> {
        self.read(|db| {
            db.query_opt(
                "SELECT event_seq FROM registry_meta WHERE id = 1",
                &[],
                |r| r.get(0),
            )?
            .ok_or_else(no_meta)
        })
    }

    /// Writes an event that reports no registry change of its own (`schemawatch.test` is not
    /// one: it is never stored). Used for `projection_upgrade` on open.
    pub fn record_event(&mut self, kind: EventKind, data: &EventData) -> Result<i64> {
        let routes = self.current_routes();
        self.write(|db| emit(db, &routes, kind, data))
    }

    /// Claims up to `limit` due deliveries for `owner` until `lease_until_ms`, oldest first,
    /// skipping `disabled` sinks. One transaction: two processes never claim the same row for
    /// the same attempt.
    pub fn claim_due(
        &mut self,
        owner: &str,
        now: i64,
        lease_until_ms: i64,
        limit: usize,
        sinks: &[String],
    ) -> Result<Vec<Claimed>> {
        self.write(|db| {
            let (registry_id, _) = registry_id_in(db)?;
            let due = db.query(
                "SELECT d.event_seq, d.sink, d.attempts, d.created_ms, e.event, e.created_at, e.data_json
                 FROM deliveries d JOIN events e ON e.seq = d.event_seq
                 WHERE d.state = 'pending' AND d.next_attempt_ms <= ?1
                   AND (d.lease_until_ms IS NULL OR d.lease_until_ms <= ?1)
                 ORDER BY d.next_attempt_ms, d.event_seq LIMIT ?2",
                values![now, (limit * 4) as i64],
                |r| {
                    let seq: i64 = r.get(0)?;
                    let kind: String = r.get(4)?;
                    let json: String = r.get(6)?;
                    Ok(Claimed {
                        sink: r.get(1)?,
                        attempts: r.get(2)?,
                        created_ms: r.get(3)?,
                        event: StoredEvent {
                            id: format!("{registry_id}-{seq}"),
                            sequence: seq,
                            event: EventKind::parse(&kind).unwrap_or(EventKind::RefreshFailed),
                            created_at: r.get(5)?,
                            data: serde_json::from_str(&json).unwrap_or_default(),
                        },
                    })
                },
            )?;
            let mut claimed = Vec::new();
            for row in due {
                if sinks.contains(&row.sink) && claimed.len() < limit {
                    claimed.push(row);
                }
            }
            for c in &claimed {
                db.execute(
                    "UPDATE deliveries SET lease_owner = ?3, lease_until_ms = ?4
                     WHERE event_seq = ?1 AND sink = ?2",
                    values![c.event.sequence, &c.sink, owner, lease_until_ms],
                )?;
            }
            Ok(claimed)
        })
    }

    /// Records the end of one attempt of a claimed delivery (only while `owner` holds it).
    /// Answers false when the claim was lost (nothing written).
    pub fn record_attempt(
        &mut self,
        owner: &str,
        seq: i64,
        sink: &str,
        result: &AttemptResult,
    ) -> Result<bool> {
        let now = now_rfc3339();
        let (state, status, class, next) = match result {
            AttemptResult::Delivered { status } => (DELIVERED, Some(*status), None, None),
            AttemptResult::Retry {
                status,
                class,
                next_ms,
            } => (PENDING, *status, Some(class.as_str()), Some(*next_ms)),
            AttemptResult::Failed { status, class } => {
                (FAILED, *status, Some(class.as_str()), None)
            }
        };
        let n = self.write(|db| {
            db.execute(
                "UPDATE deliveries SET state = ?4, attempts = attempts + 1, updated_at = ?5,
                last_status = ?6, last_error = ?7, next_attempt_ms = COALESCE(?8, next_attempt_ms),
                lease_owner = NULL, lease_until_ms = NULL
             WHERE event_seq = ?1 AND sink = ?2 AND lease_owner = ?3 AND state = 'pending'",
                values![
                    seq,
                    sink,
                    owner,
                    state,
                    &now,
                    status.map(i64::from),
                    class,
                    next
                ],
            )
        })?;
        Ok(n > 0)
    }

    /// Fails every pending delivery of a sink that is no longer configured (`sink_removed`).
    pub fn fail_removed_sinks(&mut self, configured: &[String]) -> Result<usize> {
        let now = now_rfc3339();
        self.write(|db| {
        let sinks: Vec<String> = db.query(
            "SELECT DISTINCT sink FROM deliveries WHERE state = 'pending'",
            &[],
            |r| r.get(0),
        )?;
        let mut n = 0;
        for sink in sinks.iter().filter(|s| !configured.contains(s)) {
            n += db.execute(
                "UPDATE deliveries SET state = 'failed', last_error = 'sink_removed', updated_at = ?2,
                    lease_owner = NULL, lease_until_ms = NULL
                 WHERE sink = ?1 AND state = 'pending'",
                values![sink, &now],
            )? as usize;
        }
        Ok(n)
        })
    }

    /// Records each configured sink's configuration digest; a sink whose digest changed is
    /// enabled again (a 410 disables it until then). Answers the sinks still disabled.
    pub fn sync_sinks(&mut self, sinks: &[(String, String)]) -> Result<Vec<String>> {
        self.write(|db| {
            let mut disabled = Vec::new();
            for (name, digest) in sinks {
                let stored: Option<(String, Option<String>)> = db.query_opt(
                    "SELECT config_digest, disabled_at FROM notify_sinks WHERE name = ?1",
                    values![name],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )?;
                match stored {
                    Some((d, disabled_at)) if d == *digest => {
                        if disabled_at.is_some() {
                            disabled.push(name.clone());
                        }
                    }
                    _ => {
                        db.execute(
                            "INSERT INTO notify_sinks (name, config_digest) VALUES (?1, ?2)
                         ON CONFLICT (name) DO UPDATE SET config_digest = ?2, disabled_at = NULL,
                            disabled_reason = NULL",
                            values![name, digest],
                        )?;
                    }
                }
            }
            Ok(disabled)
        })
    }

    /// Disables a sink until its configuration changes (a 410 Gone).
    pub fn disable_sink(&mut self, name: &str, reason: &str) -> Result<()> {
        let now = now_rfc3339();
        self.write(|db| {
            db.execute(
                "UPDATE notify_sinks SET disabled_at = ?2, disabled_reason = ?3 WHERE name = ?1",
                values![name, &now, reason],
            )
        })?;
        Ok(())
    }

    /// Takes or renews the delivery lease for `owner` until `until_ms` when nobody else holds
    /// a live one. Answers whether `owner` holds it now.
    pub fn acquire_delivery_lease(&mut self, owner: &str, now: i64, until_ms: i64) -> Result<bool> {
        let n = self.write(|db| {
            db.execute(
                "INSERT INTO delivery_lease (id, owner, until_ms) VALUES (1, ?1, ?3)
                 ON CONFLICT (id) DO UPDATE SET owner = ?1, until_ms = ?3
                 WHERE delivery_lease.owner = ?1 OR delivery_lease.until_ms <= ?2",
                values![owner, now, until_ms],
            )
        })?;
        Ok(n > 0)
    }

    /// Whether a process other than `owner` holds a live delivery lease.
    pub fn delivery_lease_held(&self, owner: &str, now: i64) -> Result<bool> {
        Ok(self
            .read(|db| {
                db.query_opt(
                    "SELECT 1 FROM delivery_lease WHERE id = 1 AND owner != ?1 AND until_ms > ?2",
                    values![owner, now],
                    |_| Ok(()),
                )
            })?
            .is_some())
    }

    pub fn release_delivery_lease(&mut self, owner: &str) -> Result<()> {
        self.write(|db| {
            db.execute(
                "DELETE FROM delivery_lease WHERE owner = ?1",
                values![owner],
            )
        })?;
        Ok(())
    }

    /// When the earliest pending delivery of `sinks` is due (ms), if any.
    pub fn next_due_ms(&self, sinks: &[String]) -> Result<Option<i64>> {
        // The later of the two, spelled for both backends (SQLite's two-argument MAX is
        // PostgreSQL's GREATEST).
        let rows = self.read(|db| {
            db.query(
                "SELECT sink, MIN(CASE WHEN COALESCE(lease_until_ms, 0) > next_attempt_ms
                                       THEN lease_until_ms ELSE next_attempt_ms END)
                 FROM deliveries WHERE state = 'pending' GROUP BY sink",
                &[],
                |r| Ok((r.get::<String>(0)?, r.get::<i64>(1)?)),
            )
        })?;
        let mut next: Option<i64> = None;
        for (sink, at) in rows {
            if sinks.contains(&sink) {
                next = Some(next.map_or(at, |n| n.min(at)));
            }
        }
        Ok(next)
    }

    /// Pending deliveries by sink.
    pub fn pending_by_sink(&self) -> Result<Vec<(String, i64)>> {
        self.read(|db| {
            db.query(
                "SELECT sink, COUNT(*) FROM deliveries WHERE state = 'pending' GROUP BY sink ORDER BY sink",
                &[],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
        })
    }

    /// Deliveries, newest event first (then by sink), filtered and paged.
    pub fn deliveries(&self, q: &DeliveryQuery) -> Result<Vec<DeliveryRow>> {
        let (before_seq, before_sink) = match &q.before {
            Some((seq, sink)) => (Some(*seq), Some(sink.as_str())),
            None => (None, None),
        };
        self.read(|db| {
            let (registry_id, _) = registry_id_in(db)?;
            db.query(
                "SELECT d.sink, d.event_seq, e.event, e.watch, d.state, d.attempts, d.created_ms,
                    d.updated_at, d.next_attempt_ms, d.last_status, d.last_error
             FROM deliveries d JOIN events e ON e.seq = d.event_seq
             WHERE (?1 IS NULL OR d.sink = ?1) AND (?2 IS NULL OR d.state = ?2)
               AND (?3 IS NULL OR d.event_seq < ?3 OR (d.event_seq = ?3 AND d.sink > ?4))
             ORDER BY d.event_seq DESC, d.sink LIMIT ?5",
                values![
                    q.sink.as_deref(),
                    q.state.as_deref(),
                    before_seq,
                    before_sink,
                    q.limit as i64
                ],
                |r| {
                    let seq: i64 = r.get(1)?;
                    let state: String = r.get(4)?;
                    let next: i64 = r.get(8)?;
                    Ok(DeliveryRow {
                        sink: r.get(0)?,
                        event_id: format!("{registry_id}-{seq}"),
                        sequence: seq,
                        event: r.get(2)?,
                        watch: r.get(3)?,
                        next_attempt_at: (state == PENDING).then(|| ms_rfc3339(next)),
                        state,
                        attempts: r.get(5)?,
                        created_at: ms_rfc3339(r.get(6)?),
                        updated_at: r.get(7)?,
                        last_status: r.get(9)?,
                        last_error: r.get(10)?,
                    })
                },
            )
        })
    }

    /// Prunes by age and count: events (never one a pending delivery still needs), and
    /// delivered and failed rows. Pending rows are never dropped. Answers rows removed.
    pub fn prune_events(&mut self) -> Result<usize> {
        let routes = self.current_routes();
        let cutoff_ms = now_ms() - (routes.retention_secs as i64).saturating_mul(1000);
        let cutoff = ms_rfc3339(cutoff_ms);
        self.write(|db| {
            // The newest finished rows are kept by (event, sink), the key both backends have
            // (ties between the sinks of one event broken by sink name).
            let mut n = db.execute(
                "DELETE FROM deliveries WHERE state != 'pending' AND (created_ms < ?1 OR
                    (event_seq, sink) NOT IN (SELECT event_seq, sink FROM deliveries
                                              WHERE state != 'pending'
                                              ORDER BY event_seq DESC, sink LIMIT ?2))",
                values![cutoff_ms, routes.keep_deliveries as i64],
            )?;
            n += db.execute(
                "DELETE FROM events WHERE (created_at < ?1 OR seq <= (SELECT event_seq FROM registry_meta) - ?2)
                   AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.event_seq = events.seq AND d.state = 'pending')",
                values![&cutoff, routes.keep_events as i64],
            )?;
            // Finished rows of a pruned event have nothing left to show.
            n += db.execute(
                "DELETE FROM deliveries WHERE NOT EXISTS (SELECT 1 FROM events e WHERE e.seq = deliveries.event_seq)",
                &[],
            )?;
            Ok(n as usize)
        })
    }
}
