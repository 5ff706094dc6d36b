//! systemd integration: the shipped unit scores an exposure of 2.0 or less in
//! `systemd-analyze security --offline=yes` and passes `systemd-analyze verify` (on a copy
//! whose ExecStart is the built binary); and the daemon speaks the sd_notify protocol
//! (READY=1 with STATUS=, RELOADING=1 around SIGHUP, WATCHDOG=1, STOPPING=1) to a fake
//! `NOTIFY_SOCKET`.
//!
//! Without `systemd-analyze` the unit tests are skipped with a message, except when
//! `SCHEMAWATCH_REQUIRE_PEERS=1` (set by `.ci/run`, which installs the tool): then they fail.

use crate::common;

use common::*;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const UNIT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/deploy/systemd/schemawatch.service"
);

fn systemd_analyze() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join("systemd-analyze"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("SCHEMAWATCH_REQUIRE_PEERS").as_deref() != Ok("1"),
            "systemd-analyze is required (SCHEMAWATCH_REQUIRE_PEERS=1); install the Debian package `systemd`"
        );
        eprintln!("SKIPPED: systemd-analyze not installed (apt-get install systemd)");
    }
    found
}

#[test]
fn unit_exposure_is_at_most_2_0() {
    let Some(tool) = systemd_analyze() else {
        return;
    };
    let out = Command::new(tool)
        .args([
            "security",
            "--offline=yes",
            "--threshold=20",
            "--no-pager",
            UNIT,
        ])
        .output()
        .expect("run systemd-analyze security");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exposure above 2.0:\n{text}");
    let line = text
        .lines()
        .find(|l| l.contains("Overall exposure level"))
        .unwrap_or_else(|| panic!("no overall exposure line:\n{text}"));
    let score: f64 = line
        .split(':')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the score from {line:?}"));
    assert!(score <= 2.0, "{line}");
    eprintln!("{}", line.trim());
}

#[test]
fn unit_verifies_with_the_built_binary() {
    let Some(tool) = systemd_analyze() else {
        return;
    };
    let unit = std::fs::read_to_string(UNIT).unwrap();
    assert!(unit.contains("Type=notify"));
    assert!(unit.contains("ExecReload=/bin/kill -HUP $MAINPID"));
    let exec = "ExecStart=/usr/local/bin/schemawatch ";
    assert!(unit.contains(exec), "ExecStart moved; update this test");
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("schemawatch.service");
    std::fs::write(&copy, unit.replace(exec, &format!("ExecStart={} ", bin()))).unwrap();
    let out = Command::new(tool)
        .args(["verify", "--no-pager"])
        .arg(&copy)
        .output()
        .expect("run systemd-analyze verify");
    assert!(
        out.status.success(),
        "systemd-analyze verify failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Collects datagrams from the fake notify socket until `want` is among them.
fn wait_for(socket: &UnixDatagram, seen: &mut Vec<String>, want: &str) {
    let start = Instant::now();
    let mut buf = [0u8; 4096];
    while !seen.iter().any(|m| m.lines().any(|l| l == want)) {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {want} from the daemon; got {seen:?}"
        );
        if let Ok(n) = socket.recv(&mut buf) {
            seen.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
    }
}

fn signal(pid: u32, name: &str) {
    let ok = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .expect("run kill")
        .success();
    assert!(ok);
}

#[test]
fn daemon_speaks_sd_notify() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    sb.write_config(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[[watch]]\nname = \"acme.pets\"\nkind = \"openapi\"\npath = \"pets.json\"\ninterval = \"1h\"\n",
    );
    let socket_path: PathBuf = sb.path("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let config = sb.config_arg();
    let mut child = sb
        .command(&["run", "--config", &config])
        .env("NOTIFY_SOCKET", Path::new(&socket_path))
        // 1 s watchdog: WATCHDOG=1 every 0.5 s from the scheduler loop.
        .env("WATCHDOG_USEC", "1000000")
        .env_remove("WATCHDOG_PID")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut seen = Vec::new();
    wait_for(&socket, &mut seen, "READY=1");
    let ready = seen.iter().find(|m| m.contains("READY=1")).unwrap();
    assert!(
        ready.contains("STATUS=1 watch, 0 pending reviews"),
        "{ready:?}"
    );
    wait_for(&socket, &mut seen, "WATCHDOG=1");

    seen.clear();
    signal(child.id(), "HUP");
    wait_for(&socket, &mut seen, "RELOADING=1");
    let reloading = seen.iter().find(|m| m.contains("RELOADING=1")).unwrap();
    assert!(reloading.contains("MONOTONIC_USEC="), "{reloading:?}");
    wait_for(&socket, &mut seen, "READY=1");

    signal(child.id(), "TERM");
    wait_for(&socket, &mut seen, "STOPPING=1");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
