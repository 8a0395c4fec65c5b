//! How long each Slurm allocation of a job runs and how often the job may requeue itself: a run
//! longer than its partitions' MaxTime runs in time chunks, each ending with a checkpoint.

use crate::job::JobContext;

/// The longest time limit loam writes: 365 days, in minutes.
const MAX_LIMIT_MIN: u64 = 365 * 24 * 60;

/// Seconds the batch script needs after the trainers' grace before the time limit: the tasks
/// poll for the stop request every 2 s (longer where the checkpoint file system caches file
/// attributes), the trainers exit, `srun` returns and `scontrol requeue` reaches slurmctld.
/// Counted: the poll interval and a few round trips to slurmctld, rounded up generously.
pub const STOP_MARGIN_S: u64 = 30;

/// The largest `--signal` time Slurm accepts (`sig_time` is 0 … 65535 seconds).
const MAX_SIGNAL_S: u64 = 65_535;

/// The time limits of one job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunks {
    /// `--time` in minutes: the whole run's limit, or the partitions' MaxTime when shorter.
    pub limit_min: u64,
    /// The partitions' MaxTime (the smallest over the job's groups), when the plan has one.
    pub max_time_min: Option<u64>,
    /// Allocations the predicted training time needs (1 when it fits in one).
    pub count: u64,
    /// Seconds before the time limit that the batch script gets SIGUSR1 (`--signal=B:USR1@…`).
    pub signal_s: u64,
    /// Requeues the script allows itself: the plan's restart budget plus the time chunks.
    pub max_requeues: u64,
}

/// The whole run's time limit: the predicted training time plus 10 %, the time to write two
/// checkpoints and 10 minutes; at most 365 days.
pub fn whole_run_min(train_time_h: f64, checkpoint_write_s: f64) -> u64 {
    let minutes = (train_time_h.max(0.0) * 60.0 * 1.1).ceil()
        + (2.0 * checkpoint_write_s.max(0.0) / 60.0).ceil()
        + 10.0;
    minutes.min(MAX_LIMIT_MIN as f64) as u64
}

/// `D-HH:MM:00`, Slurm's `days-hours:minutes:seconds`.
pub fn format_limit(minutes: u64) -> String {
    format!(
        "{}-{:02}:{:02}:00",
        minutes / (24 * 60),
        minutes / 60 % 24,
        minutes % 60
    )
}

/// The time limits of `job`. Plans written before format 1.6 have no MaxTime: one allocation
/// with the whole run's limit.
pub fn chunks(job: &JobContext<'_>) -> Chunks {
    let max_time_min = job
        .groups
        .iter()
        .filter_map(|g| g.ir.node.as_ref().and_then(|n| n.slurm_max_time_min))
        .filter(|&m| m > 0)
        .min();
    let whole = whole_run_min(job.train_time_h, job.checkpoint_write_s);
    let limit_min = max_time_min.map_or(whole, |m| m.min(whole)).max(1);
    let signal_s = (job.grace_s + STOP_MARGIN_S).min(MAX_SIGNAL_S);
    // What an allocation trains for: its limit less the signal's lead, which Slurm may send up to
    // a minute early.
    let useful_min = limit_min.saturating_sub(signal_s.div_ceil(60) + 1).max(1);
    let train_min = (job.train_time_h.max(0.0) * 60.0).ceil() as u64;
    let count = if max_time_min.is_some() {
        train_min.div_ceil(useful_min).max(1)
    } else {
        1
    };
    Chunks {
        limit_min,
        max_time_min,
        count,
        signal_s,
        max_requeues: job.max_restarts.saturating_add(count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_run_limits_have_margin_and_a_ceiling() {
        assert_eq!(format_limit(whole_run_min(1.0, 30.0)), "0-01:17:00");
        assert_eq!(format_limit(whole_run_min(600.0, 41.0)), "27-12:12:00");
        assert_eq!(format_limit(whole_run_min(1e9, 0.0)), "365-00:00:00");
    }
}
