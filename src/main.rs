//! The `schemawatch` command line. Exit codes: 0 success; 1 the command ran but reports a
//! failure; 2 bad usage, config or input.

use anyhow::{anyhow, Context};
use clap::{Args, Parser, Subcommand};
use schemawatch::config::{Config, LogFormat};
use schemawatch::core::diff::{classify, rules};
use schemawatch::core::model::{Compatibility, Kind, ToolSpec};
use schemawatch::core::normalize::normalize;
use schemawatch::core::report::{report_json, report_markdown, report_text};
use schemawatch::fetch::{self, FetchOutcome, FetchRequest, Source};
use schemawatch::refresh::{refresh, Action};
use schemawatch::registry::{Registry, RegistryError, Review};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Writes a line to stdout; a closed pipe (`schemawatch diff ... | head`) is not an error.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

#[derive(Parser)]
#[command(
    name = "schemawatch",
    version,
    about = "Keeps a trusted, versioned registry of API and tool contracts and notices when a provider changes one"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Clone)]
struct ConfigArg {
    /// The TOML config file.
    #[arg(long, env = "SCHEMAWATCH_CONFIG")]
    config: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: refresh every watch on its interval until SIGTERM/SIGINT.
    Run {
        #[command(flatten)]
        config: ConfigArg,
        /// Log format (overrides `[daemon] log_format`).
        #[arg(long, value_enum)]
        log_format: Option<LogFormat>,
    },
    /// Run one refresh cycle of every (or the named) watch now.
    Check {
        #[command(flatten)]
        config: ConfigArg,
        /// Only these watches (repeatable).
        #[arg(long = "watch")]
        watches: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Show every watch's state.
    Status {
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        json: bool,
    },
    /// List, show, accept or reject pending reviews.
    Pending {
        #[command(subcommand)]
        action: PendingCommand,
    },
    /// Show a tool's applied versions, newest first.
    History {
        tool: String,
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        json: bool,
    },
    /// Compare two documents (files or URLs) without a registry.
    Diff {
        old: String,
        new: String,
        #[arg(long, default_value = "openapi")]
        kind: String,
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        #[arg(long)]
        markdown: bool,
        /// Exit 1 when the report is at or above this level.
        #[arg(long, value_parser = ["compatible", "breaking", "security_review"])]
        fail_on: Option<String>,
    },
    /// Validate a config file.
    Config {
        #[command(subcommand)]
        action: ConfigCommand,
    },
    /// Manage a watch's stored state.
    Watch {
        #[command(subcommand)]
        action: WatchCommand,
    },
    /// List the drift rules (`--markdown` renders docs/rules.md).
    Rules {
        #[arg(long)]
        markdown: bool,
    },
}

#[derive(Subcommand)]
enum PendingCommand {
    List {
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        json: bool,
    },
    Show {
        id: i64,
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        json: bool,
    },
    Accept {
        id: i64,
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        reviewer: String,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        json: bool,
    },
    Reject {
        id: i64,
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        reviewer: String,
        #[arg(long)]
        reason: String,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ConfigCommand {
    Check {
        #[command(flatten)]
        config: ConfigArg,
    },
}

#[derive(Subcommand)]
enum WatchCommand {
    /// Drop a watch's state and history (after it left the config).
    Forget {
        name: String,
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Clear a watch's stale/error state.
    Reset {
        name: String,
        #[command(flatten)]
        config: ConfigArg,
    },
}

/// How a command ended, mapped to the documented exit codes.
enum Failure {
    /// The command ran and reports a failure (exit 1).
    Reported(String),
    /// Bad usage, config or input (exit 2).
    Usage(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::Usage(e)
    }
}

type Outcome = Result<(), Failure>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let log_format = match &cli.command {
        Command::Run { log_format, .. } => *log_format,
        _ => None,
    };
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(anyhow!("cannot start the async runtime: {e}")))
        .and_then(|rt| rt.block_on(dispatch(cli, log_format)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Reported(message)) => {
            if !message.is_empty() {
                eprintln!("schemawatch: {message}");
            }
            ExitCode::from(1)
        }
        Err(Failure::Usage(e)) => {
            eprintln!("schemawatch: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn init_logging(format: LogFormat, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

fn load_config(arg: &ConfigArg) -> anyhow::Result<Config> {
    Ok(Config::load(&arg.config)?)
}

fn open_registry(config: &Config) -> anyhow::Result<Registry> {
    Registry::open(&config.storage.path)
        .with_context(|| format!("cannot open registry {}", config.storage.path.display()))
}

fn print_json(value: &Value) {
    // serde_json without preserve_order sorts object keys, so output is byte-stable.
    say!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

async fn dispatch(cli: Cli, log_format: Option<LogFormat>) -> Outcome {
    match cli.command {
        Command::Run { config, .. } => {
            let config = load_config(&config)?;
            init_logging(log_format.unwrap_or(config.daemon.log_format), "info");
            schemawatch::daemon::run(config)
                .await
                .map_err(|e| Failure::Usage(e.into()))
        }
        Command::Check {
            config,
            watches,
            json,
        } => {
            let config = load_config(&config)?;
            init_logging(config.daemon.log_format, "info");
            check(&config, &watches, json).await
        }
        Command::Status { config, json } => {
            let config = load_config(&config)?;
            init_logging(config.daemon.log_format, "warn");
            status(&config, json)
        }
        Command::Pending { action } => pending(action),
        Command::History { tool, config, json } => {
            let config = load_config(&config)?;
            history(&config, &tool, json)
        }
        Command::Diff {
            old,
            new,
            kind,
            json,
            markdown,
            fail_on,
        } => diff(&old, &new, &kind, json, markdown, fail_on.as_deref()).await,
        Command::Config {
            action: ConfigCommand::Check { config },
        } => {
            let config = load_config(&config)?;
            say!(
                "{}: ok ({} watch{}, registry {})",
                config.path.display(),
                config.watches.len(),
                if config.watches.len() == 1 { "" } else { "es" },
                config.storage.path.display()
            );
            Ok(())
        }
        Command::Watch { action } => watch_command(action),
        Command::Rules { markdown } => {
            if markdown {
                say_raw!("{}", rules::rules_markdown());
            } else {
                for r in rules::RULES {
                    say!("{:<36} {:<10} {}", r.id, r.severity.as_str(), r.doc);
                }
            }
            Ok(())
        }
    }
}

async fn check(config: &Config, only: &[String], json: bool) -> Outcome {
    for name in only {
        if config.watch(name).is_none() {
            return Err(Failure::Usage(anyhow!(
                "{}: no watch named {name:?}",
                config.path.display()
            )));
        }
    }
    let mut registry = open_registry(config)?;
    let mut outcomes = Vec::new();
    for watch in config
        .watches
        .iter()
        .filter(|w| only.is_empty() || only.contains(&w.name))
    {
        outcomes.push(refresh(&mut registry, watch, config.storage.keep_versions).await);
    }
    let registry_version = registry.registry_version().map_err(anyhow::Error::from)?;
    if json {
        print_json(&json!({ "registry_version": registry_version, "outcomes": outcomes }));
    } else {
        for o in &outcomes {
            let mut line = format!("{:<30} {}", o.watch, o.action.as_str());
            if let Some(c) = o.compatibility {
                line.push_str(&format!(" ({c})"));
            }
            if let Some(id) = o.review_id {
                line.push_str(&format!(" review {id}"));
            }
            if let Some(e) = &o.error {
                line.push_str(&format!(": {e}"));
            }
            say!("{line}");
            if let Some(report) = &o.report {
                for l in report_text(report).lines().skip(1) {
                    say!("    {l}");
                }
            }
        }
        say!("registry version {registry_version}");
    }
    let errors = outcomes
        .iter()
        .filter(|o| o.action == Action::Error)
        .count();
    if errors > 0 {
        return Err(Failure::Reported(format!("{errors} watch(es) failed")));
    }
    Ok(())
}

fn status(config: &Config, json: bool) -> Outcome {
    let registry = open_registry(config)?;
    let registry_version = registry.registry_version().map_err(anyhow::Error::from)?;
    let mut rows = Vec::new();
    for watch in &config.watches {
        let state = registry
            .watch_state(&watch.name)
            .map_err(anyhow::Error::from)?;
        let tool = registry.tool(&watch.name).map_err(anyhow::Error::from)?;
        let pending = registry
            .open_change_count(&watch.name)
            .map_err(anyhow::Error::from)?;
        rows.push(json!({
            "watch": watch.name,
            "kind": watch.kind.as_str(),
            "status": state.as_ref().map_or("idle", |s| s.status.as_str()),
            "last_compatibility": state.as_ref().and_then(|s| s.last_compatibility.clone()),
            "pending_change_count": pending,
            "last_checked_at": state.as_ref().and_then(|s| s.last_checked_at.clone()),
            "last_error": state.as_ref().and_then(|s| s.last_error.clone()),
            "fingerprint": tool.map(|t| t.fingerprint),
        }));
    }
    if json {
        print_json(&json!({ "registry_version": registry_version, "watches": rows }));
    } else {
        say!("registry version {registry_version}");
        for r in &rows {
            let text = |k: &str| r[k].as_str().unwrap_or("-").to_string();
            say!(
                "{:<30} {:<8} {:<15} last {:<16} pending {:<4} checked {}{}",
                text("watch"),
                text("kind"),
                text("status"),
                text("last_compatibility"),
                r["pending_change_count"],
                text("last_checked_at"),
                r["last_error"]
                    .as_str()
                    .map(|e| format!("  error: {e}"))
                    .unwrap_or_default()
            );
        }
    }
    Ok(())
}

fn review_summary(r: &Review) -> Value {
    json!({
        "id": r.id,
        "watch": r.watch,
        "compatibility": r.compatibility,
        "change_count": r.change_count,
        "created_at": r.created_at,
        "base_registry_version": r.base_registry_version,
        "candidate_fingerprint": r.candidate_fingerprint,
        "state": r.state,
    })
}

fn decision_failure(e: RegistryError) -> Failure {
    match e {
        RegistryError::Superseded { .. } | RegistryError::ReviewNotFound { .. } => {
            Failure::Reported(e.to_string())
        }
        other => Failure::Usage(other.into()),
    }
}

fn pending(action: PendingCommand) -> Outcome {
    match action {
        PendingCommand::List { config, json } => {
            let config = load_config(&config)?;
            let registry = open_registry(&config)?;
            let reviews = registry.reviews(true).map_err(anyhow::Error::from)?;
            if json {
                print_json(&Value::Array(reviews.iter().map(review_summary).collect()));
            } else if reviews.is_empty() {
                say!("no pending reviews");
            } else {
                for r in &reviews {
                    say!(
                        "{:<6} {:<30} {:<16} {} change(s), created {}",
                        r.id,
                        r.watch,
                        r.compatibility,
                        r.change_count,
                        r.created_at
                    );
                }
            }
            Ok(())
        }
        PendingCommand::Show { id, config, json } => {
            let config = load_config(&config)?;
            let registry = open_registry(&config)?;
            let review = registry.review(id).map_err(decision_failure)?;
            if json {
                let mut value = review_summary(&review);
                value["report"] = report_json(&review.report);
                value["reviewer"] = json!(review.reviewer);
                value["reason"] = json!(review.reason);
                value["decided_at"] = json!(review.decided_at);
                print_json(&value);
            } else {
                say!(
                    "review {} for {} ({}), {}, created {}",
                    review.id,
                    review.watch,
                    review.state,
                    review.compatibility,
                    review.created_at
                );
                say_raw!("{}", report_text(&review.report));
            }
            Ok(())
        }
        PendingCommand::Accept {
            id,
            config,
            reviewer,
            reason,
            json,
        } => {
            let config = load_config(&config)?;
            let mut registry = open_registry(&config)?;
            let version = registry
                .accept(id, &reviewer, &reason, config.storage.keep_versions)
                .map_err(decision_failure)?;
            if json {
                print_json(&json!({"id": id, "state": "accepted", "registry_version": version}));
            } else {
                say!("review {id} accepted; registry version {version}");
            }
            Ok(())
        }
        PendingCommand::Reject {
            id,
            config,
            reviewer,
            reason,
            json,
        } => {
            let config = load_config(&config)?;
            let mut registry = open_registry(&config)?;
            registry
                .reject(id, &reviewer, &reason)
                .map_err(decision_failure)?;
            if json {
                print_json(&json!({"id": id, "state": "rejected"}));
            } else {
                say!("review {id} rejected; this candidate will not be queued again");
            }
            Ok(())
        }
    }
}

fn history(config: &Config, tool: &str, json: bool) -> Outcome {
    let registry = open_registry(config)?;
    let entries = registry.history(tool).map_err(anyhow::Error::from)?;
    if entries.is_empty() && registry.tool(tool).map_err(anyhow::Error::from)?.is_none() {
        return Err(Failure::Usage(anyhow!(
            "no tool named {tool:?} in the registry"
        )));
    }
    if json {
        print_json(&serde_json::to_value(&entries).map_err(anyhow::Error::from)?);
    } else {
        for e in &entries {
            say!(
                "v{:<4} registry {:<5} {} {} {}{}",
                e.version,
                e.registry_version,
                e.applied_at,
                e.fingerprint,
                e.compatibility.as_deref().unwrap_or("registered"),
                match (&e.reviewer, &e.reason) {
                    (Some(who), Some(why)) =>
                        format!(" (review {}, {who}: {why})", e.review_id.unwrap_or(0)),
                    _ => String::new(),
                }
            );
        }
    }
    Ok(())
}

fn watch_command(action: WatchCommand) -> Outcome {
    match action {
        WatchCommand::Forget { name, config } => {
            let config = load_config(&config)?;
            if config.watch(&name).is_some() {
                return Err(Failure::Usage(anyhow!(
                    "watch {name:?} is still in {}; remove it from the config first",
                    config.path.display()
                )));
            }
            let mut registry = open_registry(&config)?;
            if registry.forget(&name).map_err(anyhow::Error::from)? {
                say!("forgot {name}");
                Ok(())
            } else {
                Err(Failure::Reported(format!("no stored state for {name:?}")))
            }
        }
        WatchCommand::Reset { name, config } => {
            let config = load_config(&config)?;
            let mut registry = open_registry(&config)?;
            if registry.reset(&name).map_err(anyhow::Error::from)? {
                say!("reset {name}");
                Ok(())
            } else {
                Err(Failure::Reported(format!("no stored state for {name:?}")))
            }
        }
    }
}

/// Reads a diff input: a URL (http/https) or a file path; errors name the input. A GraphQL
/// URL is introspected (POST).
async fn read_input(input: &str, kind: Kind) -> anyhow::Result<Vec<u8>> {
    let source = match url::Url::parse(input) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Source::Url(url),
        _ => Source::Path(Path::new(input).to_path_buf()),
    };
    let request = FetchRequest {
        source,
        headers: Default::default(),
        timeout: Duration::from_secs(60),
        connect_timeout: Duration::from_secs(10),
        max_bytes: schemawatch::config::DEFAULT_MAX_BYTES,
        ca_file: None,
        proxy: None,
        validators: None,
    };
    let fetched = match kind {
        Kind::Graphql => fetch::graphql::fetch_schema(&request).await,
        _ => fetch::fetch(&request).await,
    };
    match fetched.with_context(|| input.to_string())? {
        FetchOutcome::Body { bytes, .. } => Ok(bytes),
        FetchOutcome::NotModified => Err(anyhow!("{input}: unexpected 304 Not Modified")),
    }
}

async fn load_spec(input: &str, kind: Kind) -> anyhow::Result<ToolSpec> {
    let bytes = read_input(input, kind).await?;
    normalize(kind, "diff.document", &bytes).with_context(|| input.to_string())
}

async fn diff(
    old: &str,
    new: &str,
    kind: &str,
    json: bool,
    markdown: bool,
    fail_on: Option<&str>,
) -> Outcome {
    let kind = Kind::parse(kind).ok_or_else(|| anyhow!("unknown kind {kind:?}"))?;
    let old_spec = load_spec(old, kind).await?;
    let new_spec = load_spec(new, kind).await?;
    let report = classify(&old_spec, &new_spec, &Default::default());
    if json {
        print_json(&report_json(&report));
    } else if markdown {
        say_raw!("{}", report_markdown(&report));
    } else {
        say_raw!("{}", report_text(&report));
    }
    if let Some(level) = fail_on.and_then(Compatibility::parse) {
        if report.compatibility >= level {
            return Err(Failure::Reported(String::new()));
        }
    }
    Ok(())
}
