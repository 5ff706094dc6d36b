//! `schemawatch inspect diff`: classify a tool between two registry files, read-only.

use super::Failure;
use super::{print_json, Outcome};
use anyhow::{anyhow, Context};
use schemawatch::core::diff::classify;
use schemawatch::core::model::ToolSpec;
use schemawatch::core::report::{report_json, report_text};
use schemawatch::registry::{Location, Registry};
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum InspectCommand {
    /// Classify a tool between two registries, opened read-only: files, or
    /// `postgresql://user@host:port/db` URLs (password from PGPASSFILE, CA from PGSSLROOTCERT).
    Diff {
        tool: String,
        #[arg(long)]
        old_db: PathBuf,
        #[arg(long)]
        new_db: PathBuf,
        #[arg(long)]
        endpoint: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub fn run(action: InspectCommand) -> Outcome {
    match action {
        InspectCommand::Diff {
            tool,
            old_db,
            new_db,
            endpoint,
            json,
        } => inspect_diff(&tool, &old_db, &new_db, endpoint.as_deref(), json),
    }
}

fn inspect_diff(
    tool: &str,
    old_db: &Path,
    new_db: &Path,
    endpoint: Option<&str>,
    json: bool,
) -> Outcome {
    let load = |arg: &Path| -> anyhow::Result<ToolSpec> {
        let location = Location::from_arg(arg).map_err(|e| anyhow!("registry URL: {e}"))?;
        let registry = Registry::open_read_only_at(&location)
            .with_context(|| format!("cannot open registry {location}"))?;
        let stored = registry
            .tool(tool)?
            .ok_or_else(|| anyhow!("{location}: no tool named {tool:?}"))?;
        Ok(stored.spec)
    };
    let (mut old, mut new) = (load(old_db)?, load(new_db)?);
    if let Some(name) = endpoint {
        let keep = |spec: &mut ToolSpec| spec.endpoints.retain(|e| e.name == name);
        keep(&mut old);
        keep(&mut new);
        if old.endpoints.is_empty() && new.endpoints.is_empty() {
            return Err(Failure::Usage(anyhow!(
                "no endpoint named {name:?} in either registry"
            )));
        }
    }
    let report = classify(&old, &new, &Default::default());
    if json {
        print_json(&report_json(&report));
    } else {
        say_raw!("{}", report_text(&report));
    }
    Ok(())
}
