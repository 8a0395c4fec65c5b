//! The architecture variants frontier models use (latent attention, sliding windows, dense and
//! MoE blocks) and which of a model's weights train (frozen parts, LoRA adapters).

use super::{Layout, ModelDims};
use loam_ir::types::Arch;
use serde::Serialize;

/// DeepSeek multi-head latent attention (DeepSeek-V2 §2.1; field names as in the Hugging Face
/// `config.json` of DeepSeek-V3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Mla {
    /// Rank of the query down-projection; 0 = a plain `hidden × heads·(nope + rope)` query.
    pub q_lora_rank: u32,
    /// Rank of the joint key/value latent, the part of the KV cache that is not rotary.
    pub kv_lora_rank: u32,
    /// Per-head query/key width without rotary embedding.
    pub qk_nope_head_dim: u32,
    /// Per-head query/key width with rotary embedding (the key's is shared by all heads).
    pub qk_rope_head_dim: u32,
    /// Per-head value width.
    pub v_head_dim: u32,
}

/// A part of the model a spec can freeze (`train { freeze = [...] }`), named as the ops are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Part {
    /// The input embedding.
    Embedding,
    /// Attention projections (and their biases).
    Attention,
    /// MLP matrices: dense MLPs, routed and shared experts.
    Mlp,
    /// The MoE router.
    Router,
    /// Every norm weight.
    Norm,
    /// The output head (when untied).
    LmHead,
}

impl Part {
    /// Every part, in the order specs list them.
    pub const ALL: [Part; 6] = [
        Part::Embedding,
        Part::Attention,
        Part::Mlp,
        Part::Router,
        Part::Norm,
        Part::LmHead,
    ];

    /// The name a spec writes.
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Embedding => "embedding",
            Part::Attention => "attention",
            Part::Mlp => "mlp",
            Part::Router => "router",
            Part::Norm => "norm",
            Part::LmHead => "lm_head",
        }
    }

    /// The part named `name`.
    pub fn from_name(name: &str) -> Option<Part> {
        Part::ALL.into_iter().find(|p| p.as_str() == name)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// Low-rank adapters (Hu et al. 2021, LoRA): every base weight is frozen and each targeted
/// matrix `W (in × out)` gains a trainable `A (in × rank)` and `B (rank × out)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Lora {
    /// The adapters' rank.
    pub rank: u32,
    /// Whether the attention projections get adapters.
    pub attention: bool,
    /// Whether the MLP matrices (every expert's too) get adapters.
    pub mlp: bool,
}

/// Which weights of a model train. Frozen weights keep their training-precision copy only: no
/// gradient, no optimizer state, no weight-gradient matmul.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Trainable {
    /// The frozen parts, one bit per [`Part`].
    frozen: u8,
    /// LoRA adapters: when set, every base weight is frozen.
    pub lora: Option<Lora>,
}

impl Trainable {
    /// Full training: every weight trains.
    pub fn full() -> Trainable {
        Trainable::default()
    }

    /// A frozen-base fine-tune: `parts` train no weights.
    pub fn freezing(parts: &[Part]) -> Trainable {
        Trainable {
            frozen: parts.iter().fold(0, |bits, p| bits | p.bit()),
            lora: None,
        }
    }

    /// LoRA: the base frozen, adapters train.
    pub fn lora(lora: Lora) -> Trainable {
        Trainable {
            frozen: 0,
            lora: Some(lora),
        }
    }

    /// Whether the base weights of `part` train.
    pub fn trains(&self, part: Part) -> bool {
        self.lora.is_none() && self.frozen & part.bit() == 0
    }

    /// Whether every weight trains.
    pub fn is_full(&self) -> bool {
        self.lora.is_none() && self.frozen == 0
    }

    /// The LoRA rank on `part`'s matrices (0 when it has no adapters).
    pub(crate) fn lora_rank(&self, part: Part) -> f64 {
        match (&self.lora, part) {
            (Some(l), Part::Attention) if l.attention => f64::from(l.rank),
            (Some(l), Part::Mlp) if l.mlp => f64::from(l.rank),
            _ => 0.0,
        }
    }
}

/// What one transformer block is: its MLP dense or mixture-of-experts, its attention over the
/// whole sequence or a sliding window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockKind {
    /// Whether the MLP is a mixture of experts.
    pub moe: bool,
    /// Whether attention looks back over a window only.
    pub sliding: bool,
}

