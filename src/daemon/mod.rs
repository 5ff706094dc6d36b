//! The long-running daemon: the HTTP API, a scheduler that refreshes each watch on its own
//! interval, signals (SIGTERM/SIGINT drain, SIGHUP reload) and systemd notifications.
//!
//! Scheduling, in short (docs/reliability.md P19 and §3):
//! - one task per watch; its first refresh comes after a deterministic per-watch offset
//!   within `min(interval, 30 s)`, so watches are spread instead of firing together;
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

mod notify;
pub mod serve;

use crate::config::{Config, ConfigError, WatchConfig};
use crate::metrics::Metrics;
use crate::refresh::{refresh, Action, Outcome};
use crate::registry::{now_rfc3339, Registry, RegistryError, WatchState, WatchStatus};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinHandle;
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

/// Longest wait between retries of a failing watch (the backoff may exceed its interval).
pub const MAX_BACKOFF: Duration = Duration::from_secs(600);
/// The first retry after an error comes after about this long (jittered down to half).
pub const FIRST_BACKOFF: Duration = Duration::from_secs(5);
/// Time a refresh gets beyond its fetch timeout for normalizing, diffing and the registry.
pub const REGISTRY_MARGIN: Duration = Duration::from_secs(30);
/// The first refresh of a watch comes within `min(interval, FIRST_SPREAD)`.
pub const FIRST_SPREAD: Duration = Duration::from_secs(30);

/// A small PRNG for jitter (xorshift64*).
pub struct Jitter(u64);

impl Jitter {
    pub fn seeded(seed: u64) -> Jitter {
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9E37_79B9_7F4A_7C15);
        Jitter((seed ^ clock) | 1)
    }

    /// A fraction in [0, 1).
    pub fn fraction(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// FNV-1a of a watch name: a deterministic per-watch offset (stable across restarts).
/// FNV-1a alone leaves similar names (`ns.w1`, `ns.w2`) close in the high bits, so the
/// result goes through the splitmix64 finalizer.
fn name_hash(name: &str) -> u64 {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let z = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Delay before a watch's first refresh: a fixed fraction (from its name) of
/// `min(interval, FIRST_SPREAD)`.
pub fn first_delay(watch: &WatchConfig) -> Duration {
    let fraction = (name_hash(&watch.name) >> 11) as f64 / (1u64 << 53) as f64;
    watch.interval.min(FIRST_SPREAD).mul_f64(fraction)
}

/// Wait after a failed refresh: `min(interval, FIRST_BACKOFF) * 2^(failures-1)`, capped by
/// `MAX_BACKOFF` (not by the interval: a 1 s watch of a failing server backs off to minutes),
/// times a jitter factor in [0.5, 1).
pub fn backoff(failures: i64, interval: Duration, jitter: f64) -> Duration {
    let exponent = (failures.max(1) - 1).min(16) as u32;
    FIRST_BACKOFF
        .min(interval)
        .saturating_mul(1u32 << exponent)
        .min(MAX_BACKOFF)
        .mul_f64(0.5 + jitter.clamp(0.0, 1.0) / 2.0)
}

/// Wait after a successful refresh: the interval ± 10% (saturating: never a panic).
pub fn next_interval(interval: Duration, jitter: f64) -> Duration {
    Duration::try_from_secs_f64(interval.as_secs_f64() * (0.9 + jitter.clamp(0.0, 1.0) / 5.0))
        .unwrap_or(Duration::MAX)
}

/// Deadline arithmetic lives with the fetch layer, below every user of it (mcp included).
pub use crate::fetch::later;

/// State shared by the scheduler, the signal loop and the HTTP API.
pub struct Shared {
    config: RwLock<Arc<Config>>,
    pub metrics: Metrics,
    ready: AtomicBool,
    admin_token: RwLock<Option<String>>,
    /// Idle registry connections (a rusqlite connection is Send but not Sync: each refresh
    /// or API request takes one for itself).
    pool: Mutex<Vec<Registry>>,
    registry_path: PathBuf,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    semaphore: Arc<Semaphore>,
    permits: Mutex<usize>,
    /// Host header values accepted under `/v1` (DNS-rebinding protection).
    allowed_hosts: Vec<String>,
    /// (device, inode) of the registry file opened at startup: a file replaced or deleted under
    /// the daemon is never written to or re-created (docs/reliability.md H6).
    registry_identity: Option<(u64, u64)>,
    /// Set once the registry was found replaced or deleted: refreshes stop, not ready.
    registry_lost: AtomicBool,
}

fn file_identity(path: &std::path::Path) -> std::io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path)?;
    Ok((m.dev(), m.ino()))
}

