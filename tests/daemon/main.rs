//! The daemon (`schemawatch run`) as a process: scheduling, signals, the HTTP API, metrics,
//! systemd notification and the unit file, container semantics, and the ignored scale tier.

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod container;
mod hardening;
mod limits;
mod notify;
mod operations;
mod paused;
mod review_age;
mod scale;
mod service;
mod sunset;
mod systemd;
mod ui;
