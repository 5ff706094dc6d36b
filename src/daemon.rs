//! The long-running scheduler: refreshes each watch on its own interval, spread by a jitter so
//! watches do not fire together, with jittered exponential backoff after errors, one refresh
//! of a watch at a time, and a clean stop on SIGTERM/SIGINT (an in-flight refresh gets
//! `drain_timeout` to finish; a registry write is one transaction, so nothing is half-written).

use crate::config::Config;
use crate::refresh::{refresh, Action};
use crate::registry::{Registry, RegistryError};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::time::Instant;

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error("cannot install signal handler: {0}")]
    Signal(std::io::Error),
}

/// Longest wait between retries of a failing watch (capped by its interval).
const MAX_BACKOFF: Duration = Duration::from_secs(600);
const FIRST_BACKOFF: Duration = Duration::from_secs(5);

/// A small deterministic PRNG for jitter (xorshift64*), seeded from the clock.
struct Jitter(u64);

impl Jitter {
    fn new() -> Jitter {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9E37_79B9_7F4A_7C15);
        Jitter(seed | 1)
    }

    /// A fraction in [0, 1).
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Waits for SIGTERM or SIGINT.
async fn shutdown_signal() -> Result<&'static str, DaemonError> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(DaemonError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(DaemonError::Signal)?;
    Ok(tokio::select! {
        _ = term.recv() => "SIGTERM",
        _ = int.recv() => "SIGINT",
    })
}

/// Runs until SIGTERM/SIGINT.
pub async fn run(config: Config) -> Result<(), DaemonError> {
    let mut registry = Registry::open(&config.storage.path)?;
    let mut jitter = Jitter::new();
    let start = Instant::now();
    // First cycles are spread over the first interval (at most 30 s) instead of firing at once.
    let mut due: BTreeMap<String, Instant> = config
        .watches
        .iter()
        .map(|w| {
            let spread = w
                .interval
                .min(Duration::from_secs(30))
                .mul_f64(jitter.next());
            (w.name.clone(), start + spread)
        })
        .collect();
    tracing::info!(event = "daemon_started", watches = config.watches.len(), registry = %config.storage.path.display());
    let signal = shutdown_signal();
    tokio::pin!(signal);

    loop {
        let Some((name, when)) = due
            .iter()
            .min_by_key(|(_, t)| **t)
            .map(|(n, t)| (n.clone(), *t))
        else {
            // No watches: idle until told to stop.
            let which = signal.as_mut().await?;
            tracing::info!(event = "daemon_stopping", signal = which);
            return Ok(());
        };
        tokio::select! {
            _ = tokio::time::sleep_until(when) => {}
            which = &mut signal => {
                tracing::info!(event = "daemon_stopping", signal = which?);
                return Ok(());
            }
        }
        let Some(watch) = config.watch(&name) else {
            continue;
        };
        let outcome = {
            let cycle = refresh(&mut registry, watch, config.storage.keep_versions);
            tokio::pin!(cycle);
            tokio::select! {
            outcome = &mut cycle => outcome,
            which = &mut signal => {
                let which = which?;
                tracing::info!(event = "daemon_draining", signal = which, watch = %name);
                if tokio::time::timeout(config.daemon.drain_timeout, &mut cycle).await.is_err() {
                    tracing::warn!(event = "refresh_abandoned", watch = %name);
                }
                tracing::info!(event = "daemon_stopping", signal = which);
                return Ok(());
            }
            }
        };
        let wait = if outcome.action == Action::Error {
            let failures = registry
                .watch_state(&name)?
                .map_or(1, |s| s.consecutive_failures.max(1));
            let exp = FIRST_BACKOFF.saturating_mul(1u32 << (failures - 1).min(16) as u32);
            exp.min(MAX_BACKOFF)
                .min(watch.interval)
                .mul_f64(0.5 + jitter.next() / 2.0)
        } else {
            // ±10% so watches with equal intervals drift apart.
            watch.interval.mul_f64(0.9 + jitter.next() / 5.0)
        };
        due.insert(name, Instant::now() + wait);
    }
}
