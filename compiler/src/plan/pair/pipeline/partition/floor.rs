//! Lower bounds on a stage's pace that never decrease as the stage grows: what the min-max
//! partition skips ends and starts by, and what decides whether a configuration's partition can
//! be of use before any stage is costed ([`Stager::least_slowest_if`]).

use super::{Chain, PerSide, Prefix, Side, Stager, reach, span};

impl Stager<'_, '_> {
    /// A lower bound on the pace of ops `[i, j)` as stage `k` that never decreases as `j` grows
    /// nor as `i` falls: their compute and send under the cheapest recomputation, plus the
    /// optimizer and the part of the gradient reduction that overlapping never hides, each
    /// shaved by a billionth so that rounding cannot lift the bound above the pace itself.
    /// Only recomputation modes from `rank` on ([`super::MODES`] order) count: a stage that needs one
    /// needs it, or more, with more ops.
    #[inline]
    pub(super) fn floor(&self, k: usize, i: usize, j: usize, rank: usize) -> f64 {
        let g = usize::from(k >= self.shape.stages[0] as usize);
        self.group_floor(g, i, j, self.send(k), rank)
    }

    /// [`Stager::floor`] on group `g` with a send of `send` seconds.
    #[inline]
    pub(super) fn group_floor(&self, g: usize, i: usize, j: usize, send: f64, rank: usize) -> f64 {
        let (Some(side), Some(per)) = (self.sides.get(g), self.per_side.get(g)) else {
            return 0.0;
        };
        let seconds = side
            .modes
            .iter()
            .skip(rank)
            .map(|prefix| span(&prefix.seconds, i, j) + send)
            .fold(f64::INFINITY, f64::min);
        let params = span(self.params, i, j);
        let unhidden = self.unhidden_floor(side, per, params, i, j);
        let optimizer = params * per.optimizer_per_param;
        seconds + (unhidden + optimizer) * (1.0 - 1e-9) / self.slots
    }

    /// A lower bound on the exposed gradient reduction of ops `[i, j)` (holding `params`) as a
    /// stage of `side`, under any recomputation mode, that never decreases as `j` grows nor as
    /// `i` falls. [`crate::cost::exposed_reduction`] leaves at least `contention × reduce`
    /// exposed (for a contention in `[0, 1]`), and overlapping hides at most
    /// `(1 − contention) × backward`, so at least `reduce − (1 − contention) × backward` is
    /// exposed. The second bound counts only where every stretch between two cuts adds more
    /// reduction than that much backward (`PerSide::hidden_per_backward`; a millionth more, so
    /// that rounding cannot make it fall as a stage grows), as with sequences of a few tokens,
    /// whose steps are mostly reductions: elsewhere a longer backward may hide more than the
    /// stretch adds.
    #[inline]
    pub(super) fn unhidden_floor(
        &self,
        side: &Side<'_>,
        per: &PerSide,
        params: f64,
        i: usize,
        j: usize,
    ) -> f64 {
        let reduce = params * per.reduce_per_param;
        let at_least = reduce * per.contention.clamp(0.0, 1.0);
        let Some(hides) = per.hidden_per_backward else {
            return match &per.reduce_hull {
                Some(hull) => at_least.max(hull.at_least(i, j)),
                None => at_least,
            };
        };
        let backward = side
            .modes
            .iter()
            .map(|prefix| span(&prefix.backward, i, j))
            .fold(0.0, f64::max);
        let hidden = hides * backward;
        at_least.max(reduce - hidden - 1e-9 * (reduce + hidden))
    }

