//! The min-max partition of a chain of cut points into a fixed number of stages: which cuts make
//! the slowest stage as fast as it can be, in a few stage costings per start instead of costing
//! every end of every stage (`O(p · m²)`).
//!
//! The chain has `m` cut points `0..m`; stage `k` of `p` runs from one cut to a later one, the
//! first stage starts at cut 0 and the last ends at cut `m − 1`. `best[r][c]` is the slowest stage
//! of the best split of cuts `[c, m − 1]` into the last `r` stages, and stage `k = p − r` starting
//! at `c` ends at the *first* `j` minimising `max(paced(k, c, j), best[r − 1][j])`: exactly the
//! dynamic programme that costed every end, ties included. The one thing assumed is that a stage
//! that cannot run to an end cannot run to a later one (more ops hold more memory).
//!
//! How, per start: a galloping search from the previous start's crossing finds where the stage's
//! time meets the best rest, which gives a slowest stage `good` that some end reaches (usually
//! in two or three costings). The best end then lies in a band: from the first end whose rest is
//! no slower than `good` (a sparse table of range minima of the rest) to the last whose *floor*
//! is no slower (the stage's compute and sends, a lower bound on its time that never decreases;
//! the time itself may dip as a stage grows, because a longer backward hides more of the
//! gradient reduction). The band's ends are costed in order, skipping those that cannot beat the
//! best found and stopping when nothing later can.

/// The range minima of one row of `best`, for inclusive ranges in `O(1)`.
struct RangeMin {
    /// `levels[l][i]` is the least of the `2^l` values from `i`.
    levels: Vec<Vec<f64>>,
}

impl RangeMin {
    /// The table of `values`, built in the vectors of the last table (one row after another
    /// of the programme allocates nothing new).
    fn fill(&mut self, values: &[f64]) {
        let mut width = 1;
        let mut level = 0;
        loop {
            if self.levels.len() <= level {
                self.levels.push(Vec::new());
            }
            let (lower, upper) = self.levels.split_at_mut(level);
            let Some(into) = upper.first_mut() else {
                break;
            };
            into.clear();
            match lower.last() {
                None => into.extend_from_slice(values),
                Some(below) => into.extend(
                    below
                        .iter()
                        .zip(below.iter().skip(width / 2))
                        .map(|(a, b)| a.min(*b)),
                ),
            }
            if width * 2 > values.len() {
                break;
            }
            width *= 2;
            level += 1;
        }
        self.levels.truncate(level + 1);
    }

    /// The least value over `[from, to]` (`to ≥ from`).
    fn min(&self, from: usize, to: usize) -> f64 {
        let len = to.saturating_sub(from) + 1;
        let level = (usize::BITS - 1 - len.leading_zeros()) as usize;
        let Some(values) = self.levels.get(level) else {
            return f64::INFINITY;
        };
        let at = |i: usize| values.get(i).copied().unwrap_or(f64::INFINITY);
        at(from).min(at((to + 1).saturating_sub(1 << level)))
    }
}

/// What costing one end of a stage said, for the crossing search.
#[derive(Clone, Copy)]
enum Probe {
    /// The stage is faster than the best rest can be: a later end may still do better.
    Before,
    /// The stage is no slower than the best rest up to this end.
    Crossed,
    /// The stage cannot run to this end (or the end is past the last allowed one).
    Stop,
}

impl Probe {
    fn at_or_after(self) -> bool {
        !matches!(self, Probe::Before)
    }
}

/// How a stage is costed: `paced(k, from, to)` is the time of stage `k` over cuts `[from, to)`
/// and its *rank* (the planner's: the recomputation it needs), `None` when it cannot run there
/// (and then at no later end either); ranks never fall as `to` grows. `floor(k, from, to, rank)`
/// is a cheap lower bound on the time of any end from `to` on whose rank is at least `rank`,
/// and never decreases as `to` grows (the time itself may: a longer backward hides more of the
/// gradient reduction).
pub(in crate::plan::pair::pipeline) struct StageTimes<'f> {
    pub(in crate::plan::pair::pipeline) paced:
        &'f mut dyn FnMut(usize, usize, usize) -> Option<(f64, usize)>,
    pub(in crate::plan::pair::pipeline) floor: &'f dyn Fn(usize, usize, usize, usize) -> f64,
}

