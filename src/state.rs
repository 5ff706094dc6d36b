//! The daemon's state, shared by the scheduler, the signal loop and the HTTP API: the config
//! in force, pooled registry connections, refresh slots, and what the daemon knows of every
//! configured watch without asking the registry (status, when it is due, its error streak).
//!
//! The per-status counts (`watches_by_status`, `/v1/summary`) move on each refresh's outcome
//! and are recounted from the registry when it changed under the daemon (its change
//! token, `Registry::change_token`: a CLI `pending accept`, `watch reset`, a cron `check`), never recomputed
//! per refresh.

use crate::config::{Config, WatchConfig};
use crate::metrics::Metrics;
use crate::refresh::{refresh_deferring, Action, Outcome};
use crate::registry::{Registry, RegistryError, WatchState, WatchStatus};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// Time a refresh gets beyond its fetch timeout for normalizing, diffing and the registry.
pub const REGISTRY_MARGIN: Duration = Duration::from_secs(30);

/// `due_ms` of a watch being refreshed now (or not yet scheduled): never overdue.
const NOT_DUE: u64 = u64::MAX;

/// What the daemon knows of one configured watch.
struct WatchCell {
    /// Index into `WatchStatus::ALL`.
    status: AtomicU8,
    /// When the next refresh is due, in milliseconds since `Shared::epoch`.
    due_ms: AtomicU64,
    interval_ms: AtomicU64,
    /// Failed refreshes in a row (the log streak; the backoff reads the registry's).
    failures: AtomicI64,
}

fn status_index(status: WatchStatus) -> u8 {
    WatchStatus::ALL
        .iter()
        .position(|s| *s == status)
        .unwrap_or(0) as u8
}

fn status_at(index: u8) -> WatchStatus {
    WatchStatus::ALL
        .get(usize::from(index))
        .copied()
        .unwrap_or_default()
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Whether the `failures`-th error in a row is logged at WARN: the first of a streak, then
/// every `every` (1, 1 + every, 1 + 2 × every, …); the others go to DEBUG.
pub fn warn_this_failure(failures: i64, every: u32) -> bool {
    let every = i64::from(every.max(1));
    failures <= 1 || (failures - 1) % every == 0
}

/// State shared by the scheduler, the signal loop and the HTTP API.
pub struct Shared {
    config: RwLock<Arc<Config>>,
    pub metrics: Metrics,
    ready: AtomicBool,
    admin_token: RwLock<Option<String>>,
    /// Idle registry connections (a rusqlite connection is Send but not Sync: each refresh
    /// or API request takes one for itself).
    pool: Mutex<Vec<Registry>>,
    /// PostgreSQL: the bounded pool of sessions every refresh and request takes one from
    /// (`[storage] pool_size` at most open at once, the recount's own session beside them);
    /// `pool` stays empty.
    sessions: Option<crate::registry::Pool>,
    /// Where the registry the daemon opened is (`[storage] path` or `url`).
    registry_location: crate::registry::Location,
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    semaphore: Arc<Semaphore>,
    permits: Mutex<usize>,
    /// Host header values accepted under `/v1` (DNS-rebinding protection).
    allowed_hosts: Vec<String>,
    /// The registry file opened at startup: one replaced or deleted under the daemon is never
    /// written to or re-created (docs/reliability.md H6). `None` on PostgreSQL (whether the
    /// database still holds the registry opened is not checked here yet).
    opened: Option<crate::registry::Opened>,
    /// Set once the registry was found replaced or deleted: refreshes stop, not ready.
    registry_lost: AtomicBool,
    /// PostgreSQL: the registry id (`registry_meta`) of the database opened at startup, and
    /// what the recount found when that database no longer holds it ("is this still the
    /// registry I opened", the file identity's twin).
    registry_id: Option<String>,
    database_lost: Mutex<Option<&'static str>>,
    /// The configured watches, by name.
    cells: RwLock<HashMap<String, Arc<WatchCell>>>,
    /// Serializes status moves, so counts and per-watch series match the cells.
    moving: Mutex<()>,
    /// The origin of `WatchCell::due_ms`.
    epoch: Instant,
    /// A connection that watches the registry's change token, and the token last recounted at
    /// (`None`: recount at the next look).
    observer: Mutex<(Option<Registry>, Option<crate::registry::ChangeToken>)>,
    /// Bookkeeping waiting for the group commit ([`Shared::flush_checked`]): watch → the
    /// `last_checked_at` of its latest 304 that changed nothing else.
    checked: Mutex<HashMap<String, String>>,
    /// Wakes the delivery task: an event this process committed, or another process's write
    /// seen through the change token.
    pub deliveries_wake: Arc<tokio::sync::Notify>,
    /// Each watch's approaching sunsets as of its last refresh (only watches with some).
    sunsets_approaching: Mutex<HashMap<String, i64>>,
    /// Whether the registry held any sunset fact at the last recount (or since): see
    /// [`Shared::check_sunsets`]. True until first asked.
    sunsets_stored: AtomicBool,
    /// The last refresh (or connection) failed on the registry itself (class `registry`: a
    /// full disk, a database away): `/readyz` says not ready until one gets through.
    registry_failing: AtomicBool,
    /// Where `POST /v1/watches/{name}/refresh` queues a refresh (set by the daemon's loop).
    refresh_requests: Mutex<Option<tokio::sync::mpsc::Sender<RefreshRequest>>>,
    /// `[server] read_token_env` and `refresh_token_env` values (trimmed).
    read_token: RwLock<Option<String>>,
    refresh_token: RwLock<Option<String>>,
    /// Whether the API is reachable beyond loopback (then `/v1` reads need a token).
    exposed: bool,
}

/// A refresh asked for on demand, and where its answer goes.
pub struct RefreshRequest {
    pub watch: String,
    pub reply: tokio::sync::oneshot::Sender<OnDemand>,
}

/// How the scheduler took an on-demand refresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDemand {
    /// Due now (or right after the refresh running now); N asks while queued give one refresh.
    Queued,
    /// The scheduler does not know the watch.
    Unknown,
}

