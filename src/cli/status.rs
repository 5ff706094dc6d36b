//! `schemawatch status`: every watch's state (`--status S`: only the watches in status S).

use super::{load_config, open_registry_reading, print_json, ConfigArg, Failure, Outcome};
use schemawatch::config::Config;
use schemawatch::registry::WatchStatus;
use schemawatch::views::{self, Filter, Page};

#[derive(clap::Args)]
pub struct StatusArgs {
    #[command(flatten)]
    config: ConfigArg,
    #[arg(long)]
    json: bool,
    /// Only the watches whose status is this (idle, registered, unchanged, applied,
    /// report_only, pending_review, rejected, error, stale).
    #[arg(long, value_name = "STATUS")]
    status: Option<String>,
}

pub fn run(args: StatusArgs) -> Outcome {
    let config = load_config(&args.config)?;
    super::init_logging(config.daemon.log_format, "warn");
    let filter = Filter {
        status: match &args.status {
            None => None,
            Some(s) => Some(WatchStatus::parse(s).ok_or_else(|| {
                Failure::Usage(anyhow::anyhow!(
                    "--status: unknown status {s:?} (expected one of {})",
                    WatchStatus::ALL
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?),
        },
        q: None,
    };
    status(&config, args.json, &filter)
}

fn status(config: &Config, json: bool, filter: &Filter) -> Outcome {
    let registry = open_registry_reading(config)?;
    let (status, _) = views::status_listing(config, &registry, filter, &Page::default())
        .map_err(anyhow::Error::from)?;
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
