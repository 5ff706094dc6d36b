//! The floor of `schemawatch diff` (issue 35): a whole process that reads two JSON documents,
//! parses both with serde_json (the project's features) and hashes their bytes with SHA-256,
//! and nothing else. `scripts/diff-floor` times it against `schemawatch diff` on the same pair,
//! in turn, and prints the ratio.
//!
//!     cargo build --release -p schemawatch-benches --bin diff_floor
//!     target/release/diff_floor OLD.json NEW.json

use sha2::{Digest, Sha256};
use std::process::ExitCode;

fn main() -> ExitCode {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    if paths.len() != 2 {
        eprintln!("usage: diff_floor OLD.json NEW.json");
        return ExitCode::from(2);
    }
    let mut digests = Vec::new();
    for path in &paths {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(2);
            }
        };
        let value: serde_json::Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("{path}: {e}");
                return ExitCode::from(2);
            }
        };
        std::hint::black_box(&value);
        digests.push(Sha256::digest(&bytes));
    }
    for d in digests {
        let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
        println!("{hex}");
    }
    ExitCode::SUCCESS
}
