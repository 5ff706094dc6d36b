//! The daemon inside this test process on paused time: `daemon::run_with` with a config from
//! a sandbox, [`Event`]s sent directly instead of signals, and the refresher seen (or replaced)
//! through the scheduler's seam. Scheduling, backoff, reload, drain, concurrency and the
//! summary are checked in virtual seconds that cost milliseconds.
//!
//! Why the clock stays exact: tokio moves paused time forward only when every task waits on a
//! timer. File watches read their documents on the blocking pool, which holds the clock
//! still while it works, and the registry is written the same way; a watch fetched over a
//! socket would let the clock jump while the socket is read, so no timing assertion here
//! rests on one. Signals, PID 1, systemd and kill -9 stay in the process tests.

use crate::common::*;
use crate::service::{config_text, file_watch};
use schemawatch::config::Config;
use schemawatch::daemon::schedule::Refresher;
use schemawatch::daemon::{run_with, DaemonError, Event, Seams, Stopped};
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// When each refresh started (watch, virtual time), in order.
type Starts = Arc<Mutex<Vec<(String, Instant)>>>;

/// One daemon running in this process, its JSON log lines captured.
struct InProcess {
    api: SocketAddr,
    events: mpsc::Sender<Event>,
    task: JoinHandle<Result<Stopped, DaemonError>>,
    logs: Arc<Mutex<Vec<u8>>>,
    // The capture is this thread's default subscriber (the paused runtime runs every task
    // of the daemon on this thread).
    _guard: tracing::dispatcher::DefaultGuard,
}

/// Log lines into a shared buffer.
struct Capture(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// JSON log lines (the daemon's own events at DEBUG) into `logs`.
fn capture(logs: Arc<Mutex<Vec<u8>>>) -> tracing::Dispatch {
    tracing::Dispatch::new(
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info,schemawatch=debug"))
            .with_writer(move || Capture(logs.clone()))
            .json()
            .flatten_event(true)
            .finish(),
    )
}

impl InProcess {
    /// Starts the daemon on `sb`'s config, its refresher mapped by `refresher`.
    async fn start(
        sb: &Sandbox,
        refresher: impl FnOnce(Refresher) -> Refresher + Send + 'static,
    ) -> InProcess {
        let logs = Arc::new(Mutex::new(Vec::new()));
        InProcess::start_logging(sb, refresher, capture(logs.clone()), logs).await
    }

    /// [`InProcess::start`] logging through `dispatch` (which writes into `logs`).
    async fn start_logging(
        sb: &Sandbox,
        refresher: impl FnOnce(Refresher) -> Refresher + Send + 'static,
        dispatch: tracing::Dispatch,
        logs: Arc<Mutex<Vec<u8>>>,
    ) -> InProcess {
        let guard = tracing::dispatcher::set_default(&dispatch);
        let config = Config::load(&sb.config).expect("config loads");
        let (events_tx, events_rx) = mpsc::channel(4);
        let (listening_tx, listening_rx) = oneshot::channel();
        let seams = Seams {
            refresher: Box::new(refresher),
            reap_orphans: false,
            listening: Some(listening_tx),
        };
        let task = tokio::spawn(run_with(config, events_rx, seams));
        let api = listening_rx.await.expect("the daemon listens");
        InProcess {
            api,
            events: events_tx,
            task,
            logs,
            _guard: guard,
        }
    }

    fn logs(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.logs.lock().unwrap())
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect()
    }

    fn events_named(&self, event: &str) -> Vec<Value> {
        self.logs()
            .into_iter()
            .filter(|v| v["event"] == event)
            .collect()
    }

    async fn send(&self, event: Event) {
        self.events.send(event).await.expect("the daemon runs");
    }

    /// Stops the daemon (as SIGTERM does) and answers how, and after how long.
    async fn stop(self) -> (Stopped, Duration) {
        let start = Instant::now();
        self.send(Event::Stop("SIGTERM")).await;
        let stopped = self.task.await.expect("no panic").expect("a clean stop");
        (stopped, start.elapsed())
    }

    /// `GET path` on the daemon's API, from this runtime: the status and the body.
    async fn get(&self, path: &str) -> (u16, String) {
        let mut stream = tokio::net::TcpStream::connect(self.api).await.unwrap();
        let request = format!(
            "GET {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.api
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.unwrap();
        let text = String::from_utf8_lossy(&answer).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("GET {path}: {text}"));
        (status, body.to_string())
    }

    /// The status of `GET path`.
    async fn get_status(&self, path: &str) -> u16 {
        self.get(path).await.0
    }

    /// The JSON of `GET path`, which must answer 200.
    async fn get_json(&self, path: &str) -> Value {
        let (status, body) = self.get(path).await;
        assert_eq!(status, 200, "GET {path}: {body}");
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
    }
}

