//! The `schemawatch` command line, a file per subcommand. Exit codes: 0 success; 1 the command
//! ran but reports a failure; 2 bad usage, config or input. Every JSON shape a subcommand prints
//! comes from `schemawatch::views` (or the artifact it prints), so the API and the CLI agree.

use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};
use schemawatch::config::{Config, LogFormat};
use schemawatch::core::model::Kind;
use schemawatch::registry::Registry;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Writes a line to stdout; a closed pipe (`schemawatch diff ... | head`) is not an error.
/// Everything printed is made inert for CI runners first (provider text cannot start a
/// workflow command, docs/reliability.md H30).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            schemawatch::core::inert::inert_text(&text)
        );
    }};
}

macro_rules! say_raw {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = write!(
            std::io::stdout().lock(),
            "{}",
            schemawatch::core::inert::inert_text(&text)
        );
    }};
}

/// [`say!`] for JSON text: `##[` is written `#\u0023[` (the same string to a JSON reader).
macro_rules! say_json {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let text = format!($($arg)*);
        let _ = writeln!(
            std::io::stdout().lock(),
            "{}",
            schemawatch::core::inert::inert_json(&text)
        );
    }};
}

/// A line to stderr, inert for CI runners like everything [`say!`] prints.
macro_rules! warn_line {
    ($($arg:tt)*) => {{
        let text = format!($($arg)*);
        eprintln!("{}", schemawatch::core::inert::inert_text(&text));
    }};
}

mod catalog;
mod check;
mod completions;
mod config;
mod daemon;
mod diff;
mod history;
mod inspect;
mod mcp_gateway;
mod notify;
mod pending;
mod pin;
mod registry;
mod rules;
mod status;
mod triage;
mod watch;

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

#[derive(clap::Args, Clone)]
struct ConfigArg {
    /// The TOML config file.
    #[arg(long, env = "SCHEMAWATCH_CONFIG")]
    config: PathBuf,
}

#[derive(Subcommand)]
enum Command {
    /// Run the daemon: refresh every watch on its interval until SIGTERM/SIGINT.
    Run(daemon::RunArgs),
    /// Exit 0 when the daemon of this config answers `/readyz` (for container HEALTHCHECKs).
    Healthcheck(daemon::HealthcheckArgs),
    /// Run one refresh cycle of every (or the named) watch now.
    Check(check::CheckArgs),
    /// Show every watch's state.
    Status(status::StatusArgs),
    /// List, show, accept or reject pending reviews.
    Pending {
        #[command(subcommand)]
        action: pending::PendingCommand,
    },
    /// Show a tool's applied versions, newest first.
    History(history::HistoryArgs),
    /// Compare two documents without a registry. Each is a file, `-` (stdin), an http(s) URL,
    /// `git:REV:PATH` or `cmd:<JSON argv>` (an MCP stdio server), read as a watch of --kind reads it.
    Diff(diff::DiffArgs),
    /// Validate a config file.
    Config {
        #[command(subcommand)]
        action: config::ConfigCommand,
    },
    /// Manage a watch's stored state.
    Watch {
        #[command(subcommand)]
        action: watch::WatchCommand,
    },
    /// Content-free tool inventory and catalog diff.
    Catalog {
        #[command(subcommand)]
        action: catalog::CatalogCommand,
    },
    /// Capture or check a pin of reviewed tool versions.
    Pin {
        #[command(subcommand)]
        action: pin::PinCommand,
    },
    /// Put every endpoint in one surface bucket; check a classification file against it.
    Triage(triage::TriageArgs),
    /// Compare registries without fetching or writing.
    Inspect {
        #[command(subcommand)]
        action: inspect::InspectCommand,
    },
    /// List the drift rules (`--markdown` renders docs/rules.md).
    Rules(rules::RulesArgs),
    /// Shell completions (bash, zsh, fish), generated from the command line.
    Completions(completions::CompletionsArgs),
    /// Man pages: schemawatch(1) to stdout, or every page into --dir.
    Man(completions::ManArgs),
    /// An MCP server on stdio for an agent host, in front of an MCP watch's server: the agent
    /// sees and calls only what was accepted.
    McpGateway(mcp_gateway::GatewayArgs),
    /// Notification sinks: send a test event, list deliveries.
    Notify {
        #[command(subcommand)]
        action: notify::NotifyCommand,
    },
    /// Registry maintenance: copy a registry between SQLite and PostgreSQL.
    Registry {
        #[command(subcommand)]
        action: registry::RegistryCommand,
    },
}

/// `--kind`: one of the contract kinds, by the names the config uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct KindArg(Kind);

impl clap::ValueEnum for KindArg {
    fn value_variants<'a>() -> &'a [Self] {
        const VARIANTS: [KindArg; Kind::ALL.len()] = {
            let all = Kind::ALL;
            let mut out = [KindArg(Kind::Openapi); Kind::ALL.len()];
            let mut i = 0;
            while i < all.len() {
                out[i] = KindArg(all[i]);
                i += 1;
            }
            out
        };
        &VARIANTS
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.as_str()))
    }
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

