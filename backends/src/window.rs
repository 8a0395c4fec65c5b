//! The cheap-hours window of an interruptible plan as the Slurm and bare-metal scripts keep it:
//! the hour it opens, how long it stays open and the site's time zone, which the scripts hand to
//! `TZ=… date` (`templates/common/window.sh.j2`).

use crate::job::JobContext;
use serde::Serialize;

/// A window the scripts must keep: open for `hours` (1–23) a day from `open`:00.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Window {
    /// Hour (0–23) the window opens, in `time_zone`.
    pub open: u64,
    /// Hours it stays open.
    pub hours: u64,
    /// The site's IANA time zone; `None`: the machine's own zone.
    pub time_zone: Option<String>,
    /// `#SBATCH --begin` of the first allocation: `HH:00:00`, today's or tomorrow's.
    pub begin: String,
}

/// The window of `job`, or `None` without a schedule or with one that is never or always open
/// (nothing to keep).
pub fn window(job: &JobContext<'_>) -> Option<Window> {
    let schedule = job.schedule?;
    if schedule.hours_per_day == 0 || schedule.hours_per_day >= 24 {
        return None;
    }
    let open = schedule.start_hour % 24;
    Some(Window {
        open,
        hours: schedule.hours_per_day,
        time_zone: schedule.time_zone.clone(),
        begin: format!("{open:02}:00:00"),
    })
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    /// The shell functions with a window of `hours` h from `open`:00 in `zone`.
    fn functions(open: u64, hours: u64, zone: &str) -> String {
        let env = crate::env::environment().unwrap();
        let body = env
            .get_template("common/window.sh.j2")
            .unwrap()
            .render(minijinja::context! {})
            .unwrap();
        format!("window_hour={open} window_hours={hours} window_tz={zone}\n{body}")
    }

    /// `window_at` at `now` (seconds since the epoch): open, seconds left, next opening.
    fn at(functions: &str, now: u64) -> (u64, u64, u64) {
        let out = Command::new("bash")
            .args([
                "-c",
                &format!(
                    "{functions}\nwindow_at {now}; echo $window_open $window_left_s $window_next"
                ),
            ])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let v: Vec<u64> = text
            .split_whitespace()
            .map(|w| w.parse().unwrap())
            .collect();
        (v[0], v[1], v[2])
    }

    /// 22:00 for 6 h in Shanghai (UTC+8, no daylight saving) crosses midnight.
    #[test]
    fn a_window_across_midnight_in_the_sites_zone() {
        let f = functions(22, 6, "Asia/Shanghai");
        // 2026-01-15 14:00 UTC is 22:00 in Shanghai: the window opens.
        let opens: u64 = 1_768_485_600;
        let day = 86_400;
        assert_eq!(at(&f, opens), (1, 6 * 3600, opens + day));
        // 01:30 the next morning: open for 2.5 h more.
        assert_eq!(at(&f, opens + 3 * 3600 + 1800), (1, 9000, opens + day));
        // 04:00 it has closed; 12:00 it is closed; both wait for 22:00.
        assert_eq!(at(&f, opens + 6 * 3600), (0, 0, opens + day));
        assert_eq!(at(&f, opens + 14 * 3600), (0, 0, opens + day));
        // 21:59:59 the day before.
        assert_eq!(at(&f, opens - 1), (0, 0, opens));
    }

    /// Across a change of the clocks the next opening is still at the window's hour.
    #[test]
    fn the_next_opening_follows_daylight_saving() {
        let f = functions(4, 4, "Europe/Berlin");
        // 2026-03-28 12:00 CET (11:00 UTC); the clocks go forward at 02:00 on the 29th, so the
        // window opens at 04:00 CEST (02:00 UTC) then, 23 hours of clock time after 05:00 CET.
        let noon: u64 = 1_774_695_600;
        let (open, _, next) = at(&f, noon);
        assert_eq!(open, 0);
        assert_eq!(next, 1_774_749_600);
        assert_eq!(at(&f, next), (1, 4 * 3600, next + 86_400));
    }
}
