//! Warnings folded into a count per code, shown after the plans: a run over a folder of specs
//! gives tens of queueing and quota warnings, and printed in full they came before any plan
//! (264 lines for the shipped examples). Errors are never folded.

use loam_ir::diagnostics::{Diagnostic, codes};
use std::collections::BTreeMap;

/// Up to this many warnings are shown in full even without `--verbose`: one job's few
/// warnings read better with their source than as a count. Counted: the three findings one
/// plan can raise together (L3005 quota, L3006 queue, L3007 prediction).
pub const SHOWN_IN_FULL: usize = 3;

/// Whether `warnings` are folded into [`summary`] rather than shown in full.
pub fn folds(warnings: usize, verbose: bool) -> bool {
    !verbose && warnings > SHOWN_IN_FULL
}

/// One line for all of `warnings`, then one per code, most frequent first (ties by code):
///
/// ```text
/// 20 warnings (`loam plan --verbose` shows each; the plans' notes say them in one line):
///   8 × L3006 job queues until devices are free
/// ```
pub fn summary(warnings: &[&Diagnostic], command: &str) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for warning in warnings {
        *counts.entry(warning.code.as_str()).or_default() += 1;
    }
    let mut rows: Vec<(&str, usize)> = counts.into_iter().collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
    let total = warnings.len();
    let mut text = format!(
        "{total} {} (`{command} --verbose` shows each in full; `loam explain CODE` explains one):\n",
        if total == 1 { "warning" } else { "warnings" }
    );
    for (code, count) in rows {
        let title = codes::lookup(code).map_or("", |info| info.title);
        text.push_str(&format!("  {count:>3} × {code} {title}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_ir::span::{FileId, Span};

    fn warning(code: loam_ir::diagnostics::Code) -> Diagnostic {
        Diagnostic::warning(code, "m", Span::new(FileId(0), 0, 1), "l")
    }

    #[test]
    fn counts_per_code_most_frequent_first() {
        let queue = codes::lookup("L3006").unwrap().code;
        let quota = codes::lookup("L3005").unwrap().code;
        let all = [warning(quota), warning(queue), warning(queue)];
        let refs: Vec<&Diagnostic> = all.iter().collect();
        let text = summary(&refs, "loam plan");
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].starts_with("3 warnings (`loam plan --verbose`"),
            "{text}"
        );
        assert!(lines[1].starts_with("    2 × L3006 "), "{text}");
        assert!(lines[2].starts_with("    1 × L3005 "), "{text}");
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn a_few_warnings_are_shown_in_full() {
        assert!(!folds(3, false));
        assert!(folds(4, false));
        assert!(!folds(40, true));
    }
}
