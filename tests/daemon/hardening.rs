//! Issue 20's hostile-input probe against the daemon (`schemawatch run`): each test reproduces
//! one scenario of docs/reliability.md's H rows.

use crate::common;
use crate::service::*;

use common::*;
use std::time::{Duration, Instant};

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

/// H2: 200 silent sockets under `ulimit -n 64` (they used to make `/healthz` time out and
/// every refresh fail with "Too many open files") leave `/healthz` answering and refreshes
/// succeeding; a silent socket is closed after the read timeout (they stayed open > 400 s).
#[test]
fn h2_silent_sockets_neither_starve_healthz_nor_refreshes() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    // A read timeout of 4 s (10 s unless set): the sockets stay silent through the probes.
    sb.write_config(
        &config_text(&file_watch("acme.pets", "pets.json", "1s"), "")
            .replace("[server]\n", "[server]\nread_timeout = \"4s\"\n"),
    );
    let mut daemon = Daemon::start_with_nofile(&sb, None, 64);
    daemon.wait_for_log("refresh", |v| v["action"] == "registered");
    let mut silent = Vec::new();
    for _ in 0..200 {
        match std::net::TcpStream::connect(daemon.api) {
            Ok(s) => silent.push(s),
            Err(e) => panic!("connect: {e}"),
        }
    }
    let before = daemon.count_events("refresh");
    for _ in 0..5 {
        let started = Instant::now();
        let (status, body) = daemon.get("/healthz");
        assert_eq!((status, body.as_str()), (200, "ok\n"));
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        std::thread::sleep(Duration::from_millis(400));
    }
    // Refreshes go on (no "Too many open files").
    let wait = Instant::now();
    while daemon.count_events("refresh") < before + 2 {
        assert!(wait.elapsed() < PATIENCE, "{}", daemon.log_text());
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        daemon.count_events("refresh_failed"),
        0,
        "{}",
        daemon.log_text()
    );
    // Every silent socket is closed by the server within the read timeout (4 s) and a
    // margin; evicted ones earlier.
    let deadline = Instant::now() + Duration::from_secs(14);
    for mut s in silent {
        use std::io::Read;
        let left = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        s.set_read_timeout(Some(left)).unwrap();
        let mut buf = [0u8; 16];
        match s.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => panic!("the server sent {n} bytes to a silent socket"),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("a silent socket stayed open: {e}"),
        }
    }
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());
}

/// H11: the daemon refuses to start with `admin_token_env` naming an unset variable, and with
/// an API on every interface without an admin token (both used to start, review actions
/// silently disabled / the API open to the network).
#[test]
fn h11_startup_refuses_an_unset_token_variable_and_an_open_listen_without_token() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let cfg = sb.config_arg();
    let watch = file_watch("acme.pets", "pets.json", "1h");
    sb.write_config(&with_admin_token(&config_text(&watch, "")));
    let run = sb.run(&["run", "--config", &cfg]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr_text()
            .contains("SW_TEST_ADMIN_TOKEN, which is not set"),
        "{}",
        run.describe()
    );
    sb.write_config(&config_text(&watch, "").replace("127.0.0.1:0", "0.0.0.0:0"));
    let run = sb.run(&["run", "--config", &cfg]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr_text().contains("every interface"),
        "{}",
        run.describe()
    );
}

/// H11: `Authorization: bearer …` (any case) is accepted, an admin token whose variable ends
/// in a newline matches (it never could), and a reviewer with a newline is refused (400).
#[test]
fn h11_bearer_is_case_insensitive_and_the_token_is_trimmed() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(&with_admin_token(&config_text(
        &file_watch("acme.pets", "pets.json", "1h"),
        "",
    )));
    let mut daemon = Daemon::start(&sb, Some(&format!("{ADMIN_TOKEN}\n")));
    daemon.wait_for_log("daemon_started", |_| true);
    for scheme in ["bearer", "BEARER", "Bearer"] {
        let auth = format!("{scheme} {ADMIN_TOKEN}");
        let (status, body) = http(
            daemon.api,
            "POST",
            "/v1/check",
            None,
            &[("Authorization", &auth)],
            Some(""),
        );
        assert_eq!(status, 200, "{scheme}: {body}");
    }
    let auth = format!("Bearer {ADMIN_TOKEN}");
    let (status, body) = http(
        daemon.api,
        "POST",
        "/v1/pending/1/accept",
        None,
        &[("Authorization", &auth)],
        Some(r#"{"reviewer":"alice\nINFO forged","reason":"x"}"#),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("control characters"), "{body}");
    let (status, _) = daemon.terminate(PATIENCE);
    assert!(status.success());
}
