//! What the schedule takes from one plan: devices, hours of work, checkpoint interval, restart,
//! deadline, window, cost per held hour; and the arithmetic of daily windows.

use loam_ir::plan::Plan;
use loam_ir::slurm_limit::time_limit;

/// Tolerance on hours: events closer than this (0.36 ms) are the same instant. Counted: far
/// below the 1e-4 h resolution the output's five significant digits keep over a 90-day horizon.
pub(crate) const EPS_H: f64 = 1e-7;

/// One job as the simulator runs it.
#[derive(Debug, Clone)]
pub(crate) struct SimJob {
    /// Hour it is submitted.
    pub(crate) submit_h: f64,
    /// Hours before it can start: the data transfer, which runs from submission on.
    pub(crate) lead_h: f64,
    /// Hours of training around the clock, expected failures and checkpoint writes included.
    pub(crate) work_h: f64,
    /// Hours of each Slurm allocation's time limit: the `--time` `loam emit --target slurm`
    /// writes (the whole run's limit, or the partitions' MaxTime or the window when shorter),
    /// which Slurm's backfill plans with (rule 16).
    pub(crate) limit_h: f64,
    /// Hours of work between checkpoints (`None`: no checkpoints, a preemption loses all).
    pub(crate) checkpoint_h: Option<f64>,
    /// Hours from a preemption or failure until training runs again.
    pub(crate) restart_h: f64,
    /// Deadline, hours after submission.
    pub(crate) deadline_h: Option<f64>,
    /// The daily window (start hour, hours) of an interruptible job with one.
    pub(crate) window: Option<(f64, f64)>,
    /// Devices it holds while it runs.
    pub(crate) devices: u64,
    /// Whether it tolerates preemption (so it may be migrated, rule 14).
    pub(crate) interruptible: bool,
}

impl SimJob {
    /// The job of `plan`, submitted at `submit_h`; `None` for a plan without an estimate.
    pub(crate) fn of(plan: &Plan, submit_h: f64) -> Option<SimJob> {
        let estimate = plan.estimate.as_ref()?;
        let work_h = estimate.train_time_h.max(0.0);
        let checkpoint_h = plan
            .checkpoint
            .as_ref()
            .map(|c| c.interval_min / 60.0)
            .filter(|h| *h > 0.0);
        let restart_h = estimate
            .goodput
            .as_ref()
            .map_or(0.0, |g| g.restart_min / 60.0);
        let window = plan
            .schedule
            .as_ref()
            .filter(|s| s.hours_per_day > 0 && s.hours_per_day < 24)
            .map(|s| (s.start_hour % 24, s.hours_per_day));
        let limit = time_limit(
            estimate.train_time_h,
            plan.checkpoint.as_ref().map_or(0.0, |c| c.write_s),
            &plan.groups,
            window.map(|(_, hours)| hours),
        );
        Some(SimJob {
            submit_h,
            lead_h: plan.data.as_ref().map_or(0.0, |d| d.transfer_h.max(0.0)),
            work_h,
            limit_h: limit.limit_min as f64 / 60.0,
            checkpoint_h,
            restart_h,
            deadline_h: plan.goal.as_ref().and_then(|g| g.deadline_h),
            window: window.map(|(start, hours)| (start as f64, hours as f64)),
            devices: plan.groups.iter().map(|g| g.devices).sum(),
            interruptible: plan.interruptible,
        })
    }

    /// The hour it may first start.
    pub(crate) fn ready_h(&self) -> f64 {
        self.submit_h + self.lead_h
    }

    /// Whether hour `t` is inside its window (always, without one).
    pub(crate) fn in_window(&self, t: f64) -> bool {
        match self.window {
            None => true,
            Some((start, hours)) => (t - start).rem_euclid(24.0) < hours - EPS_H,
        }
    }

    /// The next hour after `t` its window opens or closes (`None` without a window).
    pub(crate) fn next_window_edge(&self, t: f64) -> Option<f64> {
        let (start, hours) = self.window?;
        let into = (t - start).rem_euclid(24.0);
        let edge = if into < hours - EPS_H {
            t + (hours - into)
        } else {
            t + (24.0 - into)
        };
        Some(if edge - t < EPS_H { edge + hours } else { edge })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window_job(start: f64, hours: f64) -> SimJob {
        SimJob {
            submit_h: 0.0,
            lead_h: 0.0,
            work_h: 10.0,
            limit_h: 6.0,
            checkpoint_h: None,
            restart_h: 0.0,
            deadline_h: None,
            window: Some((start, hours)),
            devices: 8,
            interruptible: true,
        }
    }

    #[test]
    fn a_night_window_opens_and_closes_across_midnight() {
        // 22:00 for 8 hours: open 22–06, closed 06–22.
        let j = window_job(22.0, 8.0);
        assert!(!j.in_window(12.0));
        assert!(j.in_window(23.0));
        assert!(j.in_window(24.0 + 5.5));
        assert!(!j.in_window(24.0 + 6.0));
        // From noon the next edge is the opening at 22:00; from 23:00 the close at 06:00.
        assert_eq!(j.next_window_edge(12.0), Some(22.0));
        assert_eq!(j.next_window_edge(23.0), Some(30.0));
        assert_eq!(j.next_window_edge(30.0), Some(46.0));
    }
}
