//! The workload of a checked job: its model dimensions and training setup as the cost model
//! reads them. The one place a `check::Job` becomes `ModelDims` and `TrainSetup`.

use super::{Job, ModelSpec, TrainSpec};
use crate::catalogue::Pool;
use crate::workload::{ExpertDispatch, Lora, Mla, ModelDims, Part, TrainSetup, Trainable};
use loam_ir::types::Arch;

/// Narrows a checked dimension; the checker bounds every dimension by 2²⁴, so this never
/// saturates on a checked job.
fn narrow(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// The model dimensions of a spec's `model` block, training every weight. Specs describe modern
/// (Llama-class) training: no dropout.
pub fn model_dims(model: &ModelSpec) -> ModelDims {
    let (experts, top_k) = match model.arch {
        Arch::Dense => (1, 1),
        Arch::Moe => (
            model.experts.map_or(1, narrow),
            model.top_k.map_or(1, narrow),
        ),
    };
    ModelDims {
        layers: narrow(model.layers),
        hidden: narrow(model.hidden),
        ffn: narrow(model.ffn),
        heads: narrow(model.heads),
        kv_heads: narrow(model.kv_heads),
        vocab: narrow(model.vocab),
        seq_len: narrow(model.seq_len),
        mlp: model.mlp,
        arch: model.arch,
        experts,
        top_k,
        tied_embeddings: model.tie_embeddings,
        dropout: false,
        head_dim: model.head_dim.map(narrow),
        mla: model.mla.as_ref().map(|m| Mla {
            q_lora_rank: narrow(m.q_lora_rank),
            kv_lora_rank: narrow(m.kv_lora_rank),
            qk_nope_head_dim: narrow(m.qk_nope_head_dim),
            qk_rope_head_dim: narrow(m.qk_rope_head_dim),
            v_head_dim: narrow(m.v_head_dim),
        }),
        sliding_window: model.sliding_window.map(narrow),
        global_every: model.global_every.map(narrow),
        expert_ffn: model.expert_ffn.map(narrow),
        shared_experts: narrow(model.shared_experts),
        dense_layers: narrow(model.dense_layers),
        expert_groups: match model.arch {
            Arch::Dense => None,
            Arch::Moe => model.expert_groups,
        },
        capacity_factor: model.capacity_factor,
        trainable: Trainable::full(),
    }
}

/// The model a job trains: its dimensions with what its `train` block freezes or adapts.
pub fn job_model_dims(job: &Job) -> ModelDims {
    model_dims(&job.model).with_trainable(trainable(&job.train))
}

/// What trains under a `train` block: LoRA adapters over a frozen base, the parts `freeze` does
/// not name, or everything.
pub fn trainable(train: &TrainSpec) -> Trainable {
    if let Some(lora) = &train.lora {
        let targets = |name: &str| lora.targets.iter().any(|t| t.value == name);
        return Trainable::lora(Lora {
            rank: narrow(lora.rank),
            attention: targets("attention"),
            mlp: targets("mlp"),
        });
    }
    let parts: Vec<Part> = train
        .freeze
        .iter()
        .filter_map(|n| Part::from_name(&n.value))
        .collect();
    Trainable::freezing(&parts)
}

/// How `job`'s stack sends its MoE tokens on `pool`: the spec's `expert_dispatch`, else the
/// pool's default (`stack.expert_dispatch`), else the all-to-all. The one reading of both.
pub fn expert_dispatch_on(job: &Job, pool: Option<&Pool>) -> ExpertDispatch {
    job.train
        .expert_dispatch
        .or_else(|| pool.and_then(|p| p.stack.expert_dispatch))
        .unwrap_or_default()
}

/// The training setup of `job` on `pool`: [`train_setup`] with the pool's stack defaults.
pub fn train_setup_on(job: &Job, pool: &Pool) -> TrainSetup {
    TrainSetup {
        expert_dispatch: expert_dispatch_on(job, Some(pool)),
        expert_overlap: Default::default(),
        ..train_setup(job)
    }
}

/// The training setup of a job as its spec states it (no pool's defaults). Every device loam
/// plans for runs fused (flash) attention.
pub fn train_setup(job: &Job) -> TrainSetup {
    TrainSetup {
        global_batch: narrow(job.train.global_batch),
        precision: job.train.precision.value,
        optimizer: job.train.optimizer,
        tokens: job.train.tokens,
        flash_attention: true,
        states: job.train.states,
        expert_dispatch: expert_dispatch_on(job, None),
        expert_overlap: Default::default(),
    }
}
