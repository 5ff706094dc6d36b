//! Where the gateway's accepted contract comes from: the registry, opened read-only (never
//! written), watched for commits through `PRAGMA data_version`.

use super::{Event, GatewayError};
use crate::core::fingerprint::{SpecIndex, FINGERPRINT_VERSION};
use crate::registry::Registry;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;
use tokio::sync::mpsc;

/// What a human accepted for the watch, as the gateway compares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// Endpoint identity → fingerprint of every accepted item.
    pub fingerprints: BTreeMap<String, String>,
    /// The accepted server `instructions` (the agent never sees the live ones).
    pub instructions: Option<String>,
    /// The watch's open review, named in refusals.
    pub review: Option<i64>,
    /// The accepted contract's version (for logs).
    pub version: i64,
}

/// Opens the registry read-only; a schema other than this build's is refused, naming both.
pub fn open(path: &Path) -> Result<Registry, GatewayError> {
    Registry::open_read_only(path).map_err(|source| GatewayError::Registry {
        path: path.display().to_string(),
        source,
    })
}

/// The accepted contract of `watch`; refused when none is accepted yet or when it was
/// fingerprinted by another `FINGERPRINT_VERSION`.
pub fn load(registry: &Registry, watch: &str) -> Result<Accepted, GatewayError> {
    let wrap = |source| GatewayError::RegistryRead {
        watch: watch.to_string(),
        source,
    };
    match registry.tool_fingerprint_version(watch).map_err(wrap)? {
        None => {
            return Err(GatewayError::NoContract {
                watch: watch.to_string(),
            })
        }
        Some(found) if found != FINGERPRINT_VERSION => {
            return Err(GatewayError::FingerprintVersion {
                watch: watch.to_string(),
                found,
                supported: FINGERPRINT_VERSION,
            })
        }
        Some(_) => {}
    }
    let stored = registry
        .tool(watch)
        .map_err(wrap)?
        .ok_or_else(|| GatewayError::NoContract {
            watch: watch.to_string(),
        })?;
    let fingerprints = SpecIndex::new(&stored.spec).endpoint_fingerprints();
    Ok(Accepted {
        fingerprints,
        instructions: stored.spec.instructions.clone(),
        review: registry.open_review_for(watch).map_err(wrap)?,
        version: stored.version,
    })
}

/// Watches the registry on a thread of its own: every `every`, when another connection has
/// committed since, the watch's accepted contract is read again and sent when it differs.
/// Ends when the gateway stops listening.
pub fn watch(
    registry: Registry,
    watch: String,
    every: Duration,
    mut last: Accepted,
    events: mpsc::Sender<Event>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("gateway-registry".into())
        .spawn(move || {
            let mut seen = registry.data_version().ok();
            loop {
                std::thread::sleep(every);
                if events.is_closed() {
                    return;
                }
                let now = registry.data_version().ok();
                if now == seen {
                    continue;
                }
                seen = now;
                let event = match load(&registry, &watch) {
                    Ok(accepted) if accepted == last => continue,
                    Ok(accepted) => {
                        last = accepted.clone();
                        Event::Contract(Ok(accepted))
                    }
                    Err(e) => Event::Contract(Err(e.to_string())),
                };
                if events.blocking_send(event).is_err() {
                    return;
                }
            }
        })
        .map(|_| ())
}
