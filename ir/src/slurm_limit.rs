//! The time limit (`--time`) of a job's Slurm allocations: the one rule `loam emit --target
//! slurm` writes and `loam schedule --rules slurm` plans with (Slurm's backfill plans every job
//! with its time limit, not with how long it will run).

use crate::plan::GroupIr;

/// The longest time limit loam writes: 365 days, in minutes.
pub const MAX_LIMIT_MIN: u64 = 365 * 24 * 60;

/// The time limit of each of a job's allocations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeLimit {
    /// `--time` in minutes: the whole run's limit ([`whole_run_min`]), or the partitions'
    /// MaxTime or the cheap-hours window when shorter; at least 1.
    pub limit_min: u64,
    /// The partitions' MaxTime (the smallest over the job's groups), when a group has one: the
    /// run is then cut into time chunks where it is longer.
    pub max_time_min: Option<u64>,
}

/// The whole run's time limit: the predicted training time plus 10 %, the time to write two
/// checkpoints and 10 minutes; at most 365 days.
pub fn whole_run_min(train_time_h: f64, checkpoint_write_s: f64) -> u64 {
    let minutes = (train_time_h.max(0.0) * 60.0 * 1.1).ceil()
        + (2.0 * checkpoint_write_s.max(0.0) / 60.0).ceil()
        + 10.0;
    minutes.min(MAX_LIMIT_MIN as f64) as u64
}

/// The time limit of a job that trains `train_time_h` hours, writes a checkpoint in
/// `checkpoint_write_s` seconds, runs on `groups` and, when it keeps a cheap-hours window, only
/// inside `window_hours` a day. Plans written before format 1.6 have no MaxTime: the whole run's
/// limit (or the window's).
pub fn time_limit<'a>(
    train_time_h: f64,
    checkpoint_write_s: f64,
    groups: impl IntoIterator<Item = &'a GroupIr>,
    window_hours: Option<u64>,
) -> TimeLimit {
    let max_time_min = groups
        .into_iter()
        .filter_map(|g| g.node.as_ref().and_then(|n| n.slurm_max_time_min))
        .filter(|&m| m > 0)
        .min();
    let whole = whole_run_min(train_time_h, checkpoint_write_s);
    let window_min = window_hours.map(|h| h.saturating_mul(60));
    let limit_min = [max_time_min, window_min]
        .into_iter()
        .flatten()
        .fold(whole, u64::min)
        .max(1);
    TimeLimit {
        limit_min,
        max_time_min,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_run_limits_have_margin_and_a_ceiling() {
        // 1 h: 66 min + 1 min for two 30 s writes + 10 = 77 min.
        assert_eq!(whole_run_min(1.0, 30.0), 77);
        // 600 h: 39,600 min + ceil(82 s / 60) = 2 + 10 = 39,612 min.
        assert_eq!(whole_run_min(600.0, 41.0), 39_612);
        assert_eq!(whole_run_min(1e9, 0.0), MAX_LIMIT_MIN);
    }

    #[test]
    fn the_limit_is_the_shortest_of_the_run_the_max_time_and_the_window() {
        // No group: 10 h train = 660 + 0 + 10 = 670 min; a 6 h window cuts it to 360.
        assert_eq!(
            time_limit(10.0, 0.0, [], None),
            TimeLimit {
                limit_min: 670,
                max_time_min: None
            }
        );
        assert_eq!(time_limit(10.0, 0.0, [], Some(6)).limit_min, 360);
        // A zero-hour run still gets its 10 minutes.
        assert_eq!(time_limit(0.0, 0.0, [], None).limit_min, 10);
    }
}