/// The stage ends (cut indices, increasing, the last `m − 1`) of the min-max partition of
/// `m` cuts into `p` stages, or `None` when no partition runs or none has its slowest stage at
/// or below `cap`.
///
/// `cap` is what a partition must reach to be of use (the planner's: to join the plans it
/// keeps; `+∞` for any). The programme is exact for every cell at or below it and leaves the
/// others unbounded, so the partition it returns is the uncapped one whenever that one is at or
/// below `cap`: the cells of its path are no slower than it. What the cap saves is the starts
/// no partition under it can use: stage `k` cannot start past the farthest cut `k` stages reach
/// when each is held to the cap by its floor (a lower bound on its time), nor where every end
/// leaves a rest slower than the cap.
pub(in crate::plan::pair::pipeline) fn min_max_partition(
    m: usize,
    p: usize,
    times: &mut StageTimes<'_>,
    cap: f64,
) -> Option<Vec<usize>> {
    if p == 0 || m < p + 1 {
        return None;
    }
    let last = m - 1;
    let inf = f64::INFINITY;
    let reach = reach_under(m, p, times.floor, cap);
    // Row 0: nothing left to split once the chain's end is reached.
    let mut rest = vec![inf; m];
    *rest.get_mut(last)? = 0.0;
    // ends[(r − 1)·m + c]: where stage p − r ends when it starts at cut c.
    let mut ends = vec![last; p * m];
    // Buffers every row reuses: its best cells, its rest's range minima, the first end under
    // the cap from each end, and the stages a start costed.
    let mut best = vec![inf; m];
    let mut table = RangeMin { levels: Vec::new() };
    let mut under = Vec::new();
    let mut costed = Vec::new();
    let mut finite = Vec::new();
    for r in 1..=p {
        let k = p - r;
        table.fill(&rest);
        // By end, the first end from it on whose rest is finite (`m` for none).
        finite.clear();
        finite.resize(m + 1, m);
        for j in (0..m).rev() {
            let next = if rest.get(j).is_some_and(|x| x.is_finite()) {
                j
            } else {
                finite.get(j + 1).copied().unwrap_or(m)
            };
            *finite.get_mut(j)? = next;
        }
        let row = Row {
            k,
            last_end: m - r,
            rest: &rest,
            table: &table,
            finite: &finite,
        };
        best.fill(inf);
        let end = ends.get_mut((r - 1) * m..r * m)?;
        // Stage k starts at a cut with k cuts before it and leaves r − 1 segments after; the
        // first stage starts at the chain's start only.
        let latest = reach.get(k).copied().unwrap_or(last).min(row.last_end - 1);
        let starts = if k == 0 { 0..=0 } else { k..=latest };
        let mut hint = 0;
        // By end, the first end from it on whose rest is under the cap (`m` for none).
        if cap.is_finite() {
            under.clear();
            under.resize(m + 1, m);
            for j in (0..=row.last_end).rev() {
                let next = if rest.get(j).is_some_and(|x| *x <= cap) {
                    j
                } else {
                    under.get(j + 1).copied().unwrap_or(m)
                };
                *under.get_mut(j)? = next;
            }
        }
        for c in starts {
            // No end both keeps the stage's floor under the cap and leaves a rest under it: the
            // floor never decreases as the end grows, so the first end whose rest is under the
            // cap is the one to try.
            if cap.is_finite() {
                let next = under.get(c + 1).copied().unwrap_or(m);
                if next > row.last_end || (times.floor)(k, c, next, 0) > cap {
                    continue;
                }
            }
            let (least, at, crossing) = row.best_end(c, hint, times, cap, &mut costed);
            hint = crossing;
            if least <= cap {
                *best.get_mut(c)? = least;
                *end.get_mut(c)? = at;
            }
        }
        // No start of this row has a partition of the stages from `k` on: neither has any
        // start of an earlier row, whose every end leaves such a rest.
        if best.iter().all(|x| x.is_infinite()) {
            return None;
        }
        std::mem::swap(&mut rest, &mut best);
    }
    if !rest.first()?.is_finite() {
        return None;
    }
    let mut stages = Vec::with_capacity(p);
    let mut c = 0;
    for r in (1..=p).rev() {
        c = *ends.get((r - 1) * m + c)?;
        stages.push(c);
    }
    Some(stages)
}

/// The stages one start costed, by end: `(end, what costing it said)`.
type Costed = Vec<(usize, Option<(f64, usize)>)>;

/// One row of the programme: stage `k`, which may end at cuts up to `last_end`, before the best
/// splits `rest` of what follows.
struct Row<'r> {
    k: usize,
    last_end: usize,
    rest: &'r [f64],
    table: &'r RangeMin,
    /// By end, the first end from it on whose rest is finite.
    finite: &'r [usize],
}

