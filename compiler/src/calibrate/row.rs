//! One row of a calibration CSV, and the architecture it describes: the columns, and the
//! architecture details the file keeps in its `notes` column (head_dim, MLA, sliding windows).

use crate::check::CAPACITY_FACTOR;
use crate::workload::{ExpertDispatch, ExpertGroups, Mla};
use serde::Deserialize;

use crate::workload::StateOverrides;
use loam_ir::types::{Optimizer, Precision, StateFormat};

/// One row of the calibration CSV. The MoE, pipeline-split and notes columns were added to the
/// shared file in December 2026; a CSV without them still reads (every one is blank).
#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct Row {
    pub(super) run_id: String,
    pub(super) layers: u32,
    pub(super) hidden: u32,
    pub(super) heads: u32,
    pub(super) kv_heads: u32,
    pub(super) ffn: u32,
    pub(super) vocab: u32,
    pub(super) mlp: String,
    pub(super) seq_len: u32,
    pub(super) device: String,
    pub(super) devices: u32,
    pub(super) node_nic_gbps: f64,
    pub(super) precision: String,
    pub(super) tp: u32,
    pub(super) pp: u32,
    pub(super) dp: u32,
    pub(super) cp: u32,
    pub(super) vpp: u32,
    pub(super) zero: u8,
    pub(super) recompute: Option<String>,
    pub(super) micro_batch: Option<u32>,
    pub(super) global_batch: u32,
    pub(super) measured_tokens_per_s_per_device: f64,
    /// Where the figure was published (the stack is read from it).
    #[serde(default)]
    pub(super) source: String,
    /// Expert-parallel degree (blank or 1 for dense models).
    #[serde(default)]
    pub(super) ep: Option<u32>,
    /// Routed experts per MoE block.
    #[serde(default)]
    pub(super) experts: Option<u32>,
    /// Routed experts each token runs.
    #[serde(default)]
    pub(super) top_k: Option<u32>,
    /// Hidden size of one routed expert.
    #[serde(default)]
    pub(super) expert_ffn: Option<u32>,
    /// Experts every token runs besides the routed ones.
    #[serde(default)]
    pub(super) shared_experts: Option<u32>,
    /// The first N blocks are dense.
    #[serde(default)]
    pub(super) dense_layers: Option<u32>,
    /// FFN size of those dense blocks.
    #[serde(default)]
    pub(super) dense_ffn: Option<u32>,
    /// `even`, `embedding_and_loss_count_as_layers` or `uneven_unstated`.
    #[serde(default)]
    pub(super) pipeline_split: Option<String>,
    /// Architecture details without a column of their own, `|`-separated.
    #[serde(default)]
    pub(super) notes: Option<String>,
    // The runs store's model and stack columns (`runs::store::model`): blank in the published
    // file, whose rows say the same in `notes` and `source`. A column given wins over both.
    #[serde(default)]
    pub(super) capacity_factor: Option<f64>,
    #[serde(default)]
    pub(super) expert_groups: Option<u32>,
    #[serde(default)]
    pub(super) groups_per_token: Option<u32>,
    #[serde(default)]
    pub(super) expert_dispatch: Option<String>,
    #[serde(default)]
    pub(super) head_dim: Option<u32>,
    #[serde(default)]
    pub(super) sliding_window: Option<u32>,
    #[serde(default)]
    pub(super) global_every: Option<u32>,
    #[serde(default)]
    pub(super) q_lora_rank: Option<u32>,
    #[serde(default)]
    pub(super) kv_lora_rank: Option<u32>,
    #[serde(default)]
    pub(super) qk_nope_head_dim: Option<u32>,
    #[serde(default)]
    pub(super) qk_rope_head_dim: Option<u32>,
    #[serde(default)]
    pub(super) v_head_dim: Option<u32>,
    #[serde(default)]
    pub(super) tie_embeddings: Option<bool>,
    #[serde(default)]
    pub(super) optimizer: Option<String>,
    #[serde(default)]
    pub(super) tensor_overlap: Option<bool>,
}

