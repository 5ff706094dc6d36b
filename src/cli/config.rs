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
            // Each watch's consumer scope reads (its file, pin watch or bucket); whether its
            // entries name something is judged below against the registry, and against the
            // documents at each refresh.
            for watch in config.watches.iter().filter(|w| w.uses.is_some()) {
                schemawatch::refresh::watch_policy(watch)
                    .map_err(|e| super::Failure::Usage(anyhow::anyhow!(e)))?;
            }
            // Entries against what the registry holds, as `run` checks them at start.
            let scoped = config
                .watches
                .iter()
                .any(|w| w.uses.is_some() && !w.allow_unknown_uses);
            let location = &config.storage.location;
            if scoped && location.sqlite_path().is_none_or(|p| p.exists()) {
                match schemawatch::registry::Registry::open_read_only_at(location) {
                    Ok(registry) => {
                        schemawatch::refresh::uses::check_uses_against(&registry, &config.watches)
                            .map_err(|e| super::Failure::Usage(anyhow::anyhow!(e)))?
                    }
                    Err(e) => eprintln!(
                        "schemawatch: warning: uses not checked against the registry {location}: {e}"
                    ),
                }
            }
            // What `run` will do about descriptors under this shell's limits (H24).
            use schemawatch::daemon::descriptors;
            let concurrency = config.daemon.max_concurrency;
            let (limit, fit) = descriptors::assess(concurrency);
            if let Some(message) = descriptors::describe(limit, concurrency, fit) {
                if matches!(fit, descriptors::Fit::Refused { .. }) {
                    return Err(super::Failure::Usage(anyhow::anyhow!(message)));
                }
                eprintln!("schemawatch: warning: {message}");
            }
            // Included files were read and validated by `load_config`; name how many.
            let included = match config.included.len() {
                0 => String::new(),
                1 => ", 1 included file".to_string(),
                n => format!(", {n} included files"),
            };
            say!(
                "{}: ok ({} watch{}{included}, {} {})",
                config.path.display(),
                config.watches.len(),
                if config.watches.len() == 1 { "" } else { "es" },
                match location {
                    schemawatch::registry::Location::Sqlite(_) => "registry",
                    schemawatch::registry::Location::Postgres { .. } => "storage:",
                },
                location
            );
            Ok(())
        }
    }
}
