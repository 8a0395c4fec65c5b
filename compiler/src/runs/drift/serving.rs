//! Drift of serving runs: each stored serving benchmark (`runs/<site>/serving.csv`) beside the
//! plan its service has now. A service's plan predicts its busiest hour, and a benchmark offers
//! its own load, so the run is compared with what the plan implies at the run's load:
//!
//! - **Throughput.** Below the deployment's capacity a deployment generates what it is offered
//!   (`request_rate × output_len` tokens/s), whatever its engine; the plan states that its
//!   devices carry at least its busiest hour's `output_tokens_per_s_per_device` within its
//!   targets. The expected figure per device is therefore the offered load spread over the run's
//!   devices when that is at most the plan's figure (*rate-bound*: the run drifts when it is off
//!   by more than the band either way), else the plan's figure (*capacity-bound*, and every run
//!   that sent its requests at once, rate `inf`: only a run slower by more than the band drifts,
//!   a faster one shows headroom the plan did not claim, not a contradiction).
//! - **Latency.** The median TTFT and TPOT are compared with the plan's medians (`ttft_p50_s`,
//!   `tpot_p50_s`), only for a rate-bound run: a load at most the busiest hour's is no slower than
//!   the plan's busiest hour, so a median above the prediction by more than the band contradicts
//!   it. The targets are at the traffic's percentile (p99 by default) and a feasible plan's
//!   median lies below them, so the prediction is the stricter figure of the two.
//! - **Heavier than the busiest hour, up to capacity.** A plan also states its capacity within
//!   the targets (`estimate.at_capacity`): one replica at its capacity (aggregated, Plan JSON
//!   1.14) or the whole deployment at the heaviest rate it carries (disaggregated, 1.15), its
//!   output tokens/s per device and its medians. A run offered more than the busiest hour but at
//!   most that capacity is still rate-bound (it generates what it is offered), and its medians
//!   are compared with the medians at capacity, the slowest the plan allows at any load up to
//!   it (latency grows with load). Above capacity, and for every run that sent its requests at
//!   once, the throughput is expected at least at the capacity figure (the busiest hour's when
//!   the plan states none: a Plan JSON older than that), and the medians are not
//!   compared: the plan says nothing of a load it does not meet the targets at.
//!
//! The band is the training runs' ([`super::band`]): the plan's `throughput_uncertainty`, at
//! least 10 %.

use super::super::store::serving::ServingRow;
use super::band;
use serde::Serialize;

/// What the plan of a service predicts, as `loam runs check` reads it from a Plan JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct ServicePredicted {
    /// The service.
    pub service: String,
    /// The device of its roles (`A+B` when its roles run on two).
    pub device: String,
    /// The site of its roles, likewise.
    pub site: String,
    /// The engine keyword.
    pub engine: String,
    /// Devices at the busiest hour.
    pub devices: u64,
    /// Generated tokens per second per device at the busiest hour.
    pub output_tokens_per_s_per_device: f64,
    /// Median time to first token, ms.
    pub ttft_p50_ms: f64,
    /// Median time per output token, ms.
    pub tpot_p50_ms: f64,
    /// The stated relative uncertainty of the throughput (0 when none is stated).
    pub uncertainty: f64,
    /// One replica at its capacity within the targets, when the plan states it.
    pub at_capacity: Option<AtCapacity>,
}

/// What a plan predicts of one replica at its capacity within the targets.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AtCapacity {
    /// Generated tokens per second per device.
    pub output_tokens_per_s_per_device: f64,
    /// Median time to first token, ms.
    pub ttft_p50_ms: f64,
    /// Median time per output token, ms.
    pub tpot_p50_ms: f64,
}

/// One median latency of a run beside the plan's.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Latency {
    /// `TTFT` or `TPOT`.
    pub what: &'static str,
    /// The run's median, ms.
    pub measured_ms: f64,
    /// The plan's median, ms.
    pub predicted_ms: f64,
    /// Whether the run's median is above the plan's by more than the band.
    pub drifted: bool,
}

/// One stored serving run compared with its service's plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServingComparison {
    /// The run.
    pub run_id: String,
    /// Its benchmark result file.
    pub log: String,
    /// The service it measured.
    pub service: String,
    /// Whether the service has a plan now; a run of a service that is gone is only named.
    pub planned: bool,
    /// Measured generated tokens/s per device of the run.
    pub measured: f64,
    /// What the plan implies at the run's load, per device (absent when not planned).
    pub expected: Option<f64>,
    /// Whether the run's offered load was at most what the plan says its devices carry: the
    /// busiest hour's, or the capacity's (see the module).
    pub rate_bound: bool,
    /// Whether the offered load was above the busiest hour and at most the plan's capacity: the
    /// medians are then compared with the medians at capacity.
    pub above_busiest_hour: bool,
    /// `measured / expected − 1`.
    pub deviation: Option<f64>,
    /// The band: the plan's uncertainty, at least [`super::LEAST_BAND`].
    pub band: f64,
    /// The medians compared (rate-bound runs only).
    pub latencies: Vec<Latency>,
    /// Whether the throughput or a median is outside the band.
    pub drifted: bool,
    /// What differs between the run and the plan besides the figures (device, site, engine,
    /// devices), or that the service has no plan.
    pub differs: Vec<String>,
}

