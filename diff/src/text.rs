//! The diff for a terminal, in Terraform's style: a legend of the symbols used, one block per
//! job with `+ ~ - -/+` prefixes and `old -> new`, what each manifest change does on the backend
//! (`# … forces replacement`), and a summary line.

use super::classify::Verdict;
use super::compare::{JobDiff, PlanDiff};
use super::services::ServiceDiff;
use super::side::Side;
use super::totals::Cells;
use loam_backends::change::{Effect, Reason};
use loam_ir::diff::Action;
use loam_ir::diff::values::{Change, is_list, list_items, quote, sides};
use std::fmt::Write;

/// ANSI colours, or none.
#[derive(Clone, Copy)]
struct Paint(bool);

/// Every colour code [`Paint`] writes: the only escape sequences the report may hold.
const PAINT_CODES: [&str; 7] = [
    "\x1b[0m",
    "\x1b[1m",
    "\x1b[31m",
    "\x1b[32m",
    "\x1b[33m",
    "\x1b[36m",
    "\x1b[1;31m",
];

/// `text` with every control character but line feeds, tabs and [`PAINT_CODES`] written as a
/// visible escape (`\u{1b}`): a job, tenant or file name from the pull request cannot move the
/// cursor, retitle the terminal or hide text; at worst it can colour itself.
fn visible_but_colours(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if let Some(code) = PAINT_CODES.iter().find(|code| rest.starts_with(**code)) {
            out.push_str(code);
            rest = rest.get(code.len()..).unwrap_or_default();
            continue;
        }
        out.push_str(&loam_ir::display::visible_lines(c.encode_utf8(&mut [0; 4])));
        rest = rest.get(c.len_utf8()..).unwrap_or_default();
    }
    out
}

