//! Heterogeneous data parallelism: two node groups each run whole model replicas, with their
//! own layout, on their own share of the global batch; once per step the two groups sum their
//! gradients.
//!
//! A step takes `max(step of A on its share, step of B on its share) + exchange`, where each
//! group's step (its own compute, bubble, gradient reduction among its replicas and optimizer)
//! is the single-type cost model's on a batch of that share, and the exchange sends the whole
//! gradient once each way between the groups: every device of a group holds `1/N` of its
//! group's reduced gradient, so the exchange runs at the smaller group's total NIC bandwidth,
//! capped by the switch-block uplinks its nodes sit under, or at the WAN's bandwidth between
//! two sites (whose egress is paid every step).
//!
//! The batch is split on a grid of [`SHARE_STEPS`]ths; for each share each group keeps its best
//! few layouts under the job's goal and deadline (the budget holds for the pair only), and every
//! pairing of those is costed.

use super::{
    PairInput, PairLink, PairRun, arithmetic_rank, candidates, fill_pair_data, pair_estimate,
    pair_link,
};
use crate::check::Job;
use crate::cost::{KernelShare, LINK_EFFICIENCY};
use crate::plan::objective::Constrained;
use crate::plan::objective::{Limits, Outcome, PairObjective};
use crate::plan::placement::Placement;
use crate::plan::search::budget::walk_in_rounds;
use crate::plan::search::{
    Candidate, Objective, Scores, SearchSpec, SearchStats, search_capped, setup_on,
};
use crate::plan::single::{layout_ir, round};
use crate::plan::stages::{StageTiming, homogeneous_stages};
use crate::workload::ModelDims;
use crate::workload::{StateRecipe, TrainSetup, param_count};
use loam_ir::plan::{BreakdownIr, Plan};
use loam_ir::types::{Hetero, Optimize};
use std::collections::{BTreeMap, BTreeSet};

/// The batch is split between the two groups in multiples of `1/SHARE_STEPS`.
pub(crate) const SHARE_STEPS: u32 = 16;

/// Layouts each group keeps per batch share.
pub(crate) const KEEP_PER_SHARE: usize = 3;

/// Plans kept per pair.
const KEEP_PER_PAIR: usize = 2;

/// A costed data-parallel plan over two node groups.
pub(crate) struct PairData<'a> {
    pub(crate) score: f64,
    /// Option indices of the first and the second group.
    pub(crate) pair: [usize; 2],
    pub(crate) placements: [&'a Placement<'a>; 2],
    /// Each group's layout, costed on its share of the batch.
    pub(crate) replicas: [Candidate; 2],
    /// Sequences per step each group trains on.
    pub(crate) batches: [u32; 2],
    /// Seconds per step the two groups spend summing their gradients.
    pub(crate) exchange_s: f64,
    /// Seconds per step.
    pub(crate) step_time_s: f64,
    /// Seconds to train on every token.
    pub(crate) train_time_s: f64,
    pub(crate) outcome: Outcome,
    /// Data transfer and WAN egress, whole run.
    pub(crate) fixed_cost: f64,
}

impl PairData<'_> {
    /// One line: each group's layout and share.
    pub(crate) fn summary(&self) -> String {
        let side = |k: usize| {
            let (Some(p), Some(r), Some(b)) = (
                self.placements.get(k),
                self.replicas.get(k),
                self.batches.get(k),
            ) else {
                return String::new();
            };
            format!(
                "{} × {} at {} ({}, {}, {b} sequences)",
                r.devices,
                p.device.id.value,
                p.site.name.value,
                p.group.name.value,
                crate::plan::single::layout_text(&r.layout),
            )
        };
        format!("data parallel over {} + {}", side(0), side(1))
    }

    /// Devices each group gives.
    pub(crate) fn devices(&self) -> [u64; 2] {
        [self.replicas[0].devices, self.replicas[1].devices]
    }
}

