//! The plan as a person reads it first: where, split how, how long, how much, why, and what
//! else was considered.

use loam_ir::display::{
    group_layout_lines, hours_or_days, money, percent, plan_layout_line, plus_minus, thousands,
};
use loam_ir::plan::{MemoryIr, Plan, PlanDocument, StageIr};
use loam_ir::types::Hetero;
use std::fmt::Write;

/// Where the plan runs: `512 × H100_SXM on 64 nodes at shanghai (sh-h100-a), pool xirang`.
pub fn where_line(plan: &Plan) -> String {
    let groups: Vec<String> = plan
        .groups
        .iter()
        .map(|g| {
            let slice = g
                .slice
                .as_ref()
                .map_or(String::new(), |s| format!(" (slice {s})"));
            format!(
                "{} × {}{slice} on {} nodes at {} ({})",
                g.devices, g.device, g.nodes, g.site, g.node_group
            )
        })
        .collect();
    format!("{}, pool {}", groups.join(" + "), plan.pool)
}

/// The time to train as every output shows it, with the step and the throughput:
/// `44.3 days · step 15.96 s · 525,750 tokens/s`; an interruptible job's is the wall time in its
/// daily window, with the hours of training it holds.
pub fn time_text(plan: &Plan) -> Option<String> {
    let e = plan.estimate.as_ref()?;
    let wall = plan.wall_time_h().unwrap_or(e.train_time_h);
    let mut time = hours_or_days(wall);
    if let Some(w) = &plan.schedule {
        let _ = write!(
            time,
            ", running {} h a day ({} of training)",
            w.hours_per_day,
            hours_or_days(e.train_time_h)
        );
    }
    let _ = write!(
        time,
        " · step {:.2} s · {} tokens/s",
        e.step_time_s,
        thousands(e.tokens_per_s)
    );
    if let Some(uncertain) = uncertainty_text(plan) {
        let _ = write!(time, " · {uncertain}");
    }
    Some(time)
}

/// The efficiency lines: one for a plan on one device type; for a plan over two types one per
/// type (the blended figure hides the slower one), then the whole job's.
pub fn efficiency_lines(plan: &Plan) -> Vec<String> {
    let Some(e) = &plan.estimate else {
        return Vec::new();
    };
    let per_group: Vec<String> = plan
        .groups
        .iter()
        .filter_map(|g| {
            Some(format!(
                "{}: MFU {} · {:.0} model TFLOP/s per device · {:.1} GiB memory per device",
                g.device,
                percent(g.mfu?),
                g.model_tflops_per_device?,
                g.memory_per_device_gib?
            ))
        })
        .collect();
    if per_group.len() < 2 {
        return vec![format!(
            "MFU {} · {:.0} model TFLOP/s per device · {:.1} GiB memory per device",
            percent(e.mfu),
            e.model_tflops_per_device,
            e.memory_per_device_gib
        )];
    }
    let mut lines = per_group;
    lines.push(format!(
        "whole job: MFU {} of both types' peaks · {:.0} model TFLOP/s per device on average",
        percent(e.mfu),
        e.model_tflops_per_device
    ));
    lines
}

/// An interruptible job's daily window: `interruptible: run 21:00–15:00 daily (18 h at 0.63
/// CNY/kWh), saves 748 CNY of power, trains in 58.9 days`.
pub fn schedule_line(plan: &Plan) -> Option<String> {
    let w = plan.schedule.as_ref()?;
    let currency = plan
        .estimate
        .as_ref()
        .map_or("", |e| e.cost.currency.as_str());
    Some(format!(
        "interruptible: run {:02}:00–{:02}:00 daily ({} h at {:.2} {currency}/kWh), saves {} of power, trains in {}",
        w.start_hour,
        (w.start_hour + w.hours_per_day) % 24,
        w.hours_per_day,
        w.power_price_per_kwh,
        money(w.saving, currency),
        hours_or_days(plan.wall_time_h().unwrap_or(w.train_time_h))
    ))
}

