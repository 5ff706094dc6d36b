//! `schemawatch run` (the daemon) and `schemawatch healthcheck`.

use super::{load_config, ConfigArg, Failure, Outcome};
use schemawatch::config::LogFormat;

#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Log format (overrides `[daemon] log_format`).
    #[arg(long, value_enum)]
    log_format: Option<LogFormat>,
}

#[derive(clap::Args)]
pub struct HealthcheckArgs {
    #[command(flatten)]
    config: ConfigArg,
}

pub async fn run(args: RunArgs) -> Outcome {
    // Our own signal handlers, first (docs/reliability.md P17).
    let events = schemawatch::daemon::signal_events().map_err(|e| Failure::Usage(e.into()))?;
    let config = load_config(&args.config)?;
    super::init_logging(args.log_format.unwrap_or(config.daemon.log_format), "info");
    schemawatch::daemon::run(config, events)
        .await
        .map(|_stopped| ())
        .map_err(|e| Failure::Usage(e.into()))
}

pub async fn healthcheck(args: HealthcheckArgs) -> Outcome {
    let config = load_config(&args.config)?;
    schemawatch::api::probe_ready(&config.server.listen)
        .await
        .map_err(Failure::Reported)
}