impl Row<'_> {
    /// The best end of stage `k` starting at cut `c`: the least slowest stage, the first end
    /// that gives it, and where the galloping search met the crossing (the next start's hint).
    fn best_end(
        &self,
        c: usize,
        hint: usize,
        times: &mut StageTimes<'_>,
        cap: f64,
        costed: &mut Costed,
    ) -> (f64, usize, usize) {
        let (k, lo, last_end) = (self.k, c + 1, self.last_end);
        let inf = f64::INFINITY;
        let rest_at = |j: usize| self.rest.get(j).copied().unwrap_or(inf);
        let (paced, floor) = (&mut *times.paced, times.floor);
        let floor = |j: usize, rank: usize| floor(k, c, j, rank);
        // Every stage costed here, so that the band below costs none twice.
        costed.clear();
        let mut cost = |j: usize, costed: &mut Costed| {
            if let Some((_, x)) = costed.iter().find(|(at, _)| *at == j) {
                return *x;
            }
            let x = paced(k, c, j);
            costed.push((j, x));
            x
        };
        // 1. A good slowest stage: near where the stage's time crosses the best rest, found
        //    by galloping out from the previous start's crossing.
        let mut probe = |j: usize| -> Probe {
            if j > last_end {
                return Probe::Stop;
            }
            match cost(j, &mut *costed) {
                None => Probe::Stop,
                Some((x, _)) if x >= self.table.min(lo, j) => Probe::Crossed,
                Some(_) => Probe::Before,
            }
        };
        // Before the first end whose rest can run, every end leaves an infinite slowest stage:
        // none of them is worth a costing, and with no such end the start has no partition.
        let finite = self
            .finite
            .get(lo)
            .copied()
            .unwrap_or(last_end + 1)
            .min(last_end + 1);
        if finite > last_end {
            return (inf, last_end, hint);
        }
        let crossing = first_crossing(finite, last_end + 1, hint.max(finite), &mut probe);
        // Held to the cap: an end slower than it is of no use, and the band below is exact for
        // every end at or under it.
        let good = costed
            .iter()
            .filter_map(|(j, x)| Some(x.as_ref()?.0.max(rest_at(*j))))
            .fold(inf, f64::min)
            .min(cap);
        // 2. The band of ends that could do as well: the rest no slower than `good` from the
        //    first such end on, the stage's floor no slower up to the last. Every end in it is
        //    costed in order, skipping those that cannot beat the best found; the first end of
        //    the least slowest stage is the answer, ties included.
        let first = if good < inf {
            first_index(lo, last_end + 1, |j| self.table.min(lo, j) <= good)
        } else {
            // Every rest is at most an unbounded `good` (none is NaN: only paces under the cap
            // are kept).
            lo
        };
        // Every end from `first` on ranks at least as high as any costed before it.
        let mut rank = costed
            .iter()
            .filter(|(j, _)| *j <= first)
            .filter_map(|(_, x)| Some(x.as_ref()?.1))
            .max()
            .unwrap_or(0);
        // No end from the first that cannot run on can run either.
        let runs_to = costed
            .iter()
            .filter(|(_, x)| x.is_none())
            .map(|(j, _)| *j)
            .fold(last_end + 1, usize::min);
        let past = if good < inf {
            first_index(first, runs_to.max(first), |j| floor(j, rank) > good)
        } else {
            // No floor is above an unbounded `good`.
            runs_to.max(first)
        };
        let (mut least, mut at) = (inf, last_end);
        for j in first..past {
            // Nothing from here on can beat the best found (or reach `good`).
            let bound = floor(j, rank).max(self.table.min(j, past - 1));
            if bound > good || bound >= least {
                break;
            }
            let rest = rest_at(j);
            if rest > good || rest >= least {
                continue;
            }
            let Some((x, ranked)) = cost(j, &mut *costed) else {
                break;
            };
            rank = rank.max(ranked);
            let worst = x.max(rest);
            if worst < least {
                (least, at) = (worst, j);
            }
        }
        (least, at, crossing)
    }
}

/// For each stage `k`, the latest cut it can start at in a partition whose stages are all at
/// or below `cap`: stage 0 starts at cut 0, and stage `k + 1` no later than the last end whose
/// floor from stage `k`'s latest start is at or below the cap (the floor never decreases as the
/// end grows nor as the start falls, so no earlier start reaches farther). With an unbounded cap,
/// every cut.
fn reach_under(
    m: usize,
    p: usize,
    floor: &dyn Fn(usize, usize, usize, usize) -> f64,
    cap: f64,
) -> Vec<usize> {
    let last = m.saturating_sub(1);
    let mut reach = Vec::with_capacity(p);
    let mut start = 0;
    for k in 0..p {
        reach.push(start);
        if !cap.is_finite() {
            start = last;
            continue;
        }
        // The first end past the cap, less one: the last end the stage can reach.
        let past = first_index(start + 1, m, |j| floor(k, start, j, 0) > cap);
        start = past.saturating_sub(1).max(start);
    }
    reach
}

