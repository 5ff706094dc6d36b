//! Standard Webhooks signatures: `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "id.timestamp.body">`, keyed by the base64 secret after its `whsec_` prefix; several
//! space-separated signatures while a secret is rotated.

use base64::Engine;
use hmac::{KeyInit, Mac};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignError {
    /// The secret is not `whsec_` followed by base64 (its value is never shown).
    #[error("secret #{index} is not a Standard Webhooks secret (`whsec_` followed by base64)")]
    BadSecret { index: usize },
}

/// The decoded key of a `whsec_…` secret.
pub fn key(secret: &str, index: usize) -> Result<Vec<u8>, SignError> {
    let encoded = secret
        .trim()
        .strip_prefix("whsec_")
        .unwrap_or(secret.trim());
    let key = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| SignError::BadSecret { index })?;
    if key.is_empty() {
        return Err(SignError::BadSecret { index });
    }
    Ok(key)
}

/// The `webhook-signature` header value: one `v1,` signature per key.
pub fn signature(keys: &[Vec<u8>], id: &str, timestamp: i64, body: &[u8]) -> String {
    keys.iter()
        .map(|key| {
            // HMAC accepts keys of any length.
            let mut mac = match hmac::Hmac::<sha2::Sha256>::new_from_slice(key) {
                Ok(m) => m,
                Err(_) => return String::new(),
            };
            mac.update(id.as_bytes());
            mac.update(b".");
            mac.update(timestamp.to_string().as_bytes());
            mac.update(b".");
            mac.update(body);
            let tag = mac.finalize().into_bytes();
            format!(
                "v1,{}",
                base64::engine::general_purpose::STANDARD.encode(tag)
            )
        })
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The specification's published example (standard-webhooks, "Signature scheme").
    #[test]
    fn the_specification_example_signs_as_published() {
        let k = key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0).unwrap();
        let body = br#"{"test": 2432232314}"#;
        let sig = signature(&[k], "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
    }

    #[test]
    fn rotation_signs_with_every_secret_and_bad_secrets_are_named_by_position() {
        let a = key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0).unwrap();
        let b = key("whsec_c2Vjb25kIHNlY3JldA==", 1).unwrap();
        let sig = signature(&[a, b], "id", 1, b"{}");
        assert_eq!(sig.split(' ').count(), 2);
        assert!(sig.split(' ').all(|s| s.starts_with("v1,")));
        let err = key("whsec_not base64!", 3).unwrap_err();
        assert_eq!(err, SignError::BadSecret { index: 3 });
        assert!(!err.to_string().contains("base64!"));
    }
}