/// The shares of `batch` the first group may take: every multiple of `batch / SHARE_STEPS`
/// that is a whole number of sequences, leaving the second group at least one.
fn shares(batch: u32) -> Vec<u32> {
    (1..SHARE_STEPS)
        .filter(|k| (u64::from(batch) * u64::from(*k)).is_multiple_of(u64::from(SHARE_STEPS)))
        .map(|k| (u64::from(batch) * u64::from(k) / u64::from(SHARE_STEPS)) as u32)
        .filter(|b| *b > 0 && *b < batch)
        .collect()
}

/// Seconds to sum the gradient of `grad_bytes` between two groups using `devices` each: over
/// the WAN when they are at two sites, else at the smaller side's NIC bandwidth (every device
/// sends its `1/N` shard) capped by its switch blocks' uplinks.
fn exchange_seconds(
    grad_bytes: f64,
    placements: [&Placement<'_>; 2],
    devices: [u64; 2],
    link: &PairLink,
) -> f64 {
    if let Some(wan) = link.wan {
        return grad_bytes / (wan.bandwidth * LINK_EFFICIENCY).max(1.0) + wan.latency_s;
    }
    let capacity = |p: &Placement<'_>, n: u64| {
        let c = &p.cluster;
        let dpn = u64::from(c.devices_per_node.max(1));
        let nodes = n.div_ceil(dpn);
        let nics = n as f64 * c.node_network_bandwidth / dpn as f64;
        let uplinks = c.block.map_or(f64::INFINITY, |b| {
            nodes.div_ceil(u64::from(b.nodes.max(1))) as f64 * b.uplink
        });
        nics.min(uplinks) * LINK_EFFICIENCY
    };
    let [pa, pb] = placements;
    let [na, nb] = devices;
    let bandwidth = capacity(pa, na).min(capacity(pb, nb));
    let latency = pa
        .cluster
        .network_latency_s
        .max(pb.cluster.network_latency_s);
    grad_bytes / bandwidth.max(1.0) + latency
}

/// The per-group searches, cached by (option, sequences, the pair's device cap): the layouts of
/// one group worth pairing on one share of the batch ([`group_layouts`]).
struct ShareSearch<'i, 'p, 'a> {
    input: &'i PairInput<'p, 'a>,
    limits: Limits,
    /// Layouts kept per search.
    keep: usize,
    /// Every pair's device cap each option is asked for: one walk of a group on a share serves
    /// them all ([`search_capped`]), where a walk per pair cap walked the narrower caps twice.
    pair_caps: BTreeMap<usize, Vec<u64>>,
    found: BTreeMap<(usize, u32, u64), Vec<Candidate>>,
    /// By option: the kernels its walks on every share have worked out (a kernel does not
    /// depend on the batch: [`KernelShare`]).
    kernels: Vec<KernelShare>,
}

impl ShareSearch<'_, '_, '_> {
    /// The layouts worth pairing of group `option` on `sequences` under a pair's device cap
    /// `max_devices`: [`ShareSearch::prefetch`] ran every search the pairs ask for.
    fn best(&self, option: usize, sequences: u32, max_devices: u64) -> &[Candidate] {
        let found = self.found.get(&(option, sequences, max_devices));
        debug_assert!(
            found.is_some(),
            "a share searched before the pairs were costed"
        );
        found.map_or(&[], Vec::as_slice)
    }

    /// Runs the searches of every (option, sequences) in `wanted` not yet found, on up to
    /// `threads` threads, under the job's walk cap ([`walk_in_rounds`]): each is a pure function
    /// of its key and its allowance, and the results are stored in key order, so the plan is
    /// the same on any number of threads.
    fn prefetch(&mut self, wanted: &BTreeSet<(usize, u32)>, threads: usize) {
        let missing: Vec<(usize, u32, Vec<u64>)> = wanted
            .iter()
            .filter_map(|&(option, sequences)| {
                let caps = self.pair_caps.get(&option)?;
                let first = caps.first()?;
                (!self.found.contains_key(&(option, sequences, *first)))
                    .then(|| (option, sequences, caps.clone()))
            })
            .collect();
        let view = GroupInputs::of(self.input);
        let (keep, limits, kernels) = (self.keep, self.limits, &self.kernels);
        let walks = self.input.walks;
        let results = walk_in_rounds(
            &missing,
            threads,
            walks,
            |(option, sequences, caps), allowance| {
                let kernels = kernels.get(*option);
                group_layouts(
                    &view, *option, *sequences, caps, keep, limits, kernels, allowance,
                )
            },
        );
        for ((option, sequences, caps), layouts) in missing.into_iter().zip(results) {
            // A search the job's walk cap left out keeps nothing for any cap.
            let layouts = layouts.unwrap_or_else(|| vec![Vec::new(); caps.len()]);
            for (cap, kept) in caps.into_iter().zip(layouts) {
                self.found.entry((option, sequences, cap)).or_insert(kept);
            }
        }
    }
}

