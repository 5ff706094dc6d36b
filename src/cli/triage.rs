//! `schemawatch triage`: every endpoint in one surface bucket; a classification file checked.

use super::{
    load_config, open_registry_reading, print_json, read_text, ConfigArg, Failure, Outcome,
};
use anyhow::anyhow;
use schemawatch::artifacts::triage as surface;
use schemawatch::config::Config;
use schemawatch::views;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct TriageArgs {
    #[command(flatten)]
    config: ConfigArg,
    /// TOML: bucket = ["watch/endpoint", ...] (buckets: real_dispatch, read_only, native_only).
    #[arg(long)]
    classification: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

pub fn run(args: TriageArgs) -> Outcome {
    let config = load_config(&args.config)?;
    triage(&config, args.classification.as_deref(), args.json)
}

fn triage(config: &Config, classification: Option<&Path>, json: bool) -> Outcome {
    let registry = open_registry_reading(config)?;
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
        print_json(&views::triage_drift_json(summary, &drift));
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
