//! Kueue's scheduling cycles over one site's pending JobSets, with its classical preemption
//! (kubernetes-sigs/kueue `pkg/scheduler/scheduler.go`, `pkg/scheduler/preemption/`):
//!
//! - Each ClusterQueue offers its head (BestEffortFIFO: highest WorkloadPriorityClass value,
//!   then earliest created); the heads of a cycle are taken those that fit without borrowing
//!   first, then by priority and creation. A head that does not fit waits, and the next workload
//!   of its queue becomes the head.
//! - A head that fits its queue's `nominalQuota + borrowingLimit` but not what the cohort has
//!   left may preempt, as the ClusterQueue's `preemption` allows: workloads of other queues of
//!   the cohort while their queue borrows (`reclaimWithinCohort` when the head stays within its
//!   own nominal quota, `borrowWithinCohort` when it borrows), and lower-priority workloads of
//!   its own queue (`withinClusterQueue: LowerPriority`). Candidates in Kueue's order
//!   (`CandidatesOrdering`, `preemption/common/ordering.go`: other queues first, lower priority
//!   first, most recently admitted first) are removed until the head fits, then every removal
//!   the head does not need is undone (`fillBackWorkloads`); when no set of candidates makes room
//!   nothing is preempted. A preempted workload goes back to its queue.
//! - Workloads arrive in waves: those of an earlier wave are admitted (or wait) before the next
//!   wave is applied, as when they were applied earlier.

use super::{Cluster, Pending};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

/// Devices, cpus and memory held per (ClusterQueue, (flavor, resource)).
type Used = BTreeMap<(String, (String, String)), f64>;

/// Why a head does not fit.
struct Blocked {
    reason: String,
    /// Whether it would stay within its queue's nominal quota (so reclaiming applies).
    within_nominal: bool,
}

/// Kueue's cycles over `cluster`'s pending JobSets applied in `waves` (each a set of paths; the
/// JobSets no wave names arrive last, together): per JobSet path, `None` when admitted in the
/// end, else why it waits (naming the workload that preempted it, if one did).
pub(super) fn contend_in_waves(
    cluster: &Cluster,
    waves: &[BTreeSet<String>],
) -> BTreeMap<String, Option<String>> {
    let mut state = State {
        cluster,
        queues: BTreeMap::new(),
        admitted: Vec::new(),
        used: Used::new(),
        verdicts: BTreeMap::new(),
        preempted_by: BTreeMap::new(),
    };
    let named: BTreeSet<&String> = waves.iter().flatten().collect();
    let last: BTreeSet<String> = cluster
        .pending
        .iter()
        .map(|p| p.path.clone())
        .filter(|p| !named.contains(p))
        .collect();
    for wave in waves.iter().chain(std::iter::once(&last)) {
        for (created, p) in cluster.pending.iter().enumerate() {
            if wave.contains(&p.path) {
                state.enqueue(created, p);
            }
        }
        state.cycles();
    }
    let State {
        mut verdicts,
        preempted_by,
        ..
    } = state;
    for (path, by) in preempted_by {
        if let Some(Some(why)) = verdicts.get_mut(&path) {
            *why = format!("preempted by {by}, then {why}");
        }
    }
    verdicts
}

/// Every JobSet applied at once.
pub(super) fn contend(cluster: &Cluster) -> BTreeMap<String, Option<String>> {
    contend_in_waves(cluster, &[])
}

