//! The serving model's fitted constants: what each engine reaches of the device's figures and
//! what it spends per block and step besides moving bytes and FLOPs. They are fitted on
//! `tests/data/inference_runs_calibration.csv` by `calibrate::fit_serving` (docs/cost-model.md,
//! "Serving constants"), and a calibration test keeps [`ServeFitted::SHIPPED`] equal to that fit.

use loam_ir::types::Engine;
use serde::Serialize;

/// The serving model's fitted constants (docs/cost-model.md lists each with its fit).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ServeFitted {
    /// Share of the catalogue's memory bandwidth a decode step's weight and KV reads reach,
    /// before the engine's own efficiency.
    pub bandwidth_share: f64,
    /// Per engine (in [`Engine::ALL`] order): the share of the device's sustained GEMM rate and
    /// of `bandwidth_share` its kernels reach.
    pub engine_efficiency: [f64; 5],
    /// Per engine (in [`Engine::ALL`] order): seconds each transformer block adds to every
    /// forward pass besides its reads, FLOPs and collectives (kernel launches, scheduling,
    /// sampling spread over blocks).
    pub block_overhead_s: [f64; 5],
}

impl ServeFitted {
    /// Fitted: the values `calibrate::fit_serving` finds on the shipped inference calibration
    /// file (the fit procedure is in docs/cost-model.md). SGLang and MindIE have no costable
    /// rows there and carry vLLM's values.
    pub const SHIPPED: ServeFitted = ServeFitted {
        bandwidth_share: 0.9,
        engine_efficiency: [0.5, 0.5, 0.94, 0.5, 0.76],
        block_overhead_s: [50e-6, 50e-6, 160e-6, 50e-6, 85e-6],
    };

    /// The index of `engine` in the per-engine arrays.
    pub fn index(engine: Engine) -> usize {
        Engine::ALL.iter().position(|e| *e == engine).unwrap_or(0)
    }

    /// The engine's efficiency.
    pub fn efficiency(&self, engine: Engine) -> f64 {
        self.engine_efficiency
            .get(Self::index(engine))
            .copied()
            .unwrap_or(1.0)
    }

    /// The engine's per-block overhead in seconds.
    pub fn block_overhead(&self, engine: Engine) -> f64 {
        self.block_overhead_s
            .get(Self::index(engine))
            .copied()
            .unwrap_or(0.0)
    }
}
