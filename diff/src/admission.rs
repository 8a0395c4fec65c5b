//! The admission changes between two revisions, as the diff says them: the core's sentences
//! ([`loam_compiler::admission::changes`]) said more exactly where the diff knows more, and
//! written as text and as markdown.

use crate::compare::PlanDiff;
use loam_compiler::admission::{AdmissionChange, AdmissionStatus, preemptors_text};
use loam_ir::diff::Action;
use loam_ir::display::table_cell;
use std::fmt::Write as _;

/// The core's admission sentences, said more exactly where the diff knows more (review finding
/// 10): a job whose spec does not check at head is not placed, not "removed"; a borrower that
/// borrows the same devices but may be preempted by others names who.
pub(crate) fn explain_admission(diff: &mut PlanDiff, head_label: &str) {
    // A job whose spec does not check at head is not removed: it is not placed because it
    // was not planned (review finding 10). The core's sentence knows only that it is gone.
    let unchecked: std::collections::BTreeSet<&str> = diff
        .jobs
        .iter()
        .filter(|j| j.action == Action::Error)
        .map(|j| j.job.as_str())
        .collect();
    for change in &mut diff.admission {
        // A borrower that borrows the same devices, but may now be preempted by others (or
        // by no one), read "this change makes `x` borrow 128 H800_SXM … (it was borrowing 128
        // H800_SXM)": the difference, who may preempt it, is said instead.
        if let (
            Some(AdmissionStatus::Borrows {
                borrowed: was,
                preempted_by: before,
            }),
            Some(AdmissionStatus::Borrows {
                borrowed: now,
                preempted_by: after,
            }),
        ) = (&change.before, &change.after)
            && was == now
            && before != after
        {
            change.sentence = format!(
                "`{}` still borrows the same devices; who may preempt it changes: {} → {}",
                change.job,
                preemptors_text(before),
                preemptors_text(after)
            );
        }
        if change.after.is_none() && unchecked.contains(change.job.as_str()) {
            let removed = format!("`{}` is removed;", change.job);
            if let Some(rest) = change.sentence.strip_prefix(&removed) {
                change.sentence = format!(
                    "`{}` is not placed: its spec does not check at {};{rest}",
                    change.job, head_label
                );
            }
        }
    }
}

/// The admission changes between two revisions as a markdown list (empty when none).
pub fn changes_markdown(changes: &[AdmissionChange]) -> String {
    if changes.is_empty() {
        return String::new();
    }
    let mut out = String::from("### Admission changes\n\n");
    for change in changes {
        let _ = writeln!(out, "- {}", table_cell(&change.sentence));
    }
    // Names, tenants and reasons come from PR-writable specs and catalogues: no control
    // character of theirs reaches a terminal or a comment raw.
    loam_ir::display::visible_lines(&out).into_owned()
}

/// The admission changes as plain text lines (empty when none).
pub fn changes_text(changes: &[AdmissionChange]) -> String {
    let mut out = String::new();
    for change in changes {
        let _ = writeln!(out, "  # {}", change.sentence);
    }
    // Names, tenants and reasons come from PR-writable specs and catalogues: no control
    // character of theirs reaches a terminal or a comment raw.
    loam_ir::display::visible_lines(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_compiler::admission::Preemptor;

    #[test]
    fn a_borrower_that_only_lost_its_preemptor_says_so() {
        // The review's pr2: `llama3-405b-pretrain` borrows 128 H800_SXM on both sides; at base
        // tenant nlp could reclaim them, at head no one can.
        let borrowed = std::collections::BTreeMap::from([("H800_SXM".to_string(), 128)]);
        let reclaim = Preemptor::Reclaim {
            tenant: "nlp".into(),
            device: "H800_SXM".into(),
            unused_guaranteed: 128,
        };
        let mut diff = PlanDiff {
            admission: vec![AdmissionChange {
                job: "llama3-405b-pretrain".into(),
                pool: "xirang".into(),
                before: Some(AdmissionStatus::Borrows {
                    borrowed: borrowed.clone(),
                    preempted_by: vec![reclaim],
                }),
                after: Some(AdmissionStatus::Borrows {
                    borrowed,
                    preempted_by: Vec::new(),
                }),
                sentence: "this change makes `llama3-405b-pretrain` borrow 128 H800_SXM … (it was borrowing 128 H800_SXM)".into(),
            }],
            ..PlanDiff::default()
        };
        explain_admission(&mut diff, "HEAD");
        assert_eq!(
            diff.admission[0].sentence,
            "`llama3-405b-pretrain` still borrows the same devices; who may preempt it changes: \
             tenant nlp reclaiming its H800_SXM → no one"
        );
    }
}
