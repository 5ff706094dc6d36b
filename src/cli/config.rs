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
            schemawatch::daemon::check_listen(&config)
                .map_err(|e| super::Failure::Usage(e.into()))?;
            // Included files were read and validated by `load_config`; name how many.
            let included = match config.included.len() {
                0 => String::new(),
                1 => ", 1 included file".to_string(),
                n => format!(", {n} included files"),
            };
            say!(
                "{}: ok ({} watch{}{included}, registry {})",
                config.path.display(),
                config.watches.len(),
                if config.watches.len() == 1 { "" } else { "es" },
                config.storage.path.display()
            );
            Ok(())
        }
    }
}