struct State<'c> {
    cluster: &'c Cluster,
    /// Per ClusterQueue, its waiting workloads, the head last.
    queues: BTreeMap<String, Vec<(usize, &'c Pending)>>,
    /// Admitted workloads in admission order, with their creation order.
    admitted: Vec<(usize, &'c Pending)>,
    used: Used,
    verdicts: BTreeMap<String, Option<String>>,
    preempted_by: BTreeMap<String, String>,
}

impl<'c> State<'c> {
    fn enqueue(&mut self, created: usize, p: &'c Pending) {
        let q = self.queues.entry(p.queue.clone()).or_default();
        q.push((created, p));
        // BestEffortFIFO: priority, then creation; pop() takes the head.
        q.sort_by_key(|(created, p)| (Reverse(p.priority), *created));
        q.reverse();
    }

    fn quota(&self, q: &str, key: &(String, String)) -> (f64, f64) {
        self.cluster
            .cluster_queues
            .get(q)
            .and_then(|cq| cq.quota.get(key))
            .copied()
            .unwrap_or((0.0, 0.0))
    }

    fn cohort(&self, q: &str) -> String {
        self.cluster
            .cluster_queues
            .get(q)
            .map(|cq| cq.cohort.clone())
            .unwrap_or_default()
    }

    /// The ClusterQueues that share `q`'s cohort, `q` included.
    fn members(&self, q: &str) -> Vec<String> {
        let cohort = self.cohort(q);
        self.cluster
            .cluster_queues
            .iter()
            .filter(|(n, cq)| *n == q || (!cohort.is_empty() && cq.cohort == cohort))
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn held(used: &Used, q: &str, key: &(String, String)) -> f64 {
        used.get(&(q.to_string(), key.clone()))
            .copied()
            .unwrap_or(0.0)
    }

    /// Whether `q` holds more than its nominal quota of any resource `keys` names.
    fn borrows(&self, used: &Used, q: &str, keys: &BTreeMap<(String, String), f64>) -> bool {
        keys.keys()
            .any(|key| Self::held(used, q, key) > self.quota(q, key).0)
    }

    /// Whether `p` fits beside `used`, and why not.
    fn fits(&self, p: &Pending, used: &Used) -> Result<(), Blocked> {
        let within_nominal = p.usage.iter().all(|(key, need)| {
            Self::held(used, &p.queue, key) + need <= self.quota(&p.queue, key).0
        });
        // The devices first, so a reason names them rather than the cpus they come with.
        let mut requests: Vec<(&(String, String), &f64)> = p.usage.iter().collect();
        requests.sort_by_key(|((_, r), _)| r == "cpu" || r == "memory");
        for (key, need) in requests {
            let (nominal, borrowing) = self.quota(&p.queue, key);
            let mine = Self::held(used, &p.queue, key);
            if mine + need > nominal + borrowing {
                return Err(Blocked {
                    reason: format!(
                        "{} in {}: {need} requested, {} holds {mine} of {nominal} + {borrowing}",
                        key.1, key.0, p.queue
                    ),
                    within_nominal,
                });
            }
            let members = self.members(&p.queue);
            let pool: f64 = members.iter().map(|m| self.quota(m, key).0).sum();
            let taken: f64 = members.iter().map(|m| Self::held(used, m, key)).sum();
            if taken + need > pool {
                return Err(Blocked {
                    reason: format!(
                        "{} in {}: {need} requested, the cohort has {} of {pool} unused",
                        key.1,
                        key.0,
                        pool - taken
                    ),
                    within_nominal,
                });
            }
        }
        Ok(())
    }

    /// The admitted workloads `p` may preempt, in Kueue's order.
    fn candidates(&self, p: &Pending, within_nominal: bool) -> Vec<usize> {
        let Some(own) = self.cluster.cluster_queues.get(&p.queue) else {
            return Vec::new();
        };
        let cohort = self.cohort(&p.queue);
        let mut found: Vec<(bool, i64, Reverse<usize>, usize)> = Vec::new();
        for (order, (_, q)) in self.admitted.iter().enumerate() {
            let allowed = if q.queue == p.queue {
                own.within_cluster_queue == "LowerPriority" && q.priority < p.priority
            } else if cohort.is_empty() || self.cohort(&q.queue) != cohort {
                false
            } else if !self.borrows(&self.used, &q.queue, &p.usage) {
                // Kueue takes back only what another queue borrows.
                false
            } else if within_nominal {
                match own.reclaim_within_cohort.as_str() {
                    "Any" => true,
                    "LowerPriority" => q.priority < p.priority,
                    _ => false,
                }
            } else {
                own.borrow_within_cohort == "LowerPriority" && q.priority < p.priority
            };
            if allowed {
                found.push((q.queue == p.queue, q.priority, Reverse(order), order));
            }
        }
        found.sort();
        found.into_iter().map(|(.., order)| order).collect()
    }

    /// `used` without the admitted workloads at `orders`.
    fn without(&self, orders: &[usize]) -> Used {
        let mut used = self.used.clone();
        for &o in orders {
            if let Some((_, q)) = self.admitted.get(o) {
                for (key, need) in &q.usage {
                    *used.entry((q.queue.clone(), key.clone())).or_default() -= need;
                }
            }
        }
        used
    }

    /// The fewest of `p`'s candidates whose preemption lets it fit, or `None`.
    fn victims(&self, p: &Pending, within_nominal: bool) -> Option<Vec<usize>> {
        let candidates = self.candidates(p, within_nominal);
        let mut chosen = Vec::new();
        for c in candidates {
            // A candidate of another queue stays one only while its queue still borrows.
            let used = self.without(&chosen);
            let (_, q) = self.admitted.get(c)?;
            if q.queue != p.queue && !self.borrows(&used, &q.queue, &p.usage) {
                continue;
            }
            chosen.push(c);
            if self.fits(p, &self.without(&chosen)).is_ok() {
                // Undo every removal the head does not need, last chosen first.
                let mut i = chosen.len();
                while i > 1 {
                    i -= 1;
                    let mut trial = chosen.clone();
                    trial.remove(i - 1);
                    if self.fits(p, &self.without(&trial)).is_ok() {
                        chosen = trial;
                    }
                }
                return Some(chosen);
            }
        }
        None
    }

    fn admit(&mut self, created: usize, p: &'c Pending) {
        for (key, need) in &p.usage {
            *self.used.entry((p.queue.clone(), key.clone())).or_default() += need;
        }
        self.admitted.push((created, p));
        self.verdicts.insert(p.path.clone(), None);
    }

    /// The cycles until no queue has a head; bounded: each cycle takes at least one workload
    /// off a queue, and each preemption puts back fewer workloads than were ever applied.
    fn cycles(&mut self) {
        let bound = 4 * (self.cluster.pending.len() + 1) * (self.cluster.pending.len() + 1);
        for _ in 0..bound {
            let mut heads: Vec<(usize, &'c Pending)> =
                self.queues.values_mut().filter_map(Vec::pop).collect();
            if heads.is_empty() {
                return;
            }
            heads.sort_by_key(|(created, p)| (self.borrows_with(p), Reverse(p.priority), *created));
            for (created, p) in heads {
                match self.fits(p, &self.used) {
                    Ok(()) => self.admit(created, p),
                    Err(blocked) => match self.victims(p, blocked.within_nominal) {
                        Some(victims) => {
                            let mut gone: Vec<(usize, &'c Pending)> = Vec::new();
                            for (i, entry) in self.admitted.iter().enumerate() {
                                if victims.contains(&i) {
                                    gone.push(*entry);
                                }
                            }
                            self.used = self.without(&victims);
                            let mut i = 0;
                            self.admitted.retain(|_| {
                                i += 1;
                                !victims.contains(&(i - 1))
                            });
                            for (vc, v) in gone {
                                self.preempted_by.insert(v.path.clone(), p.path.clone());
                                self.enqueue(vc, v);
                            }
                            self.admit(created, p);
                        }
                        None => {
                            self.verdicts.insert(p.path.clone(), Some(blocked.reason));
                        }
                    },
                }
            }
        }
    }

    /// Whether `p` would borrow beside what is held now.
    fn borrows_with(&self, p: &Pending) -> bool {
        p.usage.iter().any(|(key, need)| {
            Self::held(&self.used, &p.queue, key) + need > self.quota(&p.queue, key).0
        })
    }
}
