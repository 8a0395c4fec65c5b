//! The event loop of one pool: jobs are submitted, admitted by the admission preview's own
//! rules (`admission::place`), preempted, suspended outside their windows and finished, from
//! hour 0 to the horizon. Pure and deterministic: jobs are visited in the rules' order.

mod backfill;
mod moves;

use super::capacity::Capacity;
use super::job::{EPS_H, SimJob};
use super::replace::{Alternative, Moved};
use super::usage::Usage;
use crate::admission::place::{
    Admit, Blocker, Demand, Ledger, PoolRules, admit, blocker_text, preempt_lower,
};
use moves::{try_migrate, try_move};
use std::borrow::Cow;
use std::cell::RefCell;
use std::cmp::Ordering;
use std::rc::Rc;

/// Why a preemption happened, as the platform's rule names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// The preemptor's tenant reclaims its guaranteed quota.
    Reclaim,
    /// A higher priority in the same ClusterQueue, or of another tenant while both borrow
    /// (`borrowWithinCohort: LowerPriority`).
    Priority,
}

/// One preemption suffered.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Evicted {
    pub(crate) at_h: f64,
    /// Index of the preemptor.
    pub(crate) by: usize,
    pub(crate) rule: Rule,
    pub(crate) lost_h: f64,
}

/// What happened to one job.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Trace {
    pub(crate) first_start_h: Option<f64>,
    pub(crate) finish_h: Option<f64>,
    /// Intervals it held devices.
    pub(crate) runs: Vec<(f64, f64)>,
    pub(crate) evictions: Vec<Evicted>,
    /// Whether it is running at the horizon.
    pub(crate) running_at_end: bool,
    /// Why it last could not start, while it had never run.
    pub(crate) blocked_by: Option<Blocked>,
    /// Set when it started on one of its plan's alternatives instead (rule 13).
    pub(crate) moved: Option<Moved>,
}

/// Why a job could not start, kept as found and worded once, when the schedule is reported
/// ([`Blocked::words`]): the expected schedule records it at every failed attempt, and wording
/// each one was 7 % of a warm `loam diff`'s main thread.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Blocked {
    /// The first limit it hits (the admission preview's blocker).
    Limit(Blocker),
    /// It fits, but starting it would delay a higher priority's reservation (Slurm's backfill).
    Reservation,
}

impl Blocked {
    /// The preview's words for a job of `tenant`.
    pub(crate) fn words(&self, tenant: &str) -> String {
        match self {
            Blocked::Limit(blocker) => blocker_text(blocker, tenant),
            Blocked::Reservation => "it would delay a higher priority's reservation".to_string(),
        }
    }
}

/// The state of a job between events.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Not yet ready (or never admissible: no demand).
    Pending,
    Waiting,
    Running {
        seq: usize,
        since_h: f64,
    },
    Done,
}

struct State {
    phase: Phase,
    remaining_h: f64,
    /// Work done since the last checkpoint.
    since_checkpoint_h: f64,
    /// The ledger's version when it last failed to be admitted: while nothing is admitted or
    /// released, trying again gives the same answer.
    failed_at: Option<u64>,
    /// Devices it holds while running (its plan's, or the alternative's it moved to).
    devices: u64,
}

/// The result of one run.
pub(crate) struct Outcome {
    pub(crate) traces: Vec<Trace>,
    /// `(hour, queued, running)` at every change.
    pub(crate) queue: Vec<(f64, usize, usize)>,
}

/// One pool's jobs as the simulator reads them, all in the rules' order.
pub(crate) struct Pool<'a> {
    pub(crate) rules: &'a PoolRules,
    /// `None` = never admissible or not planned.
    pub(crate) demands: &'a [Option<Demand>],
    pub(crate) jobs: &'a [Option<SimJob>],
    /// The alternatives each job may move to (rule 13).
    pub(crate) alternatives: &'a [Vec<Alternative>],
    /// Slurm's rules (rule 16) instead of Kueue's.
    pub(crate) slurm: bool,
}

