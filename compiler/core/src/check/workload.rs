//! The workload of a checked job: its model dimensions and training setup as the cost model
//! reads them. The one place a `check::Job` becomes `ModelDims` and `TrainSetup`.

use super::{Job, ModelSpec};
use crate::types::Arch;
use crate::workload::{ModelDims, TrainSetup};

/// Narrows a checked dimension; the checker bounds every dimension by 2²⁴, so this never
/// saturates on a checked job.
fn narrow(value: u64) -> u32 {
    u32::try_from(value).unwrap_or(u32::MAX)
}

/// The model dimensions of a spec's `model` block. Specs describe modern (Llama-class) training:
/// no dropout.
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
    }
}

/// The training setup of a job. Every device loam plans for runs fused (flash) attention.
pub fn train_setup(job: &Job) -> TrainSetup {
    TrainSetup {
        global_batch: narrow(job.train.global_batch),
        precision: job.train.precision.value,
        optimizer: job.train.optimizer,
        tokens: job.train.tokens,
        flash_attention: true,
    }
}