/// The admin token: the variable's value with surrounding whitespace (a trailing newline from
/// a secret file or `echo`) trimmed, so it can match a header.
fn read_token(config: &Config) -> Option<String> {
    let var = config.server.admin_token_env.as_deref()?;
    std::env::var(var)
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// What the daemon refuses to run with: `admin_token_env` naming an unset or empty variable
/// (review actions would be silently disabled), and an API on every interface (`0.0.0.0`,
/// `[::]`) with no admin token configured.
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
    let unspecified = config
        .server
        .listen
        .parse::<SocketAddr>()
        .is_ok_and(|a| a.ip().is_unspecified());
    if unspecified && config.server.admin_token_env.is_none() {
        return Err(DaemonError::Refused(format!(
            "server.listen = {:?} serves the API on every interface without an admin token: set server.admin_token_env, or listen on loopback",
            config.server.listen
        )));
    }
    Ok(())
}

/// Host header values `/v1` accepts: the configured listen address, the bound address, and
/// when the API listens on loopback or on every interface, the loopback names with the port
/// (a DNS-rebinding page sends its own host name, never these).
fn allowed_hosts(listen: &str, bound: SocketAddr) -> Vec<String> {
    let mut hosts = vec![listen.to_string(), bound.to_string()];
    if bound.ip().is_loopback() || bound.ip().is_unspecified() {
        let port = bound.port();
        hosts.push(format!("localhost:{port}"));
        hosts.push(format!("127.0.0.1:{port}"));
        hosts.push(format!("[::1]:{port}"));
    }
    hosts.sort();
    hosts.dedup();
    hosts
}

impl Shared {
    pub fn new(config: Config, registry: Registry, bound: SocketAddr) -> Arc<Shared> {
        let permits = config.daemon.max_concurrency;
        let config_registry_path = config.storage.path.clone();
        Arc::new(Shared {
            admin_token: RwLock::new(read_token(&config)),
            allowed_hosts: allowed_hosts(&config.server.listen, bound),
            registry_path: config.storage.path.clone(),
            config: RwLock::new(Arc::new(config)),
            metrics: Metrics::new(),
            ready: AtomicBool::new(false),
            pool: Mutex::new(vec![registry]),
            locks: Mutex::new(HashMap::new()),
            semaphore: Arc::new(Semaphore::new(permits)),
            permits: Mutex::new(permits),
            registry_identity: file_identity(&config_registry_path).ok(),
            registry_lost: AtomicBool::new(false),
        })
    }