/// Runs the pool's jobs from hour 0 to `horizon_h`, with `work_h[i]` hours of work each (the
/// expected values, or one sample's). `usage`, when given, accumulates utilisation.
pub(crate) fn run(
    pool: &Pool<'_>,
    work_h: &[f64],
    horizon_h: f64,
    mut usage: Option<&mut Usage>,
) -> Outcome {
    let Pool {
        rules,
        jobs,
        alternatives,
        slurm,
        ..
    } = *pool;
    // A job that moves to an alternative holds the alternative's demand from then on: the
    // plans' demands are copied at the first move only.
    let mut demands: Cow<'_, [Option<Demand>]> = Cow::Borrowed(pool.demands);
    let n = jobs.len();
    let mut states: Vec<State> = (0..n)
        .map(|i| State {
            phase: Phase::Pending,
            remaining_h: work_h.get(i).copied().unwrap_or(0.0),
            since_checkpoint_h: 0.0,
            failed_at: None,
            devices: jobs
                .get(i)
                .and_then(Option::as_ref)
                .map_or(0, |j| j.devices),
        })
        .collect();
    let mut traces: Vec<Trace> = vec![Trace::default(); n];
    // The jobs not yet done, in index order: a finished job changes nothing more, and the
    // per-event loops below need not visit it.
    let mut live: Vec<usize> = (0..n).collect();
    let order = queue_order(&demands, jobs);
    let migratable: Vec<usize> = (0..n)
        .filter(|&j| {
            jobs.get(j)
                .and_then(Option::as_ref)
                .is_some_and(|job| job.interruptible && job.window.is_none())
                && alternatives.get(j).is_some_and(|a| !a.is_empty())
        })
        .collect();
    let mut queue: Vec<(f64, usize, usize)> = Vec::new();
    let mut ledger = Ledger::default();
    let mut capacity = Capacity::new(rules, &demands);
    // Reasons for waits are worded only for the expected schedule, not for each sample.
    let explain = usage.is_some();
    let mut next_seq = 0usize;
    // Bumped whenever the ledger changes (an admission or a release).
    let mut version = 0u64;
    let mut t = 0.0_f64;
    // Bounded: every iteration moves time to the next event, and there are at most a submit
    // and a finish per job, two window edges per window job per day, and one preemption per
    // admission. Counted, with room.
    let days = (horizon_h / 24.0).ceil().max(1.0) as usize;
    let max_steps = 16 * (n + 1) * (days + 2) + 1024;
    for _ in 0..max_steps {
        // Ready jobs join the queue; window jobs out of their window give their devices back
        // (checkpointed at the window's close, so no work is lost).
        for &i in &live {
            let (Some(job), Some(d), Some(state)) = (
                jobs.get(i).and_then(Option::as_ref),
                demands.get(i),
                states.get_mut(i),
            ) else {
                continue;
            };
            match state.phase {
                Phase::Pending if d.is_some() && job.ready_h() <= t + EPS_H => {
                    state.phase = Phase::Waiting;
                }
                Phase::Running { seq, since_h } if !job.in_window(t) => {
                    if let Some(demand) = d {
                        ledger.remove(seq, demand);
                        capacity.remove(i);
                        version += 1;
                    }
                    close_run(&mut traces, i, since_h, t);
                    state.since_checkpoint_h = 0.0;
                    state.phase = Phase::Waiting;
                }
                _ => {}
            }
        }
        let admit_pass = if slurm {
            backfill::admit_waiting
        } else {
            admit_waiting
        };
        admit_pass(
            &Pass {
                rules,
                jobs,
                alternatives,
                work_h,
                migratable: &migratable,
                order: &order,
                explain,
                t,
                releases: RefCell::default(),
            },
            &mut states,
            &mut traces,
            &mut Held {
                demands: &mut demands,
                ledger: &mut ledger,
                capacity: &mut capacity,
                next_seq: &mut next_seq,
                version: &mut version,
            },
        );
        if explain {
            record_queue(&mut queue, jobs, &states, t);
        }
        if t >= horizon_h - EPS_H {
            break;
        }
        let next = next_event(jobs, &states, &live, t, horizon_h);
        if let Some(u) = usage.as_deref_mut() {
            u.record(
                t,
                next,
                &ledger,
                rules,
                waiting_devices(&demands, jobs, &states, t),
            );
        }
        let dt = next - t;
        let mut finished = false;
        for &i in &live {
            let Some(state) = states.get_mut(i) else {
                continue;
            };
            let Phase::Running { seq, since_h } = state.phase else {
                continue;
            };
            let job = jobs.get(i).and_then(Option::as_ref);
            state.remaining_h -= dt;
            state.since_checkpoint_h += dt;
            if let Some(interval) = job.and_then(|j| j.checkpoint_h) {
                state.since_checkpoint_h = state.since_checkpoint_h.rem_euclid(interval);
                if interval - state.since_checkpoint_h < EPS_H {
                    state.since_checkpoint_h = 0.0;
                }
            }
            if state.remaining_h <= EPS_H {
                if let Some(Some(demand)) = demands.get(i) {
                    ledger.remove(seq, demand);
                    capacity.remove(i);
                    version += 1;
                }
                close_run(&mut traces, i, since_h, next);
                if let Some(trace) = traces.get_mut(i) {
                    trace.finish_h = Some(next);
                }
                state.remaining_h = 0.0;
                state.phase = Phase::Done;
                finished = true;
            }
        }
        if finished {
            live.retain(|&i| states.get(i).is_some_and(|s| s.phase != Phase::Done));
        }
        t = next;
    }
    for (i, state) in states.iter().enumerate() {
        if let Phase::Running { since_h, .. } = state.phase {
            close_run(&mut traces, i, since_h, t);
            if let Some(trace) = traces.get_mut(i) {
                trace.running_at_end = true;
            }
        }
    }
    Outcome { traces, queue }
}

