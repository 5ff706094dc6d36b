//! `schemawatch diff`: compare two documents without a registry.

use super::{Failure, KindArg, Outcome};
use anyhow::{anyhow, Context};
use schemawatch::artifacts::provenance::stamp;
use schemawatch::ci::accept::{self, Date};
use schemawatch::ci::formats;
use schemawatch::ci::gate::{self, Gate, Standing};
use schemawatch::config::{parse_overrides, Config};
use schemawatch::core::diff::{classify, ClassifyPolicy};
use schemawatch::core::model::{Compatibility, Kind, ToolSpec};
use schemawatch::core::normalize::source::locate_changes;
use schemawatch::core::normalize::SharedEndpoints;
use schemawatch::core::report::{report_markdown, report_markdown_bounded, report_text};
use schemawatch::refresh::uses::read_uses;
use schemawatch::refresh::watch_policy;
use schemawatch::sources::{self, Source};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct DiffArgs {
    /// OLD NEW; with --against, the FILEs to compare with their version at REV.
    #[arg(value_name = "FILE", required = true)]
    documents: Vec<String>,
    /// Compare each FILE with its version at this git revision (the pre-commit form): a FILE
    /// new at REV passes; --fail-on defaults to breaking.
    #[arg(long, value_name = "REV")]
    against: Option<String>,
    #[arg(long, value_enum, default_value_t = KindArg(Kind::Openapi))]
    kind: KindArg,
    /// NAME=VALUE for a `cmd:` server's environment (repeatable; values expand `${VAR}`).
    #[arg(long = "env", value_name = "NAME=VALUE")]
    env: Vec<String>,
    /// Same as `--format json`.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Same as `--format markdown`.
    #[arg(long)]
    markdown: bool,
    /// An output format, `F` or `F=PATH` (repeatable; at most one without `=PATH`, which goes
    /// to stdout): text, json, markdown, sarif, junit, github, gitlab.
    #[arg(long = "format", value_name = "F[=PATH]")]
    formats: Vec<String>,
    /// TOML `[[accept]]` entries: changes (by id) a reviewer accepted until a date; an
    /// accepted change is reported but does not fail `--fail-on`.
    #[arg(long)]
    accept: Option<PathBuf>,
    /// The check date for `--accept` and the sunset policy (YYYY-MM-DD; default:
    /// SOURCE_DATE_EPOCH, else today UTC).
    #[arg(long)]
    date: Option<String>,
    /// Exit 1 when an accept entry matches no change (a stale entry).
    #[arg(long, requires = "accept")]
    strict_accept: bool,
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
    /// The consumer's scope: the endpoints it uses, one a line (or a pin file, or
    /// `surface.toml#BUCKET`); changes outside it are reported as `info`, `out_of_scope`.
    /// Replaces the scope of --config/--watch.
    #[arg(long, value_name = "FILE")]
    uses: Option<PathBuf>,
    /// Ignore any consumer scope (--uses, the watch's `uses`): judge every change.
    #[arg(long)]
    strict: bool,
    /// A uses entry that names nothing in either document is not an error (exit 2 otherwise).
    #[arg(long)]
    allow_unknown_uses: bool,
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
                    uses: None,
                    sunset: config.policy.clone(),
                    date: None,
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
    if let Some(path) = &args.uses {
        let source = schemawatch::config::UsesSource::File(path.clone());
        policy.uses =
            Some(read_uses(&source, args.watch.as_deref()).map_err(|e| anyhow!("--uses: {e}"))?);
    }
    if args.strict {
        policy.uses = None;
    }
    Ok(policy)
}

/// Whether the scope's entries all name something (a typo must not silence the gate); with
/// `allow_unknown_uses` (the flag, or the watch's setting) they need not.
fn check_uses(
    args: &DiffArgs,
    policy: &ClassifyPolicy,
    old: &ToolSpec,
    new: &ToolSpec,
) -> Result<(), Failure> {
    let Some(uses) = &policy.uses else {
        return Ok(());
    };
    let unknown = uses.unknown(old, new);
    if unknown.is_empty() || args.allow_unknown_uses || watch_allows_unknown(args) {
        return Ok(());
    }
    Err(Failure::Usage(anyhow!(
        "{} in OLD nor NEW (a typo would silence the gate; --allow-unknown-uses to allow)",
        schemawatch::core::scope::entries_naming_nothing(&unknown)
    )))
}

/// The `allow_unknown_uses` of `--config --watch`, when the scope is that watch's.
fn watch_allows_unknown(args: &DiffArgs) -> bool {
    let (Some(path), Some(name), None) = (&args.config, &args.watch, &args.uses) else {
        return false;
    };
    Config::load(path)
        .ok()
        .and_then(|c| c.watch(name).map(|w| w.allow_unknown_uses))
        .unwrap_or(false)
}

