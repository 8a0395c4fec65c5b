//! The refusals every workload's emit context reports (L4001, L4002, L4004), worded once for
//! jobs and services.

use loam_ir::diagnostics::codes;
use loam_ir::diagnostics::{Code, Diagnostic};

/// An unlocated emit error with its help.
pub fn error(code: Code, message: String, help: &str) -> Diagnostic {
    Diagnostic::unlocated(code, message).with_help(help)
}

/// What is being emitted: a training job or a model service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// A training job (`job` block).
    Job,
    /// A model service (`service` block).
    Service,
}

impl Workload {
    fn noun(self) -> &'static str {
        match self {
            Workload::Job => "job",
            Workload::Service => "service",
        }
    }
}

/// L4001: the plan found no feasible layout or deployment; `reasons` are the plan's own.
pub fn infeasible(workload: Workload, name: &str, reasons: &[String]) -> Diagnostic {
    let why = if reasons.is_empty() {
        String::new()
    } else {
        format!(": {}", reasons.join("; "))
    };
    let help = match workload {
        Workload::Job => "change the spec until `loam plan` finds a feasible plan",
        Workload::Service => "change the service until `loam plan` finds a feasible deployment",
    };
    error(
        codes::emit::INFEASIBLE_PLAN,
        format!(
            "cannot emit {} `{name}`, its plan is infeasible{why}",
            workload.noun()
        ),
        help,
    )
}

/// L4002: a plan that lacks a field or whose fields disagree (a hand-edited plan).
pub fn incomplete(workload: Workload, name: &str, why: &str) -> Diagnostic {
    error(
        codes::emit::INCOMPLETE_PLAN,
        format!(
            "cannot emit {} `{name}`, its plan is incomplete: {why}",
            workload.noun()
        ),
        "emit plans made by `loam plan`; a hand-edited plan must keep every field",
    )
}

/// L4004: a name that a manifest cannot carry safely.
pub fn unusable(workload: Workload, name: &str, what: &str, value: &str) -> Diagnostic {
    error(
        codes::emit::UNUSABLE_NAME,
        format!(
            "{what} `{}` of {} `{name}` cannot be used in a manifest",
            value.escape_debug(),
            workload.noun()
        ),
        "use letters, digits, `-`, `_` and `.` (Kubernetes names: lowercase DNS labels)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job and a service refused for the same reason read the same but for the noun.
    #[test]
    fn jobs_and_services_are_refused_in_one_wording() {
        let job = incomplete(Workload::Job, "a", "no layout").message;
        let service = incomplete(Workload::Service, "a", "no layout").message;
        assert_eq!(
            job,
            "cannot emit job `a`, its plan is incomplete: no layout"
        );
        assert_eq!(service, job.replace("job", "service"));
        let job = unusable(Workload::Job, "a", "tenant namespace", "A\n").message;
        assert_eq!(
            job,
            "tenant namespace `A\\n` of job `a` cannot be used in a manifest"
        );
        let reasons = ["no device fits".to_string()];
        let service = infeasible(Workload::Service, "a", &reasons);
        assert_eq!(
            service.message,
            "cannot emit service `a`, its plan is infeasible: no device fits"
        );
        assert_eq!(
            infeasible(Workload::Job, "a", &[]).code,
            codes::emit::INFEASIBLE_PLAN
        );
    }
}
