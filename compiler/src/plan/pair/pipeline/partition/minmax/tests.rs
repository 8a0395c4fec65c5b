//! The min-max partition against the dynamic programme that costs every end, and against the
//! scanning programme it replaced, on random chains whose stages behave like the planner's:
//! small integer op times (so ties are common), two groups with their own speeds, ops one group
//! cannot host, a memory limit per stage, a send after every stage but the last and, on some
//! chains, a gradient reduction that a longer stage hides better (so a stage's time may dip as
//! it grows).

use super::{
    StageTimes, min_max_partition, min_max_partition_by_scan, min_max_partition_exhaustive,
};
use proptest::prelude::*;

/// A random chain: per op, its time on each group (`None`: the group cannot host it), its
/// memory and its gradient bytes; per group, the memory limit; the send after a stage; the
/// stages on the first group; whether the exposed reduction shrinks as a stage grows.
#[derive(Debug, Clone)]
struct Chain {
    ops: Vec<([Option<u32>; 2], u32, u32)>,
    limits: [u32; 2],
    send: [u32; 2],
    first_group_stages: usize,
    stages: usize,
    dips: bool,
}

impl Chain {
    /// Stage `k` over ops `[from, to)`: its time and its rank (1 when it holds over half its
    /// group's memory and recomputes, at half again the compute).
    fn costs(&self, k: usize, from: usize, to: usize) -> Option<(f64, usize)> {
        let g = usize::from(k >= self.first_group_stages);
        let (mut time, mut memory, mut gradients) = (0u32, 0u32, 0u32);
        for (times, mem, grad) in self.ops.get(from..to)? {
            time += (*times.get(g)?)?;
            memory += mem;
            gradients += grad;
        }
        // The first stage also holds the embedding's memory, as the planner's does.
        if from == 0 {
            memory += 1;
        }
        if memory > *self.limits.get(g)? {
            return None;
        }
        let send = if k + 1 == self.stages {
            0
        } else {
            *self.send.get(g)?
        };
        let rank = usize::from(2 * memory > *self.limits.get(g)?);
        let compute = f64::from(time) * if rank == 1 { 1.5 } else { 1.0 };
        // The reduction not hidden behind the stage's backward: less per op as it grows.
        let exposed = if self.dips {
            f64::from(gradients) / (to - from) as f64
        } else {
            0.0
        };
        Some((compute + f64::from(send) + exposed, rank))
    }

    fn paced(&self, k: usize, from: usize, to: usize) -> Option<f64> {
        self.costs(k, from, to).map(|c| c.0)
    }

    /// The floor of any stage of rank `rank` or more: where it cannot run, what it would
    /// compute and send.
    fn floor(&self, k: usize, from: usize, to: usize, rank: usize) -> f64 {
        let g = usize::from(k >= self.first_group_stages);
        let time: u32 = self
            .ops
            .get(from..to)
            .unwrap_or(&[])
            .iter()
            .map(|(times, _, _)| times[g].unwrap_or(0))
            .sum();
        let send = if k + 1 == self.stages {
            0
        } else {
            self.send[g]
        };
        f64::from(time) * if rank >= 1 { 1.5 } else { 1.0 } + f64::from(send)
    }

    fn fast(&self) -> Option<Vec<usize>> {
        self.capped(f64::INFINITY)
    }

    /// The partition held to `cap`.
    fn capped(&self, cap: f64) -> Option<Vec<usize>> {
        let mut paced = |k, i, j| self.costs(k, i, j);
        let floor = |k, i, j, rank| self.floor(k, i, j, rank);
        let mut times = StageTimes {
            paced: &mut paced,
            floor: &floor,
        };
        min_max_partition(self.ops.len() + 1, self.stages, &mut times, cap)
    }

    /// The slowest stage of a partition given by its ends.
    fn slowest(&self, ends: &[usize]) -> f64 {
        let mut from = 0;
        let mut slowest = 0.0f64;
        for (k, &to) in ends.iter().enumerate() {
            slowest = slowest.max(self.paced(k, from, to).unwrap_or(f64::INFINITY));
            from = to;
        }
        slowest
    }
}

fn chain(max_ops: usize, max_stages: usize) -> impl Strategy<Value = Chain> {
    let op = (
        prop::option::weighted(0.9, 0u32..6),
        prop::option::weighted(0.9, 0u32..6),
        0u32..4,
        0u32..12,
    )
        .prop_map(|(a, b, m, g)| ([a, b], m, g));
    (
        prop::collection::vec(op, 1..max_ops),
        (3u32..40, 3u32..40),
        (0u32..3, 0u32..3),
        1usize..max_stages,
        0usize..max_stages,
        any::<bool>(),
    )
        .prop_map(|(ops, limits, send, stages, first, dips)| Chain {
            ops,
            limits: [limits.0, limits.1],
            send: [send.0, send.1],
            first_group_stages: first.min(stages),
            stages,
            dips,
        })
}

