#![no_main]
//! Strict YAML parsing (aliases budgeted, duplicates rejected): never panics or hangs, and
//! what it accepts canonicalizes to a fixed point.
use libfuzzer_sys::fuzz_target;
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(value) = schemawatch::core::json::parse_yaml(text) {
            common::check_canonical_fixed_point(&value);
        }
    }
});
