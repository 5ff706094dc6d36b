//! schemawatch: a trusted, versioned registry of API and tool contracts, with drift detection.
//!
//! `core` is pure (no I/O): model, canonical JSON, fingerprints, normalizers, drift rules.
//! Everything else is an edge: `fetch` (network and files), `registry` (SQLite),
//! `refresh` (one watch's cycle), `daemon` (the scheduler), `config`,
//! and the CLI in `main.rs`.

pub mod artifacts;
pub mod config;
pub mod core;
pub mod daemon;
pub mod fetch;
pub mod refresh;
pub mod registry;
