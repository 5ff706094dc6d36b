//! OpenAPI external `$ref`s: after the root document is fetched, the documents its `$ref`s
//! reach are fetched too (recursively), then the bundle is normalized by the pure
//! `core::normalize::openapi::normalize_bundle`.
//!
//! Policy (`external_refs` per watch): `same-origin` (default) fetches only documents on the
//! root's origin (scheme, host and port) — or, for a local file, in the root file's folder or
//! below; `none` refuses any external `$ref`. Bounds: at most [`MAX_EXTERNAL_DOCUMENTS`]
//! documents, a chain at most [`MAX_EXTERNAL_DEPTH`] documents deep, the watch's body cap over
//! the sum of all documents, and one deadline (the watch's timeout) over everything.
//! Every external document goes through the ordinary bounded [`super::fetch`], with the same
//! headers (sent only to the configured origin, which external documents share).
//!
//! A document with external refs has no validator shortcut: the root's 304 cannot prove the
//! referenced documents unchanged (docs/design.md "Fetching"), so callers fetch it in full.

use super::{FetchError, FetchOutcome, FetchRequest, Source};
use crate::core::json::{parse_document, parse_json_deferring, DEFER_FROM_BYTES};
use crate::core::model::ToolSpec;
use crate::core::normalize::openapi::{self, normalize_bundle, normalize_owned};
use crate::core::normalize::openapi_refs::{external_documents, ExternalRef};
pub use crate::core::normalize::openapi_refs::{MAX_EXTERNAL_DEPTH, MAX_EXTERNAL_DOCUMENTS};
use crate::core::normalize::NormalizeError;
use crate::core::normalize::SharedEndpoints;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::Instant;
use url::Url;

/// What an OpenAPI watch does with external `$ref`s (`external_refs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExternalRefs {
    /// Fetch referenced documents on the root's origin (for a file: its folder and below).
    #[default]
    SameOrigin,
    /// Refuse any external `$ref` (an error outcome).
    None,
}

impl ExternalRefs {
    pub fn parse(text: &str) -> Option<ExternalRefs> {
        match text {
            "same-origin" => Some(ExternalRefs::SameOrigin),
            "none" => Some(ExternalRefs::None),
            _ => None,
        }
    }
}

/// Why an OpenAPI document and its external documents could not be turned into a contract.
/// Messages name `$ref`s as written in the documents, never a fetched URL.
#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error(transparent)]
    Normalize(#[from] NormalizeError),
    #[error("external $ref {reference:?} refused by external_refs = \"none\"")]
    Refused { reference: String },
    #[error("external $ref {reference:?} is on another origin than the document (external_refs = \"same-origin\" fetches only the document's scheme, host and port)")]
    CrossOrigin { reference: String },
    #[error("external $ref {reference:?} leaves the root document's folder (external_refs = \"same-origin\" reads only that folder and below)")]
    OutsideFolder { reference: String },
    #[error("external $ref {reference:?}: more than {MAX_EXTERNAL_DOCUMENTS} external documents")]
    TooManyDocuments { reference: String },
    #[error("external $ref {reference:?}: external documents nested more than {MAX_EXTERNAL_DEPTH} deep")]
    TooDeep { reference: String },
    #[error("the document and its external documents are larger than the limit of {limit} bytes")]
    TooLarge { limit: u64 },
    #[error("external $ref {reference:?}: {source}")]
    Fetch {
        reference: String,
        source: FetchError,
    },
    #[error("external $ref {reference:?}: invalid document: {source}")]
    Parse {
        reference: String,
        source: NormalizeError,
    },
    #[error(
        "fetch of the document and its external documents did not finish within its total deadline"
    )]
    Timeout,
    #[error("cannot locate the root document: {reason}")]
    Root { reason: String },
}

