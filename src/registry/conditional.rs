//! The registry side of a conditional refresh, kept cheap for the common case (a 304):
//! one cached prepared statement reads what the refresh needs — the accepted fingerprint
//! (not the stored spec: no parse, no re-fingerprinting), the watch state, the validators of
//! the current source and whether a review is open. It is a cached *statement*, not cached
//! state: a write by another process (a CLI `pending accept`, a cron `check`) is always seen.
//!
//! Watch bookkeeping that changes nothing but `last_checked_at` can be group-committed
//! ([`Registry::flush_checked`]): many watches, one transaction, at most once a second.

use super::sql::values;
use super::{failpoint, Registry, Result, WatchState, WatchStatus};

/// What a conditional refresh starts from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conditional {
    /// The accepted contract's fingerprint; `None`: no accepted contract.
    pub fingerprint: Option<String>,
    pub state: Option<WatchState>,
    /// ETag and Last-Modified stored for the current source, when any row is stored.
    pub validators: Option<crate::fetch::Validators>,
    pub open_review: bool,
}

impl Registry {
    /// One point read (a cached statement) of what a conditional refresh of `watch`, whose
    /// source has digest `source_digest`, needs.
    pub fn conditional(&self, watch: &str, source_digest: &str) -> Result<Conditional> {
        // `state = 'open'` is spelled out so the partial index `one_open_review_per_watch`
        // answers the EXISTS (a bound parameter would not match the index's WHERE).
        let row = self.read(|db| {
            db.query_opt(
                "SELECT t.fingerprint,
                        s.watch, s.kind, s.status, s.last_compatibility, s.last_checked_at,
                        s.last_error, s.consecutive_failures, s.source_identity,
                        v.watch IS NOT NULL, v.etag, v.last_modified,
                        EXISTS (SELECT 1 FROM reviews r WHERE r.watch = ?1 AND r.state = 'open')
                 FROM (SELECT ?1 AS name) q
                 LEFT JOIN tools t ON t.name = q.name
                 LEFT JOIN watch_state s ON s.watch = q.name
                 LEFT JOIN validators v ON v.watch = q.name AND v.source_digest = ?2",
                values![watch, source_digest],
                |r| {
                    // The LEFT JOIN leaves the state's columns NULL when no state row is stored
                    // (`consecutive_failures` is NOT NULL in a stored one; read without
                    // allocating).
                    let state = match r.get::<Option<i64>>(7)? {
                        None => None,
                        Some(_) => Some(super::watch::watch_state_at(r, 1)?),
                    };
                    let validators = if r.get::<bool>(9)? {
                        Some(crate::fetch::Validators {
                            etag: r.get(10)?,
                            last_modified: r.get(11)?,
                        })
                    } else {
                        None
                    };
                    Ok(Conditional {
                        fingerprint: r.get(0)?,
                        state,
                        validators,
                        open_review: r.get(12)?,
                    })
                },
            )
        })?;
        Ok(row.unwrap_or_default())
    }

    /// Visits every stored (watch, status) without allocating per row (the daemon's recount
    /// of 100,000 watches every few seconds). Returns how many rows it visited.
    pub fn for_each_status(&self, mut visit: impl FnMut(&str, WatchStatus)) -> Result<usize> {
        const ALL: &str = "SELECT watch, status FROM watch_state";
        match &self.backend {
            super::Backend::Sqlite(conn) => {
                // The name borrowed from the row: no allocation per watch.
                let mut stmt = conn.prepare_cached(ALL)?;
                let mut rows = stmt.query([])?;
                let mut n = 0;
                while let Some(row) = rows.next()? {
                    let watch = row.get_ref(0)?.as_str().map_err(rusqlite::Error::from)?;
                    let status: WatchStatus = row.get(1)?;
                    visit(watch, status);
                    n += 1;
                }
                Ok(n)
            }
            super::Backend::Postgres(_) => self.read(|db| {
                let rows: Vec<(String, WatchStatus)> =
                    db.query(ALL, &[], |r| Ok((r.get(0)?, r.get(1)?)))?;
                for (watch, status) in &rows {
                    visit(watch, *status);
                }
                Ok(rows.len())
            }),
        }
    }

    /// Records a 304 that changed more than `last_checked_at` (a status, an error streak
    /// ended): the state in one transaction, superseding the open review only when
    /// `open_review` (the source is back at the accepted contract).
    pub fn record_not_modified(&mut self, state: &WatchState, open_review: bool) -> Result<()> {
        let routes = self.current_routes();
        self.write(|db| {
            if open_review {
                super::supersede_open_reviews(db, &routes, &state.watch, state.kind, None)?;
            }
            super::events::upsert_watch_emitting(db, &routes, state, None, None)?;
            failpoint::hit("unchanged.before_commit")?;
            Ok(())
        })
    }

    /// Group commit of deferred bookkeeping: each watch's `last_checked_at`, in one
    /// transaction. A stored value that is newer (written since, by this process or another)
    /// is never overwritten; a watch without a stored state is skipped (its first write is
    /// never deferred). Returns how many rows moved.
    pub fn flush_checked(&mut self, checked: &[(String, String)]) -> Result<usize> {
        if checked.is_empty() {
            return Ok(0);
        }
        self.write(|db| {
            let mut moved = 0;
            for (watch, at) in checked {
                moved += db.execute(
                    "UPDATE watch_state SET last_checked_at = ?2
                     WHERE watch = ?1 AND (last_checked_at IS NULL OR last_checked_at < ?2)",
                    values![watch, at],
                )? as usize;
            }
            failpoint::hit("flush.before_commit")?;
            Ok(moved)
        })
    }
}
