//! One layout vocabulary: how a model replica is split and run ([`Layout`]), which of its fields
//! a spec fixes ([`Pins`]), the divisibility rules every layout follows ([`rules`]), the devices
//! one replica occupies and how the Plan IR writes a layout. The checker, the layout search, its
//! memory pre-check and the Plan IR all read layouts through this module.

pub mod rules;

use super::{Recomputation, StageSplit};
use loam_ir::plan::LayoutIr;
use loam_ir::types::{Recompute, SplitRule};
use serde::Serialize;

/// How one model replica is split and how each device runs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Layout {
    /// Tensor-parallel degree (Megatron column/row split), inside a node.
    pub tensor: u32,
    /// Pipeline stages.
    pub pipeline: u32,
    /// Data-parallel replicas.
    pub data: u32,
    /// Context-parallel degree (ring attention over sequence chunks).
    pub context: u32,
    /// Expert-parallel degree: MoE experts spread over ranks of the tensor × context × data grid
    /// (Megatron-Core parallel folding).
    pub expert: u32,
    /// Model chunks per pipeline stage (interleaved 1F1B when above 1).
    pub virtual_stages: u32,
    /// Sequences per micro-batch on one data-parallel rank.
    pub micro_batch: u32,
    /// ZeRO stage 0..=3 (3 = fully sharded parameters, FSDP).
    pub zero: u8,
    /// Activation recomputation.
    pub recompute: Recompute,
    /// Under full recomputation, the blocks of each model chunk that are recomputed, the first
    /// ones (Megatron-LM's `--recompute-method block --recompute-num-layers`); the others keep
    /// every activation. `None`: every block ([`Layout::recomputed_blocks`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recompute_layers: Option<u32>,
    /// Megatron sequence parallelism (norms and dropout split over the tensor group).
    pub sequence_parallel: bool,
    /// Tensor-parallel collectives overlapped with the GEMMs they feed and drain
    /// ([`loam_ir::plan::tensor_overlap_runs`]).
    pub tensor_overlap: bool,
    /// How the pipeline's chunks divide the blocks; [`StageSplit::UNRESOLVED`] means the
    /// balanced split, worked out from the model when asked for ([`Layout::stage_split`]).
    /// Last, so it breaks ties after every degree.
    pub split: StageSplit,
}

impl Layout {
    /// A layout with every degree 1: one device, micro-batch 1, no ZeRO, no recomputation.
    pub fn single() -> Self {
        Layout {
            tensor: 1,
            pipeline: 1,
            data: 1,
            context: 1,
            expert: 1,
            virtual_stages: 1,
            micro_batch: 1,
            zero: 0,
            recompute: Recompute::None,
            recompute_layers: None,
            sequence_parallel: false,
            tensor_overlap: false,
            split: StageSplit::UNRESOLVED,
        }
    }

    /// Of `blocks` blocks a rank holds, those full recomputation replays in the backward
    /// ([`Recomputation::recomputed`]).
    pub fn recomputed_blocks(&self, blocks: f64) -> f64 {
        Recomputation::of(self).recomputed(blocks)
    }

    /// The share of a rank's blocks recomputed whole ([`Layout::recomputed_blocks`]) for a rank
    /// of the mean size, `layers / pipeline` blocks.
    pub fn recomputed_share(&self, layers: u32) -> f64 {
        let mean = f64::from(layers) / f64::from(self.pipeline.max(1));
        if mean <= 0.0 {
            return if self.recompute == Recompute::Full {
                1.0
            } else {
                0.0
            };
        }
        self.recomputed_blocks(mean) / mean
    }

    /// Devices the layout occupies: `tensor · pipeline · data · context` (experts reuse data ranks).
    pub fn devices(&self) -> u64 {
        self.replica_devices() * u64::from(self.data)
    }

    /// Devices one model replica occupies: `tensor · pipeline · context` (data parallelism
    /// copies replicas; experts reuse their ranks).
    pub fn replica_devices(&self) -> u64 {
        u64::from(self.tensor) * u64::from(self.pipeline) * u64::from(self.context)
    }

    /// Micro-batches per pipeline per step: `global_batch / (data · micro_batch)`.
    pub fn micro_batches(&self, global_batch: u32) -> f64 {
        f64::from(global_batch) / (f64::from(self.data.max(1)) * f64::from(self.micro_batch.max(1)))
    }

    /// The layout's split of `layers` blocks over its pipeline: its own when worked out, else the
    /// balanced one.
    pub fn stage_split(&self, layers: u32) -> StageSplit {
        if self.split.is_resolved() {
            self.split
        } else {
            StageSplit::new(
                layers,
                self.pipeline,
                self.virtual_stages,
                SplitRule::Balanced,
            )
        }
    }

    /// This layout with the split of `layers` under `rule` (not [`SplitRule::Pinned`], whose
    /// blocks only the spec knows).
    pub fn with_split(self, layers: u32, rule: SplitRule) -> Layout {
        Layout {
            split: StageSplit::new(layers, self.pipeline, self.virtual_stages, rule),
            ..self
        }
    }

