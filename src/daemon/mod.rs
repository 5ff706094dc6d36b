//! The long-running daemon: the HTTP API, a scheduler that refreshes each watch on its own
//! interval, signals (SIGTERM/SIGINT drain, SIGHUP reload) and systemd notifications.
//!
//! Scheduling, in short (docs/reliability.md P19 and §3; `schedule.rs`):
//! - one scheduler over a timer heap; a watch's first refresh comes after a deterministic
//!   per-watch offset within `min(interval, max(30 s, 2 ms a watch))`, so watches are spread
//!   instead of firing together, and a refresh task exists only while that refresh runs;
//! - the next refresh is scheduled from the end of the previous one (`interval` ± 10%), so a
//!   paused process (SIGSTOP, suspend) runs each watch at most once on resume: no burst;
//! - a global semaphore of `max_concurrency` permits bounds refreshes in flight, and a
//!   per-watch lock serializes a scheduled refresh with `POST /v1/check` (never duplicated);
//! - each refresh has a deadline (`timeout` + [`REGISTRY_MARGIN`]); a refresh past it is
//!   dropped at an await point, which is never inside a registry transaction (those are
//!   synchronous), and recorded as an error;
//! - after an error the next try follows a jittered exponential backoff on the stored
//!   `consecutive_failures`: it starts at `min(interval, FIRST_BACKOFF)` and doubles past the
//!   interval up to [`MAX_BACKOFF`] (a failing provider is not hit once per interval);
//! - every deadline is computed with checked arithmetic ([`later`]): configured durations are
//!   bounded (`config.rs`), and even an unbounded one would mean "never", not a panic.

pub mod descriptors;
pub mod schedule;
pub mod serve;
mod systemd;

use crate::config::{Config, ConfigError};
use crate::refresh::Action;
use crate::registry::{Registry, RegistryError};
use crate::state::read_token;
pub use crate::state::{Shared, REGISTRY_MARGIN};
use schedule::{Control, Scheduler};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    /// A configuration the daemon refuses to run with (docs/reliability.md H11).
    #[error("refusing to start: {0}")]
    Refused(String),
    #[error("cannot install signal handler: {0}")]
    Signal(std::io::Error),
    #[error("cannot listen on {listen}: {source}")]
    Bind {
        listen: String,
        source: std::io::Error,
    },
}

pub use schedule::{
    backoff, first_delay, later, next_interval, Jitter, FIRST_BACKOFF, FIRST_SPREAD, MAX_BACKOFF,
};

/// How often deferred watch bookkeeping is group-committed: a crash (kill -9, power loss)
/// loses at most this much of `last_checked_at`, and nothing else.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// How often the daemon looks at the registry's change token to recount its gauges.
pub const RECOUNT_EVERY: Duration = Duration::from_secs(2);

/// What the daemon refuses to run with: `admin_token_env` naming an unset or empty variable
/// (review actions would be silently disabled), and an API beyond loopback with no admin
/// token configured ([`check_listen`]).
pub fn check_startup(config: &Config) -> Result<(), DaemonError> {
    config
        .require_env()
        .map_err(|e| DaemonError::Refused(e.to_string()))?;
    if let Some(var) = config.server.admin_token_env.as_deref() {
        if read_token(config).is_none() {
            return Err(DaemonError::Refused(format!(
                "server.admin_token_env names {var}, which is not set (or empty) in the environment"
            )));
        }
    }
    check_listen(config)
}

/// An API beyond loopback needs an admin token (H11, H18): on every interface (`0.0.0.0`,
/// `[::]`) or on any specific address that is not loopback (`10.0.0.5:9477`), since a
/// token-less API there is open to the network. `config check` says the same.
pub fn check_listen(config: &Config) -> Result<(), DaemonError> {
    if config.server.admin_token_env.is_some() {
        return Ok(());
    }
    let Ok(addr) = config.server.listen.parse::<SocketAddr>() else {
        return Ok(());
    };
    let reach = if addr.ip().is_unspecified() {
        "on every interface"
    } else if addr.ip().to_canonical().is_loopback() {
        return Ok(());
    } else {
        "on an address that is not loopback"
    };
    Err(DaemonError::Refused(format!(
        "server.listen = {:?} serves the API {reach} without an admin token: set server.admin_token_env, or listen on loopback",
        config.server.listen
    )))
}