/// The production refresher, each start recorded in `starts`.
fn recording(starts: Starts) -> impl FnOnce(Refresher) -> Refresher {
    move |real: Refresher| -> Refresher {
        Arc::new(move |config: Arc<Config>, index, permit| {
            let name = config.watches[index].name.clone();
            starts.lock().unwrap().push((name, Instant::now()));
            real(config, index, permit)
        })
    }
}

/// No real refresh: each takes `takes` of virtual time and succeeds; `in_flight` keeps
/// (running now, most at once).
fn sleeping(
    starts: Starts,
    takes: Duration,
    in_flight: Arc<Mutex<(usize, usize)>>,
) -> impl FnOnce(Refresher) -> Refresher {
    move |_real: Refresher| -> Refresher {
        Arc::new(move |config: Arc<Config>, index, permit| {
            let (starts, in_flight) = (starts.clone(), in_flight.clone());
            Box::pin(async move {
                let name = config.watches[index].name.clone();
                starts.lock().unwrap().push((name, Instant::now()));
                {
                    let mut f = in_flight.lock().unwrap();
                    f.0 += 1;
                    f.1 = f.1.max(f.0);
                }
                tokio::time::sleep(takes).await;
                in_flight.lock().unwrap().0 -= 1;
                drop(permit);
                (true, 0)
            })
        })
    }
}

fn starts_of(starts: &Starts, name: &str) -> Vec<Instant> {
    starts
        .lock()
        .unwrap()
        .iter()
        .filter(|(n, _)| n == name)
        .map(|(_, t)| *t)
        .collect()
}

fn gaps(times: &[Instant]) -> Vec<Duration> {
    times.windows(2).map(|p| p[1] - p[0]).collect()
}

/// docs/reliability.md H9: a watch whose document cannot be read backs off exponentially
/// past its interval (0.5–1 s, 1–2 s, 2–4 s, … on a 1 s watch), counted from the stored
/// consecutive failures; once the document is back, it is refreshed every interval again.
#[tokio::test(start_paused = true)]
async fn error_backoff_grows_past_the_interval_and_ends_on_recovery() {
    let sb = Sandbox::new();
    sb.write_config(&config_text(
        &file_watch("acme.down", "missing.json", "1s"),
        "",
    ));
    let starts: Starts = Arc::default();
    let d = InProcess::start(&sb, recording(starts.clone())).await;
    tokio::time::sleep(Duration::from_secs(40)).await;
    let failing = starts_of(&starts, "acme.down");
    let backoff = gaps(&failing);
    assert!(backoff.len() >= 4, "{backoff:?}");
    for (k, gap) in backoff.iter().take(5).enumerate() {
        // min(interval, 5 s) × 2^k × [0.5, 1), plus the refresh itself.
        let low = Duration::from_millis(500 << k);
        let high = Duration::from_millis((1000 << k) + 200);
        assert!(
            *gap >= low && *gap <= high,
            "gap {k} is {gap:?}: {backoff:?}"
        );
    }
    assert!(
        d.events_named("refresh_failed").len() <= failing.len(),
        "{}",
        d.events_named("refresh_failed").len()
    );
    let watch = d.get_json("/v1/watches/acme.down").await;
    assert_eq!(watch["status"], "error", "{watch}");
    assert!(
        watch["consecutive_failures"].as_i64().unwrap_or(0) >= 4,
        "{watch}"
    );

    // The document comes back: the next try registers it, then every interval (±10%).
    sb.write_file("missing.json", &Pets::v1().bytes());
    let resumed = starts_of(&starts, "acme.down").len();
    tokio::time::sleep(Duration::from_secs(90)).await;
    let all = starts_of(&starts, "acme.down");
    let after = &all[resumed..];
    assert!(after.len() >= 2, "{:?}", gaps(&all));
    for gap in gaps(&after[1..]) {
        assert!(
            gap >= Duration::from_millis(900) && gap <= Duration::from_millis(1300),
            "{:?}",
            gaps(after)
        );
    }
    let watch = d.get_json("/v1/watches/acme.down").await;
    assert_eq!(watch["consecutive_failures"], 0, "{watch}");
    let (stopped, _) = d.stop().await;
    assert_eq!(stopped.abandoned, 0);
}