/// Kueue's queue order, fixed for the run: window jobs last (rule 2), then priority, then
/// creation time (here: when the job becomes ready), then the rules' order (file, name) for
/// jobs submitted together.
fn queue_order(demands: &[Option<Demand>], jobs: &[Option<SimJob>]) -> Vec<usize> {
    let key = |i: usize| {
        let job = jobs.get(i).and_then(Option::as_ref);
        let priority = demands.get(i).and_then(Option::as_ref).map(|d| d.priority);
        (
            job.is_some_and(|j| j.window.is_some()),
            std::cmp::Reverse(priority),
            job.map_or(0.0, SimJob::ready_h),
        )
    };
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        let (wa, pa, ra) = key(a);
        let (wb, pb, rb) = key(b);
        wa.cmp(&wb)
            .then(pa.cmp(&pb))
            .then(ra.total_cmp(&rb))
            .then(a.cmp(&b))
    });
    order
}

/// Adds `(t, queued, running)` to `queue` when either count changed.
fn record_queue(
    queue: &mut Vec<(f64, usize, usize)>,
    jobs: &[Option<SimJob>],
    states: &[State],
    t: f64,
) {
    let mut queued = 0;
    let mut running = 0;
    for (job, state) in jobs.iter().zip(states) {
        match state.phase {
            Phase::Waiting if job.as_ref().is_some_and(|j| j.in_window(t)) => queued += 1,
            Phase::Running { .. } => running += 1,
            _ => {}
        }
    }
    if queue
        .last()
        .is_none_or(|&(_, q, r)| q != queued || r != running)
    {
        queue.push((t, queued, running));
    }
}

/// Ends job `i`'s current interval at `to_h`.
fn close_run(traces: &mut [Trace], i: usize, since_h: f64, to_h: f64) {
    if let Some(trace) = traces.get_mut(i)
        && to_h > since_h + EPS_H
    {
        trace.runs.push((since_h, to_h));
    }
}

