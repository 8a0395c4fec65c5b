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
//! One device type per plan; mixing types and sites comes later.

use super::build::{self, Placement};
use super::ir::{AlternativeIr, FORMAT_VERSION, Plan, PlanDocument, WorkloadIr};
use super::search::{Candidate, Economics, Objective, Pins, RejectedRegion, SearchSpec, search};
use crate::catalogue::{Catalogue, Feature, Pool};
use crate::check::Job;
use crate::diagnostics::Diagnostic;
use crate::workload::{TrainSetup, model_dims, param_count, train_setup};

/// Layouts kept per node group (the best and the next few, for alternatives).
const KEEP_PER_GROUP: usize = 4;

/// Alternatives listed per plan.
const ALTERNATIVES: usize = 4;

/// Scores at or above this break the deadline or the budget.
pub(crate) const PENALTY: f64 = 1e100;

/// The objective of one node group: the job's goal plus the fixed time and cost of bringing
/// the data, with deadline and budget as hard limits.
struct Constrained {
    economics: Economics,
    /// Seconds spent moving data before training starts.
    transfer_s: f64,
    /// Money spent moving data (egress).
    transfer_cost: f64,
    deadline_s: Option<f64>,
    budget: Option<f64>,
}

impl Constrained {
    /// Wall-clock seconds until trained (data transfer first).
    fn time_s(&self, c: &Candidate) -> f64 {
        c.train_time_s + self.transfer_s
    }

    /// Money for the run.
    fn cost(&self, c: &Candidate) -> f64 {
        self.economics.cost(c) + self.transfer_cost
    }

    /// The objective without the constraints (lower is better).
    fn raw(&self, c: &Candidate) -> f64 {
        use crate::types::Optimize;
        match self.economics.optimize {
            Optimize::Time => self.time_s(c),
            Optimize::Cost => self.cost(c),
            Optimize::Balanced => self.time_s(c) / 3600.0 * self.cost(c),
            Optimize::Carbon => self.economics.carbon_kg(c),
        }
    }

    /// How far past the deadline and the budget, as shares (0 when met).
    fn misses(&self, c: &Candidate) -> (f64, f64) {
        let late = self
            .deadline_s
            .map_or(0.0, |d| (self.time_s(c) / d.max(1.0) - 1.0).max(0.0));
        let over = self
            .budget
            .map_or(0.0, |b| (self.cost(c) / b.max(1e-9) - 1.0).max(0.0));
        (late, over)
    }
}

impl Objective for Constrained {
    fn score(&self, c: &Candidate) -> f64 {
        let (late, over) = self.misses(c);
        if late > 0.0 || over > 0.0 {
            PENALTY * (1.0 + late + over)
        } else {
            self.raw(c)
        }
    }
}

/// One costed layout on one node group.
pub(crate) struct Ranked<'a> {
    pub(crate) score: f64,
    pub(crate) option: usize,
    pub(crate) candidate: Candidate,
    pub(crate) placement: &'a Placement<'a>,
}

/// The layout fields a spec pins.
fn pins(job: &Job) -> Pins {
    let narrow = |v: &Option<crate::span::Spanned<u64>>| {
        v.as_ref()
            .map(|s| u32::try_from(s.value).unwrap_or(u32::MAX))
    };
    let p = &job.parallel;
    Pins {
        tensor: narrow(&p.tensor),
        pipeline: narrow(&p.pipeline),
        data: narrow(&p.data),
        context: narrow(&p.context),
        expert: narrow(&p.expert),
        virtual_stages: narrow(&p.virtual_stages),
        micro_batch: narrow(&p.micro_batch),
        zero: p
            .zero
            .as_ref()
            .map(|s| u8::try_from(s.value).unwrap_or(u8::MAX)),
        recompute: p.recompute.as_ref().map(|s| s.value),
        sequence_parallel: p.sequence_parallel.as_ref().map(|s| s.value),
    }
}

