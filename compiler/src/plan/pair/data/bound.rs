//! A floor under every plan of one batch share, so that shares no plan of which can rank are
//! never searched: the data-parallel split's searches are most of a heterogeneous job's planning,
//! and most shares give the slower group far more than its pace allows.
//!
//! The floor is derived from what every costed step must contain, never from a fit: each group
//! computes the model FLOPs of its share of the batch (the cost model times every one of them,
//! at rates no faster than the device's fastest kernel, [`crate::cost::fastest_flops`]), spread
//! over at most the devices it may take. So per step a group spends at least
//! `share × FLOPs per sequence ÷ fastest rate` device-seconds, and the pair's step is at least
//! the larger of the two groups' `device-seconds ÷ devices`. Failures and checkpoints only
//! lengthen the wall time, the exchange and the optimizer only add, and money, energy and
//! carbon grow with device-hours, so the outcome built from these floors scores no higher than
//! any plan of the share: a debug assertion in the split's costing checks it on every pair any
//! test costs, and `skipping_shares_below_their_floor_keeps_the_plans_every_share_gives` holds
//! the skipping search to the one that searches every share.

use crate::plan::objective::{Limits, Outcome, PENALTY, PairObjective};
use crate::workload::ModelDims;

/// What one group of a pair contributes to the floor.
#[derive(Debug, Clone, Copy)]
pub(super) struct GroupFloor {
    /// Device-seconds one sequence's model FLOPs take at least on the group's devices
    /// (0 when the device has no rate for the precision: no floor).
    pub(super) device_s_per_sequence: f64,
    /// Most devices the group may give the pair.
    pub(super) max_devices: u64,
}

impl GroupFloor {
    /// The floor of a group whose fastest kernel runs at `fastest_flops` FLOP/s and that may
    /// give `max_devices` devices.
    pub(super) fn new(
        model: &ModelDims,
        fastest_flops: Option<f64>,
        max_devices: u64,
    ) -> GroupFloor {
        let device_s_per_sequence =
            crate::cost::least_device_seconds(model, f64::from(model.seq_len), fastest_flops)
                .unwrap_or(0.0);
        GroupFloor {
            device_s_per_sequence: device_s_per_sequence.max(0.0),
            max_devices: max_devices.max(1),
        }
    }

    /// Device-seconds per step on `sequences` of each batch.
    fn device_s(&self, sequences: u32) -> f64 {
        f64::from(sequences) * self.device_s_per_sequence
    }
}

/// The lowest score any plan of `pair` can reach with `sequences` of each batch on each group,
/// under `limits`, over a run of `steps` steps.
pub(super) fn share_floor(
    groups: [GroupFloor; 2],
    sequences: [u32; 2],
    pair: &PairObjective,
    limits: &Limits,
    steps: f64,
) -> f64 {
    let device_s = [
        groups[0].device_s(sequences[0]),
        groups[1].device_s(sequences[1]),
    ];
    let step_s = (device_s[0] / groups[0].max_devices as f64)
        .max(device_s[1] / groups[1].max_devices as f64);
    let mut floor = Outcome {
        time_s: steps * step_s + pair.transfer_s,
        cost: pair.fixed_cost,
        energy_kwh: 0.0,
        carbon_kg: 0.0,
    };
    // Each group holds its devices for the pair's whole wall time, at least its own steps.
    for (e, s) in pair.economics.iter().zip(device_s) {
        let hours = steps * s / 3600.0;
        let kwh = hours * e.watts_per_device / 1000.0;
        floor.cost += hours * e.price_per_device_hour;
        floor.energy_kwh += kwh;
        floor.carbon_kg += kwh * e.carbon_g_per_kwh / 1000.0;
    }
    let (late, over) = limits.misses(&floor);
    if late > 0.0 || over > 0.0 {
        // Every plan of the share misses too, by at least as much.
        limits.score(&floor)
    } else {
        // A plan may still miss a limit the floor meets: it then scores above the penalty.
        limits.raw(&floor).min(PENALTY)
    }
}

