//! `schemawatch catalog export|diff`: the content-free tool inventory.

use super::{current_tools, load_config, read_text, ConfigArg, Outcome};
use anyhow::anyhow;
use schemawatch::artifacts::catalog;
use std::path::{Path, PathBuf};

#[derive(clap::Subcommand)]
pub enum CatalogCommand {
    /// Print the inventory of every watched endpoint (canonical JSON).
    Export {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Compare two inventories keyed by (tool_id, version).
    Diff {
        base: PathBuf,
        candidate: PathBuf,
        #[arg(long, value_parser = ["json", "markdown"], default_value = "json")]
        format: String,
    },
}

pub fn run(action: CatalogCommand) -> Outcome {
    match action {
        CatalogCommand::Export { config } => {
            let config = load_config(&config)?;
            let records: Vec<catalog::ToolRecord> = current_tools(&config, &[])?
                .into_iter()
                .map(|t| t.record)
                .collect();
            say!("{}", catalog::inventory_json(&records));
            Ok(())
        }
        CatalogCommand::Diff {
            base,
            candidate,
            format,
        } => {
            let parse = |path: &Path, side: &str| -> anyhow::Result<Vec<catalog::ToolRecord>> {
                catalog::parse_inventory(&read_text(path)?)
                    .map_err(|e| anyhow!("{}: {side}.{e}", path.display()))
            };
            let diff = catalog::diff(&parse(&base, "baseline")?, &parse(&candidate, "candidate")?);
            if format == "markdown" {
                say_raw!("{}", diff.to_markdown());
            } else {
                say!("{}", diff.to_json());
            }
            Ok(())
        }
    }
}
