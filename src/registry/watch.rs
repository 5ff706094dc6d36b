//! Watch state and HTTP validators: a cycle's bookkeeping (no registry version bump),
//! `watch forget` and `watch reset`.

use super::sql::{self, values, Db};
use super::{
    digests, events, failpoint, release_sources, supersede_open_reviews, Registry, Result,
    WatchState, WatchStatus,
};
use crate::core::event::{EventData, EventKind};
use crate::core::model::{DriftReport, Kind};
use crate::fetch::Validators;

/// The watch state in the eight columns `watch, kind, status, last_compatibility,
/// last_checked_at, last_error, consecutive_failures, source_identity` of `watch_state`,
/// read from column `first` on: the one mapping every query of that row shares.
pub(super) fn watch_state_at(r: &sql::Row<'_, '_>, first: usize) -> Result<WatchState> {
    Ok(WatchState {
        watch: r.get(first)?,
        kind: r.get(first + 1)?,
        status: r.get(first + 2)?,
        last_compatibility: r.get(first + 3)?,
        last_checked_at: r.get(first + 4)?,
        last_error: r.get(first + 5)?,
        consecutive_failures: r.get(first + 6)?,
        source_identity: r.get(first + 7)?,
    })
}

impl Registry {
    pub fn watch_state(&self, watch: &str) -> Result<Option<WatchState>> {
        self.read(|db| {
            db.query_opt(
                "SELECT watch, kind, status, last_compatibility, last_checked_at, last_error,
                        consecutive_failures, source_identity
                 FROM watch_state WHERE watch = ?1",
                values![watch],
                |r| watch_state_at(r, 0),
            )
        })
    }
    /// Records a watch's bookkeeping after a cycle (not contract state: no version bump).
    pub fn record_watch(&mut self, state: &WatchState) -> Result<()> {
        let routes = self.current_routes();
        self.write(|db| events::upsert_watch_emitting(db, &routes, state, None, None))
    }
    /// Records a failed cycle: the state, and `refresh_failed` when this failure is the
    /// `error_after`-th in a row (with its metric class).
    pub fn record_failure(
        &mut self,
        state: &WatchState,
        class: crate::core::event::ErrorClass,
    ) -> Result<()> {
        let routes = self.current_routes();
        self.write(|db| events::upsert_watch_emitting(db, &routes, state, None, Some(class)))
    }
    /// Records a `report_only` cycle with the report its event describes.
    pub fn record_report_only(&mut self, state: &WatchState, report: &DriftReport) -> Result<()> {
        let routes = self.current_routes();
        self.write(|db| events::upsert_watch_emitting(db, &routes, state, Some(report), None))
    }
    pub fn validators(&self, watch: &str, source_digest: &str) -> Result<Option<Validators>> {
        self.read(|db| {
            db.query_opt(
                "SELECT etag, last_modified FROM validators WHERE watch = ?1 AND source_digest = ?2",
                values![watch, source_digest],
                |r| {
                    Ok(Validators {
                        etag: r.get(0)?,
                        last_modified: r.get(1)?,
                    })
                },
            )
        })
    }
    /// Records an `unchanged` result: state plus (advanced) validators, one transaction.
    pub fn record_unchanged(
        &mut self,
        state: &WatchState,
        validators: Option<SourceValidators<'_>>,
    ) -> Result<()> {
        let routes = self.current_routes();
        self.write(|db| {
            // The source is back at the accepted contract: an open review no longer describes it.
            supersede_open_reviews(db, &routes, &state.watch, state.kind, None)?;
            events::upsert_watch_emitting(db, &routes, state, None, None)?;
            if let Some(validators) = validators {
                store_validators(db, &state.watch, validators)?;
            }
            failpoint::hit("unchanged.before_commit")?;
            Ok(())
        })
    }
    /// Drops a watch's tool, history, state, validators, reviews and rejections.
    /// Returns whether anything existed. Removing a tool bumps the registry version.
    pub fn forget(&mut self, watch: &str) -> Result<bool> {
        let routes = self.current_routes();
        self.write(|db| {
            let kind: Option<Kind> = db.query_opt(
                "SELECT kind FROM watch_state WHERE watch = ?1",
                values![watch],
                |r| r.get(0),
            )?;
            let dropped = digests(
                db,
                "SELECT source_digest FROM tools WHERE name = ?1
                 UNION SELECT source_digest FROM tool_versions WHERE tool = ?1
                 UNION SELECT source_digest FROM reviews WHERE watch = ?1",
                values![watch],
            )?;
            let had_tool = db.execute("DELETE FROM tools WHERE name = ?1", values![watch])? > 0;
            let mut removed = u64::from(had_tool);
            for sql in [
                "DELETE FROM tool_versions WHERE tool = ?1",
                "DELETE FROM watch_state WHERE watch = ?1",
                "DELETE FROM validators WHERE watch = ?1",
                "DELETE FROM reviews WHERE watch = ?1",
                "DELETE FROM rejected_candidates WHERE watch = ?1",
            ] {
                removed += db.execute(sql, values![watch])?;
            }
            release_sources(db, dropped)?;
            super::sunsets::forget_facts(db, watch)?;
            if had_tool {
                db.execute(
                    "UPDATE registry_head SET registry_version = registry_version + 1 WHERE id = 1",
                    &[],
                )?;
            }
            if removed > 0 {
                let mut data = EventData::for_watch(watch, kind.map_or("", Kind::as_str));
                if had_tool {
                    data.registry_version = db.query_opt(
                        "SELECT registry_version FROM registry_head WHERE id = 1",
                        &[],
                        |r| r.get(0),
                    )?;
                }
                events::emit(db, &routes, EventKind::WatchForgotten, &data)?;
            }
            Ok(removed > 0)
        })
    }
    /// Clears a watch's `stale`/`error` state so the next cycle starts afresh (and adopts the
    /// configured source identity). Returns whether the watch had state.
    pub fn reset(&mut self, watch: &str) -> Result<bool> {
        let routes = self.current_routes();
        self.write(|db| {
            let kind: Option<Kind> = db.query_opt(
                "SELECT kind FROM watch_state WHERE watch = ?1",
                values![watch],
                |r| r.get(0),
            )?;
            let n = db.execute(
                "UPDATE watch_state SET status = ?2, last_error = NULL, consecutive_failures = 0,
                        source_identity = NULL WHERE watch = ?1",
                values![watch, WatchStatus::Idle],
            )?;
            if n > 0 {
                let data = EventData::for_watch(watch, kind.map_or("", Kind::as_str));
                events::emit(db, &routes, EventKind::WatchReset, &data)?;
            }
            Ok(n > 0)
        })
    }
    /// Every stored watch state, by name (one query).
    pub fn watch_states(&self) -> Result<Vec<WatchState>> {
        let mut states: Vec<WatchState> = self.watch_state_map()?.into_values().collect();
        states.sort_by(|a, b| a.watch.cmp(&b.watch));
        Ok(states)
    }
}

