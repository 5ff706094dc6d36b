//! `schemawatch pending list|show|accept|reject`: the review queue.

use super::{
    load_config, open_registry, open_registry_reading, print_json, ConfigArg, Failure, Outcome,
};
use schemawatch::core::report::report_text;
use schemawatch::registry::RegistryError;
use schemawatch::views;

#[derive(clap::Subcommand)]
pub enum PendingCommand {
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

fn decision_failure(e: RegistryError) -> Failure {
    match e {
        RegistryError::Superseded { .. } | RegistryError::ReviewNotFound { .. } => {
            Failure::Reported(e.to_string())
        }
        other => Failure::Usage(other.into()),
    }
}

pub fn run(action: PendingCommand) -> Outcome {
    match action {
        PendingCommand::List { config, json } => {
            let config = load_config(&config)?;
            let registry = open_registry_reading(&config)?;
            let reviews = registry.review_heads(true).map_err(anyhow::Error::from)?;
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
                        r.compatibility.as_str(),
                        r.change_count,
                        r.created_at
                    );
                }
            }
            Ok(())
        }
        PendingCommand::Show { id, config, json } => {
            let config = load_config(&config)?;
            let registry = open_registry_reading(&config)?;
            let review = registry.review(id).map_err(decision_failure)?;
            if json {
                print_json(&views::review_detail(&review));
            } else {
                say!(
                    "review {} for {} ({}), {}, created {}",
                    review.id,
                    review.watch,
                    review.state,
                    review.compatibility.as_str(),
                    review.created_at
                );
                match &review.report {
                    Some(report) => say_raw!("{}", report_text(report)),
                    None => say!(
                        "pruned at {}: candidate and report dropped ([storage] keep_reviews); {} change(s), candidate {}",
                        review.pruned_at.as_deref().unwrap_or("?"),
                        review.change_count,
                        review.candidate_fingerprint
                    ),
                }
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
            schemawatch::registry::check_decision_text(&reviewer, &reason)
                .map_err(|e| Failure::Usage(anyhow::anyhow!(e)))?;
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
            schemawatch::registry::check_decision_text(&reviewer, &reason)
                .map_err(|e| Failure::Usage(anyhow::anyhow!(e)))?;
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