/// Reads the config again (SIGHUP). A valid config adds, removes and changes watches in
/// place; an invalid one is logged and the running config stays.
async fn reload(
    shared: &Arc<Shared>,
    control: &mpsc::Sender<Control>,
    path: &std::path::Path,
) -> Result<(), ConfigError> {
    let started = std::time::Instant::now();
    let new = Config::load(path)?;
    if let Err(e) = check_startup(&new) {
        return Err(ConfigError::Invalid {
            path: path.to_path_buf(),
            message: e.to_string(),
        });
    }
    let new = descriptors::apply(new, false).map_err(|message| ConfigError::Invalid {
        path: path.to_path_buf(),
        message,
    })?;
    check_reloaded_uses(shared, &new)
        .await
        .map_err(|message| ConfigError::Invalid {
            path: path.to_path_buf(),
            message,
        })?;
    let old = shared.config();
    if new.storage.location != old.storage.location {
        tracing::warn!(
            event = "config_needs_restart",
            key = "storage",
            "storage (path or url) changed; the daemon keeps the registry it opened until it is restarted"
        );
    }
    if new.server.listen != old.server.listen {
        tracing::warn!(
            event = "config_needs_restart",
            key = "server.listen",
            "server.listen changed; the API keeps its address until the daemon is restarted"
        );
    }
    shared.set_max_concurrency(new.daemon.max_concurrency);
    shared.set_watches(&new.watches, &Default::default());
    let new = Arc::new(new);
    // The scheduler moves to the same Arc the API reads: one copy of every watch config.
    let (reply_tx, reply_rx) = tokio::sync::oneshot::channel();
    let r = match control.send(Control::Reload(new.clone(), reply_tx)).await {
        Ok(()) => reply_rx.await.unwrap_or_default(),
        Err(_) => Default::default(),
    };
    // A re-added watch starts idle above: its stored status comes with the next recount.
    shared.invalidate_counts();
    shared.set_config_arc(new.clone());
    tracing::info!(
        event = "config_reloaded",
        watches = new.watches.len(),
        added = r.added,
        removed = r.removed,
        kept = r.changed + r.unchanged,
        changed = r.changed,
        unchanged = r.unchanged,
        millis = started.elapsed().as_millis() as u64
    );
    Ok(())
}

/// A reloaded config's `uses` against the registry, as at start: on the blocking pool, with
/// only the watches that have a scope to check.
async fn check_reloaded_uses(shared: &Arc<Shared>, new: &Config) -> Result<(), String> {
    let scoped: Vec<_> = new
        .watches
        .iter()
        .filter(|w| w.uses.is_some() && !w.allow_unknown_uses)
        .cloned()
        .collect();
    if scoped.is_empty() {
        return Ok(());
    }
    let shared = shared.clone();
    let checked = tokio::task::spawn_blocking(move || {
        let registry = shared.take_registry().map_err(|e| e.to_string())?;
        let checked = crate::refresh::uses::check_uses_against(&registry, &scoped);
        shared.give_back(registry);
        checked
    })
    .await;
    checked.unwrap_or_else(|e| Err(format!("checking uses: {e}")))
}