/// The workload section of the IR.
fn workload_ir(job: &Job) -> WorkloadIr {
    let m = &job.model;
    WorkloadIr {
        params: param_count(&model_dims(m)).total,
        layers: m.layers,
        hidden: m.hidden,
        heads: m.heads,
        seq_len: m.seq_len,
        global_batch: job.train.global_batch,
        tokens: job.train.tokens,
        precision: job.train.precision.value.as_str().to_string(),
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
        priority: job.priority.as_str().to_string(),
        interruptible: job.resources.interruptible,
        pool: job.resources.pool.value.clone(),
        workload: workload_ir(job),
        layout: None,
        groups: Vec::new(),
        stages: Vec::new(),
        estimate: None,
        data: None,
        checkpoint: None,
        alternatives: Vec::new(),
        why: String::new(),
        notes: Vec::new(),
    }
}

/// Plans one checked job against `catalogue`. `file` is the spec's display path. The plan is
/// infeasible (with reasons) when no layout on any allowed node group meets every constraint;
/// the diagnostics are warnings about the spec found while planning.
pub fn plan_job(job: &Job, file: &str, catalogue: &Catalogue) -> (Plan, Vec<Diagnostic>) {
    let mut plan = skeleton(job, file);
    let diagnostics = Vec::new();
    let Some(pool) = catalogue.pool(&job.resources.pool.value) else {
        plan.reasons.push(format!(
            "the catalogue has no pool `{}`",
            job.resources.pool.value
        ));
        return (plan, diagnostics);
    };
    let (options, mut skipped) = build::options(job, pool, catalogue);
    if options.is_empty() {
        plan.reasons.push(format!(
            "no node group of pool `{}` can run the job",
            pool.id.value
        ));
        plan.reasons.append(&mut skipped);
        return (plan, diagnostics);
    }
    let model = model_dims(&job.model);
    let base_setup = train_setup(job);
    let pins = pins(job);
    let mut ranked: Vec<Ranked<'_>> = Vec::new();
    let mut rejected: Vec<(usize, RejectedRegion)> = Vec::new();
    let objectives: Vec<Constrained> = options.iter().map(|o| objective(job, pool, o)).collect();
    for (i, (option, objective)) in options.iter().zip(&objectives).enumerate() {
        // Fused attention only where the device's software stack has it.
        let setup = TrainSetup {
            flash_attention: option.device.has_feature(Feature::FlashAttention),
            ..base_setup.clone()
        };
        let spec = SearchSpec {
            model: &model,
            setup: &setup,
            cluster: &option.cluster,
            pins,
            max_devices: option.available,
            keep: KEEP_PER_GROUP,
        };
        let result = search(&spec, objective);
        for (score, candidate) in result.scores.into_iter().zip(result.ranked) {
            ranked.push(Ranked {
                score,
                option: i,
                candidate,
                placement: option,
            });
        }
        rejected.extend(result.rejected.into_iter().map(|r| (i, r)));
    }
    ranked.sort_by(|a, b| {
        a.score
            .total_cmp(&b.score)
            .then(a.option.cmp(&b.option))
            .then(a.candidate.layout.cmp(&b.candidate.layout))
    });
    let Some(best) = ranked.first() else {
        plan.reasons = build::rejection_reasons(&rejected, &options);
        plan.reasons.append(&mut skipped);
        return (plan, diagnostics);
    };
    let Some(constraints) = objectives.get(best.option) else {
        return (plan, diagnostics);
    };
    if best.score >= PENALTY {
        plan.reasons = miss_reasons(job, best, constraints);
    } else {
        plan.feasible = true;
    }
    let totals = build::Totals {
        cost: constraints.cost(&best.candidate),
        currency: build::currency(job, pool),
        energy_kwh: constraints.economics.energy_kwh(&best.candidate),
        carbon_kg: constraints.economics.carbon_kg(&best.candidate),
    };
    if plan.feasible {
        plan.why = why(job, &ranked, constraints, options.len());
    }
    plan.notes = notes(best);
    build::fill(&mut plan, job, pool, best, totals);
    plan.alternatives = alternatives(job, &ranked, &objectives);
    (plan, diagnostics)
}