/// docs/reliability.md P19/D6: after a pause of many intervals (SIGSTOP, a suspended VM),
/// each watch is refreshed once on resume, not once per missed interval.
#[tokio::test(start_paused = true)]
async fn a_paused_daemon_refreshes_each_watch_once_on_resume() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let watches: String = (0..3)
        .map(|i| file_watch(&format!("acme.w{i}"), "pets.json", "1s"))
        .collect();
    sb.write_config(&config_text(&watches, ""));
    let starts: Starts = Arc::default();
    let d = InProcess::start(&sb, recording(starts.clone())).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    let before = starts.lock().unwrap().len();
    assert!(
        before >= 9,
        "{before} refreshes of 3 one-second watches in 5 s"
    );
    // The process stops for five intervals: the clock moves, no task runs.
    tokio::time::advance(Duration::from_secs(5)).await;
    let resumed = Instant::now();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let burst: Vec<String> = starts.lock().unwrap()[before..]
        .iter()
        .filter(|(_, t)| *t >= resumed && *t < resumed + Duration::from_millis(800))
        .map(|(n, _)| n.clone())
        .collect();
    // Each watch once: the next refresh comes at least 0.9 s after the previous one ended.
    let mut names = burst.clone();
    names.sort();
    assert_eq!(names, ["acme.w0", "acme.w1", "acme.w2"], "{burst:?}");
    d.stop().await;
}

/// `max_concurrency` bounds the refreshes in flight, and slots, not timers, set the pace.
#[tokio::test(start_paused = true)]
async fn max_concurrency_bounds_refreshes_in_flight() {
    let sb = Sandbox::new();
    let watches: String = (0..6)
        .map(|i| file_watch(&format!("load.w{i}"), "unused.json", "1s"))
        .collect();
    sb.write_config(&config_text(&watches, ""));
    let starts: Starts = Arc::default();
    let in_flight: Arc<Mutex<(usize, usize)>> = Arc::default();
    let d = InProcess::start(
        &sb,
        sleeping(
            starts.clone(),
            Duration::from_millis(400),
            in_flight.clone(),
        ),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    // `config_text` sets max_concurrency = 2.
    assert_eq!(in_flight.lock().unwrap().1, 2);
    // Six 1 s watches want ~6 refreshes a second; two slots of 0.4 s give at most 5, fewer
    // as a freed slot waits for the next start tick (100 ms).
    let n = starts.lock().unwrap().len();
    assert!((200..=302).contains(&n), "{n} refreshes in 60 s");
    d.stop().await;
}

/// A daemon of one 1 s watch with `drain_timeout`, whose refreshes take `takes`, once its
/// first refresh is running.
async fn mid_refresh(drain_timeout: &str, takes: Duration) -> (Sandbox, InProcess) {
    let sb = Sandbox::new();
    sb.write_config(
        &config_text(&file_watch("slow.api", "unused.json", "1s"), "").replace(
            "drain_timeout = \"2s\"",
            &format!("drain_timeout = \"{drain_timeout}\""),
        ),
    );
    let starts: Starts = Arc::default();
    let d = InProcess::start(&sb, sleeping(starts.clone(), takes, Arc::default())).await;
    while starts.lock().unwrap().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (sb, d)
}

/// A stop drains: refreshes in flight finish within `drain_timeout` (2 s in `config_text`),
/// a refresh still running at the deadline is abandoned and logged, and a second stop ends
/// the drain at once.
#[tokio::test(start_paused = true)]
async fn a_stop_drains_within_the_deadline_and_a_second_stop_ends_it() {
    // Refreshes of 1.5 s: the drain waits for them to finish.
    let (_sb, d) = mid_refresh("2s", Duration::from_millis(1500)).await;
    let (stopped, took) = d.stop().await;
    assert_eq!(
        stopped,
        Stopped {
            signal: "SIGTERM",
            abandoned: 0,
            forced: false
        }
    );
    assert!(
        took <= Duration::from_millis(1500) + Duration::from_millis(600),
        "{took:?}"
    );

    // A refresh of two minutes: abandoned at the 2 s deadline.
    let (_sb, d) = mid_refresh("2s", Duration::from_secs(120)).await;
    let logs = d.logs.clone();
    let (stopped, took) = d.stop().await;
    assert_eq!(stopped.abandoned, 1);
    assert!(!stopped.forced);
    // The deadline, then at most the API's half-second grace.
    assert!(
        took >= Duration::from_secs(2) && took <= Duration::from_millis(2600),
        "{took:?}"
    );
    let text = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|v| v["event"] == "refresh_abandoned" && v["watch"] == "slow.api"),
        "{text}"
    );

    // A 300 s drain deadline, ended by a second stop.
    let (_sb, d) = mid_refresh("300s", Duration::from_secs(120)).await;
    let start = Instant::now();
    d.send(Event::Stop("SIGTERM")).await;
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(!d.task.is_finished(), "the drain waits for its deadline");
    d.send(Event::Stop("SIGTERM")).await;
    let stopped = d.task.await.unwrap().unwrap();
    assert!(stopped.forced, "{stopped:?}");
    assert!(
        start.elapsed() <= Duration::from_millis(10_600),
        "{:?}",
        start.elapsed()
    );
}