/// What one group's search on a share reads of the pair's input: the parts every thread may
/// share.
struct GroupInputs<'p, 'a> {
    options: &'a [Placement<'a>],
    objectives: &'p [Constrained],
    model: &'p ModelDims,
    setup: &'p TrainSetup,
    pins: crate::workload::Pins,
}

impl<'p, 'a> GroupInputs<'p, 'a> {
    fn of(input: &PairInput<'p, 'a>) -> GroupInputs<'p, 'a> {
        GroupInputs {
            options: input.options,
            objectives: input.objectives,
            model: input.model,
            setup: input.setup,
            pins: input.pins,
        }
    }
}

/// Bytes of gradient the two groups of a split sum each step: only the weights that train
/// have gradients, in the format the job reduces them in.
fn exchanged_gradient_bytes(model: &ModelDims, setup: &TrainSetup) -> f64 {
    param_count(model).trainable * StateRecipe::reduced_gradient_bytes(setup)
}

/// The layouts worth pairing of one group on `sequences` of each batch, for each pair cap of
/// `max_devices` in turn: its `keep` fastest counting the gradient exchange as though this
/// group were the narrower side — the pair runs at the slower group's pace and then exchanges
/// at the smaller side's NIC bandwidth, so a layout fastest on its own may slow the exchange —
/// and, unless the goal is time, its `keep` best under the job's goal and deadline (the budget
/// holds for the pair only). When a pair's device cap is below what both groups have, the same
/// for a half and a quarter of the group's cap. Every cap of every pair cap comes from one walk
/// per objective: nothing the search costs or scores reads the cap, so a cap's best are the
/// widest walk's best within it ([`search_capped`]), which stops after `allowance` units; its
/// statistics come back beside the layouts.
#[allow(clippy::too_many_arguments)]
fn group_layouts(
    input: &GroupInputs<'_, '_>,
    option: usize,
    sequences: u32,
    max_devices: &[u64],
    keep: usize,
    limits: Limits,
    kernels: Option<&KernelShare>,
    allowance: u64,
) -> (Vec<Vec<Candidate>>, Option<SearchStats>) {
    let (Some(p), Some(o)) = (input.options.get(option), input.objectives.get(option)) else {
        return (vec![Vec::new(); max_devices.len()], None);
    };
    let share = f64::from(sequences) / f64::from(input.setup.global_batch.max(1));
    let setup = TrainSetup {
        global_batch: sequences,
        tokens: input.setup.tokens * share,
        ..setup_on(input.setup, p.device)
    };
    let steps = input.setup.steps(input.model);
    let grad_bytes = exchanged_gradient_bytes(input.model, input.setup);
    let per_device_net = p.cluster.node_network_bandwidth * LINK_EFFICIENCY
        / f64::from(p.cluster.devices_per_node.max(1));
    let outcome = |c: &Candidate, extra_s: f64| {
        let mut out = o.outcome(c);
        out.time_s += extra_s;
        out
    };
    let alone = Limits {
        budget: None,
        ..limits
    };
    let paired = Limits {
        optimize: Optimize::Time,
        ..alone
    };
    let exchange_s =
        |c: &Candidate| steps * grad_bytes / (c.devices as f64 * per_device_net).max(1.0);
    // The caps of each pair cap, widest first.
    let caps_of = |max_devices: u64| {
        let cap = p.available.min(max_devices);
        let mut caps = vec![cap];
        if limits.optimize != Optimize::Time {
            // Under another goal the pair pays for devices × the slower group's time, so its
            // best may take from a group a small, slow layout that matches the other group's
            // pace: the fastest under every halving of the cap, down to one device.
            let mut c = cap / 2;
            while c >= 1 {
                caps.push(c);
                c /= 2;
            }
        } else if max_devices < p.available.saturating_mul(2) {
            caps.extend([cap / 2, cap / 4].into_iter().filter(|c| *c >= 1));
        }
        caps
    };
    let per_pair_cap: Vec<Vec<u64>> = max_devices.iter().map(|&m| caps_of(m)).collect();
    let mut walked: Vec<u64> = per_pair_cap.iter().flatten().copied().collect();
    walked.sort_unstable_by(|a, b| b.cmp(a));
    walked.dedup();
    let spec = SearchSpec {
        model: input.model,
        setup: &setup,
        cluster: &p.cluster,
        pins: input.pins,
        max_devices: walked.first().copied().unwrap_or(0),
        keep,
    };
    // Under a time goal the fastest counting the exchange are what the pair wants; under
    // another goal the best on their own are kept as well, ranked in the same walk.
    let in_pair_score = |c: &Candidate| paired.score(&outcome(c, exchange_s(c)));
    let alone_score = |c: &Candidate| alone.score(&outcome(c, 0.0));
    let mut objectives: Vec<&dyn Objective> = vec![&in_pair_score];
    if limits.optimize != Optimize::Time {
        objectives.push(&alone_score);
    }
    // Both objectives read a candidate's time, devices and device-hours alone (the exchange
    // its devices, the outcome its run), and neither falls as the time grows.
    let (lists, stats) = search_capped(
        &spec,
        &objectives,
        &walked,
        Scores::ByTimeAndDevices,
        kernels,
        allowance,
    );
    let mut ranked = lists.into_iter();
    let in_pair = ranked.next().unwrap_or_default();
    let on_its_own = ranked.next().unwrap_or_default();
    let of_cap = |lists: &[Vec<Candidate>], cap: u64| -> Vec<Candidate> {
        walked
            .iter()
            .position(|w| *w == cap)
            .and_then(|i| lists.get(i))
            .cloned()
            .unwrap_or_default()
    };
    let layouts = per_pair_cap
        .iter()
        .map(|caps| {
            let mut kept: Vec<Candidate> = Vec::new();
            for &cap in caps {
                let alone = if on_its_own.is_empty() {
                    Vec::new()
                } else {
                    of_cap(&on_its_own, cap)
                };
                for c in alone.into_iter().chain(of_cap(&in_pair, cap)) {
                    // Only layouts whose group runs as equal nodes (the rule emit checks,
                    // `NodeShape`).
                    if !p.fits_nodes(c.devices, c.layout.tensor.into()) {
                        continue;
                    }
                    if !kept.iter().any(|k| k.layout == c.layout) {
                        kept.push(c);
                    }
                }
            }
            kept
        })
        .collect();
    (layouts, Some(stats))
}