pub async fn run(args: DiffArgs) -> Outcome {
    let policy = policy(&args)?;
    if let Some(rev) = args.against.clone() {
        return against(&args, &policy, &rev).await;
    }
    let [old, new] = args.documents.as_slice() else {
        return Err(Failure::Usage(anyhow!(
            "diff takes exactly two documents, OLD and NEW (or --against REV FILE...); got {}",
            args.documents.len()
        )));
    };
    diff(&args, &policy, old, new).await
}

/// `diff --against REV FILE...`: each FILE against its version at REV (docs/design.md).
async fn against(args: &DiffArgs, policy: &ClassifyPolicy, rev: &str) -> Outcome {
    if rev.starts_with('-') {
        return Err(Failure::Usage(anyhow!("--against {rev:?}: not a revision")));
    }
    if args.formats.iter().any(|f| f.contains('=')) || args.provenance {
        return Err(Failure::Usage(anyhow!(
            "--format F=PATH and --provenance are for `diff OLD NEW`; --against writes one section per FILE to stdout"
        )));
    }
    if args.kind.0.is_database() {
        return Err(Failure::Usage(anyhow!(
            "--against with --kind {}: a git revision cannot hold a database",
            args.kind.0.as_str()
        )));
    }
    for file in &args.documents {
        let special = file == "-"
            || file.contains("://")
            || ["git:", "cmd:", "sqlite:"]
                .iter()
                .any(|p| file.starts_with(p));
        if special {
            return Err(Failure::Usage(anyhow!(
                "--against compares work-tree files; {file:?} is not a path (use `diff OLD NEW` for it)"
            )));
        }
        if !std::path::Path::new(file).is_file() {
            return Err(Failure::Usage(anyhow!("FILE {file:?} does not exist")));
        }
    }
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
    };
    let resolves = |spec: &str| {
        git(&["rev-parse", "--verify", "--quiet", spec]).is_ok_and(|o| o.status.success())
    };
    let unborn = if resolves(&format!("{rev}^{{commit}}")) {
        false
    } else if rev == "HEAD" && git(&["rev-parse", "--git-dir"]).is_ok_and(|o| o.status.success()) {
        true
    } else {
        return Err(Failure::Usage(anyhow!(
            "--against {rev:?}: not a revision of the repository here"
        )));
    };
    let json = args.json || args.formats.iter().any(|f| f == "json");
    let markdown = args.markdown || args.formats.iter().any(|f| f == "markdown");
    let github = args.formats.iter().any(|f| f == "github");
    let fail_on = Some(
        args.fail_on
            .as_deref()
            .and_then(Compatibility::parse)
            .unwrap_or(Compatibility::Breaking),
    );
    let (mut bad, mut failed, mut stale) = (false, false, 0usize);
    let mut files = Vec::new();
    for file in &args.documents {
        let at_rev = format!("{rev}:./{file}");
        let is_new = unborn || !resolves(&at_rev);
        if is_new {
            if json {
                files.push(serde_json::json!({"file": file, "new": true, "report": null}));
            } else if markdown {
                say!("## {file}\n\nnew (not in {rev})\n");
            } else if !github {
                say!("{file}: new (not in {rev})");
            }
            continue;
        }
        let old = format!("git:{rev}:./{file}");
        let compared = match compare(args, policy, &old, file).await {
            Ok(c) => c,
            Err(e) => {
                warn_line!("schemawatch: {file}: {e:#}");
                bad = true;
                continue;
            }
        };
        let mut gate = gate::evaluate(
            &compared.report,
            compared.entries.as_deref(),
            file,
            compared.date,
            fail_on,
        );
        gate.locate(locate_changes(
            args.kind.0,
            &compared.new_bytes,
            &compared.report.changes,
        ));
        failed |= gate.failed;
        stale += gate.stale.len();
        if json {
            let value = gate::report_with_gate(
                &compared.report,
                &gate,
                &compared.shown_new,
                &compared.hints,
            );
            files.push(serde_json::json!({"file": file, "new": false, "report": value}));
        } else if markdown {
            say_raw!("## {file}\n\n{}", report_markdown(&compared.report));
        } else if github {
            use std::io::Write as _;
            let _ = std::io::stdout()
                .lock()
                .write_all(formats::github(&gate, file).as_bytes());
            append_step_summary(&compared.report)?;
        } else {
            say!("{file}:");
            say_raw!("{}", text_with_gate(&compared.report, &gate));
        }
    }
    if json {
        use std::io::Write as _;
        let value = serde_json::json!({"against": rev, "failed": failed, "files": files});
        let _ = std::io::stdout()
            .lock()
            .write_all(schemawatch::core::inert::inert_json(&pretty(&value)).as_bytes());
    }
    if bad {
        return Err(Failure::Usage(anyhow!(
            "a FILE could not be compared (above)"
        )));
    }
    if failed {
        return Err(Failure::Reported(String::new()));
    }
    if args.strict_accept && stale > 0 {
        return Err(Failure::Reported(format!(
            "{stale} stale accept entr{} (--strict-accept)",
            if stale == 1 { "y" } else { "ies" }
        )));
    }
    Ok(())
}

