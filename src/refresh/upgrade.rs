//! The one-off upgrade paths of a refresh, kept out of its hot path: contracts stored by an
//! earlier release re-baselined without review when the same document is only read more
//! completely (`projection-upgrade`), and file identities stored in relative form.

use super::{
    canonical_path, legacy_source_identity, mark_ok, source_identity, watch_policy, Action,
    Outcome, RefreshError,
};
use crate::config::{SourceConfig, WatchConfig};
use crate::core::diff::{classify, ClassifyPolicy};
use crate::core::fingerprint::tool_fingerprint;
use crate::core::model::Kind;
use crate::registry::SourceValidators;
use crate::registry::{
    CasBase, Provenance, Registry, RegistryError, StoredSource, WatchState, WatchStatus,
};

/// Rewrites the file identities older releases stored in relative form (`path:pets.json`,
/// relative to where `--config` was spelled from) as canonical absolute paths, when the
/// relative path resolved against the config file's folder (or the working directory, as
/// those releases did) is the watch's file. Returns how many were migrated.
pub fn migrate_identities(
    registry: &mut Registry,
    config: &crate::config::Config,
) -> Result<usize, RegistryError> {
    let folder = config
        .path
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let folder = std::path::absolute(&folder).unwrap_or(folder);
    let mut migrated = 0;
    for watch in &config.watches {
        if !matches!(watch.source, SourceConfig::Path(_) | SourceConfig::Url(_)) {
            continue;
        }
        let Some(mut state) = registry.watch_state(&watch.name)? else {
            continue;
        };
        let Some(stored) = state.source_identity.clone() else {
            continue;
        };
        if let SourceConfig::Url(url) = &watch.source {
            // A URL identity stored with its query values as written (before H39): rewritten
            // with keyed digests, so a `?token=` leaves the registry at the first open.
            if url.query().is_some_and(|q| !q.is_empty())
                && stored == legacy_source_identity(&watch.source)
            {
                let current = source_identity(&watch.source, || registry.identity_key())?;
                tracing::info!(event = "source_identity_migrated", watch = %watch.name,
                    from = %crate::fetch::redact_identity(&stored),
                    to = %crate::fetch::redact_identity(&current));
                state.source_identity = Some(current);
                registry.record_watch(&state)?;
                migrated += 1;
            }
            continue;
        }
        let Some(relative) = stored.strip_prefix("path:").map(std::path::Path::new) else {
            continue;
        };
        if relative.is_absolute() {
            continue;
        }
        let current = legacy_source_identity(&watch.source);
        let matches = [
            Some(folder.join(relative)),
            std::path::absolute(relative).ok(),
        ]
        .into_iter()
        .flatten()
        .any(|candidate| format!("path:{}", canonical_path(&candidate).display()) == current);
        if matches {
            tracing::info!(event = "source_identity_migrated", watch = %watch.name, from = %stored, to = %current);
            state.source_identity = Some(current);
            registry.record_watch(&state)?;
            migrated += 1;
        }
    }
    Ok(migrated)
}

