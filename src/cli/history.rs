//! `schemawatch history`: a tool's applied versions, newest first.

use super::{load_config, open_registry_reading, print_json, ConfigArg, Failure, Outcome};
use anyhow::anyhow;
use schemawatch::config::Config;
use schemawatch::views;

#[derive(clap::Args)]
pub struct HistoryArgs {
    tool: String,
    #[command(flatten)]
    config: ConfigArg,
    #[arg(long)]
    json: bool,
}

pub fn run(args: HistoryArgs) -> Outcome {
    let config = load_config(&args.config)?;
    history(&config, &args.tool, args.json)
}

fn history(config: &Config, tool: &str, json: bool) -> Outcome {
    let registry = open_registry_reading(config)?;
    let entries = registry.history(tool).map_err(anyhow::Error::from)?;
    if entries.is_empty() && registry.tool(tool).map_err(anyhow::Error::from)?.is_none() {
        return Err(Failure::Usage(anyhow!(
            "no tool named {tool:?} in the registry"
        )));
    }
    if json {
        print_json(&views::history_json(&entries).map_err(anyhow::Error::from)?);
    } else {
        for e in &entries {
            say!(
                "v{:<4} registry {:<5} {} {} {}{}",
                e.version,
                e.registry_version,
                e.applied_at,
                e.fingerprint,
                e.compatibility.map_or("registered", |c| c.as_str()),
                match (&e.reviewer, &e.reason) {
                    (Some(who), Some(why)) => format!(
                        " (review {}, {who}{}: {why})",
                        e.review_id.unwrap_or(0),
                        e.via
                            .as_ref()
                            .map(|v| format!(" via={v}"))
                            .unwrap_or_default()
                    ),
                    _ => String::new(),
                } + &e
                    .note
                    .as_ref()
                    .map(|n| format!(" [{n}]"))
                    .unwrap_or_default()
            );
        }
    }
    Ok(())
}
