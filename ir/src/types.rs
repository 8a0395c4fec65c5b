//! The closed vocabularies shared by the language, the catalogue and the planner (precisions,
//! recomputation modes, objectives …).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Declares a closed keyword enum with its spelling in specs, YAML and JSON (and the JSON
/// Schema of the Plan JSON, which lists the keywords).
macro_rules! keyword_enum {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(
            Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
            JsonSchema,
        )]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order (which is also the tie-break order).
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The value's position in [`Self::ALL`], for tables indexed by it.
            pub fn index(self) -> usize {
                self as usize
            }

            /// The keyword as written in specs.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// The value spelled `text`, if any.
            pub fn from_keyword(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }

            /// Every keyword, for "expected one of" messages and suggestions.
            pub fn keywords() -> Vec<&'static str> {
                Self::ALL.iter().map(|v| v.as_str()).collect()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

keyword_enum! {
    /// How a training stack sends a mixture of experts' tokens to their experts' ranks.
    ExpertDispatch {
        /// One copy of a token per selected expert, each to its expert's rank (Megatron-Core's
        /// `alltoall` token dispatcher).
        AllToAll = "all_to_all",
        /// One copy of a token per destination node (scale-up domain), forwarded there to each
        /// selected expert: DeepEP, HybridEP, DeepSeek-V3's own dispatch.
        Deduplicated = "deduplicated",
    }
}

impl Default for ExpertDispatch {
    /// The all-to-all: what a stack runs unless it says otherwise.
    fn default() -> Self {
        ExpertDispatch::AllToAll
    }
}

impl ExpertDispatch {
    /// Whether this is the default all-to-all (which specs and plans need not write).
    pub fn is_all_to_all(&self) -> bool {
        *self == ExpertDispatch::AllToAll
    }
}

keyword_enum! {
    /// Numeric precision of training arithmetic.
    Precision {
        /// IEEE single precision.
        Fp32 = "fp32",
        /// TensorFloat-32 tensor-core math with fp32 storage.
        Tf32 = "tf32",
        /// bfloat16 mixed precision.
        Bf16 = "bf16",
        /// IEEE half precision mixed precision.
        Fp16 = "fp16",
        /// 8-bit floating point GEMMs (e.g. Transformer Engine).
        Fp8 = "fp8",
    }
}

impl Precision {
    /// Bytes per element of the activations and weights held in this precision.
    pub fn bytes(self) -> f64 {
        match self {
            Precision::Fp32 | Precision::Tf32 => 4.0,
            Precision::Bf16 | Precision::Fp16 => 2.0,
            // FP8 training keeps weights and activations in 16-bit between GEMMs.
            Precision::Fp8 => 2.0,
        }
    }
}

keyword_enum! {
    /// Activation recomputation (checkpointing) strategy.
    Recompute {
        /// Keep every activation.
        None = "none",
        /// Recompute only the attention core (Korthikanti et al. 2022).
        Selective = "selective",
        /// Keep only each layer's input and recompute the layer in backward.
        Full = "full",
    }
}

keyword_enum! {
    /// How a pipeline's chunks divide the transformer blocks when the layers do not divide
    /// evenly (or when the embedding and the loss head are counted as stage work).
    SplitRule {
        /// Chunks differ by at most one block; the extra blocks go to the middle ranks first.
        Balanced = "balanced",
        /// Megatron's `account_for_embedding_in_pipeline_split` and
        /// `account_for_loss_in_pipeline_split`: the embedding and the loss head count as one
        /// layer each, so the first and last chunks hold one block fewer.
        EmbeddingAndLoss = "embedding_and_loss",
        /// The spec pins the blocks of every chunk (`stages = [...]`).
        Pinned = "pinned",
    }
}

keyword_enum! {
    /// What the planner minimises.
    Optimize {
        /// Wall-clock training time.
        Time = "time",
        /// Money spent.
        Cost = "cost",
        /// A weighted mix of time and cost.
        Balanced = "balanced",
        /// Emitted CO2.
        Carbon = "carbon",
    }
}