/// The generated tokens/s per device a benchmark offered: its Poisson rate times the mean
/// output tokens of a request, over the run's devices; `None` for a run that sent every request
/// at once (`inf`) or states no lengths.
pub fn offered_per_device(row: &ServingRow) -> Option<f64> {
    let rate = row
        .request_rate
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r > 0.0)?;
    let output = row.output_len.filter(|o| o.is_finite() && *o > 0.0)?;
    Some(rate * output / f64::from(row.device_count.max(1)))
}

/// Compares each stored serving run with the plan of its service; a run of a service without a
/// plan is kept with `planned: false`, a row with no positive finite throughput is skipped.
pub fn compare(rows: &[ServingRow], plans: &[ServicePredicted]) -> Vec<ServingComparison> {
    rows.iter()
        .filter(|r| r.out_tok_s_total.is_finite() && r.out_tok_s_total > 0.0)
        .map(|row| {
            let measured = row.out_tok_s_total / f64::from(row.device_count.max(1));
            match plans.iter().find(|p| p.service == row.service) {
                Some(plan) => compare_one(row, measured, plan),
                None => ServingComparison {
                    run_id: row.run_id.clone(),
                    log: row.log.clone(),
                    service: row.service.clone(),
                    planned: false,
                    measured,
                    expected: None,
                    rate_bound: false,
                    above_busiest_hour: false,
                    deviation: None,
                    band: band(0.0),
                    latencies: Vec::new(),
                    drifted: false,
                    differs: vec![format!("service `{}` has no plan", row.service)],
                },
            }
        })
        .collect()
}

