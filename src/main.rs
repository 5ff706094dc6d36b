//! The `schemawatch` command line. Exit codes: 0 success; 1 the command ran but reports a
//! failure; 2 bad usage, config or input.

use anyhow::{anyhow, Context};
use clap::{Args, Parser, Subcommand};
use schemawatch::artifacts::provenance::stamp;
use schemawatch::artifacts::{catalog, pin, triage as surface};
use schemawatch::config::{Config, LogFormat};
use schemawatch::core::diff::{classify, rules};
use schemawatch::core::model::{Compatibility, Kind, ToolSpec};
use schemawatch::core::report::{report_json, report_markdown, report_text};
use schemawatch::refresh::{refresh, Action};
use schemawatch::registry::{Registry, RegistryError};
use schemawatch::sources::{self, Source};
use schemawatch::views;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    /// Exit 0 when the daemon of this config answers `/readyz` (for container HEALTHCHECKs).
    Healthcheck {
        #[command(flatten)]
        config: ConfigArg,
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
    /// Compare two documents without a registry. Each is a file, `-` (stdin), an http(s) URL,
    /// `git:REV:PATH` or `cmd:<JSON argv>` (an MCP stdio server), read as a watch of --kind reads it.
    Diff {
        old: String,
        new: String,
        #[arg(long, default_value = "openapi")]
        kind: String,
        /// NAME=VALUE for a `cmd:` server's environment (repeatable; values expand `${VAR}`).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        #[arg(long)]
        markdown: bool,
        /// With --json: stamp the report with its reasoning (`_toulmin`, `_tags`).
        #[arg(long, requires = "json")]
        provenance: bool,
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
    /// Content-free tool inventory and catalog diff.
    Catalog {
        #[command(subcommand)]
        action: CatalogCommand,
    },
    /// Capture or check a pin of reviewed tool versions.
    Pin {
        #[command(subcommand)]
        action: PinCommand,
    },
    /// Put every endpoint in one surface bucket; check a classification file against it.
    Triage {
        #[command(flatten)]
        config: ConfigArg,
        /// TOML: bucket = ["watch/endpoint", ...] (buckets: real_dispatch, read_only, native_only).
        #[arg(long)]
        classification: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Compare registries without fetching or writing.
    Inspect {
        #[command(subcommand)]
        action: InspectCommand,
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
enum CatalogCommand {
    /// Print the inventory of every watched endpoint (canonical JSON).
    Export {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Compare two inventories keyed by (tool_id, version).
    Diff {
        base: PathBuf,
        candidate: PathBuf,
        #[arg(long, value_parser = ["json", "markdown"], default_value = "json")]
        format: String,
    },
}

#[derive(Subcommand)]
enum PinCommand {
    /// Print a pin of the current tool versions (all watches, or the named ones).
    Capture {
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long = "watch")]
        watches: Vec<String>,
    },
    /// Check a pin: exit 0 eligible, 1 re-review required, 2 invalid.
    Check {
        pin: PathBuf,
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum InspectCommand {
    /// Classify a tool between two registry files, opened read-only.
    Diff {
        tool: String,
        #[arg(long)]
        old_db: PathBuf,
        #[arg(long)]
        new_db: PathBuf,
        #[arg(long)]
        endpoint: Option<String>,
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
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal, never into journald or a log file.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
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
        Command::Healthcheck { config } => {
            let config = load_config(&config)?;
            schemawatch::api::probe_ready(&config.server.listen)
                .await
                .map_err(Failure::Reported)
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
            env,
            json,
            markdown,
            provenance,
            fail_on,
        } => {
            diff(
                [&old, &new],
                &env,
                &kind,
                json,
                markdown,
                provenance,
                fail_on.as_deref(),
            )
            .await
        }
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
        Command::Catalog { action } => catalog_command(action),
        Command::Pin { action } => pin_command(action),
        Command::Triage {
            config,
            classification,
            json,
        } => {
            let config = load_config(&config)?;
            triage(&config, classification.as_deref(), json)
        }
        Command::Inspect {
            action:
                InspectCommand::Diff {
                    tool,
                    old_db,
                    new_db,
                    endpoint,
                    json,
                },
        } => inspect_diff(&tool, &old_db, &new_db, endpoint.as_deref(), json),
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
        print_json(&views::check_json(registry_version, &outcomes));
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
    let status = views::status_json(config, &registry).map_err(anyhow::Error::from)?;
    let registry_version = &status["registry_version"];
    let empty = Vec::new();
    let rows = status["watches"].as_array().unwrap_or(&empty);
    if json {
        print_json(&status);
    } else {
        say!("registry version {registry_version}");
        for r in rows {
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
                print_json(&views::pending_list_json(&reviews));
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
                print_json(&views::review_detail(&review));
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
                print_json(&views::accepted_json(id, version));
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
                print_json(&views::rejected_json(id));
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

/// The contract of one document argument, read the way a watch of `kind` reads it.
async fn load_spec(input: &str, source: &Source, kind: Kind) -> anyhow::Result<ToolSpec> {
    sources::load_spec(
        kind,
        "diff.document",
        source,
        &sources::Request::command_line(),
    )
    .await
    .with_context(|| input.to_string())
}

async fn diff(
    [old, new]: [&str; 2],
    env: &[String],
    kind: &str,
    json: bool,
    markdown: bool,
    provenance: bool,
    fail_on: Option<&str>,
) -> Outcome {
    let kind = Kind::parse(kind).ok_or_else(|| anyhow!("unknown kind {kind:?}"))?;
    let parsed = sources::parse_arguments(&[old, new], env).map_err(anyhow::Error::from)?;
    let old_spec = load_spec(old, &parsed[0], kind).await?;
    let new_spec = load_spec(new, &parsed[1], kind).await?;
    let report = classify(&old_spec, &new_spec, &Default::default());
    if json && provenance {
        print_json(&stamp(report_json(&report), &report, "diff"));
    } else if json {
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

/// The current catalog records (with implementation identities) of the configured watches.
fn current_tools(config: &Config, only: &[String]) -> anyhow::Result<Vec<pin::PinnedTool>> {
    let registry = open_registry(config)?;
    Ok(schemawatch::artifacts::current_tools(
        config, &registry, only,
    )?)
}

fn read_text(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

fn catalog_command(action: CatalogCommand) -> Outcome {
    match action {
        CatalogCommand::Export { config } => {
            let config = load_config(&config)?;
            let records: Vec<catalog::ToolRecord> = current_tools(&config, &[])?
                .into_iter()
                .map(|t| t.record)
                .collect();
            say!("{}", catalog::inventory_json(&records));
            Ok(())
        }
        CatalogCommand::Diff {
            base,
            candidate,
            format,
        } => {
            let parse = |path: &Path, side: &str| -> anyhow::Result<Vec<catalog::ToolRecord>> {
                catalog::parse_inventory(&read_text(path)?)
                    .map_err(|e| anyhow!("{}: {side}.{e}", path.display()))
            };
            let diff = catalog::diff(&parse(&base, "baseline")?, &parse(&candidate, "candidate")?);
            if format == "markdown" {
                say_raw!("{}", diff.to_markdown());
            } else {
                say!("{}", diff.to_json());
            }
            Ok(())
        }
    }
}

fn pin_command(action: PinCommand) -> Outcome {
    match action {
        PinCommand::Capture { config, watches } => {
            let config = load_config(&config)?;
            for name in &watches {
                if config.watch(name).is_none() {
                    return Err(Failure::Usage(anyhow!(
                        "{}: no watch named {name:?}",
                        config.path.display()
                    )));
                }
            }
            say!("{}", pin::capture(&current_tools(&config, &watches)?));
            Ok(())
        }
        PinCommand::Check {
            pin: pin_path,
            config,
            json,
        } => {
            let config = load_config(&config)?;
            let text = read_text(&pin_path)?;
            let registry = open_registry(&config)?;
            let result = schemawatch::artifacts::check_pin(&config, &registry, &text)
                .map_err(anyhow::Error::from)?;
            if json {
                print_json(&result.to_json());
            } else {
                say!(
                    "{}{}",
                    if result.eligible() {
                        "eligible"
                    } else {
                        "re-review-required"
                    },
                    if result.reasons.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", result.reasons.join(", "))
                    }
                );
            }
            if result.reasons.contains(&"invalid_snapshot") {
                Err(Failure::Usage(anyhow!(
                    "{}: invalid pin",
                    pin_path.display()
                )))
            } else if result.eligible() {
                Ok(())
            } else {
                Err(Failure::Reported(String::new()))
            }
        }
    }
}

fn triage(config: &Config, classification: Option<&Path>, json: bool) -> Outcome {
    let registry = open_registry(config)?;
    let mut buckets = std::collections::BTreeMap::new();
    for watch in &config.watches {
        if let Some(tool) = registry.tool(&watch.name).map_err(anyhow::Error::from)? {
            for e in &tool.spec.endpoints {
                buckets.insert(format!("{}/{}", watch.name, e.name), surface::bucket_of(e));
            }
        }
    }
    let summary = surface::summary(&buckets);
    let Some(path) = classification else {
        if json {
            print_json(&summary);
        } else {
            for b in surface::BUCKETS {
                say!("{b}: {}", summary["counts"][b]);
            }
            say!(
                "total: {}, executes server-side: {}",
                summary["total"],
                summary["executes_server_side"]
            );
        }
        return Ok(());
    };
    let parsed: std::collections::BTreeMap<String, Vec<String>> = toml::from_str(&read_text(path)?)
        .map_err(|e| anyhow!("{}: {}", path.display(), e.message()))?;
    let drift = surface::drift(&buckets.keys().cloned().collect(), &parsed);
    if json {
        print_json(&serde_json::json!({"summary": summary, "drift": drift.to_json()}));
    } else {
        say!("{}", if drift.ok() { "ok" } else { "drift" });
        for (label, items) in [
            ("unclassified", &drift.unclassified),
            ("unknown_buckets", &drift.unknown_buckets),
            ("unknown_tools", &drift.unknown_tools),
        ] {
            for item in items {
                say!("{label}: {item}");
            }
        }
        for (id, in_buckets) in &drift.multiply_classified {
            say!("multiply_classified: {id} in {}", in_buckets.join(", "));
        }
    }
    if drift.ok() {
        Ok(())
    } else {
        Err(Failure::Reported(String::new()))
    }
}

fn inspect_diff(
    tool: &str,
    old_db: &Path,
    new_db: &Path,
    endpoint: Option<&str>,
    json: bool,
) -> Outcome {
    let load = |path: &Path| -> anyhow::Result<ToolSpec> {
        let registry = Registry::open_read_only(path)
            .with_context(|| format!("cannot open registry {}", path.display()))?;
        let stored = registry
            .tool(tool)?
            .ok_or_else(|| anyhow!("{}: no tool named {tool:?}", path.display()))?;
        Ok(stored.spec)
    };
    let (mut old, mut new) = (load(old_db)?, load(new_db)?);
    if let Some(name) = endpoint {
        let keep = |spec: &mut ToolSpec| spec.endpoints.retain(|e| e.name == name);
        keep(&mut old);
        keep(&mut new);
        if old.endpoints.is_empty() && new.endpoints.is_empty() {
            return Err(Failure::Usage(anyhow!(
                "no endpoint named {name:?} in either registry"
            )));
        }
    }
    let report = classify(&old, &new, &Default::default());
    if json {
        print_json(&report_json(&report));
    } else {
        say_raw!("{}", report_text(&report));
    }
    Ok(())
}