/// The least slowest stage over every way to cut the chain.
fn brute_force(chain: &Chain) -> Option<f64> {
    fn go(chain: &Chain, k: usize, from: usize, m: usize) -> Option<f64> {
        if from + 1 >= m {
            return None;
        }
        if k + 1 == chain.stages {
            return chain.paced(k, from, m - 1);
        }
        (from + 1..m - 1)
            .filter_map(|to| Some(chain.paced(k, from, to)?.max(go(chain, k + 1, to, m)?)))
            .min_by(f64::total_cmp)
    }
    go(chain, 0, 0, chain.ops.len() + 1)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn the_partition_is_the_exhaustive_programmes_ties_included(chain in chain(40, 10)) {
        let exhaustive = min_max_partition_exhaustive(
            chain.ops.len() + 1,
            chain.stages,
            &mut |k, i, j| chain.paced(k, i, j),
        );
        prop_assert_eq!(chain.fast(), exhaustive);
    }

    #[test]
    fn the_partition_is_the_old_scans_where_stages_never_dip(chain in chain(40, 10)) {
        let chain = Chain { dips: false, ..chain };
        let scan = min_max_partition_by_scan(
            chain.ops.len() + 1,
            chain.stages,
            &mut |k, i, j| chain.paced(k, i, j),
        );
        prop_assert_eq!(chain.fast(), scan);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn a_cap_at_or_above_the_optimum_changes_nothing_and_below_it_finds_nothing(
        chain in chain(40, 10),
        above in 0u32..4,
    ) {
        let uncapped = chain.fast();
        let Some(ends) = uncapped.clone() else {
            prop_assert_eq!(chain.capped(0.0), None);
            return Ok(());
        };
        let optimum = chain.slowest(&ends);
        // At the optimum itself, ties included, and above it: the same ends. (Not always in
        // fewer costings on such short chains: a skipped start moves the next start's galloping
        // hint; `a_long_chain_costs_few_stages_per_start` measures the saving.)
        for cap in [optimum, optimum + f64::from(above) + 0.5] {
            prop_assert_eq!(&chain.capped(cap), &uncapped, "cap {}", cap);
        }
        // Below it no partition is of use.
        let below = optimum * (1.0 - 1e-6) - 1e-9;
        prop_assert_eq!(chain.capped(below), None);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn the_partition_reaches_the_brute_force_optimum(chain in chain(12, 6)) {
        let fast = chain.fast().map(|ends| chain.slowest(&ends));
        prop_assert_eq!(fast, brute_force(&chain));
    }
}

#[test]
fn a_long_chain_costs_few_stages_per_start() {
    // 4,001 cuts into 16 stages (6 on a group that takes 3 per op, 10 on one that takes 5, at
    // most 400 ops a stage): the exhaustive programme costs millions of stages, the search a
    // few per start.
    let (m, p, first) = (4001, 16, 6);
    let time = |k: usize, i: usize, j: usize| {
        let ops = (j - i) as f64;
        if k < first {
            3.0 * ops + 1.0
        } else {
            5.0 * ops + 2.0
        }
    };
    let paced = |k: usize, i: usize, j: usize| (j - i <= 400).then(|| time(k, i, j));
    let mut costed = 0u64;
    let mut counted = |k, i, j| {
        costed += 1;
        paced(k, i, j).map(|x| (x, 0))
    };
    let floor = |k, i, j, _| time(k, i, j);
    let mut times = StageTimes {
        paced: &mut counted,
        floor: &floor,
    };
    let fast = min_max_partition(m, p, &mut times, f64::INFINITY);
    assert!(fast.is_some());
    assert!(costed < (p * m * 4) as u64, "{costed} stage costings");
    let exhaustive = min_max_partition_exhaustive(m, p, &mut |k, i, j| paced(k, i, j));
    assert_eq!(fast, exhaustive);
    // Held to its own optimum the search costs only the starts a partition under it can use:
    // 6 stages of at most (x − 1)/3 ops from the start and 10 of (x − 2)/5 to the end, so
    // each stage's starts lie in a band a few hundred cuts wide, not the whole chain.
    let ends = fast.unwrap_or_default();
    let optimum = (0..p)
        .map(|k| {
            let from = if k == 0 { 0 } else { ends[k - 1] };
            time(k, from, ends[k])
        })
        .fold(0.0, f64::max);
    let mut capped_costings = 0u64;
    let mut counted = |k, i, j| {
        capped_costings += 1;
        paced(k, i, j).map(|x| (x, 0))
    };
    let mut times = StageTimes {
        paced: &mut counted,
        floor: &floor,
    };
    let capped = min_max_partition(m, p, &mut times, optimum);
    assert_eq!(capped, Some(ends));
    assert!(
        capped_costings * 4 < costed,
        "{capped_costings} costings held to the optimum, {costed} without"
    );
}

#[test]
fn a_chain_no_partition_fits_is_refused_in_one_costing_and_one_floor_per_start() {
    // 2,001 cuts into 8 stages where no stage may hold more than one op (the planner's stages
    // that overflow memory): 2,000 ops cannot be covered, and every start of every row is
    // answered by costing its one possible end (the first whose rest runs), which does not run,
    // and one floor. Row r (the last r stages) has a single start with a rest, cut m − 1 − r,
    // so the rows together cost at most p · m stages; the old band walked every end of every
    // start of the last row, floors included: about m²/2 = 2 million.
    let (m, p) = (2001, 8);
    let mut costed = 0u64;
    let mut counted = |_: usize, i: usize, j: usize| {
        costed += 1;
        (j - i == 1).then_some((1.0, 0))
    };
    let floors = std::cell::Cell::new(0u64);
    let floor = |_: usize, i: usize, j: usize, _: usize| {
        floors.set(floors.get() + 1);
        (j - i) as f64
    };
    let mut times = StageTimes {
        paced: &mut counted,
        floor: &floor,
    };
    assert_eq!(min_max_partition(m, p, &mut times, f64::INFINITY), None);
    assert!(costed <= (p * m) as u64, "{costed} stage costings");
    assert!(floors.get() <= (p * m) as u64, "{} floors", floors.get());
    let exhaustive = min_max_partition_exhaustive(m, p, &mut |_, i, j| (j - i == 1).then_some(1.0));
    assert_eq!(exhaustive, None);
}
