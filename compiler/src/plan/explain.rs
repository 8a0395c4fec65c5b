//! Why the chosen plan won and why each alternative lost, with numbers: every costed plan of
//! either kind (one node group, or a pipeline over two) ranked on one list.

use super::objective::{Constrained, Limits, Outcome, PENALTY};
use super::pair::PairPipeline;
use super::pair::data::PairData;
use super::placement;
use super::single;
use super::single::Ranked;
use crate::catalogue::Pool;
use crate::check::Job;
use loam_ir::display;
use loam_ir::plan::{AlternativeIr, AlternativePlacementIr, DataOptionIr};
use loam_ir::types::Optimize;

/// Alternatives listed per plan.
const ALTERNATIVES: usize = 4;

/// What kind of plan an entry is.
#[derive(Clone, Copy)]
pub(crate) enum Kind<'r, 'a> {
    /// One node group.
    Single(&'r Ranked<'a>),
    /// A pipeline over two node groups.
    PairPipeline(&'r PairPipeline<'a>),
    /// Whole replicas on two node groups, the batch split between them.
    PairData(&'r PairData<'a>),
}

/// One costed plan.
pub(crate) struct Entry<'r, 'a> {
    pub(crate) score: f64,
    pub(crate) outcome: Outcome,
    pub(crate) kind: Kind<'r, 'a>,
}

impl<'r, 'a> Entry<'r, 'a> {
    /// The site of its first group (where the data is read).
    pub(crate) fn first_site(&self) -> &'a crate::catalogue::Site {
        match self.kind {
            Kind::Single(r) => r.placement.site,
            Kind::PairPipeline(m) => {
                let [first, _] = m.placements;
                first.site
            }
            Kind::PairData(d) => {
                let [first, _] = d.placements;
                first.site
            }
        }
    }

    /// 0 for one node group, 1 for a pipeline over two, 2 for replicas on two.
    fn kind_rank(&self) -> u8 {
        match self.kind {
            Kind::Single(_) => 0,
            Kind::PairPipeline(_) => 1,
            Kind::PairData(_) => 2,
        }
    }

    /// Whether it runs on two node groups.
    fn is_pair(&self) -> bool {
        !matches!(self.kind, Kind::Single(_))
    }

    /// Which node groups it uses (option indices; a single group twice).
    fn groups(&self) -> [usize; 2] {
        match self.kind {
            Kind::Single(r) => [r.option, r.option],
            Kind::PairPipeline(m) => m.pair,
            Kind::PairData(d) => d.pair,
        }
    }

    /// The sites it runs at.
    fn sites(&self) -> Vec<&str> {
        match self.kind {
            Kind::Single(r) => vec![r.placement.site.name.value.as_str()],
            Kind::PairPipeline(m) => m
                .placements
                .iter()
                .map(|p| p.site.name.value.as_str())
                .collect(),
            Kind::PairData(d) => d
                .placements
                .iter()
                .map(|p| p.site.name.value.as_str())
                .collect(),
        }
    }

    /// The node groups it holds and the devices of each, in the order of its groups.
    fn placement(&self) -> Vec<AlternativePlacementIr> {
        let one = |p: &placement::Placement<'_>, devices: u64| AlternativePlacementIr {
            site: p.site.name.value.clone(),
            node_group: p.group.name.value.clone(),
            device: p.device.id.value.clone(),
            devices,
        };
        match self.kind {
            Kind::Single(r) => vec![one(r.placement, r.candidate.devices)],
            Kind::PairPipeline(m) => {
                let [a, b] = m.placements;
                let [da, db] = m.plan.shape.devices();
                vec![one(a, da), one(b, db)]
            }
            Kind::PairData(d) => {
                let [a, b] = d.placements;
                let [da, db] = d.devices();
                vec![one(a, da), one(b, db)]
            }
        }
    }

    fn summary(&self) -> String {
        match self.kind {
            Kind::Single(r) => single::summary(r),
            Kind::PairPipeline(m) => m.summary(),
            Kind::PairData(d) => d.summary(),
        }
    }

    /// Single-type plans first on equal scores, then file order, then layout order.
    fn order(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then(self.kind_rank().cmp(&other.kind_rank()))
            .then(self.groups().cmp(&other.groups()))
            .then_with(|| match (self.kind, other.kind) {
                (Kind::Single(a), Kind::Single(b)) => a.candidate.layout.cmp(&b.candidate.layout),
                (Kind::PairPipeline(a), Kind::PairPipeline(b)) => a.plan.shape.cmp(&b.plan.shape),
                (Kind::PairData(a), Kind::PairData(b)) => a.order(b),
                _ => std::cmp::Ordering::Equal,
            })
    }

    /// `single-type`, `heterogeneous` (a pipeline over two groups), `heterogeneous-data`
    /// (replicas on two groups), or `other-site` when it runs where `best` does not.
    fn shape(&self, best: &Self) -> &'static str {
        match self.kind {
            Kind::PairPipeline(_) => "heterogeneous",
            Kind::PairData(_) => "heterogeneous-data",
            Kind::Single(_) => {
                let theirs = best.sites();
                if self.sites().iter().all(|s| theirs.contains(s)) {
                    "single-type"
                } else {
                    "other-site"
                }
            }
        }
    }
}

