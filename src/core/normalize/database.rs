//! What the two database normalizers (`sqlite`, `postgres`) share: the catalog-format check,
//! the contract around their endpoints, and nullable column types.

use super::{split_watch_name, NormalizeError};
use crate::core::model::{EndpointSpec, Evidence, Kind, Metadata, Remote, ToolSpec};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// Refuses a catalog document of another format (or version) than `expected`.
pub(super) fn check_format(found: &str, expected: &str) -> Result<(), NormalizeError> {
    if found == expected {
        return Ok(());
    }
    Err(NormalizeError::Invalid {
        at: "format".into(),
        problem: format!("expected {expected:?}"),
    })
}

/// The contract of a database watch: its endpoints sorted by identity (a duplicate is an
/// error), no remote target beyond the kind, no definitions.
pub(super) fn contract(
    watch: &str,
    kind: Kind,
    mut endpoints: Vec<EndpointSpec>,
) -> Result<ToolSpec, NormalizeError> {
    crate::core::normalize::sort_by_identity(&mut endpoints);
    let mut seen = BTreeSet::new();
    for e in &endpoints {
        if !seen.insert(e.identity()) {
            return Err(NormalizeError::DuplicateEndpoint(e.identity()));
        }
    }
    let (namespace, name) = split_watch_name(watch);
    Ok(ToolSpec {
        directives: Default::default(),
        roots: Default::default(),
        capabilities: None,
        extensions: Default::default(),
        definitions: BTreeMap::new(),
        endpoints: endpoints.into_iter().map(std::sync::Arc::new).collect(),
        evidence: Evidence {
            license: None,
            source_type: kind.as_str().into(),
        },
        instructions: None,
        kind,
        metadata: Metadata {
            format: Some(kind.as_str().into()),
            title: None,
            version: None,
        },
        name,
        namespace,
        remote: Remote {
            variables: Default::default(),
            base_urls: Vec::new(),
            transport: kind.as_str().into(),
        },
    })
}

/// `schema` that also admits `null` unless the column is NOT NULL.
pub(super) fn nullable(mut schema: Value, non_null: bool) -> Value {
    if non_null {
        return schema;
    }
    if let Some(Value::String(t)) = schema.get("type") {
        let t = t.clone();
        schema["type"] = json!([t, "null"]);
    }
    schema
}