/// Serves the API on a thread and runtime of its own: refreshes run synchronous registry
/// writes (an fsync each) on the scheduler's workers, and `/healthz`, `/v1/summary` or a
/// scrape must not wait behind them. The receiver resolves when the server has stopped.
fn spawn_api(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    slots: usize,
    read_timeout: Duration,
    stop: tokio::sync::oneshot::Receiver<()>,
) -> Result<tokio::sync::oneshot::Receiver<()>, DaemonError> {
    let bind_error = |source| DaemonError::Bind {
        listen: "the API listener".into(),
        source,
    };
    // A tokio listener belongs to the runtime that made it: hand it over as a std one.
    let listener = listener.into_std().map_err(bind_error)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(bind_error)?;
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("api".into())
        .spawn(move || {
            runtime.block_on(async move {
                match tokio::net::TcpListener::from_std(listener) {
                    Ok(listener) => serve::serve(listener, app, slots, read_timeout, stop).await,
                    Err(e) => tracing::error!(event = "api_failed", error = %e),
                }
            });
            let _ = done_tx.send(());
        })
        .map_err(bind_error)?;
    Ok(done_rx)
}

fn stop_rx_for_deliveries(stop: &watch::Sender<bool>) -> watch::Receiver<bool> {
    stop.subscribe()
}

/// How long the daemon's delivery lease lasts; renewed at every pass and at least every
/// half of it, so a one-shot `check` delivers only while no daemon does.
pub const DELIVERY_LEASE: Duration = Duration::from_secs(30);
/// Events and finished deliveries are pruned this often.
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// The delivery task: a pass at every wake-up (this process's commits, another process's
/// writes seen by the recount, the next retry coming due, the lease to renew) while this
/// daemon holds the delivery lease.
async fn deliver(shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let owner = format!(
        "daemon-{}-{:x}",
        std::process::id(),
        crate::registry::events::now_ms()
    );
    let mut last_prune = Instant::now();
    let mut wait = Duration::ZERO;
    loop {
        tokio::select! {
            _ = stop.wait_for(|s| *s) => break,
            _ = shared.deliveries_wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
        let config = shared.config();
        wait = DELIVERY_LEASE / 2;
        let Ok(mut registry) = shared.take_registry() else {
            continue;
        };
        let now = crate::registry::events::now_ms();
        let held = registry
            .acquire_delivery_lease(&owner, now, now + DELIVERY_LEASE.as_millis() as i64)
            .unwrap_or(false);
        if held {
            match crate::notify::deliver_due(&mut registry, &config, &owner, Some(&shared.metrics))
                .await
            {
                Ok(_) => {}
                Err(e) => tracing::error!(event = "notification_pass_failed", error = %e),
            }
            let sinks: Vec<String> = config.notify.iter().map(|s| s.name.clone()).collect();
            if let Ok(Some(at)) = registry.next_due_ms(&sinks) {
                let until = (at - crate::registry::events::now_ms()).max(100) as u64;
                wait = wait.min(Duration::from_millis(until));
            }
        }
        if last_prune.elapsed() >= PRUNE_EVERY {
            last_prune = Instant::now();
            if let Err(e) = registry.prune_events() {
                tracing::error!(event = "event_prune_failed", error = %e);
            }
        }
        shared.give_back(registry);
    }
    if let Ok(mut registry) = shared.take_registry() {
        let _ = registry.release_delivery_lease(&owner);
        shared.give_back(registry);
    }
}

/// The periodic INFO `summary` event: the `/v1/summary` fields (the two maps as JSON text).
fn log_summary(shared: &Shared) {
    let s = shared.summary();
    tracing::info!(
        event = "summary",
        registry_version = s["registry_version"].as_i64().unwrap_or(0),
        watches = s["watches"].as_i64().unwrap_or(0),
        open_reviews = s["open_reviews"].as_i64().unwrap_or(0),
        overdue = s["overdue"].as_i64().unwrap_or(0),
        by_status = %s["by_status"],
        errors_by_class = %s["errors_by_class"],
    );
}

/// What drives a running daemon from outside: the binary forwards its signals
/// ([`signal_events`]); tests send these directly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Drain and stop (a second one while draining stops at once). Carries the signal name.
    Stop(&'static str),
    /// Read the config again.
    Reload,
}

/// Installs the daemon's signal handlers (SIGTERM, SIGINT: stop; SIGHUP: reload) and forwards
/// them as [`Event`]s. Called first by the binary: as PID 1 in a container, unhandled signals
/// are ignored (docs/reliability.md P17).
pub fn signal_events() -> Result<mpsc::Receiver<Event>, DaemonError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(DaemonError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(DaemonError::Signal)?;
    let mut hup = signal(SignalKind::hangup()).map_err(DaemonError::Signal)?;
    let (tx, rx) = mpsc::channel(8);
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                _ = term.recv() => Event::Stop("SIGTERM"),
                _ = int.recv() => Event::Stop("SIGINT"),
                _ = hup.recv() => Event::Reload,
            };
            if tx.send(event).await.is_err() {
                return;
            }
        }
    });
    Ok(rx)
}

