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
    /// Bytes of optimizer state per parameter under mixed precision (fp32 master copy included),
    /// the `K` of the ZeRO paper.
    pub fn state_bytes_per_param(self) -> f64 {
        match self {
            Optimizer::Adamw | Optimizer::Adam => 12.0,
            Optimizer::Sgd | Optimizer::Lion => 8.0,
        }
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