impl Paint {
    fn wrap(self, code: &str, text: &str) -> String {
        if self.0 {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn symbol(self, action: Action) -> String {
        match action {
            Action::Create => self.wrap("32", "+"),
            Action::Update => self.wrap("33", "~"),
            Action::Delete => self.wrap("31", "-"),
            Action::Replace => format!("{}/{}", self.wrap("31", "-"), self.wrap("32", "+")),
            Action::Infeasible | Action::Error => self.wrap("1;31", "!"),
            Action::NoOp => " ".to_string(),
        }
    }

    fn bold(self, text: &str) -> String {
        self.wrap("1", text)
    }
}

/// The symbol right-aligned in three columns (`  +`, `-/+`), whatever the colour codes.
fn padded(paint: Paint, action: Action) -> String {
    let width = action.symbol().chars().count();
    format!(
        "{}{}",
        " ".repeat(3usize.saturating_sub(width)),
        paint.symbol(action)
    )
}

/// The header: which sides are compared and whether the catalogue changed.
pub fn header(base: &Side, head: &Side) -> String {
    let mut out = format!("loam diff: {} -> {}\n", base.title(), head.title());
    let digest = |side: &Side| {
        side.catalogue_digest
            .as_deref()
            .map_or("does not load".to_string(), short_digest)
    };
    if base.catalogue_digest == head.catalogue_digest
        && base.catalogue_origin == head.catalogue_origin
    {
        let _ = writeln!(
            out,
            "catalogue: {} ({}), unchanged",
            head.catalogue_origin,
            digest(head)
        );
    } else {
        let origin = if base.catalogue_origin == head.catalogue_origin {
            head.catalogue_origin.clone()
        } else {
            format!("{} -> {}", base.catalogue_origin, head.catalogue_origin)
        };
        let _ = writeln!(
            out,
            "catalogue: {origin} ({} -> {}); jobs whose pool or devices changed are planned again",
            digest(base),
            digest(head)
        );
        for line in super::catalogue_changes::lines(base, head) {
            let _ = writeln!(out, "catalogue change: {line}");
        }
    }
    out
}

/// `sha256:0123456789ab` (twelve hex digits).
pub fn short_digest(digest: &str) -> String {
    digest.chars().take("sha256:".len() + 12).collect()
}

/// The whole text report.
pub fn render(diff: &PlanDiff, base: &Side, head: &Side, color: bool) -> String {
    let paint = Paint(color);
    let mut out = header(base, head);
    out.push('\n');
    let summary = diff.summary();
    let used = diff.actions_used();
    if !used.is_empty() {
        out.push_str("Job actions are indicated with the following symbols:\n");
        for action in &used {
            let _ = writeln!(out, "{} {}", padded(paint, *action), action.meaning());
        }
        out.push_str("\nloam will perform the following actions:\n\n");
    }
    for job in diff.changed() {
        out.push_str(&job_block(job, head, paint));
        out.push('\n');
    }
    for service in diff.changed_services() {
        out.push_str(&service_block(service, head, paint));
        out.push('\n');
    }
    for file in &diff.broken {
        let _ = writeln!(
            out,
            "  # {} does not check at {} ({} {}); its jobs are not planned",
            file.file,
            head.label,
            file.errors,
            if file.errors == 1 { "error" } else { "errors" }
        );
        let _ = writeln!(
            out,
            "{} file \"{}\"\n",
            padded(paint, Action::Error),
            file.file
        );
    }
    if !diff.admission.is_empty() {
        out.push_str("Admission across the pool (Kueue's rules, docs/admission.md):\n");
        out.push_str(&crate::admission::changes_text(&diff.admission));
        out.push('\n');
    }
    if let Some(schedule) = &diff.schedule {
        out.push_str(&super::schedule::text(schedule));
        out.push('\n');
    }
    let line = summary.line_with_unchanged();
    out.push_str(&paint.bold(&line));
    out.push('\n');
    let headline = super::headline::line(diff, base, head);
    if !headline.is_empty() {
        out.push_str(&headline);
        out.push('\n');
    }
    if diff.changed().next().is_some() || !diff.broken.is_empty() {
        out.push('\n');
        let rows = super::totals::totals(diff, base, head);
        let tenants = rows.iter().filter(|r| r.tenant.is_some()).count();
        for row in rows {
            // Tenants without a change are in the total only; one tenant's row would repeat it.
            if (row.tenant.is_some() && row.changed == 0) || (row.tenant.is_none() && tenants == 1)
            {
                continue;
            }
            let _ = writeln!(
                out,
                "  {:<12} {} changed · {} device-h · {} · {} · {}",
                row.name(),
                row.changed,
                row.device_hours(),
                row.cost(),
                row.energy(),
                row.carbon()
            );
        }
    }
    if diff.changed_services().next().is_some() {
        let rows = super::services::totals(&diff.services, base, head);
        let tenants = rows.iter().filter(|r| r.tenant.is_some()).count();
        out.push_str("\n  services, per month:\n");
        for row in rows {
            if (row.tenant.is_some() && row.changed == 0) || (row.tenant.is_none() && tenants == 1)
            {
                continue;
            }
            let _ = writeln!(
                out,
                "  {:<12} {} changed · {} devices · {} · {} · {}",
                row.name(),
                row.changed,
                row.devices(),
                row.cost(),
                row.energy(),
                row.carbon()
            );
        }
    }
    if color {
        visible_but_colours(&out)
    } else {
        loam_ir::display::visible_lines(&out).into_owned()
    }
}

/// The comment line above a job's block.
pub fn describe(job: &JobDiff, head: &Side) -> String {
    let name = &job.job;
    let mut text = match (job.action, &job.verdict) {
        (Action::Create, _) => format!("job \"{name}\" will be created"),
        (Action::Update, Some(verdict)) if verdict.reasons.is_empty() => format!(
            "job \"{name}\" will be updated in place on {} (its manifests do not change)",
            verdict.backend
        ),
        (Action::Update, Some(verdict)) => {
            format!(
                "job \"{name}\" will be updated in place on {}",
                verdict.backend
            )
        }
        (Action::Update, None) => format!("job \"{name}\" will be updated in place"),
        (Action::Replace, Some(verdict)) if job.old_job.is_none() => replaced(name, verdict),
        (Action::Replace, _) => format!(
            "job \"{}\" has been renamed to \"{name}\" and must be replaced",
            job.old_job.as_deref().unwrap_or_default()
        ),
        (Action::Delete, _) => format!("job \"{name}\" will be destroyed"),
        (Action::Infeasible, _) => {
            let reasons = job
                .after
                .as_ref()
                .map(|p| p.reasons.join("; "))
                .unwrap_or_default();
            format!(
                "job \"{name}\" cannot run as planned at {}: {reasons}",
                head.label
            )
        }
        (Action::Error, _) => format!("job \"{name}\" cannot be planned at {}", head.label),
        (Action::NoOp, _) => format!("job \"{name}\" is unchanged"),
    };
    if let Some(note) = &job.note {
        let _ = write!(text, " ({note})");
    }
    text
}

/// `job "x" must be replaced on kubernetes: 20-jobset.yaml spec.replicatedJobs changed (immutable
/// on a running JobSet); it resumes from its last checkpoint`.
fn replaced(name: &str, verdict: &Verdict) -> String {
    let forcing: Vec<&Reason> = verdict.forcing().collect();
    let first = forcing.first().map(|r| r.sentence()).unwrap_or_default();
    let more = match forcing.len() {
        0 | 1 => String::new(),
        n => format!(" and {} more", n - 1),
    };
    format!(
        "job \"{name}\" must be replaced on {}: {first}{more}; it resumes from its last checkpoint",
        verdict.backend
    )
}

/// The most shared cluster objects a job's block lists one by one; more are one line.
const FOLDED_CLUSTER_OBJECTS: usize = 3;

/// The comment line above a service's block.
pub fn describe_service(service: &ServiceDiff, head: &Side) -> String {
    let name = &service.service;
    let mut text = match service.action {
        Action::Create => format!("service \"{name}\" will be created"),
        Action::Update | Action::Replace => {
            format!("service \"{name}\" will be updated in place")
        }
        Action::Delete => format!("service \"{name}\" will be destroyed"),
        Action::Infeasible => {
            let reasons = service
                .after
                .as_ref()
                .map(|p| p.reasons.join("; "))
                .unwrap_or_default();
            format!(
                "service \"{name}\" cannot be served as planned at {}: {reasons}",
                head.label
            )
        }
        Action::Error => format!("service \"{name}\" cannot be planned at {}", head.label),
        Action::NoOp => format!("service \"{name}\" is unchanged"),
    };
    if let Some(note) = &service.note {
        let _ = write!(text, " ({note})");
    }
    text
}

fn service_block(service: &ServiceDiff, head: &Side, paint: Paint) -> String {
    let mut out = format!("  # {}\n", describe_service(service, head));
    let _ = writeln!(
        out,
        "{} service \"{}\" {{",
        padded(paint, service.action),
        service.service
    );
    out.push_str(&changes_text(&service.changes, paint));
    out.push_str("    }\n");
    out
}

/// A plain service block, for the markdown details.
pub fn service_plain(service: &ServiceDiff, head: &Side) -> String {
    service_block(service, head, Paint(false))
}

fn job_block(job: &JobDiff, head: &Side, paint: Paint) -> String {
    let mut out = format!("  # {}\n", describe(job, head));
    let title = match &job.old_job {
        Some(old) => format!("job \"{old}\" -> \"{}\"", job.job),
        None => format!("job \"{}\"", job.job),
    };
    let _ = writeln!(out, "{} {title} {{", padded(paint, job.action));
    let _ = write!(out, "{}", changes_text(&job.changes, paint));
    if let Some(verdict) = job.verdict.as_ref().filter(|v| !v.reasons.is_empty()) {
        let _ = writeln!(out, "\n        # on {}:", verdict.backend);
        // Shared cluster objects (a site's namespace and queues) are the cluster's, not the job's:
        // a job that moves away from a site lists every one of them as gone, which reads as if
        // merging deleted what other jobs still use. More than a few are one line (review
        // finding 7); the JSON's classification lists each.
        let cluster = verdict
            .reasons
            .iter()
            .filter(|r| r.effect == Effect::Cluster)
            .count();
        let fold = cluster > FOLDED_CLUSTER_OBJECTS;
        for reason in verdict
            .reasons
            .iter()
            .filter(|r| !fold || r.effect != Effect::Cluster)
        {
            let line = format!("# {}", reason.line());
            let line = match reason.effect {
                Effect::Replace => paint.wrap("31", &line),
                _ => line,
            };
            let _ = writeln!(out, "        {line}");
        }
        if fold {
            let _ = writeln!(
                out,
                "        # and {cluster} shared cluster objects (the namespaces, queues and priority classes of the sites involved) differ: they belong to the cluster, stay while other jobs use them, and are not deleted with this job (the JSON's classification lists each)"
            );
        }
    }
    if let Some(manifests) = &job.manifests {
        out.push_str("\n        # manifests:\n");
        for line in manifests.lines() {
            let painted = match line.chars().next() {
                Some('+') if !line.starts_with("+++") => paint.wrap("32", line),
                Some('-') if !line.starts_with("---") => paint.wrap("31", line),
                Some('@') => paint.wrap("36", line),
                _ => line.to_string(),
            };
            let _ = writeln!(out, "        {painted}");
        }
    }
    out.push_str("    }\n");
    out
}

/// The attribute lines of a block: `~ key = old -> new (delta)`, keys aligned.
fn changes_text(changes: &[Change], paint: Paint) -> String {
    let width = changes.iter().map(|c| c.key.len()).max().unwrap_or(0);
    let mut out = String::new();
    for change in changes {
        let action = match (&change.before, &change.after) {
            (None, Some(_)) => Action::Create,
            (Some(_), None) => Action::Delete,
            _ => Action::Update,
        };
        let symbol = paint.symbol(action);
        let key = format!("{:width$}", change.key);
        match (&change.before, &change.after) {
            (before, after) if is_list(before) || is_list(after) => {
                let old = list_items(before);
                let new = list_items(after);
                let _ = writeln!(out, "      {symbol} {key} = [");
                for item in old.iter().filter(|i| !new.contains(i)) {
                    let _ = writeln!(
                        out,
                        "          {} {}",
                        paint.symbol(Action::Delete),
                        quote(item)
                    );
                }
                for item in new.iter().filter(|i| !old.contains(i)) {
                    let _ = writeln!(
                        out,
                        "          {} {}",
                        paint.symbol(Action::Create),
                        quote(item)
                    );
                }
                let kept = new.iter().filter(|i| old.contains(i)).count();
                if kept > 0 {
                    let _ = writeln!(
                        out,
                        "            # ({kept} unchanged {} hidden)",
                        if kept == 1 { "element" } else { "elements" }
                    );
                }
                out.push_str("        ]\n");
            }
            (Some(_), Some(_)) => {
                let (old, new) = sides(change);
                let _ = writeln!(out, "      {symbol} {key} = {old} -> {new}");
            }
            (Some(_), None) => {
                let _ = writeln!(out, "      {symbol} {key} = {}", sides(change).0);
            }
            (None, Some(_)) => {
                let _ = writeln!(out, "      {symbol} {key} = {}", sides(change).1);
            }
            (None, None) => {}
        }
    }
    out
}

/// A plain (uncoloured) rendering of a change list, for the markdown details.
pub fn changes_plain(changes: &[Change]) -> String {
    changes_text(changes, Paint(false))
}

/// A plain job block, for the markdown details.
pub fn job_plain(job: &JobDiff, head: &Side) -> String {
    job_block(job, head, Paint(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_ir::diff::values::{Metric, Value};

    fn change(key: &str, before: Option<Value>, after: Option<Value>) -> Change {
        Change {
            key: key.into(),
            before,
            after,
        }
    }

    #[test]
    fn only_the_paint_codes_survive() {
        let painted = Paint(true).wrap("31", "job \"\x1b]0;owned\x07\x1b[2Kx\"");
        assert_eq!(
            visible_but_colours(&painted),
            "\x1b[31mjob \"\\u{1b}]0;owned\\u{7}\\u{1b}[2Kx\"\x1b[0m"
        );
    }

    #[test]
    fn sides_are_what_the_text_lines_write() {
        let money = |n| Some(Value::Number(n, Metric::Money("CNY".into())));
        let cost = change("estimate.cost", money(1_000.0), money(1_250.0));
        let (old, new) = sides(&cost);
        assert_eq!(
            (old.as_str(), new.as_str()),
            ("1,000 CNY", "1,250 CNY (+250.00 CNY, +25.0 %)")
        );
        let line = changes_plain(std::slice::from_ref(&cost));
        assert!(
            line.contains(&format!("estimate.cost = {old} -> {new}")),
            "{line}"
        );

        let pool = change("pool", Some(Value::Text("a".into())), None);
        assert_eq!(sides(&pool), ("\"a\"".to_string(), String::new()));
        let reasons = change(
            "reasons",
            None,
            Some(Value::List(vec!["x".into(), "y".into()])),
        );
        assert_eq!(
            sides(&reasons),
            (String::new(), "[\"x\", \"y\"]".to_string())
        );
    }
}