/// What failures cost the run, in one line: goodput, expected interruptions, restart and lost
/// work per interruption, checkpoint stalls, and the restart budget the manifests allow.
pub fn failures_line(plan: &Plan) -> Option<String> {
    let g = plan.estimate.as_ref()?.goodput.as_ref()?;
    Some(format!(
        "goodput {} · {} interruptions expected · {:.0} min restart + {:.0} min redone each · {} writing checkpoints · restart budget {}",
        percent(g.fraction),
        thousands(g.interruptions_expected),
        g.restart_min,
        g.lost_work_min,
        hours_or_days(g.checkpoint_stall_h),
        g.restart_budget
    ))
}

/// How uncertain the predicted throughput is because of the device figures:
/// `±30 % (device figures estimated: Ascend910B)`, each device's own figure added when the
/// estimated devices of a plan over two groups differ. `None` when every device is measured, and
/// for plans written before format 1.5, which do not say.
pub fn uncertainty_text(plan: &Plan) -> Option<String> {
    let largest = plan
        .estimate
        .as_ref()?
        .throughput_uncertainty
        .filter(|u| *u > 0.0)?;
    // A plan on one group states it once, in the estimate; a plan over two groups per group.
    let mut estimated: Vec<(&str, f64)> = Vec::new();
    for g in &plan.groups {
        let u = g.throughput_uncertainty.unwrap_or(largest);
        if u > 0.0 && !estimated.iter().any(|(d, _)| *d == g.device) {
            estimated.push((g.device.as_str(), u));
        }
    }
    let differ = estimated.iter().any(|(_, u)| *u != largest);
    let names: Vec<String> = estimated
        .iter()
        .map(|(d, u)| {
            if differ {
                format!("{d} {}", plus_minus(*u))
            } else {
                (*d).to_string()
            }
        })
        .collect();
    let mut text = plus_minus(largest);
    // A group at a calibrated site takes its band from its runs (`plan/uncertainty.rs` notes
    // `calibrated on N runs of DEVICE at SITE`), not from estimated device figures.
    let calibrated = |device: &str| {
        plan.notes
            .iter()
            .any(|n| n.starts_with("calibrated on ") && n.contains(&format!(" of {device} at ")))
    };
    let (from_runs, estimated): (Vec<_>, Vec<_>) = names
        .into_iter()
        .zip(&estimated)
        .partition(|(_, (d, _))| calibrated(d));
    let list = |v: Vec<(String, &(&str, f64))>| {
        v.into_iter().map(|(n, _)| n).collect::<Vec<_>>().join(", ")
    };
    if !estimated.is_empty() {
        let _ = write!(text, " (device figures estimated: {})", list(estimated));
    }
    if !from_runs.is_empty() {
        let _ = write!(text, " (from measured runs: {})", list(from_runs));
    }
    Some(text)
}

/// Stages per device group of a heterogeneous plan: `6 on H800_SXM (TP2): blocks [0, 48)`,
/// with the ops outside the blocks and the precision of the sensitive ones.
fn group_stages_lines(plan: &Plan) -> Vec<String> {
    plan.groups
        .iter()
        .enumerate()
        .filter_map(|(g, group)| {
            let mine: Vec<_> = plan.stages.iter().filter(|s| s.group == g as u64).collect();
            let first = mine.first()?;
            let last = mine.last()?;
            let mut text = format!(
                "{} on {}{}: blocks [{}, {})",
                mine.len(),
                group.device,
                group.tensor.map_or(String::new(), |t| format!(" (TP{t})")),
                first.layers[0],
                last.layers[1]
            );
            let mut extra: Vec<String> = Vec::new();
            for stage in &mine {
                for op in stage.ops.iter().filter(|o| !o.starts_with("block")) {
                    let shown = stage
                        .sensitive_ops
                        .iter()
                        .find(|s| s.split('@').next() == Some(op.as_str()))
                        .cloned()
                        .unwrap_or_else(|| op.clone());
                    extra.push(shown);
                }
            }
            if !extra.is_empty() {
                let _ = write!(text, " + {}", extra.join(" "));
            }
            Some(text)
        })
        .collect()
}

