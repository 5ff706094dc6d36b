//! Issue 20's hostile-input probe against the daemon (`schemawatch run`): each test reproduces
//! one scenario of docs/reliability.md's H rows.

use crate::common;
use crate::service::*;

use common::*;
use std::time::{Duration, Instant};

/// H9: a 1 s watch of a server that refuses every connection backs off past its interval
/// (it used to retry at most once per interval: 3,019 requests in 8 s with `1ns`).
#[test]
fn h9_error_backoff_grows_past_the_interval() {
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{}/openapi.json", dead_port());
    sb.write_config(&config_text(&url_watch("acme.down", &url, "1s"), ""));
    let mut daemon = Daemon::start(&sb, None);
    daemon.wait_for_log("refresh_failed", |_| true);
    let first = Instant::now();
    std::thread::sleep(Duration::from_secs(7));
    let failures = daemon.count_events("refresh_failed");
    // With the backoff 0.5–1 s, 1–2 s, 2–4 s, 4–8 s after the first failure: at most 4 in 7 s
    // (one per second, 8 or more, without it).
    assert!(
        failures <= 4,
        "{failures} refreshes in {:?}:\n{}",
        first.elapsed(),
        daemon.log_text()
    );
    assert!(failures >= 2, "it retries: {}", daemon.log_text());
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());
}

/// H3: under `run`, a FIFO as a `${file:…}` secret leaves `/healthz` answering and SIGTERM
/// working (the FIFO used to wedge the runtime: `/healthz` timed out, SIGTERM was ignored).
#[test]
fn h3_a_fifo_secret_does_not_wedge_the_daemon() {
    let server = DocServer::start(Pets::v1().bytes());
    let sb = Sandbox::new();
    let status = std::process::Command::new("mkfifo")
        .arg(sb.path("token.fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    let watch = format!(
        "{}[watch.schema_headers]\nAuthorization = \"Bearer ${{file:token.fifo}}\"\n\n",
        url_watch("acme.fifo", &server.url(), "1s")
            .trim_end_matches('\n')
            .to_string()
            + "\n"
    );
    sb.write_config(&config_text(&watch, ""));
    let mut daemon = Daemon::start(&sb, None);
    let failed = daemon.wait_for_log("refresh_failed", |_| true);
    assert!(
        failed["error"]
            .as_str()
            .unwrap_or("")
            .contains("not a regular file"),
        "{failed}"
    );
    for _ in 0..3 {
        let (status, _) = daemon.get("/healthz");
        assert_eq!(status, 200);
        std::thread::sleep(Duration::from_millis(300));
    }
    let (status, took) = daemon.terminate(Duration::from_secs(10));
    assert!(status.success(), "{status}");
    assert!(took < Duration::from_secs(10));
    assert_eq!(server.counters().requests, 0);
}
