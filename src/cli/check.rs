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
    /// Do not deliver due notifications before exiting (a daemon holding the delivery lease
    /// delivers them anyway).
    #[arg(long)]
    no_notify: bool,
}

pub async fn run(args: CheckArgs) -> Outcome {
    let config = load_config(&args.config)?;
    super::init_logging(config.daemon.log_format, "info");
    let result = check(&config, &args.watches, args.json).await;
    if !args.no_notify {
        deliver(&config).await;
    }
    result
}

/// Delivers every due notification before exiting, when no daemon holds the delivery lease
/// (a cron `check` with no daemon). Bounded; failures are retried by the next run or a
/// daemon, and never change the exit code.
async fn deliver(config: &Config) {
    // With no sink configured a pass only fails the pending rows of removed sinks.
    let Ok(mut registry) = open_registry(config) else {
        return;
    };
    let owner = format!("check-{}", std::process::id());
    let now = schemawatch::registry::events::now_ms();
    if registry.delivery_lease_held(&owner, now).unwrap_or(true) {
        return;
    }
    let bound = config
        .notifications
        .timeout
        .saturating_mul(2)
        .saturating_add(std::time::Duration::from_secs(5));
    match tokio::time::timeout(
        bound,
        schemawatch::notify::deliver_due(&mut registry, config, &owner, None),
    )
    .await
    {
        Ok(Ok(s)) if s.attempts() > 0 => tracing::info!(
            event = "notifications_sent",
            delivered = s.delivered,
            retried = s.retried,
            failed = s.failed
        ),
        Ok(Ok(_)) => {}
        Ok(Err(e)) => tracing::warn!(event = "notification_pass_failed", error = %e),
        Err(_) => tracing::warn!(
            event = "notification_pass_cut",
            "due notifications not all sent within the bound; the next run or a daemon sends the rest"
        ),
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