/// The next instant something changes: a job becomes ready, a running job finishes, a window
/// opens or closes for a job that is waiting or running, or the horizon.
fn next_event(
    jobs: &[Option<SimJob>],
    states: &[State],
    live: &[usize],
    t: f64,
    horizon_h: f64,
) -> f64 {
    let mut next = horizon_h;
    for &i in live {
        let (Some(Some(job)), Some(state)) = (jobs.get(i), states.get(i)) else {
            continue;
        };
        let candidate = match state.phase {
            Phase::Pending => Some(job.ready_h()).filter(|&r| r > t + EPS_H),
            Phase::Waiting => job.next_window_edge(t).filter(|_| !job.in_window(t)),
            Phase::Running { .. } => {
                let finish = t + state.remaining_h.max(0.0);
                Some(
                    job.next_window_edge(t)
                        .map_or(finish, |edge| edge.min(finish)),
                )
            }
            Phase::Done => None,
        };
        if let Some(c) = candidate {
            next = next.min(c);
        }
    }
    next.max(t + EPS_H).min(horizon_h.max(t + EPS_H))
}

/// Device types some job waits for now, for the fragmentation count.
fn waiting_devices<'a>(
    demands: &'a [Option<Demand>],
    jobs: &[Option<SimJob>],
    states: &[State],
    t: f64,
) -> Vec<&'a str> {
    let mut devices: Vec<&str> = Vec::new();
    for (i, state) in states.iter().enumerate() {
        if state.phase != Phase::Waiting
            || !jobs
                .get(i)
                .and_then(Option::as_ref)
                .is_some_and(|j| j.in_window(t))
        {
            continue;
        }
        if let Some(Some(d)) = demands.get(i) {
            devices.extend(d.per_device.keys().map(String::as_str));
        }
    }
    devices.sort_unstable();
    devices.dedup();
    devices
}

/// Hours a job would redo if evicted now, times its devices: the cost of saving it.
fn save_cost(jobs: &[Option<SimJob>], states: &[State], j: usize) -> f64 {
    let (Some(Some(job)), Some(state)) = (jobs.get(j), states.get(j)) else {
        return 0.0;
    };
    (state.since_checkpoint_h + job.restart_h) * state.devices as f64
}

/// What an admission pass reads.
struct Pass<'a> {
    rules: &'a PoolRules,
    jobs: &'a [Option<SimJob>],
    alternatives: &'a [Vec<Alternative>],
    /// This run's hours of work per job (expected or sampled).
    work_h: &'a [f64],
    /// Jobs rule 14 may migrate (interruptible, no window, with alternatives), in order.
    migratable: &'a [usize],
    order: &'a [usize],
    /// Word the reason of each wait (the expected schedule; not the samples).
    explain: bool,
    t: f64,
    /// The releases at `t` (`moves::releases`) under the ledger version they were worked out
    /// at: what runs changes only with the version, and every waiting job that may move asks.
    releases: RefCell<Option<(u64, Releases)>>,
}

/// `(hour, job)`: when each running job gives its devices back, in time order
/// ([`moves::releases`]).
type Releases = Rc<[(f64, usize)]>;

/// What an admission pass changes besides the jobs' states.
struct Held<'a, 'd> {
    /// Every job's demand; a job that moves takes its alternative's.
    demands: &'a mut Cow<'d, [Option<Demand>]>,
    ledger: &'a mut Ledger,
    capacity: &'a mut Capacity,
    next_seq: &'a mut usize,
    version: &'a mut u64,
}

/// The jobs that evicted `job` at this instant, the ones that evicted them, and so on, from
/// `(victim, by)` pairs; bounded by the pairs (each is followed at most once).
fn evictors(evicted_now: &[(usize, usize)], job: usize) -> Vec<usize> {
    // Most instants evict no one: no allocation then (asked at every attempt).
    if evicted_now.is_empty() {
        return Vec::new();
    }
    let mut chain: Vec<usize> = Vec::new();
    let mut frontier = vec![job];
    for _ in 0..=evicted_now.len() {
        let Some(victim) = frontier.pop() else {
            break;
        };
        for &(v, by) in evicted_now {
            if v == victim && by != job && !chain.contains(&by) {
                chain.push(by);
                frontier.push(by);
            }
        }
    }
    chain
}