/// A reload keeps the schedule of an unchanged watch (no extra refresh, no gap), starts an
/// added one, stops a removed one; an invalid config is logged at ERROR and the running one
/// keeps going.
#[tokio::test(start_paused = true)]
async fn reload_keeps_unchanged_schedules_and_an_invalid_config_changes_nothing() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let kept = file_watch("acme.kept", "pets.json", "10s");
    let gone = file_watch("acme.gone", "pets.json", "10s");
    sb.write_config(&config_text(&format!("{kept}{gone}"), ""));
    let starts: Starts = Arc::default();
    let d = InProcess::start(&sb, recording(starts.clone())).await;
    tokio::time::sleep(Duration::from_secs(65)).await;

    let added = file_watch("acme.added", "pets.json", "10s");
    sb.write_config(&config_text(&format!("{kept}{added}"), ""));
    let reloaded_at = Instant::now();
    d.send(Event::Reload).await;
    tokio::time::sleep(Duration::from_secs(65)).await;
    let reloaded = d.events_named("config_reloaded");
    assert_eq!(reloaded.len(), 1, "{reloaded:?}");
    assert_eq!(
        (&reloaded[0]["added"], &reloaded[0]["removed"]),
        (&Value::from(1), &Value::from(1))
    );
    // The kept watch: every 9–11 s across the reload, as if nothing happened.
    let kept_times = starts_of(&starts, "acme.kept");
    for gap in gaps(&kept_times) {
        assert!(
            gap >= Duration::from_secs(9) && gap <= Duration::from_millis(11_200),
            "{:?}",
            gaps(&kept_times)
        );
    }
    assert!(starts_of(&starts, "acme.gone")
        .iter()
        .all(|t| *t < reloaded_at));
    let added_times = starts_of(&starts, "acme.added");
    assert!(added_times.len() >= 5, "{}", added_times.len());
    assert!(added_times[0] - reloaded_at < Duration::from_secs(10));

    // Invalid: the running config stays, both watches keep their pace.
    sb.write_config(&config_text(&format!("{kept}{added}"), "bogus_key = 1\n"));
    let failed_at = Instant::now();
    d.send(Event::Reload).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let failed = d.events_named("config_reload_failed");
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0]["level"], "ERROR");
    assert!(
        failed[0]["error"]
            .as_str()
            .unwrap_or("")
            .contains("bogus_key"),
        "{}",
        failed[0]
    );
    for name in ["acme.kept", "acme.added"] {
        let n = starts_of(&starts, name)
            .iter()
            .filter(|t| **t >= failed_at)
            .count();
        assert!((2..=4).contains(&n), "{name}: {n} refreshes in 30 s");
    }
    let watches = d.get_json("/v1/watches").await;
    assert_eq!(watches.as_array().map(Vec::len), Some(2), "{watches}");
    d.stop().await;
}

/// A reload whose `uses` names nothing the registry holds for the watch is refused like any
/// invalid config (the running one stays); a start with it refuses to run.
#[tokio::test(start_paused = true)]
async fn a_reload_with_a_typo_in_uses_keeps_the_running_config() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let watch = |uses: &str| {
        format!(
            "{}\nuses = [{uses}]\n\n",
            file_watch("acme.pets", "pets.json", "10s").trim_end()
        )
    };
    sb.write_config(&config_text(&watch("\"listPets\""), ""));
    // The accepted contract the entries are judged against.
    sb.check(&[]).0.assert_code(0);
    let starts: Starts = Arc::default();
    let d = InProcess::start(&sb, recording(starts.clone())).await;
    tokio::time::sleep(Duration::from_secs(15)).await;
    sb.write_config(&config_text(&watch("\"listPets\", \"listPest\""), ""));
    d.send(Event::Reload).await;
    tokio::time::sleep(Duration::from_secs(15)).await;
    let failed = d.events_named("config_reload_failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    let error = failed[0]["error"].as_str().unwrap_or("");
    assert!(
        error.contains("\"listPest\" names nothing"),
        "{}",
        failed[0]
    );
    assert!(d.events_named("config_reloaded").is_empty());
    // Still running the old config: the watch keeps its pace.
    let before = starts_of(&starts, "acme.pets").len();
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(starts_of(&starts, "acme.pets").len() >= before + 2);
    d.stop().await;
    let run = sb.run(&["run", "--config", &sb.config_arg()]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr_text().contains("refusing to start")
            && run.stderr_text().contains("\"listPest\" names nothing"),
        "{}",
        run.describe()
    );
}

