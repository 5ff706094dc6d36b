//! schemawatch: a trusted, versioned registry of API and tool contracts, with drift detection.
//!
//! `core` is pure (no I/O): model, canonical JSON, fingerprints, normalizers, drift rules.
//! Everything else is an edge: `sources` (which fetch a kind needs, and the command-line source
//! grammar), `fetch` (network, files, git) and `mcp` (MCP client), `registry` (SQLite),
//! `refresh` (one watch's cycle), `daemon` (the scheduler), `config`, `process` (children,
//! orphans, process groups),
//! and the CLI in `main.rs`.

pub mod api;
pub mod artifacts;
pub mod config;
pub mod core;
pub mod daemon;
pub mod fetch;
pub mod mcp;
pub mod metrics;
pub mod process;
pub mod refresh;
pub mod registry;
pub mod sources;
pub mod views;