/// The upgrade from a release that did not model MCP prompts, resources and capabilities: when
/// the accepted contract's capabilities are unknown, the candidate states them, and the
/// candidate without them (tools only) has the accepted fingerprint, the candidate is the same
/// document read more completely. It is applied without review (history reason
/// `projection-upgrade`, reviewer `schemawatch`) and logged at WARN with what was baselined —
/// unless its newly modelled text holds hidden characters, which is classified as drift.
/// Answers `None` when this is not such an upgrade.
#[allow(clippy::too_many_arguments)]
pub(super) fn rebaseline_mcp(
    registry: &mut Registry,
    watch: &WatchConfig,
    current: &crate::registry::StoredTool,
    spec: &crate::core::model::ToolSpec,
    keep_versions: u32,
    state: &mut WatchState,
    validators: SourceValidators<'_>,
    source: &StoredSource,
) -> Result<Option<Outcome>, RefreshError> {
    use crate::core::normalize::mcp::tools_only_projection;
    if current.spec.kind != Kind::Mcp
        || current.spec.capabilities.is_some()
        || spec.capabilities.is_none()
    {
        return Ok(None);
    }
    let legacy = tool_fingerprint(&tools_only_projection(spec));
    if legacy != current.fingerprint {
        return rebaseline_mcp_candidate(registry, watch, current, spec, &legacy, state);
    }
    let report = classify(&current.spec, spec, &ClassifyPolicy::default());
    if report
        .changes
        .iter()
        .any(|c| c.rule == crate::core::diff::text::HIDDEN_TEXT_ADDED.id)
    {
        return Ok(None);
    }
    let baselined: Vec<String> = spec
        .endpoints
        .iter()
        .filter(|e| e.method != "TOOL")
        .map(|e| e.name.to_string())
        .collect();
    let Some(version) = apply_projection_upgrade(
        registry,
        current,
        spec,
        keep_versions,
        state,
        validators,
        source,
    )?
    else {
        return Ok(None);
    };
    tracing::warn!(event = "projection_upgrade", watch = %watch.name, registry_version = version,
        baselined = %baselined.join(", "), capabilities = true,
        "MCP prompts, resource templates and capabilities baselined without review");
    Ok(Some(Outcome::new(&watch.name, Action::Unchanged)))
}

