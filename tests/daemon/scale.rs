//! Scale check (ignored; not in CI): 2,000 watches against one local server that answers
//! conditional requests with 304, `max_concurrency = 8`. Reports the most fetches in flight
//! at once (must be <= 8), and the daemon's memory (VmRSS, VmHWM) and CPU time per cycle.
//!
//!   cargo test --test daemon scale:: -- --ignored --nocapture
//!   SCALE_WATCHES=5000 cargo test --release --test daemon scale:: -- --ignored --nocapture

use crate::common;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::IntoResponse;
use common::*;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn proc_field(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// utime + stime in clock ticks (100 Hz on Linux).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let f = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
    };
    f(11) + f(12)
}

#[test]
#[ignore = "scale check: run by hand, figures in the output"]
fn two_thousand_watches_with_304s() {
    let watches: usize = std::env::var("SCALE_WATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let concurrency = 8;
    let interval_s = 20;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let requests = Arc::new(AtomicUsize::new(0));
    let not_modified = Arc::new(AtomicUsize::new(0));
    let in_flight = Arc::new(AtomicUsize::new(0));
    let max_in_flight = Arc::new(AtomicUsize::new(0));
    let body = Pets::v1().bytes();
    let (r, n, i, m) = (
        requests.clone(),
        not_modified.clone(),
        in_flight.clone(),
        max_in_flight.clone(),
    );
    let app = axum::Router::new().route(
        "/{doc}",
        axum::routing::get(move |headers: HeaderMap| {
            let (r, n, i, m, body) = (r.clone(), n.clone(), i.clone(), m.clone(), body.clone());
            async move {
                r.fetch_add(1, Ordering::SeqCst);
                let now = i.fetch_add(1, Ordering::SeqCst) + 1;
                m.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                i.fetch_sub(1, Ordering::SeqCst);
                if headers
                    .get(header::IF_NONE_MATCH)
                    .is_some_and(|v| v == "\"v1\"")
                {
                    n.fetch_add(1, Ordering::SeqCst);
                    return (
                        StatusCode::NOT_MODIFIED,
                        [(header::ETAG, "\"v1\"")],
                        Vec::new(),
                    )
                        .into_response();
                }
                (StatusCode::OK, [(header::ETAG, "\"v1\"")], body).into_response()
            }
        }),
    );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move {
        let _ = axum::serve(listener, app).await;
    });

    let sb = Sandbox::new();
    let mut config = format!(
        "[storage]\npath = \"registry.sqlite3\"\n\n[daemon]\nmax_concurrency = {concurrency}\n\n[server]\nlisten = \"127.0.0.1:0\"\n\n"
    );
    for w in 0..watches {
        config.push_str(&format!(
            "[[watch]]\nname = \"scale.w{w}\"\nkind = \"openapi\"\nurl = \"http://{addr}/w{w}.json\"\ninterval = \"{interval_s}s\"\n\n"
        ));
    }
    sb.write_config(&config);
    let config_arg = sb.config_arg();
    let mut child = sb
        .command(&["run", "--config", &config_arg])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || for _ in BufReader::new(stderr).lines() {});
    let pid = child.id();
    let started = Instant::now();
    std::thread::sleep(Duration::from_millis(500));
    eprintln!(
        "idle after start: VmRSS {} KiB, threads {}",
        proc_field(pid, "VmRSS:"),
        proc_field(pid, "Threads:")
    );
    let mut marks = Vec::new();
    for cycle in 1..=3 {
        let target = watches * cycle;
        while requests.load(Ordering::SeqCst) < target {
            assert!(
                child.try_wait().unwrap().is_none(),
                "daemon exited during the scale run"
            );
            assert!(started.elapsed() < Duration::from_secs(900), "too slow");
            std::thread::sleep(Duration::from_millis(100));
        }
        marks.push((cycle, started.elapsed(), cpu_ticks(pid)));
        eprintln!(
            "cycle {cycle}: {} requests ({} answered 304) after {:?}; VmRSS {} KiB, VmHWM {} KiB, CPU {} ticks total, fds {}",
            requests.load(Ordering::SeqCst),
            not_modified.load(Ordering::SeqCst),
            started.elapsed(),
            proc_field(pid, "VmRSS:"),
            proc_field(pid, "VmHWM:"),
            cpu_ticks(pid),
            std::fs::read_dir(format!("/proc/{pid}/fd")).map(|d| d.count()).unwrap_or(0),
        );
    }
    for pair in marks.windows(2) {
        let (c, t0, cpu0) = pair[0];
        let (_, t1, cpu1) = pair[1];
        eprintln!(
            "cycle {}: CPU {:.2} s for {watches} refreshes ({:.2} ms each), wall {:?}",
            c + 1,
            (cpu1 - cpu0) as f64 / 100.0,
            (cpu1 - cpu0) as f64 * 10.0 / watches as f64,
            t1 - t0
        );
    }
    let max = max_in_flight.load(Ordering::SeqCst);
    eprintln!("most fetches in flight at once: {max} (max_concurrency {concurrency})");
    assert!(max <= concurrency);
    assert!(not_modified.load(Ordering::SeqCst) >= watches);
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
}