/// The production refresher of the scheduler: one `Shared::run_refresh`.
fn refresher(shared: Arc<Shared>) -> schedule::Refresher {
    Arc::new(move |config: Arc<Config>, index, permit| {
        let shared = shared.clone();
        Box::pin(async move {
            let Some(watch) = config.watches.get(index) else {
                return (false, 1);
            };
            match shared.run_refresh_counted(watch, permit).await {
                Some((outcome, failures)) => (outcome.action != Action::Error, failures),
                None => (false, 1),
            }
        })
    })
}

impl schedule::Observer for Shared {
    fn scheduled(&self, name: &str, due: Instant) {
        self.schedule(name, due);
    }

    fn starting(&self, name: &str, due: Instant) {
        Shared::starting(self, name, due);
    }
}

/// What a caller running the daemon in its own process (the daemon tests, on paused time)
/// changes about [`run_with`]; [`run`] passes [`Seams::production`].
pub struct Seams {
    /// Maps the production refresher to the one the scheduler runs: wrap it to observe
    /// refreshes, replace it to run no real I/O (the scheduler's own seam).
    pub refresher: Box<dyn FnOnce(schedule::Refresher) -> schedule::Refresher + Send>,
    /// Become the child subreaper and reap every orphan: process-wide, so off for a daemon
    /// inside a test process (the reaper would take other tests' children).
    pub reap_orphans: bool,
    /// Told the API's address once it listens (a config listening on port 0).
    pub listening: Option<tokio::sync::oneshot::Sender<SocketAddr>>,
}

impl Seams {
    /// The binary's: the real refresher, orphans reaped.
    pub fn production() -> Seams {
        Seams {
            refresher: Box::new(|real| real),
            reap_orphans: true,
            listening: None,
        }
    }
}

/// How a daemon stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// What stopped it: a signal's name, or "shutdown" when the events channel closed.
    pub signal: &'static str,
    /// Refreshes still running at the drain deadline (each logged `refresh_abandoned`).
    pub abandoned: usize,
    /// A second stop ended the drain at once.
    pub forced: bool,
}

/// Runs until `events` says stop (or closes): binds the API, starts the scheduler, reloads.
pub async fn run(config: Config, events: mpsc::Receiver<Event>) -> Result<Stopped, DaemonError> {
    run_with(config, events, Seams::production()).await
}

