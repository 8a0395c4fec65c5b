//! One pipeline step from its stages' times: the optimizer step of a stage, and the step as the
//! slowest stage paces it, `max over stages k of ((m + p − 1) · sₖ + reduceₖ + optimizerₖ)`.
//! The heterogeneous pipelines the planner partitions (`plan/pair/pipeline/partition.rs`) and
//! the ones calibration costs (`calibrate/hetero.rs`) both take their step from here, so a
//! refit of the fitted constants or a new term reaches both; the single-type cost model
//! (`cost/stages.rs`) takes its optimizer step from here too.

use super::OPTIMIZER_STATE_TRAFFIC;

/// Bytes the optimizer step moves per parameter it updates: the optimizer state read and
/// written ([`OPTIMIZER_STATE_TRAFFIC`]), the gradient read and the weight written (`elt` bytes
/// each). The one rule of the optimizer step's time; the two functions below only order the
/// arithmetic as their callers need it.
pub(crate) fn optimizer_bytes_per_param(elt: f64) -> f64 {
    OPTIMIZER_STATE_TRAFFIC + 2.0 * elt
}

/// Seconds of the optimizer step over `params` parameters one device updates, memory-bound at
/// its `memory_bandwidth` in bytes/s (the single-type cost model's ranks).
pub(crate) fn optimizer_seconds(params: f64, elt: f64, memory_bandwidth: f64) -> f64 {
    params * optimizer_bytes_per_param(elt) / memory_bandwidth.max(1.0)
}

/// Seconds per parameter of the optimizer step on one device, for a stage whose weights are
/// split over `tensor` ranks and whose optimizer state is sharded over `shards` data-parallel
/// ranks (1 without ZeRO): per parameter so that a partition can scale it by any stage's
/// parameters.
pub(crate) fn optimizer_seconds_per_param(
    elt: f64,
    tensor: f64,
    shards: f64,
    memory_bandwidth: f64,
) -> f64 {
    optimizer_bytes_per_param(elt) / tensor / shards / memory_bandwidth.max(1.0)
}

/// One stage's times in a pipeline step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StageTimes {
    /// Seconds per micro-batch: its ops, tensor collectives and the send to the next stage.
    pub(crate) seconds: f64,
    /// Seconds of gradient reduction left exposed after the last micro-batch.
    pub(crate) reduce: f64,
    /// Seconds of the optimizer step.
    pub(crate) optimizer: f64,
}

impl StageTimes {
    /// The stage's share of a step per slot, what a partition minimises the largest of:
    /// `seconds + (reduce + optimizer) / slots`.
    pub(crate) fn paced(&self, slots: f64) -> f64 {
        self.seconds + (self.reduce + self.optimizer) / slots
    }
}

/// Slots every stage of a one-forward-one-backward pipeline runs in a step: one per
/// micro-batch and `stages − 1` of fill and drain (the bubble), `m + p − 1` (Narayanan et al.
/// 2021, §2.2).
pub(crate) fn slots(micro_batches: f64, stages: usize) -> f64 {
    micro_batches + stages as f64 - 1.0
}

/// The step of a pipeline whose stages take `stages`, and the index of the stage that paces it
/// (the first of equals); `None` without stages. Every stage runs `slots` at the pace of the
/// slowest, which then reduces its gradients and steps its optimizer:
/// `slots · maxₖ pacedₖ = maxₖ (slots · sₖ + reduceₖ + optimizerₖ)`.
pub(crate) fn step_seconds(slots: f64, stages: &[StageTimes]) -> Option<(f64, usize)> {
    let mut slowest: Option<(f64, usize)> = None;
    for (k, stage) in stages.iter().enumerate() {
        let paced = stage.paced(slots);
        if slowest.is_none_or(|(s, _)| paced > s) {
            slowest = Some((paced, k));
        }
    }
    slowest.map(|(paced, k)| (slots * paced, k))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_optimizer_step_reads_and_writes_state_gradient_and_weight() {
        // bf16 (2 bytes): 24 + 2·2 = 28 bytes per parameter; tensor 2, state over 4 shards:
        // 28 / 2 / 4 = 3.5 bytes per parameter per device, at 1 TB/s 3.5e-12 s. A stage of
        // 7e9 parameters then steps in 7e9 · 3.5e-12 = 24.5 ms.
        let per_param = optimizer_seconds_per_param(2.0, 2.0, 4.0, 1e12);
        assert!((per_param - 3.5e-12).abs() < 1e-24);
        assert!((7e9 * per_param - 0.0245).abs() < 1e-12);
        // The same stage unsplit, 7e9 parameters on one device: 7e9 · 28 / 1e12 = 0.196 s.
        assert!((optimizer_seconds(7e9, 2.0, 1e12) - 0.196).abs() < 1e-12);
        // fp32 (4 bytes): 24 + 2·4 = 32 bytes per parameter.
        assert_eq!(optimizer_bytes_per_param(4.0), 32.0);
        // A device without a bandwidth figure is not divided by zero.
        assert!(optimizer_seconds_per_param(2.0, 1.0, 1.0, 0.0).is_finite());
        assert!(optimizer_seconds(1.0, 2.0, 0.0).is_finite());
    }

    #[test]
    fn the_slowest_stage_paces_the_step() {
        // m = 8 micro-batches over p = 3 stages: 8 + 3 − 1 = 10 slots.
        let slots = slots(8.0, 3);
        assert_eq!(slots, 10.0);
        let stage = |seconds, reduce, optimizer| StageTimes {
            seconds,
            reduce,
            optimizer,
        };
        // 10·1.0 + 0.5 + 0.5 = 11; 10·1.05 + 0 + 0 = 10.5; 10·0.9 + 1.5 + 0.8 = 11.3.
        let stages = [
            stage(1.0, 0.5, 0.5),
            stage(1.05, 0.0, 0.0),
            stage(0.9, 1.5, 0.8),
        ];
        let (step, pacing) = step_seconds(slots, &stages).unwrap();
        assert_eq!(pacing, 2);
        assert!((step - 11.3).abs() < 1e-12);
        // The stage with the longest micro-batch is not the one that paces it.
        assert!(stages[1].seconds > stages[2].seconds);
        assert_eq!(step_seconds(slots, &[]), None);
    }

    #[test]
    fn equal_stages_are_paced_by_the_first() {
        let stage = StageTimes {
            seconds: 1.0,
            reduce: 0.0,
            optimizer: 0.0,
        };
        // Two stages, one micro-batch: 1 + 2 − 1 = 2 slots of 1 s.
        assert_eq!(step_seconds(slots(1.0, 2), &[stage, stage]), Some((2.0, 0)));
    }
}
