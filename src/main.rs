//! The `schemawatch` binary: the command line lives in `cli/`, a file per subcommand.

#![forbid(unsafe_code)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
