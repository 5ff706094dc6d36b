//! The `schemawatch` binary: the command line lives in `cli/`, a file per subcommand.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
