//! The content hash of a catalogue, `sha256:<hex>`, as plans record it in `catalogue_digest`.
//!
//! The hash covers every source file's catalogue-relative path (`devices/H100_SXM.yaml`, so the
//! folder the catalogue was read from does not matter) and text, sorted by that path, each framed
//! by its length: it does not depend on the order files were handed in, and two different file
//! sets cannot hash alike by shifting bytes between path and text.

use sha2::{Digest, Sha256};
use std::fmt::Write as _;

/// The last two components of a path: `specs/devices/H100_SXM.yaml` → `devices/H100_SXM.yaml`.
fn relative(path: &str) -> String {
    let normal = path.replace('\\', "/");
    let mut parts: Vec<&str> = normal.rsplit('/').take(2).collect();
    parts.reverse();
    parts.join("/")
}

/// `sha256:<hex>` over `(path, text)` pairs, in any order.
pub(crate) fn digest(sources: &[(String, String)]) -> String {
    let mut sorted: Vec<(String, &str)> = sources
        .iter()
        .map(|(p, t)| (relative(p), t.as_str()))
        .collect();
    sorted.sort();
    let mut hasher = Sha256::new();
    for (path, text) in &sorted {
        for part in [path.as_bytes(), text.as_bytes()] {
            hasher.update((part.len() as u64).to_le_bytes());
            hasher.update(part);
        }
    }
    let mut out = String::from("sha256:");
    for byte in hasher.finalize() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}
