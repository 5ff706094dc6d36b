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
