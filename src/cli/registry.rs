//! `schemawatch registry copy --from A --to B`: a whole registry copied exactly between a
//! SQLite file and a PostgreSQL database (either way, or file to file), every accepted
//! contract and retained version read back and its fingerprint verified. Passwords come from
//! a password file or PGPASSFILE, never from the command line or PGPASSWORD.

use super::{Failure, Outcome};
use anyhow::anyhow;
use schemawatch::registry::copy::{self, Access, CopyCounts, CopyError, Place};
use schemawatch::registry::RegistryError;
use std::path::PathBuf;

#[derive(clap::Subcommand)]
pub enum RegistryCommand {
    /// Copy a whole registry into a new one: ids, versions, history, reviews (and the review-id
    /// high-water mark), stored sources, watch state, validators, events, deliveries, the
    /// registry id and identity key. Refuses a target that holds data; prints the rows copied
    /// per table and the fingerprints verified.
    Copy(CopyArgs),
}

#[derive(clap::Args)]
pub struct CopyArgs {
    /// The registry to copy: a SQLite file (it must exist) or
    /// postgresql://user@host:port/db (no password in it).
    #[arg(long, value_name = "FILE|URL")]
    from: String,
    /// The new registry: a SQLite file (created when missing) or an empty PostgreSQL
    /// database, postgresql://user@host:port/db (no password in it).
    #[arg(long, value_name = "FILE|URL")]
    to: String,
    /// A file holding the password of the PostgreSQL side(s) without one of their own. Else
    /// the PGPASSFILE (default ~/.pgpass) line matching the URL; never PGPASSWORD.
    #[arg(long, value_name = "FILE")]
    password_file: Option<PathBuf>,
    /// A file holding the password of --from (a PostgreSQL URL).
    #[arg(long, value_name = "FILE")]
    from_password_file: Option<PathBuf>,
    /// A file holding the password of --to (a PostgreSQL URL).
    #[arg(long, value_name = "FILE")]
    to_password_file: Option<PathBuf>,
    /// The certificate(s) a PostgreSQL server's chain must lead to (default: the system
    /// roots); the server's name is always verified unless the URL says sslmode=disable.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
}

pub async fn run(command: RegistryCommand) -> Outcome {
    match command {
        // The PostgreSQL client blocks: off the async runtime's workers.
        RegistryCommand::Copy(args) => tokio::task::spawn_blocking(move || copy_registry(&args))
            .await
            .map_err(|e| Failure::Usage(anyhow!("the copy stopped: {e}")))?,
    }
}

fn copy_registry(args: &CopyArgs) -> Outcome {
    let from = Place::parse(&args.from).map_err(|e| usage("--from", &e))?;
    let to = Place::parse(&args.to).map_err(|e| usage("--to", &e))?;
    if same_registry(&from, &to) {
        return Err(Failure::Usage(anyhow!(
            "--from and --to name the same registry ({})",
            from.shown()
        )));
    }
    let access = |own: &Option<PathBuf>| Access {
        password_file: own.clone().or_else(|| args.password_file.clone()),
        ca_file: args.ca_file.clone(),
    };
    // The source first: a missing source creates no target.
    let source =
        copy::open(&from, false, &access(&args.from_password_file)).map_err(|e| match e {
            CopyError::Registry(RegistryError::Missing { path }) => {
                Failure::Usage(anyhow!("no registry at {path} (the source must exist)"))
            }
            e => Failure::Usage(anyhow!(
                "cannot open the source registry {}: {e}",
                from.shown()
            )),
        })?;
    let mut target = copy::open(&to, true, &access(&args.to_password_file)).map_err(|e| {
        Failure::Usage(anyhow!(
            "cannot open the target registry {}: {e}",
            to.shown()
        ))
    })?;
    match copy::copy(&source, &mut target) {
        Ok(counts) => {
            print_counts(&from, &to, &counts);
            Ok(())
        }
        Err(e @ (CopyError::TargetNotEmpty { .. } | CopyError::Unverified { .. })) => {
            Err(Failure::Reported(format!("{}: {e}", to.shown())))
        }
        Err(e) => Err(Failure::Reported(format!(
            "copying {} to {}: {e} (the target is left as it was)",
            from.shown(),
            to.shown()
        ))),
    }
}

fn usage(flag: &str, e: &CopyError) -> Failure {
    Failure::Usage(anyhow!("{flag}: {e}"))
}

/// Two arguments naming one registry (the same URL, or one file by two paths).
fn same_registry(a: &Place, b: &Place) -> bool {
    match (a, b) {
        (Place::Sqlite(a), Place::Sqlite(b)) => {
            a == b
                || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)),
                    (Ok(a), Ok(b)) if a == b)
        }
        (Place::Postgres(_), Place::Postgres(_)) => a.shown() == b.shown(),
        _ => false,
    }
}

fn print_counts(from: &Place, to: &Place, counts: &CopyCounts) {
    say!("copied {} to {}", from.shown(), to.shown());
    let width = counts
        .tables
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0);
    say!("{:<width$}  {:>10}", "table", "rows");
    for (name, rows) in &counts.tables {
        say!("{name:<width$}  {rows:>10}");
    }
    say!("reviews high-water mark: {}", counts.reviews_high_water);
    say!("verified {} fingerprints", counts.fingerprints_verified);
    say!(
        "copied in {:.2} s; read back and verified in {:.2} s",
        counts.copied_in.as_secs_f64(),
        counts.verified_in.as_secs_f64()
    );
}
