//! Reviews (one open per watch), their decisions (accept by compare-and-swap, reject) and
//! rejected candidates; superseding and pruning.

use super::sql::{values, Db};
use super::{
    apply_in, candidate_key, codec, digests, events, failpoint, now_rfc3339, release_sources,
    store_source, stored_json, stored_spec, CasBase, Provenance, Queued, Registry, RegistryError,
    Result, Review, ReviewState, StoredSource, Via, WatchState, WatchStatus,
};
use crate::core::event::{EventData, EventKind};
use crate::core::fingerprint::{tool_fingerprint, FINGERPRINT_VERSION};
use crate::core::model::{Compatibility, DriftReport, Kind, ToolSpec};
use crate::core::normalize::SharedEndpoints;

impl Registry {
    pub fn is_rejected(&self, watch: &str, fingerprint: &str) -> Result<bool> {
        self.read(|db| {
            Ok(db
                .query_opt(
                    "SELECT 1 FROM rejected_candidates WHERE watch = ?1 AND fingerprint = ?2",
                    values![watch, fingerprint],
                    |_| Ok(()),
                )?
                .is_some())
        })
    }
    /// Whether a reviewer rejected this very document (same source digest) while the
    /// projection was older: then the candidate, fingerprinted anew, is still rejected, and its
    /// new fingerprint is recorded with the rejection (`projection-upgrade`).
    pub fn rejected_document(
        &mut self,
        watch: &str,
        digest: &str,
        fingerprint: &str,
    ) -> Result<bool> {
        // Read first: the usual answer is "no", and it takes no write lock.
        let review: Option<i64> = self.read(|db| {
            db.query_opt(
                "SELECT review_id FROM rejected_candidates
                 WHERE watch = ?1 AND source_digest = ?2 AND fingerprint_version < ?3
                 ORDER BY rejected_at DESC LIMIT 1",
                values![watch, digest, FINGERPRINT_VERSION],
                |r| r.get(0),
            )
        })?;
        let Some(review_id) = review else {
            return Ok(false);
        };
        self.write(|db| {
            db.execute(
                UPSERT_REJECTED,
                values![
                    watch,
                    fingerprint,
                    review_id,
                    &now_rfc3339(),
                    digest,
                    FINGERPRINT_VERSION
                ],
            )
        })?;
        tracing::warn!(event = "projection_upgrade", watch = %watch, review_id,
            "a document rejected under the previous projection is still rejected");
        Ok(true)
    }
    /// Queues a candidate for review, in one transaction with the watch state. The base is
    /// checked first (CAS): if the tool moved since it was compared, `Conflict`.
    pub fn queue_review(
        &mut self,
        base: &CasBase,
        candidate: &ToolSpec,
        report: &DriftReport,
        state: &WatchState,
        source: &StoredSource,
        keep_reviews: u32,
    ) -> Result<Queued> {
        failpoint::hit("review.begin")?;
        let routes = self.current_routes();
        let key = candidate_key(candidate);
        let result = self.write(|db| {
            // The CAS check needs the two columns only: the contract itself was read (and
            // checked against its fingerprint) by the caller, and is not loaded a second time.
            let current: Option<(i64, String)> = db.query_opt(
                "SELECT registry_version, fingerprint FROM tools WHERE name = ?1",
                values![&key],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let matches = current.as_ref().is_some_and(|(rv, fp)| {
                *rv == base.registry_version && *fp == base.fingerprint
            });
            if !matches {
                return Err(RegistryError::Conflict { tool: key.clone() });
            }
            let open: Option<(i64, String)> = db.query_opt(
                "SELECT id, candidate_fingerprint FROM reviews WHERE watch = ?1 AND state = ?2",
                values![&state.watch, ReviewState::Open],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )?;
            let result = match open {
                Some((id, fp)) if fp == report.new_fingerprint => Queued::AlreadyOpen { id },
                other => {
                    // One copy of the candidate: its source when it can be read back from it.
                    let derived = source.derived();
                    store_source(db, source)?;
                    let now = now_rfc3339();
                    let mut dropped = Vec::new();
                    let superseded = match other {
                        Some((old_id, _)) => {
                            dropped = digests(
                                db,
                                "SELECT source_digest FROM reviews WHERE id = ?1",
                                values![old_id],
                            )?;
                            db.execute(
                                "UPDATE reviews SET state = ?3, decided_at = ?2, source_gz = NULL WHERE id = ?1",
                                values![old_id, &now, ReviewState::Superseded],
                            )?;
                            Some(old_id)
                        }
                        None => None,
                    };
                    let candidate_gz = (!derived).then(|| codec::gz_json(candidate));
                    let report_gz = codec::gz_json(report);
                    let source_kind = derived.then(|| candidate.kind.as_str());
                    // RETURNING: the new id on both backends (SQLite 3.35 and later).
                    let inserted: Option<i64> = db.query_opt(
                        "INSERT INTO reviews (watch, state, compatibility, change_count, created_at,
                            base_registry_version, base_fingerprint, candidate_fingerprint, fingerprint_version,
                            candidate_spec_json, report_json, candidate_gz, report_gz, source_digest, source_gz,
                            source_kind)
                         VALUES (?1, ?9, ?2, ?3, ?4, ?5, ?6, ?7, ?8, '', '', ?10, ?11, ?12, NULL, ?13)
                         RETURNING id",
                        values![
                            &state.watch,
                            report.compatibility,
                            report.change_count() as i64,
                            &now,
                            base.registry_version,
                            &base.fingerprint,
                            &report.new_fingerprint,
                            FINGERPRINT_VERSION,
                            ReviewState::Open,
                            candidate_gz.as_deref(),
                            &report_gz,
                            source.digest.as_deref(),
                            source_kind,
                        ],
                        |r| r.get(0),
                    )?;
                    let id = inserted.ok_or_else(|| RegistryError::BadRow {
                        table: "reviews",
                        key: state.watch.clone(),
                        problem: "the inserted review returned no id".into(),
                    })?;
                    failpoint::hit("review.after_insert")?;
                    if let Some(old) = superseded {
                        let mut data = EventData::for_watch(&state.watch, state.kind.as_str());
                        data.review_id = Some(old);
                        data.superseded_by = Some(id);
                        events::emit(db, &routes, EventKind::ReviewSuperseded, &data)?;
                    }
                    let mut data = EventData::for_watch(&state.watch, state.kind.as_str())
                        .with_report(report);
                    data.review_id = Some(id);
                    data.registry_version = Some(base.registry_version);
                    events::emit(db, &routes, EventKind::PendingReview, &data)?;
                    dropped.extend(prune_reviews(db, &state.watch, keep_reviews)?);
                    release_sources(db, dropped)?;
                    Queued::New { id, superseded }
                }
            };
            events::upsert_watch_emitting(db, &routes, state, None, None)?;
            failpoint::hit("review.before_commit")?;
            Ok(result)
        })?;
        failpoint::hit("review.after_commit")?;
        Ok(result)
    }
    /// The upgrade of an open review whose candidate was stored under an older projection: the
    /// same candidate, read more completely, replaces it in place (same id, still open), with
    /// its new report, when the review is still open on `old_candidate`. Answers the review id,
    /// or `None` when there is no such open review. The watch state is written with it.
    pub fn rebaseline_open_review(
        &mut self,
        watch: &str,
        old_candidate: &str,
        candidate: &ToolSpec,
        report: &DriftReport,
        state: &WatchState,
    ) -> Result<Option<i64>> {
        let routes = self.current_routes();
        self.write(|db| {
            let id: Option<i64> = db.query_opt(
                "SELECT id FROM reviews WHERE watch = ?1 AND state = ?2 AND candidate_fingerprint = ?3",
                values![watch, ReviewState::Open, old_candidate],
                |r| r.get(0),
            )?;
            if let Some(id) = id {
                db.execute(
                    "UPDATE reviews SET candidate_fingerprint = ?2, fingerprint_version = ?3,
                        candidate_spec_json = '', report_json = '', candidate_gz = ?4, report_gz = ?5,
                        compatibility = ?6, change_count = ?7, source_kind = NULL
                     WHERE id = ?1",
                    values![
                        id,
                        &report.new_fingerprint,
                        FINGERPRINT_VERSION,
                        &codec::gz_json(candidate),
                        &codec::gz_json(report),
                        report.compatibility,
                        report.change_count() as i64,
                    ],
                )?;
                events::upsert_watch_emitting(db, &routes, state, None, None)?;
            }
            Ok(id)
        })
    }
    pub fn open_review_for(&self, watch: &str) -> Result<Option<i64>> {
        self.read(|db| {
            db.query_opt(
                "SELECT id FROM reviews WHERE watch = ?1 AND state = ?2",
                values![watch, ReviewState::Open],
                |r| r.get(0),
            )
        })
    }
    pub fn review(&self, id: i64) -> Result<Review> {
        self.read(|db| read_review(db, id))?
            .ok_or(RegistryError::ReviewNotFound { id })
    }
    /// Reviews, newest first; `open_only` limits to open ones.
    pub fn reviews(&self, open_only: bool) -> Result<Vec<Review>> {
        // Without a state filter `?1` is NULL and every review matches.
        let only: Option<ReviewState> = open_only.then_some(ReviewState::Open);
        self.read(|db| {
            let ids: Vec<i64> = db.query(
                "SELECT id FROM reviews WHERE (?1 IS NULL OR state = ?1) ORDER BY id DESC",
                values![only],
                |r| r.get(0),
            )?;
            ids.into_iter()
                .map(|id| read_review(db, id)?.ok_or(RegistryError::ReviewNotFound { id }))
                .collect()
        })
    }
    /// Accepts an open review: applies its candidate by CAS against the base it was compared
    /// with. Not open, or base moved: `Superseded`, and nothing is written.
    pub fn accept(
        &mut self,
        id: i64,
        reviewer: &str,
        reason: &str,
        keep_versions: u32,
    ) -> Result<i64> {
        self.accept_via(id, reviewer, Via::Cli, reason, keep_versions)
    }
    /// [`Registry::accept`], recording how the reviewer was identified (`via`).
    pub fn accept_via(
        &mut self,
        id: i64,
        reviewer: &str,
        via: Via,
        reason: &str,
        keep_versions: u32,
    ) -> Result<i64> {
        let routes = self.current_routes();
        let version = self.write(|db| {
            let review = read_review(db, id)?.ok_or(RegistryError::ReviewNotFound { id })?;
            if review.state != ReviewState::Open {
                return Err(RegistryError::Superseded {
                    id,
                    why: format!("the review is {}", review.state),
                });
            }
            // Open reviews are never pruned; a row without its candidate is a bad row.
            let (Some(candidate), Some(report)) = (&review.candidate, &review.report) else {
                return Err(RegistryError::BadRow {
                    table: "reviews",
                    key: id.to_string(),
                    problem: "an open review without its candidate".into(),
                });
            };
            let source = review_source(db, id)?;
            let base = review.base_fingerprint.clone().map(|fingerprint| CasBase {
                registry_version: review.base_registry_version,
                fingerprint,
            });
            let provenance = Provenance {
                compatibility: Some(report.compatibility),
                review_id: Some(id),
                reviewer: Some(reviewer.to_string()),
                reason: Some(reason.to_string()),
            };
            let version = match apply_in(
                db,
                candidate,
                base.as_ref(),
                &provenance,
                keep_versions,
                &source,
            ) {
                Ok(v) => v,
                Err(RegistryError::Conflict { .. }) => {
                    return Err(RegistryError::Superseded {
                        id,
                        why: "the accepted contract moved since this review was queued".into(),
                    })
                }
                Err(e) => return Err(e),
            };
            failpoint::hit("accept.after_apply")?;
            let accepted: Vec<String> = report
                .changes
                .iter()
                .map(crate::core::report::change_id)
                .collect();
            let accepted = serde_json::to_string(&accepted).unwrap_or_default();
            db.execute(
                "UPDATE tool_versions SET accepted_changes = ?1, via = ?3 WHERE registry_version = ?2",
                values![&accepted, version, via],
            )?;
            db.execute(
                "UPDATE reviews SET state = ?5, decided_at = ?2, reviewer = ?3, reason = ?4,
                    source_gz = NULL, via = ?6 WHERE id = ?1",
                values![id, &now_rfc3339(), reviewer, reason, ReviewState::Accepted, via],
            )?;
            release_sources(db, source.digest.into_iter().collect())?;
            db.execute(
                "UPDATE watch_state SET status = ?3, last_compatibility = ?2 WHERE watch = ?1",
                values![&review.watch, review.compatibility, WatchStatus::Applied],
            )?;
            // The validators of the accepted document are unknown here; the next cycle refetches.
            db.execute(
                "DELETE FROM validators WHERE watch = ?1",
                values![&review.watch],
            )?;
            let mut data =
                EventData::for_watch(&review.watch, candidate.kind.as_str()).with_report(report);
            data.review_id = Some(id);
            data.registry_version = Some(version);
            data.reviewer = Some(reviewer.to_string());
            events::emit(db, &routes, EventKind::ReviewAccepted, &data)?;
            failpoint::hit("accept.before_commit")?;
            Ok(version)
        })?;
        failpoint::hit("accept.after_commit")?;
        Ok(version)
    }
    /// Rejects an open review; its candidate fingerprint is remembered and never queued again.
    pub fn reject(&mut self, id: i64, reviewer: &str, reason: &str) -> Result<()> {
        self.reject_via(id, reviewer, Via::Cli, reason)
    }
    /// [`Registry::reject`], recording how the reviewer was identified (`via`).
    pub fn reject_via(&mut self, id: i64, reviewer: &str, via: Via, reason: &str) -> Result<()> {
        let routes = self.current_routes();
        self.write(|db| {
            let review = read_review(db, id)?.ok_or(RegistryError::ReviewNotFound { id })?;
            if review.state != ReviewState::Open {
                return Err(RegistryError::Superseded {
                    id,
                    why: format!("the review is {}", review.state),
                });
            }
            let now = now_rfc3339();
            db.execute(
                "UPDATE reviews SET state = ?5, decided_at = ?2, reviewer = ?3, reason = ?4, source_gz = NULL, via = ?6 WHERE id = ?1",
                values![id, &now, reviewer, reason, ReviewState::Rejected, via],
            )?;
            let digest: Option<String> = db
                .query_opt(
                    "SELECT source_digest FROM reviews WHERE id = ?1",
                    values![id],
                    |r| r.get(0),
                )?
                .flatten();
            release_sources(db, digest.iter().cloned().collect())?;
            db.execute(
                UPSERT_REJECTED,
                values![
                    &review.watch,
                    &review.candidate_fingerprint,
                    id,
                    &now,
                    digest.as_deref(),
                    FINGERPRINT_VERSION
                ],
            )?;
            db.execute(
                "UPDATE watch_state SET status = ?2 WHERE watch = ?1",
                values![&review.watch, WatchStatus::Rejected],
            )?;
            let kind = review.candidate.as_ref().map_or("", |c| c.kind.as_str());
            let mut data = EventData::for_watch(&review.watch, kind);
            if let Some(report) = &review.report {
                data = data.with_report(report);
            }
            data.review_id = Some(id);
            data.reviewer = Some(reviewer.to_string());
            events::emit(db, &routes, EventKind::ReviewRejected, &data)?;
            Ok(())
        })
    }
    pub fn open_change_count(&self, watch: &str) -> Result<i64> {
        let sum: Option<i64> = self.read(|db| {
            db.query_opt(
                "SELECT CAST(COALESCE(SUM(change_count), 0) AS BIGINT) FROM reviews
                 WHERE watch = ?1 AND state = ?2",
                values![watch, ReviewState::Open],
                |r| r.get(0),
            )
        })?;
        Ok(sum.unwrap_or(0))
    }
}

