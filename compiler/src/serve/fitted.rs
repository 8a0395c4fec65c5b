//! The serving model's fitted constants: what every engine's kernels reach of the device's
//! memory bandwidth and sustained GEMM rate, and what each transformer block adds to a forward
//! pass besides moving bytes and FLOPs. They are fitted on
//! `tests/data/inference_runs_calibration.csv` by `calibrate::fit_serving` (docs/cost-model.md,
//! "Serving constants"), and a calibration test keeps [`ServeFitted::SHIPPED`] equal to that fit.
//!
//! Each constant is shared by every engine, so every source family of the file informs it (a
//! constant is fitted only when at least three families do); what differs between engines is
//! counted or physical and lives beside the model (`serve::model`).

use serde::Serialize;

/// The serving model's fitted constants (docs/cost-model.md lists each with its fit).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServeFitted {
    /// Share of the catalogue's memory bandwidth that weight and KV-cache reads reach.
    pub bandwidth_share: f64,
    /// Share of the device's sustained GEMM and attention rates (the catalogue's measured
    /// efficiencies) that serving kernels reach, at the shapes serving runs.
    pub gemm_share: f64,
    /// Seconds each transformer block adds to every forward pass besides its reads, FLOPs and
    /// collectives (kernel launches and gaps, norms, rotary and sampling spread over blocks).
    pub block_overhead_s: f64,
}

impl ServeFitted {
    /// Fitted: the values `calibrate::fit_serving` finds on the shipped inference calibration
    /// file (the fit procedure is in docs/cost-model.md).
    pub const SHIPPED: ServeFitted = ServeFitted {
        bandwidth_share: 0.86,
        gemm_share: 0.82,
        block_overhead_s: 165e-6,
    };

    /// The constants with an engine efficiency `e` applied, a multiplier on both the bandwidth
    /// and the GEMM share its kernels reach: the one place a fitted efficiency (the few-shot
    /// test's, a site's calibration) meets the serving model. `e = 1` changes nothing
    /// (`x · 1.0 = x` exactly).
    pub fn with_efficiency(&self, e: f64) -> ServeFitted {
        ServeFitted {
            bandwidth_share: self.bandwidth_share * e,
            gemm_share: self.gemm_share * e,
            ..*self
        }
    }
}