    /// A lower bound on the slowest stage of every partition of the configuration (`+∞` when
    /// none can run): the min-max of [`Stager::group_floor`] without sends, which depends on a
    /// stage only through its group, so the first group's stages cut greedily from the start,
    /// the second's from the end, and some boundary must be reachable by both. Found by
    /// bisection in a few thousand prefix lookups and no stage costing.
    ///
    /// What the search asks of the bound is only whether `useful` holds at it (`useful` holds,
    /// then does not, as the pace grows) and, when it does, a pace from which to look for the
    /// cap: `Some` of a pace `useful` accepts exactly when it accepts the bound, else `None`.
    /// Every step of the bisection keeps the bound in `[low, high)`, so once `useful` accepts
    /// `high` (then the bound too) or refuses `low` (then the bound too) the answer is known
    /// and the rest of the bisection is not run: the same answer as the whole bisection's, in a
    /// few steps where the bound is not within a few ulps of what `useful` accepts.
    pub(super) fn least_slowest_if(&self, useful: impl Fn(f64) -> bool) -> Option<f64> {
        let Some(fits) = self.floor_fits() else {
            return useful(f64::INFINITY).then_some(f64::INFINITY);
        };
        let n = self.params.len().saturating_sub(1);
        let mut high = self
            .floor(0, 0, n, 0)
            .max(self.floor(self.stage_count() - 1, 0, n, 0));
        if !high.is_finite() || !fits(high) {
            return useful(f64::INFINITY).then_some(f64::INFINITY);
        }
        let mut low = 0.0;
        if useful(high) {
            return Some(high);
        }
        if !useful(low) {
            return None;
        }
        for _ in 0..64 {
            let mid = 0.5 * (low + high);
            if mid <= low || mid >= high {
                break;
            }
            if fits(mid) {
                high = mid;
                if useful(high) {
                    return Some(high);
                }
            } else {
                low = mid;
                if !useful(low) {
                    return None;
                }
            }
        }
        // The bisection ran to its end: the bound is `low`, which `useful` accepts.
        Some(low)
    }

    /// A lower bound on the slowest stage of every partition that needs no cut: the parts of
    /// [`Stager::group_floor`] that add up along the chain (compute under each op's fastest
    /// recomputation mode, the `contention` share of the reduction and the optimizer; sends,
    /// the rest of the reduction and the mode a stage's memory forces left out), spread evenly
    /// over each group's stages. Some stage of a group is at least the group's mean, so a
    /// partition whose groups meet at cut `b` is at least `max(A(b) / s0, B(b) / s1)`, with
    /// `A` the first group's sum over the ops before `b` and `B` the second's over those after;
    /// `A` grows and `B` falls with `b`, so the least of that over the boundaries is found by
    /// bisection. Below the greedy bound by less than a stage's share where blocks are alike:
    /// it refuses most configurations that bound refuses, in a few lookups.
    pub(super) fn spread_floor(&self) -> f64 {
        let cuts = self.cuts();
        let m = cuts.len();
        let [s0, s1] = self.shape.stages.map(|s| s as usize);
        let n = self.params.len().saturating_sub(1);
        if m < s0 + s1 + 1 || s0 == 0 || s1 == 0 {
            return 0.0;
        }
        let additive = |g: usize, i: usize, j: usize| {
            let (Some(side), Some(per)) = (self.sides.get(g), self.per_side.get(g)) else {
                return 0.0;
            };
            let params = span(self.params, i, j);
            let per_param =
                per.reduce_per_param * per.contention.clamp(0.0, 1.0) + per.optimizer_per_param;
            (span(&side.least_seconds, i, j) + params * per_param / self.slots) * (1.0 - 1e-9)
        };
        let at = |c: usize| cuts.get(c).copied().unwrap_or(n);
        let first = |c: usize| additive(0, 0, at(c)) / s0 as f64;
        let second = |c: usize| additive(1, at(c), n) / s1 as f64;
        // The boundary leaves a cut for each stage on either side: cuts `s0 ..= m − 1 − s1`.
        let (lo, hi) = (s0, m - 1 - s1);
        // The first boundary at which the first group's mean reaches the second's.
        let cross = super::minmax::first_index(lo, hi + 1, |c| first(c) >= second(c));
        let at_cross = if cross <= hi {
            first(cross).max(second(cross))
        } else {
            f64::INFINITY
        };
        let before = if cross > lo {
            first(cross - 1).max(second(cross - 1))
        } else {
            f64::INFINITY
        };
        at_cross.min(before)
    }

