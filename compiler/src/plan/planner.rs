//! The planner: a checked job and the catalogue in, the Plan IR out.
//!
//! For each node group that may run the job (an allowed device type at an allowed site, with
//! quota for the tenant) it builds the cluster figures, runs the layout [`search`] with the
//! spec's pins and an objective from `goal.optimize` (price per device-hour plus power at the
//! site's price, carbon at the site's intensity), and ranks every costed layout of every group
//! together. Deadline and budget are hard constraints: a layout that breaks one scores above
//! every layout that breaks none, by how far it misses, so when nothing meets them the best
//! entry is the closest miss and its numbers become the reasons. Ties break on the node group's
//! file order, then the layout's field order.
//!
//! When one node group cannot give the job what it needs — no single-type layout meets the
//! limits, the best one takes more than half of its group, or some devices can only run the
//! precision-sensitive ops — heterogeneous pipelines over pairs of groups ([`super::pair`])
//! are ranked with the single-type layouts, and the best of either kind wins.

use super::explain;
use super::objective::{Limits, PENALTY};
use super::pair::data::{fill_pair_data_plan, pair_data_plans};
use super::pair::{PairInput, fill_pair_pipeline, pair_pipelines};
use super::placement::{self, Placement};
use super::plausibility::extrapolations;
use super::request::{PlanRequest, Unplannable};
use super::search::budget::{SEARCH_CAP, WALK_CAP, WalkBudget, WorkBudget, walk_in_rounds};
use super::search::{RejectedRegion, Scores, SearchResult, SearchSpec, search_within, setup_on};
use super::single::{self, Ranked};
use super::slices::{apply_slice, fit_slice};
use super::stages::job_graph;
use super::uncertainty;
use crate::catalogue::{Catalogue, Pool};
use crate::check::Job;
use crate::check::{expert_dispatch_on, model_dims};
use crate::workload::ExpertDispatch;
use crate::workload::Pins;
use crate::workload::param_count;
use loam_ir::diagnostics::codes;
use loam_ir::findings::{NoLayoutCause, PlanDiagnosticIr, SpecField, goodput_finding};
use loam_ir::plan::{GoalIr, Plan, WorkloadIr};

/// Layouts kept per node group (the best and the next few, for alternatives).
const KEEP_PER_GROUP: usize = 4;

/// What the workload section says of the expert dispatch its time assumes: `dispatch` for an
/// MoE model unless it is the all-to-all every other plan runs.
fn workload_dispatch(job: &Job, dispatch: ExpertDispatch) -> Option<ExpertDispatch> {
    (job.model.arch == loam_ir::types::Arch::Moe && !dispatch.is_all_to_all()).then_some(dispatch)
}

/// The workload section of the IR, with the expert dispatch its time assumes (`dispatch`).
fn workload_ir(job: &Job, dispatch: ExpertDispatch) -> WorkloadIr {
    let m = &job.model;
    WorkloadIr {
        params: param_count(&model_dims(m)).total,
        layers: m.layers,
        hidden: m.hidden,
        heads: m.heads,
        seq_len: m.seq_len,
        global_batch: job.train.global_batch,
        tokens: job.train.tokens,
        precision: job.train.precision.value,
        expert_dispatch: workload_dispatch(job, dispatch),
    }
}

/// An empty (infeasible) plan of `job`.
fn skeleton(job: &Job, file: &str) -> Plan {
    Plan {
        job: job.name.value.clone(),
        file: file.to_string(),
        feasible: false,
        reasons: Vec::new(),
        tenant: job.tenant.value.clone(),
        priority: job.priority,
        interruptible: job.resources.interruptible,
        pool: job.resources.pool.value.clone(),
        workload: workload_ir(job, expert_dispatch_on(job, None)),
        hetero: None,
        layout: None,
        groups: Vec::new(),
        stages: Vec::new(),
        estimate: None,
        data: None,
        checkpoint: None,
        schedule: None,
        goal: Some(GoalIr {
            optimize: job.goal.optimize,
            deadline_h: job.goal.deadline.as_ref().map(|d| d.value / 3600.0),
            budget: job.goal.budget.as_ref().map(|b| b.value.0),
        }),
        alternatives: Vec::new(),
        why: String::new(),
        notes: Vec::new(),
        diagnostics: Vec::new(),
    }
}

