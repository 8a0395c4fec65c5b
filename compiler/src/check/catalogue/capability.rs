//! "No allowed device has it": the one shape of the catalogue checks that refuse a job or a
//! service whose allowed devices all lack a capability (a training precision, a feature, a
//! serving precision). The error names the devices that lack it, the help the pool's devices
//! that have it, and a label on each allowed device says what it does have.

use super::check_job::{Allowed, lack, ticked, with_device_labels};
use crate::catalogue::{Catalogue, Device, Pool};
use loam_ir::diagnostics::{Code, Diagnostic};
use loam_ir::span::Span;

/// A capability every allowed device lacks.
pub(crate) struct Missing<'s> {
    pub(crate) code: Code,
    /// The error's message (`no allowed device trains in `fp8``).
    pub(crate) message: String,
    /// Where the spec asks for it.
    pub(crate) span: Span,
    /// What the devices lack, as the label ends (`fp8`, `an fp8 rate`).
    pub(crate) what: &'s str,
}

/// The pool's device types that `have` the capability, in the pool's order.
pub(crate) fn pool_devices_with<'c>(
    catalogue: &Catalogue,
    pool: &'c Pool,
    have: impl Fn(&Device) -> bool,
) -> Vec<&'c str> {
    pool.device_ids()
        .into_iter()
        .filter(|id| catalogue.device(id).is_some_and(&have))
        .collect()
}

/// The error for `missing`, with `help`, and one label per allowed device from `label` (the
/// span of what the device lists, and what it lists).
pub(crate) fn missing_capability(
    missing: Missing<'_>,
    allowed: &Allowed<'_>,
    help: String,
    label: impl Fn(&Device) -> (Span, String),
) -> Diagnostic {
    let lacking = allowed.devices.iter().map(|d| d.id.value.as_str());
    let diagnostic = Diagnostic::error(
        missing.code,
        missing.message,
        missing.span,
        format!(
            "{} {} {}",
            ticked(lacking),
            lack(allowed.devices.len()),
            missing.what
        ),
    )
    .with_help(help);
    let labels = allowed.devices.iter().map(|d| {
        let (span, message) = label(d);
        (*d, span, message)
    });
    with_device_labels(diagnostic, labels)
}
