//! The API's accept loop (docs/reliability.md H2): bounded connections, a header-read timeout
//! (which also closes idle keep-alive connections), and a reserve of file descriptors for
//! refreshes. A silent client never starves `/healthz` or a refresh:
//!
//! - at most [`MAX_CONNECTIONS`] connections are open; a new one beyond that (or one that
//!   would eat into the descriptor reserve) first evicts the oldest connection that is not
//!   serving a request (silent, or idle between requests); with none to evict it is closed at
//!   once;
//! - a connection must send a complete request head within `[server] read_timeout` (10 s
//!   unless set) of being accepted or of its previous response, else it is closed;
//! - accept errors (`EMFILE`, …) pause the loop briefly instead of spinning;
//! - when every connection is busy (say, clients trickling request bodies until the body
//!   deadline, the same `read_timeout`), a new one takes one of
//!   [`PROBE_CONNECTIONS`] slots of its own that serve only `/healthz` and `/readyz` (any other
//!   request there is answered 503), so the probes are never starved (H16).

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::{AbortHandle, JoinSet};
use tower::ServiceExt;

/// Most API connections open at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Connections beyond [`MAX_CONNECTIONS`] that serve only the probes.
pub const PROBE_CONNECTIONS: usize = 8;
/// File descriptors kept free for refreshes: this plus 8 per refresh slot.
pub const FD_RESERVE_BASE: u64 = 16;

/// Open connections: accept order → (serving a request now, its task).
#[derive(Default)]
struct Connections(Mutex<BTreeMap<u64, (Arc<AtomicBool>, AbortHandle)>>);

impl Connections {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<u64, (Arc<AtomicBool>, AbortHandle)>> {
        match self.0.lock() {
            Ok(c) => c,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    /// Closes the oldest connection not serving a request; false when every one is busy.
    fn evict_one(&self) -> bool {
        let mut open = self.lock();
        let victim = open
            .iter()
            .find(|(_, (busy, _))| !busy.load(Ordering::SeqCst))
            .map(|(id, _)| *id);
        match victim.and_then(|id| open.remove(&id)) {
            Some((_, handle)) => {
                handle.abort();
                true
            }
            None => false,
        }
    }
}

/// Descriptors this process has open, and its soft limit.
fn descriptors() -> Option<(u64, u64)> {
    let open = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
    let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile).current?;
    Some((open, limit))
}

/// Serves `app` on `listener` until `stop` resolves; then open connections finish their
/// request (graceful shutdown) while the caller's grace lasts. A request head must arrive
/// within `read_timeout` of the accept or of the previous response.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    max_concurrency: usize,
    read_timeout: Duration,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let reserve = FD_RESERVE_BASE + 8 * max_concurrency as u64;
    let open = Arc::new(Connections::default());
    let probes = Arc::new(Connections::default());
    let (closing_tx, closing) = tokio::sync::watch::channel(false);
    let mut tasks = JoinSet::new();
    let mut next_id = 0u64;
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = &mut stop => break,
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(event = "api_accept_failed", error = %e);
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Room for it: under the connection cap and outside the descriptor reserve. A probe
        // slot may use the per-slot part of the reserve, never its base.
        let fds_over = |reserve: u64| {
            descriptors().is_some_and(|(fds, limit)| fds.saturating_add(reserve) > limit)
        };
        let room = open.lock().len() < MAX_CONNECTIONS && !fds_over(reserve);
        let probe_only = if room || open.evict_one() {
            false
        } else if (probes.lock().len() < PROBE_CONNECTIONS && !fds_over(FD_RESERVE_BASE))
            || probes.evict_one()
        {
            true
        } else {
            tracing::debug!(
                event = "api_connection_refused",
                "every API connection is busy"
            );
            drop(stream);
            continue;
        };
        next_id += 1;
        let registry = if probe_only {
            probes.clone()
        } else {
            open.clone()
        };
        let task = connection(
            next_id,
            (stream, peer),
            app.clone(),
            probe_only,
            read_timeout,
            closing.clone(),
            registry.clone(),
        );
        // Held across the spawn: the task removes itself only after it was inserted.
        let mut guard = registry.lock();
        let handle = tasks.spawn(task.run);
        guard.insert(next_id, (task.busy, handle));
        drop(guard);
    }
    let _ = closing_tx.send(true);
    drop(listener);
    while tasks.join_next().await.is_some() {}
}

/// One accepted connection: its busy flag and the future that serves it.
struct Connection<F> {
    busy: Arc<AtomicBool>,
    run: F,
}

/// The paths a probe slot serves.
fn is_probe(path: &str) -> bool {
    path == "/healthz" || path == "/readyz"
}

fn connection(
    id: u64,
    (stream, peer): (tokio::net::TcpStream, std::net::SocketAddr),
    app: Router,
    probe_only: bool,
    read_timeout: Duration,
    mut closing: tokio::sync::watch::Receiver<bool>,
    registry: Arc<Connections>,
) -> Connection<impl std::future::Future<Output = ()> + Send + 'static> {
    let busy = Arc::new(AtomicBool::new(false));
    let service_busy = busy.clone();
    let service = hyper::service::service_fn(move |mut request: hyper::Request<_>| {
        let router = app.clone();
        // The peer address, for `[server] trusted_proxies` (the UI's single-sign-on header).
        request
            .extensions_mut()
            .insert(axum::extract::ConnectInfo(peer));
        let busy = service_busy.clone();
        async move {
            if probe_only && !is_probe(request.uri().path()) {
                let mut refused = axum::response::Response::new(axum::body::Body::from(
                    "{\"error\":\"every API connection is busy: only /healthz and /readyz are served now\"}",
                ));
                *refused.status_mut() = hyper::StatusCode::SERVICE_UNAVAILABLE;
                let headers = refused.headers_mut();
                headers.insert(
                    hyper::header::CONTENT_TYPE,
                    hyper::header::HeaderValue::from_static("application/json"),
                );
                headers.insert(
                    hyper::header::CONNECTION,
                    hyper::header::HeaderValue::from_static("close"),
                );
                return Ok(refused);
            }
            busy.store(true, Ordering::SeqCst);
            let response = router.oneshot(request).await;
            busy.store(false, Ordering::SeqCst);
            response
        }
    });
    let run = async move {
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(read_timeout)
            .max_buf_size(64 * 1024);
        let conn = builder.serve_connection(TokioIo::new(stream), service);
        tokio::pin!(conn);
        tokio::select! {
            _ = conn.as_mut() => {}
            _ = async { closing.wait_for(|c| *c).await.is_ok() } => {
                conn.as_mut().graceful_shutdown();
                let _ = conn.await;
            }
        }
        registry.lock().remove(&id);
    };
    Connection { busy, run }
}
