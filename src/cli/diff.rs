//! `schemawatch diff`: compare two documents without a registry.

use super::{print_json, Failure, KindArg, Outcome};
use anyhow::{anyhow, Context};
use schemawatch::artifacts::provenance::stamp;
use schemawatch::config::{parse_overrides, Config};
use schemawatch::core::diff::{classify, ClassifyPolicy};
use schemawatch::core::model::{Compatibility, Kind, ToolSpec};
use schemawatch::core::report::{report_json, report_markdown, report_text};
use schemawatch::refresh::watch_policy;
use schemawatch::sources::{self, Source};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct DiffArgs {
    old: String,
    new: String,
    #[arg(long, value_enum, default_value_t = KindArg(Kind::Openapi))]
    kind: KindArg,
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
    /// Classify with this config's `[severity]` overrides (and, with --watch, that watch's).
    #[arg(long)]
    config: Option<PathBuf>,
    /// With --config: the policy of this watch (its `[watch.severity]` and classification file).
    #[arg(long, requires = "config")]
    watch: Option<String>,
    /// A severity override, `RULE=LEVEL` (repeatable; applied after the config's).
    #[arg(long = "severity", value_name = "RULE=LEVEL")]
    severity: Vec<String>,
}

/// The policy `diff` classifies with: the one a watch has, plus command-line overrides.
fn policy(args: &DiffArgs) -> anyhow::Result<ClassifyPolicy> {
    let mut policy = match &args.config {
        None => ClassifyPolicy::default(),
        Some(path) => {
            let config = Config::load(path)?;
            match &args.watch {
                None => ClassifyPolicy {
                    severity: config.severity.clone(),
                    classification: None,
                },
                Some(name) => {
                    let watch = config.watch(name).ok_or_else(|| {
                        anyhow!("{}: no watch named {name:?}", config.path.display())
                    })?;
                    watch_policy(watch).map_err(|e| anyhow!(e))?
                }
            }
        }
    };
    let mut raw = BTreeMap::new();
    for item in &args.severity {
        let (rule, level) = item
            .split_once('=')
            .ok_or_else(|| anyhow!("--severity {item:?}: expected RULE=LEVEL"))?;
        raw.insert(rule.trim().to_string(), level.trim().to_string());
    }
    let overrides = parse_overrides(&raw).map_err(|e| anyhow!("--severity: {e}"))?;
    policy.severity.extend(overrides);
    Ok(policy)
}

pub async fn run(args: DiffArgs) -> Outcome {
    let policy = policy(&args)?;
    diff(&args, &policy).await
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

async fn diff(args: &DiffArgs, policy: &ClassifyPolicy) -> Outcome {
    let (old, new, kind) = (args.old.as_str(), args.new.as_str(), args.kind.0);
    let (json, markdown, provenance) = (args.json, args.markdown, args.provenance);
    let fail_on = args.fail_on.as_deref();
    let parsed = sources::parse_arguments(&[old, new], &args.env).map_err(anyhow::Error::from)?;
    let old_spec = load_spec(old, &parsed[0], kind).await?;
    let new_spec = load_spec(new, &parsed[1], kind).await?;
    let report = classify(&old_spec, &new_spec, policy);
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