/// Plans one checked job against `catalogue`. `file` is the spec's display path. The plan is
/// infeasible (with reasons) when no layout on any allowed node group meets every constraint;
/// what the user should read as a diagnostic is in `plan.diagnostics` (see [`loam_ir::findings`]).
pub fn plan_job(job: &Job, file: &str, catalogue: &Catalogue) -> Plan {
    plan_job_on(job, file, catalogue, 1)
}

/// [`plan_job`], spreading the job's independent searches (one per node group, one per group
/// and batch share) over up to `threads` threads; the plan is the same on any number.
pub fn plan_job_on(job: &Job, file: &str, catalogue: &Catalogue, threads: usize) -> Plan {
    plan_job_walking(job, file, catalogue, threads, &WalkBudget::new(WALK_CAP))
}

/// [`plan_job_on`] with every layout walk of the job (its single-type searches and its data
/// split's) under `walks`, which says afterwards what they spent.
pub(crate) fn plan_job_walking(
    job: &Job,
    file: &str,
    catalogue: &Catalogue,
    threads: usize,
    walks: &WalkBudget,
) -> Plan {
    let mut plan = skeleton(job, file);
    let request = match PlanRequest::new(job, catalogue) {
        Ok(request) => request,
        Err(Unplannable { headline, skipped }) => {
            plan.diagnostics.push(no_node_group(
                job,
                std::slice::from_ref(&headline),
                &skipped,
            ));
            plan.reasons.push(headline);
            plan.reasons.extend(skipped);
            return plan;
        }
    };
    let PlanRequest {
        pool,
        placements: options,
        objectives,
        model,
        setup: base_setup,
        pins,
        limits,
        currency,
        ..
    } = &request;
    let (pool, pins) = (*pool, *pins);
    // With the pool's stack defaults, as the request's setup costs it.
    plan.workload.expert_dispatch = workload_dispatch(job, base_setup.expert_dispatch);
    let mut skipped = request.skipped.clone();
    let mut ranked: Vec<Ranked<'_>> = Vec::new();
    let mut single_scores: Vec<Option<f64>> = vec![None; options.len()];
    // The single-type search of each node group, independent of the others.
    let indices: Vec<usize> = (0..options.len()).collect();
    // Every layout walk of the job (these, and the data split's) shares one cap.
    let single_search =
        |i: usize, regions_throughout: bool, allowance: u64| -> Option<SearchResult> {
            let (Some(option), Some(objective)) = (options.get(i), objectives.get(i)) else {
                return None;
            };
            if !option.hosts_job_precision {
                return None;
            }
            let setup = setup_on(base_setup, option.device);
            let spec = SearchSpec {
                model,
                setup: &setup,
                cluster: &option.cluster,
                pins,
                max_devices: option.available,
                keep: KEEP_PER_GROUP,
            };
            // A group's objective scores a layout's totals (its time and devices with their
            // failures) against the goal and the limits, and none falls as the time grows.
            Some(search_within(
                &spec,
                objective,
                Scores::ByTimeAndDevices,
                regions_throughout,
                allowance,
            ))
        };
    let walked = |result: Option<SearchResult>| {
        let stats = result.as_ref().map(|r| r.stats);
        (result, stats)
    };
    // With the rejected regions only until a first layout is kept: a job with no plan reports
    // them (below), and the memory of every layout that cannot rank was most of a large job's
    // single-type searches. A search that keeps nothing has them all.
    let results = walk_in_rounds(&indices, threads, walks, |&i, allowance| {
        walked(single_search(i, false, allowance))
    });
    // By group: the regions of a search that kept nothing; `None` for one that kept some, or
    // a group that was not searched (asked again below, it returns at once with none).
    let mut complete_regions: Vec<Option<Vec<RejectedRegion>>> = vec![None; options.len()];
    for (i, (option, result)) in options.iter().zip(results).enumerate() {
        let Some(result) = result.flatten() else {
            continue;
        };
        if result.ranked.is_empty()
            && let Some(slot) = complete_regions.get_mut(i)
        {
            *slot = Some(result.rejected);
        }
        if let (Some(slot), Some(first)) = (single_scores.get_mut(i), result.scores.first()) {
            *slot = Some(*first);
        }
        for (score, candidate) in result.scores.into_iter().zip(result.ranked) {
            // Only layouts whose group runs as equal nodes of this node group (the rule emit
            // checks, `NodeShape`).
            if !option.fits_nodes(candidate.devices, candidate.layout.tensor.into()) {
                continue;
            }
            ranked.push(Ranked {
                score,
                option: i,
                candidate,
                placement: option,
            });
        }
    }
    ranked.sort_by(|a, b| {
        a.score
            .total_cmp(&b.score)
            .then(a.option.cmp(&b.option))
            .then(a.candidate.layout.cmp(&b.candidate.layout))
    });

    let base = pool.currency.value.as_str();
    let convert = |amount: f64| pool.convert(amount, base, currency).unwrap_or(amount);
    let graph = job_graph(job);
    let budget = WorkBudget::new(SEARCH_CAP);
    let input = PairInput {
        job,
        pool,
        options,
        objectives,
        single_scores: &single_scores,
        model,
        setup: base_setup,
        graph: &graph,
        checkpoint: &request.checkpoint,
        pins,
        convert: &convert,
        incumbent: ranked.first().map_or(f64::INFINITY, |r| r.score),
        budget: &budget,
        walks,
        threads,
    };
    let (mixed, splits, mut ruled_out) = if needs_pairs(job, &ranked, options, pins) {
        let (mixed, mut ruled_out) = pair_pipelines(&input);
        let splits = pair_data_plans(&input, &mut ruled_out);
        (mixed, splits, ruled_out)
    } else {
        (Vec::new(), Vec::new(), Vec::new())
    };

    let entries = explain::entries(&ranked, &mixed, &splits, objectives);
    let Some(best) = entries.first() else {
        // A group whose layouts were all kept out by its node shape searches again, recording
        // what it rejects throughout.
        let regions =
            walk_in_rounds(
                &indices,
                threads,
                walks,
                |&i, allowance| match complete_regions.get(i).cloned().flatten() {
                    Some(regions) => (regions, None),
                    None => {
                        let (result, stats) = walked(single_search(i, true, allowance));
                        (result.map(|r| r.rejected).unwrap_or_default(), stats)
                    }
                },
            );
        let rejected: Vec<(usize, RejectedRegion)> = regions
            .into_iter()
            .map(Option::unwrap_or_default)
            .enumerate()
            .flat_map(|(i, regions)| regions.into_iter().map(move |r| (i, r)))
            .collect();
        plan.reasons = single::rejection_reasons(&rejected, options);
        plan.reasons.append(&mut skipped);
        plan.reasons.append(&mut ruled_out);
        let cause = if rejected
            .iter()
            .any(|(_, r)| matches!(r.reason, super::search::Rejection::OutOfMemory { .. }))
        {
            NoLayoutCause::OutOfMemory
        } else if rejected.is_empty() {
            NoLayoutCause::NoFiniteEstimate
        } else {
            NoLayoutCause::Shape
        };
        plan.diagnostics
            .push(no_layout(job, pins, cause, &plan.reasons));
        // The search may have stopped before the first plan that fits (L3010, an error).
        plan.diagnostics
            .extend(budget.finding(&job.name.value, false, walks));
        return plan;
    };
    if best.score >= PENALTY {
        plan.reasons = explain::miss_reasons(job, best, limits);
        plan.diagnostics = missed_limits(
            limits,
            best.outcome.time_s,
            best.outcome.cost,
            &plan.reasons,
        );
    } else {
        plan.feasible = true;
    }
    // What the chosen devices mean for the tenant's quota and the queue: the plan's notes, and
    // the same as warnings.
    let found = match best.kind {
        explain::Kind::Single(r) => group_notes(job, &[(r.placement, r.candidate.devices)]),
        explain::Kind::PairPipeline(m) => pair_notes(job, m.placements, m.plan.shape.devices()),
        explain::Kind::PairData(d) => pair_notes(job, d.placements, d.devices()),
    };
    plan.notes = found.iter().map(|f| f.message.clone()).collect();
    match best.kind {
        explain::Kind::Single(r) => {
            let totals = single::Totals {
                cost: best.outcome.cost,
                currency: currency.clone(),
                energy_kwh: best.outcome.energy_kwh,
                carbon_kg: best.outcome.carbon_kg,
            };
            let run = single::Run {
                model: &request.model,
                setup: &request.setup,
                checkpoint: &request.checkpoint,
            };
            single::fill(&mut plan, job, pool, run, r, totals);
            let c = &r.candidate;
            let setup = setup_on(&request.setup, r.placement.device);
            if let Some(note) = launch_note(&request.model, &setup, &c.layout, r.placement) {
                plan.notes.push(note);
            }
            let step_s = c.estimate.step_time_s;
            if let Some(note) =
                dispatch_note(&request.model, &setup, &c.layout, r.placement, step_s)
            {
                plan.notes.push(note);
            }
            if let Some(note) = overlap_note(&request.model, &setup, &c.layout, r.placement, step_s)
            {
                plan.notes.push(note);
            }
            if plan.feasible && c.devices == 1 {
                let wall_s = objectives
                    .get(r.option)
                    .map_or(c.train_time_s, |o| o.economics.wall_time_s(c));
                let lead_s = best.outcome.time_s - wall_s;
                let memory = c.estimate.memory_per_device_bytes;
                let slice = fit_slice(r.placement.device, memory, c.train_time_s, lead_s, limits);
                if let Some(slice) = slice {
                    apply_slice(&mut plan, r.placement.device, slice);
                }
            }
        }
        explain::Kind::PairPipeline(m) => {
            fill_pair_pipeline(&mut plan, job, m, &input, currency.clone());
        }
        explain::Kind::PairData(d) => {
            fill_pair_data_plan(&mut plan, job, d, &input, currency.clone());
        }
    }
    // A plan lost to failures, or with a restart budget no manifest can carry, is no plan (L3009).
    if let Some(finding) = plan
        .estimate
        .as_ref()
        .and_then(|e| e.goodput.as_ref())
        .and_then(|g| {
            goodput_finding(
                &job.name.value,
                g.fraction,
                g.restart_budget,
                g.interruptions_expected,
            )
        })
    {
        plan.feasible = false;
        plan.reasons.push(finding.message.clone());
        plan.diagnostics.push(finding);
    }
    if job.resources.interruptible && plan.feasible {
        plan.schedule = cheap_hours(job, pool, best, limits, &convert);
    }
    if plan.feasible {
        // An interruptible job trains only in its window: the deadline is met (or not) by the
        // window's wall time, which is the time every output shows.
        let transfer_s = plan.data.as_ref().map_or(0.0, |d| d.transfer_h * 3600.0);
        let time_s = plan.schedule.as_ref().map_or(best.outcome.time_s, |w| {
            w.train_time_h * 3600.0 + transfer_s
        });
        plan.why = explain::why(job, &entries, limits, options.len(), time_s);
    }
    plan.alternatives = explain::alternatives(&entries, limits, currency);
    if let Some(data) = plan.data.as_mut() {
        data.options = explain::data_options(job, pool, &entries, limits, objectives);
    }
    plan.diagnostics.extend(found);
    // The plan is the best of what was costed when the search stopped at its cap (L3010).
    if let Some(capped) = budget.finding(&job.name.value, true, walks) {
        plan.notes.push(capped.message.clone());
        plan.diagnostics.push(capped);
    }
    // How far to trust the time: the device figures' own uncertainty, stated on every plan.
    uncertainty::state(&mut plan, catalogue);
    // A prediction above the published runs (the device's own, else its vendor's or the
    // file's best MFU) is shown, not trusted silently.
    if let Some(estimate) = &plan.estimate {
        let guarded = extrapolations(
            catalogue,
            base_setup.precision,
            model,
            &graph,
            best.kind,
            estimate,
        );
        plan.notes.extend(guarded.iter().map(|f| f.message.clone()));
        plan.diagnostics.extend(guarded);
    }
    plan
}

