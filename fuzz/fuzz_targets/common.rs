#![allow(dead_code)]
// Shared checks of every normalizer target: a normalized spec fingerprints deterministically,
// diffs as identical against itself, and its canonical JSON is a fixed point.
use schemawatch::core::diff::classify;
use schemawatch::core::fingerprint::tool_fingerprint;
use schemawatch::core::json::{parse_json, to_canonical_string};
use schemawatch::core::model::{Compatibility, ToolSpec};

pub fn check_spec(spec: &ToolSpec) {
    let a = tool_fingerprint(spec);
    let b = tool_fingerprint(&spec.clone());
    assert_eq!(a, b, "fingerprint is not deterministic");
    let report = classify(spec, spec, &Default::default());
    assert_eq!(
        report.compatibility,
        Compatibility::Identical,
        "a spec differs from itself"
    );
}

/// c(parse(c(x))) == c(x) for every document the strict parser accepts.
pub fn check_canonical_fixed_point(value: &serde_json::Value) {
    let once = to_canonical_string(value);
    let reparsed = parse_json(&once).expect("canonical JSON re-parses");
    let twice = to_canonical_string(&reparsed);
    assert_eq!(once, twice, "canonicalization is not idempotent");
}
