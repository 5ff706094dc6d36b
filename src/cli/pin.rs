//! `schemawatch pin capture|check`: pins of reviewed tool versions.

use super::{
    current_tools, load_config, open_registry_reading, print_json, read_artifacts, ConfigArg,
    Failure, Outcome,
};
use anyhow::anyhow;
use schemawatch::artifacts::pin;

#[derive(clap::Subcommand)]
pub enum PinCommand {
    /// Print a pin of the current tool versions (all watches, or the named ones).
    Capture {
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long = "watch")]
        watches: Vec<String>,
    },
    /// Check a pin (a file, `-`, a URL or `git:REV:PATH`): exit 0 eligible, 1 re-review
    /// required, 2 invalid.
    Check {
        pin: String,
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(action: PinCommand) -> Outcome {
    match action {
        PinCommand::Capture { config, watches } => {
            let config = load_config(&config)?;
            for name in &watches {
                if config.watch(name).is_none() {
                    return Err(Failure::Usage(anyhow!(
                        "{}: no watch named {name:?}",
                        config.path.display()
                    )));
                }
            }
            say_json!("{}", pin::capture(&current_tools(&config, &watches)?));
            Ok(())
        }
        PinCommand::Check {
            pin: pin_path,
            config,
            json,
        } => {
            let config = load_config(&config)?;
            let text = read_artifacts(&[&pin_path]).await?.remove(0);
            let registry = open_registry_reading(&config)?;
            let result = schemawatch::artifacts::check_pin(&config, &registry, &text)
                .map_err(anyhow::Error::from)?;
            if json {
                print_json(&result.to_json());
            } else {
                say!(
                    "{}{}",
                    if result.eligible() {
                        "eligible"
                    } else {
                        "re-review-required"
                    },
                    if result.reasons.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", result.reasons.join(", "))
                    }
                );
            }
            if result.reasons.contains(&"invalid_snapshot") {
                Err(Failure::Usage(anyhow!("{}: invalid pin", pin_path)))
            } else if result.eligible() {
                Ok(())
            } else {
                Err(Failure::Reported(String::new()))
            }
        }
    }
}
