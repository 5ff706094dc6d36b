use super::NormalizeError;
use crate::core::model::ToolSpec;
pub fn normalize(_w: &str, _b: &[u8]) -> Result<ToolSpec, NormalizeError> {
    Err(NormalizeError::UnsupportedKind(
        crate::core::model::Kind::Odata,
    ))
}