impl Row {
    /// `noted` (what the `notes` column says) with the row's own attention columns over it,
    /// after checking the stack columns: `Err((column, why))` for a dispatch the language does
    /// not know, a capacity factor outside a spec's bounds, latent attention with some of its
    /// widths, or a routing limit with one of its two numbers.
    pub(super) fn stated_architecture(
        &self,
        noted: NotedArchitecture,
    ) -> Result<NotedArchitecture, (&'static str, String)> {
        self.stated_dispatch()?;
        self.stated_groups()?;
        self.stated_optimizer()?;
        if let Some(c) = self.capacity_factor
            && !(CAPACITY_FACTOR.0..=CAPACITY_FACTOR.1).contains(&c)
        {
            return Err((
                "capacity_factor",
                format!(
                    "expected a factor from {} to {}",
                    CAPACITY_FACTOR.0, CAPACITY_FACTOR.1
                ),
            ));
        }
        let widths = (
            self.q_lora_rank,
            self.kv_lora_rank,
            self.qk_nope_head_dim,
            self.qk_rope_head_dim,
            self.v_head_dim,
        );
        let mla = match widths {
            (Some(q), Some(kv), Some(nope), Some(rope), Some(v)) => Some(Mla {
                q_lora_rank: q,
                kv_lora_rank: kv,
                qk_nope_head_dim: nope,
                qk_rope_head_dim: rope,
                v_head_dim: v,
            }),
            (None, None, None, None, None) => noted.mla,
            _ => {
                return Err((
                    "q_lora_rank",
                    "latent attention states all five of `q_lora_rank`, `kv_lora_rank`, \
                     `qk_nope_head_dim`, `qk_rope_head_dim` and `v_head_dim`, or none"
                        .into(),
                ));
            }
        };
        let sliding_window = self.sliding_window.or(noted.sliding_window);
        Ok(NotedArchitecture {
            head_dim: self.head_dim.or(noted.head_dim),
            mla,
            sliding_window,
            global_every: self.global_every.or(noted.global_every),
        })
    }

    /// The optimizer the row states in its `optimizer` column, AdamW when blank (what the
    /// published runs used).
    pub(super) fn stated_optimizer(&self) -> Result<Optimizer, (&'static str, String)> {
        match self.optimizer.as_deref().map(str::trim) {
            None | Some("") => Ok(Optimizer::Adamw),
            Some(o) => Optimizer::from_keyword(o).ok_or_else(|| {
                (
                    "optimizer",
                    format!("expected one of {:?}", Optimizer::keywords()),
                )
            }),
        }
    }

    /// The dispatch the row states in its `expert_dispatch` column, `None` when blank.
    pub(super) fn stated_dispatch(&self) -> Result<Option<ExpertDispatch>, (&'static str, String)> {
        match self.expert_dispatch.as_deref().map(str::trim) {
            None | Some("") => Ok(None),
            Some(d) => ExpertDispatch::from_keyword(d).map(Some).ok_or_else(|| {
                (
                    "expert_dispatch",
                    format!("expected one of {:?}", ExpertDispatch::keywords()),
                )
            }),
        }
    }

    /// The routing limit the row states in `expert_groups` and `groups_per_token`, `None` when
    /// both are blank; as a spec's: both or neither, groups that divide the experts, at most all
    /// of them a token.
    pub(super) fn stated_groups(&self) -> Result<Option<ExpertGroups>, (&'static str, String)> {
        let experts = self.experts.unwrap_or(1);
        match (self.expert_groups, self.groups_per_token) {
            (None, None) => Ok(None),
            (Some(groups), Some(per_token))
                if groups > 0
                    && (1..=groups).contains(&per_token)
                    && experts.is_multiple_of(groups) =>
            {
                Ok(Some(ExpertGroups { groups, per_token }))
            }
            _ => Err((
                "expert_groups",
                format!(
                    "`expert_groups` and `groups_per_token` come together: groups that divide \
                     the {experts} experts, and at least 1 and at most all of them a token"
                ),
            )),
        }
    }
}