    /// The whole bisection of [`Stager::least_slowest_if`]: the bound itself, for the tests
    /// that check the early answers against it.
    #[cfg(test)]
    pub(super) fn least_slowest(&self) -> f64 {
        let Some(fits) = self.floor_fits() else {
            return f64::INFINITY;
        };
        let n = self.params.len().saturating_sub(1);
        let mut high = self
            .floor(0, 0, n, 0)
            .max(self.floor(self.stage_count() - 1, 0, n, 0));
        if !high.is_finite() || !fits(high) {
            return f64::INFINITY;
        }
        let mut low = 0.0;
        for _ in 0..64 {
            let mid = 0.5 * (low + high);
            if mid <= low || mid >= high {
                break;
            }
            if fits(mid) {
                high = mid;
            } else {
                low = mid;
            }
        }
        low
    }

    /// Whether some partition has every stage's floor (without sends) at or below a pace, as a
    /// predicate on the pace that, once true, stays true; `None` when the configuration cannot
    /// be cut at all.
    pub(super) fn floor_fits(&self) -> Option<impl Fn(f64) -> bool + '_> {
        let n = self.params.len().saturating_sub(1);
        let cuts = self.cuts();
        let m = cuts.len();
        let [s0, s1] = self.shape.stages.map(|s| s as usize);
        if m < s0 + s1 + 1 || cuts.first() != Some(&0) || cuts.last() != Some(&n) {
            return None;
        }
        Some(move |x: f64| {
            let at = |c: usize| cuts.get(c).copied().unwrap_or(n);
            // A floor without sends depends on a stage through its group alone.
            let fits = |k: usize, from: usize, to: usize| {
                self.group_floor(usize::from(k >= s0), at(from), at(to), 0.0, 0) <= x
            };
            reach::boundary_between_greedy_cuts(m, [s0, s1], fits, true)
        })
    }
}

/// The lower hull of a stage's exposed gradient reduction over the cuts of one configuration's
/// group: with `F(c) = reduce_per_param × params(c) − hides × most_backward(c)` at each cut `c`
/// (`hides = 1 − contention`), a stage over cuts `[a, b)` exposes at least `F(b) − F(a)` (the
/// reduction less what its longest backward can hide, [`Stager::unhidden_floor`]), and at
/// least `min F(b′ ≥ b) − max F(a′ ≤ a)`, the least over every stage that contains it. That
/// never falls as `b` grows or `a` falls, whatever one stretch adds, where `F(b) − F(a)` falls
/// wherever a stretch adds more backward than its reduction can hide (an op with backward and
/// no parameters does). Sequences of 45 tokens on a first group with such a stretch left the
/// floor at a third of the stage's reduction when the stage exposes nearly all of it: 5,393
/// configurations of a 926-layer job reached the min-max programme with no partition under
/// their cap.
pub(in crate::plan::pair::pipeline) struct ReduceHull {
    /// By op, the greatest `F` of the cuts at or before it.
    most_before: Vec<f64>,
    /// By op, the least `F` of the cuts at or after it.
    least_after: Vec<f64>,
    /// A billionth of the largest magnitude `F` takes, so that rounding in `F` cannot lift the
    /// hull above a stage's exposed reduction.
    slack: f64,
}