/// The plan's note when its blocks' forward passes wait for their kernel launches
/// (`cost::launch_bound`): what they wait for, and what would keep the devices busier.
fn launch_note(
    model: &crate::workload::ModelDims,
    setup: &crate::workload::TrainSetup,
    layout: &crate::workload::Layout,
    placement: &Placement<'_>,
) -> Option<String> {
    let kernels = crate::cost::launch_bound(model, setup, layout, &placement.cluster)?;
    let launch_us = crate::cost::KERNEL_LAUNCH_S * 1e6;
    Some(format!(
        "each block's forward pass waits for its {kernels:.0} kernel launches ({:.0} µs at {launch_us:.0} µs each), longer than the device's work at {} sequence{} per micro-batch: a larger micro-batch, fewer data-parallel ranks or a stack that captures blocks as CUDA graphs would keep the devices busier (docs/cost-model.md, \"Kernel launches\")",
        kernels * launch_us,
        layout.micro_batch,
        if layout.micro_batch == 1 { "" } else { "s" },
    ))
}

/// Least share of a step a stack change (a dispatch, an overlap) must save before the plan says
/// so: a smaller gain is within the model's stated uncertainty and not worth the change.
const STACK_NOTE_SHARE: f64 = 0.05;

/// The step of `layout` under `other` (a setup differing from the plan's in one stack setting),
/// from the same step function, when it is at least [`STACK_NOTE_SHARE`] shorter than `step`,
/// the plan's own: with the share it saves, in percent.
fn shorter_step(
    model: &crate::workload::ModelDims,
    other: &crate::workload::TrainSetup,
    layout: &crate::workload::Layout,
    placement: &Placement<'_>,
    step: f64,
) -> Option<(f64, f64)> {
    let shorter = crate::cost::estimate(model, other, layout, &placement.cluster)
        .ok()?
        .step_time_s;
    (shorter < step * (1.0 - STACK_NOTE_SHARE)).then(|| (shorter, 100.0 * (1.0 - shorter / step)))
}

