//! `schemawatch diff`: compare two documents without a registry.

use super::{print_json, Failure, KindArg, Outcome};
use anyhow::{anyhow, Context};
use schemawatch::artifacts::provenance::stamp;
use schemawatch::config::ExternalRefs;
use schemawatch::core::diff::classify;
use schemawatch::core::model::{Compatibility, Kind, ToolSpec};
use schemawatch::core::normalize::normalize;
use schemawatch::core::report::{report_json, report_markdown, report_text};
use schemawatch::fetch::{self, FetchOutcome, FetchRequest, Source};
use std::path::Path;
use std::time::Duration;

#[derive(clap::Args)]
pub struct DiffArgs {
    old: String,
    new: String,
    #[arg(long, value_enum, default_value_t = KindArg(Kind::Openapi))]
    kind: KindArg,
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
        &args.old,
        &args.new,
        args.kind.0,
        args.json,
        args.markdown,
        args.provenance,
        args.fail_on.as_deref(),
    )
    .await
}

async fn read_input(input: &str, kind: Kind) -> anyhow::Result<Vec<u8>> {
    read_input_with(&input_request(input), input, kind)
        .await
        .map(|(bytes, _)| bytes)
}

/// The fetch of one diff input, unconditional, with the default bounds.
fn input_request(input: &str) -> FetchRequest {
    let source = match url::Url::parse(input) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Source::Url(url),
        _ => Source::Path(Path::new(input).to_path_buf()),
    };
    FetchRequest {
        source,
        headers: Default::default(),
        timeout: Duration::from_secs(60),
        connect_timeout: Duration::from_secs(10),
        max_bytes: schemawatch::config::DEFAULT_MAX_BYTES,
        ca_file: None,
        proxy: None,
        validators: None,
    }
}

/// [`read_input`] with a prepared request; also returns the URL after redirects.
async fn read_input_with(
    request: &FetchRequest,
    input: &str,
    kind: Kind,
) -> anyhow::Result<(Vec<u8>, Option<String>)> {
    let fetched = match kind {
        Kind::Graphql => fetch::graphql::fetch_schema(request).await,
        _ => fetch::fetch(request).await,
    };
    match fetched.with_context(|| input.to_string())? {
        FetchOutcome::Body {
            bytes, final_url, ..
        } => Ok((bytes, final_url)),
        FetchOutcome::NotModified => Err(anyhow!("{input}: unexpected 304 Not Modified")),
    }
}

async fn load_spec(input: &str, kind: Kind) -> anyhow::Result<ToolSpec> {
    if kind == Kind::Openapi {
        // Relative external `$ref`s resolve the way a watch's do (same origin or folder).
        let request = input_request(input);
        let started = std::time::Instant::now();
        let (bytes, final_url) = read_input_with(&request, input, kind).await?;
        let resolved = fetch::openapi_refs::normalize_document(
            "diff.document",
            &request,
            final_url.as_deref(),
            &bytes,
            ExternalRefs::SameOrigin,
            started,
        )
        .await
        .with_context(|| input.to_string())?;
        return Ok(resolved.spec);
    }
    let bytes = read_input(input, kind).await?;
    normalize(kind, "diff.document", &bytes).with_context(|| input.to_string())
}

async fn diff(
    old: &str,
    new: &str,
    kind: Kind,
    json: bool,
    markdown: bool,
    provenance: bool,
    fail_on: Option<&str>,
) -> Outcome {
    let old_spec = load_spec(old, kind).await?;
    let new_spec = load_spec(new, kind).await?;
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