impl ReduceHull {
    pub(in crate::plan::pair::pipeline) fn new(
        chain: &Chain,
        most_backward: &[f64],
        reduce_per_param: f64,
        hides: f64,
    ) -> ReduceHull {
        let ops = chain.params.len();
        let at_cut = |op: usize| {
            let params = chain.params.get(op).copied().unwrap_or(0.0);
            let backward = most_backward.get(op).copied().unwrap_or(0.0);
            chain.cuttable.get(op).copied().unwrap_or(false).then_some((
                reduce_per_param * params - hides * backward,
                reduce_per_param * params + hides * backward,
            ))
        };
        let mut most_before = Vec::with_capacity(ops);
        let (mut most, mut magnitude) = (f64::NEG_INFINITY, 0.0_f64);
        for op in 0..ops {
            if let Some((f, size)) = at_cut(op) {
                most = most.max(f);
                magnitude = magnitude.max(size);
            }
            most_before.push(most);
        }
        let mut least_after = vec![f64::INFINITY; ops];
        let mut least = f64::INFINITY;
        for (op, at) in least_after.iter_mut().enumerate().rev() {
            if let Some((f, _)) = at_cut(op) {
                least = least.min(f);
            }
            *at = least;
        }
        ReduceHull {
            most_before,
            least_after,
            slack: 1e-9 * magnitude,
        }
    }

    /// The hull's bound for a stage over ops `[i, j)`.
    #[inline]
    fn at_least(&self, i: usize, j: usize) -> f64 {
        match (self.most_before.get(i), self.least_after.get(j)) {
            (Some(before), Some(after)) => after - before - self.slack,
            _ => f64::NEG_INFINITY,
        }
    }
}

impl Chain {
    /// By op, the backward seconds of the ops before it, each op under the mode of `modes`
    /// whose backward is longest there: at least any one mode's backward over any stretch.
    pub(in crate::plan::pair::pipeline) fn most_backward(modes: &[Prefix; 3]) -> Vec<f64> {
        per_op_prefix(modes, |m| &m.backward, f64::max)
    }

    /// By op, the seconds of the ops before it, each op under the mode of `modes` whose
    /// seconds are fewest there: at most any one mode's seconds over any stretch, and the sum
    /// of any stretches' is that of the stretch they make up.
    pub(in crate::plan::pair::pipeline) fn least_seconds(modes: &[Prefix; 3]) -> Vec<f64> {
        per_op_prefix(modes, |m| &m.seconds, f64::min)
    }

    /// The most backward seconds per parameter of any stretch between two consecutive cuts
    /// under any of `modes` (`+∞` when a stretch has backward work and no parameters): a
    /// stage's exposed-reduction floor counts the backward that hides it only when a stage
    /// reduces at least this much per parameter ([`Stager::unhidden_floor`]).
    pub(in crate::plan::pair::pipeline) fn most_backward_per_param(
        &self,
        modes: &[Prefix; 3],
    ) -> f64 {
        let mut most: f64 = 0.0;
        for pair in self.cuts.windows(2) {
            let (Some(&i), Some(&j)) = (pair.first(), pair.get(1)) else {
                continue;
            };
            let params = span(&self.params, i, j);
            for prefix in modes {
                let backward = span(&prefix.backward, i, j);
                if backward > 0.0 {
                    most = most.max(if params > 0.0 {
                        backward / params
                    } else {
                        f64::INFINITY
                    });
                }
            }
        }
        most
    }
}

/// By op, the sum over the ops before it of each op's `pick` seconds under the mode `keep`
/// chooses among `modes` (`f64::max` the longest, `f64::min` the fewest).
fn per_op_prefix(
    modes: &[Prefix; 3],
    pick: impl Fn(&Prefix) -> &[f64],
    keep: fn(f64, f64) -> f64,
) -> Vec<f64> {
    let ops = modes.iter().map(|m| pick(m).len()).min().unwrap_or(0);
    let mut sum = 0.0;
    let mut prefix = Vec::with_capacity(ops);
    prefix.push(0.0);
    for op in 1..ops {
        let chosen = modes
            .iter()
            .map(|m| span(pick(m), op - 1, op))
            .reduce(keep)
            .unwrap_or(0.0);
        sum += chosen;
        prefix.push(sum);
    }
    prefix
}