/// [`run`] with the seams a test changes.
pub async fn run_with(
    config: Config,
    mut events: mpsc::Receiver<Event>,
    seams: Seams,
) -> Result<Stopped, DaemonError> {
    check_startup(&config)?;
    // The delivery loop, the API and the refreshes still use a registry connection on the
    // runtime's threads here and there, where a PostgreSQL client (blocking on the network)
    // panics; refused cleanly until they do not (issue 33).
    if config.storage.location.sqlite_path().is_none() {
        return Err(DaemonError::Registry(RegistryError::NotOnPostgres(
            "the daemon (`schemawatch run`)",
        )));
    }
    // Descriptors for the refreshes and the API, or fewer refreshes, or no start (H24).
    let config = descriptors::apply(config, true).map_err(DaemonError::Refused)?;
    if seams.reap_orphans {
        // As PID 1 (a container) or as subreaper, every orphan of an MCP server's descendants
        // is re-parented to us: reap them (docs/reliability.md H1).
        crate::process::become_subreaper();
        crate::process::spawn_reaper();
    }

    // Whichever connection writes an event creates the deliveries the config asks for.
    crate::registry::set_process_routes(Arc::new(config.routes()));
    // Off the async thread: a PostgreSQL registry's client blocks on the network.
    let (config, registry) = tokio::task::spawn_blocking(move || {
        let mut registry = Registry::open_at(&config.storage.location, config.storage.create)?;
        // File identities of older releases, stored relative (docs/reliability.md H10).
        crate::refresh::migrate_identities(&mut registry, &config)?;
        // A `uses` entry naming nothing the registry holds is a config error, not a silent gate.
        crate::refresh::uses::check_uses_against(&registry, &config.watches)
            .map_err(DaemonError::Refused)?;
        Ok::<_, DaemonError>((config, registry))
    })
    .await
    .map_err(|e| DaemonError::Refused(format!("opening the registry stopped: {e}")))??;
    let listen = config.server.listen.clone();
    let listener = tokio::net::TcpListener::bind(&listen)
        .await
        .map_err(|source| DaemonError::Bind {
            listen: listen.clone(),
            source,
        })?;
    let bound = listener
        .local_addr()
        .map_err(|source| DaemonError::Bind { listen, source })?;
    let path = config.path.clone();
    let drain_timeout = config.daemon.drain_timeout;
    let per_watch = config.server.per_watch_metrics;
    let summary_every = config.daemon.summary_interval;
    let shared = Shared::new(config, registry, bound);
    let config = shared.config();
    if !shared.metrics.per_watch() && per_watch == crate::config::PerWatchMetrics::Auto {
        tracing::warn!(
            event = "per_watch_metrics_off",
            watches = config.watches.len(),
            threshold = crate::config::PER_WATCH_METRICS_AUTO_MAX,
            "per-watch metrics are off: more watches than the threshold (set [server] per_watch_metrics = true to keep them; decided at start)"
        );
    }
    // Every watch state in one query, matched by name (off the async thread, as every read).
    let reading = shared.clone();
    let states = tokio::task::spawn_blocking(move || match reading.take_registry() {
        Ok(r) => {
            let states = r.watch_state_map().unwrap_or_default();
            reading.update_registry_gauges(&r);
            reading.give_back(r);
            states
        }
        Err(_) => Default::default(),
    })
    .await
    .unwrap_or_default();
    shared.set_watches(&config.watches, &states);
    drop(states);
    // The registry as read now is what the counts reflect.
    let counting = shared.clone();
    let _ = tokio::task::spawn_blocking(move || counting.recount_if_changed()).await;
    shared.metrics.record_reload(true);

    let (api_stop_tx, api_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let app = crate::api::router(shared.clone()).merge(crate::ui::router(shared.clone()));
    let slots = config.daemon.max_concurrency;
    let server = spawn_api(
        listener,
        app,
        slots,
        config.server.read_timeout,
        api_stop_rx,
    )?;
    tracing::info!(event = "api_listening", addr = %bound);
    if let Some(listening) = seams.listening {
        let _ = listening.send(bound);
    }

    let (stop_tx, stop_rx) = watch::channel(false);
    let (control_tx, control_rx) = mpsc::channel(1);
    let watches = config.watches.len();
    let scheduler = tokio::spawn(schedule::drive(
        Scheduler::new(config, Instant::now()),
        shared.semaphore(),
        (seams.refresher)(refresher(shared.clone())),
        shared.clone(),
        control_rx,
        stop_rx,
        schedule::START_TICK,
    ));
    let (refresh_tx, mut refresh_rx) = mpsc::channel::<crate::state::RefreshRequest>(64);
    shared.set_refresh_requests(refresh_tx);
    let deliveries = tokio::spawn(deliver(shared.clone(), stop_rx_for_deliveries(&stop_tx)));
    shared.set_ready(true);
    tracing::info!(event = "daemon_started", watches, registry = %shared.registry_location(), api = %bound);
    systemd::ready(&shared.status_line());

    let watchdog = systemd::watchdog_interval();
    let mut tick = tokio::time::interval(watchdog.unwrap_or(Duration::from_secs(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut recount = tokio::time::interval(RECOUNT_EVERY);
    recount.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut summary = tokio::time::interval_at(later(Instant::now(), summary_every), summary_every);
    summary.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut flush = tokio::time::interval(FLUSH_EVERY);
    flush.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let which = loop {
        tokio::select! {
            event = events.recv() => match event {
                Some(Event::Stop(which)) => break which,
                None => break "shutdown",
                Some(Event::Reload) => {
                    systemd::reloading();
                    match reload(&shared, &control_tx, &path).await {
                        Ok(()) => shared.metrics.record_reload(true),
                        Err(e) => {
                            shared.metrics.record_reload(false);
                            tracing::error!(event = "config_reload_failed", error = %e, "keeping the running config");
                        }
                    }
                    systemd::ready(&shared.status_line());
                }
            },
            Some(request) = refresh_rx.recv() => {
                // While draining the scheduler is gone: the request's sender is dropped (503).
                let _ = control_tx.send(Control::RefreshNow(request)).await;
            }
            _ = recount.tick() => {
                // A registry changed by another process (a CLI accept, a reset, a cron check).
                let s = shared.clone();
                let _ = tokio::task::spawn_blocking(move || s.recount_if_changed()).await;
            }
            _ = summary.tick() => log_summary(&shared),
            _ = flush.tick() => {
                // The group commit of 304 bookkeeping (`last_checked_at`).
                let s = shared.clone();
                let _ = tokio::task::spawn_blocking(move || s.flush_checked()).await;
            }
            _ = tick.tick() => {
                // From this loop, not a separate timer: a wedged loop stops the watchdog.
                if watchdog.is_some() {
                    systemd::watchdog();
                }
                systemd::status(&shared.status_line());
            }
        }
    };

    // Drain: no new refreshes; in-flight ones get until the deadline.
    shared.set_ready(false);
    systemd::stopping();
    let _ = stop_tx.send(true);
    refresh_rx.close();
    let in_flight = shared.metrics.in_flight.get();
    tracing::info!(event = "daemon_draining", signal = which, in_flight, drain_timeout = %humantime::format_duration(drain_timeout));
    let deadline = later(Instant::now(), drain_timeout);
    let mut abandoned = 0usize;
    let mut forced = false;
    let mut listening = true;
    if let Ok(schedule::InFlight {
        mut tasks,
        mut watches,
    }) = scheduler.await
    {
        loop {
            tokio::select! {
                r = tokio::time::timeout_at(deadline, tasks.join_next_with_id()) => match r {
                    Ok(Some(joined)) => {
                        let id = match joined {
                            Ok((id, _)) => id,
                            Err(e) => e.id(),
                        };
                        watches.remove(&id);
                    }
                    Ok(None) => break,
                    Err(_) => {
                        for name in watches.values() {
                            tracing::warn!(event = "refresh_abandoned", watch = %name);
                        }
                        abandoned = watches.len();
                        tasks.abort_all();
                        break;
                    }
                },
                event = events.recv(), if listening => match event {
                    Some(Event::Stop(_)) => {
                        forced = true;
                        tasks.abort_all();
                        break;
                    }
                    Some(Event::Reload) => {}
                    None => listening = false,
                }
            }
        }
    }
    let _ = api_stop_tx.send(());
    // Open API requests (a `POST /v1/check`) get what is left of the drain; a second signal
    // leaves them half a second.
    let api_grace = if forced {
        Duration::from_millis(500)
    } else {
        deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(500))
    };
    // Past the grace the API thread is left to the process exit.
    let _ = tokio::time::timeout(api_grace, server).await;
    // What the drained refreshes (and API checks) deferred.
    let s = shared.clone();
    let _ = tokio::task::spawn_blocking(move || s.flush_checked()).await;
    // A pass in progress ends with its current send (bounded by the delivery timeout).
    let _ = tokio::time::timeout(Duration::from_secs(1), deliveries).await;
    tracing::info!(event = "daemon_stopped", signal = which, abandoned, forced);
    Ok(Stopped {
        signal: which,
        abandoned,
        forced,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_exponentially_and_is_capped() {
        let hour = Duration::from_secs(3600);
        // jitter 0.99.. → factor just below 1; jitter 0 → factor 0.5.
        assert_eq!(backoff(1, hour, 0.0), Duration::from_millis(2500));
        assert!(backoff(1, hour, 0.999) < FIRST_BACKOFF);
        assert!(backoff(3, hour, 0.999) > backoff(2, hour, 0.999));
        assert!(backoff(50, hour, 0.999) <= MAX_BACKOFF);
        assert!(backoff(50, hour, 0.0) >= MAX_BACKOFF / 2);
        // Starts at the interval when that is shorter, then grows past it up to the cap.
        let second = Duration::from_secs(1);
        assert!(backoff(1, second, 0.999) <= second);
        assert!(backoff(5, second, 0.0) >= Duration::from_secs(8));
        assert!(backoff(50, second, 0.999) <= MAX_BACKOFF);
        // No overflow anywhere, whatever the duration.
        assert_eq!(next_interval(Duration::MAX, 0.999), Duration::MAX);
        let now = Instant::now();
        assert!(later(now, Duration::MAX) > now);
        // Zero or negative failure counts behave like one.
        assert_eq!(backoff(0, hour, 0.0), backoff(1, hour, 0.0));
    }

    #[test]
    fn next_interval_stays_within_ten_percent() {
        let i = Duration::from_secs(100);
        assert_eq!(next_interval(i, 0.0), Duration::from_secs(90));
        assert!(next_interval(i, 0.999) < Duration::from_secs(110));
        let mut j = Jitter::seeded(7);
        for _ in 0..1000 {
            let f = j.fraction();
            assert!((0.0..1.0).contains(&f));
        }
    }

    #[test]
    fn first_refreshes_are_spread_deterministically() {
        let config = Config::parse(
            std::path::Path::new("/tmp/x.toml"),
            &(0..200)
                .map(|i| format!("[[watch]]\nname = \"ns.w{i}\"\nkind = \"openapi\"\npath = \"x.json\"\ninterval = \"10m\"\n"))
                .collect::<String>(),
        )
        .unwrap();
        let delays: Vec<Duration> = config.watches.iter().map(|w| first_delay(w, 200)).collect();
        assert!(delays.iter().all(|d| *d < FIRST_SPREAD));
        // Spread: every 3 s bucket of the 30 s window gets some watches.
        for bucket in 0..10u64 {
            let lo = Duration::from_secs(bucket * 3);
            let hi = lo + Duration::from_secs(3);
            assert!(
                delays.iter().any(|d| *d >= lo && *d < hi),
                "no first refresh in {lo:?}..{hi:?}"
            );
        }
        // Stable across calls (and restarts).
        assert_eq!(first_delay(&config.watches[5], 200), delays[5]);
        // Short intervals spread within the interval.
        let mut short = config.watches[0].clone();
        short.interval = Duration::from_secs(1);
        assert!(first_delay(&short, 200) < Duration::from_secs(1));
    }
}
