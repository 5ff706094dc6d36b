//! The streaming OpenAPI reading (`openapi::normalize_streaming`: `paths` parsed and normalized
//! one path item at a time, for memory) gives exactly the contract of the full reading for
//! every corpus document, and answers `None` (so the caller takes the full reading, with its
//! exact error) wherever it could differ.

use crate::common::corpus::{files_under, read};
use schemawatch::core::fingerprint::{digest, tool_fingerprint, SpecIndex, TOOL_DOMAIN};
use schemawatch::core::json::parse_document;
use schemawatch::core::normalize::openapi::{normalize, normalize_owned, normalize_streaming};

/// The full reading's contract (or error) beside the streaming one, for one JSON text.
fn compare(rel: &str, text: &str) -> bool {
    let full = normalize_owned("corpus.doc", parse_document(text.as_bytes()).unwrap());
    let streamed = normalize_streaming("corpus.doc", text.as_bytes());
    match (&full, &streamed) {
        (Ok(full), Some(streamed)) => {
            assert_eq!(
                serde_json::to_string(full).unwrap(),
                serde_json::to_string(streamed).unwrap(),
                "{rel}: the streamed contract differs"
            );
            assert_eq!(tool_fingerprint(full), tool_fingerprint(streamed), "{rel}");
            // The fingerprint hashed as it is written equals the digest of the projection.
            assert_eq!(
                tool_fingerprint(full),
                digest(TOOL_DOMAIN, &SpecIndex::new(full).tool_projection()),
                "{rel}"
            );
            true
        }
        (Err(_), Some(_)) => panic!("{rel}: streamed a contract where the full reading fails"),
        (_, None) => false,
    }
}

#[test]
fn streaming_reads_every_corpus_document_as_the_full_reading_does() {
    let mut streamed = 0;
    let mut documents = 0;
    for rel in files_under("openapi")
        .into_iter()
        .chain(files_under("oasdiff-fixtures/data"))
        .filter(|rel| rel.ends_with(".json") || rel.ends_with(".yaml"))
        // One version of each of the two biggest APIs is enough (debug builds are slow).
        .filter(|rel| {
            !rel.starts_with("openapi/github-rest/v2021")
                && !rel.starts_with("openapi/stripe/v2021-11")
                && !rel.starts_with("openapi/stripe/v2022")
        })
    {
        let bytes = read(&rel);
        let Ok(value) = parse_document(&bytes) else {
            continue;
        };
        documents += 1;
        // JSON documents as written, YAML ones re-written as JSON.
        let streams = if rel.ends_with(".json") {
            compare(&rel, std::str::from_utf8(&bytes).unwrap())
        } else {
            compare(&rel, &serde_json::to_string(&value).unwrap())
        };
        streamed += usize::from(streams);
    }
    // Most documents take the streaming reading (those with `$ref`s into `#/paths` or `\u`
    // escapes do not), so the comparison above is not vacuous.
    assert!(documents > 200, "{documents} documents");
    assert!(
        streamed * 10 > documents * 8,
        "{streamed} of {documents} streamed"
    );
    eprintln!("{streamed} of {documents} documents streamed");
}