/// The plan's note when its MoE layers' all-to-all crosses the NICs and a deduplicated dispatch
/// (DeepEP, HybridEP) would shorten its step (`all`, the plan's own) by at least
/// [`STACK_NOTE_SHARE`] ([`shorter_step`]).
fn dispatch_note(
    model: &crate::workload::ModelDims,
    setup: &crate::workload::TrainSetup,
    layout: &crate::workload::Layout,
    placement: &Placement<'_>,
    all: f64,
) -> Option<String> {
    if layout.expert <= 1 || setup.expert_dispatch != ExpertDispatch::AllToAll {
        return None;
    }
    let deduplicated = crate::workload::TrainSetup {
        expert_dispatch: ExpertDispatch::Deduplicated,
        ..setup.clone()
    };
    let (dedup, saved) = shorter_step(model, &deduplicated, layout, placement, all)?;
    Some(format!(
        "the experts' all-to-all crosses the NICs with one copy of a token per selected expert: a stack that sends each token once per node (DeepEP, HybridEP; `train {{ expert_dispatch = deduplicated }}`) would take the step from {all:.2} s to {dedup:.2} s ({saved:.0} % shorter; docs/cost-model.md, \"Expert dispatch\")"
    ))
}

/// The plan's note when its pipeline leaves its experts' all-to-alls between the blocks (one
/// chunk per rank, or full recomputation: Megatron-Core refuses its EP overlap there,
/// [`crate::workload::expert_overlap_runs`]) and hiding them under another micro-batch's
/// compute would shorten its step (`step`, the plan's own) by at least
/// [`STACK_NOTE_SHARE`] ([`shorter_step`] on the same layout, with DualPipe's pairing, which
/// hides them on any pipeline). Virtual stages hold more activations, so the note names them
/// without promising that the layout's memory allows them.
fn overlap_note(
    model: &crate::workload::ModelDims,
    setup: &crate::workload::TrainSetup,
    layout: &crate::workload::Layout,
    placement: &Placement<'_>,
    step: f64,
) -> Option<String> {
    let megatron = matches!(
        setup.states.framework,
        None | Some(crate::workload::Framework::MegatronCore)
    );
    if layout.expert <= 1 || layout.pipeline <= 1 || setup.expert_overlap_on(layout) || !megatron {
        return None;
    }
    let paired = crate::workload::TrainSetup {
        expert_overlap: crate::workload::ExpertOverlap::DualPipe,
        ..setup.clone()
    };
    let (hidden, saved) = shorter_step(model, &paired, layout, placement, step)?;
    Some(format!(
        "the experts' all-to-alls sit between the blocks: Megatron-Core runs them beside another micro-batch's compute only on an interleaved pipeline (`virtual_stages` of 2 or more, which hold more activations) without full recomputation, and hiding them would take the step from {step:.2} s to {hidden:.2} s ({saved:.0} % shorter; docs/cost-model.md, \"Mixture of experts\")"
    ))
}

