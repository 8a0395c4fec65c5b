//! Rules 13 and 14 inside the event loop: a waiting job that can neither fit nor preempt
//! moves to one of its plan's alternatives, or makes room by migrating a running
//! interruptible job to one of that job's alternatives (the decisions are `schedule::replace`'s).

use super::{Held, Pass, Phase, Releases, State, Trace, close_run};
use crate::admission::place::Demand;
use crate::schedule::job::{EPS_H, SimJob};
use crate::schedule::replace::{self, Alternative, Moved};
use std::rc::Rc;

/// Rule 13 for job `i`, which can neither fit nor preempt at `p.t`: when it has not moved yet
/// and one of its alternatives fits now and finishes before it could on its plan's node groups,
/// it moves there (its work and devices become the alternative's, scaled as this run scales its
/// own hours; a job preempted before starts over, its checkpoints being where it ran) and the
/// alternative is returned.
pub(super) fn try_move<'a>(
    p: &Pass<'a>,
    i: usize,
    planned: &Demand,
    states: &mut [State],
    traces: &mut [Trace],
    held: &Held<'_, '_>,
) -> Option<&'a Alternative> {
    let alternatives = p.alternatives.get(i).filter(|a| !a.is_empty())?;
    let job = p.jobs.get(i)?.as_ref()?;
    if traces.get(i)?.moved.is_some() {
        return None;
    }
    let work_h = states.get(i)?.remaining_h;
    let planned_h = p.work_h.get(i).copied().unwrap_or(job.work_h);
    let releases = || releases(p, states, *held.version);
    let moved = replace::choose(
        planned,
        alternatives,
        &replace::Ask {
            rules: p.rules,
            demands: held.demands,
            ledger: held.ledger,
            releases: &releases,
            t: p.t,
            work_h,
            planned_h,
            scale: if job.work_h > 0.0 {
                planned_h / job.work_h
            } else {
                1.0
            },
            deadline_at_h: job.deadline_h.map(|d| job.submit_h + d),
        },
    )?;
    let alternative = alternatives.get(moved.alternative)?;
    let state = states.get_mut(i)?;
    state.remaining_h = moved.finish_h - p.t;
    state.since_checkpoint_h = 0.0;
    state.devices = alternative.devices;
    traces.get_mut(i)?.moved = Some(moved);
    Some(alternative)
}

/// `(hour, job)`: when each running job finishes or gives its devices back at its window's
/// close, in time order; worked out once per ledger `version` of the pass (kept in
/// `p.releases`: every start, eviction, migration and finish bumps the version).
fn releases(p: &Pass<'_>, states: &[State], version: u64) -> Releases {
    if let Some((at, kept)) = p.releases.borrow().as_ref()
        && *at == version
    {
        debug_assert!(
            **kept == *releases_now(p, states),
            "what runs changed without a new ledger version"
        );
        return Rc::clone(kept);
    }
    let fresh: Releases = releases_now(p, states).into();
    *p.releases.borrow_mut() = Some((version, Rc::clone(&fresh)));
    fresh
}

/// [`releases`], worked out from the jobs' states.
fn releases_now(p: &Pass<'_>, states: &[State]) -> Vec<(f64, usize)> {
    let mut releases: Vec<(f64, usize)> = states
        .iter()
        .enumerate()
        .filter_map(|(j, s)| {
            let Phase::Running { .. } = s.phase else {
                return None;
            };
            let finish = p.t + s.remaining_h.max(0.0);
            let edge = p.jobs.get(j)?.as_ref()?.next_window_edge(p.t);
            Some((edge.map_or(finish, |e| e.min(finish)), j))
        })
        .collect();
    releases.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    releases
}

