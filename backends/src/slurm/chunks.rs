//! How long each Slurm allocation of a job runs and how often the job may requeue itself: a run
//! longer than its partitions' MaxTime, or than its cheap-hours window, runs in time chunks, each
//! ending with a checkpoint.

use crate::job::JobContext;
use crate::window::Window;
use loam_ir::slurm_limit::{TimeLimit, time_limit};

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
    /// `--time` in minutes: the whole run's limit, or the partitions' MaxTime or the cheap-hours
    /// window when shorter.
    pub limit_min: u64,
    /// The partitions' MaxTime (the smallest over the job's groups), when the plan has one.
    pub max_time_min: Option<u64>,
    /// Allocations the predicted training time needs (1 when it fits in one).
    pub count: u64,
    /// Seconds before the time limit that the batch script gets SIGUSR1 (`--signal=B:USR1@…`).
    pub signal_s: u64,
    /// Requeues the script allows itself: the plan's restart budget plus the time chunks (with a
    /// window, every window's allocations).
    pub max_requeues: u64,
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

/// Allocations of `limit_min` minutes that `train_min` minutes of training need when each loses
/// `lead_min` to the stop signal's lead (Slurm may send it up to a minute early): with a window
/// of `window_min`, each window holds its own allocations and the last window only what is
/// left; without one, a single allocation unless the run is cut at a MaxTime (`chunked`).
fn allocations(
    train_min: u64,
    limit_min: u64,
    lead_min: u64,
    window_min: Option<u64>,
    chunked: bool,
) -> u64 {
    let useful_min = limit_min.saturating_sub(lead_min).max(1);
    match window_min {
        Some(w) => {
            let per_window = w.div_ceil(limit_min);
            let trained_per_window = w.saturating_sub(per_window * lead_min).max(1);
            let full = train_min / trained_per_window;
            let rest = train_min - full * trained_per_window;
            (full * per_window + rest.div_ceil(useful_min)).max(1)
        }
        None if chunked => train_min.div_ceil(useful_min).max(1),
        None => 1,
    }
}

/// The time limits of `job`, which runs only inside `window` when it has one. Plans written
/// before format 1.6 have no MaxTime: one allocation with the whole run's limit (or the window).
pub fn chunks(job: &JobContext<'_>, window: Option<&Window>) -> Chunks {
    let TimeLimit {
        limit_min,
        max_time_min,
    } = time_limit(
        job.train_time_h,
        job.checkpoint_write_s,
        job.groups.iter().map(|g| g.ir),
        window.map(|w| w.hours),
    );
    let window_min = window.map(|w| w.hours * 60);
    let signal_s = (job.trainer_grace_s + STOP_MARGIN_S).min(MAX_SIGNAL_S);
    // An allocation does not train during the signal's lead, which Slurm may send up to a minute
    // early.
    let lead_min = signal_s.div_ceil(60) + 1;
    let train_min = (job.train_time_h.max(0.0) * 60.0).ceil() as u64;
    let count = allocations(
        train_min,
        limit_min,
        lead_min,
        window_min,
        max_time_min.is_some(),
    );
    Chunks {
        limit_min,
        max_time_min,
        count,
        signal_s,
        // The budget is at least 3 (never negative), so `unsigned_abs` is its value.
        max_requeues: u64::from(job.max_restarts.unsigned_abs()).saturating_add(count),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_written_as_days_hours_and_minutes() {
        // 77 min; 39,612 min = 27 d 12 h 12 min; 365 days.
        assert_eq!(format_limit(77), "0-01:17:00");
        assert_eq!(format_limit(39_612), "27-12:12:00");
        assert_eq!(format_limit(365 * 24 * 60), "365-00:00:00");
    }

    #[test]
    fn the_chunk_count_follows_the_window() {
        // 20 h of training, a 2-minute lead: a 48 h MaxTime alone needs one allocation.
        assert_eq!(allocations(1200, 1210, 2, None, true), 1);
        // In a 6 h window (358 min trained a night): four nights.
        assert_eq!(allocations(1200, 360, 2, Some(360), true), 4);
        // A 6 h window under a 2 h MaxTime: three allocations a night (354 min trained), the
        // fourth night needs 138 min, two more allocations.
        assert_eq!(allocations(1200, 120, 2, Some(360), true), 11);
        // Without MaxTime or window: one allocation with the whole run's limit.
        assert_eq!(allocations(1200, 1400, 2, None, false), 1);
    }
}