/// Every costed plan, best first.
pub(crate) fn entries<'r, 'a>(
    ranked: &'r [Ranked<'a>],
    mixed: &'r [PairPipeline<'a>],
    splits: &'r [PairData<'a>],
    objectives: &[Constrained],
) -> Vec<Entry<'r, 'a>> {
    let mut all: Vec<Entry<'r, 'a>> = ranked
        .iter()
        .filter_map(|r| {
            let o = objectives.get(r.option)?;
            Some(Entry {
                score: r.score,
                outcome: o.outcome(&r.candidate),
                kind: Kind::Single(r),
            })
        })
        .chain(mixed.iter().map(|m| Entry {
            score: m.score,
            outcome: m.outcome,
            kind: Kind::PairPipeline(m),
        }))
        .chain(splits.iter().map(|d| Entry {
            score: d.score,
            outcome: d.outcome,
            kind: Kind::PairData(d),
        }))
        .collect();
    all.sort_by(|a, b| a.order(b));
    all
}

/// Why the chosen plan won, in one sentence with numbers; `time_s` is the plan's time to train
/// as every output shows it (an interruptible job's in its daily window).
pub(crate) fn why(
    job: &Job,
    entries: &[Entry<'_, '_>],
    limits: &Limits,
    groups: usize,
    time_s: f64,
) -> String {
    let Some(best) = entries.first() else {
        return String::new();
    };
    let goal = match job.goal.optimize {
        Optimize::Time => "fastest",
        Optimize::Cost => "cheapest",
        Optimize::Balanced => "best hours × cost",
        Optimize::Carbon => "lowest-carbon",
    };
    let mut limit_texts = Vec::new();
    if let Some(deadline) = limits.deadline_s {
        limit_texts.push(format!(
            "the {} deadline ({} to spare)",
            display::duration(deadline),
            display::duration(deadline - time_s)
        ));
    }
    if let Some(budget) = limits.budget {
        let currency = placement::currency_of(job);
        limit_texts.push(format!(
            "the {} budget ({} to spare)",
            display::money(budget, &currency),
            display::money(budget - best.outcome.cost, &currency)
        ));
    }
    let plural = if groups == 1 { "" } else { "s" };
    let mixed = entries.iter().any(Entry::is_pair);
    let shapes = if mixed {
        "single-type and heterogeneous plans"
    } else {
        "the layouts"
    };
    let mut text = format!("{goal} of {shapes} costed on {groups} node group{plural}");
    if !limit_texts.is_empty() {
        text.push_str(" that meet ");
        text.push_str(&limit_texts.join(" and "));
    }
    if best.is_pair()
        && let Some(single) = entries.iter().find(|e| matches!(e.kind, Kind::Single(_)))
    {
        let (mine, theirs) = (limits.raw(&best.outcome), limits.raw(&single.outcome));
        if single.score < PENALTY && theirs > 0.0 {
            text.push_str(&format!(
                "; {} better than the best single-type plan",
                display::percent(1.0 - mine / theirs)
            ));
        } else {
            text.push_str("; no single-type plan meets the limits");
        }
    }
    text
}

