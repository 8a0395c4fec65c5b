//! A step's data-parallel communication: the gradient reduction and the weight gathers each
//! ZeRO stage runs, what of them the step's compute hides, and the optimizer step. One rule
//! for the step ([`Costing::step`]) and for the floor the search skips shapes by
//! ([`Costing::data_floor`]).

use super::{Costing, Kernel, Placement, exposed};
use crate::cost::compute::BlockTime;
use crate::workload::{Framework, Layout};
use loam_ir::types::Recompute;

/// The compute a step's data-parallel communication can hide under, per micro-batch of one
/// rank: what [`Costing::replay`] works out from a block under its recomputation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Windows {
    /// One block's forward.
    block_forward: f64,
    /// One block's backward with its replayed forward.
    block_backward: f64,
    /// Backward (and replayed forward) seconds of all the rank's blocks but one.
    backward: f64,
    /// Forward seconds of all the rank's blocks but one.
    forward: f64,
    /// The same for the first model chunk alone, the last whose gradients are final (and the
    /// first whose weights the next step needs): the whole rank without interleaving.
    last_backward: f64,
    /// The forward counterpart of `last_backward`.
    last_forward: f64,
    /// Under interleaving, the gradients of every chunk but the first one: backward seconds the
    /// rank runs after their last micro-batch, which their reduction hides under.
    early_backward: f64,
    /// The same for the gathers of every chunk but the first one: forward seconds the rank runs
    /// before it first needs their weights.
    early_forward: f64,
}

impl Windows {
    /// The windows of `placement`'s ranks when each block runs as `block` and a step runs `m`
    /// micro-batches. Megatron-Core's interleaved schedule runs micro-batches in groups of `p`
    /// per model chunk (`forward_backward_pipelining_with_interleaving`), so the last group's
    /// backward finishes chunk `v − 1` first and chunk 0 last, `p` chunk-backwards apart: the
    /// gradient reduction of chunk `j` (its DDP buckets, launched at its last micro-batch with
    /// `overlap_grad_reduce`) hides under the `j·p` chunk-backwards that follow. Mirrored in the
    /// next step's forward for the weights the distributed optimizer gathers
    /// (`overlap_param_gather`). Without interleaving, one chunk: the window is the last
    /// micro-batch's backward, bucket by bucket.
    pub(crate) fn new(block: &BlockTime, placement: &Placement, m: f64) -> Windows {
        let lps = placement.lps;
        let chunk_blocks = lps / placement.chunks;
        let group = placement.stages.min(m);
        let later_chunk_steps = (placement.chunks - 1.0) * group * chunk_blocks;
        Windows {
            block_forward: block.forward,
            block_backward: block.backward + block.recompute,
            backward: (block.backward + block.recompute) * (lps - 1.0),
            forward: block.forward * (lps - 1.0),
            last_backward: (block.backward + block.recompute) * (chunk_blocks - 1.0).max(0.0),
            last_forward: block.forward * (chunk_blocks - 1.0).max(0.0),
            early_backward: later_chunk_steps * (block.backward + block.recompute),
            early_forward: later_chunk_steps * block.forward,
        }
    }
}

/// A step's data-parallel seconds under one ZeRO stage: exposed communication per micro-batch
/// and per step, and the optimizer step.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DataSeconds {
    pub(crate) per_micro_batch: f64,
    pub(crate) per_step: f64,
    pub(crate) optimizer: f64,
}

impl DataSeconds {
    /// The exposed communication of a step of `m` micro-batches (the step's `data_comm`).
    pub(crate) fn communication(&self, m: f64) -> f64 {
        m * self.per_micro_batch + self.per_step
    }

    /// All of it over a step of `m` micro-batches.
    pub(crate) fn total(&self, m: f64) -> f64 {
        self.communication(m) + self.optimizer
    }
}