#[cfg(test)]
mod tests {
    use super::{GroupFloor, share_floor};
    use crate::plan::goodput::Failures;
    use crate::plan::objective::{Limits, PENALTY, PairObjective};
    use crate::plan::search::Economics;
    use loam_ir::types::Optimize;

    fn economics(price_per_device_hour: f64, watts_per_device: f64) -> Economics {
        Economics {
            optimize: Optimize::Time,
            price_per_device_hour,
            watts_per_device,
            carbon_g_per_kwh: 500.0,
            failures: Failures::NONE,
        }
    }

    fn limits(optimize: Optimize, deadline_s: Option<f64>) -> Limits {
        Limits {
            optimize,
            deadline_s,
            budget: None,
        }
    }

    #[test]
    fn the_floor_is_the_slower_groups_flops_at_its_fastest_rate_on_all_its_devices() {
        // Worked by hand. Group A: 2 device-seconds per sequence, at most 4 devices; group B:
        // 6 device-seconds per sequence, at most 2. Eight sequences each: A needs 16
        // device-seconds per step (4 s on its 4 devices), B 48 (24 s on 2), so a step is at
        // least 24 s, ten steps 240 s, plus 5 s of transfer: 245 s.
        let groups = [
            GroupFloor {
                device_s_per_sequence: 2.0,
                max_devices: 4,
            },
            GroupFloor {
                device_s_per_sequence: 6.0,
                max_devices: 2,
            },
        ];
        let pair = PairObjective {
            economics: [economics(3600.0, 1000.0), economics(7200.0, 2000.0)],
            transfer_s: 5.0,
            fixed_cost: 30.0,
        };
        let floor = |l: Limits| share_floor(groups, [8, 8], &pair, &l, 10.0);
        assert_eq!(floor(limits(Optimize::Time, None)), 245.0);
        // Device-hours at least 160 / 3600 and 480 / 3600: 160 + 960 + the fixed 30.
        assert_eq!(floor(limits(Optimize::Cost, None)), 1150.0);
        // kWh 160 / 3600 + 960 / 3600 = 0.3111…, at 500 g per kWh.
        let carbon = floor(limits(Optimize::Carbon, None));
        assert!((carbon - 1120.0 / 3600.0 * 0.5).abs() < 1e-12, "{carbon}");
        // Hours times money.
        let balanced = floor(limits(Optimize::Balanced, None));
        assert!(
            (balanced - 245.0 / 3600.0 * 1150.0).abs() < 1e-9,
            "{balanced}"
        );
        // A 100 s deadline: the floor is 145 % late, and so is every plan of the share at least.
        assert_eq!(floor(limits(Optimize::Cost, Some(100.0))), PENALTY * 2.45);
        // A deadline the floor meets may still be missed by a plan: the floor stays the raw one.
        assert_eq!(floor(limits(Optimize::Time, Some(1000.0))), 245.0);
    }

    #[test]
    fn a_sequence_costs_its_model_flops_at_the_rate() {
        // Llama 3.1 405B, by hand: per layer the GEMMs hold 2·16384² (Q, O) + 2·16384·1024
        // (K, V) + 3·16384·53248 (SwiGLU) = 3.187e9 weights, 126 layers 4.016e11, the head
        // 16384·128256 = 2.101e9: 6 FLOPs each is 2.422e12 per token. The causal attention
        // core: 2 matmuls × 2 FLOPs × 4096 keys on average × 16384, three passes, 126 layers:
        // 1.015e11. 2.524e12 per token, 8192 tokens: 2.067e16, 20.67 s at 1 PFLOP/s.
        let model = crate::plan::search::tests::llama405b();
        let floor = GroupFloor::new(&model, Some(1e15), 8);
        assert!(
            (20.6..20.75).contains(&floor.device_s_per_sequence),
            "{}",
            floor.device_s_per_sequence
        );
        // A device without a rate for the precision gives no floor.
        assert_eq!(GroupFloor::new(&model, None, 8).device_s_per_sequence, 0.0);
        assert_eq!(
            GroupFloor::new(&model, Some(0.0), 8).device_s_per_sequence,
            0.0
        );
    }
}