/// Stages in short: `4 stages × 20 blocks` or the ranges when unequal.
/// The split in a few words: `16 stages × 8 blocks`, or for an uneven split how many stages hold
/// each count (`16 stages: 14 × 8 blocks, 2 × 7 blocks`); interleaved plans count chunks and
/// name their ranks. The exact ranges are in the Plan JSON (`stages[].layers`).
fn stages_line(stages: &[StageIr]) -> String {
    let n = stages.len();
    let ranks = stages.iter().filter_map(|s| s.rank).max().map(|r| r + 1);
    let what = match ranks {
        Some(r) => format!("{n} chunks on {r} ranks"),
        None => format!("{n} stage{}", if n == 1 { "" } else { "s" }),
    };
    let mut counts: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
    for s in stages {
        *counts.entry(s.layers[1] - s.layers[0]).or_default() += 1;
    }
    let blocks = |b: u64| if b == 1 { "block" } else { "blocks" };
    match counts.len() {
        0 => what,
        1 => {
            let b = counts.keys().next().copied().unwrap_or(0);
            format!("{what} × {b} {}", blocks(b))
        }
        _ => {
            let parts: Vec<String> = counts
                .iter()
                .rev()
                .map(|(b, k)| format!("{k} × {b} {}", blocks(*b)))
                .collect();
            format!("{what}: {}", parts.join(", "))
        }
    }
}

/// The memory of the device that needs the most, by part, leaving out parts under 0.05 GiB.
fn memory_line(total_gib: f64, m: &MemoryIr) -> String {
    let parts = [
        ("weights", m.weights),
        ("gradients", m.gradients),
        ("optimizer", m.optimizer),
        ("activations", m.activations),
        ("pipeline stash", m.pipeline_stash),
        ("buffers", m.comm_buffers),
        ("logits", m.logits),
    ];
    let shown: Vec<String> = parts
        .iter()
        .filter(|(_, gib)| *gib >= 0.05)
        .map(|(name, gib)| format!("{name} {gib:.1}"))
        .collect();
    format!("{total_gib:.1} GiB per device: {} (GiB)", shown.join(" · "))
}

fn row(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "  {key:<12} {value}");
}