/// The objective of `option`: money converted to the budget's currency (or the pool's), power
/// at the site's mean price and PUE, carbon at the site's intensity.
fn objective(job: &Job, pool: &Pool, option: &Placement<'_>) -> Constrained {
    let currency = build::currency(job, pool);
    let base = pool.currency.value.as_str();
    let convert = |amount: f64| pool.convert(amount, base, &currency).unwrap_or(amount);
    let watts = option.device.typical_watts * option.site.pue;
    let power_price_per_hour = watts / 1000.0 * option.site.mean_power_price();
    let (transfer_s, transfer_cost) = build::transfer(job, pool, option.site);
    Constrained {
        economics: Economics {
            optimize: job.goal.optimize,
            price_per_device_hour: convert(option.group.price_per_device_hour)
                + convert(power_price_per_hour),
            watts_per_device: watts,
            carbon_g_per_kwh: option.site.carbon_g_per_kwh,
        },
        transfer_s,
        transfer_cost: convert(transfer_cost),
        deadline_s: job.goal.deadline.as_ref().map(|d| d.value),
        budget: job.goal.budget.as_ref().map(|b| b.value.0),
    }
}

/// Why the chosen plan won, in one sentence with numbers.
fn why(job: &Job, ranked: &[Ranked<'_>], c: &Constrained, groups: usize) -> String {
    use crate::types::Optimize;
    let Some(best) = ranked.first() else {
        return String::new();
    };
    let goal = match job.goal.optimize {
        Optimize::Time => "fastest",
        Optimize::Cost => "cheapest",
        Optimize::Balanced => "best hours × cost",
        Optimize::Carbon => "lowest-carbon",
    };
    let mut limits = Vec::new();
    if let Some(deadline) = c.deadline_s {
        limits.push(format!(
            "the {} deadline ({} to spare)",
            build::days(deadline),
            build::days(deadline - c.time_s(&best.candidate))
        ));
    }
    if let Some(budget) = c.budget {
        let currency = build::currency_of(job);
        limits.push(format!(
            "the {} {currency} budget ({} {currency} to spare)",
            build::money(budget),
            build::money(budget - c.cost(&best.candidate))
        ));
    }
    let plural = if groups == 1 { "" } else { "s" };
    let mut text = format!("{goal} of the layouts costed on {groups} node group{plural}");
    if !limits.is_empty() {
        text.push_str(" that meet ");
        text.push_str(&limits.join(" and "));
    }
    text
}

/// Non-blocking remarks on the chosen placement.
fn notes(best: &Ranked<'_>) -> Vec<String> {
    let mut notes = Vec::new();
    let preemptible = best
        .candidate
        .devices
        .saturating_sub(best.placement.guaranteed);
    if preemptible > 0 {
        notes.push(format!(
            "{preemptible} of the {} devices are above the tenant's guaranteed quota and may be preempted",
            best.candidate.devices
        ));
    }
    let free = u64::from(best.placement.group.free_devices);
    if best.candidate.devices > free {
        notes.push(format!(
            "needs {} {} of `{}`, {free} free now: the job queues until they are",
            best.candidate.devices, best.placement.device.id.value, best.placement.group.name.value
        ));
    }
    notes
}

/// Why the closest miss still misses, with numbers.
fn miss_reasons(job: &Job, best: &Ranked<'_>, c: &Constrained) -> Vec<String> {
    let mut reasons = Vec::new();
    let summary = build::summary(best);
    if let Some(deadline) = job.goal.deadline.as_ref().map(|d| d.value) {
        let time = c.time_s(&best.candidate);
        if time > deadline {
            reasons.push(format!(
                "misses the deadline by {} ({} needed, {} allowed) with the best plan: {summary}",
                build::days(time - deadline),
                build::days(time),
                build::days(deadline),
            ));
        }
    }
    if let Some(budget) = job.goal.budget.as_ref().map(|b| b.value.0) {
        let cost = c.cost(&best.candidate);
        if cost > budget {
            let currency = build::currency_of(job);
            reasons.push(format!(
                "over budget by {} {currency} ({} {currency} needed, {} {currency} allowed) with the best plan: {summary}",
                build::money(cost - budget),
                build::money(cost),
                build::money(budget),
            ));
        }
    }
    reasons
}

/// The best few plans that lost: the best of every other node group first, then other layouts
/// of the chosen group; each with its objective and why it lost.
fn alternatives(
    job: &Job,
    ranked: &[Ranked<'_>],
    objectives: &[Constrained],
) -> Vec<AlternativeIr> {
    let Some(best) = ranked.first() else {
        return Vec::new();
    };
    let Some(best_obj) = objectives.get(best.option) else {
        return Vec::new();
    };
    let mut picked: Vec<&Ranked<'_>> = Vec::new();
    let mut seen = vec![best.option];
    for r in ranked.iter().skip(1) {
        if !seen.contains(&r.option) {
            seen.push(r.option);
            picked.push(r);
        }
    }
    picked.truncate(ALTERNATIVES.saturating_sub(1).max(1));
    for r in ranked.iter().skip(1) {
        if picked.len() >= ALTERNATIVES {
            break;
        }
        if r.option == best.option {
            picked.push(r);
        }
    }
    picked.sort_by(|a, b| {
        a.score
            .total_cmp(&b.score)
            .then(a.option.cmp(&b.option))
            .then(a.candidate.layout.cmp(&b.candidate.layout))
    });
    picked
        .into_iter()
        .filter_map(|r| {
            let obj = objectives.get(r.option)?;
            Some(AlternativeIr {
                summary: build::summary(r),
                objective: build::round(obj.raw(&r.candidate)),
                why_not: why_not(job, r, obj, best, best_obj),
            })
        })
        .collect()
}

/// Why `r` lost to `best`, with numbers.
fn why_not(
    job: &Job,
    r: &Ranked<'_>,
    obj: &Constrained,
    best: &Ranked<'_>,
    best_obj: &Constrained,
) -> String {
    use crate::types::Optimize;
    let currency = build::currency_of(job);
    let mut misses = Vec::new();
    if let Some(deadline) = obj.deadline_s {
        let time = obj.time_s(&r.candidate);
        if time > deadline {
            misses.push(format!(
                "misses the deadline by {}",
                build::days(time - deadline)
            ));
        }
    }
    if let Some(budget) = obj.budget {
        let cost = obj.cost(&r.candidate);
        if cost > budget {
            misses.push(format!(
                "over budget by {} {currency}",
                build::money(cost - budget)
            ));
        }
    }
    if !misses.is_empty() {
        return misses.join("; ");
    }
    let mine = obj.raw(&r.candidate);
    let theirs = best_obj.raw(&best.candidate);
    let pct = if theirs > 0.0 {
        100.0 * (mine / theirs - 1.0)
    } else {
        0.0
    };
    match job.goal.optimize {
        Optimize::Time => format!(
            "{} slower (+{pct:.1} %)",
            build::days(obj.time_s(&r.candidate) - best_obj.time_s(&best.candidate))
        ),
        Optimize::Cost => format!(
            "costs {} {currency} more (+{pct:.1} %)",
            build::money(obj.cost(&r.candidate) - best_obj.cost(&best.candidate))
        ),
        Optimize::Balanced => format!("hours × cost {pct:+.1} % worse"),
        Optimize::Carbon => format!(
            "emits {:.1} t more CO2 (+{pct:.1} %)",
            (obj.economics.carbon_kg(&r.candidate) - best_obj.economics.carbon_kg(&best.candidate))
                / 1000.0
        ),
    }
}

/// Plans every job; `jobs` pairs each job with its file's display path. Plans come sorted by
/// file (a stable sort: jobs of one file stay in source order), so the order the files were
/// given in does not matter.
pub fn plan_document(
    jobs: &[(&Job, &str)],
    catalogue: &Catalogue,
) -> (PlanDocument, Vec<Diagnostic>) {
    let mut plans = Vec::new();
    let mut diagnostics = Vec::new();
    for (job, file) in jobs {
        let (plan, mut found) = plan_job(job, file, catalogue);
        plans.push(plan);
        diagnostics.append(&mut found);
    }
    plans.sort_by(|a, b| a.file.cmp(&b.file));
    (
        PlanDocument {
            format_version: FORMAT_VERSION.to_string(),
            catalogue_digest: catalogue.digest(),
            plans,
        },
        diagnostics,
    )
}
