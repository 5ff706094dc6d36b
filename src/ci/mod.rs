//! The CI gate: change-scoped accept entries that expire (`accept`), the gate decision and the
//! JSON it adds to a report (`gate`), and CI-native renderings (`formats`: SARIF, JUnit,
//! GitHub workflow commands, GitLab Code Quality). Pure: files are read and the date is taken
//! by the command line.

pub mod accept;
pub mod formats;
pub mod gate;
