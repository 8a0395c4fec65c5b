//! What the planner found about a job that the user should read as a diagnostic: no feasible
//! plan, a missed deadline or budget, devices that are not free now, devices above the tenant's
//! guaranteed quota.
//!
//! The planner writes them into the plan ([`PlanDiagnosticIr`], in the Plan JSON beside the
//! estimates), naming the spec field each comes from; `loam_compiler::project` turns them into
//! located [`Diagnostic`]s with the job's spans. A plan taken from an earlier run (the other
//! side of a diff) carries its findings with it.

use crate::diagnostics::{Code, Diagnostic, Severity};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The part of a job spec a finding points at.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub enum SpecField {
    /// The job's name (its label).
    #[serde(rename = "job")]
    Job,
    /// `tenant`.
    #[serde(rename = "tenant")]
    Tenant,
    /// `resources { devices }` (the `resources` block when the list is not written).
    #[serde(rename = "resources.devices")]
    Devices,
    /// `parallel { … }` (the job when the block is not written).
    #[serde(rename = "parallel")]
    Parallel,
    /// `goal { deadline }`.
    #[serde(rename = "goal.deadline")]
    Deadline,
    /// `goal { budget }`.
    #[serde(rename = "goal.budget")]
    Budget,
}

/// One finding of the planner, as the Plan JSON carries it (`plans[].diagnostics`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PlanDiagnosticIr {
    /// The registered code, `L3xxx`.
    pub code: Code,
    /// `error` (the job cannot run as planned) or `warning`.
    pub severity: Severity,
    /// One line, lowercase, with numbers.
    pub message: String,
    /// What to do about it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub help: Option<String>,
    /// The spec field it comes from.
    pub field: SpecField,
}

impl PlanDiagnosticIr {
    /// An error found while planning.
    pub fn error(code: Code, field: SpecField, message: String, help: &str) -> Self {
        PlanDiagnosticIr {
            code,
            severity: Severity::Error,
            message,
            help: Some(help.to_string()),
            field,
        }
    }

    /// A warning found while planning.
    pub fn warning(code: Code, field: SpecField, message: String, help: &str) -> Self {
        PlanDiagnosticIr {
            severity: Severity::Warning,
            ..Self::error(code, field, message, help)
        }
    }

    /// The located diagnostic, with `span` the place of [`Self::field`] in the job's spec.
    pub fn locate(&self, span: crate::span::Span, label: &str) -> Diagnostic {
        let mut d = Diagnostic::error(self.code, self.message.clone(), span, label);
        d.severity = self.severity;
        d.help.clone_from(&self.help);
        d
    }
}

/// What ruled out every layout of a job, which decides the help of L3001: "more memory" only
/// helps when some layout ran out of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoLayoutCause {
    /// At least one layout was refused for memory.
    OutOfMemory,
    /// Layouts were refused, none for memory (degrees that do not divide, tensor beyond a node,
    /// more devices than allowed).
    Shape,
    /// No layout was refused, yet none had a finite time or cost: an estimate overflowed.
    NoFiniteEstimate,
}

impl NoLayoutCause {
    /// The L3001 help for this cause, `pinned` when the spec pins a layout degree.
    pub fn help(self, pinned: bool) -> &'static str {
        match (self, pinned) {
            (NoLayoutCause::OutOfMemory, true) => {
                "unpin a degree (remove it or write `auto`) so the planner may choose it, or allow larger node groups or devices with more memory"
            }
            (NoLayoutCause::OutOfMemory, false) => {
                "allow devices with more memory, more devices, or a smaller micro-batch"
            }
            (NoLayoutCause::Shape, true) => {
                "unpin a degree (remove it or write `auto`) so the planner may choose it, or allow larger node groups"
            }
            (NoLayoutCause::Shape, false) => {
                "allow more devices or other device types; the plan's reasons say which rule each layout breaks"
            }
            (NoLayoutCause::NoFiniteEstimate, _) => {
                "no layout has a finite time or cost: check the catalogue's figures for these devices and sites (efficiency, MTBF, prices) and the job's `tokens` and checkpoint `interval`"
            }
        }
    }
}

/// The least goodput a plan may have. Below one half, failures, restarts, checkpoint writes and
/// redone work take more wall time than the training itself: the devices' MTBF, the checkpoint
/// interval or the job's size is wrong, and the run's cost and time are dominated by a model
/// (Daly's) that is then far outside the range it was validated in.
pub const MIN_GOODPUT: f64 = 0.5;

/// The largest restart budget a manifest can carry: JobSet's `failurePolicy.maxRestarts` and
/// Volcano's `maxRetry` are int32 fields, and the bare-metal launcher compares it in bash
/// arithmetic.
pub const MAX_RESTART_BUDGET: u64 = i32::MAX as u64;

/// L3009: a plan whose failures leave too little goodput to be useful, or whose restart budget
/// no manifest can carry; `None` for a plan within both limits. Takes the plan's
/// `estimate.goodput` figures (`fraction`, `restart_budget`, `interruptions_expected`) as
/// numbers, since the Plan IR already depends on this module.
pub fn goodput_finding(
    job: &str,
    fraction: f64,
    restart_budget: u64,
    interruptions_expected: f64,
) -> Option<PlanDiagnosticIr> {
    let too_low = fraction.is_nan() || fraction < MIN_GOODPUT;
    let too_many = restart_budget > MAX_RESTART_BUDGET;
    if !(too_low || too_many) {
        return None;
    }
    let what = if too_low {
        format!(
            "goodput {} is below {}",
            crate::display::percent(fraction),
            crate::display::percent(MIN_GOODPUT)
        )
    } else {
        format!(
            "its restart budget {} is above {}, the most a manifest can carry",
            restart_budget, MAX_RESTART_BUDGET
        )
    };
    Some(PlanDiagnosticIr::error(
        crate::diagnostics::codes::plan::FAILURES_DOMINATE,
        SpecField::Job,
        format!(
            "job `{job}` would spend its time on failures: {what} ({} interruptions expected)",
            count_words(interruptions_expected)
        ),
        "check the checkpoint `interval` (or write `auto`), the job's `tokens`, and the devices' `reliability.mtbf` in the catalogue",
    ))
}

/// A count for a sentence: grouped digits up to a million, scientific notation beyond, so an
/// astronomic count stays one short word.
fn count_words(n: f64) -> String {
    if n.abs() < 1e6 {
        crate::display::thousands(n)
    } else {
        format!("{n:.1e}")
    }
}