/// Every data-parallel plan over a pair of candidate groups that both train in the job's
/// precision, best first; pairs whose WAN breaks `max_latency` add a sentence to `ruled_out`.
pub(crate) fn pair_data_plans<'a>(
    input: &PairInput<'_, 'a>,
    ruled_out: &mut Vec<String>,
) -> Vec<PairData<'a>> {
    search_splits(input, ruled_out, KEEP_PER_SHARE, Pruning::Floors)
}

/// Whether shares that cannot rank are skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pruning {
    /// Shares whose floor ([`bound`]) is above every kept plan are never searched.
    Floors,
    /// Every share is searched (the tests compare the two).
    #[cfg(test)]
    None,
}

impl Pruning {
    fn skips(self) -> bool {
        match self {
            Pruning::Floors => true,
            #[cfg(test)]
            Pruning::None => false,
        }
    }
}

/// [`pair_data_plans`] with `keep` layouts per group and share (the tests compare with more).
fn search_splits<'a>(
    input: &PairInput<'_, 'a>,
    ruled_out: &mut Vec<String>,
    keep: usize,
    pruning: Pruning,
) -> Vec<PairData<'a>> {
    let mut found: Vec<PairData<'a>> = Vec::new();
    let Some(limits) = input.objectives.first().map(|o| o.limits) else {
        return found;
    };
    let picks: Vec<usize> = candidates(input.options, input.single_scores)
        .into_iter()
        .filter(|i| input.options.get(*i).is_some_and(|o| o.hosts_job_precision))
        .collect();
    let batch = input.setup.global_batch;
    let steps = input.setup.steps(input.model);
    let grad_bytes = exchanged_gradient_bytes(input.model, input.setup);
    // The pairs that can run, in order: their caps decide the searches of each group.
    let mut pairs = Vec::new();
    for (k, &a) in picks.iter().enumerate() {
        for &b in picks.iter().skip(k + 1) {
            let (Some(pa), Some(pb)) = (input.options.get(a), input.options.get(b)) else {
                continue;
            };
            // Both groups run every op, the precision-sensitive ones too: a type with less
            // precise arithmetic than its partner would run them where a pipeline would not.
            if arithmetic_rank(pa) != arithmetic_rank(pb) {
                continue;
            }
            let (Some(oa), Some(ob)) = (input.objectives.get(a), input.objectives.get(b)) else {
                continue;
            };
            let Some(link) = pair_link(input, pa, pb, ruled_out) else {
                continue;
            };
            pairs.push((a, b, pa, pb, oa, ob, link));
        }
    }
    let mut pair_caps: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for (a, b, .., link) in &pairs {
        for option in [*a, *b] {
            let caps = pair_caps.entry(option).or_default();
            if !caps.contains(&link.max_devices) {
                caps.push(link.max_devices);
            }
        }
    }
    let mut searches = ShareSearch {
        input,
        limits,
        keep,
        pair_caps,
        found: BTreeMap::new(),
        kernels: input
            .options
            .iter()
            .map(|_| KernelShare::default())
            .collect(),
    };
    let grid = shares(batch);
    let run = SplitRun {
        batch,
        steps,
        grad_bytes,
        limits,
    };
    let mut pairings: Vec<Pairing<'a>> = pairs
        .into_iter()
        .map(|(a, b, pa, pb, oa, ob, link)| {
            // Each step, the whole gradient leaves each site once.
            let egress = (input.convert)(2.0 * grad_bytes * steps / 1e9 * link.egress_per_gb);
            let pair = PairObjective {
                economics: [oa.economics, ob.economics],
                transfer_s: oa.transfer_s.max(ob.transfer_s),
                fixed_cost: oa.transfer_cost + ob.transfer_cost + egress,
            };
            // Each share's floor ([`bound`]), most promising first.
            let floors = [pa, pb].map(|p| {
                let precision = setup_on(input.setup, p.device).precision;
                let fastest = crate::cost::fastest_flops(&p.cluster, precision);
                bound::GroupFloor::new(input.model, fastest, p.available.min(link.max_devices))
            });
            let mut pending: Vec<(f64, u32)> = grid
                .iter()
                .map(|&first| {
                    let sequences = [first, batch - first];
                    (
                        bound::share_floor(floors, sequences, &pair, &limits, steps),
                        first,
                    )
                })
                .collect();
            // Highest floor last, taken first from the end.
            pending.sort_by(|x, y| y.0.total_cmp(&x.0).then(y.1.cmp(&x.1)));
            Pairing {
                options: [a, b],
                placements: [pa, pb],
                link,
                pair,
                pending,
                kept: Vec::new(),
            }
        })
        .collect();
    // Rounds over every pair at once: each takes its most promising shares not yet searched
    // that its kept plans do not already beat (a share whose floor is above the pair's two kept
    // plans, and every share after it, can not rank: their searches never run), and the round's
    // searches run together on the threads. The first round takes at least two shares per pair
    // (four searches); each round after four times as many, since the first shares set the
    // bar, and fewer rounds keep the threads busier.
    // Two shares per pair first whatever the threads, so the rounds, and where the job's walk
    // cap stops them, do not depend on the machine.
    let mut per_round: usize = 2;
    loop {
        let rounds: Vec<Vec<(u32, f64)>> = pairings
            .iter_mut()
            .map(|p| p.next_shares(per_round, pruning))
            .collect();
        let wanted: BTreeSet<(usize, u32)> = pairings
            .iter()
            .zip(&rounds)
            .flat_map(|(p, round)| {
                let [a, b] = p.options;
                round
                    .iter()
                    .flat_map(move |&(first, _)| [(a, first), (b, batch - first)])
            })
            .collect();
        if wanted.is_empty() {
            break;
        }
        searches.prefetch(&wanted, input.threads);
        for (p, round) in pairings.iter_mut().zip(rounds) {
            for (first, floor) in round {
                p.cost_share(first, floor, &searches, &run);
            }
        }
        per_round = per_round.saturating_mul(4);
    }
    for mut p in pairings {
        found.append(&mut p.kept);
    }
    found.sort_by(|x, y| x.order(y));
    found
}

