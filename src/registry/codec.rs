//! How large registry values are stored: gzip-compressed JSON (snapshots, review candidates
//! and reports) and compressed source documents, written by streaming (no intermediate
//! string the size of the document) and read back with a bound on the inflated size.

use super::{RegistryError, Result};
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::io::{BufReader, BufWriter, Read, Write};

/// What one stored value may inflate to when no configuration says (a registry opened on
/// its own, `inspect`): far above any document under the default fetch cap.
const MAX_INFLATED: u64 = 2 << 30;

/// The bound in force: [`MAX_INFLATED`] until the process's configuration sets one
/// ([`set_inflate_limit`]). Process-wide because the configuration is: every registry a
/// command opens holds what that configuration's watches fetched.
static INFLATE_LIMIT: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(MAX_INFLATED);

/// Bounds what any stored value may inflate to (docs/reliability.md H38: a tampered row was
/// inflated up to 2 GiB before it failed closed). The binary sets it from the configuration
/// (`Config::inflate_limit`: a multiple of the largest `max_bytes`), before any registry read.
pub fn set_inflate_limit(bytes: u64) {
    INFLATE_LIMIT.store(
        bytes.clamp(1, MAX_INFLATED),
        std::sync::atomic::Ordering::Relaxed,
    );
}

fn inflate_limit() -> u64 {
    INFLATE_LIMIT.load(std::sync::atomic::Ordering::Relaxed)
}

/// The domain tag of a source document's digest (`sha256:` over `domain NUL bytes`).
pub const SOURCE_DOMAIN: &str = "schemawatch.source-document.v1";

/// `value` as JSON, gzip-compressed, serialized straight into the encoder. serde_json's maps
/// are sorted (no `preserve_order`), so the same value always gives the same bytes.
pub fn gz_json<T: Serialize>(value: &T) -> Vec<u8> {
    // Buffered: the serializer writes token by token, the encoder wants large blocks.
    let mut writer = BufWriter::with_capacity(
        64 * 1024,
        GzEncoder::new(Vec::new(), Compression::default()),
    );
    // Writing into a Vec cannot fail, and serializing a model type has no failing case; an
    // empty blob would read back as a bad row (fail closed), never as a wrong contract.
    if serde_json::to_writer(&mut writer, value).is_err() {
        return Vec::new();
    }
    match writer.into_inner() {
        Ok(encoder) => encoder.finish().unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

/// A compressed JSON value deserialized straight from the decoder (no inflated copy of the
/// document in memory), bounded like [`gunzip`].
pub fn gunzip_json<T: serde::de::DeserializeOwned>(
    table: &'static str,
    key: &str,
    blob: &[u8],
    what: &str,
) -> Result<T> {
    let reader = BufReader::with_capacity(
        64 * 1024,
        flate2::read::GzDecoder::new(blob).take(inflate_limit()),
    );
    serde_json::from_reader(reader).map_err(|e| RegistryError::BadRow {
        table,
        key: key.to_string(),
        problem: format!(
            "not a valid {what} within the inflation bound of {} bytes: {e}",
            inflate_limit()
        ),
    })
}

/// `bytes` gzip-compressed.
pub fn gz_bytes(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(bytes.len() / 4), Compression::default());
    if encoder.write_all(bytes).is_err() {
        return Vec::new();
    }
    encoder.finish().unwrap_or_default()
}

/// Inflates a stored blob of `table`/`key`; a blob that is not gzip or inflates past the
/// bound is a bad row.
pub fn gunzip(table: &'static str, key: &str, blob: &[u8]) -> Result<Vec<u8>> {
    let bad = |problem: String| RegistryError::BadRow {
        table,
        key: key.to_string(),
        problem,
    };
    let limit = inflate_limit();
    let capacity = usize::try_from(limit).unwrap_or(usize::MAX);
    let mut out = Vec::with_capacity(blob.len().saturating_mul(4).min(capacity));
    flate2::read::GzDecoder::new(blob)
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(|e| bad(format!("compressed value does not inflate: {e}")))?;
    if out.len() as u64 > limit {
        return Err(bad(format!(
            "compressed value inflates past the bound of {limit} bytes (8 times the largest max_bytes)"
        )));
    }
    Ok(out)
}

/// The digest of a source document: its bytes as read (a document that changes in any byte is
/// another document; the comparison only ever decides "the same document, re-read").
pub fn source_digest(bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(SOURCE_DOMAIN.as_bytes());
    hasher.update([0u8]);
    hasher.update(bytes);
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256:");
    for b in hasher.finalize().iter() {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_json_round_trips_and_is_byte_stable() {
        let value = serde_json::json!({"b": [1, 2.50, "x"], "a": {"z": null}});
        let one = gz_json(&value);
        assert_eq!(one, gz_json(&value));
        let back: serde_json::Value =
            serde_json::from_slice(&gunzip("t", "k", &one).unwrap()).unwrap();
        assert_eq!(back, value);
    }

    #[test]
    fn a_blob_that_is_not_gzip_is_a_bad_row() {
        let err = gunzip("tools", "a.b", b"{\"plain\": true}").unwrap_err();
        assert!(err.to_string().contains("tools/a.b"), "{err}");
    }

    #[test]
    fn source_digest_is_domain_tagged_sha256() {
        let d = source_digest(b"abc");
        assert!(d.starts_with("sha256:") && d.len() == 71, "{d}");
        assert_ne!(d, source_digest(b"abd"));
    }
}
