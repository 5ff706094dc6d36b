//! `schemawatch completions SHELL` and `schemawatch man [--dir DIR]`: shell completions
//! (clap_complete) and man pages (clap_mangen), generated from the command-line definition so
//! they cover every subcommand and flag there is.

use super::{Cli, Outcome};
use anyhow::{anyhow, Context};
use clap::CommandFactory;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct CompletionsArgs {
    /// bash, zsh or fish.
    #[arg(value_parser = ["bash", "zsh", "fish"])]
    shell: String,
}

#[derive(clap::Args)]
pub struct ManArgs {
    /// Write schemawatch.1 and one page per subcommand (schemawatch-pending-accept.1, ...)
    /// into DIR, printing each path; without it, schemawatch(1) goes to stdout.
    #[arg(long)]
    dir: Option<PathBuf>,
}

pub fn completions(args: CompletionsArgs) -> Outcome {
    use clap_complete::Shell;
    let shell = match args.shell.as_str() {
        "bash" => Shell::Bash,
        "zsh" => Shell::Zsh,
        _ => Shell::Fish,
    };
    let mut command = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut command, "schemawatch", &mut out);
    say_raw!("{}", String::from_utf8_lossy(&out));
    Ok(())
}

pub fn man(args: ManArgs) -> Outcome {
    let command = Cli::command();
    match args.dir {
        None => {
            let mut out = Vec::new();
            clap_mangen::Man::new(command)
                .render(&mut out)
                .map_err(|e| anyhow!("cannot render the man page: {e}"))?;
            say_raw!("{}", String::from_utf8_lossy(&out));
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            write_pages(&command, &dir, "schemawatch")?;
        }
    }
    Ok(())
}

/// `name.1` for `command`, then one page per subcommand (`name-sub.1`), depth first.
fn write_pages(command: &clap::Command, dir: &std::path::Path, name: &str) -> anyhow::Result<()> {
    let mut out = Vec::new();
    let page = command
        .clone()
        .name(name.to_string())
        .bin_name(name.replace('-', " "));
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| anyhow!("cannot render {name}(1): {e}"))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
    say!("{}", path.display());
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        write_pages(sub, dir, &format!("{name}-{}", sub.get_name()))?;
    }
    Ok(())
}