/// Takes the demands of `chain` out of `demands` (the first time, a borrowed list becomes the
/// run's own copy), to be put back with [`put_back`]; nothing when `chain` is empty.
fn hide(demands: &mut Cow<'_, [Option<Demand>]>, chain: &[usize]) -> Vec<(usize, Option<Demand>)> {
    if chain.is_empty() {
        return Vec::new();
    }
    let all = demands.to_mut();
    chain
        .iter()
        .filter_map(|&j| all.get_mut(j).map(|slot| (j, slot.take())))
        .collect()
}

/// Puts back what [`hide`] took.
fn put_back(demands: &mut Cow<'_, [Option<Demand>]>, hidden: Vec<(usize, Option<Demand>)>) {
    for (j, demand) in hidden {
        if let Some(slot) = demands.to_mut().get_mut(j) {
            *slot = demand;
        }
    }
}

/// The admission passes at `t`, in the rules' order: a waiting job starts when it fits, or by
/// reclaiming guaranteed quota (rule 7), or by preempting lower priorities of its own tenant or
/// of tenants that borrow (`borrowWithinCohort`);
/// victims lose the work since their last checkpoint plus a restart. While a pass admits
/// anyone, the waiting jobs are tried again, preemption included, as Kueue's next cycle does:
/// a job admitted late in a pass may be one a higher priority that failed earlier can preempt.
fn admit_waiting(
    p: &Pass<'_>,
    states: &mut [State],
    traces: &mut [Trace],
    held: &mut Held<'_, '_>,
) {
    let Pass {
        rules,
        jobs,
        order,
        explain,
        t,
        ..
    } = *p;
    // `(victim, by)` for every eviction at this instant: a job does not evict a job of its
    // chain of evictors at the same instant (the job that evicted it, the one that evicted
    // that one, …), so no set of jobs evicts each other in a ring for ever. Kueue's policies
    // as emitted allow such a ring: a low job within its tenant's guaranteed quota reclaims
    // from a high borrower (`reclaimWithinCohort: Any`), a normal job of its tenant preempts it
    // to borrow (`withinClusterQueue`), and the high job preempts that borrower
    // (`borrowWithinCohort: LowerPriority`); the schedule runs the ring once and stops where
    // the next eviction would start it again. Evicted by anyone else, a job competes again at
    // once, preemption included, as in Kueue's next cycle.
    let mut evicted_now: Vec<(usize, usize)> = Vec::new();
    // Bounded: a pass that admits no one ends the loop; no eviction closes a ring (above), so
    // the passes do not cycle, and (jobs + 1)² of them is counted room. The cap holds whatever
    // happens.
    let max_passes = (order.len() + 1).saturating_mul(order.len() + 1) + 1;
    for _ in 0..max_passes {
        let version_before = *held.version;
        for &i in order {
            let waiting = states
                .get(i)
                .is_some_and(|s| s.phase == Phase::Waiting && s.failed_at != Some(*held.version));
            let Some(Some(job)) = jobs.get(i) else {
                continue;
            };
            if !waiting || !job.in_window(t) {
                continue;
            }
            if held.demands.get(i).is_none_or(Option::is_none) {
                continue;
            }
            let mut decision = if held.capacity.hopeless(i) {
                None
            } else {
                // Never onto a job of its chain of evictors at this instant: those are no
                // candidates (their demands hidden from the rules, their devices still held),
                // so the rules take the next candidates in Kueue's order instead. Hidden by
                // moving them out of the list and back after the decision: a copy of every
                // demand for each such attempt was most of a Monte Carlo sample's time.
                let hidden = hide(held.demands, &evictors(&evicted_now, i));
                let demands: &[Option<Demand>] = held.demands;
                let snapshot: &[State] = states;
                let cheaper = |a: usize, b: usize| {
                    save_cost(jobs, snapshot, a)
                        .partial_cmp(&save_cost(jobs, snapshot, b))
                        .unwrap_or(Ordering::Equal)
                };
                let ledger: &Ledger = held.ledger;
                let decided = match admit(i, demands, ledger, rules, &cheaper) {
                    Admit::Fits => Some((None, Vec::new(), Rule::Reclaim)),
                    Admit::Evicts {
                        ledger: after,
                        victims,
                    } => Some((Some(after), victims, Rule::Reclaim)),
                    // The numbers first: most waits are hopeless, and the rules copy the
                    // ledger to find out.
                    Admit::Waits if held.capacity.hopeless_by_priority(i) => {
                        debug_assert!(
                            preempt_lower(i, demands, ledger, rules, &cheaper).is_none(),
                            "the numbers call a priority preemption hopeless that the rules allow"
                        );
                        None
                    }
                    Admit::Waits => preempt_lower(i, demands, ledger, rules, &cheaper)
                        .map(|(after, victims)| (Some(after), victims, Rule::Priority)),
                };
                put_back(held.demands, hidden);
                decided
            };
            let Some(Some(demand)) = held.demands.get(i) else {
                continue;
            };
            // Rule 13: a job that can neither fit nor preempt may start on an alternative.
            if decision.is_none()
                && let Some(alternative) = try_move(p, i, demand, states, traces, held)
            {
                held.capacity.set_needs(i, rules, &alternative.demand);
                if let Some(slot) = held.demands.to_mut().get_mut(i) {
                    *slot = Some(alternative.demand.clone());
                }
                decision = Some((None, Vec::new(), Rule::Reclaim));
            }
            // Rule 14: or make room by migrating a running interruptible job.
            if decision.is_none() && try_migrate(p, i, states, traces, held) {
                decision = Some((None, Vec::new(), Rule::Reclaim));
            }
            let Some(Some(demand)) = held.demands.get(i) else {
                continue;
            };
            let Some((after, victims, rule)) = decision else {
                // A full attempt failed: the job cannot start until the ledger changes.
                if let Some(state) = states.get_mut(i) {
                    state.failed_at = Some(*held.version);
                    if explain
                        && let Some(trace) = traces.get_mut(i)
                        && trace.first_start_h.is_none()
                        && let Err(blocker) = held.ledger.fits(demand, &rules.quotas, &rules.groups)
                    {
                        trace.blocked_by = Some(Blocked::Limit(blocker));
                    }
                }
                continue;
            };
            *held.version += 1;
            if let Some(after) = after {
                *held.ledger = after;
            }
            for v in victims {
                held.capacity.remove(v);
                evict(jobs, states, traces, v, i, rule, t);
                evicted_now.push((v, i));
            }
            start(i, t, states, traces, held);
        }
        // Nothing admitted: another pass would try the same jobs against the same ledger.
        if *held.version == version_before {
            break;
        }
    }
}