/// The admin token: the variable's value with surrounding whitespace (a trailing newline from
/// a secret file or `echo`) trimmed, so it can match a header.
pub(crate) fn read_token(config: &Config) -> Option<String> {
    token_of(config.server.admin_token_env.as_deref())
}

/// The value of the token variable `var` (trimmed), when set and not empty.
pub(crate) fn token_of(var: Option<&str>) -> Option<String> {
    std::env::var(var?)
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// Host header values `/v1` accepts: the configured listen address, the bound address, and
/// when the API listens on loopback or on every interface, the loopback names with the port
/// (a DNS-rebinding page sends its own host name, never these).
fn allowed_hosts(listen: &str, bound: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut hosts = vec![listen.to_string(), bound.to_string()];
    hosts.extend(extra.iter().cloned());
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
        let location = config.storage.location.clone();
        let per_watch = config
            .server
            .per_watch_metrics
            .enabled(config.watches.len());
        // On PostgreSQL opened by the first recount instead, off the async thread (its
        // client blocks on the network).
        let observer = location
            .sqlite_path()
            .and_then(|_| Registry::open_pooled_at(&location).ok());
        let sessions = location.pool();
        let registry_id = sessions
            .as_ref()
            .and_then(|_| registry.registry_id().ok())
            .map(|(id, _)| id);
        Arc::new(Shared {
            metrics: Metrics::new(per_watch),
            cells: RwLock::new(HashMap::new()),
            moving: Mutex::new(()),
            epoch: Instant::now(),
            observer: Mutex::new((observer, None)),
            checked: Mutex::new(HashMap::new()),
            admin_token: RwLock::new(read_token(&config)),
            read_token: RwLock::new(token_of(config.server.read_token_env.as_deref())),
            refresh_token: RwLock::new(token_of(config.server.refresh_token_env.as_deref())),
            deliveries_wake: Arc::new(tokio::sync::Notify::new()),
            sunsets_approaching: Mutex::new(HashMap::new()),
            sunsets_stored: AtomicBool::new(true),
            registry_failing: AtomicBool::new(false),
            refresh_requests: Mutex::new(None),
            exposed: !bound.ip().is_loopback(),
            allowed_hosts: allowed_hosts(
                &config.server.listen,
                bound,
                &config.server.allowed_hosts,
            ),
            config: RwLock::new(Arc::new(config)),
            ready: AtomicBool::new(false),
            // On PostgreSQL the startup session is closed: the pool opens its own.
            pool: Mutex::new(if sessions.is_none() {
                vec![registry]
            } else {
                Vec::new()
            }),
            sessions,
            locks: Mutex::new(HashMap::new()),
            semaphore: Arc::new(Semaphore::new(permits)),
            permits: Mutex::new(permits),
            opened: location.sqlite_path().map(crate::registry::Opened::at),
            registry_location: location,
            registry_lost: AtomicBool::new(false),
            registry_id,
            database_lost: Mutex::new(None),
        })
    }

    /// Whether the registry file is still the one opened at startup. The first time it is not,
    /// logs an ERROR; from then on the daemon is not ready and refreshes do nothing.
    pub fn registry_intact(&self) -> Result<(), RegistryError> {
        let what = self
            .opened
            .as_ref()
            .and_then(crate::registry::Opened::lost)
            .map(crate::registry::Lost::as_str)
            .or_else(|| match self.database_lost.lock() {
                Ok(found) => *found,
                Err(poisoned) => *poisoned.into_inner(),
            });
        match what {
            None if !self.registry_lost.load(Ordering::SeqCst) => Ok(()),
            found => {
                let what = found.unwrap_or("replaced");
                let error = RegistryError::Replaced {
                    path: self.registry_location.to_string(),
                    what,
                };
                if !self.registry_lost.swap(true, Ordering::SeqCst) {
                    tracing::error!(event = "registry_replaced", registry = %self.registry_location, what, error = %error);
                    // Not durable: the registry that would hold the event is gone.
                    if let Ok(handle) = tokio::runtime::Handle::try_current() {
                        let config = self.config();
                        handle.spawn(async move {
                            crate::notify::send_volatile(
                                &config,
                                crate::core::event::EventKind::RegistryReplaced,
                                crate::core::event::EventData::default(),
                            )
                            .await;
                        });
                    }
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

    /// Puts `config` in force (the scheduler holds the same `Arc`).
    pub(crate) fn set_config_arc(&self, config: Arc<Config>) {
        let token = read_token(&config);
        crate::registry::set_process_routes(Arc::new(config.routes()));
        let read = token_of(config.server.read_token_env.as_deref());
        let refresh = token_of(config.server.refresh_token_env.as_deref());
        for (lock, value) in [(&self.read_token, read), (&self.refresh_token, refresh)] {
            match lock.write() {
                Ok(mut t) => *t = value,
                Err(poisoned) => *poisoned.into_inner() = value,
            }
        }
        match self.config.write() {
            Ok(mut c) => *c = config,
            Err(poisoned) => *poisoned.into_inner() = config,
        }
        match self.admin_token.write() {
            Ok(mut t) => *t = token,
            Err(poisoned) => *poisoned.into_inner() = token,
        }
    }

    pub(crate) fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::SeqCst);
    }

    /// Where the registry the daemon opened is.
    pub fn registry_location(&self) -> &crate::registry::Location {
        &self.registry_location
    }

    pub fn is_ready(&self) -> bool {
        self.ready.load(Ordering::SeqCst)
            && self.registry_intact().is_ok()
            && !self.registry_failing.load(Ordering::SeqCst)
    }

    /// Records whether the registry answered the last refresh, logging the change either
    /// way once (`registry_failing` at ERROR, `registry_recovered` at INFO).
    fn set_registry_failing(&self, failing: bool, error: Option<&str>) {
        let was = self.registry_failing.swap(failing, Ordering::SeqCst);
        if failing && !was {
            tracing::error!(event = "registry_failing", error = error.unwrap_or(""),
                "the registry refuses reads or writes: refreshes keep their status and backoff in memory, /readyz says not ready");
        } else if !failing && was {
            tracing::info!(
                event = "registry_recovered",
                "the registry answers again: /readyz says ready"
            );
        }
    }

    /// The admin token, when one is configured and set in the environment.
    pub fn admin_token(&self) -> Option<String> {
        match self.admin_token.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The `read_token_env` token, when configured and set.
    pub fn read_token(&self) -> Option<String> {
        match self.read_token.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// The `refresh_token_env` token, when configured and set.
    pub fn refresh_token(&self) -> Option<String> {
        match self.refresh_token.read() {
            Ok(t) => t.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Whether the API is reachable beyond loopback.
    pub fn exposed(&self) -> bool {
        self.exposed
    }

    /// The daemon's loop takes on-demand refreshes from here.
    pub(crate) fn set_refresh_requests(&self, tx: tokio::sync::mpsc::Sender<RefreshRequest>) {
        match self.refresh_requests.lock() {
            Ok(mut r) => *r = Some(tx),
            Err(poisoned) => *poisoned.into_inner() = Some(tx),
        }
    }

    /// Queues an on-demand refresh of `watch`; `None` while no scheduler takes requests
    /// (starting or draining).
    pub async fn request_refresh(&self, watch: &str) -> Option<OnDemand> {
        let tx = match self.refresh_requests.lock() {
            Ok(r) => r.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }?;
        let (reply, answer) = tokio::sync::oneshot::channel();
        tx.send(RefreshRequest {
            watch: watch.to_string(),
            reply,
        })
        .await
        .ok()?;
        answer.await.ok()
    }

    /// The stored status of a configured watch, from memory.
    pub fn watch_status(&self, name: &str) -> Option<WatchStatus> {
        self.cell(name)
            .map(|c| status_at(c.status.load(Ordering::SeqCst)))
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
        if let Some(sessions) = &self.sessions {
            return Registry::from_pool(sessions);
        }
        let idle = match self.pool.lock() {
            Ok(mut p) => p.pop(),
            Err(poisoned) => poisoned.into_inner().pop(),
        };
        match idle {
            Some(r) => Ok(r),
            // The first connection ran `quick_check` and the migrations (once per process).
            None => Registry::open_pooled_at(&self.registry_location),
        }
    }

    /// Returns a connection to the pool (at most `max_concurrency + 2` are kept).
    /// Runs `work` on the blocking pool with a pooled registry connection, given back after.
    /// The outer `Err` only when the task itself failed (a panic).
    pub async fn on_registry<T, E, F>(
        self: &Arc<Self>,
        work: F,
    ) -> Result<Result<T, E>, tokio::task::JoinError>
    where
        T: Send + 'static,
        E: From<RegistryError> + Send + 'static,
        F: FnOnce(&mut Registry, &Config) -> Result<T, E> + Send + 'static,
    {
        let shared = self.clone();
        tokio::task::spawn_blocking(move || {
            let mut registry = shared.take_registry()?;
            let config = shared.config();
            let result = work(&mut registry, &config);
            shared.give_back(registry);
            result
        })
        .await
    }

    pub fn give_back(&self, registry: Registry) {
        // A PostgreSQL session the server closed (a restart, a lost host) is never reused:
        // the next refresh opens a new one, so the daemon recovers without a restart.
        // A pooled PostgreSQL session goes back to its pool as the registry is dropped (one
        // the server closed is dropped by the pool, so the daemon recovers without a restart).
        if self.sessions.is_some() {
            return;
        }
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
        if let Some(lock) = locks.get(name) {
            return lock.clone();
        }
        locks.entry(name.to_string()).or_default().clone()
    }

    /// Group-commits the deferred bookkeeping (every second, and at the end of a drain): one
    /// transaction; a newer stored `last_checked_at` is never overwritten. Blocking: call
    /// off the async threads. Returns how many watches it wrote.
    pub fn flush_checked(&self) -> usize {
        let batch: Vec<(String, String)> = {
            let mut checked = match self.checked.lock() {
                Ok(c) => c,
                Err(poisoned) => poisoned.into_inner(),
            };
            if checked.is_empty() {
                return 0;
            }
            std::mem::take(&mut *checked).into_iter().collect()
        };
        let written = self.take_registry().and_then(|mut r| {
            let n = r.flush_checked(&batch);
            self.give_back(r);
            n
        });
        match written {
            Ok(n) => n,
            Err(e) => {
                tracing::error!(event = "state_write_failed", watches = batch.len(), error = %e);
                // Kept for the next flush, unless a newer time arrived meanwhile.
                let mut checked = match self.checked.lock() {
                    Ok(c) => c,
                    Err(poisoned) => poisoned.into_inner(),
                };
                for (watch, at) in batch {
                    checked.entry(watch).or_insert(at);
                }
                0
            }
        }
    }

    fn defer_checked(&self, watch: &str, at: String) {
        let mut checked = match self.checked.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        match checked.get_mut(watch) {
            Some(t) => *t = at,
            None => {
                checked.insert(watch.to_string(), at);
            }
        }
    }

    /// The refresh slots (the scheduler waits on them too).
    pub(crate) fn semaphore(&self) -> Arc<Semaphore> {
        self.semaphore.clone()
    }

    /// Waits for one of the `max_concurrency` refresh slots.
    pub async fn permit(&self) -> Option<OwnedSemaphorePermit> {
        self.semaphore.clone().acquire_owned().await.ok()
    }

    pub(crate) fn set_max_concurrency(&self, wanted: usize) {
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

    /// Sets the registry-derived gauges (version, open reviews): two small queries.
    pub fn update_registry_gauges(&self, registry: &Registry) {
        if let Ok(v) = registry.registry_version() {
            self.metrics.registry_version.set(v);
        }
        if let Ok(open) = registry.open_review_count() {
            self.metrics.pending_reviews.set(open);
        }
        if let Ok(oldest) = registry.oldest_open_review() {
            let seconds = oldest
                .and_then(|t| humantime::parse_rfc3339_weak(&t).ok())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0.0, |d| d.as_secs_f64());
            self.metrics.oldest_pending_review.set(seconds);
        }
    }

    /// Raises `sunset_approaching` (a WARN line and an event, once per watch, endpoint and
    /// date: the registry remembers) for every in-scope accepted sunset of `watch` within its
    /// `sunset_warning` of today, after a refresh of it, and keeps the `sunsets_approaching`
    /// gauge: the sum of each watch's count as of its last refresh. One indexed read of the
    /// watch's facts, one write per new alert: a refresh's cost does not grow with the
    /// number of watches.
    ///
    /// While the registry holds no fact at all (the common case), a refresh that moved no
    /// contract (`moved` false: unchanged, failed) reads nothing: the 304 path stays as cheap
    /// as before. The recount ([`Shared::recount_if_changed`]) notices facts another process
    /// stored.
    pub fn check_sunsets(&self, registry: &mut Registry, watch: &WatchConfig, moved: bool) {
        if !moved && !self.sunsets_stored.load(Ordering::SeqCst) {
            self.set_sunsets_approaching(&watch.name, 0);
            return;
        }
        let facts = match registry.sunsets_of(&watch.name) {
            Ok(facts) => facts,
            Err(e) => {
                tracing::error!(event = "registry_unavailable", watch = %watch.name, error = %e, "cannot read the stored sunsets");
                return;
            }
        };
        if !facts.is_empty() {
            self.sunsets_stored.store(true, Ordering::SeqCst);
        }
        let today = crate::refresh::today();
        let approaching = crate::refresh::sunsets::approaching(watch, &facts, today);
        let mut raised = false;
        for fact in &approaching {
            match registry.raise_sunset_alert(fact, watch.kind.as_str()) {
                Ok(true) => {
                    raised = true;
                    tracing::warn!(event = "sunset_approaching", watch = %watch.name,
                        endpoint = %fact.endpoint, sunset = fact.sunset.as_deref().unwrap_or(""),
                        "an endpoint in use reaches its sunset date soon");
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(event = "registry_unavailable", watch = %watch.name, error = %e,
                        "cannot record a sunset alert");
                }
            }
        }
        self.set_sunsets_approaching(&watch.name, approaching.len() as i64);
        if raised {
            self.deliveries_wake.notify_one();
        }
    }

    /// Records `watch`'s count of approaching sunsets and sets the gauge to the sum. Only
    /// watches with some are kept (few), so the sum is cheap; a removed watch's count goes
    /// with it at the reload ([`Shared::set_watches`]).
    fn set_sunsets_approaching(&self, watch: &str, count: i64) {
        let mut counts = match self.sunsets_approaching.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        if count > 0 {
            counts.insert(watch.to_string(), count);
        } else if counts.remove(watch).is_none() {
            return;
        }
        self.metrics.sunsets_approaching.set(counts.values().sum());
    }

    /// One refresh of `watch`, holding `permit`, serialized with any other refresh of the
    /// same watch, within its deadline. `None` when the registry cannot be opened.
    pub async fn run_refresh(
        &self,
        watch: &WatchConfig,
        permit: OwnedSemaphorePermit,
    ) -> Option<Outcome> {
        self.run_refresh_counted(watch, permit)
            .await
            .map(|(o, _)| o)
    }

    /// [`Shared::run_refresh`], also answering the watch's errors in a row (for the backoff).
    pub async fn run_refresh_counted(
        &self,
        watch: &WatchConfig,
        permit: OwnedSemaphorePermit,
    ) -> Option<(Outcome, i64)> {
        let lock = self.watch_lock(&watch.name);
        let _serialized = lock.lock().await;
        let keep_versions = self.config().storage.keep_versions;
        let mut registry = match self.take_registry() {
            Ok(r) => r,
            Err(RegistryError::Replaced { .. }) => return None,
            Err(e) => {
                tracing::error!(event = "registry_unavailable", watch = %watch.name, error = %e);
                self.set_registry_failing(true, Some(&e.to_string()));
                // No connection (a PostgreSQL server down): a failure of class `registry`,
                // its streak kept in memory so the backoff grows until the database answers.
                let failures = self
                    .cell(&watch.name)
                    .map_or(0, |c| c.failures.load(Ordering::SeqCst))
                    + 1;
                let outcome = Outcome::registry_unavailable(&watch.name, e.to_string());
                self.metrics
                    .record(watch.kind.as_str(), &outcome, 0.0, failures);
                self.log_streak(&outcome, failures);
                self.set_status(&watch.name, outcome.action.status());
                return Some((outcome, failures));
            }
        };
        let started = Instant::now();
        self.metrics.in_flight.inc();
        let deadline = watch.timeout.saturating_add(REGISTRY_MARGIN);
        let result = tokio::time::timeout(
            deadline,
            refresh_deferring(&mut registry, watch, keep_versions),
        )
        .await;
        self.metrics.in_flight.dec();
        drop(permit);
        let seconds = started.elapsed().as_secs_f64();
        let kind = watch.kind.as_str();
        let outcome = match result {
            Ok(outcome) => outcome,
            Err(_elapsed) => {
                let message = format!(
                    "the refresh did not finish within its deadline of {}",
                    humantime::format_duration(deadline)
                );
                let outcome = crate::refresh::failed(
                    &mut registry,
                    watch,
                    message,
                    crate::core::event::ErrorClass::Deadline,
                );
                self.metrics.record_deadline(kind, &watch.name, seconds);
                outcome
            }
        };
        let mut failures = outcome.consecutive_failures;
        if outcome.error_class == Some(crate::core::event::ErrorClass::Registry) {
            // The streak the registry could not read or store is kept in memory, so the
            // backoff still grows while it is down; the state is written once it answers.
            let before = self
                .cell(&watch.name)
                .map_or(0, |c| c.failures.load(Ordering::SeqCst));
            failures = failures.max(before + 1);
            self.set_registry_failing(true, outcome.error.as_deref());
        } else {
            self.set_registry_failing(false, None);
        }
        if let Some(at) = outcome.checked_at_deferred.clone() {
            self.defer_checked(&watch.name, at);
        }
        if outcome.error_class != Some(crate::core::event::ErrorClass::Deadline) {
            self.metrics.record(kind, &outcome, seconds, failures);
        }
        self.log_streak(&outcome, failures);
        self.set_status(&watch.name, outcome.action.status());
        // Unchanged and failed cycles leave contract state and reviews alone (a review that
        // an unchanged cycle supersedes is caught by the change-token recount).
        if !matches!(outcome.action, Action::Unchanged | Action::Error) {
            self.update_registry_gauges(&registry);
        }
        let moved = !matches!(outcome.action, Action::Unchanged | Action::Error);
        self.check_sunsets(&mut registry, watch, moved);
        // An event may have been written with this cycle (a failure streak's too).
        if outcome.action != Action::Unchanged || failures > 0 {
            self.deliveries_wake.notify_one();
        }
        self.give_back(registry);
        Some((outcome, failures))
    }

    /// Logs a failure at WARN for the first of a streak and every `error_log_every` after
    /// (else DEBUG), and the end of a streak at INFO (`watch_recovered`).
    fn log_streak(&self, outcome: &Outcome, failures: i64) {
        let before = self
            .cell(&outcome.watch)
            .map(|c| c.failures.swap(failures, Ordering::SeqCst));
        if outcome.action == Action::Error {
            let error = outcome.error.as_deref().unwrap_or("");
            let class = outcome
                .error_class
                .unwrap_or(crate::core::event::ErrorClass::Fetch)
                .as_str();
            if warn_this_failure(failures, self.config().daemon.error_log_every) {
                tracing::warn!(event = "refresh_failed", watch = %outcome.watch, error = %error, class, consecutive_failures = failures);
            } else {
                tracing::debug!(event = "refresh_failed", watch = %outcome.watch, error = %error, class, consecutive_failures = failures);
            }
        } else if let Some(before) = before.filter(|b| *b > 0) {
            tracing::info!(event = "watch_recovered", watch = %outcome.watch, failures = before, action = outcome.action.as_str());
        }
    }

    fn cell(&self, name: &str) -> Option<Arc<WatchCell>> {
        let cells = match self.cells.read() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        cells.get(name).cloned()
    }

    /// Moves a configured watch to `status` (counts and per-watch series follow).
    pub fn set_status(&self, name: &str, status: WatchStatus) {
        let Some(cell) = self.cell(name) else { return };
        let _moving = match self.moving.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let old = status_at(cell.status.swap(status_index(status), Ordering::SeqCst));
        self.metrics.move_status(name, Some(old), Some(status));
    }

    /// Makes the configured watches `watches`: new ones start with their stored status (or
    /// idle), removed ones leave the counts and the metrics; the `watches` gauge follows.
    pub fn set_watches(&self, watches: &[WatchConfig], states: &HashMap<String, WatchState>) {
        let _moving = match self.moving.lock() {
            Ok(m) => m,
            Err(poisoned) => poisoned.into_inner(),
        };
        let mut cells = match self.cells.write() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        let wanted: HashMap<&str, &WatchConfig> =
            watches.iter().map(|w| (w.name.as_str(), w)).collect();
        if let Ok(mut counts) = self.sunsets_approaching.lock() {
            let before = counts.len();
            counts.retain(|name, _| wanted.contains_key(name.as_str()));
            if counts.len() != before {
                self.metrics.sunsets_approaching.set(counts.values().sum());
            }
        }
        cells.retain(|name, cell| {
            if wanted.contains_key(name.as_str()) {
                return true;
            }
            let old = status_at(cell.status.load(Ordering::SeqCst));
            self.metrics.move_status(name, Some(old), None);
            self.metrics.forget_watch(name);
            false
        });
        for w in watches {
            match cells.get(&w.name) {
                Some(cell) => cell.interval_ms.store(millis(w.interval), Ordering::SeqCst),
                None => {
                    let state = states.get(&w.name);
                    let status = state.map_or(WatchStatus::Idle, |s| s.status);
                    cells.insert(
                        w.name.clone(),
                        Arc::new(WatchCell {
                            status: AtomicU8::new(status_index(status)),
                            due_ms: AtomicU64::new(NOT_DUE),
                            interval_ms: AtomicU64::new(millis(w.interval)),
                            failures: AtomicI64::new(state.map_or(0, |s| s.consecutive_failures)),
                        }),
                    );
                    self.metrics.move_status(&w.name, None, Some(status));
                }
            }
        }
        self.metrics.watches.set(cells.len() as i64);
    }

    /// The next refresh of `name` is due at `due`.
    pub fn schedule(&self, name: &str, due: Instant) {
        if let Some(cell) = self.cell(name) {
            let ms = millis(due.saturating_duration_since(self.epoch));
            cell.due_ms.store(ms, Ordering::SeqCst);
        }
    }

    /// A refresh of `name` starts now (it was due at `due`): records the lag, and the watch is
    /// not overdue while it runs.
    pub fn starting(&self, name: &str, due: Instant) {
        self.metrics
            .record_lag(Instant::now().saturating_duration_since(due).as_secs_f64());
        if let Some(cell) = self.cell(name) {
            cell.due_ms.store(NOT_DUE, Ordering::SeqCst);
        }
    }

    /// Watches past their due time by more than their interval (one pass over memory).
    pub fn overdue(&self) -> i64 {
        let now = millis(Instant::now().saturating_duration_since(self.epoch));
        let cells = match self.cells.read() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        cells
            .values()
            .filter(|c| {
                let due = c.due_ms.load(Ordering::Relaxed);
                due != NOT_DUE && now.saturating_sub(due) > c.interval_ms.load(Ordering::Relaxed)
            })
            .count() as i64
    }

    /// Counts of watches by status (every status present).
    fn by_status(&self) -> serde_json::Map<String, Value> {
        let mut counts = [0i64; 16];
        let cells = match self.cells.read() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        };
        for c in cells.values() {
            if let Some(n) = counts.get_mut(usize::from(c.status.load(Ordering::Relaxed))) {
                *n += 1;
            }
        }
        WatchStatus::ALL
            .iter()
            .enumerate()
            .map(|(i, s)| {
                (
                    s.as_str().to_string(),
                    json!(counts.get(i).copied().unwrap_or(0)),
                )
            })
            .collect()
    }

    /// `GET /v1/summary` (and the `summary` log event): from memory, no registry query.
    pub fn summary(&self) -> Value {
        let overdue = self.overdue();
        self.metrics.overdue.set(overdue);
        let errors: serde_json::Map<String, Value> = self
            .metrics
            .errors_by_class()
            .into_iter()
            .map(|(class, n)| (class.to_string(), json!(n)))
            .collect();
        json!({
            "registry_version": self.metrics.registry_version.get(),
            "watches": self.metrics.watches.get(),
            "by_status": self.by_status(),
            "open_reviews": self.metrics.pending_reviews.get(),
            "errors_by_class": errors,
            "overdue": overdue,
        })
    }

    /// The next look at the change token recounts whatever it says (after a reload).
    pub fn invalidate_counts(&self) {
        let mut observer = match self.observer.lock() {
            Ok(o) => o,
            Err(poisoned) => poisoned.into_inner(),
        };
        observer.1 = None;
    }

    /// Recounts statuses and the registry gauges from the registry when it changed since the
    /// last recount (blocking: call off the async threads). True when it recounted.
    pub fn recount_if_changed(&self) -> bool {
        if self.registry_intact().is_err() {
            return false;
        }
        let mut observer = match self.observer.lock() {
            Ok(o) => o,
            Err(poisoned) => poisoned.into_inner(),
        };
        if observer.0.is_none() {
            observer.0 = Registry::open_pooled_at(&self.registry_location).ok();
        }
        let last = observer.1;
        let Some(registry) = observer.0.as_ref() else {
            return false;
        };
        // PostgreSQL: still the registry opened at startup? Its id read by the observer (one
        // query a recount); a database emptied or holding another registry stops the daemon
        // as a replaced file does.
        if let Some(opened) = &self.registry_id {
            let found = match registry.registry_id() {
                Ok((id, _)) if &id == opened => None,
                Ok(_) => Some("replaced"),
                // undefined_table: the database no longer holds a registry.
                Err(e) if e.to_string().contains("SQLSTATE 42P01") => Some("deleted"),
                Err(_) => None,
            };
            if found.is_some() {
                match self.database_lost.lock() {
                    Ok(mut lost) => *lost = found,
                    Err(poisoned) => *poisoned.into_inner() = found,
                }
                drop(observer);
                let _ = self.registry_intact();
                return false;
            }
        }
        let Ok(version) = registry.change_token() else {
            // A PostgreSQL session the server closed (a restart) is opened anew next time.
            if registry.is_closed() {
                observer.0 = None;
            }
            return false;
        };
        if last == Some(version) {
            return false;
        }
        if let Ok(stored) = registry.has_sunsets() {
            self.sunsets_stored.store(stored, Ordering::SeqCst);
        }
        // One pass over (watch, status), no allocation per row; the moves are applied after.
        let mut moves: Vec<(String, WatchStatus)> = Vec::new();
        let mut matched = 0usize;
        let visited = {
            let cells = match self.cells.read() {
                Ok(c) => c,
                Err(poisoned) => poisoned.into_inner(),
            };
            let visited = registry.for_each_status(|name, status| {
                if let Some(cell) = cells.get(name) {
                    matched += 1;
                    if status_at(cell.status.load(Ordering::SeqCst)) != status {
                        moves.push((name.to_string(), status));
                    }
                }
            });
            if visited.is_ok() && matched < cells.len() {
                // Some configured watch has no stored state (forgotten, never refreshed): idle.
                let stored: std::collections::HashSet<String> = registry
                    .watch_state_map()
                    .map(|m| m.into_keys().collect())
                    .unwrap_or_default();
                for (name, cell) in cells.iter() {
                    if !stored.contains(name)
                        && status_at(cell.status.load(Ordering::SeqCst)) != WatchStatus::Idle
                    {
                        moves.push((name.clone(), WatchStatus::Idle));
                    }
                }
            }
            visited
        };
        if visited.is_err() {
            return false;
        }
        // Statuses first, then the gauges: a `/v1/summary` read in between never shows a
        // review counted whose watch's status has not moved yet.
        for (name, status) in moves {
            self.set_status(&name, status);
        }
        self.update_registry_gauges(registry);
        observer.1 = Some(version);
        drop(observer);
        // Another process may have written events (a CLI accept, a cron `check`).
        self.deliveries_wake.notify_one();
        true
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_hosts_cover_the_listen_address_and_localhost() {
        let bound: SocketAddr = "127.0.0.1:9477".parse().unwrap();
        let hosts = allowed_hosts("127.0.0.1:9477", bound, &[]);
        assert!(hosts.contains(&"127.0.0.1:9477".to_string()));
        assert!(hosts.contains(&"localhost:9477".to_string()));
        assert!(!hosts.iter().any(|h| h.contains("evil")));
        let pod: SocketAddr = "10.1.2.3:9477".parse().unwrap();
        assert_eq!(
            allowed_hosts("10.1.2.3:9477", pod, &[]),
            vec!["10.1.2.3:9477"]
        );
        let any: SocketAddr = "0.0.0.0:9477".parse().unwrap();
        let hosts = allowed_hosts("0.0.0.0:9477", any, &["proxy.example:443".to_string()]);
        assert!(hosts.contains(&"127.0.0.1:9477".to_string()));
        assert!(hosts.contains(&"proxy.example:443".to_string()));
        assert!(!hosts.contains(&"10.1.2.3:9477".to_string()));
    }

    #[tokio::test]
    async fn max_concurrency_shrinks_and_grows_on_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let config = Config::parse(&path, "[daemon]\nmax_concurrency = 4\n").unwrap();
        let registry = Registry::open_at(&config.storage.location, true).unwrap();
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

    fn shared_with(text: &str) -> (tempfile::TempDir, Arc<Shared>) {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::parse(&dir.path().join("c.toml"), text).unwrap();
        let registry = Registry::open_at(&config.storage.location, true).unwrap();
        let shared = Shared::new(config, registry, "127.0.0.1:9".parse().unwrap());
        (dir, shared)
    }

    fn watches(n: usize) -> String {
        (0..n)
            .map(|i| format!("[[watch]]\nname = \"ns.w{i}\"\nkind = \"openapi\"\npath = \"x\"\n"))
            .collect()
    }

    fn series(text: &str, prefix: &str) -> usize {
        text.lines().filter(|l| l.starts_with(prefix)).count()
    }

    #[test]
    fn status_counts_follow_moves_and_per_watch_series_are_one_per_watch() {
        let (_dir, shared) = shared_with(&watches(3));
        let config = shared.config();
        shared.set_watches(&config.watches, &HashMap::new());
        shared.set_status("ns.w0", WatchStatus::Error);
        shared.set_status("ns.w1", WatchStatus::Unchanged);
        shared.set_status("ns.w1", WatchStatus::PendingReview);
        let summary = shared.summary();
        assert_eq!(summary["watches"], 3);
        assert_eq!(summary["by_status"]["idle"], 1);
        assert_eq!(summary["by_status"]["error"], 1);
        assert_eq!(summary["by_status"]["pending_review"], 1);
        assert_eq!(summary["by_status"]["unchanged"], 0);
        let text = shared.metrics.encode();
        assert_eq!(series(&text, "schemawatch_watch_status{"), 3, "{text}");
        assert!(
            text.contains("schemawatch_watch_status{watch=\"ns.w1\",status=\"pending_review\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("schemawatch_watches_by_status{status=\"error\"} 1"),
            "{text}"
        );
        // A watch that leaves the config leaves the counts and the series.
        shared.set_watches(&config.watches[1..], &HashMap::new());
        assert_eq!(shared.summary()["by_status"]["error"], 0);
        assert_eq!(
            series(&shared.metrics.encode(), "schemawatch_watch_status{"),
            2
        );
        // The registry says otherwise (another process wrote): a recount moves the watch.
        let mut r = shared.take_registry().unwrap();
        r.record_watch(&WatchState {
            status: WatchStatus::Stale,
            ..WatchState::new("ns.w2", crate::core::model::Kind::Openapi)
        })
        .unwrap();
        shared.give_back(r);
        assert!(shared.recount_if_changed());
        assert_eq!(shared.summary()["by_status"]["stale"], 1);
        assert!(!shared.recount_if_changed(), "nothing changed since");
    }

    #[test]
    fn per_watch_metrics_are_decided_at_start() {
        let (_dir, many) = shared_with(&watches(1001));
        let config = many.config();
        many.set_watches(&config.watches, &HashMap::new());
        let text = many.metrics.encode();
        assert_eq!(series(&text, "schemawatch_watch_status{"), 0);
        assert!(
            text.contains("schemawatch_watches_by_status{status=\"idle\"} 1001"),
            "{text}"
        );
        let (_dir, forced) = shared_with(&format!(
            "[server]\nper_watch_metrics = true\n{}",
            watches(1001)
        ));
        let config = forced.config();
        forced.set_watches(&config.watches, &HashMap::new());
        assert_eq!(
            series(&forced.metrics.encode(), "schemawatch_watch_status{"),
            1001
        );
        let (_dir, off) = shared_with(&format!(
            "[server]\nper_watch_metrics = false\n{}",
            watches(2)
        ));
        let config = off.config();
        off.set_watches(&config.watches, &HashMap::new());
        assert_eq!(
            series(&off.metrics.encode(), "schemawatch_watch_status{"),
            0
        );
    }

    #[test]
    fn a_failure_streak_warns_first_then_every_n() {
        let warned: Vec<i64> = (1..=25).filter(|f| warn_this_failure(*f, 10)).collect();
        assert_eq!(warned, [1, 11, 21]);
        assert!((1..5).all(|f| warn_this_failure(f, 1)));
    }
}