/// The INFO `summary` event comes every `summary_interval` with the `/v1/summary` counts.
#[tokio::test(start_paused = true)]
async fn the_summary_comes_every_interval_with_the_counts() {
    let sb = Sandbox::new();
    sb.write_file("pets.json", &Pets::v1().bytes());
    let watches = format!(
        "{}{}",
        file_watch("acme.pets", "pets.json", "1m"),
        file_watch("acme.down", "missing.json", "1m")
    );
    sb.write_config(&config_text(&watches, "summary_interval = \"5m\"\n"));
    let d = InProcess::start(&sb, |real| real).await;
    tokio::time::sleep(Duration::from_secs(16 * 60)).await;
    let summaries = d.events_named("summary");
    assert_eq!(summaries.len(), 3, "{summaries:?}");
    let last = &summaries[2];
    assert_eq!(last["level"], "INFO");
    assert_eq!(last["watches"], 2);
    assert_eq!(last["registry_version"], 1, "{last}");
    let by_status: Value = serde_json::from_str(last["by_status"].as_str().unwrap()).unwrap();
    assert_eq!(by_status["error"], 1, "{last}");
    assert_eq!(by_status["unchanged"], 1, "{last}");
    assert_eq!(d.get_json("/v1/summary").await["by_status"], by_status);
    d.stop().await;
}

/// docs/reliability.md H6: a registry deleted under the running daemon fails closed: an ERROR
/// log, `/readyz` not ready, no refresh from then on, and the file is never re-created (it
/// used to be, with the watch "registered" again as a new trusted baseline, no review).
#[test]
fn h6_a_registry_deleted_under_the_daemon_fails_closed() {
    // The deletion is noticed by the recount, on the blocking pool: its threads log into the
    // same capture (a thread default reaches only the thread that sets it).
    let logs = Arc::new(Mutex::new(Vec::new()));
    let dispatch = capture(logs.clone());
    let for_blocking = dispatch.clone();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        // The guard lives as long as the thread: the pool's threads end with the runtime.
        .on_thread_start(move || std::mem::forget(tracing::dispatcher::set_default(&for_blocking)))
        .build()
        .unwrap();
    runtime.block_on(async move {
        let sb = Sandbox::new();
        sb.write_file("pets.json", &Pets::v1().bytes());
        sb.write_config(&config_text(
            &file_watch("acme.pets", "pets.json", "1s"),
            "",
        ));
        let d = InProcess::start_logging(&sb, |real| real, dispatch, logs).await;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let actions: Vec<Value> = d
            .events_named("refresh")
            .iter()
            .map(|v| v["action"].clone())
            .collect();
        assert!(
            actions.contains(&Value::from("registered"))
                && actions.contains(&Value::from("unchanged")),
            "{actions:?}"
        );
        assert_eq!(d.get_status("/readyz").await, 200);
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(sb.path(&format!("registry.sqlite3{suffix}")));
        }
        let deleted_at = Instant::now();
        while d.events_named("registry_replaced").is_empty() {
            assert!(
                deleted_at.elapsed() < Duration::from_secs(60),
                "never noticed"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let lost = &d.events_named("registry_replaced")[0];
        assert_eq!(lost["level"], "ERROR", "{lost}");
        assert_eq!(lost["what"], "deleted", "{lost}");
        assert_eq!(d.get_status("/readyz").await, 503);
        // Thirty intervals later: not one refresh, and no new registry.
        let refreshes = d.events_named("refresh").len();
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(d.events_named("refresh").len(), refreshes);
        assert!(
            !sb.path("registry.sqlite3").exists(),
            "the registry was re-created"
        );
        assert_eq!(d.get_status("/healthz").await, 200);
        let (stopped, _) = d.stop().await;
        assert_eq!(stopped.abandoned, 0);
    });
}
