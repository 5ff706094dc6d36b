//! External `$ref`s of OpenAPI documents (pure, no I/O).
//!
//! A bundle is the root document plus the documents its external `$ref`s reach, keyed by
//! absolute URI. [`external_documents`] lists what a document references (so the edge can
//! fetch it); [`rewrite_bundle`] rewrites every `$ref` of the bundle to a key relative to the
//! root document (`schemas/pet.yaml#/Pet`; refs back into the root stay `#/...`). The keys
//! never depend on where the contract is served, so the same contract fingerprints the same
//! from any host, port or folder.
//!
//! Only `$ref`s in contract positions count: literal data (`example`, `examples`, `default`,
//! `enum`, `const`) and `x-` extensions may hold objects with a `$ref` member that is no
//! reference (GitHub's SCIM examples do).

use super::NormalizeError;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use url::Url;

/// Most external documents one bundle may hold.
pub const MAX_EXTERNAL_DOCUMENTS: usize = 32;
/// Most documents a chain of external `$ref`s may cross, counted from the root (its direct
/// references are at depth 1).
pub const MAX_EXTERNAL_DEPTH: usize = 8;

/// One external document referenced by a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalRef {
    /// The first `$ref` naming the document, as written.
    pub reference: String,
    /// The document's absolute URI, without fragment.
    pub document: Url,
}

/// Keys whose values are literal data, not schemas or OpenAPI objects.
const LITERAL_KEYS: [&str; 5] = ["example", "examples", "default", "enum", "const"];
/// Keys whose object values map names (not keywords) to schemas or OpenAPI objects.
const NAME_MAPS: [&str; 14] = [
    "properties",
    "patternProperties",
    "definitions",
    "$defs",
    "dependentSchemas",
    "schemas",
    "parameters",
    "responses",
    "requestBodies",
    "headers",
    "pathItems",
    "callbacks",
    "content",
    "webhooks",
];

fn skipped(key: &str, in_name_map: bool) -> bool {
    !in_name_map && (LITERAL_KEYS.contains(&key) || key.starts_with("x-"))
}

/// Calls `f` on every `$ref` string in a contract position.
fn visit_refs(value: &Value, in_name_map: bool, f: &mut dyn FnMut(&str)) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                f(r);
            }
            for (key, v) in map {
                if !skipped(key, in_name_map) {
                    visit_refs(v, !in_name_map && NAME_MAPS.contains(&key.as_str()), f);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| visit_refs(v, false, f)),
        _ => {}
    }
}

/// Mutable twin of [`visit_refs`].
fn visit_refs_mut(
    value: &mut Value,
    in_name_map: bool,
    f: &mut dyn FnMut(&mut String) -> Result<(), NormalizeError>,
) -> Result<(), NormalizeError> {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref") {
                f(r)?;
            }
            for (key, v) in map.iter_mut() {
                if !skipped(key, in_name_map) {
                    visit_refs_mut(v, !in_name_map && NAME_MAPS.contains(&key.as_str()), f)?;
                }
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter_mut()
            .try_for_each(|v| visit_refs_mut(v, false, f)),
        _ => Ok(()),
    }
}

/// `other.yaml#/a/b` → (`other.yaml`, `/a/b`); no `#` → (whole, ``).
fn split_reference(reference: &str) -> (&str, &str) {
    reference.split_once('#').unwrap_or((reference, ""))
}

fn bad_reference(reference: &str, problem: impl std::fmt::Display) -> NormalizeError {
    NormalizeError::Invalid {
        at: format!("$ref {reference:?}"),
        problem: format!("not a usable URI reference ({problem})"),
    }
}

/// The document (absolute, without fragment) that `doc_part` of a `$ref` written in the
/// document at `base` names.
fn target_document(base: &Url, reference: &str, doc_part: &str) -> Result<Url, NormalizeError> {
    let mut target = base
        .join(doc_part)
        .map_err(|e| bad_reference(reference, e))?;
    target.set_fragment(None);
    Ok(target)
}

/// Parses an absolute document URI and drops its fragment.
pub fn document_uri(uri: &str) -> Result<Url, NormalizeError> {
    let mut url = Url::parse(uri).map_err(|e| NormalizeError::Invalid {
        at: "bundle".into(),
        problem: format!("document URI is not absolute ({e})"),
    })?;
    url.set_fragment(None);
    Ok(url)
}