/// Why the closest miss still misses, with numbers.
pub(crate) fn miss_reasons(job: &Job, best: &Entry<'_, '_>, limits: &Limits) -> Vec<String> {
    let mut reasons = Vec::new();
    let summary = best.summary();
    let o = &best.outcome;
    if let Some(deadline) = limits.deadline_s
        && o.time_s > deadline
    {
        reasons.push(format!(
            "misses the deadline by {} ({} needed, {} allowed) with the best plan: {summary}",
            display::duration(o.time_s - deadline),
            display::duration(o.time_s),
            display::duration(deadline),
        ));
    }
    if let Some(budget) = limits.budget
        && o.cost > budget
    {
        let currency = placement::currency_of(job);
        reasons.push(format!(
            "over budget by {} ({} needed, {} allowed) with the best plan: {summary}",
            display::money(o.cost - budget, &currency),
            display::money(o.cost, &currency),
            display::money(budget, &currency),
        ));
    }
    reasons
}

/// The best plans that lost: the best of another shape first (a single-type plan when a
/// pipeline won, a pipeline when a single type won), the best at another site, the best of
/// every other node group or pair, then other layouts of the chosen one; each with its
/// objective and a typed reason it lost.
pub(crate) fn alternatives(
    entries: &[Entry<'_, '_>],
    limits: &Limits,
    currency: &str,
) -> Vec<AlternativeIr> {
    let Some(best) = entries.first() else {
        return Vec::new();
    };
    let at = |i: &usize| entries.get(*i);
    // An entry that reads the same as the chosen plan, or as one listed before it (another
    // stage split or option behind the same layout on the same devices), is no alternative to
    // a reader: the newcomer review found the chosen layout listed at "+0.0 %" and one line
    // twice.
    let best_summary = best.summary();
    let mut seen_summaries: Vec<String> = vec![best_summary];
    let rest: Vec<usize> = (1..entries.len())
        .filter(|i| {
            let Some(summary) = at(i).map(Entry::summary) else {
                return false;
            };
            if seen_summaries.contains(&summary) {
                return false;
            }
            seen_summaries.push(summary);
            true
        })
        .collect();
    let mut picked: Vec<usize> = Vec::new();
    let add = |i: Option<usize>, picked: &mut Vec<usize>| {
        if let Some(i) = i
            && !picked.contains(&i)
            && picked.len() < ALTERNATIVES
        {
            picked.push(i);
        }
    };
    // The best of every other shape: single-type, pipeline, data-parallel split.
    for rank in 0..3u8 {
        if rank != best.kind_rank() {
            add(
                rest.iter()
                    .copied()
                    .find(|i| at(i).is_some_and(|e| e.kind_rank() == rank)),
                &mut picked,
            );
        }
    }
    let other_site = rest
        .iter()
        .copied()
        .find(|i| at(i).is_some_and(|e| e.shape(best) == "other-site"));
    add(other_site, &mut picked);
    let mut seen = vec![best.groups()];
    for i in &rest {
        if let Some(e) = at(i)
            && !seen.contains(&e.groups())
        {
            seen.push(e.groups());
            add(Some(*i), &mut picked);
        }
    }
    for i in &rest {
        if at(i).is_some_and(|e| e.groups() == best.groups()) {
            add(Some(*i), &mut picked);
        }
    }
    let mut picked: Vec<&Entry<'_, '_>> = picked.iter().filter_map(at).collect();
    picked.sort_by(|a, b| a.order(b));
    picked
        .into_iter()
        .map(|e| {
            let (lost_on, why_not) = why_not(e, best, limits, currency);
            AlternativeIr {
                shape: e.shape(best).to_string(),
                lost_on: lost_on.to_string(),
                summary: e.summary(),
                objective: display::significant(limits.raw(&e.outcome)),
                why_not,
                time_h: Some(display::significant(e.outcome.time_s / 3600.0)),
                cost: Some(display::significant(e.outcome.cost)),
                carbon_kg: Some(display::significant(e.outcome.carbon_kg)),
                placement: e.placement(),
            }
        })
        .collect()
}

