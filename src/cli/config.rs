//! `schemawatch config check`: validate a config file.

use super::{load_config, ConfigArg, Outcome};

#[derive(clap::Subcommand)]
pub enum ConfigCommand {
    Check {
        #[command(flatten)]
        config: ConfigArg,
    },
}

pub fn run(action: ConfigCommand) -> Outcome {
    match action {
        ConfigCommand::Check { config } => {
            let config = load_config(&config)?;
            config
                .require_env()
                .map_err(|e| super::Failure::Usage(e.into()))?;
            say!(
                "{}: ok ({} watch{}, registry {})",
                config.path.display(),
                config.watches.len(),
                if config.watches.len() == 1 { "" } else { "es" },
                config.storage.path.display()
            );
            Ok(())
        }
    }
}
