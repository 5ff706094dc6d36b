//! `schemawatch status`: every watch's state.

use super::{load_config, open_registry, print_json, ConfigArg, Outcome};
use schemawatch::config::Config;
use schemawatch::views;

#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    config: ConfigArg,
    #[arg(long)]
    json: bool,
}

pub fn run(args: StatusArgs) -> Outcome {
    let config = load_config(&args.config)?;
    super::init_logging(config.daemon.log_format, "warn");
    status(&config, args.json)
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