/// How the source split the blocks over pipeline stages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PublishedSplit {
    /// Blank: one stage, or the source does not say.
    Unstated,
    /// `even`: equal blocks per stage.
    Even,
    /// `embedding_and_loss_count_as_layers`: Megatron's account-for-embedding/loss split.
    EmbeddingAndLoss,
    /// `uneven_unstated`: the blocks cannot split evenly and the source does not say how.
    UnevenUnstated,
}

impl PublishedSplit {
    /// The column's value, or `None` for a value the file's README does not define.
    pub(super) fn parse(text: Option<&str>) -> Option<PublishedSplit> {
        match text.unwrap_or("") {
            "" => Some(PublishedSplit::Unstated),
            "even" => Some(PublishedSplit::Even),
            "embedding_and_loss_count_as_layers" => Some(PublishedSplit::EmbeddingAndLoss),
            "uneven_unstated" => Some(PublishedSplit::UnevenUnstated),
            _ => None,
        }
    }
}

impl Row {
    /// The training-state formats the row's software stack uses, read from its `source`: the
    /// stack is part of what a run measured, and the file names it only there.
    ///
    /// NVIDIA's performance tables for fp8 runs (NeMo 25.02 onwards and Megatron-Bridge) come
    /// from performance scripts that reduce gradients in bf16: NeMo's
    /// `scripts/llm/performance/helpers.py` (`set_primary_perf_configs`) sets
    /// `grad_reduce_in_fp32 = False` whenever the compute dtype is fp8, and Megatron-Bridge's
    /// performance configs (`scripts/performance/configs/`, e.g. DeepSeek-V3 and Qwen3) set
    /// `ddp.grad_reduce_in_fp32 = False`. Every other row keeps its framework's recipe
    /// (Megatron-Core's fp32 gradients, FSDP's fp32 reduction).
    pub(super) fn published_states(&self, precision: Precision) -> StateOverrides {
        let nvidia_performance_scripts =
            self.source.contains("NeMo 25.") || self.source.contains("Megatron-Bridge");
        let gradients = (precision == Precision::Fp8 && nvidia_performance_scripts)
            .then_some(StateFormat::Bf16);
        StateOverrides {
            gradients,
            ..StateOverrides::NONE
        }
    }

    /// Whether the run overlapped its tensor-parallel collectives with the GEMMs, as its row
    /// states: the sharding note names torchtitan's async tensor parallelism (`+ AsyncTP`,
    /// `enable_async_tensor_parallel`, pytorch/torchtitan
    /// `benchmarks/asyncTP_llama3_h100_2025-06_torchtitan.md` and
    /// `benchmarks/llama3_h100_202412_torchtitan.md`), or its `tensor_overlap` column (the runs
    /// store's) says so. A row that does not say so ran its collectives blocking, as far as the
    /// file tells.
    pub(super) fn states_tensor_overlap(&self) -> bool {
        if let Some(stated) = self.tensor_overlap {
            return stated;
        }
        self.notes
            .as_deref()
            .unwrap_or("")
            .split(" | ")
            .any(|part| {
                part.strip_prefix("dp_sharding_note:")
                    .is_some_and(|note| note.contains("AsyncTP"))
            })
    }
}

/// Architecture details read from the `notes` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct NotedArchitecture {
    /// `head_dim 128`.
    pub(super) head_dim: Option<u32>,
    /// `MLA attention (q_lora 1536, kv_lora 512, qk_nope 128, qk_rope 64, v 128)`.
    pub(super) mla: Option<Mla>,
    /// `sliding-window(128)`: the window in tokens.
    pub(super) sliding_window: Option<u32>,
    /// `alternating sliding-window(…)/full attention`: every second block attends fully.
    pub(super) global_every: Option<u32>,
}

