//! What the planner found about a job that the user should read as a diagnostic: no feasible
//! plan, a missed deadline or budget, devices that are not free now, devices above the tenant's
//! guaranteed quota.
//!
//! The planner writes them into the plan ([`PlanDiagnosticIr`], in the Plan JSON beside the
//! estimates), naming the spec field each comes from; [`crate::project`] turns them into
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