pub(super) fn upsert_watch(db: &mut Db<'_>, s: &WatchState) -> Result<()> {
    db.execute(
        "INSERT INTO watch_state (watch, kind, status, last_compatibility, last_checked_at, last_error,
            consecutive_failures, source_identity)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (watch) DO UPDATE SET kind = ?2, status = ?3, last_compatibility = ?4,
            last_checked_at = ?5, last_error = ?6, consecutive_failures = ?7, source_identity = ?8",
        values![
            &s.watch,
            s.kind,
            s.status,
            s.last_compatibility,
            s.last_checked_at.as_deref(),
            s.last_error.as_deref(),
            s.consecutive_failures,
            s.source_identity.as_deref(),
        ],
    )?;
    Ok(())
}

/// The HTTP validators a fetch answered, with the source identity they belong to.
#[derive(Clone, Copy, Debug)]
pub struct SourceValidators<'a> {
    /// The digest of the watch's source identity (`refresh::source_identity`).
    pub source_digest: &'a str,
    pub validators: &'a Validators,
}

pub(super) fn store_validators(
    db: &mut Db<'_>,
    watch: &str,
    given: SourceValidators<'_>,
) -> Result<()> {
    let (digest, etag, last_modified) = (
        given.source_digest,
        given.validators.etag.as_deref(),
        given.validators.last_modified.as_deref(),
    );
    // One source per watch: validators of an earlier source identity are dropped.
    db.execute("DELETE FROM validators WHERE watch = ?1", values![watch])?;
    if etag.is_some() || last_modified.is_some() {
        db.execute(
            "INSERT INTO validators (watch, source_digest, etag, last_modified) VALUES (?1, ?2, ?3, ?4)",
            values![watch, digest, etag, last_modified],
        )?;
    }
    Ok(())
}
