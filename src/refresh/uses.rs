//! Reading a watch's consumer scope (`uses`, `uses_file`; `diff --uses FILE`): one entry a
//! line, a pin file (its `tool:WATCH/NAME` ids, those of one watch), or a surface
//! classification file with a named bucket (`surface.toml#bucket`, ids `WATCH/NAME`).

use crate::config::UsesSource;
use crate::core::scope::{parse_uses_lines, Uses};
use std::path::Path;

/// The uses of `source`, for the watch named `watch` (`None`: the only watch a pin names).
pub fn read_uses(source: &UsesSource, watch: Option<&str>) -> Result<Uses, String> {
    let uses = match source {
        UsesSource::Inline(entries) => Uses::new(entries.iter().cloned()),
        UsesSource::File(path) => read_uses_file(path, watch)?,
    };
    if uses.entries.is_empty() {
        return Err(
            "uses names no endpoint (it would put every endpoint out of scope)".to_string(),
        );
    }
    Ok(uses)
}

/// Reads a uses file (see the module's doc).
pub fn read_uses_file(path: &Path, watch: Option<&str>) -> Result<Uses, String> {
    let shown = path.display().to_string();
    if let Some((file, bucket)) = shown.rsplit_once('#') {
        let buckets = crate::artifacts::triage::read_classification(Path::new(file))?;
        let ids = buckets
            .get(bucket)
            .ok_or_else(|| format!("uses file {file}: no bucket {bucket:?}"))?;
        let names = ids
            .iter()
            .map(|id| id.split_once('/').map_or(id.as_str(), |(_, name)| name));
        return Ok(Uses::new(names));
    }
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("cannot read uses file {shown}: {e}"))?;
    if text.trim_start().starts_with('{') {
        let (_, tools) = crate::artifacts::pin::parse(&text)
            .map_err(|_| format!("uses file {shown}: not a valid pin file"))?;
        let mut by_watch: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
        for tool in &tools {
            let id = tool
                .record
                .tool_id
                .strip_prefix("tool:")
                .unwrap_or(&tool.record.tool_id);
            if let Some((w, name)) = id.split_once('/') {
                by_watch.entry(w).or_default().push(name);
            }
        }
        let chosen = match watch {
            Some(w) => by_watch.get(w).ok_or_else(|| {
                format!("uses file {shown}: the pin names no tool of watch {w:?}")
            })?,
            None if by_watch.len() == 1 => by_watch.values().next().ok_or("empty pin")?,
            None => {
                return Err(format!(
                    "uses file {shown}: the pin names tools of {} watches; say which (--watch)",
                    by_watch.len()
                ))
            }
        };
        return Ok(Uses::new(chosen.iter().copied()));
    }
    if shown.ends_with(".toml") {
        return Err(format!(
            "uses file {shown}: a classification file needs a bucket (`{shown}#BUCKET`)"
        ));
    }
    Ok(parse_uses_lines(&text))
}

/// The error a refresh and a start give for `uses` entries that name nothing.
pub fn describe_unknown(watch: &str, unknown: &[String], against: &str) -> String {
    format!(
        "watch {watch:?}: {} in {against} (allow_unknown_uses = true to allow)",
        crate::core::scope::entries_naming_nothing(unknown)
    )
}

/// At `config check`, `run` and a reload: each watch's `uses` against what the registry
/// holds for it, the accepted contract and the candidate of its open review (the newest
/// document a refresh saw). A typo must not wait for the next drift to show; a watch with
/// no accepted contract yet is judged at its refreshes. Every watch in error is named.
pub fn check_uses_against(
    registry: &crate::registry::Registry,
    watches: &[crate::config::WatchConfig],
) -> Result<(), String> {
    let mut errors = Vec::new();
    for watch in watches.iter().filter(|w| !w.allow_unknown_uses) {
        let Some(source) = &watch.uses else { continue };
        let uses = read_uses(source, Some(&watch.name))
            .map_err(|e| format!("watch {:?}: {e}", watch.name))?;
        let accepted = registry
            .tool(&watch.name)
            .map_err(|e| format!("registry: {e}"))?;
        let Some(accepted) = accepted else { continue };
        let candidate = match registry
            .open_review_for(&watch.name)
            .map_err(|e| format!("registry: {e}"))?
        {
            Some(id) => {
                registry
                    .review(id)
                    .map_err(|e| format!("registry: {e}"))?
                    .candidate
            }
            None => None,
        };
        let newest = candidate.as_ref().unwrap_or(&accepted.spec);
        let unknown = uses.unknown(&accepted.spec, newest);
        if !unknown.is_empty() {
            let against = if candidate.is_some() {
                "the accepted contract nor its open review"
            } else {
                "the accepted contract"
            };
            errors.push(describe_unknown(&watch.name, &unknown, against));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}
