//! `schemawatch watch forget|reset`: a watch's stored state.

use super::{load_config, open_registry, ConfigArg, Failure, Outcome};
use anyhow::anyhow;

#[derive(clap::Subcommand)]
pub enum WatchCommand {
    /// Drop a watch's state and history (after it left the config).
    Forget {
        name: String,
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Clear a watch's stale/error state.
    Reset {
        name: String,
        #[command(flatten)]
        config: ConfigArg,
    },
}

pub fn run(action: WatchCommand) -> Outcome {
    match action {
        WatchCommand::Forget { name, config } => {
            let config = load_config(&config)?;
            if config.watch(&name).is_some() {
                return Err(Failure::Usage(anyhow!(
                    "watch {name:?} is still in {}; remove it from the config first",
                    config.path.display()
                )));
            }
            let mut registry = open_registry(&config)?;
            if registry.forget(&name).map_err(anyhow::Error::from)? {
                say!("forgot {name}");
                Ok(())
            } else {
                Err(Failure::Reported(format!("no stored state for {name:?}")))
            }
        }
        WatchCommand::Reset { name, config } => {
            let config = load_config(&config)?;
            let mut registry = open_registry(&config)?;
            if registry.reset(&name).map_err(anyhow::Error::from)? {
                say!("reset {name}");
                Ok(())
            } else {
                Err(Failure::Reported(format!("no stored state for {name:?}")))
            }
        }
    }
}
