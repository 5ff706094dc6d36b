//! `schemawatch rules`: the drift rule catalogue (`--markdown` renders docs/rules.md).

use super::Outcome;
use schemawatch::core::diff::rules;

#[derive(clap::Args)]
pub struct RulesArgs {
    #[arg(long)]
    markdown: bool,
}

pub fn run(args: RulesArgs) -> Outcome {
    if args.markdown {
        say_raw!("{}", rules::rules_markdown());
    } else {
        for r in rules::ALL.iter() {
            say!("{:<36} {:<10} {}", r.id, r.severity.as_str(), r.doc);
        }
    }
    Ok(())
}
