//! Where the gateway's accepted contract comes from: the registry, opened read-only (never
//! written), watched for commits through its change token (`Registry::change_token`); or the daemon's API
//! (`GET /v1/watches/{name}/contract` with a read token), polled, when the registry sits in a
//! service's private state directory.

use super::{Event, GatewayError};
use crate::core::fingerprint::{SpecIndex, FINGERPRINT_VERSION};
use crate::registry::{Location, Registry};
use serde_json::{json, Value};
use std::collections::BTreeMap;
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
pub fn open(location: &Location) -> Result<Registry, GatewayError> {
    let opened = match location {
        Location::Sqlite(_) => Registry::open_read_only_at(location),
        // The gateway reads the registry on the runtime's threads, where a PostgreSQL client
        // (blocking on the network) would panic; it also needs the contracts, not on
        // PostgreSQL yet.
        Location::Postgres { .. } => Err(crate::registry::RegistryError::NotOnPostgres(
            "the gateway's contract reader",
        )),
    };
    opened.map_err(|source| GatewayError::Registry {
        path: location.to_string(),
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
            let mut seen = registry.change_token().ok();
            loop {
                std::thread::sleep(every);
                if events.is_closed() {
                    return;
                }
                let now = registry.change_token().ok();
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

/// The JSON of `GET /v1/watches/{name}/contract`: what a gateway compares, no contract text
/// but the accepted instructions. `None`: no accepted contract.
pub fn contract_json(registry: &Registry, watch: &str) -> Result<Option<Value>, GatewayError> {
    let accepted = match load(registry, watch) {
        Ok(accepted) => accepted,
        Err(GatewayError::NoContract { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(Some(json!({
        "watch": watch,
        "contract_version": accepted.version,
        "fingerprint_version": FINGERPRINT_VERSION,
        "registry_schema": crate::registry::supported_schema(),
        "instructions": accepted.instructions,
        "open_review": accepted.review,
        "endpoints": accepted.fingerprints,
    })))
}

/// Reads [`contract_json`]'s answer; a fingerprint version or registry schema other than this
/// build's is refused, naming both.
pub fn from_json(watch: &str, value: &Value) -> Result<Accepted, GatewayError> {
    let bad = |why: &str| GatewayError::Api {
        detail: format!("the contract of watch {watch} is malformed: {why}"),
    };
    let found = value
        .get("fingerprint_version")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("no fingerprint_version"))?;
    if found != FINGERPRINT_VERSION {
        return Err(GatewayError::FingerprintVersion {
            watch: watch.to_string(),
            found,
            supported: FINGERPRINT_VERSION,
        });
    }
    let schema = value
        .get("registry_schema")
        .and_then(Value::as_i64)
        .ok_or_else(|| bad("no registry_schema"))?;
    if schema != crate::registry::supported_schema() {
        return Err(GatewayError::Schema {
            found: schema,
            supported: crate::registry::supported_schema(),
        });
    }
    let fingerprints = value
        .get("endpoints")
        .and_then(Value::as_object)
        .ok_or_else(|| bad("no endpoints"))?
        .iter()
        .map(|(k, v)| {
            Ok((
                k.clone(),
                v.as_str()
                    .ok_or_else(|| bad("a fingerprint is not a string"))?
                    .to_string(),
            ))
        })
        .collect::<Result<BTreeMap<_, _>, GatewayError>>()?;
    Ok(Accepted {
        fingerprints,
        instructions: value
            .get("instructions")
            .and_then(Value::as_str)
            .map(String::from),
        review: value.get("open_review").and_then(Value::as_i64),
        version: value
            .get("contract_version")
            .and_then(Value::as_i64)
            .unwrap_or(0),
    })
}

/// The daemon's API as the gateway's contract source.
#[derive(Clone)]
pub struct ApiSource {
    /// `http://127.0.0.1:8080`, no trailing slash.
    pub base: String,
    /// The read (or admin) token, for the contract; never logged.
    pub token: Option<String>,
    /// The refresh (or admin) token, when the gateway asks the daemon to refresh on drift.
    pub refresh_token: Option<String>,
}

impl std::fmt::Debug for ApiSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiSource")
            .field("base", &self.base)
            .finish()
    }
}

fn client() -> Result<reqwest::Client, GatewayError> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .no_proxy()
        .build()
        .map_err(|e| GatewayError::Api {
            detail: format!("cannot build an HTTP client: {e}"),
        })
}

impl ApiSource {
    /// One `GET /v1/watches/{name}/contract`.
    pub async fn fetch(&self, watch: &str) -> Result<Accepted, GatewayError> {
        let url = format!("{}/v1/watches/{watch}/contract", self.base);
        let mut request = client()?.get(&url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request.send().await.map_err(|e| GatewayError::Api {
            detail: format!("GET {url}: {}", e.without_url()),
        })?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| GatewayError::Api {
            detail: format!("GET {url}: HTTP {status}: {}", e.without_url()),
        })?;
        let body: Value = serde_json::from_slice(&bytes).map_err(|e| GatewayError::Api {
            detail: format!("GET {url}: HTTP {status}, not JSON: {e}"),
        })?;
        if status == reqwest::StatusCode::NOT_FOUND {
            return Err(GatewayError::NoContract {
                watch: watch.to_string(),
            });
        }
        if !status.is_success() {
            let message = body
                .get("error")
                .and_then(|e| e.get("message").or(Some(e)))
                .map(|m| m.to_string())
                .unwrap_or_default();
            return Err(GatewayError::Api {
                detail: format!("GET {url}: HTTP {status}: {message}"),
            });
        }
        from_json(watch, &body)
    }

    /// Asks the daemon to refresh `watch` now (`POST /v1/watches/{name}/refresh`).
    pub async fn request_refresh(&self, watch: &str) -> Result<(), GatewayError> {
        let Some(token) = &self.refresh_token else {
            return Ok(());
        };
        let url = format!("{}/v1/watches/{watch}/refresh", self.base);
        let response = client()?
            .post(&url)
            .bearer_auth(token)
            .send()
            .await
            .map_err(|e| GatewayError::Api {
                detail: format!("POST {url}: {}", e.without_url()),
            })?;
        if response.status().is_success() {
            Ok(())
        } else {
            Err(GatewayError::Api {
                detail: format!("POST {url}: HTTP {}", response.status()),
            })
        }
    }
}

/// Polls the API every `every` and sends the contract when it changed. Ends when the gateway
/// stops listening.
pub fn poll_api(
    source: ApiSource,
    watch: String,
    every: Duration,
    mut last: Accepted,
    events: mpsc::Sender<Event>,
) {
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(every).await;
            if events.is_closed() {
                return;
            }
            let event = match source.fetch(&watch).await {
                Ok(accepted) if accepted == last => continue,
                Ok(accepted) => {
                    last = accepted.clone();
                    Event::Contract(Ok(accepted))
                }
                Err(e) => Event::Contract(Err(e.to_string())),
            };
            if events.send(event).await.is_err() {
                return;
            }
        }
    });
}
