//! `schemawatch catalog export|diff`: the content-free tool inventory.

use super::{current_tools, load_config, read_artifacts, ConfigArg, Outcome};
use anyhow::anyhow;
use schemawatch::artifacts::catalog;

#[derive(clap::Subcommand)]
pub enum CatalogCommand {
    /// Print the inventory of every watched endpoint (canonical JSON).
    Export {
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Compare two inventories keyed by (tool_id, version). Each is a file, `-`, a URL or
    /// `git:REV:PATH`.
    Diff {
        base: String,
        candidate: String,
        #[arg(long, value_parser = ["json", "markdown"], default_value = "json")]
        format: String,
    },
}

pub async fn run(action: CatalogCommand) -> Outcome {
    match action {
        CatalogCommand::Export { config } => {
            let config = load_config(&config)?;
            let records: Vec<catalog::ToolRecord> = current_tools(&config, &[])?
                .into_iter()
                .map(|t| t.record)
                .collect();
            say_json!("{}", catalog::inventory_json(&records));
            Ok(())
        }
        CatalogCommand::Diff {
            base,
            candidate,
            format,
        } => {
            let texts = read_artifacts(&[&base, &candidate]).await?;
            let parse = |input: &str, text: &str, side: &str| {
                catalog::parse_inventory(text).map_err(|e| anyhow!("{input}: {side}.{e}"))
            };
            let diff = catalog::diff(
                &parse(&base, &texts[0], "baseline")?,
                &parse(&candidate, &texts[1], "candidate")?,
            );
            if format == "markdown" {
                say_raw!("{}", diff.to_markdown());
            } else {
                say_json!("{}", diff.to_json());
            }
            Ok(())
        }
    }
}
