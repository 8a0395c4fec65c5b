//! Unit tests of Slurm's rules (rule 16) with time limits longer than the runs: every limit,
//! start and finish worked out by hand in the comments.

use super::tests::{H100, find, options, timed_on};
use super::*;
use crate::admission::tests::catalogue;

/// `job` of tenant `nlp` on `devices` H100 of `ng-a`, training `hours` and writing a checkpoint
/// in `write_s` seconds (which sets its Slurm time limit), every 60 minutes.
fn limited(job: &str, priority: &str, devices: u64, hours: f64, write_s: f64) -> Plan {
    timed_on(
        job,
        "nlp",
        priority,
        devices,
        hours,
        serde_json::json!({
            "checkpoint": {"interval_min": 60.0, "write_s": write_s, "path": job}
        }),
    )
}

/// (start, finish) of `name`.
fn ran(s: &Schedule, name: &str) -> (Option<f64>, Option<f64>) {
    let j = find(s, name);
    (j.start_h, j.finish_h)
}

#[test]
fn slurm_plans_with_time_limits_so_a_short_run_with_a_long_limit_does_not_backfill() {
    // 4 nodes × 8 H100, nlp guaranteed all 32. Each job's time limit is the one `loam emit
    // --target slurm` writes: ceil(1.1 × train minutes) + ceil(2 × write s / 60) + 10 minutes.
    // - e1 high, 24 devices, 2 h, write 2940 s: 132 + 98 + 10 = 240 min = 4 h.
    // - e2 normal, 32 devices, 1 h, write 1320 s: 66 + 44 + 10 = 120 min = 2 h.
    // - e3 low, 8 devices, 1 h, write 6720 s: 66 + 224 + 10 = 300 min = 5 h.
    // - e4 low, 8 devices, 2.5 h, write 150 s: 165 + 5 + 10 = 180 min = 3 h.
    // Order: e1, e2, then e3 before e4 (same priority, file order).
    // t=0: e1 starts (its limit holds 24 devices to 4). e2 does not fit: it reserves 4–6. e3
    //   fits the 8 free devices, and its run would end at 1, before the reservation, but its
    //   limit (0–5) overlaps it: e3 waits (reserving 6). e4's limit 0–3 ends before 4: it is
    //   backfilled at 0.
    // t=2: e1 ends early; e4's limit holds 8 devices to 3: e2 re-plans to 3, e3 to 5.
    // t=2.5: e4 ends early; e2 fits and starts (to 3.5). t=3.5: e3 starts (to 4.5).
    // Planning with the expected runs instead, e3 (ending at 1 ≤ e1's end at 2) would start at
    // 0, e4 (ending at 2.5 > 2) would wait, e2 would start at 2 and e4 at 3.
    let cat = catalogue(&[("ng-a", H100, 4)], &[("nlp", &[(H100, 32, 0)])]);
    let plans = [
        limited("e1", "high", 24, 2.0, 2940.0),
        limited("e2", "normal", 32, 1.0, 1320.0),
        limited("e3", "low", 8, 1.0, 6720.0),
        limited("e4", "low", 8, 2.5, 150.0),
    ];
    let slurm = Options {
        rules: Rules::Slurm,
        ..options(24.0)
    };
    let s = schedule(&plans, &Submits::new(), &cat, &slurm);
    assert_eq!(ran(&s, "e1"), (Some(0.0), Some(2.0)));
    assert_eq!(ran(&s, "e4"), (Some(0.0), Some(2.5)));
    assert_eq!(ran(&s, "e2"), (Some(2.5), Some(3.5)));
    assert_eq!(ran(&s, "e3"), (Some(3.5), Some(4.5)));
    // Its last wait, from 2.5, is behind e2's 32 devices (the quota is checked first).
    assert_eq!(
        find(&s, "e3").reason,
        "waited until hour 3.5: needs 8 H100_SXM, 0 left of tenant `nlp`'s guaranteed + elastic quota"
    );
    // Kueue's rules know no limits (nor reservations): e1 and e3 start at 0; e4, next on the
    // free devices, at 1 when e3 ends; e2 (normal) preempts e4 (low) when e1 ends at 2 and runs
    // to 3, and e4 starts again at 3.
    let kueue = schedule(&plans, &Submits::new(), &cat, &options(24.0));
    assert_eq!(ran(&kueue, "e3"), (Some(0.0), Some(1.0)));
    assert_eq!(ran(&kueue, "e2"), (Some(2.0), Some(3.0)));
    assert_eq!(find(&kueue, "e4").start_h, Some(1.0));
}

#[test]
fn a_run_longer_than_its_max_time_holds_its_devices_to_its_end_in_the_plan() {
    // 2 nodes × 8 H100, nlp guaranteed all 16.
    // - m1 high, 8 devices, 10 h, on a partition with MaxTime 120 min: its `--time` is the
    //   2-hour chunk. The schedule does not requeue chunks, so m1 runs 0–10 and is planned to
    //   hold its devices to the later of its limit (2) and its end (10).
    // - m2 normal, 16 devices, 1 h: reserves 10, when m1 ends.
    // - m3 low, 8 devices, 5 h, no MaxTime: limit 330 + 0 + 10 = 340 min (5.67 h); from 0 it
    //   ends before 10: backfilled at 0, ends at 5. (Planning m1 to its chunk's end, 2, would
    //   reserve 2 for m2 and keep m3 waiting, though m2 cannot start before 10.)
    // m2 runs 10–11.
    let cat = catalogue(&[("ng-a", H100, 2)], &[("nlp", &[(H100, 16, 0)])]);
    let mut m1 = limited("m1", "high", 8, 10.0, 0.0);
    m1.groups[0].node = serde_json::from_value(serde_json::json!({
        "vendor": "nvidia", "collective": "nccl", "slurm_max_time_min": 120
    }))
    .unwrap();
    let plans = [
        m1,
        limited("m2", "normal", 16, 1.0, 0.0),
        limited("m3", "low", 8, 5.0, 0.0),
    ];
    let slurm = Options {
        rules: Rules::Slurm,
        ..options(24.0)
    };
    let s = schedule(&plans, &Submits::new(), &cat, &slurm);
    assert_eq!(ran(&s, "m1"), (Some(0.0), Some(10.0)));
    assert_eq!(ran(&s, "m3"), (Some(0.0), Some(5.0)));
    assert_eq!(ran(&s, "m2"), (Some(10.0), Some(11.0)));
}
