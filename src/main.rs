//! The `schemawatch` binary: the command line lives in `cli/`, a file per subcommand.

#![forbid(unsafe_code)]
// No unwrap/expect/panic outside tests: a failure is a typed error (ARCHITECTURE.md, "Invariants").
#![cfg_attr(
    not(test),
    deny(clippy::unwrap_used, clippy::expect_used, clippy::panic)
)]

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
