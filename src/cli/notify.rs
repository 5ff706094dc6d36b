//! `schemawatch notify`: send a test event to one sink; list deliveries.

use super::{load_config, open_registry, print_json, ConfigArg, Failure, Outcome};
use anyhow::anyhow;
use schemawatch::views::{notifications_json, NotificationQuery};

#[derive(clap::Subcommand)]
pub enum NotifyCommand {
    /// Sends a `schemawatch.test` event to sink NAME now and prints the status code and an
    /// error class (never the response body, never the URL). Exit 1 when it was not delivered.
    Test {
        name: String,
        #[command(flatten)]
        config: ConfigArg,
    },
    /// Deliveries, newest first: pending, delivered and failed, with attempts and the last
    /// error class (the JSON of `GET /v1/notifications`).
    List {
        #[command(flatten)]
        config: ConfigArg,
        #[arg(long)]
        sink: Option<String>,
        /// pending, delivered or failed.
        #[arg(long)]
        state: Option<String>,
        #[arg(long)]
        limit: Option<usize>,
        #[arg(long)]
        cursor: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(command: NotifyCommand) -> Outcome {
    match command {
        NotifyCommand::Test { name, config } => {
            let config = load_config(&config)?;
            let Some(sink) = config.sink(&name) else {
                return Err(Failure::Usage(anyhow!(
                    "{}: no [[notify]] sink named {name:?}",
                    config.path.display()
                )));
            };
            let sent = schemawatch::notify::send_test(sink, &config).await;
            let status = sent
                .status()
                .map_or_else(|| "none".to_string(), |s| s.to_string());
            match sent.class() {
                None => {
                    say!("{name}: delivered (status {status})");
                    Ok(())
                }
                Some(class) => Err(Failure::Reported(format!(
                    "{name}: not delivered (status {status}, error class {class})"
                ))),
            }
        }
        NotifyCommand::List {
            config,
            sink,
            state,
            limit,
            cursor,
            json,
        } => {
            let config = load_config(&config)?;
            let registry = open_registry(&config)?;
            let query = NotificationQuery {
                sink,
                state,
                limit,
                cursor,
            };
            let (value, next) = notifications_json(&registry, &query)
                .map_err(anyhow::Error::from)?
                .map_err(|m| Failure::Usage(anyhow!(m)))?;
            if json {
                let mut value = value;
                if let (Some(next), Some(obj)) = (&next, value.as_object_mut()) {
                    obj.insert("next_cursor".into(), serde_json::json!(next));
                }
                print_json(&value);
                return Ok(());
            }
            let rows = value["notifications"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            if rows.is_empty() {
                say!("no deliveries");
            }
            for r in rows {
                let text = |k: &str| r[k].as_str().unwrap_or("-").to_string();
                let mut line = format!(
                    "{:<16} {:<10} {:<20} {:<24} attempts {}",
                    text("sink"),
                    text("state"),
                    text("event"),
                    text("watch"),
                    r["attempts"]
                );
                if let Some(e) = r["last_error"].as_str() {
                    line.push_str(&format!(" last error {e}"));
                }
                if let Some(s) = r["last_status"].as_i64() {
                    line.push_str(&format!(" (status {s})"));
                }
                say!("{line}");
            }
            if let Some(next) = next {
                say!("more: --cursor {next}");
            }
            Ok(())
        }
    }
}
