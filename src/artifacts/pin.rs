//! Pins: a digest-sealed snapshot of the tool versions a client reviewed, and the eligibility
//! check that answers whether what it reviewed is still what runs. A pin never follows a
//! compatible change: whatever changed is a reason to review again.

use super::catalog::{Semver, ToolRecord, SIDE_EFFECT_CLASSES};
use crate::core::fingerprint::digest_text;
use crate::core::json::to_canonical_string;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

pub const PIN_SCHEMA_VERSION: &str = "schemawatch.tool_pin.v1";
const PIN_DOMAIN: &str = "schemawatch.tool_pin.v1";

/// One pinned tool: the catalog record plus the implementation identity (endpoint fingerprint).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinnedTool {
    pub record: ToolRecord,
    pub implementation_id: String,
}

fn body(tools: &[PinnedTool]) -> Value {
    let mut sorted: Vec<&PinnedTool> = tools.iter().collect();
    sorted.sort_by(|a, b| {
        (&a.record.tool_id, &a.record.version).cmp(&(&b.record.tool_id, &b.record.version))
    });
    json!({
        "schema_version": PIN_SCHEMA_VERSION,
        "tools": sorted.iter().map(|t| json!({
            "tool_id": t.record.tool_id,
            "version": t.record.version.to_string(),
            "side_effect_class": t.record.side_effect_class,
            "schema_digest": t.record.schema_digest,
            "implementation_id": t.implementation_id,
        })).collect::<Vec<_>>(),
    })
}

/// The pin document: its body plus `snapshot_digest` over the body's canonical JSON.
pub fn capture(tools: &[PinnedTool]) -> String {
    let body = body(tools);
    let digest = digest_text(PIN_DOMAIN, &to_canonical_string(&body));
    let mut doc = body;
    doc["snapshot_digest"] = json!(digest);
    to_canonical_string(&doc)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinCheck {
    pub snapshot_digest: Option<String>,
    /// Sorted, deduplicated reason codes; empty means eligible.
    pub reasons: Vec<&'static str>,
}

impl PinCheck {
    pub fn eligible(&self) -> bool {
        self.reasons.is_empty()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "snapshot_digest": self.snapshot_digest,
            "status": if self.eligible() { "eligible" } else { "re-review-required" },
            "reasons": self.reasons,
        })
    }
}

fn invalid() -> PinCheck {
    PinCheck {
        snapshot_digest: None,
        reasons: vec!["invalid_snapshot"],
    }
}

/// Parses a pin strictly (any deviation: `invalid_snapshot`).
pub fn parse(text: &str) -> Result<(String, Vec<PinnedTool>), PinCheck> {
    let value = crate::core::json::parse_json(text).map_err(|_| invalid())?;
    let Value::Object(top) = &value else {
        return Err(invalid());
    };
    let mut keys: Vec<&str> = top.keys().map(String::as_str).collect();
    keys.sort_unstable();
    if keys != ["schema_version", "snapshot_digest", "tools"]
        || top["schema_version"] != json!(PIN_SCHEMA_VERSION)
    {
        return Err(invalid());
    }
    let digest = top["snapshot_digest"]
        .as_str()
        .ok_or_else(invalid)?
        .to_string();
    let Value::Array(items) = &top["tools"] else {
        return Err(invalid());
    };
    let mut tools = Vec::new();
    for item in items {
        let Value::Object(m) = item else {
            return Err(invalid());
        };
        let mut keys: Vec<&str> = m.keys().map(String::as_str).collect();
        keys.sort_unstable();
        if keys
            != [
                "implementation_id",
                "schema_digest",
                "side_effect_class",
                "tool_id",
                "version",
            ]
        {
            return Err(invalid());
        }
        let s = |k: &str| m[k].as_str().map(String::from).ok_or_else(invalid);
        let side_effect_class = s("side_effect_class")?;
        if !SIDE_EFFECT_CLASSES.contains(&side_effect_class.as_str()) {
            return Err(invalid());
        }
        tools.push(PinnedTool {
            record: ToolRecord {
                tool_id: s("tool_id")?,
                version: Semver::parse(&s("version")?).ok_or_else(invalid)?,
                capability_class: String::new(),
                side_effect_class,
                schema_digest: s("schema_digest")?,
            },
            implementation_id: s("implementation_id")?,
        });
    }
    // The digest seals the body: an edited pin is invalid, not silently re-trusted.
    let expected = digest_text(PIN_DOMAIN, &to_canonical_string(&body(&tools)));
    if expected != digest {
        return Err(PinCheck {
            snapshot_digest: Some(digest),
            reasons: vec!["invalid_snapshot"],
        });
    }
    Ok((digest, tools))
}

/// Checks a pin against the tools as they are now (keyed by tool id).
pub fn check(text: &str, current: &BTreeMap<String, PinnedTool>) -> PinCheck {
    let (digest, tools) = match parse(text) {
        Ok(parsed) => parsed,
        Err(invalid) => return invalid,
    };
    let mut reasons = BTreeSet::new();
    for pinned in &tools {
        // Versions here are derived from the contract's own history, so a version change always
        // comes with a change below; the reasons say which. A changed version whose facts all
        // match (history pruned, say) still counts as a different implementation.
        match current.get(&pinned.record.tool_id) {
            None => {
                reasons.insert("tool_unavailable");
            }
            Some(now) => {
                if now.record.schema_digest != pinned.record.schema_digest {
                    reasons.insert("schema_changed");
                }
                if now.record.side_effect_class != pinned.record.side_effect_class {
                    reasons.insert("side_effect_changed");
                }
                if now.implementation_id != pinned.implementation_id
                    || now.record.version != pinned.record.version
                {
                    reasons.insert("implementation_changed");
                }
            }
        }
    }
    PinCheck {
        snapshot_digest: Some(digest),
        reasons: reasons.into_iter().collect(),
    }
}