/// The `--accept` file's entries, checked at `date`.
fn accept_entries(args: &DiffArgs, date: Date) -> anyhow::Result<Option<Vec<accept::AcceptEntry>>> {
    let Some(path) = &args.accept else {
        return Ok(None);
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read accept file {}", path.display()))?;
    Ok(Some(accept::parse(
        &path.display().to_string(),
        &text,
        date,
    )?))
}

/// One comparison, as `diff OLD NEW` makes it, before the gate and any rendering.
struct Compared {
    report: schemawatch::core::model::DriftReport,
    entries: Option<Vec<accept::AcceptEntry>>,
    date: Date,
    new_bytes: Vec<u8>,
    shown_new: String,
    hints: Vec<String>,
}

async fn compare(
    args: &DiffArgs,
    policy: &ClassifyPolicy,
    old: &str,
    new: &str,
) -> anyhow::Result<Compared> {
    let kind = args.kind.0;
    let date = check_date(args)?;
    let entries = accept_entries(args, date)?;
    let parsed = sources::parse_arguments(&[old, new], &args.env)?;
    let (old_spec, _) = load_spec(old, &parsed[0], kind, SharedEndpoints::default()).await?;
    let (new_spec, new_bytes) =
        load_spec(new, &parsed[1], kind, SharedEndpoints::of(&old_spec)).await?;
    if let Err(Failure::Usage(e)) = check_uses(args, policy, &old_spec, &new_spec) {
        return Err(e);
    }
    let policy = ClassifyPolicy {
        date: Some(date),
        ..policy.clone()
    };
    let report = classify(&old_spec, &new_spec, &policy);
    let hints = gate::hints(
        old_spec.metadata.version.as_deref(),
        new_spec.metadata.version.as_deref(),
        &report,
    );
    Ok(Compared {
        report,
        entries,
        date,
        new_bytes,
        shown_new: sources::shown_argument(new),
        hints,
    })
}

/// Appends the Markdown report to a GitHub Actions job's step summary, when there is one,
/// within GitHub's 1 MiB limit (what the step already wrote counts).
fn append_step_summary(report: &schemawatch::core::model::DriftReport) -> anyhow::Result<()> {
    let Some(summary) = std::env::var_os("GITHUB_STEP_SUMMARY") else {
        return Ok(());
    };
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&summary)
        .with_context(|| "cannot open $GITHUB_STEP_SUMMARY".to_string())?;
    // GitHub drops a step summary over 1 MiB whole: what the step already wrote counts, and a
    // margin stays for the steps after (docs/reliability.md H33).
    let written = file.metadata().map_or(0, |m| m.len());
    let room = STEP_SUMMARY_BYTES.saturating_sub(usize::try_from(written).unwrap_or(usize::MAX));
    file.write_all(report_markdown_bounded(report, room).as_bytes())
        .with_context(|| "cannot write $GITHUB_STEP_SUMMARY".to_string())
}

/// The contract of one document argument, read the way a watch of `kind` reads it.
async fn load_spec(
    input: &str,
    source: &Source,
    kind: Kind,
    shared: SharedEndpoints<'_>,
) -> anyhow::Result<(ToolSpec, Vec<u8>)> {
    sources::load_spec_and_bytes(
        kind,
        "diff.document",
        source,
        &sources::Request::command_line(),
        shared,
    )
    .await
    .with_context(|| sources::shown_argument(input))
}

