#![no_main]
//! Strict JSON parsing and RFC 8785 canonicalization: never panics, and the canonical form
//! is a fixed point (the P9 crasher `111111111111111111111111` is in the seed corpus).
use libfuzzer_sys::fuzz_target;
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = schemawatch::core::json::parse_document(data) {
        common::check_canonical_fixed_point(&value);
    }
});