/// Why `e` lost to `best`: a keyword and a sentence with numbers.
fn why_not(
    e: &Entry<'_, '_>,
    best: &Entry<'_, '_>,
    limits: &Limits,
    currency: &str,
) -> (&'static str, String) {
    let o = &e.outcome;
    if let Some(deadline) = limits.deadline_s
        && o.time_s > deadline
    {
        return (
            "misses-deadline",
            format!(
                "misses the deadline by {}",
                display::duration(o.time_s - deadline)
            ),
        );
    }
    if let Some(budget) = limits.budget
        && o.cost > budget
    {
        return (
            "over-budget",
            format!(
                "over budget by {}",
                display::money(o.cost - budget, currency)
            ),
        );
    }
    let mine = limits.raw(o);
    let theirs = limits.raw(&best.outcome);
    let change = if theirs > 0.0 {
        mine / theirs - 1.0
    } else {
        0.0
    };
    let pct = display::percent(change);
    let b = &best.outcome;
    // Below half of the 0.1 % the sentence shows, "+0.0 %" would read as the chosen plan
    // repeated; say it is a tie (another layout of the same merit, ranked after by the
    // tie-break: fewer device kinds, then the layout's order).
    if change.abs() < 0.0005 {
        let lost_on = match limits.optimize {
            Optimize::Time => "slower",
            Optimize::Cost => "costlier",
            Optimize::Balanced => "worse-balance",
            Optimize::Carbon => "more-carbon",
        };
        return (
            lost_on,
            "ties with the chosen plan (within 0.05 %)".to_string(),
        );
    }
    match limits.optimize {
        Optimize::Time => (
            "slower",
            format!("{} slower (+{pct})", display::duration(o.time_s - b.time_s)),
        ),
        Optimize::Cost => (
            "costlier",
            format!(
                "costs {} more (+{pct})",
                display::money(o.cost - b.cost, currency)
            ),
        ),
        Optimize::Balanced => (
            "worse-balance",
            format!("hours × cost {} worse", display::percent_signed(change)),
        ),
        Optimize::Carbon => (
            "more-carbon",
            format!(
                "emits {:.1} t more CO2 (+{pct})",
                (o.carbon_kg - b.carbon_kg) / 1000.0
            ),
        ),
    }
}

/// The best plan of each data strategy: run where the data is, copy it, use a cached copy, or
/// split the pipeline over two sites. The first group's site is where the data is read.
pub(crate) fn data_options(
    job: &Job,
    pool: &Pool,
    entries: &[Entry<'_, '_>],
    limits: &Limits,
    objectives: &[Constrained],
) -> Vec<DataOptionIr> {
    if job.data.is_empty() {
        return Vec::new();
    }
    let mut best: Vec<(&'static str, &Entry<'_, '_>)> = Vec::new();
    for e in entries {
        let sites = e.sites();
        let strategy = if sites.windows(2).any(|w| w.first() != w.last()) {
            "split"
        } else {
            let Some(site) = sites.first().and_then(|s| pool.site(s)) else {
                continue;
            };
            placement::data_strategy(job, site)
        };
        if !best.iter().any(|(s, _)| *s == strategy) {
            best.push((strategy, e));
        }
    }
    let chosen = entries.first().map(|e| e.groups());
    best.into_iter()
        .filter_map(|(strategy, e)| {
            let site = pool.site(e.sites().first()?)?;
            let data = placement::data_ir(job, pool, site);
            let [first, _] = e.groups();
            let egress = match e.kind {
                Kind::Single(_) => objectives.get(first)?.transfer_cost,
                Kind::PairPipeline(m) => m.fixed_cost,
                Kind::PairData(d) => d.fixed_cost,
            };
            Some(DataOptionIr {
                strategy: strategy.to_string(),
                site: e.sites().join("+"),
                transfer_gb: data.transfer_gb,
                transfer_h: data.transfer_h,
                egress: display::significant(egress),
                time_h: display::significant(e.outcome.time_s / 3600.0),
                cost: display::significant(e.outcome.cost),
                objective: display::significant(limits.raw(&e.outcome)),
                chosen: Some(e.groups()) == chosen,
                carbon_kg: Some(display::significant(e.outcome.carbon_kg)),
            })
        })
        .collect()
}