/// Rule 14 for job `i`, which can neither fit, preempt nor move at `p.t`: a running
/// interruptible job of no higher priority, without a window and not moved before, whose
/// devices would let `i` start now, is migrated to the first of its alternatives that fits
/// beside `i`, from its last checkpoint (the work since is redone, plus its restart), when that
/// delays it by less than `i` starts sooner (against the same bound as rule 13). Returns
/// whether one was migrated; `i` then fits.
pub(super) fn try_migrate(
    p: &Pass<'_>,
    i: usize,
    states: &mut [State],
    traces: &mut [Trace],
    held: &mut Held<'_, '_>,
) -> bool {
    let Some(Some(wanted)) = held.demands.get(i) else {
        return false;
    };
    // Who may be migrated, before anything is counted.
    let eligible = |j: usize| -> Option<(&SimJob, &State, usize, &Demand)> {
        let job = p.jobs.get(j)?.as_ref()?;
        let state = states.get(j)?;
        let Phase::Running { seq, .. } = state.phase else {
            return None;
        };
        let mine = held.demands.get(j)?.as_ref()?;
        (j != i
            && job.interruptible
            && job.window.is_none()
            && mine.priority <= wanted.priority
            && p.alternatives.get(j).is_some_and(|a| !a.is_empty())
            && traces.get(j)?.moved.is_none())
        .then_some((job, state, seq, mine))
    };
    if !p.migratable.iter().any(|&j| eligible(j).is_some()) {
        return false;
    }
    // How much sooner `i` starts than waiting could (rule 13's bound).
    let releases = || releases(p, states, *held.version);
    let Some(me) = p.jobs.get(i).and_then(Option::as_ref) else {
        return false;
    };
    let ask = replace::Ask {
        rules: p.rules,
        demands: held.demands,
        ledger: held.ledger,
        releases: &releases,
        t: p.t,
        work_h: 0.0,
        planned_h: 0.0,
        scale: 1.0,
        deadline_at_h: me.deadline_h.map(|d| me.submit_h + d),
    };
    let gain_h = replace::earliest_start(wanted, &ask) - p.t;
    if !gain_h.is_finite() {
        return false;
    }
    // The first job in the rules' order, on the first of its alternatives that fits beside `i`,
    // whose delay is below that gain: (job, alternative, hours left there, delay, its seq).
    let candidate = |j: usize| -> Option<(usize, usize, f64, f64, usize)> {
        let (job, state, seq, mine) = eligible(j)?;
        let mut without = held.ledger.clone();
        without.remove(seq, mine);
        without
            .fits(wanted, &p.rules.quotas, &p.rules.groups)
            .ok()?;
        without.add(usize::MAX, i, wanted);
        let total_h = p.work_h.get(j).copied().unwrap_or(job.work_h);
        let scale = if job.work_h > 0.0 {
            total_h / job.work_h
        } else {
            1.0
        };
        // The share of its work left from its last checkpoint.
        let left = if total_h > 0.0 {
            ((state.remaining_h + state.since_checkpoint_h) / total_h).min(1.0)
        } else {
            1.0
        };
        let (k, a) = p.alternatives.get(j)?.iter().enumerate().find(|(_, a)| {
            without
                .fits(&a.demand, &p.rules.quotas, &p.rules.groups)
                .is_ok()
        })?;
        let new_h = a.hours * scale * left + job.restart_h;
        let delay_h = new_h - state.remaining_h;
        (delay_h < gain_h - EPS_H).then_some((j, k, new_h, delay_h, seq))
    };
    let Some((j, k, new_h, _, seq)) = p.migratable.iter().copied().find_map(candidate) else {
        return false;
    };
    let (Some(alternative), Some(Some(mine))) = (
        p.alternatives.get(j).and_then(|a| a.get(k)),
        held.demands.get(j),
    ) else {
        return false;
    };
    // Off its node groups: from its last checkpoint, onto the alternative's.
    held.ledger.remove(seq, mine);
    held.capacity.remove(j);
    held.capacity.set_needs(j, p.rules, &alternative.demand);
    if let Some(slot) = held.demands.to_mut().get_mut(j) {
        *slot = Some(alternative.demand.clone());
    }
    held.ledger.add(*held.next_seq, j, &alternative.demand);
    held.capacity.add(j);
    let Some(state) = states.get_mut(j) else {
        return false;
    };
    let Phase::Running { since_h, .. } = state.phase else {
        return false;
    };
    close_run(traces, j, since_h, p.t);
    let redone_h = state.since_checkpoint_h;
    let old_h = state.remaining_h;
    state.phase = Phase::Running {
        seq: *held.next_seq,
        since_h: p.t,
    };
    state.remaining_h = new_h;
    state.since_checkpoint_h = 0.0;
    state.devices = alternative.devices;
    *held.next_seq += 1;
    *held.version += 1;
    let deadline_at_h = p
        .jobs
        .get(j)
        .and_then(Option::as_ref)
        .and_then(|m| m.deadline_h.map(|d| m.submit_h + d));
    if let Some(trace) = traces.get_mut(j) {
        trace.moved = Some(Moved {
            alternative: k,
            at_h: p.t,
            planned_start_h: p.t,
            planned_finish_h: p.t + old_h,
            finish_h: p.t + new_h,
            deadline_at_h,
            redone_h,
            migrated_for: Some((i, gain_h)),
        });
    }
    true
}