/// L3002: no node group of the pool may run the job; `headline` says so, `skipped` says why
/// for each node group of an allowed type.
fn no_node_group(job: &Job, headline: &[String], skipped: &[String]) -> PlanDiagnosticIr {
    let mut message = format!("job `{}`: {}", job.name.value, headline.join("; "));
    if !skipped.is_empty() {
        message.push_str(&format!(": {}", brief(skipped)));
    }
    PlanDiagnosticIr::error(
        codes::plan::NO_NODE_GROUP,
        SpecField::Devices,
        message,
        "allow other device types or sites, or ask the pool's operators for a quota",
    )
}

/// L3001: every layout on every allowed node group was rejected.
fn no_layout(job: &Job, pins: Pins, cause: NoLayoutCause, reasons: &[String]) -> PlanDiagnosticIr {
    let pinned = pins != Pins::default();
    let field = if pinned {
        SpecField::Parallel
    } else {
        SpecField::Devices
    };
    let help = cause.help(pinned);
    PlanDiagnosticIr::error(
        codes::plan::NO_LAYOUT,
        field,
        format!(
            "no layout of job `{}` fits: {}",
            job.name.value,
            brief(reasons)
        ),
        help,
    )
}

/// L3003 and L3004: the closest plan misses the deadline, the budget or both; `reasons` holds
/// the deadline's sentence first, then the budget's, each only when missed.
fn missed_limits(
    limits: &Limits,
    time_s: f64,
    cost: f64,
    reasons: &[String],
) -> Vec<PlanDiagnosticIr> {
    let deadline = limits.deadline_s.is_some_and(|d| time_s > d);
    let budget = limits.budget.is_some_and(|b| cost > b);
    let mut sentences = reasons.iter();
    let mut found = Vec::new();
    if deadline && let Some(text) = sentences.next() {
        found.push(PlanDiagnosticIr::error(
            codes::plan::DEADLINE_MISSED,
            SpecField::Deadline,
            format!("the job {text}"),
            "allow more devices, other device types or sites, or move the deadline",
        ));
    }
    if budget && let Some(text) = sentences.next() {
        found.push(PlanDiagnosticIr::error(
            codes::plan::OVER_BUDGET,
            SpecField::Budget,
            format!("the job is {text}"),
            "allow cheaper devices or sites, optimise for cost, or raise the budget",
        ));
    }
    found
}

