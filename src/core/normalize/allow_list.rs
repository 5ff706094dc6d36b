//! The per-kind descriptive allow-list: what each normalizer keeps out of the fingerprint, and
//! why. `docs/allow-list.md` is rendered from it (a test fails when the file is stale; rewrite
//! it with `SCHEMAWATCH_BLESS=1 cargo test --lib allow_list`). No model-facing text is ever on
//! it: for MCP every text field stays in the contract and keeps its `security` rules.

use crate::core::kinds::Descriptive;
use crate::core::model::Kind;

/// The entries of `kind`'s allow-list, `(where, why)`, when the kind is deny-by-default (its
/// declaration's `descriptive`, `core::kinds`; each normalizer's `DESCRIPTIVE`).
pub fn descriptive(kind: Kind) -> Option<&'static [(&'static str, &'static str)]> {
    match kind.decl().descriptive {
        Descriptive::DenyByDefault(entries) => Some(entries),
        Descriptive::KeepsWhatItModels | Descriptive::OwnIntrospection => None,
    }
}

/// The Markdown of `docs/allow-list.md`.
pub fn markdown() -> String {
    let mut out = String::from(
        "# Descriptive allow-lists\n\nGenerated from the normalizers (`src/core/normalize/allow_list.rs`); \
         a test fails when this file is stale. A deny-by-default normalizer keeps every keyword \
         of every object it reads: modelled ones in the model, the rest verbatim in the contract \
         (a change is `unclassified-change`, `meta-changed` or, for a vendor `x-` key, \
         `extension-changed`, at its path). Only the fields below stay out of the fingerprint. \
         No model-facing text is ever on a list.\n",
    );
    for kind in Kind::ALL {
        out.push_str(&format!("\n## `{}`\n\n", kind.as_str()));
        match kind.decl().descriptive {
            Descriptive::DenyByDefault(entries) => {
                out.push_str("| field | why it is outside the fingerprint |\n|---|---|\n");
                for (field, why) in entries {
                    out.push_str(&format!("| `{field}` | {why} |\n"));
                }
            }
            Descriptive::OwnIntrospection => out.push_str(
                "The document is schemawatch's own catalog introspection, which reads only the \
                 facts it models (docs/databases.md lists them); there is no provider document \
                 with fields of its own.\n",
            ),
            Descriptive::KeepsWhatItModels => out.push_str(
                "Not yet deny-by-default: the normalizer keeps what it models and drops the \
                 rest.\n",
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_allow_list_md_is_generated_from_the_normalizers() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/allow-list.md");
        if std::env::var("SCHEMAWATCH_BLESS").as_deref() == Ok("1") {
            std::fs::write(path, markdown()).unwrap();
        }
        let on_disk = std::fs::read_to_string(path).unwrap_or_default();
        assert!(
            on_disk == markdown(),
            "docs/allow-list.md is stale: run `SCHEMAWATCH_BLESS=1 cargo test --lib allow_list`"
        );
    }

    #[test]
    fn no_model_facing_text_is_on_a_list() {
        for kind in Kind::ALL {
            for (field, _) in descriptive(kind).unwrap_or_default() {
                for text in ["description", "title", "instructions", "messages", "name"] {
                    assert!(!field.ends_with(text), "{kind}: {field}");
                }
            }
        }
    }
}