keyword_enum! {
    /// Scheduling priority of a job.
    Priority {
        /// May be preempted by anything.
        Low = "low",
        /// The default.
        Normal = "normal",
        /// Preempts low and normal.
        High = "high",
        /// Never preempted.
        Critical = "critical",
    }
}

keyword_enum! {
    /// Model architecture family.
    Arch {
        /// Every token runs every MLP.
        Dense = "dense",
        /// Mixture of experts: each token runs `top_k` of `experts` MLPs.
        Moe = "moe",
    }
}

keyword_enum! {
    /// MLP block shape.
    Mlp {
        /// Gated SiLU: three `hidden × ffn` matrices.
        Swiglu = "swiglu",
        /// Classic two-matrix GeLU MLP.
        Gelu = "gelu",
        /// Squared ReLU: two `hidden × ffn` matrices, no biases (Nemotron-4, Parmar et al. 2024).
        SquaredRelu = "squared_relu",
    }
}

keyword_enum! {
    /// Optimizer, which decides the bytes of optimizer state per parameter.
    Optimizer {
        /// Adam with decoupled weight decay: fp32 master weights, m and v.
        Adamw = "adamw",
        /// Adam: same state as AdamW.
        Adam = "adam",
        /// SGD with momentum: fp32 master weights and momentum.
        Sgd = "sgd",
        /// Lion: fp32 master weights and one momentum.
        Lion = "lion",
    }
}

impl Optimizer {
    /// Moments the optimizer keeps per parameter: Adam's first and second (m, v), the one
    /// momentum of SGD and of Lion (Chen et al. 2023, Algorithm 2).
    pub fn moments(self) -> f64 {
        match self {
            Optimizer::Adamw | Optimizer::Adam => 2.0,
            Optimizer::Sgd | Optimizer::Lion => 1.0,
        }
    }

    /// Bytes of optimizer state per parameter with an fp32 master copy and fp32 moments, the `K`
    /// of the ZeRO paper: a rough size for messages; plans read the framework's recipe
    /// (`workload::StateRecipe`).
    pub fn state_bytes_per_param(self) -> f64 {
        4.0 + 4.0 * self.moments()
    }
}

keyword_enum! {
    /// The number format a training state is kept in (`gradients`, `master_weights`, `moments`
    /// in a spec's `train` block).
    StateFormat {
        /// IEEE single precision.
        Fp32 = "fp32",
        /// bfloat16.
        Bf16 = "bf16",
        /// IEEE half precision.
        Fp16 = "fp16",
    }
}

impl StateFormat {
    /// Bytes of one element.
    pub fn bytes(self) -> f64 {
        match self {
            StateFormat::Fp32 => 4.0,
            StateFormat::Bf16 | StateFormat::Fp16 => 2.0,
        }
    }
}

keyword_enum! {
    /// The precision a service's weights are stored and multiplied in.
    ServePrecision {
        /// bfloat16 weights and activations.
        Bf16 = "bf16",
        /// IEEE half weights and activations.
        Fp16 = "fp16",
        /// 8-bit floating-point weights and GEMMs (W8A8).
        Fp8 = "fp8",
        /// 8-bit integer weights, 16-bit activations and GEMMs (weight-only W8A16).
        Int8 = "int8",
        /// 4-bit integer weights, 16-bit activations and GEMMs (weight-only W4A16, AWQ/GPTQ).
        Int4 = "int4",
        /// 4-bit floating-point weights and GEMMs (NVFP4/MXFP4), where the device has an fp4
        /// tensor rate.
        Fp4 = "fp4",
    }
}

impl ServePrecision {
    /// Bytes of one stored weight (quantisation scales included: one 16-bit scale per group of
    /// 128 for int4, per group of 16 for fp4).
    pub fn weight_bytes(self) -> f64 {
        match self {
            ServePrecision::Bf16 | ServePrecision::Fp16 => 2.0,
            ServePrecision::Fp8 | ServePrecision::Int8 => 1.0,
            ServePrecision::Int4 => 0.5 + 2.0 / 128.0,
            ServePrecision::Fp4 => 0.5 + 1.0 / 16.0,
        }
    }

