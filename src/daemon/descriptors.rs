//! The file-descriptor budget (docs/reliability.md H24), computed at start and on reload: the
//! daemon's own descriptors, the API's connections and probe slots, and the per-refresh
//! reserve of [`super::serve`] must fit under `RLIMIT_NOFILE`, or the accept loop would close
//! every API connection at accept (the reserve never free). At start the soft limit is raised
//! toward the hard one; what still does not fit lowers `max_concurrency` (a WARN), or refuses
//! to start when not even one refresh fits beside a few API connections. `config check` says
//! the same ([`assess`]).

use super::serve::{FD_RESERVE_BASE, MAX_CONNECTIONS, PROBE_CONNECTIONS};
use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// Descriptors the daemon holds itself: standard streams, two runtimes, the listener, the
/// registry's files, the signal pipe (21 measured on an idle daemon), with a margin.
pub const OWN_DESCRIPTORS: u64 = 24;
/// Descriptors one refresh slot may need (as the accept loop reserves them).
pub const PER_REFRESH: u64 = 8;
/// API connections the budget keeps room for at least, beside the probe slots.
pub const MIN_API_CONNECTIONS: u64 = 8;
/// The soft limit the daemon raises itself to when it needs more (the hard limit permitting).
pub const RAISE_TO: u64 = 65_536;

/// Descriptors needed by `concurrency` refresh slots beside `connections` API connections.
pub fn needed(concurrency: usize, connections: u64) -> u64 {
    OWN_DESCRIPTORS
        + FD_RESERVE_BASE
        + PER_REFRESH.saturating_mul(concurrency as u64)
        + connections
        + PROBE_CONNECTIONS as u64
}

/// How `concurrency` refresh slots fit under a limit of `limit` descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fit {
    /// Everything fits, the full connection cap included.
    Full,
    /// The slots fit, beside `connections` API connections (fewer than the cap).
    FewerConnections { connections: u64 },
    /// Only `concurrency` slots fit (beside `connections` API connections).
    Lowered {
        concurrency: usize,
        connections: u64,
    },
    /// Not even one slot fits beside [`MIN_API_CONNECTIONS`]: `needed` descriptors are.
    Refused { needed: u64 },
}

/// Pure: how `concurrency` refresh slots fit under `limit`.
pub fn fit(limit: u64, concurrency: usize) -> Fit {
    if needed(concurrency, MAX_CONNECTIONS as u64) <= limit {
        return Fit::Full;
    }
    if needed(concurrency, MIN_API_CONNECTIONS) <= limit {
        return Fit::FewerConnections {
            connections: limit - needed(concurrency, 0),
        };
    }
    let room = limit.saturating_sub(needed(0, MIN_API_CONNECTIONS)) / PER_REFRESH;
    match usize::try_from(room) {
        Ok(slots) if slots >= 1 => Fit::Lowered {
            concurrency: slots.min(concurrency),
            connections: limit - needed(slots, 0),
        },
        _ => Fit::Refused {
            needed: needed(1, MIN_API_CONNECTIONS),
        },
    }
}

/// The limits now: (soft, hard); `None` is unlimited.
fn limits() -> (Option<u64>, Option<u64>) {
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    (current, maximum)
}

/// The soft limit the daemon would run with: raised toward the hard limit when the full
/// budget of `concurrency` slots needs more (to at least that, [`RAISE_TO`] when the hard
/// limit allows). `u64::MAX` is unlimited.
fn reachable(concurrency: usize, soft: Option<u64>, hard: Option<u64>) -> u64 {
    let soft = soft.unwrap_or(u64::MAX);
    let full = needed(concurrency, MAX_CONNECTIONS as u64);
    if soft >= full {
        return soft;
    }
    let hard = hard.unwrap_or(u64::MAX);
    full.max(RAISE_TO).min(hard).max(soft)
}

/// What the daemon will do about descriptors with `concurrency` slots under this process's
/// limits, as `config check` reports it: the limit it would run with and the fit.
pub fn assess(concurrency: usize) -> (u64, Fit) {
    let (soft, hard) = limits();
    let limit = reachable(concurrency, soft, hard);
    (limit, fit(limit, concurrency))
}

/// At start: raises the soft limit as far as the budget of `concurrency` slots asks (toward
/// the hard limit), then answers the limit in force and the fit under it.
pub fn raise(concurrency: usize) -> (u64, Fit) {
    let (soft, hard) = limits();
    let target = reachable(concurrency, soft, hard);
    let mut limit = soft.unwrap_or(u64::MAX);
    if target > limit {
        let raised = setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(target),
                maximum: hard,
            },
        );
        match raised {
            Ok(()) => {
                tracing::info!(
                    event = "descriptor_limit_raised",
                    from = limit,
                    to = target,
                    "raised the soft RLIMIT_NOFILE toward the hard limit"
                );
                limit = target;
            }
            Err(e) => tracing::warn!(event = "descriptor_limit_raise_failed", error = %e),
        }
    }
    (limit, fit(limit, concurrency))
}

