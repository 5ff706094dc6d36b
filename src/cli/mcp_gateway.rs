//! `schemawatch mcp-gateway`: an MCP server on stdio for an agent host that lets the agent see
//! and call only what a human accepted for the watch (docs/design.md "Gateway"). Stdout carries
//! only the protocol; logs go to stderr.

use super::{load_config, ConfigArg, Failure, Outcome};
use anyhow::anyhow;
use schemawatch::config::LogFormat;
use schemawatch::core::gateway::{ResultPolicy, ServerRequest, ServerRequestPolicy};
use schemawatch::gateway::{ApiSource, Freshness, Mode, Options, Stop};

#[derive(clap::Args)]
pub struct GatewayArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// The MCP watch whose upstream server the gateway fronts.
    #[arg(long)]
    watch: String,
    /// `cached`: trust the last upstream listing until the upstream announces a change;
    /// `strict`: re-list everything before each call (one full paginated listing per call).
    #[arg(long, value_enum, default_value = "cached")]
    freshness: FreshnessArg,
    /// `enforce`, or `report`: pass everything, log and count what enforcement would withhold.
    #[arg(long, value_enum, default_value = "enforce")]
    mode: ModeArg,
    /// What to do with results carrying hidden characters, per class: CLASS=withhold|flag|pass
    /// (classes: tag, bidi, zero-width, control, html-comment, other). Repeatable. Defaults:
    /// tag and bidi withhold, the rest flag.
    #[arg(long = "results", value_name = "CLASS=ACTION")]
    results: Vec<String>,
    /// Forward the upstream's `sampling/createMessage` to the agent host (refused by default:
    /// it spends the host's model).
    #[arg(long)]
    allow_sampling: bool,
    /// Refuse the upstream's `elicitation/create` (forwarded by default).
    #[arg(long)]
    refuse_elicitation: bool,
    /// Refuse the upstream's `roots/list` (forwarded by default).
    #[arg(long)]
    refuse_roots: bool,
    /// Seconds between counter summaries on stderr (one more at exit).
    #[arg(long, default_value_t = 300)]
    summary_every: u64,
    /// Where the accepted contract comes from: `registry` (the config's registry file, opened
    /// read-only: same user, same host) or `api` (the daemon's
    /// `GET /v1/watches/{name}/contract`, with the token of `[server] read_token_env` or
    /// `admin_token_env`).
    #[arg(long, value_enum, default_value = "registry")]
    contract_from: ContractFromArg,
    /// The daemon's API (default: `http://` + `[server] listen`).
    #[arg(long)]
    api_url: Option<String>,
    /// On drift, ask the daemon to refresh the watch now (`POST /v1/watches/{name}/refresh`,
    /// with the token of `[server] refresh_token_env` or `admin_token_env`), so the review
    /// exists before the next scheduled refresh.
    #[arg(long)]
    request_refresh: bool,
    /// Log format on stderr.
    #[arg(long, value_enum)]
    log_format: Option<LogFormat>,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum FreshnessArg {
    Cached,
    Strict,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ContractFromArg {
    Registry,
    Api,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum ModeArg {
    Enforce,
    Report,
}

pub async fn run(args: GatewayArgs) -> Outcome {
    let signals =
        signals().map_err(|e| Failure::Usage(anyhow!("cannot install signal handlers: {e}")))?;
    let config = load_config(&args.config)?;
    super::init_logging(args.log_format.unwrap_or(config.daemon.log_format), "info");
    let mut options = Options::new(&args.watch);
    options.freshness = match args.freshness {
        FreshnessArg::Cached => Freshness::Cached,
        FreshnessArg::Strict => Freshness::Strict,
    };
    options.mode = match args.mode {
        ModeArg::Enforce => Mode::Enforce,
        ModeArg::Report => Mode::Report,
    };
    let mut results = ResultPolicy::default();
    for spec in &args.results {
        results.set(spec).map_err(|e| Failure::Usage(anyhow!(e)))?;
    }
    options.results = results;
    let pick = |refuse: bool| {
        if refuse {
            ServerRequest::Refuse
        } else {
            ServerRequest::Forward
        }
    };
    options.server_requests = ServerRequestPolicy {
        sampling: pick(!args.allow_sampling),
        elicitation: pick(args.refuse_elicitation),
        roots: pick(args.refuse_roots),
    };
    options.summary_every = std::time::Duration::from_secs(args.summary_every.max(1));
    options.contract_from_api = matches!(args.contract_from, ContractFromArg::Api);
    if options.contract_from_api || args.request_refresh {
        let token = |var: &Option<String>| {
            var.as_deref()
                .and_then(|v| std::env::var(v).ok())
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
        };
        let server = &config.server;
        let admin = token(&server.admin_token_env);
        let read = token(&server.read_token_env).or_else(|| admin.clone());
        let refresh = token(&server.refresh_token_env).or(admin);
        if options.contract_from_api && read.is_none() {
            return Err(Failure::Usage(anyhow!(
                "--contract-from api needs the read token: set the variable [server] read_token_env (or admin_token_env) names, e.g. in the agent host's `env` block"
            )));
        }
        if args.request_refresh && refresh.is_none() {
            return Err(Failure::Usage(anyhow!(
                "--request-refresh needs the refresh token: set the variable [server] refresh_token_env (or admin_token_env) names"
            )));
        }
        let base = match &args.api_url {
            Some(url) => url.trim_end_matches('/').to_string(),
            None => format!("http://{}", loopback(&server.listen)),
        };
        options.api = Some(ApiSource {
            base,
            token: read,
            refresh_token: refresh.filter(|_| args.request_refresh),
        });
    }
    let prepared = schemawatch::gateway::prepare(&config, &options)
        .await
        .map_err(|e| Failure::Usage(e.into()))?;
    let (stop, _counters) = schemawatch::gateway::run(
        prepared,
        options,
        tokio::io::stdin(),
        tokio::io::stdout(),
        signals,
    )
    .await
    .map_err(|e| Failure::Usage(e.into()))?;
    match stop {
        Stop::AgentClosed | Stop::Signal(_) => Ok(()),
        Stop::UpstreamClosed(why) => Err(Failure::Reported(format!(
            "the upstream MCP server of watch {} stopped: {why}",
            args.watch
        ))),
    }
}

/// SIGTERM and SIGINT as names on a channel.
fn signals() -> std::io::Result<tokio::sync::mpsc::Receiver<&'static str>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        let name = tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        };
        let _ = tx.send(name).await;
    });
    Ok(rx)
}

/// `[server] listen` as a client reaches it: an unspecified address becomes loopback.
fn loopback(listen: &str) -> String {
    match listen.parse::<std::net::SocketAddr>() {
        Ok(mut addr) if addr.ip().is_unspecified() => {
            addr.set_ip(if addr.is_ipv4() {
                std::net::Ipv4Addr::LOCALHOST.into()
            } else {
                std::net::Ipv6Addr::LOCALHOST.into()
            });
            addr.to_string()
        }
        _ => listen.to_string(),
    }
}