/// What every pairing of a split search shares: the batch, the run's steps, the gradient and
/// the job's limits.
struct SplitRun {
    batch: u32,
    steps: f64,
    grad_bytes: f64,
    limits: Limits,
}

/// One pair of groups under search: the shares it has yet to search and its best plans so far.
struct Pairing<'a> {
    options: [usize; 2],
    placements: [&'a Placement<'a>; 2],
    link: PairLink,
    pair: PairObjective,
    /// (floor, the first group's sequences) of the shares not yet searched, highest floor first.
    pending: Vec<(f64, u32)>,
    /// The [`KEEP_PER_PAIR`] best plans so far.
    kept: Vec<PairData<'a>>,
}

impl<'a> Pairing<'a> {
    /// Up to `count` shares to search next, lowest floor first, none whose floor is above both
    /// kept plans when `pruning` skips.
    fn next_shares(&mut self, count: usize, pruning: Pruning) -> Vec<(u32, f64)> {
        let bar = match self.kept.get(KEEP_PER_PAIR - 1) {
            Some(k) => k.score,
            None => f64::INFINITY,
        };
        // When the bar skips none of the shares left, searching them all at once keeps the
        // threads busiest.
        let count = match self.pending.first() {
            Some(&(highest, _)) if bar.is_finite() && highest <= bar => usize::MAX,
            _ => count,
        };
        let mut round = Vec::new();
        while round.len() < count
            && let Some(&(floor, first)) = self.pending.last()
        {
            if floor > bar && pruning.skips() {
                // Every share after it has a floor at least as high.
                self.pending.clear();
                break;
            }
            round.push((first, floor));
            self.pending.pop();
        }
        round
    }

