//! Review artifacts: content-free catalog inventories and diffs, pins, surface triage and
//! provenance stamps. Pure but for `triage::read_classification` (reads the user's file);
//! the CLI, the API and refresh feed them from the registry.

pub mod catalog;
pub mod pin;
pub mod provenance;
pub mod triage;

use crate::core::fingerprint::SpecIndex;
use crate::core::model::ToolSpec;
use catalog::ToolRecord;
use pin::PinnedTool;

/// The current catalog records of one watch, with implementation identities (endpoint
/// fingerprints), from its retained history (oldest first; the last is the current contract).
pub fn pinned_tools(watch: &str, history: &[ToolSpec]) -> Vec<PinnedTool> {
    let records: Vec<ToolRecord> = catalog::tool_records(watch, history);
    let Some(current) = history.last() else {
        return Vec::new();
    };
    let index = SpecIndex::new(current);
    let fingerprints = index.endpoint_fingerprints();
    let by_name: std::collections::BTreeMap<String, String> = current
        .endpoints
        .iter()
        .map(|e| {
            (
                format!("tool:{watch}/{}", e.name),
                fingerprints.get(&e.identity()).cloned().unwrap_or_default(),
            )
        })
        .collect();
    records
        .into_iter()
        .map(|record| {
            let implementation_id = by_name.get(&record.tool_id).cloned().unwrap_or_default();
            PinnedTool {
                record,
                implementation_id,
            }
        })
        .collect()
}

/// The current catalog records of the configured watches (all, or those in `only`).
pub fn current_tools(
    config: &crate::config::Config,
    registry: &crate::registry::Registry,
    only: &[String],
) -> Result<Vec<PinnedTool>, crate::registry::RegistryError> {
    let mut out = Vec::new();
    for watch in config
        .watches
        .iter()
        .filter(|w| only.is_empty() || only.contains(&w.name))
    {
        let history: Vec<ToolSpec> = registry
            .snapshots(&watch.name)?
            .into_iter()
            .map(|(_, _, spec)| spec)
            .collect();
        out.extend(pinned_tools(&watch.name, &history));
    }
    Ok(out)
}

/// Checks a pin document against the registry's current tools.
pub fn check_pin(
    config: &crate::config::Config,
    registry: &crate::registry::Registry,
    pin_text: &str,
) -> Result<pin::PinCheck, crate::registry::RegistryError> {
    let current = current_tools(config, registry, &[])?
        .into_iter()
        .map(|t| (t.record.tool_id.clone(), t))
        .collect();
    Ok(pin::check(pin_text, &current))
}
