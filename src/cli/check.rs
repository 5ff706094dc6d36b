//! `schemawatch check`: one refresh cycle of every (or the named) watch now.

use super::{load_config, open_registry, print_json, ConfigArg, Failure, Outcome};
use anyhow::anyhow;
use schemawatch::config::Config;
use schemawatch::core::report::report_text;
use schemawatch::refresh::{refresh, Action};
use schemawatch::views;

#[derive(clap::Args)]
pub struct CheckArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// Only these watches (repeatable).
    #[arg(long = "watch")]
    watches: Vec<String>,
    #[arg(long)]
    json: bool,
}

pub async fn run(args: CheckArgs) -> Outcome {
    let config = load_config(&args.config)?;
    super::init_logging(config.daemon.log_format, "info");
    check(&config, &args.watches, args.json).await
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