/// One plan as a block of aligned lines.
pub fn render_plan(plan: &Plan) -> String {
    let mut out = String::new();
    let verdict = if plan.feasible {
        "feasible"
    } else {
        "INFEASIBLE"
    };
    let _ = writeln!(out, "{} ({}): {verdict}", plan.job, plan.file);
    if !plan.feasible {
        for reason in &plan.reasons {
            row(&mut out, "why not", reason);
        }
    }
    if plan.layout.is_some() {
        row(&mut out, "where", &where_line(plan));
        if plan.hetero == Some(Hetero::Data) {
            for (i, line) in group_layout_lines(plan).iter().enumerate() {
                row(&mut out, if i == 0 { "layout" } else { "" }, line);
            }
            for (i, g) in plan.groups.iter().enumerate() {
                let line = format!("{}: {} per replica", g.device, stages_line(&g.stages));
                row(&mut out, if i == 0 { "stages" } else { "" }, &line);
            }
        } else if plan.groups.len() > 1 {
            row(&mut out, "layout", &plan_layout_line(plan));
            for (i, line) in group_stages_lines(plan).iter().enumerate() {
                row(&mut out, if i == 0 { "stages" } else { "" }, line);
            }
        } else {
            row(&mut out, "layout", &plan_layout_line(plan));
            row(&mut out, "stages", &stages_line(&plan.stages));
        }
    }
    if let Some(e) = &plan.estimate {
        if let Some(time) = time_text(plan) {
            row(&mut out, "time", &time);
        }
        row(
            &mut out,
            "cost",
            &format!(
                "{} · {} MWh · {} t CO2",
                money(e.cost.amount, &e.cost.currency),
                thousands(e.energy_kwh / 1000.0),
                thousands(e.carbon_kg / 1000.0)
            ),
        );
        for (i, line) in efficiency_lines(plan).iter().enumerate() {
            row(&mut out, if i == 0 { "efficiency" } else { "" }, line);
        }
        if let Some(m) = &e.memory_gib {
            let mut line = memory_line(e.memory_per_device_gib, m);
            if plan.groups.len() > 1
                && let Some(fullest) = plan
                    .groups
                    .iter()
                    .find(|g| g.memory_per_device_gib == Some(e.memory_per_device_gib))
            {
                line = format!("{line} on the fullest device ({})", fullest.device);
            }
            row(&mut out, "memory", &line);
        }
        let b = &e.breakdown_s;
        row(
            &mut out,
            "step",
            &format!(
                "compute {:.2} s · tensor comm {:.2} s · bubble {:.2} s · data comm {:.2} s · other {:.2} s",
                b.compute, b.tensor_comm, b.pipeline_bubble, b.data_comm, b.other
            ),
        );
    }
    if let Some(d) = &plan.data {
        let text = if d.transfer_gb > 0.0 {
            format!(
                "{}: {} GB over the WAN in {:.1} h",
                d.strategy,
                thousands(d.transfer_gb),
                d.transfer_h
            )
        } else {
            format!("{}: nothing to transfer", d.strategy)
        };
        row(&mut out, "data", &text);
        let currency = plan
            .estimate
            .as_ref()
            .map_or("", |e| e.cost.currency.as_str());
        for o in d.options.iter().filter(|o| !o.chosen) {
            let moved = if o.transfer_gb > 0.0 {
                format!(
                    "{} GB in {:.1} h, {} egress",
                    thousands(o.transfer_gb),
                    o.transfer_h,
                    money(o.egress, currency)
                )
            } else if o.egress > 0.0 {
                format!("{} egress", money(o.egress, currency))
            } else {
                "nothing moved".to_string()
            };
            row(
                &mut out,
                "",
                &format!(
                    "vs {} at {}: {moved}; {} · {}",
                    o.strategy,
                    o.site,
                    hours_or_days(o.time_h),
                    money(o.cost, currency)
                ),
            );
        }
    }
    if let Some(line) = schedule_line(plan) {
        row(&mut out, "schedule", &line);
    }
    if let Some(c) = &plan.checkpoint {
        row(
            &mut out,
            "checkpoint",
            &format!(
                "every {:.0} min (write {:.0} s) to {}",
                c.interval_min, c.write_s, c.path
            ),
        );
    }
    if let Some(line) = failures_line(plan) {
        row(&mut out, "failures", &line);
    }
    if !plan.why.is_empty() {
        row(&mut out, "why", &plan.why);
    }
    for note in &plan.notes {
        row(&mut out, "note", note);
    }
    if !plan.alternatives.is_empty() {
        let _ = writeln!(out, "  alternatives");
        for a in &plan.alternatives {
            let _ = writeln!(out, "    - [{}] {}: {}", a.shape, a.summary, a.why_not);
        }
    }
    out
}

/// Every plan of the document, separated by blank lines, then a summary line.
pub fn render(doc: &PlanDocument) -> String {
    let blocks: Vec<String> = doc.plans.iter().map(render_plan).collect();
    let infeasible = doc.plans.iter().filter(|p| !p.feasible).count();
    let mut out = blocks.join("\n");
    let n = doc.plans.len();
    let _ = writeln!(
        out,
        "\nplanned {n} job{}: {} feasible, {infeasible} infeasible (catalogue {})",
        if n == 1 { "" } else { "s" },
        n - infeasible,
        doc.catalogue_digest
            .get(..19)
            .unwrap_or(&doc.catalogue_digest)
    );
    // Names, tenants and reasons come from PR-writable specs and catalogues: no control
    // character of theirs reaches a terminal or a comment raw.
    loam_ir::display::visible_lines(&out).into_owned()
}