impl Costing<'_> {
    /// The data-parallel seconds of a step of `m` micro-batches of `placement` under ZeRO
    /// stage `zero` beside the compute `windows`; `pipelined` when the layout has more than one
    /// pipeline stage.
    pub(crate) fn data_seconds(
        &self,
        placement: &Placement,
        windows: &Windows,
        m: f64,
        zero: u8,
        pipelined: bool,
    ) -> DataSeconds {
        let contention = self.cluster.fitted.overlap_contention;
        let hide = |comm: f64, window: f64| exposed(comm, window, contention);
        // What one collective carries follows the framework the stage runs under
        // (`Framework::collective_params`): FSDP reduces and gathers one wrapped block at a
        // time, Megatron-Core and DeepSpeed in their buckets (`Costing::placement`).
        let lps = placement.lps;
        let (grad_rs, param_ag) = if Framework::of_setup(self.setup, zero).collects_by_block() {
            (placement.block_rs * lps, placement.block_ag * lps)
        } else {
            (placement.grad_rs, placement.param_ag)
        };
        // A block's share of the reduction: the last of it, which nothing hides.
        let grad_share = grad_rs / lps;
        let (per_micro_batch, per_step) = match zero {
            0 | 1 => {
                // Bucketed reduction overlaps the last micro-batch's backward except its last
                // bucket: an all-reduce (ZeRO-0), or a reduce-scatter of gradients (ZeRO-1),
                // whose updated weights are gathered under the next step's forward, bucket by
                // bucket as it reaches them (Megatron-Core's `overlap_param_gather`, on in NeMo
                // and Megatron-Bridge recipes). Under interleaving every chunk but the first
                // has the later chunks' backwards (forwards) to hide under ([`Windows::new`]).
                let reduce = if zero == 0 { 2.0 * grad_rs } else { grad_rs };
                let early = (placement.chunks - 1.0) / placement.chunks;
                let by_chunk = |total: f64, early_window: f64, last_window: f64| {
                    hide(early * total, early_window) + hide(total - early * total, last_window)
                };
                let grads = by_chunk(reduce, windows.early_backward, windows.last_backward);
                let weights = if zero == 0 {
                    0.0
                } else {
                    by_chunk(param_ag, windows.early_forward, windows.last_forward)
                };
                (0.0, (grads + weights).max(grad_share))
            }
            2 => {
                // Gradients are reduce-scattered every micro-batch under its backward. On a
                // pipeline the steady 1F1B state runs the next micro-batch's forward right after
                // a backward (Megatron-Core's `forward_backward_pipelining_*` loops: one forward,
                // one backward), so the reduce-scatter also hides under that forward, and no
                // bucket waits on the end of its backward but the step's last.
                let window = if pipelined {
                    windows.backward + windows.forward + windows.block_forward
                } else {
                    windows.backward
                };
                let last = if pipelined {
                    grad_share / m.max(1.0)
                } else {
                    grad_share
                };
                let exposed = hide(grad_rs, window).max(last);
                (exposed, hide(param_ag, windows.forward).max(grad_share))
            }
            _ => {
                // FSDP: per block, gather weights before forward and backward (prefetched under
                // the previous block) and reduce-scatter gradients under the backward.
                let ag_layer = placement.block_ag;
                let fwd = hide(ag_layer, windows.block_forward);
                let bwd = hide(ag_layer + placement.block_rs, windows.block_backward);
                ((fwd + bwd) * placement.lps + ag_layer, 0.0)
            }
        };
        let optimizer = if zero >= 1 {
            placement.optimizer_sharded
        } else {
            placement.optimizer_whole
        };
        DataSeconds {
            per_micro_batch,
            per_step,
            optimizer,
        }
    }

    /// Seconds no step of `layout`'s shape, whose `kernel` and `placement` these are, spends
    /// on data-parallel communication and the optimizer, plus the site's fixed cost, under ZeRO
    /// stage `zero` and any recomputation ([`Costing::data_floor`]): what [`Costing::step`]
    /// adds to the micro-batches and the bubble besides the pipeline's sends. A recomputation
    /// mode changes only how long a block's backward runs, between none replayed and its whole
    /// forward replayed, and the exposed part of every collective ([`exposed`]) falls as its
    /// window grows while the contention is at most 1 (and grows with it above), so the
    /// window of that end is the least under every mode.
    pub(super) fn data_floor_of(
        &self,
        kernel: &Kernel,
        placement: &Placement,
        layout: &Layout,
        zero: u8,
    ) -> f64 {
        let m = self.micro_batches(layout);
        let none = kernel.block.with_recompute(Recompute::None);
        let block = if self.cluster.fitted.overlap_contention <= 1.0 {
            BlockTime {
                recompute: none.forward.max(none.attention_forward),
                ..none
            }
        } else {
            none
        };
        let windows = Windows::new(&block, placement, m);
        let least = self
            .data_seconds(placement, &windows, m, zero, layout.pipeline > 1)
            .total(m);
        if least.is_finite() {
            least + self.cluster.fitted.step_overhead_s
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::cost::stages::Costing;
    use crate::cost::tests::{cluster, layout_70b, llama70b, setup};
    use crate::cost::{StepEstimate, estimate};
    use crate::workload::{Layout, MemoryBreakdown, ModelDims, held_params, param_count};
    use loam_ir::types::{Mlp, Precision, Recompute};

    /// Exposed data-parallel seconds of a model too small to hide anything (4 blocks of width
    /// 256, 128-token sequences, one per micro-batch, 2 micro-batches a step) on `data` ranks of
    /// H100 under ZeRO stage `zero`.
    fn tiny_data_comm(data: u32, zero: u8) -> f64 {
        let model = ModelDims::dense(4, 256, 1024, 4, 4, 1024, 128, Mlp::Gelu);
        let layout = Layout {
            data,
            zero,
            ..Layout::single()
        };
        let nodes = data.div_ceil(8);
        let c = cluster("H100_SXM", nodes, 3200.0);
        estimate(&model, &setup(2 * data, Precision::Bf16), &layout, &c)
            .unwrap()
            .breakdown
            .data_comm
    }

    #[test]
    fn each_block_and_bucket_pays_its_rings_latency() {
        // A 4-block model of 0.8 M parameters a block: every collective carries a few MB and
        // NCCL runs it under LL, whose ring latency grows with the ranks (cost::nccl): over
        // 1,024 ranks on 128 nodes 6.6 + 896 × 1.0 + 127 × 5 = 1,537.6 µs (the site's 5 µs
        // between nodes above LL's 2.7), over 128 ranks on 16 nodes 6.6 + 112 + 15 × 5 =
        // 193.6 µs: 1,344 µs more per collective. Nothing hides it (the blocks compute in
        // microseconds), so the step pays every collective's latency.
        let latency_gap = 1.344e-3;
        // ZeRO-3 (FSDP): each block's gather before its forward and again before its backward,
        // its reduce-scatter under the backward, and the first block's gather for the next
        // micro-batch: 3 × 4 + 1 = 13 collectives a micro-batch, 2 micro-batches.
        let fsdp = tiny_data_comm(1024, 3) - tiny_data_comm(128, 3);
        let want = 26.0 * latency_gap;
        assert!((fsdp - want).abs() < 0.03 * want, "{fsdp} vs {want}");
        // ZeRO-1: one Megatron-Core bucket (3.4 M parameters under 40 M): its reduce-scatter
        // after the step's last backward and its all-gather before the next forward.
        let zero1 = tiny_data_comm(1024, 1) - tiny_data_comm(128, 1);
        let want = 2.0 * latency_gap;
        assert!((zero1 - want).abs() < 0.03 * want, "{zero1} vs {want}");
        // ZeRO-2 runs under FSDP (its `SHARD_GRAD_OP`) unless the spec names another
        // framework, so it reduces block by block: each block's reduce-scatter every
        // micro-batch (4 × 2) and each block's gather before the next step (4), 12 collectives
        // where Megatron-Core's one bucket would make 3.
        let zero2 = tiny_data_comm(1024, 2) - tiny_data_comm(128, 2);
        let want = 12.0 * latency_gap;
        assert!((zero2 - want).abs() < 0.03 * want, "{zero2} vs {want}");
    }

    #[test]
    fn a_zero_stages_data_floor_is_its_step_under_full_recomputation_and_bounds_every_mode() {
        // Llama-3-70B at TP8 PP4 DP4 (20 blocks per rank), 32 micro-batches of one sequence,
        // on 16 nodes whose NICs give 25 Gb/s: no ZeRO stage's collectives fit under the
        // compute they overlap, so what a step exposes depends on how long its backward runs.
        // Full recomputation replays every block's forward in the backward, the longest window
        // any mode gives (the contention is below 1, so a longer window exposes less): the
        // floor is that mode's data-parallel, optimizer and fixed seconds to the last bit's
        // rounding, and no mode's step spends less beside its micro-batches, its bubble and
        // its pipeline sends.
        let model = llama70b();
        let run = setup(128, Precision::Bf16);
        let slow = cluster("H100_SXM", 16, 25.0);
        assert!(slow.fitted.overlap_contention < 1.0);
        let costing = Costing::new(&model, &run, &slow).unwrap();
        let count = param_count(&model);
        for zero in 0..=3u8 {
            for virtual_stages in [1, 5] {
                let mut beside_by_mode = Vec::new();
                for recompute in [Recompute::None, Recompute::Selective, Recompute::Full] {
                    let layout = layout_70b(zero, virtual_stages, recompute);
                    let params = held_params(&model, &count, &layout);
                    let kernel = costing.kernel(&layout);
                    let placement = costing.placement(&layout, &params);
                    let shape = costing.shape(&layout, &kernel, &placement);
                    let replay = costing.replay(&shape, &layout);
                    let mut out = StepEstimate::blank();
                    costing.step(&shape, &replay, &layout, MemoryBreakdown::NONE, &mut out);
                    let beside = out.step_time_s - replay.steady - replay.bubble - shape.pp_comm;
                    let floor = costing.data_floor_of(&kernel, &placement, &layout, zero);
                    let at = format!("ZeRO-{zero} v{virtual_stages} {recompute:?}");
                    assert!(floor > 0.0, "{at}");
                    assert!(beside >= floor * (1.0 - 1e-12), "{at}: {beside} < {floor}");
                    if recompute == Recompute::Full {
                        assert!(
                            (beside - floor).abs() <= 1e-9 * floor,
                            "{at}: {beside} vs {floor}"
                        );
                    } else {
                        // A mode that replays less exposes more: the floor is the least.
                        assert!(beside > floor * (1.0 + 1e-9), "{at}: {beside} vs {floor}");
                    }
                    beside_by_mode.push(beside);
                }
                // A shorter backward hides less: no recomputation exposes the most. (At these
                // rates the reduction dwarfs every window: ZeRO-1 exposes about 32 s a step,
                // ZeRO-2 reduce-scatters every micro-batch, about 700 s.)
                assert!(
                    beside_by_mode.windows(2).all(|w| w[0] >= w[1]),
                    "ZeRO-{zero} v{virtual_stages}: {beside_by_mode:?}"
                );
            }
        }
    }
}