/// The first `j` in `[lo, stop)` where `holds` does (`stop` when it never does), for a
/// predicate that, once true, stays true.
pub(super) fn first_index(lo: usize, stop: usize, holds: impl Fn(usize) -> bool) -> usize {
    let (mut below, mut above) = (lo, stop);
    while below < above {
        let mid = below + (above - below) / 2;
        if holds(mid) {
            above = mid;
        } else {
            below = mid + 1;
        }
    }
    below
}

/// The first `j` in `[lo, stop)` whose probe is at or after the crossing (`stop` when none is),
/// galloping out from `hint` (the previous start's crossing, which only moves forward while
/// stages get no slower as they lose ops at their start). A stage time that dips as it grows
/// makes the answer a good place, not always the first: [`Row::best_end`] needs no more.
fn first_crossing(
    lo: usize,
    stop: usize,
    hint: usize,
    probe: &mut dyn FnMut(usize) -> Probe,
) -> usize {
    let hint = hint.clamp(lo, stop);
    // `below` is the last end known before the crossing (or lo − 1), `above` the first known at
    // or after it.
    let (mut below, mut above);
    if hint >= stop || probe(hint).at_or_after() {
        above = hint;
        below = lo.wrapping_sub(1);
        let mut step = 1;
        while above > lo {
            let j = above.saturating_sub(step).max(lo);
            if probe(j).at_or_after() {
                above = j;
                step *= 2;
            } else {
                below = j;
                break;
            }
        }
    } else {
        below = hint;
        above = stop;
        let mut step = 1;
        loop {
            let j = below + step;
            if j >= stop {
                break;
            }
            if probe(j).at_or_after() {
                above = j;
                break;
            }
            below = j;
            step *= 2;
        }
    }
    // Bisect the open interval (below, above).
    while above.wrapping_sub(below) > 1 {
        let mid = below.wrapping_add(above.wrapping_sub(below) / 2);
        if probe(mid).at_or_after() {
            above = mid;
        } else {
            below = mid;
        }
    }
    above
}

/// The dynamic programme this module replaces, kept as the reference its tests compare with:
/// for every start, scan the ends from the nearest until the stage cannot run or is no faster
/// than the best found.
#[cfg(test)]
pub(in crate::plan::pair::pipeline) fn min_max_partition_by_scan(
    m: usize,
    p: usize,
    paced: &mut dyn FnMut(usize, usize, usize) -> Option<f64>,
) -> Option<Vec<usize>> {
    reference_programme(m, p, paced, true)
}

/// The programme without the scan's early stop: every end of every stage up to the first that
/// cannot run. What [`min_max_partition`] must equal exactly, ties included.
#[cfg(test)]
pub(in crate::plan::pair::pipeline) fn min_max_partition_exhaustive(
    m: usize,
    p: usize,
    paced: &mut dyn FnMut(usize, usize, usize) -> Option<f64>,
) -> Option<Vec<usize>> {
    reference_programme(m, p, paced, false)
}

/// The old programme, as it was written: `stop_early` stops a start's scan at the first end no
/// faster than the best found (the replaced code), else at the first that cannot run.
#[cfg(test)]
#[allow(clippy::needless_range_loop)] // the old programme, as it was written
fn reference_programme(
    m: usize,
    p: usize,
    paced: &mut dyn FnMut(usize, usize, usize) -> Option<f64>,
    stop_early: bool,
) -> Option<Vec<usize>> {
    if p == 0 || m < p + 1 {
        return None;
    }
    let last = m - 1;
    let inf = f64::INFINITY;
    let mut best = vec![vec![inf; m]; p + 1];
    let mut cut = vec![vec![last; m]; p + 1];
    best[0][last] = 0.0;
    for r in 1..=p {
        let k = p - r;
        for c in k..m - r {
            if !stop_early && k == 0 && c > 0 {
                break;
            }
            let mut found = inf;
            let mut at = last;
            for j in c + 1..=m - r {
                let Some(x) = paced(k, c, j) else {
                    break;
                };
                if stop_early && x >= found {
                    break;
                }
                let worst = x.max(best[r - 1][j]);
                if worst < found {
                    found = worst;
                    at = j;
                }
            }
            best[r][c] = found;
            cut[r][c] = at;
        }
    }
    if !best[p][0].is_finite() {
        return None;
    }
    let mut stages = Vec::with_capacity(p);
    let mut c = 0;
    for r in (1..=p).rev() {
        c = cut[r][c];
        stages.push(c);
    }
    Some(stages)
}

#[cfg(test)]
mod tests;