    /// Costs every pairing of the two groups' kept layouts on `first` sequences of the first
    /// group and the rest on the second, keeping the best; each scores at or above `floor`.
    fn cost_share(
        &mut self,
        first: u32,
        floor: f64,
        searches: &ShareSearch<'_, '_, 'a>,
        run: &SplitRun,
    ) {
        let [a, b] = self.options;
        let cap = self.link.max_devices;
        let second = run.batch - first;
        let (ra, rb) = (searches.best(a, first, cap), searches.best(b, second, cap));
        for x in ra {
            for y in rb {
                let devices = [x.devices, y.devices];
                if x.devices + y.devices > cap {
                    continue;
                }
                let exchange_s =
                    exchange_seconds(run.grad_bytes, self.placements, devices, &self.link);
                let step_time_s = x.estimate.step_time_s.max(y.estimate.step_time_s) + exchange_s;
                let train_time_s = run.steps * step_time_s;
                let outcome = self.pair.outcome(devices, train_time_s);
                let split = PairData {
                    score: run.limits.score(&outcome),
                    pair: self.options,
                    placements: self.placements,
                    replicas: [x.clone(), y.clone()],
                    batches: [first, second],
                    exchange_s,
                    step_time_s,
                    train_time_s,
                    outcome,
                    fixed_cost: self.pair.fixed_cost,
                };
                // The share's floor holds under every plan of it (`bound`).
                debug_assert!(
                    split.score >= floor * (1.0 - 1e-12),
                    "{} below the floor {floor} of share {first}",
                    split.score
                );
                keep_best(&mut self.kept, split);
            }
        }
    }
}