    /// The precision the GEMMs run in: weight-only formats dequantise to 16 bits; `None` for
    /// fp4, which runs on the device's fp4 rate (`loam_compiler::catalogue::Device::fp4_peak`).
    pub fn compute(self) -> Option<Precision> {
        match self {
            ServePrecision::Bf16 | ServePrecision::Int8 | ServePrecision::Int4 => {
                Some(Precision::Bf16)
            }
            ServePrecision::Fp16 => Some(Precision::Fp16),
            ServePrecision::Fp8 => Some(Precision::Fp8),
            ServePrecision::Fp4 => None,
        }
    }

    /// The KV-cache precision a service gets when it names none: fp8 beside fp8 or fp4
    /// weights (what the engines' fp8 checkpoints ship with), else 16 bits.
    pub fn default_kv_cache(self) -> KvCache {
        match self {
            ServePrecision::Fp8 | ServePrecision::Fp4 => KvCache::Fp8,
            ServePrecision::Fp16 => KvCache::Fp16,
            _ => KvCache::Bf16,
        }
    }
}

keyword_enum! {
    /// The precision of a service's KV cache.
    KvCache {
        /// bfloat16 keys and values.
        Bf16 = "bf16",
        /// IEEE half keys and values.
        Fp16 = "fp16",
        /// 8-bit floating-point keys and values.
        Fp8 = "fp8",
    }
}

impl KvCache {
    /// Bytes of one cached key or value element.
    pub fn bytes(self) -> f64 {
        match self {
            KvCache::Bf16 | KvCache::Fp16 => 2.0,
            KvCache::Fp8 => 1.0,
        }
    }
}

keyword_enum! {
    /// The serving engine a service runs on: a hint for the manifests (its command line) and
    /// for its efficiency.
    Engine {
        /// vLLM (`vllm serve`).
        Vllm = "vllm",
        /// SGLang (`python -m sglang.launch_server`).
        Sglang = "sglang",
        /// NVIDIA TensorRT-LLM (`trtllm-serve`).
        Trtllm = "trtllm",
        /// Huawei MindIE (Ascend).
        Mindie = "mindie",
        /// LMDeploy (`lmdeploy serve api_server`).
        Lmdeploy = "lmdeploy",
    }
}

keyword_enum! {
    /// The percentile a latency target holds at.
    Percentile {
        /// The median.
        P50 = "p50",
        /// The 90th percentile.
        P90 = "p90",
        /// The 95th percentile.
        P95 = "p95",
        /// The 99th percentile.
        P99 = "p99",
    }
}

impl Percentile {
    /// The fraction of requests at or below the percentile (0.99 for `p99`).
    pub fn fraction(self) -> f64 {
        match self {
            Percentile::P50 => 0.50,
            Percentile::P90 => 0.90,
            Percentile::P95 => 0.95,
            Percentile::P99 => 0.99,
        }
    }
}

keyword_enum! {
    /// Whether a service runs prefill and decode on the same replicas.
    Disaggregation {
        /// The planner decides.
        Auto = "auto",
        /// Every replica prefills and decodes (continuous batching mixes both).
        Aggregated = "aggregated",
        /// Prefill replicas hand the KV cache to decode replicas.
        Disaggregated = "disaggregated",
    }
}

keyword_enum! {
    /// How a plan over two device groups divides the work (the Plan JSON's `hetero`).
    Hetero {
        /// Each group runs some pipeline stages of every replica.
        Pipeline = "pipeline",
        /// Each group runs whole replicas on its share of the batch.
        Data = "data",
    }
}

keyword_enum! {
    /// How a planned service runs prefill and decode (the Plan JSON's service `mode`): what
    /// [`Disaggregation`] asks for, decided.
    ServiceMode {
        /// Every replica prefills and decodes.
        Aggregated = "aggregated",
        /// Prefill replicas hand the KV cache to decode replicas.
        Disaggregated = "disaggregated",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_round_trip() {
        for p in Precision::ALL {
            assert_eq!(Precision::from_keyword(p.as_str()), Some(*p));
        }
        assert_eq!(Recompute::from_keyword("partial"), None);
        assert_eq!(
            serde_json::to_string(&Recompute::Selective).unwrap(),
            "\"selective\""
        );
    }
}
