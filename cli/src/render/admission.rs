//! The admission preview for people: a table for the terminal and markdown for pull requests,
//! verdict counts first, then one line per job, then what each node group and tenant holds.
//! The admission changes between two revisions are `loam diff`'s (`loam_diff::admission`).

use loam_compiler::admission::{
    AdmissionPreview, AdmissionStatus, JobAdmission, PoolAdmission, VerdictCounts, preemptors_text,
};
use loam_ir::display::table_cell;
use std::fmt::Write as _;

/// `2 admitted · 1 borrows · 1 queues · 0 never admissible · 0 not planned`.
pub fn counts_line(counts: VerdictCounts) -> String {
    format!(
        "{} admitted · {} borrows · {} queues · {} never admissible · {} not planned",
        counts.admitted, counts.borrows, counts.queues, counts.never_admissible, counts.not_planned
    )
}

/// What follows the job's name on its line: where it runs, what it borrows and who may preempt
/// it, whom it queues behind, or why it never runs.
pub fn verdict_text(job: &JobAdmission) -> String {
    let mut text = match &job.status {
        AdmissionStatus::Admitted => job.flavors_text(),
        AdmissionStatus::Borrows {
            borrowed,
            preempted_by,
        } => {
            let borrowed: Vec<String> = borrowed.iter().map(|(d, n)| format!("{n} {d}")).collect();
            format!(
                "{}, borrows {}; may be preempted by {}",
                job.flavors_text(),
                borrowed.join(" and "),
                preemptors_text(preempted_by)
            )
        }
        AdmissionStatus::Queues { behind, reason } if behind.is_empty() => format!("({reason})"),
        AdmissionStatus::Queues { behind, reason } => {
            format!("behind {} ({reason})", behind.join(", "))
        }
        AdmissionStatus::NeverAdmissible { reason } => format!("never: {reason}"),
        AdmissionStatus::NotPlanned { reasons } => match reasons.first() {
            Some(first) => format!("infeasible: {first}"),
            None => "infeasible".to_string(),
        },
    };
    if let Some(w) = job.window {
        let _ = write!(
            text,
            " [runs {:02}:00 for {} h a day]",
            w.start_hour, w.hours_per_day
        );
    }
    text
}

/// The verdict's label in the table, padded.
fn label(job: &JobAdmission) -> &'static str {
    match job.status {
        AdmissionStatus::NotPlanned { .. } => "not planned",
        _ => job.status.keyword(),
    }
}

/// The preview as a table for the terminal.
pub fn table(preview: &AdmissionPreview) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Admission preview (every job at once, Kueue rules: docs/admission.md)"
    );
    let _ = writeln!(out, "  {}", counts_line(preview.counts()));
    for pool in preview.pools.values() {
        let _ = writeln!(out, "\npool {}", pool.pool);
        let width = pool.jobs.iter().map(|j| j.job.len()).max().unwrap_or(0);
        for job in &pool.jobs {
            let _ = writeln!(
                out,
                "  {:<11} {:<width$}  {}",
                label(job),
                job.job,
                verdict_text(job)
            );
        }
        usage_table(&mut out, pool);
    }
    // Names, tenants and reasons come from PR-writable specs and catalogues: no control
    // character of theirs reaches a terminal or a comment raw.
    loam_ir::display::visible_lines(&out).into_owned()
}

/// What each node group and tenant holds.
fn usage_table(out: &mut String, pool: &PoolAdmission) {
    let used: Vec<_> = pool
        .node_groups
        .iter()
        .filter(|(_, u)| u.used > 0)
        .collect();
    if !used.is_empty() {
        let _ = writeln!(out, "  node groups (used / devices, free, borrowed):");
        for (name, u) in used {
            let _ = writeln!(
                out,
                "    {name}  {} {} / {}, {} free, {} borrowed",
                u.device, u.used, u.devices, u.free, u.borrowed
            );
        }
    }
    let mut lines = Vec::new();
    for (tenant, devices) in &pool.tenants {
        for (device, u) in devices {
            if u.guaranteed_used + u.borrowed == 0 {
                continue;
            }
            lines.push(format!(
                "    {tenant}  {device} {} of {} guaranteed, {} of {} elastic borrowed{}",
                u.guaranteed_used,
                u.guaranteed,
                u.borrowed,
                u.elastic,
                if u.derived {
                    " (no quota in the catalogue: the emitted queue's)"
                } else {
                    ""
                }
            ));
        }
    }
    if !lines.is_empty() {
        let _ = writeln!(out, "  tenant quotas:");
        for line in lines {
            let _ = writeln!(out, "{line}");
        }
    }
}

/// The preview as markdown for a pull-request comment.
pub fn markdown(preview: &AdmissionPreview) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## Admission preview\n");
    let _ = writeln!(out, "{}\n", counts_line(preview.counts()));
    for pool in preview.pools.values() {
        let _ = writeln!(out, "### Pool `{}`\n", pool.pool);
        let _ = writeln!(out, "| verdict | job | tenant | priority | detail |");
        let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
        for job in &pool.jobs {
            let _ = writeln!(
                out,
                "| {} | `{}` | {} | {} | {} |",
                label(job),
                job.job,
                job.tenant,
                job.priority,
                table_cell(&verdict_text(job))
            );
        }
        let _ = writeln!(out);
        let used: Vec<_> = pool
            .node_groups
            .iter()
            .filter(|(_, u)| u.used > 0)
            .collect();
        if !used.is_empty() {
            let _ = writeln!(out, "| node group | device | used | free | borrowed |");
            let _ = writeln!(out, "| --- | --- | --- | --- | --- |");
            for (name, u) in used {
                let _ = writeln!(
                    out,
                    "| `{name}` | {} | {} / {} | {} | {} |",
                    u.device, u.used, u.devices, u.free, u.borrowed
                );
            }
            let _ = writeln!(out);
        }
    }
    // Names, tenants and reasons come from PR-writable specs and catalogues: no control
    // character of theirs reaches a terminal or a comment raw.
    loam_ir::display::visible_lines(&out).into_owned()
}