    /// Micro-batches of all its blocks rank `rank` holds activations of at its peak when its
    /// chunks hold equal blocks, the running one included: 1F1B's `min(p − rank, m)` (at least
    /// one); under the interleaved schedule `min(2(p − r − 1) + (v − 1)·p + 1, m·v)` chunk
    /// activations of `1/v` of its blocks each (Megatron-Core's warm-up plus the steady forward,
    /// [`schedule`]); one without pipelining. Chunks of unequal blocks:
    /// [`RankLoad::in_flight`].
    pub fn in_flight(&self, rank: u32, micro_batches: f64) -> f64 {
        if self.pipeline <= 1 {
            return 1.0;
        }
        let p = f64::from(self.pipeline);
        let r = f64::from(rank).min(p - 1.0);
        if self.virtual_stages <= 1 {
            return (p - r).min(micro_batches).max(1.0);
        }
        let v = f64::from(self.virtual_stages);
        let chunks = (2.0 * (p - r - 1.0) + (v - 1.0) * p + 1.0).min(micro_batches.max(1.0) * v);
        chunks / v
    }

    /// Tokens of one micro-batch on one rank: `micro_batch · seq_len / context` (context ranks
    /// each hold a chunk of every sequence).
    pub(crate) fn micro_batch_tokens(&self, seq_len: u32) -> f64 {
        f64::from(self.micro_batch) * f64::from(seq_len) / f64::from(self.context.max(1))
    }
}

/// Layout fields fixed by the spec; `None` means auto.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Pins {
    /// Tensor-parallel degree.
    pub tensor: Option<u32>,
    /// Pipeline stages.
    pub pipeline: Option<u32>,
    /// Data-parallel degree.
    pub data: Option<u32>,
    /// Context-parallel degree.
    pub context: Option<u32>,
    /// Expert-parallel degree.
    pub expert: Option<u32>,
    /// Virtual stages per pipeline rank.
    pub virtual_stages: Option<u32>,
    /// Micro-batch size.
    pub micro_batch: Option<u32>,
    /// ZeRO stage.
    pub zero: Option<u8>,
    /// Recomputation mode.
    pub recompute: Option<Recompute>,
    /// Blocks of each model chunk replayed whole (partial full recomputation); `None`: auto
    /// when recomputation is auto, every block when it is pinned `full`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recompute_layers: Option<u32>,
    /// Sequence parallelism (auto: on whenever tensor > 1).
    pub sequence_parallel: Option<bool>,
    /// Tensor-parallel overlap (auto: off; the spec's stack must run it).
    pub tensor_overlap: Option<bool>,
    /// How the pipeline's chunks divide the blocks (auto: the faster of the balanced and the
    /// embedding-and-loss splits).
    pub pipeline_split: Option<SplitRule>,
    /// A split the spec pins chunk by chunk (`stages = [...]`), with `pipeline` and
    /// `virtual_stages` pinned to match.
    pub stages: Option<StageSplit>,
}

/// The search's [`Layout`] as the Plan IR writes it; every layout text below reads a
/// [`LayoutIr`], so a layout is written alike wherever it comes from.
impl From<&Layout> for LayoutIr {
    fn from(l: &Layout) -> Self {
        LayoutIr {
            tensor: l.tensor.into(),
            pipeline: l.pipeline.into(),
            data: l.data.into(),
            context: l.context.into(),
            expert: l.expert.into(),
            virtual_stages: l.virtual_stages.into(),
            pipeline_split: (l.pipeline > 1).then_some(l.split.rule),
            micro_batch: l.micro_batch.into(),
            zero: l.zero,
            recompute: l.recompute,
            recompute_layers: l.recompute_layers.map(u64::from),
            sequence_parallel: Some(l.sequence_parallel),
            tensor_overlap: l.tensor_overlap,
            expert_overlap: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_ir::display::layout_line;

    #[test]
    fn a_plan_layout_reads_like_the_searched_one() {
        let l = Layout {
            tensor: 8,
            pipeline: 4,
            data: 16,
            zero: 1,
            recompute: Recompute::Selective,
            sequence_parallel: true,
            ..Layout::single()
        };
        // Every degree carried over; the split rule is written because the pipeline has stages
        // (4 > 1), and the sequence-parallel setting the search chose is stated.
        let ir = LayoutIr {
            tensor: 8,
            pipeline: 4,
            data: 16,
            context: 1,
            expert: 1,
            virtual_stages: 1,
            pipeline_split: Some(SplitRule::Balanced),
            micro_batch: 1,
            zero: 1,
            recompute: Recompute::Selective,
            recompute_layers: None,
            sequence_parallel: Some(true),
            tensor_overlap: false,
            expert_overlap: false,
        };
        assert_eq!(LayoutIr::from(&l), ir);
        assert_eq!(layout_line(ir), layout_line(&l));
    }
}
