//! Whether a two-group configuration could hold its stages in memory at all: how far each
//! group's stages reach along the chain, each holding its ops with one micro-batch in flight,
//! so that a configuration no split of which fits is refused before it is partitioned; and,
//! for one configuration, the same with each stage holding the micro-batches it holds at its
//! peak, before its partition.

use super::{Stager, last_index, minmax};

/// How far each group's stages can cover the chain in memory, by their number, as far as
/// worked out so far ([`Stager::reach_further`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(in crate::plan::pair::pipeline) struct MemoryReach {
    /// The farthest cut the first group's `s` stages reach from the chain's start, by `s`.
    from_start: Vec<usize>,
    /// The earliest cut from which the second group's `s` stages reach the chain's end, by `s`.
    from_end: Vec<usize>,
    /// Whether one more of the first group's stages reaches no farther: the greedy cut from
    /// the same cut gives the same cut, so every count past the last listed reaches as far.
    start_settled: bool,
    /// The same for the second group's stages from the chain's end.
    end_settled: bool,
}

impl MemoryReach {
    /// Whether some partition of `stages` (per group) could hold every stage in memory:
    /// `Some(false)` only when none can; `None` until the reach has been extended to these
    /// stage counts ([`Stager::reach_further`] of a configuration with them).
    pub(in crate::plan::pair::pipeline) fn admits(&self, stages: [u32; 2]) -> Option<bool> {
        let [s0, s1] = stages.map(|s| s as usize);
        let at = |reach: &[usize], s: usize, settled: bool| {
            reach
                .get(s)
                .or_else(|| reach.last().filter(|_| settled))
                .copied()
        };
        match (
            at(&self.from_start, s0, self.start_settled),
            at(&self.from_end, s1, self.end_settled),
        ) {
            (Some(reach), Some(start)) => Some(start <= reach),
            _ => None,
        }
    }
}

impl Stager<'_, '_> {
    /// Ops `[i, j)` as a stage of group `g` holding one micro-batch in flight, the fewest any
    /// stage holds ([`crate::workload::Layout::in_flight`]): whether they can run there,
    /// hosted and in memory under some recomputation. Ops that fit as any stage of the group
    /// fit so, and so does any part of them (a stage's memory only grows with its ops and with
    /// the micro-batches it holds).
    fn fits_alone(&self, g: usize, i: usize, j: usize) -> bool {
        self.least_fitting(g, i, j, 1.0).is_some()
    }

    /// Extends `reach` to `upto` stages of each group (this configuration's, or more): how
    /// far each group's stages can cover the chain with every stage fitting
    /// ([`Stager::fits_alone`]), by their number `s`: the farthest cut the first group's `s`
    /// stages reach from the chain's start, cut greedily, and the earliest cut from which the
    /// second group's `s` stages cover the rest, cut greedily from the end. Greedy cuts reach
    /// as far as any partition's (each of its stages contains the part beyond the greedy's
    /// previous cut, which then fits too), so a configuration of `s0` and `s1` stages has a
    /// partition whose stages all fit only if the second group's start is at or before the
    /// first group's reach ([`MemoryReach::admits`]). The stage counts enter only as how many
    /// greedy cuts to take, so the reach serves every configuration of one tensor degree per
    /// group, micro-batch, data degree and ZeRO stage. A side stops once a stage more reaches
    /// no farther (each greedy cut depends on the cut before alone).
    pub(in crate::plan::pair::pipeline) fn reach_further(
        &self,
        reach: &mut MemoryReach,
        upto: [u32; 2],
    ) {
        let [s0, s1] = upto.map(|s| s as usize);
        let cuts = self.cuts();
        let m = cuts.len();
        let at = |c: usize| cuts.get(c).copied().unwrap_or(usize::MAX);
        if reach.from_start.is_empty() {
            reach.from_start.push(0);
        }
        while !reach.start_settled && reach.from_start.len() <= s0 {
            let from = reach.from_start.last().copied().unwrap_or(0);
            let next = last_index(from + 1, m, |j| self.fits_alone(0, at(from), at(j)));
            let reached = from.max(next);
            reach.start_settled = reached == from;
            reach.from_start.push(reached);
        }
        if reach.from_end.is_empty() {
            reach.from_end.push(m.saturating_sub(1));
        }
        while !reach.end_settled && reach.from_end.len() <= s1 {
            let to = reach.from_end.last().copied().unwrap_or(0);
            let next = minmax::first_index(0, to, |c| self.fits_alone(1, at(c), at(to)));
            reach.end_settled = next == to;
            reach.from_end.push(next);
        }
    }
}

