//! The safe upgrade path across a projection change (`FINGERPRINT_VERSION`): stored source
//! documents are normalized again by this release, and the accepted snapshot and open review
//! candidates take the new reading in place — no review, no registry version bump, a history
//! note `projection-upgrade` — so an unchanged document never looks like drift. Text the new
//! projection models that holds hidden characters is never baselined this way: that row is
//! left to the next fetch, which classifies it (`hidden-text-added`).

use super::sql::values;
use super::sql::Db;
use super::{
    codec, read_review, read_tool, RegistryError, Result, ReviewState, FINGERPRINT_VERSION,
};
use crate::core::diff::{classify, ClassifyPolicy};
use crate::core::fingerprint::tool_fingerprint;
use crate::core::model::{DriftReport, ToolSpec};

/// How many baselined change paths the WARN line names (the rest are counted).
pub const LOGGED_PATHS: usize = 20;

/// The stored document of `key`, normalized by this release; `None` (logged) when it no longer
/// normalizes, is another tool's, or gains hidden characters against `before`.
fn renormalize(
    table: &'static str,
    key: &str,
    before: &ToolSpec,
    gz: &[u8],
) -> Result<Option<(ToolSpec, DriftReport)>> {
    let what = if table == "tools" {
        "accepted"
    } else {
        "open review"
    };
    let watch = before_key(before);
    let bytes = codec::gunzip(table, key, gz)?;
    let spec = match crate::core::normalize::normalize(before.kind, &watch, &bytes) {
        Ok(spec) => spec,
        Err(e) => {
            tracing::warn!(event = "projection_upgrade_skipped", watch = %watch, what,
                error = %e, "the stored source no longer normalizes; re-fingerprinted from the stored contract");
            return Ok(None);
        }
    };
    drop(bytes);
    if before_key(&spec) != watch {
        return Ok(None);
    }
    let report = classify(before, &spec, &ClassifyPolicy::default());
    if report
        .changes
        .iter()
        .any(|c| c.rule == crate::core::diff::text::HIDDEN_TEXT_ADDED.id)
    {
        tracing::warn!(event = "projection_upgrade_skipped", watch = %watch, what,
            "newly modelled text holds hidden characters: not baselined, the next fetch classifies it");
        return Ok(None);
    }
    let paths: Vec<&str> = report
        .changes
        .iter()
        .take(LOGGED_PATHS)
        .map(|c| c.path.as_str())
        .collect();
    tracing::warn!(event = "projection_upgrade", watch = %watch, what,
        fingerprint_version = FINGERPRINT_VERSION, change_count = report.changes.len(),
        baselined = %paths.join(", "),
        "the stored source, read by the new projection, baselined without review");
    Ok(Some((spec, report)))
}

/// A row read from a source this release no longer normalizes is left to the
/// re-fingerprinting pass (which logs it, and reads of it fail closed), not an open failure.
fn readable<T>(read: Result<Option<T>>) -> Result<Option<T>> {
    match read {
        Err(RegistryError::SourceUnreadable { .. }) => Ok(None),
        other => other,
    }
}

fn before_key(spec: &ToolSpec) -> String {
    super::candidate_key(spec)
}