fn compare_one(row: &ServingRow, measured: f64, plan: &ServicePredicted) -> ServingComparison {
    let band = band(plan.uncertainty);
    let claimed = plan.output_tokens_per_s_per_device;
    let capacity = plan.at_capacity;
    let (expected, rate_bound, medians) = match offered_per_device(row) {
        Some(offered) if offered <= claimed => {
            (offered, true, Some((plan.ttft_p50_ms, plan.tpot_p50_ms)))
        }
        Some(offered) if capacity.is_some_and(|c| offered <= c.output_tokens_per_s_per_device) => (
            offered,
            true,
            capacity.map(|c| (c.ttft_p50_ms, c.tpot_p50_ms)),
        ),
        _ => (
            capacity.map_or(claimed, |c| c.output_tokens_per_s_per_device.max(claimed)),
            false,
            None,
        ),
    };
    let deviation = (expected > 0.0).then(|| measured / expected - 1.0);
    let throughput_drifted = deviation.is_some_and(|d| {
        if rate_bound {
            d.abs() > band
        } else {
            d < -band
        }
    });
    let latencies: Vec<Latency> = medians
        .map(|(ttft, tpot)| {
            [("TTFT", row.ttft_ms, ttft), ("TPOT", row.tpot_ms, tpot)]
                .into_iter()
                .filter(|(_, _, predicted)| predicted.is_finite() && *predicted > 0.0)
                .map(|(what, measured_ms, predicted_ms)| Latency {
                    what,
                    measured_ms,
                    predicted_ms,
                    drifted: measured_ms > predicted_ms * (1.0 + band),
                })
                .collect()
        })
        .unwrap_or_default();
    let mut differs = Vec::new();
    for (what, ran, planned) in [
        ("device", &row.device, &plan.device),
        ("site", &row.site, &plan.site),
        ("engine", &row.engine, &plan.engine),
    ] {
        if ran != planned {
            differs.push(format!("{what} {ran} (plan {planned})"));
        }
    }
    if u64::from(row.device_count) != plan.devices {
        differs.push(format!(
            "devices {} (plan {})",
            row.device_count, plan.devices
        ));
    }
    ServingComparison {
        run_id: row.run_id.clone(),
        log: row.log.clone(),
        service: row.service.clone(),
        planned: true,
        measured,
        expected: Some(expected),
        rate_bound,
        above_busiest_hour: rate_bound && expected > claimed,
        deviation,
        band,
        drifted: throughput_drifted || latencies.iter().any(|l| l.drifted),
        latencies,
        differs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runs::store::serving::{COLUMNS, read_rows};

    /// A stored row of the vLLM fixture's shape: 12 H800 at zhongwei, 8 requests/s of 198.6
    /// output tokens, `total` tokens/s generated, TTFT and TPOT medians in ms.
    fn row(service: &str, rate: &str, total: f64, ttft: f64, tpot: f64) -> ServingRow {
        let text = format!(
            "{COLUMNS}\nzw_1,2026-12-04,xirang,zhongwei,{service},vllm-benchmark-serving,b.json,\
             vllm,,m,80,8192,64,8,28672,128256,fp8,H800_SXM,12,2,1,6,poisson,215.3,198.6,{rate},,\
             {total},7.62,{ttft},241.9,{tpot},52.7,500,185,33,0.1,x\n"
        );
        read_rows(&text).remove(0)
    }

    fn plan(uncertainty: f64) -> ServicePredicted {
        ServicePredicted {
            service: "chat".into(),
            device: "H800_SXM".into(),
            site: "zhongwei".into(),
            engine: "vllm".into(),
            devices: 12,
            output_tokens_per_s_per_device: 500.0,
            ttft_p50_ms: 185.0,
            tpot_p50_ms: 33.0,
            uncertainty,
            at_capacity: None,
        }
    }

    #[test]
    fn a_rate_bound_run_is_compared_with_its_offered_load_and_the_plan_s_medians() {
        // Offered: 8 × 198.6 / 12 = 132.4 tokens/s per device, below the plan's 500: rate-bound.
        // 1,513.7 / 12 = 126.14 is 126.14 / 132.4 − 1 = −4.7 %, inside ±10 %; TTFT 78.2 < 185 ×
        // 1.1 and TPOT 30.5 < 33 × 1.1 = 36.3.
        let ok = &compare(&[row("chat", "8", 1513.7, 78.2, 30.5)], &[plan(0.05)])[0];
        assert!(ok.rate_bound && !ok.drifted, "{ok:?}");
        assert!((ok.expected.unwrap() - 132.4).abs() < 1e-9);
        assert!((ok.deviation.unwrap() + 0.047_26).abs() < 1e-4, "{ok:?}");
        assert_eq!(ok.latencies.len(), 2);
        assert!(ok.differs.is_empty(), "{:?}", ok.differs);
        // 30 % slower: 1,059.6 / 12 = 88.3 is −33.3 % of 132.4, and TPOT 39.65 > 36.3.
        let slow = &compare(&[row("chat", "8", 1059.59, 101.66, 39.65)], &[plan(0.05)])[0];
        assert!(slow.drifted);
        assert!((slow.deviation.unwrap() + 0.3331).abs() < 1e-3, "{slow:?}");
        let drifted: Vec<&str> = slow
            .latencies
            .iter()
            .filter(|l| l.drifted)
            .map(|l| l.what)
            .collect();
        assert_eq!(drifted, ["TPOT"]);
        // A slower median alone drifts: TPOT 37 ms > 36.3, the throughput as offered.
        assert!(compare(&[row("chat", "8", 1513.7, 78.2, 37.0)], &[plan(0.0)])[0].drifted);
        // A plan stating ±40 % takes TPOT 39.65 < 33 × 1.4 = 46.2 but not −33 % throughput.
        let wide = &compare(&[row("chat", "8", 1059.59, 78.2, 39.65)], &[plan(0.40)])[0];
        assert!(
            !wide.drifted && (wide.band - 0.40).abs() < 1e-12,
            "{wide:?}"
        );
    }

    #[test]
    fn a_capacity_bound_run_drifts_only_when_slower_than_the_plan_s_figure() {
        // 40 requests/s × 198.6 / 12 = 662 tokens/s per device, above the plan's 500: the plan's
        // figure is expected. 6,600 / 12 = 550 is +10 % (headroom, not drift); 5,000 / 12 =
        // 416.7 is −16.7 % (drift); the medians are not compared at a heavier load.
        let fast = &compare(&[row("chat", "40", 6600.0, 900.0, 90.0)], &[plan(0.0)])[0];
        assert!(!fast.rate_bound && !fast.drifted && fast.latencies.is_empty());
        assert_eq!(fast.expected, Some(500.0));
        let slow = &compare(&[row("chat", "40", 5000.0, 90.0, 20.0)], &[plan(0.0)])[0];
        assert!(slow.drifted);
        // All at once (`inf`) is capacity-bound too.
        let offline = &compare(&[row("chat", "inf", 5000.0, 90.0, 20.0)], &[plan(0.0)])[0];
        assert!(!offline.rate_bound && offline.drifted);
    }

    /// A plan that states one replica at capacity: 700 tokens/s per device with medians of
    /// 300 ms to the first token and 45 ms per token.
    fn with_capacity() -> ServicePredicted {
        ServicePredicted {
            at_capacity: Some(AtCapacity {
                output_tokens_per_s_per_device: 700.0,
                ttft_p50_ms: 300.0,
                tpot_p50_ms: 45.0,
            }),
            ..plan(0.0)
        }
    }

    #[test]
    fn a_run_above_the_busiest_hour_up_to_capacity_is_compared_with_the_medians_at_capacity() {
        // 40 × 198.6 / 12 = 662 tokens/s per device: above the busiest hour's 500, at most the
        // capacity's 700, so rate-bound. 7,944 / 12 = 662 is on the offered load; TTFT 250 ms is
        // under 300 × 1.1 = 330, TPOT 52 ms over 45 × 1.1 = 49.5: the plan said at most 45.
        let heavy = &compare(
            &[row("chat", "40", 7944.0, 250.0, 52.0)],
            &[with_capacity()],
        )[0];
        assert!(heavy.rate_bound && heavy.above_busiest_hour, "{heavy:?}");
        assert!((heavy.expected.unwrap() - 662.0).abs() < 1e-9, "{heavy:?}");
        let compared: Vec<(&str, f64, bool)> = heavy
            .latencies
            .iter()
            .map(|l| (l.what, l.predicted_ms, l.drifted))
            .collect();
        assert_eq!(compared, [("TTFT", 300.0, false), ("TPOT", 45.0, true)]);
        assert!(heavy.drifted);
        // The same load with TPOT 49 ms (under 49.5) is within the plan.
        let ok = &compare(
            &[row("chat", "40", 7944.0, 250.0, 49.0)],
            &[with_capacity()],
        )[0];
        assert!(!ok.drifted, "{ok:?}");
        // 30 % under the offered load drifts, as at any rate-bound load.
        let slow = &compare(
            &[row("chat", "40", 5560.8, 250.0, 40.0)],
            &[with_capacity()],
        )[0];
        assert!(slow.drifted && (slow.deviation.unwrap() + 0.3).abs() < 1e-9);
        // Below the busiest hour the busiest hour's medians still apply (185 and 33 ms).
        let light = &compare(&[row("chat", "8", 1588.8, 78.2, 30.5)], &[with_capacity()])[0];
        assert!(light.rate_bound && !light.above_busiest_hour, "{light:?}");
        assert_eq!(light.latencies[1].predicted_ms, 33.0);
    }

    #[test]
    fn a_run_above_capacity_is_expected_at_least_at_the_capacity_figure() {
        // 50 × 198.6 / 12 = 827.5 per device, above the capacity's 700: only the throughput is
        // compared, against 700 (not the busiest hour's 500). 8,000 / 12 = 666.7 is −4.8 %;
        // 7,000 / 12 = 583.3 is −16.7 %, slower than the plan's capacity by more than 10 %.
        let held = &compare(
            &[row("chat", "50", 8000.0, 2000.0, 90.0)],
            &[with_capacity()],
        )[0];
        assert!(
            !held.rate_bound && !held.drifted && held.latencies.is_empty(),
            "{held:?}"
        );
        assert_eq!(held.expected, Some(700.0));
        let slow = &compare(
            &[row("chat", "50", 7000.0, 2000.0, 90.0)],
            &[with_capacity()],
        )[0];
        assert!(slow.drifted, "{slow:?}");
        // All at once: the same.
        let offline = &compare(
            &[row("chat", "inf", 7000.0, 2000.0, 90.0)],
            &[with_capacity()],
        )[0];
        assert!(!offline.rate_bound && offline.drifted);
    }

    #[test]
    fn a_run_of_a_gone_service_or_another_deployment_says_so() {
        let gone = &compare(&[row("old-chat", "8", 1513.7, 78.2, 30.5)], &[plan(0.0)])[0];
        assert!(!gone.planned && !gone.drifted);
        assert_eq!(gone.differs, ["service `old-chat` has no plan"]);
        let mut moved = plan(0.0);
        moved.device = "H20".into();
        moved.site = "guiyang".into();
        moved.engine = "sglang".into();
        moved.devices = 8;
        let out = &compare(&[row("chat", "8", 1513.7, 78.2, 30.5)], &[moved])[0];
        assert_eq!(
            out.differs,
            [
                "device H800_SXM (plan H20)",
                "site zhongwei (plan guiyang)",
                "engine vllm (plan sglang)",
                "devices 12 (plan 8)"
            ]
        );
        // A row whose throughput is not a positive number is not compared.
        assert!(compare(&[row("chat", "8", f64::NAN, 1.0, 1.0)], &[plan(0.0)]).is_empty());
    }
}
