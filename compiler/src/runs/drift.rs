//! Drift (issue 30, item 6): a stored run whose measured throughput falls outside the stated
//! uncertainty of the plan its job has now (a slow node, a regression of the stack, a plan that
//! no longer describes what runs). Pure: the caller reads the store and the Plan JSON.

pub mod serving;

use super::store::StoreRow;
use serde::Serialize;

/// Counted: the least band a run is compared with, as a share of the prediction. A plan on a
/// measured device states no uncertainty of its figures (0 %), but the model itself is off by a
/// median 6 % on the published runs, 14 % of them by more than 20 % (`loam calibrate` on the
/// shared file, docs/cost-model.md), so a run within 10 % contradicts nothing.
pub const LEAST_BAND: f64 = 0.10;

/// The band a run is compared with: the plan's stated relative uncertainty, at least
/// [`LEAST_BAND`]. One rule for training runs and serving runs.
pub fn band(uncertainty: f64) -> f64 {
    uncertainty.max(LEAST_BAND)
}

/// What the plan of a job predicts, as `loam runs check` reads it from a Plan JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    /// The job.
    pub job: String,
    /// The device of its group (a plan over two groups is not compared).
    pub device: String,
    /// The site of its group.
    pub site: String,
    /// Its layout as `t p d c v`.
    pub layout: [u64; 5],
    /// Predicted tokens/s per device.
    pub tokens_per_s_per_device: f64,
    /// The stated relative uncertainty (0 when none is stated).
    pub uncertainty: f64,
}

/// One stored run compared with its job's plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// The run.
    pub run_id: String,
    /// Its log.
    pub log: String,
    /// The job and the plan it is compared with.
    pub job: String,
    /// Measured tokens/s per device.
    pub measured: f64,
    /// The plan's prediction.
    pub predicted: f64,
    /// `measured / predicted − 1`.
    pub deviation: f64,
    /// The band the run had to fall in: the plan's uncertainty, at least [`LEAST_BAND`].
    pub band: f64,
    /// Whether the run is outside the band.
    pub drifted: bool,
    /// What differs between the run and the plan besides the figure (device, site, layout).
    pub differs: Vec<String>,
}

/// Compares each stored run with the plan of its job; runs whose job has no plan are skipped.
pub fn compare(rows: &[StoreRow], plans: &[Predicted]) -> Vec<Comparison> {
    rows.iter()
        .filter_map(|row| {
            let plan = plans.iter().find(|p| p.job == row.job)?;
            if plan.tokens_per_s_per_device.is_nan() || plan.tokens_per_s_per_device <= 0.0 {
                return None;
            }
            let deviation =
                row.measured_tokens_per_s_per_device / plan.tokens_per_s_per_device - 1.0;
            let band = band(plan.uncertainty);
            let mut differs = Vec::new();
            if plan.device != row.device {
                differs.push(format!("device {} (plan {})", row.device, plan.device));
            }
            if plan.site != row.site {
                differs.push(format!("site {} (plan {})", row.site, plan.site));
            }
            let ran = [
                u64::from(row.tp),
                u64::from(row.pp),
                u64::from(row.dp),
                u64::from(row.cp),
                u64::from(row.vpp),
            ];
            if ran != plan.layout {
                let text =
                    |l: &[u64; 5]| format!("t{} p{} d{} c{} v{}", l[0], l[1], l[2], l[3], l[4]);
                differs.push(format!(
                    "layout {} (plan {})",
                    text(&ran),
                    text(&plan.layout)
                ));
            }
            Some(Comparison {
                run_id: row.run_id.clone(),
                log: row.log.clone(),
                job: row.job.clone(),
                measured: row.measured_tokens_per_s_per_device,
                predicted: plan.tokens_per_s_per_device,
                deviation,
                band,
                drifted: deviation.abs() > band,
                differs,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(job: &str, measured: f64) -> StoreRow {
        let text = format!(
            "{}\nr1,2026-12-04,xirang,shanghai,{job},megatron-lm,a.log,80,8192,64,8,28672,\
             128256,swiglu,8192,H100_SXM,64,3200,bf16,4,4,4,1,5,1,,1,256,,,,{measured},,,x\n",
            // A file of the first header: such files still read.
            super::super::store::FIRST_COLUMNS
        );
        super::super::store::read_rows(&text).remove(0)
    }

    fn plan(uncertainty: f64) -> Predicted {
        Predicted {
            job: "llama".into(),
            device: "H100_SXM".into(),
            site: "shanghai".into(),
            layout: [4, 4, 4, 1, 5],
            tokens_per_s_per_device: 1000.0,
            uncertainty,
        }
    }

    #[test]
    fn a_run_outside_the_plans_band_drifts_and_one_inside_does_not() {
        // Band max(0.05, 0.10) = 10 %: 880 is −12 % (out), 920 is −8 % (in).
        let out = compare(&[row("llama", 880.0), row("llama", 920.0)], &[plan(0.05)]);
        assert_eq!(
            out.iter().map(|c| c.drifted).collect::<Vec<_>>(),
            [true, false]
        );
        assert!((out[0].deviation + 0.12).abs() < 1e-12);
        // A plan stating ±30 % takes 880 in its stride.
        assert!(!compare(&[row("llama", 880.0)], &[plan(0.30)])[0].drifted);
        assert!(out[0].differs.is_empty(), "{:?}", out[0].differs);
    }

    #[test]
    fn a_run_of_a_job_without_a_plan_is_not_compared_and_a_changed_layout_is_named() {
        assert!(compare(&[row("other", 500.0)], &[plan(0.0)]).is_empty());
        let mut moved = plan(0.0);
        moved.layout = [8, 2, 4, 1, 5];
        let out = compare(&[row("llama", 1000.0)], &[moved]);
        assert_eq!(
            out[0].differs,
            ["layout t4 p4 d4 c1 v5 (plan t8 p2 d4 c1 v5)"]
        );
        assert!(!out[0].drifted);
    }
}