/// The block kinds of `model` and how many blocks of each: dense first blocks (`dense_layers`)
/// and MoE blocks, each either sliding-window or global (every `global_every`th block).
pub fn block_kinds(model: &ModelDims) -> [(u32, BlockKind); 4] {
    let layers = model.layers;
    let dense = match model.arch {
        Arch::Dense => layers,
        Arch::Moe => model.dense_layers.min(layers),
    };
    // Blocks in `[lo, hi)` attending globally: those with `(b + 1) % n == 0`, or all without a
    // window, or none when every block slides.
    let global = |lo: u32, hi: u32| -> u32 {
        match (model.sliding_window, model.global_every) {
            (None, _) => hi - lo,
            (Some(_), None) => 0,
            (Some(_), Some(n)) => hi / n.max(1) - lo / n.max(1),
        }
    };
    let dense_global = global(0, dense);
    let moe_global = global(dense, layers);
    let kind = |moe, sliding| BlockKind { moe, sliding };
    [
        (dense_global, kind(false, false)),
        (dense - dense_global, kind(false, true)),
        (moe_global, kind(true, false)),
        (layers - dense - moe_global, kind(true, true)),
    ]
}

/// The kind of block `b` of `model` (see [`block_kinds`]).
pub(crate) fn block_kind(model: &ModelDims, b: u32) -> BlockKind {
    BlockKind {
        moe: model.arch == Arch::Moe && b >= model.dense_layers,
        sliding: match (model.sliding_window, model.global_every) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(_), Some(n)) => !(b + 1).is_multiple_of(n.max(1)),
        },
    }
}

/// Expert tensor parallelism: with expert parallelism folded onto the tensor × context × data
/// grid every expert sits whole on its rank (1, as Megatron-Core's MoE parallel folding
/// recommends, Liu et al. 2025 §3); without expert parallelism experts split like a dense MLP
/// over the tensor ranks.
pub fn expert_tensor(layout: &Layout) -> u32 {
    if layout.expert > 1 {
        1
    } else {
        layout.tensor.max(1)
    }
}

/// The ranks that hold the same expert shard and reduce its gradients (the expert-data-parallel
/// group): `tensor · context · data / (expert · expert_tensor)`.
pub(crate) fn expert_data_ranks(layout: &Layout) -> f64 {
    let grid = f64::from(layout.tensor.max(1))
        * f64::from(layout.context.max(1))
        * f64::from(layout.data.max(1));
    (grid / (f64::from(layout.expert.max(1)) * f64::from(expert_tensor(layout)))).max(1.0)
}

/// The dense-data-parallel ranks: `data · context`.
pub(crate) fn dense_data_ranks(layout: &Layout) -> f64 {
    f64::from(layout.data.max(1)) * f64::from(layout.context.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_ir::types::Mlp;

    #[test]
    fn block_kinds_follow_dense_layers_and_the_global_pattern() {
        // gpt-oss-120b: 36 blocks, all MoE, sliding and full attention alternating, full on the
        // odd blocks (layer_types in its config.json).
        let mut m = ModelDims::dense(36, 2880, 2880, 64, 8, 201_088, 4096, Mlp::Swiglu)
            .with_experts(128, 4);
        m.sliding_window = Some(128);
        m.global_every = Some(2);
        let kinds = block_kinds(&m);
        assert_eq!(kinds[2].0, 18);
        assert_eq!(kinds[3].0, 18);
        assert!(!block_kind(&m, 0).moe || block_kind(&m, 0).sliding);
        assert!(!block_kind(&m, 1).sliding);
        // Gemma-3 style: 5 local then 1 global; 3 dense blocks first.
        m.global_every = Some(6);
        m.dense_layers = 3;
        let kinds = block_kinds(&m);
        assert_eq!(kinds.iter().map(|k| k.0).sum::<u32>(), 36);
        assert_eq!(kinds[0].0 + kinds[2].0, 6);
        assert_eq!(kinds[0].0 + kinds[1].0, 3);
        let counted = (0..36).filter(|&b| !block_kind(&m, b).sliding).count();
        assert_eq!(counted, 6);
    }

    #[test]
    fn frozen_parts_and_lora() {
        let t = Trainable::freezing(&[Part::Embedding, Part::Attention]);
        assert!(!t.trains(Part::Attention) && t.trains(Part::Mlp) && !t.is_full());
        let l = Trainable::lora(Lora {
            rank: 16,
            attention: true,
            mlp: false,
        });
        assert!(!l.trains(Part::Mlp) && l.lora_rank(Part::Attention) == 16.0);
        assert_eq!(l.lora_rank(Part::Mlp), 0.0);
        assert!(Trainable::full().is_full());
    }
}