impl PairData<'_> {
    /// Score, then pair, then the first group's share, then the layouts.
    pub(crate) fn order(&self, other: &Self) -> std::cmp::Ordering {
        self.score
            .total_cmp(&other.score)
            .then(self.pair.cmp(&other.pair))
            .then(self.batches.cmp(&other.batches))
            .then(self.replicas[0].layout.cmp(&other.replicas[0].layout))
            .then(self.replicas[1].layout.cmp(&other.replicas[1].layout))
    }
}

/// Keeps the [`KEEP_PER_PAIR`] best of one pair.
fn keep_best<'a>(kept: &mut Vec<PairData<'a>>, split: PairData<'a>) {
    let pos = kept
        .iter()
        .position(|k| split.order(k).is_lt())
        .unwrap_or(kept.len());
    if pos < KEEP_PER_PAIR {
        kept.insert(pos, split);
        kept.truncate(KEEP_PER_PAIR);
    }
}

/// Fills `plan` from the winning split `d`.
pub(crate) fn fill_pair_data_plan(
    plan: &mut Plan,
    job: &Job,
    d: &PairData<'_>,
    input: &PairInput<'_, '_>,
    currency: String,
) {
    plan.hetero = Some(Hetero::Data);
    let devices = d.devices();
    let [ra, rb] = &d.replicas;
    let mut layout = layout_ir(&ra.layout, input.setup);
    layout.data = u64::from(ra.layout.data) + u64::from(rb.layout.data);
    plan.layout = Some(layout);
    plan.groups = d
        .placements
        .iter()
        .zip(&d.replicas)
        .zip(d.batches)
        .enumerate()
        .map(|(k, ((o, r), batch))| {
            let l = &r.layout;
            let replica = l.replica_devices();
            let mut g = crate::plan::single::group_ir(o, r.devices, replica, l.tensor.into());
            g.tensor = Some(l.tensor.into());
            g.layout = Some(layout_ir(l, input.setup));
            g.sequences_per_step = Some(batch.into());
            // The group's run as its walk costed it: its share of the batch, on its device.
            let setup = TrainSetup {
                global_batch: batch,
                ..setup_on(input.setup, o.device)
            };
            let timing = StageTiming {
                model: input.model,
                setup: &setup,
                cluster: &o.cluster,
            };
            g.stages = homogeneous_stages(job, l, timing);
            for stage in &mut g.stages {
                stage.group = k as u64;
            }
            g
        })
        .collect();
    plan.stages = plan
        .groups
        .first()
        .map(|g| g.stages.clone())
        .unwrap_or_default();
    // The slower group paces the step; the exchange between the groups follows it.
    let pacing = if ra.estimate.step_time_s >= rb.estimate.step_time_s {
        ra
    } else {
        rb
    };
    let b = &pacing.estimate.breakdown;
    let run = PairRun {
        step_time_s: d.step_time_s,
        train_time_s: d.train_time_s,
        memory: if rb.estimate.memory.total > ra.estimate.memory.total {
            rb.estimate.memory
        } else {
            ra.estimate.memory
        },
        breakdown: BreakdownIr {
            compute: round(b.compute),
            tensor_comm: round(b.tensor_comm),
            pipeline_bubble: round(b.pipeline_bubble),
            data_comm: round(b.data_comm + d.exchange_s),
            other: round(b.other),
        },
    };
    plan.estimate = Some(pair_estimate(
        input,
        d.placements,
        devices,
        &run,
        &d.outcome,
        currency,
    ));
    fill_pair_data(plan, input, d.placements, devices, d.train_time_s);
    let all = f64::from(d.batches[0] + d.batches[1]).max(1.0);
    let shares = d.batches.map(|b| f64::from(b) / all);
    let memory = [ra.estimate.memory, rb.estimate.memory];
    super::fill_group_figures(plan, input, d.placements, shares, memory);
}

mod bound;
#[cfg(test)]
mod tests;
