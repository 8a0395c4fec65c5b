//! Slurm's rules (rule 16 of docs/scheduling.md): jobs are taken in priority order, nothing is
//! preempted (Slurm preempts only with a `PreemptType`), nothing moves, and a job that fits
//! starts only when it delays no reservation. Each job that cannot start gets a reservation at
//! the earliest hour it fits once the running jobs end and the reservations before it hold
//! theirs (the backfill plugin's planning, `sched/backfill`, every job tested); a later job
//! that fits now starts when it ends before each reservation or leaves it room.
//!
//! Slurm plans with each job's time limit, not with how long it will run: a running job holds
//! its devices in the plan until its start plus its limit, a waiting one for its limit. Jobs
//! still run for their expected hours and give their devices back then; every event passes
//! again, so a job that ends before its limit lets the next pass re-plan (as Slurm's periodic
//! backfill does).

use super::{Blocked, Held, Pass, Phase, State, Trace, start};
use crate::admission::place::{Demand, Ledger};
use crate::schedule::job::{EPS_H, SimJob};

/// A job holding devices from `from_h` to `to_h`, with its demand's index.
#[derive(Debug, Clone, Copy)]
struct Hold {
    from_h: f64,
    to_h: f64,
    index: usize,
}

/// What is held at hour `at`: the holds that span it.
fn ledger_at(holds: &[Hold], demands: &[Option<Demand>], at: f64) -> Ledger {
    let mut ledger = Ledger::default();
    for (seq, h) in holds.iter().enumerate() {
        if h.from_h <= at + EPS_H
            && h.to_h > at + EPS_H
            && let Some(Some(d)) = demands.get(h.index)
        {
            ledger.add(seq, h.index, d);
        }
    }
    ledger
}

/// Whether `demand` fits beside `holds` from `from_h` for `hours`: at its start and at every
/// later start of a hold inside its run (devices are only taken back then).
fn fits_during(
    p: &Pass<'_>,
    holds: &[Hold],
    demands: &[Option<Demand>],
    demand: &Demand,
    from_h: f64,
    hours: f64,
) -> bool {
    let to_h = from_h + hours;
    std::iter::once(from_h)
        .chain(
            holds
                .iter()
                .map(|h| h.from_h)
                .filter(|&s| s > from_h + EPS_H && s < to_h - EPS_H),
        )
        .all(|at| {
            ledger_at(holds, demands, at)
                .fits(demand, &p.rules.quotas, &p.rules.groups)
                .is_ok()
        })
}

/// Hours from `at` that `job`, with `remaining_h` of work left, keeps its devices in the
/// simulation once running: its remaining work, cut at its window's close when it has one.
fn run_h(job: &SimJob, remaining_h: f64, at: f64) -> f64 {
    let run = remaining_h.max(EPS_H);
    match job.next_window_edge(at) {
        Some(close) if job.in_window(at) => run.min(close - at),
        _ => run,
    }
}

/// Hours Slurm plans an allocation of `job` from `at` to hold its devices: its time limit. The
/// simulation does not requeue a job at the end of a time chunk (a run longer than MaxTime runs
/// on, and a sampled run may outlast its limit), so never less than the run itself, lest the
/// plan hand out devices the job still holds.
fn planned_h(job: &SimJob, remaining_h: f64, at: f64) -> f64 {
    job.limit_h.max(run_h(job, remaining_h, at))
}

/// The admission pass at `p.t` under Slurm's rules.
pub(super) fn admit_waiting(
    p: &Pass<'_>,
    states: &mut [State],
    traces: &mut [Trace],
    held: &mut Held<'_, '_>,
) {
    let t = p.t;
    let demands: &[Option<Demand>] = held.demands;
    // What runs now, to its start plus its time limit (or its expected end, when later), then
    // each reservation made in this pass.
    let mut holds: Vec<Hold> = states
        .iter()
        .enumerate()
        .filter_map(|(i, s)| match (s.phase, p.jobs.get(i)) {
            (Phase::Running { since_h, .. }, Some(Some(job))) => Some(Hold {
                from_h: t,
                to_h: (since_h + job.limit_h).max(t + run_h(job, s.remaining_h, t)),
                index: i,
            }),
            _ => None,
        })
        .collect();
    let mut starts: Vec<usize> = Vec::new();
    for &i in p.order {
        let (Some(Some(job)), Some(state), Some(Some(demand))) =
            (p.jobs.get(i), states.get(i), demands.get(i))
        else {
            continue;
        };
        if state.phase != Phase::Waiting || !job.in_window(t) {
            continue;
        }
        let hours = planned_h(job, state.remaining_h, t);
        if fits_during(p, &holds, demands, demand, t, hours) {
            holds.push(Hold {
                from_h: t,
                to_h: t + hours,
                index: i,
            });
            starts.push(i);
            continue;
        }
        // Its reservation: the first hour, among the ends of what is held, it fits from.
        let mut candidates: Vec<f64> = holds.iter().map(|h| h.to_h).filter(|&e| e > t).collect();
        candidates.sort_by(f64::total_cmp);
        if let Some((at, hours)) = candidates
            .into_iter()
            .map(|at| (at, planned_h(job, state.remaining_h, at)))
            .find(|&(at, hours)| fits_during(p, &holds, demands, demand, at, hours))
        {
            holds.push(Hold {
                from_h: at,
                to_h: at + hours,
                index: i,
            });
        }
        if p.explain
            && let Some(trace) = traces.get_mut(i)
            && trace.first_start_h.is_none()
        {
            let ledger = ledger_at(&holds, demands, t);
            trace.blocked_by = Some(
                match ledger.fits(demand, &p.rules.quotas, &p.rules.groups) {
                    Err(blocker) => Blocked::Limit(blocker),
                    Ok(()) => Blocked::Reservation,
                },
            );
        }
    }
    for i in starts {
        *held.version += 1;
        start(i, t, states, traces, held);
    }
}