#[test]
fn streaming_falls_back_wherever_the_result_could_differ() {
    let doc = |paths: &str| {
        format!(r##"{{"openapi":"3.0.3","info":{{"title":"t","version":"1"}},"paths":{paths}}}"##)
    };
    let op = r#"{"get":{"responses":{"200":{"description":"ok"}}}}"#;
    for (case, text, streams) in [
        ("plain", doc(&format!(r#"{{"/a":{op},"x-note":1}}"#)), true),
        (
            "a $ref into #/paths",
            doc(&format!(r##"{{"/a":{op},"/b":{{"$ref":"#/paths/~1a"}}}}"##)),
            false,
        ),
        (
            "a percent-encoded pointer",
            doc(&format!(
                r##"{{"/a":{op},"/b":{{"$ref":"#/pa%74hs/~1a"}}}}"##
            )),
            false,
        ),
        (
            "an escaped slash",
            doc(&format!(
                r##"{{"/a":{op},"/b":{{"$ref":"#\/paths/~1a"}}}}"##
            )),
            false,
        ),
        (
            "a \\u escape",
            doc(&format!(r#"{{"/\u0061":{op}}}"#)),
            false,
        ),
        ("YAML", "openapi: 3.0.3\npaths: {}\n".to_string(), false),
        ("no paths", r#"{"openapi":"3.0.3"}"#.to_string(), false),
    ] {
        let streamed = normalize_streaming("a.b", text.as_bytes());
        assert_eq!(streamed.is_some(), streams, "{case}");
        let full = normalize_owned("a.b", parse_document(text.as_bytes()).unwrap()).unwrap();
        assert_eq!(normalize("a.b", text.as_bytes()).unwrap(), full, "{case}");
    }
    // Errors are the full reading's, byte for byte: the first in key order, not document order.
    for (case, text) in [
        (
            "a duplicate path",
            doc(&format!(r#"{{"/a":{op},"/a":{op}}}"#)),
        ),
        ("a syntax error in a path item", doc(r#"{"/a":{"get":}}"#)),
        (
            "two endpoints with one identity",
            doc(&format!(r#"{{"/b/{{x}}":{op},"/a":{op},"/b/{{y}}":{op}}}"#)),
        ),
        (
            "two bad path items",
            doc(&format!(r#"{{"/z":1,"/a":{op},"/b":2}}"#)),
        ),
        ("paths not an object", doc("[]")),
    ] {
        let full = parse_document(text.as_bytes())
            .map_err(Into::into)
            .and_then(|root| normalize_owned("a.b", root))
            .unwrap_err();
        assert_eq!(
            normalize("a.b", text.as_bytes()).unwrap_err().to_string(),
            full.to_string(),
            "{case}"
        );
        assert!(
            normalize_streaming("a.b", text.as_bytes()).is_none(),
            "{case}"
        );
    }
}

#[test]
fn streaming_reads_mcp_tool_lists_as_the_full_reading_does() {
    use schemawatch::core::normalize::mcp;
    let mut streamed = 0;
    for rel in files_under("mcp")
        .into_iter()
        .filter(|r| r.ends_with(".json"))
    {
        let bytes = read(&rel);
        let Ok(value) = parse_document(&bytes) else {
            continue;
        };
        // As written, and with the list under a `result` wrapper (always the full reading).
        let wrapped = serde_json::json!({ "result": value }).to_string();
        for (text, may_stream) in [(String::from_utf8(bytes).unwrap(), true), (wrapped, false)] {
            let full =
                mcp::normalize_value("corpus.doc", &parse_document(text.as_bytes()).unwrap());
            let streaming = mcp::normalize_streaming("corpus.doc", text.as_bytes());
            assert!(may_stream || streaming.is_none(), "{rel}");
            match (&full, streaming) {
                (Ok(full), Some(s)) => {
                    assert_eq!(
                        serde_json::to_string(full).unwrap(),
                        serde_json::to_string(&s).unwrap(),
                        "{rel}"
                    );
                    streamed += 1;
                }
                (Err(_), Some(_)) => panic!("{rel}: streamed where the full reading fails"),
                (_, None) => {}
            }
            let again = mcp::normalize("corpus.doc", text.as_bytes());
            assert_eq!(
                again.map_err(|e| e.to_string()),
                full.map_err(|e| e.to_string()),
                "{rel}"
            );
        }
    }
    assert!(streamed >= 3, "{streamed} streamed");
    // Errors are the full reading's: the first bad tool in order.
    let text = r#"{"tools":[{"name":"a"},{"name":""},{"name":"a"}]}"#;
    assert!(mcp::normalize_streaming("a.b", text.as_bytes()).is_none());
    assert_eq!(
        mcp::normalize("a.b", text.as_bytes())
            .unwrap_err()
            .to_string(),
        mcp::normalize_value("a.b", &parse_document(text.as_bytes()).unwrap())
            .unwrap_err()
            .to_string()
    );
}