/// The output formats asked for, each with its file (`None`: stdout).
fn outputs(args: &DiffArgs) -> anyhow::Result<Vec<(Format, Option<PathBuf>)>> {
    let mut out = Vec::new();
    if args.json {
        out.push((Format::Json, None));
    }
    if args.markdown {
        out.push((Format::Markdown, None));
    }
    for item in &args.formats {
        let (name, path) = match item.split_once('=') {
            Some((name, path)) if !path.is_empty() => (name, Some(PathBuf::from(path))),
            Some((name, _)) => return Err(anyhow!("--format {name}=: the path is empty")),
            None => (item.as_str(), None),
        };
        let format = Format::parse(name).ok_or_else(|| {
            anyhow!(
                "--format {name:?}: expected text, json, markdown, sarif, junit, github or gitlab"
            )
        })?;
        out.push((format, path));
    }
    if out.iter().filter(|(_, path)| path.is_none()).count() > 1 {
        return Err(anyhow!(
            "more than one output format goes to stdout; give the others a file (`--format F=PATH`)"
        ));
    }
    if out.iter().all(|(_, path)| path.is_some()) {
        out.push((Format::Text, None));
    }
    if args.provenance && !out.iter().any(|(f, _)| *f == Format::Json) {
        return Err(anyhow!(
            "--provenance stamps the JSON report: add --json or --format json"
        ));
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Text,
    Json,
    Markdown,
    Sarif,
    Junit,
    Github,
    Gitlab,
}

impl Format {
    fn parse(name: &str) -> Option<Format> {
        Some(match name {
            "text" => Format::Text,
            "json" => Format::Json,
            "markdown" => Format::Markdown,
            "sarif" => Format::Sarif,
            "junit" => Format::Junit,
            "github" => Format::Github,
            "gitlab" => Format::Gitlab,
            _ => return None,
        })
    }
}

/// The check date: `--date`, else `SOURCE_DATE_EPOCH`, else today (UTC).
fn check_date(args: &DiffArgs) -> anyhow::Result<Date> {
    if let Some(text) = &args.date {
        return Date::parse(text).ok_or_else(|| anyhow!("--date {text:?}: expected YYYY-MM-DD"));
    }
    if let Ok(epoch) = std::env::var("SOURCE_DATE_EPOCH") {
        let seconds: i64 = epoch
            .trim()
            .parse()
            .map_err(|_| anyhow!("SOURCE_DATE_EPOCH {epoch:?} is not a number of seconds"))?;
        return Ok(Date::from_unix_seconds(seconds));
    }
    Ok(Date::today())
}

/// What `--format github` appends to `$GITHUB_STEP_SUMMARY` at most, with what is already in
/// it: under GitHub's 1 MiB limit, with room for a line or two of other steps.
const STEP_SUMMARY_BYTES: usize = 1_000_000;

fn pretty(value: &serde_json::Value) -> String {
    // serde_json without preserve_order sorts object keys, so output is byte-stable.
    format!(
        "{}\n",
        serde_json::to_string_pretty(value).unwrap_or_default()
    )
}

/// The text rendering, with the gate's standing when a gate was asked for.
fn text_with_gate(report: &schemawatch::core::model::DriftReport, gate: &Gate) -> String {
    let mut out = report_text(report);
    if gate.fail_on.is_none() && !gate.with_accept_file {
        return out;
    }
    out.push_str(&format!(
        "gate{}: {} ({} unaccepted, {} accepted, {} expired, {} stale)\n",
        gate.fail_on
            .map(|f| format!(" (fail on {})", f.as_str()))
            .unwrap_or_default(),
        if gate.failed { "failed" } else { "passed" },
        gate.unaccepted(),
        gate.accepted(),
        gate.expired(),
        gate.stale.len()
    ));
    for c in &gate.changes {
        let standing = match c.standing {
            Standing::Accepted(e) => format!(
                "accepted   ({} until {}: {})",
                e.reviewer, e.expires, e.reason
            ),
            Standing::Expired(e) => format!(
                "expired    (accepted by {} until {})",
                e.reviewer, e.expires
            ),
            Standing::Open if c.at_or_above => "unaccepted".to_string(),
            Standing::Open => continue,
        };
        out.push_str(&format!(
            "  {} {} {} {}\n",
            c.id,
            c.change.rule,
            schemawatch::core::report::visible(&c.change.path),
            standing
        ));
    }
    out
}

async fn diff(args: &DiffArgs, policy: &ClassifyPolicy, old: &str, new: &str) -> Outcome {
    let kind = args.kind.0;
    // The new document as every rendering names it: a URL's credentials never shown (H31).
    let shown_new = sources::shown_argument(new);
    let outputs = outputs(args)?;
    let fail_on = args.fail_on.as_deref().and_then(Compatibility::parse);
    let date = check_date(args)?;
    let entries = accept_entries(args, date)?;
    let parsed = sources::parse_arguments(&[old, new], &args.env).map_err(anyhow::Error::from)?;
    let (old_spec, _) = load_spec(old, &parsed[0], kind, SharedEndpoints::default()).await?;
    // The new reading shares the endpoints the old one holds equally: one copy of them.
    let (new_spec, new_bytes) =
        load_spec(new, &parsed[1], kind, SharedEndpoints::of(&old_spec)).await?;
    // Source lines, only when a rendering shows them (text and Markdown do not); otherwise the
    // document is not held while the contracts are compared.
    let new_bytes = outputs
        .iter()
        .any(|(f, _)| !matches!(f, Format::Text | Format::Markdown))
        .then_some(new_bytes);
    check_uses(args, policy, &old_spec, &new_spec)?;
    let policy = ClassifyPolicy {
        date: Some(date),
        ..policy.clone()
    };
    let report = classify(&old_spec, &new_spec, &policy);
    let hints = gate::hints(
        old_spec.metadata.version.as_deref(),
        new_spec.metadata.version.as_deref(),
        &report,
    );
    // Nothing below reads the contracts: their memory is released before the new document's
    // source positions are built (a large document's model and positions are each ~5x it).
    drop((old_spec, new_spec));
    let mut gate = gate::evaluate(&report, entries.as_deref(), new, date, fail_on);
    if let Some(new_bytes) = &new_bytes {
        gate.locate(locate_changes(kind, new_bytes, &report.changes));
    }
    for (format, path) in &outputs {
        let rendered = match format {
            Format::Text => text_with_gate(&report, &gate),
            Format::Json => {
                let value = gate::report_with_gate(&report, &gate, &shown_new, &hints);
                if args.provenance {
                    pretty(&stamp(value, &report, "diff"))
                } else {
                    pretty(&value)
                }
            }
            Format::Markdown => report_markdown(&report),
            Format::Sarif => pretty(&formats::sarif(&gate, &shown_new)),
            Format::Junit => formats::junit(&gate, &shown_new),
            Format::Github => formats::github(&gate, &shown_new),
            Format::Gitlab => pretty(&formats::gitlab(&gate, &shown_new)),
        };
        match path {
            // Workflow commands are the point of `--format github` (its data escaped by
            // `formats::github`); every other rendering is made inert for CI runners.
            None if *format == Format::Github => {
                use std::io::Write as _;
                let _ = std::io::stdout().lock().write_all(rendered.as_bytes());
            }
            None if matches!(format, Format::Json | Format::Sarif | Format::Gitlab) => {
                use std::io::Write as _;
                let _ = std::io::stdout()
                    .lock()
                    .write_all(schemawatch::core::inert::inert_json(&rendered).as_bytes());
            }
            None => say_raw!("{rendered}"),
            Some(path) => std::fs::write(path, rendered)
                .with_context(|| format!("cannot write {}", path.display()))?,
        }
        if *format == Format::Github {
            append_step_summary(&report)?;
        }
    }
    for c in &gate.changes {
        if let Standing::Expired(e) = c.standing {
            warn_line!(
                "schemawatch: warning: accept entry at line {} for {} expired on {}; the change counts again",
                e.line, e.change, e.expires
            );
        }
    }
    for (e, replacement) in &gate.deprecated {
        match replacement {
            Some(id) => warn_line!(
                "schemawatch: warning: accept entry at line {} names {} by a 64-bit chg1: id, which is deprecated: write change = \"{id}\" (the same change)",
                e.line, e.change
            ),
            None => warn_line!(
                "schemawatch: warning: accept entry at line {} names {} by a 64-bit chg1: id, which is deprecated: use the change's chg2: id (`diff --json` prints it)",
                e.line, e.change
            ),
        }
    }
    for (e, index) in &gate.mismatched {
        let c = &gate.changes[*index];
        warn_line!(
            "schemawatch: warning: accept entry at line {} names {} but pins rule {} at {}; that change is {} at {}: the entry does not accept it",
            e.line,
            e.change,
            e.rule.as_deref().unwrap_or("(any)"),
            e.path.as_deref().unwrap_or("(any path)"),
            c.change.rule,
            schemawatch::core::report::visible(&c.change.path)
        );
    }
    for e in &gate.stale {
        if gate.mismatched.iter().any(|(m, _)| std::ptr::eq(*m, *e)) {
            continue;
        }
        warn_line!(
            "schemawatch: warning: accept entry at line {} ({}) matches no change: it is stale",
            e.line,
            e.change
        );
    }
    if gate.failed {
        return Err(Failure::Reported(String::new()));
    }
    if args.strict_accept && !gate.stale.is_empty() {
        return Err(Failure::Reported(format!(
            "{} stale accept entr{} (--strict-accept)",
            gate.stale.len(),
            if gate.stale.len() == 1 { "y" } else { "ies" }
        )));
    }
    Ok(())
}