impl BundleError {
    /// The underlying fetch failure, if that is what happened.
    pub fn fetch_error(&self) -> Option<&FetchError> {
        match self {
            BundleError::Fetch { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// A normalized OpenAPI document with its external documents resolved.
#[derive(Debug)]
pub struct Resolved {
    pub spec: ToolSpec,
    /// The document has external `$ref`s: no validator of the root covers the contract.
    pub has_external_refs: bool,
    /// Body bytes of the external documents fetched.
    pub external_bytes: u64,
}

/// The absolute URI the root document's relative `$ref`s resolve against: the URL after
/// redirects when it stayed on the configured origin, else the configured URL; for a file,
/// its absolute path as a `file:` URL; for standard input, a file in the working directory; for
/// a git blob, its path from the top of the work tree as a `file:` URL (every document it
/// reaches is then read at the same revision, see [`external_source`]).
async fn root_uri(request: &FetchRequest, final_url: Option<&str>) -> Result<Url, BundleError> {
    let file_url = |path: &std::path::Path| {
        let absolute = std::path::absolute(path).map_err(|e| BundleError::Root {
            reason: e.to_string(),
        })?;
        Url::from_file_path(&absolute).map_err(|()| BundleError::Root {
            reason: "the path cannot be written as a file: URL".into(),
        })
    };
    let mut uri = match &request.source {
        Source::Url(configured) => final_url
            .and_then(|u| Url::parse(u).ok())
            .filter(|u| u.origin() == configured.origin())
            .map(|mut u| {
                // `final_url` lost the userinfo; keep the configured one.
                let _ = u.set_username(configured.username());
                let _ = u.set_password(configured.password());
                u
            })
            .unwrap_or_else(|| configured.clone()),
        Source::Path(path) => file_url(path)?,
        Source::Stdin => file_url(std::path::Path::new("-"))?,
        Source::Git(blob) => {
            let path = blob.tree_path().await.map_err(|e| BundleError::Root {
                reason: e.to_string(),
            })?;
            file_url(&path)?
        }
    };
    uri.set_fragment(None);
    Ok(uri)
}

/// Where an external document is read from: a `file:` document of a git root is the same path
/// at the same revision; any other `file:` document is a local file.
fn external_source(root: &Source, found: &ExternalRef) -> Result<Source, BundleError> {
    if found.document.scheme() != "file" {
        return Ok(Source::Url(found.document.clone()));
    }
    let path = found
        .document
        .to_file_path()
        .map_err(|()| BundleError::Fetch {
            reference: found.reference.clone(),
            source: FetchError::BadUrl {
                reason: "not a local file path".into(),
            },
        })?;
    Ok(match root {
        Source::Git(blob) => Source::Git(blob.sibling(&path.to_string_lossy())),
        Source::Url(_) | Source::Path(_) | Source::Stdin => Source::Path(path),
    })
}

/// Whether an external document may be fetched for a root at `root`.
fn check_scope(root: &Url, found: &ExternalRef) -> Result<(), BundleError> {
    let reference = found.reference.clone();
    match root.scheme() {
        "file" => {
            let folder = root.join("./").map_err(|e| BundleError::Root {
                reason: e.to_string(),
            })?;
            if found.document.scheme() != "file" {
                return Err(BundleError::CrossOrigin { reference });
            }
            if !found.document.as_str().starts_with(folder.as_str()) {
                return Err(BundleError::OutsideFolder { reference });
            }
            Ok(())
        }
        _ if found.document.origin() == root.origin() => Ok(()),
        _ => Err(BundleError::CrossOrigin { reference }),
    }
}

/// The folder limit on the real paths: a symlink below the root's folder (`sub/link -> ..`)
/// must not reach outside it. `path` is the external document's local path; a path that
/// cannot be resolved (missing) is left to the fetch, which fails on it.
async fn check_canonical_folder(
    root: &Url,
    path: &std::path::Path,
    found: &ExternalRef,
) -> Result<(), BundleError> {
    let Ok(root_file) = root.to_file_path() else {
        return Ok(());
    };
    let Some(folder) = root_file.parent() else {
        return Ok(());
    };
    let Ok(folder) = tokio::fs::canonicalize(folder).await else {
        return Ok(());
    };
    match tokio::fs::canonicalize(path).await {
        Ok(real) if real.starts_with(&folder) => Ok(()),
        Ok(_) => Err(BundleError::OutsideFolder {
            reference: found.reference.clone(),
        }),
        Err(_) => Ok(()),
    }
}

/// Parses `bytes` (the root document fetched by `request`; `final_url` is where it came from
/// after redirects) and normalizes it, fetching the documents its external `$ref`s reach under
/// `policy`. `started` is when the root fetch began: the watch's timeout covers everything.
/// `shared`: another reading of the watch whose equal endpoints this one shares.
pub async fn normalize_document(
    watch: &str,
    request: &FetchRequest,
    final_url: Option<&str>,
    bytes: &[u8],
    policy: ExternalRefs,
    started: Instant,
    shared: SharedEndpoints<'_>,
) -> Result<Resolved, BundleError> {
    // A JSON document whose every `$ref` is local has nothing to fetch: normalized without
    // holding its `paths` as one tree (same result; see `normalize_streaming`).
    if let Some(deferred) = (bytes.len() >= DEFER_FROM_BYTES)
        .then(|| openapi::streamable_text(bytes))
        .flatten()
        .filter(|text| only_local_refs(text))
        .and_then(|text| parse_json_deferring(text, "paths").ok())
    {
        root_uri(request, final_url).await?;
        if let Some(spec) = openapi::normalize_deferred(watch, deferred, shared) {
            return Ok(Resolved {
                spec,
                has_external_refs: false,
                external_bytes: 0,
            });
        }
    }
    let root = parse_document(bytes).map_err(NormalizeError::from)?;
    let root_uri = root_uri(request, final_url).await?;
    let direct = external_documents(&root_uri, &root)?;
    let Some(first) = direct.first() else {
        let mut spec = normalize_owned(watch, root)?;
        shared.share_all(&mut spec);
        return Ok(Resolved {
            spec,
            has_external_refs: false,
            external_bytes: 0,
        });
    };
    if policy == ExternalRefs::None {
        return Err(BundleError::Refused {
            reference: first.reference.clone(),
        });
    }
    let remaining = request.timeout.saturating_sub(started.elapsed());
    let work = fetch_externals(request, &root_uri, direct, bytes.len() as u64);
    let (externals, external_bytes) = match tokio::time::timeout(remaining, work).await {
        Ok(result) => result?,
        Err(_elapsed) => return Err(BundleError::Timeout),
    };
    let mut spec = normalize_bundle(watch, root_uri.as_str(), root, externals)?;
    shared.share_all(&mut spec);
    Ok(Resolved {
        spec,
        has_external_refs: true,
        external_bytes,
    })
}

/// Whether every `"$ref"` in a JSON text (without `\\u` escapes) is followed by a string
/// starting with `#`: a local reference, nothing to fetch. A `"$ref"` string in any other place
/// (a property named `$ref`, an enum value) answers `false`, which only costs the full path.
fn only_local_refs(text: &str) -> bool {
    text.match_indices("\"$ref\"").all(|(i, m)| {
        let rest = text[i + m.len()..].trim_start_matches([' ', '\t', '\n', '\r']);
        rest.strip_prefix(':')
            .map(|r| r.trim_start_matches([' ', '\t', '\n', '\r']))
            .is_some_and(|r| r.starts_with("\"#"))
    })
}

/// Breadth-first fetch of every document reachable from `direct` (the root's references).
async fn fetch_externals(
    request: &FetchRequest,
    root_uri: &Url,
    direct: Vec<ExternalRef>,
    root_bytes: u64,
) -> Result<(BTreeMap<String, serde_json::Value>, u64), BundleError> {
    let mut seen: BTreeSet<Url> = BTreeSet::from([root_uri.clone()]);
    let mut queue: VecDeque<(ExternalRef, usize)> = direct.into_iter().map(|r| (r, 1)).collect();
    let mut documents = BTreeMap::new();
    let mut used = root_bytes;
    while let Some((found, depth)) = queue.pop_front() {
        if seen.contains(&found.document) {
            continue;
        }
        check_scope(root_uri, &found)?;
        if depth > MAX_EXTERNAL_DEPTH {
            return Err(BundleError::TooDeep {
                reference: found.reference,
            });
        }
        if documents.len() >= MAX_EXTERNAL_DOCUMENTS {
            return Err(BundleError::TooManyDocuments {
                reference: found.reference,
            });
        }
        seen.insert(found.document.clone());
        let source = external_source(&request.source, &found)?;
        if let Source::Path(path) = &source {
            if matches!(request.source, Source::Path(_) | Source::Stdin) {
                check_canonical_folder(root_uri, path, &found).await?;
            }
        }
        let sub = FetchRequest {
            source,
            max_bytes: request.max_bytes.saturating_sub(used),
            validators: None,
            same_origin_redirects: true,
            ..request.clone()
        };
        let bytes = match super::fetch(&sub).await {
            Ok(FetchOutcome::Body { bytes, .. }) => bytes,
            Ok(FetchOutcome::NotModified) => {
                return Err(BundleError::Fetch {
                    reference: found.reference,
                    source: FetchError::UnexpectedNotModified,
                })
            }
            Err(FetchError::TooLarge { .. }) => {
                return Err(BundleError::TooLarge {
                    limit: request.max_bytes,
                })
            }
            Err(source) => {
                return Err(BundleError::Fetch {
                    reference: found.reference,
                    source,
                })
            }
        };
        used = used.saturating_add(bytes.len() as u64);
        let document = parse_document(&bytes).map_err(|e| BundleError::Parse {
            reference: found.reference.clone(),
            source: e.into(),
        })?;
        drop(bytes);
        let children =
            external_documents(&found.document, &document).map_err(|e| BundleError::Parse {
                reference: found.reference.clone(),
                source: e,
            })?;
        queue.extend(children.into_iter().map(|r| (r, depth + 1)));
        documents.insert(found.document.to_string(), document);
    }
    Ok((documents, used.saturating_sub(root_bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(reference: &str, document: &str) -> ExternalRef {
        ExternalRef {
            reference: reference.into(),
            document: Url::parse(document).unwrap(),
        }
    }

    #[test]
    fn scope_is_origin_or_folder() {
        let http = Url::parse("http://127.0.0.1:8080/api/openapi.yaml").unwrap();
        assert!(check_scope(&http, &found("x", "http://127.0.0.1:8080/other/x.yaml")).is_ok());
        assert!(matches!(
            check_scope(&http, &found("x", "http://127.0.0.1:8081/api/x.yaml")),
            Err(BundleError::CrossOrigin { .. })
        ));
        assert!(matches!(
            check_scope(&http, &found("x", "file:///etc/passwd")),
            Err(BundleError::CrossOrigin { .. })
        ));
        let file = Url::parse("file:///srv/specs/openapi.yaml").unwrap();
        assert!(check_scope(&file, &found("x", "file:///srv/specs/schemas/x.yaml")).is_ok());
        assert!(matches!(
            check_scope(&file, &found("../x", "file:///srv/x.yaml")),
            Err(BundleError::OutsideFolder { .. })
        ));
        assert!(matches!(
            check_scope(&file, &found("x", "http://127.0.0.1/x.yaml")),
            Err(BundleError::CrossOrigin { .. })
        ));
    }
}