/// The external documents `document`, located at `uri`, references: each once, in first-seen
/// order. References back to `uri` itself are not external.
pub fn external_documents(uri: &Url, document: &Value) -> Result<Vec<ExternalRef>, NormalizeError> {
    let mut base = uri.clone();
    base.set_fragment(None);
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let mut failure = None;
    visit_refs(document, false, &mut |reference| {
        let (doc_part, _) = split_reference(reference);
        if doc_part.is_empty() || failure.is_some() {
            return;
        }
        match target_document(&base, reference, doc_part) {
            Ok(target) => {
                if target != base && seen.insert(target.clone()) {
                    out.push(ExternalRef {
                        reference: reference.to_string(),
                        document: target,
                    });
                }
            }
            Err(e) => failure = Some(e),
        }
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// The key of a document relative to the root: empty for the root itself, else the shortest
/// relative reference (`schemas/pet.yaml`, `../common/types.yaml`), or the absolute URI when
/// no relative one exists (another origin).
fn document_key(root: &Url, document: &Url) -> String {
    if document == root {
        return String::new();
    }
    match root.make_relative(document) {
        Some(relative) if !relative.is_empty() && !relative.starts_with('#') => relative,
        _ => document.to_string(),
    }
}

/// Rewrites every `$ref` in `document` (located at `at`) to its root-relative key.
/// In the root, local references (`#/...`) are left exactly as written.
fn rewrite_refs(root: &Url, at: &Url, document: &mut Value) -> Result<(), NormalizeError> {
    let is_root = at == root;
    visit_refs_mut(document, false, &mut |reference| {
        let (doc_part, fragment) = split_reference(reference);
        if doc_part.is_empty() && is_root {
            return Ok(());
        }
        let target = if doc_part.is_empty() {
            at.clone()
        } else {
            target_document(at, reference, doc_part)?
        };
        let key = format!("{}#{fragment}", document_key(root, &target));
        *reference = key;
        Ok(())
    })
}

/// Rewrites the `$ref`s of the root (at `root_uri`) and of `externals` (absolute URI →
/// document) to root-relative keys, and returns the externals keyed by their relative
/// document key (the part of a rewritten `$ref` before `#`).
pub fn rewrite_bundle(
    root_uri: &str,
    root: &mut Value,
    externals: BTreeMap<String, Value>,
) -> Result<BTreeMap<String, Value>, NormalizeError> {
    let root_url = document_uri(root_uri)?;
    rewrite_refs(&root_url, &root_url, root)?;
    let mut documents = BTreeMap::new();
    for (uri, mut document) in externals {
        let url = document_uri(&uri)?;
        let key = document_key(&root_url, &url);
        if key.is_empty() {
            // The root itself, fetched again under its own name: the root wins.
            continue;
        }
        rewrite_refs(&root_url, &url, &mut document)?;
        documents.insert(key, document);
    }
    Ok(documents)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lists_external_documents_once_and_skips_literals() {
        let root = Url::parse("http://h:1/api/openapi.yaml").unwrap();
        let doc = json!({
            "a": {"$ref": "schemas/pet.yaml#/Pet"},
            "b": {"$ref": "./schemas/pet.yaml#/Tag"},
            "c": {"$ref": "#/components/schemas/X"},
            "d": {"$ref": "openapi.yaml#/components/schemas/Y"},
            "e": {"$ref": "../common.yaml"},
            "example": {"$ref": "https://elsewhere.example/x"},
            "x-thing": {"$ref": "https://elsewhere.example/y"},
            "properties": {"example": {"$ref": "props.yaml#/P"}},
        });
        let refs = external_documents(&root, &doc).unwrap();
        let docs: Vec<&str> = refs.iter().map(|r| r.document.as_str()).collect();
        assert_eq!(
            docs,
            vec![
                "http://h:1/api/schemas/pet.yaml",
                "http://h:1/common.yaml",
                "http://h:1/api/props.yaml"
            ]
        );
    }

    #[test]
    fn keys_are_relative_to_the_root() {
        for host in [
            "http://a:1/v1/",
            "http://b:2/other/place/",
            "file:///tmp/x/",
        ] {
            let root_uri = format!("{host}openapi.yaml");
            let mut root =
                json!({"s": {"$ref": "./schemas/../schemas/pet.yaml#/Pet"}, "l": {"$ref": "#/x"}});
            let mut externals = BTreeMap::new();
            externals.insert(
                format!("{host}schemas/pet.yaml"),
                json!({"Pet": {"properties": {"t": {"$ref": "#/Tag"}, "r": {"$ref": "../openapi.yaml#/components/schemas/R"}}}, "Tag": {}}),
            );
            let docs = rewrite_bundle(&root_uri, &mut root, externals).unwrap();
            assert_eq!(root["s"]["$ref"], "schemas/pet.yaml#/Pet");
            assert_eq!(root["l"]["$ref"], "#/x");
            let pet = &docs["schemas/pet.yaml"]["Pet"]["properties"];
            assert_eq!(pet["t"]["$ref"], "schemas/pet.yaml#/Tag");
            assert_eq!(pet["r"]["$ref"], "#/components/schemas/R");
        }
    }
}