/// The one-line explanation of a fit that is not [`Fit::Full`] (WARN, refusal, `config
/// check`).
pub fn describe(limit: u64, concurrency: usize, fit: Fit) -> Option<String> {
    let want = needed(concurrency, MAX_CONNECTIONS as u64);
    match fit {
        Fit::Full => None,
        Fit::FewerConnections { connections } => Some(format!(
            "RLIMIT_NOFILE {limit} is below the {want} descriptors max_concurrency = {concurrency} and {MAX_CONNECTIONS} API connections need: the API serves at most {connections} connections at once (raise the limit: ulimit -n, LimitNOFILE=)"
        )),
        Fit::Lowered {
            concurrency: lowered,
            connections,
        } => Some(format!(
            "RLIMIT_NOFILE {limit} is below the {want} descriptors max_concurrency = {concurrency} needs: running {lowered} refresh(es) at once and at most {connections} API connections (raise the limit: ulimit -n, LimitNOFILE=)"
        )),
        Fit::Refused { needed } => Some(format!(
            "RLIMIT_NOFILE {limit} leaves no room: the daemon needs at least {needed} descriptors (one refresh, {MIN_API_CONNECTIONS} API connections); raise the limit (ulimit -n, LimitNOFILE=)"
        )),
    }
}

/// Applies the budget to `config` at start (`start`: the soft limit may be raised first) or on
/// reload: a WARN when it does not fit whole (`max_concurrency` lowered where it must be), the
/// refusal's message when not even one refresh fits.
pub fn apply(
    mut config: crate::config::Config,
    start: bool,
) -> Result<crate::config::Config, String> {
    let concurrency = config.daemon.max_concurrency;
    let (limit, fit) = if start {
        raise(concurrency)
    } else {
        let (soft, _) = limits();
        let limit = soft.unwrap_or(u64::MAX);
        (limit, fit(limit, concurrency))
    };
    let message = describe(limit, concurrency, fit);
    match fit {
        Fit::Full => {}
        Fit::Refused { .. } => return Err(message.unwrap_or_default()),
        Fit::FewerConnections { connections } => {
            tracing::warn!(
                event = "descriptor_budget",
                limit,
                max_concurrency = concurrency,
                api_connections = connections,
                "{}",
                message.unwrap_or_default()
            );
        }
        Fit::Lowered {
            concurrency: lowered,
            connections,
        } => {
            tracing::warn!(
                event = "descriptor_budget",
                limit,
                configured_max_concurrency = concurrency,
                max_concurrency = lowered,
                api_connections = connections,
                "{}",
                message.unwrap_or_default()
            );
            config.daemon.max_concurrency = lowered;
        }
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_lowers_concurrency_then_refuses() {
        // 24 own + 16 reserve + 8 per slot + 64 connections + 8 probe slots.
        assert_eq!(needed(4, 64), 24 + 16 + 32 + 64 + 8);
        assert_eq!(fit(1024, 4), Fit::Full);
        assert_eq!(fit(144, 4), Fit::Full);
        assert_eq!(fit(143, 4), Fit::FewerConnections { connections: 63 });
        // The cases: 126 slots under 1024, the default 4 under 64.
        assert_eq!(
            fit(1024, 126),
            Fit::Lowered {
                concurrency: 121,
                connections: 1024 - needed(121, 0)
            }
        );
        assert_eq!(
            fit(64, 4),
            Fit::Lowered {
                concurrency: 1,
                connections: 8
            }
        );
        assert_eq!(fit(63, 4), Fit::Refused { needed: 64 });
        assert!(describe(64, 4, fit(64, 4)).is_some_and(|m| m.contains("running 1 refresh")));
    }

    #[test]
    fn the_soft_limit_is_raised_only_as_far_as_needed_and_allowed() {
        assert_eq!(reachable(4, Some(1024), Some(4096)), 1024);
        assert_eq!(reachable(4, Some(64), Some(4096)), 4096);
        assert_eq!(reachable(4, Some(64), None), RAISE_TO);
        assert_eq!(reachable(4, Some(64), Some(64)), 64);
        assert_eq!(reachable(10_000, Some(1024), None), needed(10_000, 64));
        assert_eq!(reachable(4, None, None), u64::MAX);
    }
}