/// Job `i` starts at `t` on its demand: the ledger and the capacity take it, it runs under the
/// next admission number, and its first start is recorded. The caller has bumped the version.
fn start(i: usize, t: f64, states: &mut [State], traces: &mut [Trace], held: &mut Held<'_, '_>) {
    let Some(Some(demand)) = held.demands.get(i) else {
        return;
    };
    held.ledger.add(*held.next_seq, i, demand);
    held.capacity.add(i);
    if let Some(state) = states.get_mut(i) {
        state.phase = Phase::Running {
            seq: *held.next_seq,
            since_h: t,
        };
    }
    *held.next_seq += 1;
    if let Some(trace) = traces.get_mut(i) {
        trace.first_start_h.get_or_insert(t);
    }
}

/// Job `v` is evicted at `t` by job `by`: it loses the work since its last checkpoint and
/// pays a restart, and waits again.
fn evict(
    jobs: &[Option<SimJob>],
    states: &mut [State],
    traces: &mut [Trace],
    v: usize,
    by: usize,
    rule: Rule,
    t: f64,
) {
    let restart_h = jobs
        .get(v)
        .and_then(Option::as_ref)
        .map_or(0.0, |j| j.restart_h);
    let Some(state) = states.get_mut(v) else {
        return;
    };
    let Phase::Running { since_h, .. } = state.phase else {
        return;
    };
    let lost_h = state.since_checkpoint_h + restart_h;
    state.remaining_h += lost_h;
    state.since_checkpoint_h = 0.0;
    state.phase = Phase::Waiting;
    close_run(traces, v, since_h, t);
    if let Some(trace) = traces.get_mut(v) {
        trace.evictions.push(Evicted {
            at_h: t,
            by,
            rule,
            lost_h,
        });
    }
}
