//! OPTIMADE's multi-resource fetch: `<base>/info`, then `<base>/info/<entry type>` for every
//! entry type it lists, combined into the one document `core::normalize::optimade` reads:
//! `{"info": <body>, "entry_info": {"<type>": <body>, ...}}`.
//!
//! No single response proves the whole contract unchanged, so there are no validators: every
//! cycle is a full fetch (docs/design.md "Fetching"). Bounds: one total deadline over all requests,
//! the body cap over the sum of all bodies, at most `MAX_ENTRY_TYPES` entry types, and each
//! body must be strict JSON (checked before it is spliced into the combined document).
//! Any other source (a file, standard input, a git blob) is read as an already combined document.

use super::{FetchError, FetchOutcome, FetchRequest, Source, Validators};
use crate::core::json::parse_json;
use crate::core::normalize::optimade::listed_entry_types;

/// Fetches the OPTIMADE info documents of `request.source` (the service's base URL).
pub async fn fetch(request: &FetchRequest) -> Result<FetchOutcome, FetchError> {
    let base = match &request.source {
        Source::Path(_) | Source::Stdin | Source::Git(_) => return super::fetch(request).await,
        Source::Url(url) => url.clone(),
    };
    let work = fetch_all(request, base);
    match tokio::time::timeout(request.timeout, work).await {
        Ok(result) => result,
        Err(_elapsed) => Err(FetchError::Timeout),
    }
}

async fn fetch_all(request: &FetchRequest, mut base: url::Url) -> Result<FetchOutcome, FetchError> {
    if !base.path().ends_with('/') {
        let path = format!("{}/", base.path());
        base.set_path(&path);
    }
    base.set_query(None);
    base.set_fragment(None);
    let mut budget = request.max_bytes;
    let info_text = fetch_json(request, &base, "info", &mut budget).await?;
    let info = parse_json(&info_text).map_err(|e| FetchError::Decode {
        detail: format!("/info is not valid JSON: {e}"),
    })?;
    let entry_types = listed_entry_types(&info).map_err(|e| FetchError::Decode {
        detail: format!("/info: {e}"),
    })?;
    let mut combined = String::with_capacity(info_text.len() + 64);
    combined.push_str("{\"info\":");
    combined.push_str(&info_text);
    combined.push_str(",\"entry_info\":{");
    for (i, entry_type) in entry_types.iter().enumerate() {
        // Entry type names are [a-z0-9_]+ (checked by listed_entry_types): safe as a path
        // segment and as a JSON key without escaping.
        let text = fetch_json(request, &base, &format!("info/{entry_type}"), &mut budget).await?;
        if i > 0 {
            combined.push(',');
        }
        combined.push('"');
        combined.push_str(entry_type);
        combined.push_str("\":");
        combined.push_str(&text);
    }
    combined.push_str("}}");
    Ok(FetchOutcome::Body {
        bytes: combined.into_bytes(),
        validators: Validators::default(),
        final_url: None,
    })
}

/// One unconditional GET of `base/relative`, counted against the shared byte budget, checked
/// to be one strict JSON document.
async fn fetch_json(
    request: &FetchRequest,
    base: &url::Url,
    relative: &str,
    budget: &mut u64,
) -> Result<String, FetchError> {
    let url = base.join(relative).map_err(|e| FetchError::BadUrl {
        reason: format!("cannot join {relative:?} to the base URL: {e}"),
    })?;
    let mut sub = request.clone();
    sub.source = Source::Url(url);
    sub.validators = None;
    sub.max_bytes = *budget;
    let bytes = match super::fetch(&sub).await {
        Ok(FetchOutcome::Body { bytes, .. }) => bytes,
        Ok(FetchOutcome::NotModified) => return Err(FetchError::UnexpectedNotModified),
        // The cap covers all info documents together; report the configured limit.
        Err(FetchError::TooLarge { .. }) => {
            return Err(FetchError::TooLarge {
                limit: request.max_bytes,
            })
        }
        Err(e) => return Err(e),
    };
    *budget = budget.saturating_sub(bytes.len() as u64);
    let bytes = bytes
        .strip_prefix(b"\xEF\xBB\xBF")
        .unwrap_or(&bytes)
        .to_vec();
    let text = String::from_utf8(bytes).map_err(|_| FetchError::Decode {
        detail: format!("/{relative} is not UTF-8"),
    })?;
    parse_json(&text).map_err(|e| FetchError::Decode {
        detail: format!("/{relative} is not valid JSON: {e}"),
    })?;
    Ok(text)
}
