//! The hardware catalogue: what each accelerator can do, where the devices are, how sites are
//! linked and what things cost, loaded from the YAML files under `specs/`.
//!
//! ```text
//!  (path, text) ──yaml──▶ raw records ──load──▶ Device / Pool ──validate──▶ Catalogue
//!                serde-saphyr            units, ranges           references, reachability
//! ```
//!
//! The core never reads files: the caller passes `(FileId, display path, text)` triples to
//! [`load`], or uses [`builtin_sources`] for the catalogue compiled into the binary. Lookups for
//! the checker and the planner live on [`Catalogue`], [`Pool`] and [`Device`]; the text and JSON
//! reports of `loam catalogue list|show` are [`list_text`], [`list_json`], [`show_text`] and
//! [`show_json`]. The checks of jobs and services against the catalogue (codes L21xx) live in
//! [`crate::check::catalogue`].

mod builtin;
pub mod codes;
mod digest;
pub mod facts;
mod load;
mod lookup;
pub mod model;
mod partial;
mod raw;
mod report;
mod validate;
mod values;
mod yaml;

#[cfg(test)]
mod tests;

pub use builtin::{builtin, builtin_devices_with_pool, builtin_sources, shipped_vendors};
pub use load::load;
pub use lookup::{Found, route};
pub use model::{
    BestPublished, Catalogue, Dataset, Device, Feature, Link, NodeGroup, Pool, Quota, Site,
    SliceProfile, SlicingKind, Stack, Status, Tenant, Withheld,
};
pub use partial::load_partial;
pub use report::{UnknownId, list_json, list_text, show_json, show_text};
pub use values::{compare_versions, parse_version};