/// Applies `spec` as the same document read by a wider projection (no review; history reason
/// `projection-upgrade`, reviewer `schemawatch`): the new registry version, or `None` when
/// someone else moved the contract meanwhile (then it is classified against that as usual).
#[allow(clippy::too_many_arguments)]
fn apply_projection_upgrade(
    registry: &mut Registry,
    current: &crate::registry::StoredTool,
    spec: &crate::core::model::ToolSpec,
    keep_versions: u32,
    state: &mut WatchState,
    validators: SourceValidators<'_>,
    source: &StoredSource,
) -> Result<Option<i64>, RefreshError> {
    mark_ok(state, WatchStatus::Unchanged, None);
    let provenance = Provenance {
        compatibility: None,
        review_id: None,
        reviewer: Some("schemawatch".into()),
        reason: Some("projection-upgrade".into()),
    };
    match registry.apply_with_state(
        spec,
        Some(&CasBase {
            registry_version: current.registry_version,
            fingerprint: current.fingerprint.clone(),
        }),
        &provenance,
        keep_versions,
        state,
        Some(validators),
        source,
    ) {
        Ok(version) => Ok(Some(version)),
        Err(RegistryError::Conflict { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The same upgrade for a candidate that is not the accepted contract: one a reviewer
/// rejected under the old projection is still `rejected`; one an open review holds keeps that
/// review (same id, still open), its candidate and report replaced by the complete reading.
/// A contract stored by a release before stored sources (migration 0003), fetched in full for
/// the first time since: when every change that is not `info` is one the older, narrower
/// projection could not have seen ([`NEWLY_READ_BY_PROJECTION_2`], or a kept key that was
/// absent), the document is the same one read more completely. It is re-baselined without
/// review (history reason `projection-upgrade`, logged at WARN with what was baselined), never
/// when newly read text holds hidden characters. Anything else is classified as usual.
#[allow(clippy::too_many_arguments)]
pub(super) fn rebaseline_legacy(
    registry: &mut Registry,
    watch: &WatchConfig,
    current: &crate::registry::StoredTool,
    spec: &crate::core::model::ToolSpec,
    keep_versions: u32,
    state: &mut WatchState,
    validators: SourceValidators<'_>,
    source: &StoredSource,
) -> Result<Option<Outcome>, RefreshError> {
    use crate::core::diff::rules::NEWLY_READ_BY_PROJECTION_2;
    use crate::core::model::Severity;
    let report = classify(&current.spec, spec, &ClassifyPolicy::default());
    // Server variables are newly read; the same base URLs and transport are the same target.
    let same_target_but_variables = current.spec.remote.variables.is_empty()
        && current.spec.remote.base_urls == spec.remote.base_urls
        && current.spec.remote.transport == spec.remote.transport;
    let newly_read = |c: &crate::core::model::Change| {
        c.severity == Severity::Info
            || NEWLY_READ_BY_PROJECTION_2.contains(&c.rule.as_str())
            || (c.rule == crate::core::diff::contract::EXECUTION_TARGET_CHANGED.id
                && same_target_but_variables)
            || (c.before.is_none()
                && (c.rule == crate::core::diff::shared::EXTENSION_CHANGED.id
                    || c.rule == crate::core::diff::shared::UNCLASSIFIED_CHANGE.id))
    };
    if report.changes.is_empty() || !report.changes.iter().all(newly_read) {
        return Ok(None);
    }
    let baselined: Vec<&str> = report
        .changes
        .iter()
        .take(crate::registry::LOGGED_PATHS)
        .map(|c| c.path.as_str())
        .collect();
    let Some(version) = apply_projection_upgrade(
        registry,
        current,
        spec,
        keep_versions,
        state,
        validators,
        source,
    )?
    else {
        return Ok(None);
    };
    tracing::warn!(event = "projection_upgrade", watch = %watch.name, registry_version = version,
        change_count = report.changes.len(), baselined = %baselined.join(", "),
        "a contract stored by an earlier release, read more completely, baselined without review");
    Ok(Some(Outcome::new(&watch.name, Action::Unchanged)))
}

fn rebaseline_mcp_candidate(
    registry: &mut Registry,
    watch: &WatchConfig,
    current: &crate::registry::StoredTool,
    spec: &crate::core::model::ToolSpec,
    legacy: &str,
    state: &mut WatchState,
) -> Result<Option<Outcome>, RefreshError> {
    if registry.is_rejected(&watch.name, legacy)? {
        mark_ok(state, WatchStatus::Rejected, None);
        registry.record_watch(state)?;
        tracing::warn!(event = "projection_upgrade", watch = %watch.name, action = "rejected",
            "a candidate rejected before the upgrade, read more completely, is still rejected");
        return Ok(Some(Outcome::new(&watch.name, Action::Rejected)));
    }
    let policy = watch_policy(watch).map_err(RefreshError::Classification)?;
    let report = classify(&current.spec, spec, &policy);
    mark_ok(
        state,
        WatchStatus::PendingReview,
        Some(report.compatibility),
    );
    match registry.rebaseline_open_review(&watch.name, legacy, spec, &report, state)? {
        Some(id) => {
            tracing::warn!(event = "projection_upgrade", watch = %watch.name, review_id = id,
                change_count = report.changes.len(),
                "the open review's candidate, read more completely, replaced in place");
            let mut outcome = Outcome::new(&watch.name, Action::PendingReview);
            outcome.compatibility = Some(report.compatibility);
            outcome.review_id = Some(id);
            outcome.report = Some(report);
            Ok(Some(outcome))
        }
        None => Ok(None),
    }
}

/// Before a candidate is decided on: a contract stored before prompts, resources and
/// capabilities were modelled, or by a release before stored sources (`legacy_projection`),
/// is re-baselined when the candidate is the same document read more completely. Answers the
/// outcome when an upgrade took the cycle.
pub(super) fn before_deciding(
    registry: &mut Registry,
    watch: &WatchConfig,
    gathered: &super::Gathered,
    candidate: &super::Candidate<'_>,
    keep_versions: u32,
    state: &mut WatchState,
) -> Result<Option<Outcome>, RefreshError> {
    let Some(current) = &gathered.current else {
        return Ok(None);
    };
    if let Some(outcome) = rebaseline_mcp(
        registry,
        watch,
        current,
        candidate.spec,
        keep_versions,
        state,
        candidate.validators,
        candidate.source,
    )? {
        return Ok(Some(outcome));
    }
    if registry.legacy_projection(&watch.name)? {
        if current.fingerprint != candidate.fingerprint && !gathered.rejected_before {
            if let Some(outcome) = rebaseline_legacy(
                registry,
                watch,
                current,
                candidate.spec,
                keep_versions,
                state,
                candidate.validators,
                candidate.source,
            )? {
                return Ok(Some(outcome));
            }
        }
        registry.clear_legacy_projection(&watch.name)?;
    }
    Ok(None)
}