/// Accepted snapshots stored with their source: re-normalized in place (the current history
/// row carries the note), and open reviews based on them follow the new base fingerprint.
pub(super) fn accepted_from_sources(
    db: &mut Db<'_>,
    routes: &crate::core::event::Routes,
) -> Result<()> {
    // The source: in `sources` (migration 0004 on) or in the row (migration 0003).
    let rows: Vec<(String, Vec<u8>, bool)> = db.query(
        "SELECT t.name, COALESCE(t.source_gz, s.gz), v.source_kind IS NOT NULL
         FROM tools t LEFT JOIN sources s ON s.digest = t.source_digest
              LEFT JOIN tool_versions v ON v.tool = t.name AND v.version = t.version
         WHERE t.fingerprint_version < ?1 AND COALESCE(t.source_gz, s.gz) IS NOT NULL
         ORDER BY t.name",
        values![FINGERPRINT_VERSION],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    for (name, gz, from_source) in rows {
        let Some(current) = readable(read_tool(db, &name))? else {
            continue;
        };
        let Some((spec, report)) = renormalize("tools", &name, &current.spec, &gz)? else {
            continue;
        };
        // Baselined without review: notifiable like the refresh's own projection upgrades.
        let mut data = crate::core::event::EventData::for_watch(&name, spec.kind.as_str())
            .with_report(&report);
        data.compatibility = None;
        data.registry_version = Some(current.registry_version);
        super::events::emit(
            db,
            routes,
            crate::core::event::EventKind::ProjectionUpgrade,
            &data,
        )?;
        let fingerprint = tool_fingerprint(&spec);
        // A row read from its source stays so: this release's reading of it is `spec`.
        let gz = (!from_source).then(|| codec::gz_json(&spec));
        db.execute(
            "UPDATE tool_versions SET spec_json = '', spec_gz = ?3, fingerprint = ?4,
                fingerprint_version = ?5, note = 'projection-upgrade'
             WHERE tool = ?1 AND version = ?2",
            values![
                &name,
                current.version,
                gz.as_deref(),
                &fingerprint,
                FINGERPRINT_VERSION
            ],
        )?;
        db.execute(
            "UPDATE tools SET spec_json = '', spec_gz = NULL, fingerprint = ?2, fingerprint_version = ?3
             WHERE name = ?1",
            values![&name, &fingerprint, FINGERPRINT_VERSION],
        )?;
        db.execute(
            "UPDATE reviews SET base_fingerprint = ?2
             WHERE watch = ?1 AND state = ?4 AND base_fingerprint = ?3",
            values![&name, &fingerprint, &current.fingerprint, ReviewState::Open],
        )?;
    }
    Ok(())
}

/// Open review candidates stored with their source: re-normalized in place (same id, still
/// open); the report keeps its changes and takes the new fingerprints.
pub(super) fn open_reviews_from_sources(db: &mut Db<'_>) -> Result<()> {
    let rows: Vec<(i64, Vec<u8>, bool)> = db.query(
        "SELECT r.id, COALESCE(r.source_gz, s.gz), r.source_kind IS NOT NULL
         FROM reviews r LEFT JOIN sources s ON s.digest = r.source_digest
         WHERE r.state = ?2 AND r.fingerprint_version < ?1
           AND COALESCE(r.source_gz, s.gz) IS NOT NULL
         ORDER BY r.id",
        values![FINGERPRINT_VERSION, ReviewState::Open],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    for (id, gz, from_source) in rows {
        let Some(review) = readable(read_review(db, id))? else {
            continue;
        };
        let (Some(before), Some(mut report)) = (review.candidate, review.report) else {
            continue;
        };
        let Some((spec, _)) = renormalize("reviews", &id.to_string(), &before, &gz)? else {
            continue;
        };
        let fingerprint = tool_fingerprint(&spec);
        let base: Option<String> = db
            .query_opt(
                "SELECT base_fingerprint FROM reviews WHERE id = ?1",
                values![id],
                |r| r.get(0),
            )?
            .flatten();
        report.new_fingerprint = fingerprint.clone();
        if let Some(base) = base {
            report.old_fingerprint = base;
        }
        let candidate_gz = (!from_source).then(|| codec::gz_json(&spec));
        let report_gz = codec::gz_json(&report);
        db.execute(
            "UPDATE reviews SET candidate_spec_json = '', candidate_gz = ?2, candidate_fingerprint = ?3,
                fingerprint_version = ?4, report_json = '', report_gz = ?5
             WHERE id = ?1",
            values![
                id,
                candidate_gz.as_deref(),
                &fingerprint,
                FINGERPRINT_VERSION,
                &report_gz
            ],
        )?;
    }
    Ok(())
}
