#![no_main]
//! `core::normalize::mcp` on arbitrary bytes: never panics; an accepted document yields a
//! deterministic fingerprint and diffs as identical against itself.
use libfuzzer_sys::fuzz_target;
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(spec) = schemawatch::core::normalize::mcp::normalize("fuzz.target", data) {
        common::check_spec(&spec);
    }
});
