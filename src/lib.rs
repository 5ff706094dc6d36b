//! schemawatch: a trusted, versioned registry of API and tool contracts, with drift detection.
//!
//! `core` is pure (no I/O): model, canonical JSON, fingerprints, normalizers, drift rules.
//! Everything else is an edge, and dependencies point one way (ARCHITECTURE.md):
//!
//! - `process` (spawned children, orphans, process groups), `fetch` (HTTP, files, git,
//!   standard input; bounds, validators, secrets) and `mcp` (the MCP client over stdio and
//!   Streamable HTTP, on `fetch`'s HTTP plumbing and `process`);
//! - `sources`: which fetch a kind needs, and the command-line source grammar;
//! - `config` (the TOML file), `registry` (SQLite: snapshots, history, reviews, CAS);
//! - `refresh` (one watch's cycle: a pure `decide` and its shell), `artifacts` (catalog,
//!   pins, triage, provenance), `ci` (accept files, the gate, SARIF / JUnit / GitHub /
//!   GitLab), `views` (the JSON shapes the CLI and the API share), `metrics`, `gateway`
//!   (`schemawatch mcp-gateway`: the agent-facing MCP server that enforces the accepted contract);
//! - `daemon` (scheduler, signals, reload, systemd) and `api` (the HTTP API);
//! - the command line is the binary's `cli/` module, a file per subcommand.

#![forbid(unsafe_code)]
// No unwrap/expect/panic outside tests: a failure is a typed error (ARCHITECTURE.md, "Invariants").
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

pub mod api;
pub mod artifacts;
pub mod ci;
pub mod config;
pub mod core;
pub mod daemon;
pub mod fetch;
pub mod gateway;
pub mod mcp;
pub mod metrics;
pub mod notify;
pub mod process;
pub mod refresh;
pub mod registry;
pub mod sources;
pub mod state;
pub mod ui;
pub mod views;

// Dependency direction and the pure core, checked over the source (ARCHITECTURE.md).
#[cfg(test)]
mod tidy;
