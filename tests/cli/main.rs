//! The command line end to end: the real `schemawatch` binary against real HTTP servers on
//! 127.0.0.1 and real SQLite registries (check, pending, review artifacts, external `$ref`s),
//! the fetch layer against misbehaving servers, every form of the source grammar (`-`, URLs,
//! `git:`, `cmd:`), and the shipped example config.

#[path = "../common/mod.rs"]
mod common;

mod against;
mod artifacts;
mod ci_gate;
mod completions;
mod databases;
mod diff_policy;
mod e2e;
mod example_config;
mod external_refs;
mod fetch;
mod gateway;
mod hardening;
mod hardening29;
mod hidden_text;
mod local_files;
mod registry_copy;
mod registry_url;
mod scope;
mod sources;
mod storage;
mod sunset;
mod upgrade;
mod watch_files;