    /// Whether the registry file is still the one opened at startup. The first time it is not,
    /// logs an ERROR; from then on the daemon is not ready and refreshes do nothing.
    pub fn registry_intact(&self) -> Result<(), RegistryError> {
        let what = match (file_identity(&self.registry_path), self.registry_identity) {
            (Ok(now), Some(then)) if now == then => None,
            (Ok(_), Some(_)) => Some("replaced"),
            (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => Some("deleted"),
            // Unknown either way (a stat error): not evidence of a replacement.
            _ => None,
        };
        match what {
            None if !self.registry_lost.load(Ordering::SeqCst) => Ok(()),
            found => {
                let what = found.unwrap_or("replaced");
                let error = RegistryError::Replaced {
                    path: self.registry_path.display().to_string(),
                    what,
                };
                if !self.registry_lost.swap(true, Ordering::SeqCst) {
                    tracing::error!(event = "registry_replaced", registry = %self.registry_path.display(), what, error = %error);
                }
                Err(error)
            }
        }
    }

    /// The config in force now.
    pub fn config(&self) -> Arc<Config> {
        match self.config.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    fn set_config(&self, config: Config) {
        let token = read_token(&config);
        match self.config.write() {
            Ok(mut c) => *c = Arc::new(config),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(config),
        }
        match self.admin_token.write() {
            Ok(mut t) => *t = token,
            Err(poisoned) => *poisoned.into_inner() = token,
        }
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst) && self.registry_intact().is_ok()
    }

    /// The admin token, when one is configured and set in the environment.
    pub fn admin_token(&self) -> Option<String> {
        match self.admin_token.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    pub fn host_allowed(&self, host: &str) -> bool {
        self.allowed_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
    }

    /// Takes an idle registry connection, or opens a new one (never creating the file), once
    /// the file is checked to be the one opened at startup.
    pub fn take_registry(&self) -> Result<Registry, RegistryError> {
        self.registry_intact()?;
        let idle = match self.pool.lock() {
            Ok(mut p) => p.pop(),
            Err(poisoned) => poisoned.into_inner().pop(),
        };
        match idle {
            Some(r) => Ok(r),
            None => Registry::open_existing(&self.registry_path),
        }
    }

    /// Returns a connection to the pool (at most `max_concurrency + 2` are kept).
    pub fn give_back(&self, registry: Registry) {
        let cap = self.config().daemon.max_concurrency + 2;
        let mut pool = match self.pool.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        if pool.len() < cap {
            pool.push(registry);
        }
    }

    fn watch_lock(&self, name: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = match self.locks.lock() {
            Ok(l) => l,
            Err(poisoned) => poisoned.into_inner(),
        };
        locks.entry(name.to_string()).or_default().clone()
    }

    /// Waits for one of the `max_concurrency` refresh slots.
    pub async fn permit(&self) -> Option<OwnedSemaphorePermit> {
        self.semaphore.clone().acquire_owned().await.ok()
    }

    fn set_max_concurrency(&self, wanted: usize) {
        let mut permits = match self.permits.lock() {
            Ok(p) => p,
            Err(poisoned) => poisoned.into_inner(),
        };
        if wanted > *permits {
            self.semaphore.add_permits(wanted - *permits);
            *permits = wanted;
        } else if wanted < *permits {
            // Idle permits are forgotten now; the rest as in-flight refreshes return them.
            let excess = *permits - wanted;
            let forgotten = self.semaphore.forget_permits(excess);
            let semaphore = self.semaphore.clone();
            tokio::spawn(async move {
                for _ in forgotten..excess {
                    match semaphore.acquire().await {
                        Ok(permit) => permit.forget(),
                        Err(_) => return,
                    }
                }
            });
            *permits = wanted;
        }
    }

    /// Refreshes the registry-derived gauges (version, pending reviews).
    fn update_registry_gauges(&self, registry: &Registry) {
        if let Ok(v) = registry.registry_version() {
            self.metrics.registry_version.set(v);
        }
        if let Ok(open) = registry.reviews(true) {
            self.metrics.pending_reviews.set(open.len() as i64);
        }
    }

    /// One refresh of `watch`, holding `permit`, serialized with any other refresh of the
    /// same watch, within its deadline. `None` when the registry cannot be opened.
    pub async fn run_refresh(
        &self,
        watch: &WatchConfig,
        permit: OwnedSemaphorePermit,
    ) -> Option<Outcome> {
        let lock = self.watch_lock(&watch.name);
        let _serialized = lock.lock().await;
        let keep_versions = self.config().storage.keep_versions;
        let mut registry = match self.take_registry() {
            Ok(r) => r,
            Err(RegistryError::Replaced { .. }) => return None,
            Err(e) => {
                tracing::error!(event = "registry_unavailable", watch = %watch.name, error = %e);
                return None;
            }
        };
        let started = Instant::now();
        self.metrics.in_flight.inc();
        let deadline = watch.timeout.saturating_add(REGISTRY_MARGIN);
        let result =
            tokio::time::timeout(deadline, refresh(&mut registry, watch, keep_versions)).await;
        self.metrics.in_flight.dec();
        drop(permit);
        let seconds = started.elapsed().as_secs_f64();
        let outcome = match result {
            Ok(outcome) => {
                let failures = registry
                    .watch_state(&watch.name)
                    .ok()
                    .flatten()
                    .map_or(0, |s| s.consecutive_failures);
                self.metrics.record(&outcome, seconds, failures);
                outcome
            }
            Err(_elapsed) => {
                let message = format!(
                    "the refresh did not finish within its deadline of {}",
                    humantime::format_duration(deadline)
                );
                tracing::error!(event = "refresh_failed", watch = %watch.name, error = %message, class = "deadline");
                record_deadline(&mut registry, watch, &message);
                self.metrics.record_deadline(&watch.name, seconds);
                Outcome {
                    watch: watch.name.clone(),
                    action: Action::Error,
                    compatibility: None,
                    review_id: None,
                    error: Some(message),
                    report: None,
                    fetched_bytes: 0,
                    not_modified: false,
                    error_class: Some("deadline"),
                }
            }
        };
        self.update_registry_gauges(&registry);
        self.give_back(registry);
        Some(outcome)
    }

    /// The systemd STATUS= line: "12 watches, 1 pending review".
    pub fn status_line(&self) -> String {
        let watches = self.metrics.watches.get();
        let pending = self.metrics.pending_reviews.get();
        format!(
            "{watches} watch{}, {pending} pending review{}",
            if watches == 1 { "" } else { "es" },
            if pending == 1 { "" } else { "s" }
        )
    }
}

fn record_deadline(registry: &mut Registry, watch: &WatchConfig, message: &str) {
    let mut state = registry
        .watch_state(&watch.name)
        .ok()
        .flatten()
        .unwrap_or_else(|| WatchState {
            watch: watch.name.clone(),
            kind: watch.kind.as_str().into(),
            ..WatchState::default()
        });
    state.status = WatchStatus::Error;
    state.last_checked_at = Some(now_rfc3339());
    state.last_error = Some(message.to_string());
    state.consecutive_failures += 1;
    if let Err(e) = registry.record_watch(&state) {
        tracing::error!(event = "state_write_failed", watch = %watch.name, error = %e);
    }
}

/// The scheduling loop of one watch. Stops when `stop` turns true (before starting a new
/// refresh; an in-flight one finishes) or when its config sender is dropped.
async fn watch_task(
    shared: Arc<Shared>,
    mut config: watch::Receiver<Arc<WatchConfig>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut current = config.borrow_and_update().clone();
    let mut jitter = Jitter::seeded(name_hash(&current.name));
    let mut next = later(Instant::now(), first_delay(&current));
    loop {
        tokio::select! {
            _ = tokio::time::sleep_until(next) => {}
            changed = config.changed() => {
                if changed.is_err() {
                    return;
                }
                let new = config.borrow_and_update().clone();
                if new.interval < current.interval {
                    next = next.min(later(Instant::now(), next_interval(new.interval, jitter.fraction())));
                }
                current = new;
                continue;
            }
            _ = stop.wait_for(|s| *s) => return,
        }
        let permit = tokio::select! {
            p = shared.permit() => match p {
                Some(p) => p,
                None => return,
            },
            _ = stop.wait_for(|s| *s) => return,
        };
        let wait = match shared.run_refresh(&current, permit).await {
            Some(o) if o.action != Action::Error => {
                next_interval(current.interval, jitter.fraction())
            }
            _ => {
                let failures = shared
                    .take_registry()
                    .ok()
                    .map(|r| {
                        let f = r
                            .watch_state(&current.name)
                            .ok()
                            .flatten()
                            .map_or(1, |s| s.consecutive_failures);
                        shared.give_back(r);
                        f
                    })
                    .unwrap_or(1);
                backoff(failures, current.interval, jitter.fraction())
            }
        };
        next = later(Instant::now(), wait);
    }
}

struct WatchTask {
    config: watch::Sender<Arc<WatchConfig>>,
    handle: JoinHandle<()>,
}

fn spawn_watch(
    shared: &Arc<Shared>,
    watch: &WatchConfig,
    stop: &watch::Receiver<bool>,
) -> WatchTask {
    let (tx, rx) = watch::channel(Arc::new(watch.clone()));
    let handle = tokio::spawn(watch_task(shared.clone(), rx, stop.clone()));
    WatchTask { config: tx, handle }
}

/// Reads the config again (SIGHUP). A valid config adds, removes and changes watches in
/// place; an invalid one is logged and the running config stays.
fn reload(
    shared: &Arc<Shared>,
    tasks: &mut BTreeMap<String, WatchTask>,
    stop: &watch::Receiver<bool>,
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
    let old = shared.config();
    if new.storage.path != old.storage.path {
        tracing::warn!(
            event = "config_needs_restart",
            key = "storage.path",
            "storage.path changed; the daemon keeps the registry it opened until it is restarted"
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
    let (mut added, mut changed, mut removed) = (0, 0, 0);
    tasks.retain(|name, task| {
        if new.watch(name).is_some() {
            true
        } else {
            task.handle.abort();
            shared.metrics.forget_watch(name);
            removed += 1;
            false
        }
    });
    for w in &new.watches {
        match tasks.get(&w.name) {
            Some(task) => {
                task.config.send_replace(Arc::new(w.clone()));
                changed += 1;
            }
            None => {
                shared.metrics.set_status(&w.name, WatchStatus::Idle);
                tasks.insert(w.name.clone(), spawn_watch(shared, w, stop));
                added += 1;
            }
        }
    }
    shared.metrics.watches.set(new.watches.len() as i64);
    shared.set_config(new);
    tracing::info!(
        event = "config_reloaded",
        watches = tasks.len(),
        added,
        removed,
        kept = changed,
        millis = started.elapsed().as_millis() as u64
    );
    Ok(())
}

/// Runs until SIGTERM/SIGINT: binds the API, starts the scheduler, handles SIGHUP.
pub async fn run(config: Config) -> Result<(), DaemonError> {
    use tokio::signal::unix::{signal, SignalKind};
    // Our own handlers, first: as PID 1 in a container, unhandled signals are ignored
    // (docs/reliability.md P17).
    let mut term = signal(SignalKind::terminate()).map_err(DaemonError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(DaemonError::Signal)?;
    let mut hup = signal(SignalKind::hangup()).map_err(DaemonError::Signal)?;

    check_startup(&config)?;
    // As PID 1 (a container) or as subreaper, every orphan of an MCP server's descendants is
    // re-parented to us: reap them (docs/reliability.md H1).
    crate::process::become_subreaper();
    crate::process::spawn_reaper();

    let mut registry = Registry::open_or_create(&config.storage.path, config.storage.create)?;
    // File identities of older releases, stored relative (docs/reliability.md H10).
    crate::refresh::migrate_identities(&mut registry, &config)?;
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
    let watches = config.watches.clone();
    let shared = Shared::new(config, registry, bound);
    let states = match shared.take_registry() {
        Ok(r) => {
            let states = r.watch_states().unwrap_or_default();
            shared.update_registry_gauges(&r);
            shared.give_back(r);
            states
        }
        Err(_) => Vec::new(),
    };
    for w in &watches {
        let status = states
            .iter()
            .find(|s| s.watch == w.name)
            .map_or(WatchStatus::Idle, |s| s.status);
        shared.metrics.set_status(&w.name, status);
    }
    shared.metrics.watches.set(watches.len() as i64);
    shared.metrics.record_reload(true);

    let (api_stop_tx, api_stop_rx) = tokio::sync::oneshot::channel::<()>();
    let app = crate::api::router(shared.clone());
    let slots = shared.config().daemon.max_concurrency;
    let server = tokio::spawn(serve::serve(listener, app, slots, api_stop_rx));
    tracing::info!(event = "api_listening", addr = %bound);

    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks: BTreeMap<String, WatchTask> = watches
        .iter()
        .map(|w| (w.name.clone(), spawn_watch(&shared, w, &stop_rx)))
        .collect();
    shared.ready.store(true, Ordering::SeqCst);
    tracing::info!(event = "daemon_started", watches = watches.len(), registry = %shared.registry_path.display(), api = %bound);
    notify::ready(&shared.status_line());

    let watchdog = notify::watchdog_interval();
    let mut tick = tokio::time::interval(watchdog.unwrap_or(Duration::from_secs(10)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let which = loop {
        tokio::select! {
            _ = term.recv() => break "SIGTERM",
            _ = int.recv() => break "SIGINT",
            _ = hup.recv() => {
                notify::reloading();
                match reload(&shared, &mut tasks, &stop_rx, &path) {
                    Ok(()) => shared.metrics.record_reload(true),
                    Err(e) => {
                        shared.metrics.record_reload(false);
                        tracing::error!(event = "config_reload_failed", error = %e, "keeping the running config");
                    }
                }
                notify::ready(&shared.status_line());
            }
            _ = tick.tick() => {
                // From this loop, not a separate timer: a wedged loop stops the watchdog.
                if watchdog.is_some() {
                    notify::watchdog();
                }
                notify::status(&shared.status_line());
            }
        }
    };

    // Drain: no new refreshes; in-flight ones get until the deadline.
    shared.ready.store(false, Ordering::SeqCst);
    notify::stopping();
    let _ = stop_tx.send(true);
    let in_flight = shared.metrics.in_flight.get();
    tracing::info!(event = "daemon_draining", signal = which, in_flight, drain_timeout = %humantime::format_duration(drain_timeout));
    let deadline = later(Instant::now(), drain_timeout);
    let mut abandoned = 0usize;
    let mut forced = false;
    for (name, task) in tasks.iter_mut() {
        if forced {
            task.handle.abort();
            continue;
        }
        tokio::select! {
            r = tokio::time::timeout_at(deadline, &mut task.handle) => {
                if r.is_err() {
                    task.handle.abort();
                    abandoned += 1;
                    tracing::warn!(event = "refresh_abandoned", watch = %name);
                }
            }
            _ = term.recv() => { forced = true; task.handle.abort(); }
            _ = int.recv() => { forced = true; task.handle.abort(); }
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
    let server_abort = server.abort_handle();
    if tokio::time::timeout(api_grace, server).await.is_err() {
        server_abort.abort();
    }
    tracing::info!(event = "daemon_stopped", signal = which, abandoned, forced);
    Ok(())
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
        let delays: Vec<Duration> = config.watches.iter().map(first_delay).collect();
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
        assert_eq!(first_delay(&config.watches[5]), delays[5]);
        // Short intervals spread within the interval.
        let mut short = config.watches[0].clone();
        short.interval = Duration::from_secs(1);
        assert!(first_delay(&short) < Duration::from_secs(1));
    }

    #[test]
    fn allowed_hosts_cover_the_listen_address_and_localhost() {
        let bound: SocketAddr = "127.0.0.1:9477".parse().unwrap();
        let hosts = allowed_hosts("127.0.0.1:9477", bound);
        assert!(hosts.contains(&"127.0.0.1:9477".to_string()));
        assert!(hosts.contains(&"localhost:9477".to_string()));
        assert!(!hosts.iter().any(|h| h.contains("evil")));
        let pod: SocketAddr = "10.1.2.3:9477".parse().unwrap();
        assert_eq!(allowed_hosts("10.1.2.3:9477", pod), vec!["10.1.2.3:9477"]);
        let any: SocketAddr = "0.0.0.0:9477".parse().unwrap();
        let hosts = allowed_hosts("0.0.0.0:9477", any);
        assert!(hosts.contains(&"127.0.0.1:9477".to_string()));
        assert!(!hosts.contains(&"10.1.2.3:9477".to_string()));
    }

    #[tokio::test]
    async fn max_concurrency_shrinks_and_grows_on_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let config = Config::parse(&path, "[daemon]\nmax_concurrency = 4\n").unwrap();
        let registry = Registry::open(&config.storage.path).unwrap();
        let shared = Shared::new(config, registry, "127.0.0.1:9".parse().unwrap());
        let held: Vec<_> = futures_take(&shared, 3).await;
        assert_eq!(shared.semaphore.available_permits(), 1);
        shared.set_max_concurrency(2);
        // One idle permit was forgotten at once; one more as the held ones come back.
        assert_eq!(shared.semaphore.available_permits(), 0);
        drop(held);
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(shared.semaphore.available_permits(), 2);
        shared.set_max_concurrency(5);
        assert_eq!(shared.semaphore.available_permits(), 5);
    }

    async fn futures_take(shared: &Shared, n: usize) -> Vec<OwnedSemaphorePermit> {
        let mut permits = Vec::new();
        for _ in 0..n {
            permits.push(shared.permit().await.unwrap());
        }
        permits
    }
}