impl Stager<'_, '_> {
    /// Whether some partition of this configuration could hold every stage in memory with the
    /// micro-batches it holds at its peak under 1F1B ([`crate::workload::Layout::in_flight`]:
    /// the first stage the most, the last one): `false` only when none can, so that a
    /// configuration is not partitioned to find nothing. [`MemoryReach`] asks the same with
    /// one micro-batch in every stage, which serves every stage count at once but lets through
    /// the configurations whose early stages hold too many: a 278-block job of 81,921-token
    /// sequences partitioned thousands of them, each in hundreds of stage costings.
    ///
    /// With a finite `cap` (the slowest pace a partition may have and be of use), each stage
    /// must also have its floor under the recomputation it needs to fit ([`Stager::floor`]
    /// at that rank) at or below the cap: a partition under the cap has every stage's pace
    /// there, and the floor is below the pace. The cap-free floor bound
    /// ([`Stager::least_slowest_if`]) counts neither memory nor the recomputation it forces:
    /// a 278-block cost-goal job of 4,096-wide blocks let through 25,000 configurations that
    /// the min-max programme then partitioned to find none under the cap, 1,400 stage costings
    /// each. A stage that needs a recomputation needs it, or more, with more ops, and the
    /// floor never falls as a stage grows, so the test holds for any part of what it holds
    /// for, as the greedy cuts need.
    ///
    /// The greedy cuts of [`Stager::reach_further`], stage by stage, each stage holding its own
    /// micro-batches ([`boundary_between_greedy_cuts`]): a few stage memories per stage, no
    /// stage costing.
    pub(in crate::plan::pair::pipeline) fn may_hold_stages(&self, cap: f64) -> bool {
        let cuts = self.cuts();
        let m = cuts.len();
        let [s0, s1] = self.shape.stages.map(|s| s as usize);
        let at = |c: usize| cuts.get(c).copied().unwrap_or(usize::MAX);
        let fits = |k: usize, from: usize, to: usize| {
            let g = usize::from(k >= s0);
            let Some(per) = self.per_side.get(g) else {
                return false;
            };
            let in_flight = per.layout.in_flight(k as u32, self.micro_batches);
            let (i, j) = (at(from), at(to));
            self.least_fitting(g, i, j, in_flight)
                .is_some_and(|(rank, _)| !cap.is_finite() || self.floor(k, i, j, rank) <= cap)
        };
        // Each stage holds its own micro-batches: one that cannot reach past the last cut
        // leaves the next, which holds fewer, its chance.
        boundary_between_greedy_cuts(m, [s0, s1], fits, false)
    }
}

/// Whether `m` cuts could be partitioned into `s0` stages of the first group then `s1` of the
/// second with every stage passing `fits(k, from, to)` (stage `k` over cuts `[from, to)`), a
/// test that holds for any part of the ops it holds for: the first group's stages cut greedily
/// from the chain's start, each as far as it passes, the second group's from the end, and the
/// boundary between the groups must lie between the two with a cut left for every stage.
/// Every passing partition ends each first-group stage at or before the greedy reach of that
/// many stages and starts each second-group stage at or after the greedy start, so `false` only
/// when none passes. `alike` says every stage of a group is tested alike, so that a stage that
/// reaches no farther than the one before ends the group's greedy cuts.
// Inlined: the floor bound's bisection calls it with its own test many times a configuration
// (1 % more instructions on the slowest pipeline inputs as a call).
#[inline]
pub(super) fn boundary_between_greedy_cuts(
    m: usize,
    [s0, s1]: [usize; 2],
    fits: impl Fn(usize, usize, usize) -> bool,
    alike: bool,
) -> bool {
    if m < s0 + s1 + 1 {
        return false;
    }
    // The farthest cut the first group's stages reach from the chain's start.
    let mut reach = 0;
    for k in 0..s0 {
        let next = last_index(reach + 1, m, |j| fits(k, reach, j));
        if next <= reach && alike {
            break;
        }
        reach = reach.max(next);
    }
    // The earliest cut from which the second group's stages cover the rest.
    let mut start = m - 1;
    for k in (s0..s0 + s1).rev() {
        let next = minmax::first_index(0, start, |c| fits(k, c, start));
        if next >= start && alike {
            break;
        }
        start = start.min(next);
    }
    start.max(s0) <= reach.min(m - 1 - s1)
}