/// Parses the command line, runs the subcommand and maps its outcome to the exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    // Orphaned descendants of an MCP stdio server stay ours to kill (docs/reliability.md H1).
    schemawatch::process::become_subreaper();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Usage(anyhow!("cannot start the async runtime: {e}")))
        .and_then(|rt| {
            let result = rt.block_on(dispatch(cli));
            // A blocking read that outlived its deadline (abandoned by a timeout) must not keep
            // the process alive: dropping the runtime would wait for it forever (H17).
            rt.shutdown_timeout(std::time::Duration::from_secs(1));
            result
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Reported(message)) => {
            if !message.is_empty() {
                warn_line!("schemawatch: {message}");
            }
            ExitCode::from(1)
        }
        Err(Failure::Usage(e)) => {
            warn_line!("schemawatch: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn dispatch(cli: Cli) -> Outcome {
    match cli.command {
        Command::Run(args) => daemon::run(args).await,
        Command::Healthcheck(args) => daemon::healthcheck(args).await,
        Command::Check(args) => check::run(args).await,
        Command::Status(args) => status::run(args),
        Command::Pending { action } => pending::run(action),
        Command::History(args) => history::run(args),
        Command::Diff(args) => diff::run(args).await,
        Command::Config { action } => config::run(action),
        Command::Watch { action } => watch::run(action),
        Command::Catalog { action } => catalog::run(action).await,
        Command::Pin { action } => pin::run(action).await,
        Command::Triage(args) => triage::run(args),
        Command::Inspect { action } => inspect::run(action),
        Command::Rules(args) => rules::run(args),
        Command::Notify { action } => notify::run(action).await,
        Command::Registry { action } => registry::run(action).await,
        Command::McpGateway(args) => mcp_gateway::run(args).await,
        Command::Completions(args) => completions::completions(args),
        Command::Man(args) => completions::man(args),
    }
}

fn init_logging(format: LogFormat, default_level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_level));
    // Colour only for a person at a terminal, never into journald or a log file.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let json = matches!(format, LogFormat::Json);
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || InertStderr { json, ansi })
        .with_ansi(ansi);
    let _ = match format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

/// Stderr for log lines, made inert for CI runners (a logged provider error cannot start a
/// workflow command, docs/reliability.md H30). The formatter writes one event per call.
struct InertStderr {
    json: bool,
    ansi: bool,
}

impl std::io::Write for InertStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use schemawatch::core::inert::{inert_json, inert_text_with};
        let text = String::from_utf8_lossy(buf);
        let inert = if self.json {
            inert_json(&text)
        } else {
            inert_text_with(&text, !self.ansi)
        };
        std::io::stderr().lock().write_all(inert.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().lock().flush()
    }
}

fn load_config(arg: &ConfigArg) -> anyhow::Result<Config> {
    let config = Config::load(&arg.config)?;
    // Whichever command writes an event creates the deliveries the config asks for.
    schemawatch::registry::set_process_routes(std::sync::Arc::new(config.routes()));
    // Stored values inflate within a bound derived from the watches' `max_bytes`, not 2 GiB
    // (docs/reliability.md H38). Set once, before any registry is read.
    schemawatch::registry::set_inflate_limit(config.inflate_limit());
    Ok(config)
}

fn open_registry(config: &Config) -> anyhow::Result<Registry> {
    let location = &config.storage.location;
    let mut registry = Registry::open_at(location, config.storage.create)
        .with_context(|| format!("cannot open registry {location}"))?;
    // File identities of older releases, stored relative (docs/reliability.md H10).
    schemawatch::refresh::migrate_identities(&mut registry, config)
        .with_context(|| format!("cannot migrate registry {location}"))?;
    Ok(registry)
}

/// The registry for a command that only reads (`status`, `history`, `pending list|show`,
/// `catalog export`, `pin`, `triage`): opened as usual (migrations, upgrades) or, when that
/// needs a write it cannot make (a 0444 file, a read-only folder or mount: a backup, a
/// snapshot), opened read-only (docs/reliability.md H22). A missing file keeps the usual path.
fn open_registry_reading(config: &Config) -> anyhow::Result<Registry> {
    match open_registry(config) {
        Ok(registry) => Ok(registry),
        Err(e) => {
            // A read-only file only: a PostgreSQL session that cannot migrate or upgrade
            // the registry has nothing a read-only one would do better.
            let path = config.storage.location.sqlite_path();
            match path.filter(|p| p.is_file()).map(Registry::open_read_only) {
                Some(Ok(registry)) => {
                    tracing::debug!(event = "registry_opened_read_only", error = %format!("{e:#}"));
                    Ok(registry)
                }
                _ => Err(e),
            }
        }
    }
}

fn print_json(value: &Value) {
    // serde_json without preserve_order sorts object keys, so output is byte-stable.
    say_json!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_default()
    );
}

/// The current catalog records (with implementation identities) of the configured watches.
fn current_tools(
    config: &Config,
    only: &[String],
) -> anyhow::Result<Vec<schemawatch::artifacts::pin::PinnedTool>> {
    let registry = open_registry_reading(config)?;
    Ok(schemawatch::artifacts::current_tools(
        config, &registry, only,
    )?)
}

fn read_text(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// Reads review artifacts (inventories, pins) named in the source grammar (a file, `-`, a URL,
/// `git:REV:PATH`), as text; errors name the argument.
async fn read_artifacts(inputs: &[&str]) -> anyhow::Result<Vec<String>> {
    let sources = schemawatch::sources::parse_arguments(inputs, &[])?;
    let request = schemawatch::sources::Request::command_line();
    let mut out = Vec::with_capacity(inputs.len());
    for (input, source) in inputs.iter().zip(&sources) {
        let bytes = schemawatch::sources::read_document(source, &request)
            .await
            .with_context(|| format!("cannot read {input}"))?;
        out.push(String::from_utf8(bytes).map_err(|_| anyhow!("{input}: not UTF-8 text"))?);
    }
    Ok(out)
}
