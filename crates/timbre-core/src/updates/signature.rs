//! The feed's detached signature: `<feed URL>.sig` holds the Ed25519 signature of the
//! manifest's exact bytes as standard base64 (with padding; surrounding whitespace, such as the
//! newline an editor or `base64` adds, is ignored). Text rather than 64 raw bytes, so that a
//! release engineer can read, paste and diff it, and a server serves it as any text file.
//!
//! The bytes are verified before they are parsed: a manifest is only read once it is known to
//! be the project's, so nothing an attacker serves reaches the JSON parser's logic beyond
//! "not signed".

use anyhow::Result;
use base64::Engine;
use ed25519_dalek::{Signature, VerifyingKey};

/// Replaces the compiled-in public key: 64 hex digits (the 32-byte Ed25519 public key). For
/// tests, which sign with a key of their own, and for a private update channel.
pub const KEY_ENV: &str = "TIMBRE_UPDATE_KEY";

/// The key feeds are verified against: `TIMBRE_UPDATE_KEY` when set, else the compiled-in one.
pub(super) fn verifying_key() -> Result<VerifyingKey> {
    let bytes = match std::env::var(KEY_ENV) {
        Ok(hex) if !hex.trim().is_empty() => parse_hex_key(hex.trim()).ok_or_else(|| {
            crate::error::invalid_input(format!(
                "{KEY_ENV} is not 64 hex digits (a 32-byte Ed25519 public key)"
            ))
        })?,
        _ => super::key::PUBLIC_KEY,
    };
    VerifyingKey::from_bytes(&bytes).map_err(|_| {
        crate::error::invalid_input(format!(
            "the update key ({KEY_ENV}, else the built-in one) is not a valid Ed25519 public key"
        ))
    })
}

fn parse_hex_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

/// Checks that `signature_file` (the `.sig` file's contents) signs `manifest` with `key`;
/// errors name the feed and say what is wrong.
pub(super) fn verify(
    feed_url: &str,
    manifest: &[u8],
    signature_file: &[u8],
    key: &VerifyingKey,
) -> Result<()> {
    let text = std::str::from_utf8(signature_file)
        .unwrap_or_default()
        .trim();
    let signature: [u8; 64] = base64::engine::general_purpose::STANDARD
        .decode(text)
        .ok()
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| {
            crate::error::invalid_input(format!(
                "update feed {feed_url}: its signature {feed_url}.sig is not the base64 of a \
                 64-byte Ed25519 signature"
            ))
        })?;
    // Strict: no malleable signatures, no small-order keys.
    key.verify_strict(manifest, &Signature::from_bytes(&signature))
        .map_err(|_| {
            crate::error::invalid_input(format!(
                "update feed {feed_url}: the signature does not match the manifest (signed by \
                 another key, or the file was altered)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_keys_are_32_bytes_of_hex() {
        let hex = "28c4082846f0268ab6131d0373c9179487394c71c0ad3dd3af261a3dde934ff2";
        assert_eq!(parse_hex_key(hex), Some(super::super::key::PUBLIC_KEY));
        assert_eq!(parse_hex_key(&hex[..62]), None);
        assert_eq!(parse_hex_key(&format!("{}zz", &hex[..62])), None);
        assert_eq!(parse_hex_key(&format!("é{}", &hex[..62])), None);
    }

    #[test]
    fn the_compiled_in_key_is_a_valid_public_key() {
        assert!(VerifyingKey::from_bytes(&super::super::key::PUBLIC_KEY).is_ok());
    }

    #[test]
    fn a_signature_that_is_not_base64_of_64_bytes_is_refused_as_such() {
        let key = VerifyingKey::from_bytes(&super::super::key::PUBLIC_KEY).unwrap();
        for sig in [&b"not base64!"[..], b"AAAA", b""] {
            let err = verify("https://f/x.json", b"{}", sig, &key).unwrap_err();
            assert!(err.to_string().contains("is not the base64"), "{err}");
        }
        let zeros = base64::engine::general_purpose::STANDARD.encode([0u8; 64]);
        let err = verify("https://f/x.json", b"{}", zeros.as_bytes(), &key).unwrap_err();
        assert_eq!(
            err.to_string(),
            "update feed https://f/x.json: the signature does not match the manifest (signed by \
             another key, or the file was altered)"
        );
    }
}