/// The whole number right after `key` in `text` (`"head_dim 128"` → 128 for key `"head_dim "`).
fn number_after(text: &str, key: &str) -> Option<u32> {
    let start = text.find(key)? + key.len();
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// Reads the architecture details the notes state in the shared file's wording. A note that
/// mentions MLA but whose dims do not read is an error, so a row is never costed as plain
/// attention by mistake.
pub(super) fn noted_architecture(notes: &str) -> Result<NotedArchitecture, String> {
    let mut arch = NotedArchitecture {
        head_dim: number_after(notes, "head_dim "),
        ..NotedArchitecture::default()
    };
    if notes.contains("MLA") {
        let dims = (
            number_after(notes, "q_lora "),
            number_after(notes, "kv_lora "),
            number_after(notes, "qk_nope "),
            number_after(notes, "qk_rope "),
            number_after(notes, " v "),
        );
        let (Some(q), Some(kv), Some(nope), Some(rope), Some(v)) = dims else {
            return Err(
                "the notes name MLA attention without all of `q_lora`, `kv_lora`, `qk_nope`, \
                 `qk_rope` and `v`"
                    .into(),
            );
        };
        arch.mla = Some(Mla {
            q_lora_rank: q,
            kv_lora_rank: kv,
            qk_nope_head_dim: nope,
            qk_rope_head_dim: rope,
            v_head_dim: v,
        });
    }
    if let Some(window) = number_after(notes, "sliding-window(") {
        arch.sliding_window = Some(window);
        if notes.contains("alternating") {
            arch.global_every = Some(2);
        }
    } else if notes.contains("sliding-window") || notes.contains("sliding window") {
        return Err("the notes name sliding-window attention without its window".into());
    }
    Ok(arch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_architecture_notes_of_the_shared_file() {
        let dsv3 = "moe_note: first 3 layers dense (ffn 18432), 58 MoE layers; MLA attention \
                    (q_lora 1536, kv_lora 512, qk_nope 128, qk_rope 64, v 128) - kv_heads column \
                    is not meaningful for MLA | reliability: medium";
        let arch = noted_architecture(dsv3).unwrap();
        assert_eq!(
            arch.mla,
            Some(Mla {
                q_lora_rank: 1536,
                kv_lora_rank: 512,
                qk_nope_head_dim: 128,
                qk_rope_head_dim: 64,
                v_head_dim: 128
            })
        );
        assert_eq!(arch.head_dim, None);
        let gpt_oss = "moe_note: all layers MoE; head_dim 64; alternating \
                       sliding-window(128)/full attention | dp_sharding_note: x";
        let arch = noted_architecture(gpt_oss).unwrap();
        assert_eq!(
            (arch.head_dim, arch.sliding_window, arch.global_every),
            (Some(64), Some(128), Some(2))
        );
        assert_eq!(
            noted_architecture("nic_note: DGX H100").unwrap(),
            NotedArchitecture::default()
        );
        assert!(noted_architecture("MLA attention (q_lora 1536)").is_err());
        assert!(noted_architecture("sliding window layers").is_err());
    }

    #[test]
    fn knows_the_split_values_of_the_readme() {
        assert_eq!(PublishedSplit::parse(None), Some(PublishedSplit::Unstated));
        assert_eq!(
            PublishedSplit::parse(Some("embedding_and_loss_count_as_layers")),
            Some(PublishedSplit::EmbeddingAndLoss)
        );
        assert_eq!(PublishedSplit::parse(Some("zigzag")), None);
    }

    fn row_from(source: &str) -> Row {
        let header = "run_id,layers,hidden,heads,kv_heads,ffn,vocab,mlp,seq_len,device,devices,\
node_nic_gbps,precision,tp,pp,dp,cp,vpp,zero,recompute,micro_batch,global_batch,\
measured_tokens_per_s_per_device,source";
        let line = format!(
            "r,32,4096,32,8,14336,128256,swiglu,8192,B200,8,3200,fp8,1,1,8,1,1,1,,2,128,26006,\"{source}\""
        );
        let text = format!("{header}\n{line}\n");
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        reader.deserialize().next().unwrap().unwrap()
    }

    #[test]
    fn a_row_overlaps_its_tensor_collectives_only_where_its_sharding_note_says_async_tp() {
        let with_notes = |notes: &str| Row {
            notes: Some(notes.to_string()),
            ..row_from("torchtitan")
        };
        let async_tp = "dp_sharding_note: FSDP8 x TP8 x PP8 (3D) + AsyncTP | nic_note: stated";
        assert!(with_notes(async_tp).states_tensor_overlap());
        assert!(
            !with_notes("dp_sharding_note: FSDP32 x TP8 (2D) | notes: x").states_tensor_overlap()
        );
        // Named elsewhere than the sharding note, it is not the run's setting.
        assert!(
            !with_notes("notes: compare with AsyncTP | dp_sharding_note: FSDP")
                .states_tensor_overlap()
        );
        assert!(!row_from("torchtitan").states_tensor_overlap());
    }

    #[test]
    fn nvidia_performance_recipes_reduce_fp8_gradients_in_bf16() {
        // NeMo 25.x's and Megatron-Bridge's performance scripts set grad_reduce_in_fp32 off
        // for fp8 runs; NeMo 24.07 and every other stack keep fp32 gradients (no override).
        let bf16 = Some(StateFormat::Bf16);
        let of = |source: &str, precision| row_from(source).published_states(precision).gradients;
        assert_eq!(of("NeMo 25.02 container, DGX-B200", Precision::Fp8), bf16);
        assert_eq!(
            of("NVIDIA-NeMo/Megatron-Bridge 26.04", Precision::Fp8),
            bf16
        );
        assert_eq!(of("NeMo 25.02 container, DGX-B200", Precision::Bf16), None);
        assert_eq!(of("NeMo 24.07 container, DGX-H100", Precision::Fp8), None);
        assert_eq!(of("pytorch/torchtitan benchmarks", Precision::Fp8), None);
    }

    /// The runs store's own columns win over what `notes` says, and are held to a spec's rules.
    #[test]
    fn a_rows_own_model_columns_override_its_notes_and_follow_the_specs_rules() {
        let moe = Row {
            experts: Some(64),
            top_k: Some(8),
            expert_groups: Some(8),
            groups_per_token: Some(2),
            expert_dispatch: Some("deduplicated".into()),
            head_dim: Some(96),
            ..row_from("runs store: megatron-lm")
        };
        let noted = noted_architecture("head_dim 128").unwrap();
        assert_eq!(moe.stated_architecture(noted).unwrap().head_dim, Some(96));
        assert_eq!(
            moe.stated_groups().unwrap(),
            Some(ExpertGroups {
                groups: 8,
                per_token: 2
            })
        );
        assert_eq!(
            moe.stated_dispatch().unwrap(),
            Some(ExpertDispatch::Deduplicated)
        );
        // 6 groups do not divide 64 experts; 9 a token is more than 8 groups; one of two.
        for (groups, per_token) in [(Some(6), Some(2)), (Some(8), Some(9)), (Some(8), None)] {
            let bad = Row {
                expert_groups: groups,
                groups_per_token: per_token,
                ..moe.clone()
            };
            assert_eq!(bad.stated_groups().unwrap_err().0, "expert_groups");
        }
        let partial_mla = Row {
            kv_lora_rank: Some(512),
            ..moe.clone()
        };
        assert_eq!(
            partial_mla
                .stated_architecture(NotedArchitecture::default())
                .unwrap_err()
                .0,
            "q_lora_rank"
        );
        let unknown = Row {
            expert_dispatch: Some("broadcast".into()),
            ..moe
        };
        assert_eq!(unknown.stated_dispatch().unwrap_err().0, "expert_dispatch");
    }
}
