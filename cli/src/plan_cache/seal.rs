//! The third word of a cache entry's header: what proves the entry was written by loam.
//!
//! Without a key it is `sha256:<hex>` of the body (the plan's JSON): it finds damage, not
//! forgery (anyone can recompute it), so an unkeyed cache must live where no untrusted code
//! writes (`location.rs`). With a key (`LOAM_CACHE_KEY`) it is `hmac-sha256:<hex>`, HMAC-SHA256
//! under that key of the header's magic and plan key, a newline and the body: only a holder of
//! the key can write an entry that verifies, so a cache restored from a shared CI cache cannot
//! be forged without the secret, and an entry copied to another key's place (an older plan of
//! the same job, say) does not verify there.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// The secret of `LOAM_CACHE_KEY`, as an HMAC keyed with it; its bytes are never printed.
#[derive(Clone)]
pub struct Secret(Hmac<Sha256>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// The fewest bytes a key may have: 128 bits.
pub const MIN_KEY_BYTES: usize = 16;

impl Secret {
    /// The key `bytes`; `None` when it is shorter than [`MIN_KEY_BYTES`].
    pub fn new(bytes: &[u8]) -> Option<Secret> {
        if bytes.len() < MIN_KEY_BYTES {
            return None;
        }
        // HMAC takes keys of any length, so this never fails.
        <Hmac<Sha256> as Mac>::new_from_slice(bytes)
            .ok()
            .map(Secret)
    }
}

/// The seal of an entry: with `secret`, the HMAC of `signed` (the header's magic and key, a
/// newline, the body); without one, the checksum of `body`.
pub fn seal(secret: Option<&Secret>, signed: &[u8], body: &[u8]) -> String {
    match secret {
        Some(secret) => format!(
            "hmac-sha256:{}",
            hex(&mac(secret, signed).finalize().into_bytes())
        ),
        None => format!("sha256:{}", hex(&Sha256::digest(body))),
    }
}

/// Whether `found` is the seal of the entry: with a key, a valid HMAC of `signed` (compared in
/// constant time); without one, the checksum of `body`. An unkeyed entry never verifies under a
/// key, and a signed one never without it.
pub fn verifies(secret: Option<&Secret>, signed: &[u8], body: &[u8], found: &str) -> bool {
    match secret {
        Some(secret) => found
            .strip_prefix("hmac-sha256:")
            .and_then(unhex)
            .is_some_and(|tag| mac(secret, signed).verify_slice(&tag).is_ok()),
        None => found == seal(None, signed, body),
    }
}

fn mac(secret: &Secret, signed: &[u8]) -> Hmac<Sha256> {
    let mut mac = secret.0.clone();
    mac.update(signed);
    mac
}

fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() != 64 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
