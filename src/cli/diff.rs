//! `schemawatch diff`: compare two documents without a registry.

use super::{print_json, Failure, KindArg, Outcome};
use anyhow::Context;
use schemawatch::artifacts::provenance::stamp;
use schemawatch::core::diff::classify;
use schemawatch::core::model::{Compatibility, Kind, ToolSpec};
use schemawatch::core::report::{report_json, report_markdown, report_text};
use schemawatch::sources::{self, Source};

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
}

pub async fn run(args: DiffArgs) -> Outcome {
    diff(
        [&args.old, &args.new],
        &args.env,
        args.kind.0,
        args.json,
        args.markdown,
        args.provenance,
        args.fail_on.as_deref(),
    )
    .await
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

async fn diff(
    [old, new]: [&str; 2],
    env: &[String],
    kind: Kind,
    json: bool,
    markdown: bool,
    provenance: bool,
    fail_on: Option<&str>,
) -> Outcome {
    let parsed = sources::parse_arguments(&[old, new], env).map_err(anyhow::Error::from)?;
    let old_spec = load_spec(old, &parsed[0], kind).await?;
    let new_spec = load_spec(new, &parsed[1], kind).await?;
    let report = classify(&old_spec, &new_spec, &Default::default());
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