/// Drops the candidate and report of a watch's closed reviews beyond the newest
/// `keep_reviews` (`[storage] keep_reviews`); their metadata stays. Open reviews are never
/// pruned.
/// Answers the source digests of the pruned reviews (to release).
fn prune_reviews(db: &mut Db<'_>, watch: &str, keep_reviews: u32) -> Result<Vec<String>> {
    const PRUNED: &str = "WHERE watch = ?1 AND state != ?3 AND pruned_at IS NULL
           AND id NOT IN (SELECT id FROM reviews WHERE watch = ?1 AND state != ?3
                          ORDER BY id DESC LIMIT ?2)";
    let dropped = digests(
        db,
        &format!("SELECT source_digest FROM reviews {PRUNED}"),
        values![watch, i64::from(keep_reviews), ReviewState::Open],
    )?;
    db.execute(
        &format!(
            "UPDATE reviews SET candidate_spec_json = '', report_json = '', candidate_gz = NULL,
                report_gz = NULL, source_gz = NULL, source_kind = NULL, pruned_at = ?4 {PRUNED}"
        ),
        values![
            watch,
            i64::from(keep_reviews),
            ReviewState::Open,
            &now_rfc3339()
        ],
    )?;
    Ok(dropped)
}

/// The stored source of a review's candidate (kept while it is open).
pub(super) fn review_source(db: &mut Db<'_>, id: i64) -> Result<StoredSource> {
    let (digest, gz, derivable): (Option<String>, Option<Vec<u8>>, bool) = db
        .query_opt(
            "SELECT r.source_digest, COALESCE(r.source_gz, s.gz), r.source_kind IS NOT NULL
             FROM reviews r LEFT JOIN sources s ON s.digest = r.source_digest WHERE r.id = ?1",
            values![id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )?
        .ok_or(RegistryError::ReviewNotFound { id })?;
    Ok(StoredSource {
        digest,
        gz,
        derivable,
    })
}

pub(super) fn read_review(db: &mut Db<'_>, id: i64) -> Result<Option<Review>> {
    type Row = (
        (String, ReviewState, Compatibility, i64, String, i64),
        (Option<String>, String, String, String),
        (Option<String>, Option<String>, Option<String>),
        (Option<Vec<u8>>, Option<Vec<u8>>, Option<String>),
        (Option<Kind>, Option<String>, i64),
    );
    let row: Option<Row> = db.query_opt(
        "SELECT watch, state, compatibility, change_count, created_at, base_registry_version,
                    base_fingerprint, candidate_fingerprint, candidate_spec_json, report_json,
                    decided_at, reviewer, reason, candidate_gz, report_gz, pruned_at,
                    source_kind, source_digest, fingerprint_version
             FROM reviews WHERE id = ?1",
        values![id],
        |r| {
            Ok((
                (
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ),
                (r.get(6)?, r.get(7)?, r.get(8)?, r.get(9)?),
                (r.get(10)?, r.get(11)?, r.get(12)?),
                (r.get(13)?, r.get(14)?, r.get(15)?),
                (r.get(16)?, r.get(17)?, r.get(18)?),
            ))
        },
    )?;
    let Some((
        (watch, state, compatibility, change_count, created_at, base_rv),
        (base_fp, cand_fp, spec, report),
        (decided_at, reviewer, reason),
        (candidate_gz, report_gz, pruned_at),
        (source_kind, source_digest, fp_version),
    )) = row
    else {
        return Ok(None);
    };
    let key = id.to_string();
    let bad = |problem: String| RegistryError::BadRow {
        table: "reviews",
        key: key.clone(),
        problem,
    };
    if pruned_at.is_some() && state == ReviewState::Open {
        return Err(bad("an open review without its candidate".into()));
    }
    let (candidate, report) = if pruned_at.is_some() {
        (None, None)
    } else {
        let from_source = source_kind.map(|k| (k, source_digest.as_deref()));
        let candidate = stored_spec(
            db,
            ("reviews", &key, &watch),
            &spec,
            candidate_gz,
            from_source,
            SharedEndpoints::default(),
        )?;
        let report: DriftReport = match report_gz {
            Some(blob) => stored_json("reviews", &key, &blob, "report")?,
            None => {
                let value =
                    crate::core::json::parse_json(&report).map_err(|e| bad(e.to_string()))?;
                serde_json::from_value(value)
                    .map_err(|e| bad(format!("not a valid report: {e}")))?
            }
        };
        if candidate_key(&candidate) != watch {
            return Err(bad("candidate belongs to another watch".into()));
        }
        // A candidate read from its source is checked like the accepted snapshot (tampering).
        if from_source.is_some()
            && fp_version == FINGERPRINT_VERSION
            && tool_fingerprint(&candidate) != cand_fp
        {
            return Err(bad(
                "the stored fingerprint does not match the candidate read from its source".into(),
            ));
        }
        (Some(candidate), Some(report))
    };
    Ok(Some(Review {
        id,
        watch,
        state,
        compatibility,
        change_count,
        created_at,
        base_registry_version: base_rv,
        base_fingerprint: base_fp,
        candidate_fingerprint: cand_fp,
        candidate,
        report,
        decided_at,
        reviewer,
        reason,
        pruned_at,
    }))
}

pub(super) fn supersede_open_reviews(
    db: &mut Db<'_>,
    routes: &crate::core::event::Routes,
    watch: &str,
    kind: Kind,
    superseded_by: Option<i64>,
) -> Result<()> {
    let open: Vec<i64> = db.query(
        "SELECT id FROM reviews WHERE watch = ?1 AND state = ?2 ORDER BY id",
        values![watch, ReviewState::Open],
        |r| r.get(0),
    )?;
    for id in open {
        let mut data = EventData::for_watch(watch, kind.as_str());
        data.review_id = Some(id);
        data.superseded_by = superseded_by;
        events::emit(db, routes, EventKind::ReviewSuperseded, &data)?;
    }
    let dropped = digests(
        db,
        "SELECT source_digest FROM reviews WHERE watch = ?1 AND state = ?2",
        values![watch, ReviewState::Open],
    )?;
    db.execute(
        "UPDATE reviews SET state = ?3, decided_at = ?2, source_gz = NULL WHERE watch = ?1 AND state = ?4",
        values![
            watch,
            &now_rfc3339(),
            ReviewState::Superseded,
            ReviewState::Open
        ],
    )?;
    release_sources(db, dropped)?;
    Ok(())
}

/// A rejected candidate written whole (every column of `rejected_candidates` in the SET list,
/// as the `INSERT OR REPLACE` it replaces; `upserts_write_every_column` checks it).
pub(super) const UPSERT_REJECTED: &str = "INSERT INTO rejected_candidates (watch, fingerprint,
        review_id, rejected_at, source_digest, fingerprint_version)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)
     ON CONFLICT (watch, fingerprint) DO UPDATE SET review_id = excluded.review_id,
        rejected_at = excluded.rejected_at, source_digest = excluded.source_digest,
        fingerprint_version = excluded.fingerprint_version";