/// The first reasons, and how many more the plan lists.
fn brief(reasons: &[String]) -> String {
    const SHOWN: usize = 2;
    let mut text = reasons
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join("; ");
    if reasons.len() > SHOWN {
        text.push_str(&format!(
            "; and {} more in the plan's reasons",
            reasons.len() - SHOWN
        ));
    }
    text
}

/// Whether heterogeneous pipelines are worth searching: when no single-type layout meets the
/// limits, when the best takes more than half of its group and the group, not the job's
/// `max_devices`, is what limits it (more devices would help), or when some groups can only
/// run the sensitive ops. A spec that pins any layout field asked for a single-type shape.
fn needs_pairs(job: &Job, ranked: &[Ranked<'_>], options: &[Placement<'_>], pins: Pins) -> bool {
    // Pipelines over two groups run without context or expert parallelism, honour a pinned
    // sequence parallelism and tensor overlap, and pick every other field themselves; a spec that pins any of
    // those asked for a single-type shape.
    let one = |v: Option<u32>| v.is_none_or(|v| v == 1);
    let compatible = Pins {
        context: None,
        expert: None,
        sequence_parallel: None,
        tensor_overlap: None,
        ..pins
    } == Pins::default();
    if !(compatible && one(pins.context) && one(pins.expert)) {
        return false;
    }
    if options.iter().any(|o| !o.hosts_job_precision) {
        return true;
    }
    match ranked.first() {
        None => true,
        Some(best) => {
            let group_bound = job
                .resources
                .max_devices
                .as_ref()
                .is_none_or(|m| best.placement.available < m.value);
            best.score >= PENALTY
                || (group_bound && best.candidate.devices * 2 > best.placement.available)
        }
    }
}

