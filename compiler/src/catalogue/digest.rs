//! The content hash of a catalogue, `sha256:<hex>`, as plans record it in `catalogue_digest`.
//!
//! The hash covers every source file's catalogue-relative path (`devices/H100_SXM.yaml`, so the
//! folder the catalogue was read from does not matter) and text, sorted by that path, each framed
//! by its length: it does not depend on the order files were handed in, and two different file
//! sets cannot hash alike by shifting bytes between path and text.
//!
//! A job's *catalogue inputs* ([`inputs`]) are the parts of the catalogue its plan can read: its
//! pool as loaded (sites, node groups, links, tenants, rates, everything the pool file says) and
//! the device entries of every device type that pool's node groups use. The planner looks the
//! catalogue up in three places only, all of them inside these parts: the pool named by the
//! job (`plan/request.rs`), the device of each of the pool's node groups (`plan/placement.rs`)
//! and the device of each planned group, one of those (`plan/uncertainty.rs`). A price change in
//! another pool, or a device no node group of the pool uses, leaves the digest and the plan as
//! they are (`tests/tests/plan_cache.rs` plans every example against its inputs alone).

use super::model::{Device, Pool};
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
    let parts: Vec<&[u8]> = sorted
        .iter()
        .flat_map(|(path, text)| [path.as_bytes(), text.as_bytes()])
        .collect();
    framed(&parts)
}

/// `sha256:<hex>` over `parts`, each framed by its length, so no two different lists of parts
/// hash alike by shifting bytes from one part to the next.
fn framed(parts: &[&[u8]]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_le_bytes());
        hasher.update(part);
    }
    let mut out = String::from("sha256:");
    for byte in hasher.finalize() {
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// The version of the inputs digest: bumped when what it covers changes.
const INPUTS_VERSION: &str = "loam-catalogue-inputs/2";

/// `sha256:<hex>` over a job's catalogue inputs: pool `id` as loaded (or its absence) and each
/// device type of `devices` as loaded (or its absence), in the order given. The loaded values
/// are hashed, not the files' text: spans, comments and layout are not part of them, so only
/// what the planner can read counts. `None` when a value cannot be serialised (the caller then falls back to the
/// whole catalogue's digest).
pub(crate) fn inputs(
    id: &str,
    pool: Option<&Pool>,
    devices: &[(&str, Option<&Device>)],
) -> Option<String> {
    let mut owned: Vec<Vec<u8>> = vec![
        INPUTS_VERSION.as_bytes().to_vec(),
        b"pool".to_vec(),
        id.as_bytes().to_vec(),
    ];
    // The file a pool or device was read from counts by its catalogue-relative path, as in the
    // catalogue's digest: the same catalogue read from another folder (a work tree, a git
    // revision, another checkout) has the same inputs. The planner never reads the path.
    owned.push(match pool {
        Some(pool) => {
            let mut pool = pool.clone();
            pool.file = relative(&pool.file);
            serde_json::to_vec(&pool).ok()?
        }
        None => b"absent".to_vec(),
    });
    for (id, device) in devices {
        owned.push(b"device".to_vec());
        owned.push(id.as_bytes().to_vec());
        owned.push(match device {
            Some(device) => {
                let mut device = (*device).clone();
                device.file = relative(&device.file);
                serde_json::to_vec(&device).ok()?
            }
            None => b"absent".to_vec(),
        });
    }
    let parts: Vec<&[u8]> = owned.iter().map(Vec::as_slice).collect();
    Some(framed(&parts))
}