/// The cheapest daily window of the first site's power tariff the interruptible job can run
/// in and still meet its deadline.
fn cheap_hours(
    job: &Job,
    pool: &Pool,
    best: &explain::Entry<'_, '_>,
    limits: &Limits,
    convert: &dyn Fn(f64) -> f64,
) -> Option<loam_ir::plan::ScheduleIr> {
    let site = best.first_site();
    let prices: Vec<f64> = site
        .power_price_per_kwh
        .iter()
        .map(|p| convert(*p))
        .collect();
    let (transfer_s, _) = placement::transfer(job, pool, site);
    let train_s = best.outcome.time_s - transfer_s;
    let mut window = super::schedule::cheapest_window(&super::schedule::Window {
        prices: &prices,
        energy_kwh: best.outcome.energy_kwh,
        train_h: train_s / 3600.0,
        lead_h: transfer_s / 3600.0,
        deadline_h: limits.deadline_s.map(|d| d / 3600.0),
    })?;
    window.time_zone = site.time_zone.clone();
    Some(window)
}

/// Non-blocking remarks on a chosen plan over two groups (see [`group_notes`]).
fn pair_notes(
    job: &Job,
    placements: [&Placement<'_>; 2],
    devices: [u64; 2],
) -> Vec<PlanDiagnosticIr> {
    let [a, b] = placements;
    let [da, db] = devices;
    group_notes(job, &[(a, da), (b, db)])
}

/// Who may preempt a job's borrowed devices: the tenants that own them, and jobs of a higher
/// priority (`critical` is never preempted by priority).
fn preempted_by(priority: loam_ir::types::Priority) -> String {
    use loam_ir::types::Priority;
    let higher: Vec<&str> = Priority::ALL
        .iter()
        .filter(|p| **p > priority)
        .map(|p| p.as_str())
        .collect();
    if priority == Priority::Critical || higher.is_empty() {
        "their owners reclaim them when needed".to_string()
    } else {
        format!(
            "their owners reclaim them when needed, and {} jobs may preempt them",
            higher.join(" and ")
        )
    }
}

/// Quota and availability remarks on the devices the plan takes of each group, as warnings
/// (L3005, L3006); the plan's `notes` are their messages.
fn group_notes(job: &Job, groups: &[(&Placement<'_>, u64)]) -> Vec<PlanDiagnosticIr> {
    let mut found = Vec::new();
    for (placement, devices) in groups {
        let devices = *devices;
        let preemptible = devices.saturating_sub(placement.guaranteed);
        if preemptible > 0 {
            found.push(PlanDiagnosticIr::warning(
                codes::plan::ABOVE_GUARANTEED_QUOTA,
                SpecField::Tenant,
                format!(
                    "{preemptible} of the {devices} {} are above the tenant's guaranteed quota and may be preempted: {}",
                    placement.device.id.value,
                    preempted_by(job.priority)
                ),
                "mark the job `interruptible = true` if it resumes from checkpoints, or ask for a larger guaranteed quota",
            ));
        }
        let free = u64::from(placement.group.free_devices);
        if devices > free {
            found.push(PlanDiagnosticIr::warning(
                codes::plan::QUEUES,
                SpecField::Devices,
                format!(
                    "needs {devices} {} of `{}`, {free} free now: the job queues until they are",
                    placement.device.id.value, placement.group.name.value
                ),
                "expect a wait before the job starts, or allow other device types or sites",
            ));
        }
    }
    found
}
