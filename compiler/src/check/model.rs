//! The `model` block: dimensions, and whether they agree with each other.

use super::reader::{BlockSpec, read_block};
use super::{MAX_DIM, MAX_LAYERS, MlaSpec, ModelSpec, OPERATIONS, single_block};
use crate::suggest::closest;
use crate::syntax::ast::Block;
use crate::workload::ExpertGroups;
use loam_ir::diagnostics::codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::span::Spanned;
use loam_ir::types::{Arch, Mlp};

/// A stated `params` may differ from the count derived from the dimensions by this fraction:
/// published sizes are rounded ("70B" for 70.6B, "8B" for 8.03B).
const PARAMS_TOLERANCE: f64 = 0.15;

pub(super) fn check_model(
    block: &Block,
    spec: &BlockSpec,
    mla_spec: &BlockSpec,
    diags: &mut Diagnostics,
) -> Option<ModelSpec> {
    let mut f = read_block(block, spec, diags);
    let arch = f
        .keyword("arch", Arch::from_keyword, &Arch::keywords(), false)
        .map(|a| a.value);
    let arch = arch.unwrap_or(Arch::Dense);
    let mlp = f
        .keyword("mlp", Mlp::from_keyword, &Mlp::keywords(), false)
        .map_or(Mlp::Swiglu, |m| m.value);
    let dim = |f: &mut super::reader::Fields<'_>, name: &str, example: &str| {
        let value = f.integer(name, 1, MAX_DIM, false);
        f.require(name, value, example)
    };
    let layers = f.integer("layers", 1, MAX_LAYERS, false);
    let layers = f.require("layers", layers, "80");
    let hidden = dim(&mut f, "hidden", "8192");
    let ffn = dim(&mut f, "ffn", "28672");
    let heads = dim(&mut f, "heads", "64");
    let vocab = dim(&mut f, "vocab", "128256");
    let seq_len = dim(&mut f, "seq_len", "8192");
    let kv_heads = f.integer("kv_heads", 1, MAX_DIM, false);
    let params = f.count("params", super::ranges::PARAMS);
    let tie_embeddings = f.boolean("tie_embeddings").is_some_and(|b| b.value);
    let head_dim = f.integer("head_dim", 1, MAX_DIM, false);
    let sliding_window = f.integer("sliding_window", 1, MAX_DIM, false);
    let global_every = f.integer("global_every", 1, MAX_DIM, false);
    let moe = MoeFields {
        experts: f.integer("experts", 1, 4096, false),
        top_k: f.integer("top_k", 1, 4096, false),
        expert_ffn: f.integer("expert_ffn", 1, MAX_DIM, false),
        shared_experts: f.integer("shared_experts", 0, 4096, false),
        dense_layers: f.integer("dense_layers", 0, MAX_DIM, false),
        capacity_factor: f.number(
            "capacity_factor",
            super::CAPACITY_FACTOR.0,
            super::CAPACITY_FACTOR.1,
        ),
        expert_groups: f.integer("expert_groups", 1, 4096, false),
        groups_per_token: f.integer("groups_per_token", 1, 4096, false),
    };
    let sensitive = f.names("sensitive");
    for op in &sensitive {
        if !OPERATIONS.contains(&op.value.as_str()) {
            let help = match closest(&op.value, OPERATIONS.iter().copied()) {
                Some(near) => format!("did you mean `{near}`?"),
                None => format!("operations are {}", super::reader::list_names(OPERATIONS)),
            };
            f.diags.push(
                Diagnostic::error(
                    codes::check::UNKNOWN_KEYWORD,
                    format!("unknown operation `{}`", op.value),
                    op.span,
                    "not an operation of the model",
                )
                .with_help(help),
            );
        }
    }
    drop(f);
    let mla_block = single_block(block, "mla", diags);
    let mla = mla_block.and_then(|b| check_mla(b, mla_spec, diags));
    let (layers, hidden, ffn, heads, vocab, seq_len) =
        (layers?, hidden?, ffn?, heads?, vocab?, seq_len?);
    let kv = kv_heads.clone();
    // Latent attention has no separate key/value heads: every head gets its own K and V.
    let kv_heads_value = match (&mla, &kv_heads) {
        (Some(_), _) => heads.value,
        (None, k) => k.as_ref().map_or(heads.value, |k| k.value),
    };
    let model = ModelSpec {
        arch,
        mlp,
        layers: layers.value,
        hidden: hidden.value,
        ffn: ffn.value,
        heads: heads.value,
        kv_heads: kv_heads_value,
        vocab: vocab.value,
        seq_len: seq_len.value,
        params: params.clone(),
        experts: moe.experts.as_ref().map(|e| e.value),
        top_k: moe.top_k.as_ref().map(|k| k.value),
        head_dim: head_dim.as_ref().map(|d| d.value),
        mla,
        sliding_window: sliding_window.as_ref().map(|w| w.value),
        global_every: global_every.as_ref().map(|g| g.value),
        expert_ffn: moe.expert_ffn.as_ref().map(|e| e.value),
        shared_experts: moe.shared_experts.as_ref().map_or(0, |s| s.value),
        dense_layers: moe.dense_layers.as_ref().map_or(0, |d| d.value),
        capacity_factor: moe.capacity_factor.as_ref().map(|c| c.value),
        expert_groups: match (&moe.expert_groups, &moe.groups_per_token) {
            (Some(g), Some(m)) => Some(ExpertGroups {
                groups: u32::try_from(g.value).unwrap_or(u32::MAX),
                per_token: u32::try_from(m.value).unwrap_or(u32::MAX),
            }),
            _ => None,
        },
        tie_embeddings,
        sensitive,
        span: block.span,
    };

    // With an explicit head width (or latent attention) heads × head width may differ from
    // the hidden size (Qwen3: 64 × 128 over 4096).
    if head_dim.is_none() && mla_block.is_none() && !model.hidden.is_multiple_of(model.heads) {
        diags.push(
            Diagnostic::error(
                codes::check::MODEL_DIMENSIONS_DISAGREE,
                format!(
                    "`heads` ({}) does not divide `hidden` ({})",
                    model.heads, model.hidden
                ),
                heads.span,
                "each head needs an equal slice of the hidden size",
            )
            .with_related(hidden.span, "hidden size set here")
            .with_help("choose a head count that divides the hidden size"),
        );
    }
    let mla_span = mla_block.map(|b| b.span);
    check_attention_fields(
        &model,
        mla_span,
        &kv,
        &head_dim,
        &sliding_window,
        &global_every,
        diags,
    );
    if let Some(kv) = kv
        && mla_block.is_none()
        && (kv.value > model.heads || !model.heads.is_multiple_of(kv.value))
    {
        diags.push(
            Diagnostic::error(
                codes::check::MODEL_DIMENSIONS_DISAGREE,
                format!(
                    "`kv_heads` ({}) does not divide `heads` ({})",
                    kv.value, model.heads
                ),
                kv.span,
                "grouped-query attention shares each key/value head among equal groups",
            )
            .with_related(heads.span, "heads set here")
            .with_help("choose kv_heads that divides heads, e.g. 8 for 64 heads"),
        );
    }
    check_moe_fields(&model, block, &moe, diags);
    if let Some(stated) = &params {
        let derived = parameter_count(&model);
        let off = (stated.value - derived).abs() / derived;
        if off > PARAMS_TOLERANCE {
            diags.push(
                Diagnostic::error(
                    codes::check::PARAMS_DISAGREE,
                    format!(
                        "`params` is {} but the dimensions give {}",
                        billions(stated.value),
                        billions(derived)
                    ),
                    stated.span,
                    format!("{:.0}% away from the dimensions", off * 100.0),
                )
                .with_help(
                    "fix the dimensions or the parameter count, or remove `params` to derive it",
                ),
            );
        }
    }
    Some(model)
}

/// The mixture-of-experts fields as written.
struct MoeFields {
    experts: Option<Spanned<u64>>,
    top_k: Option<Spanned<u64>>,
    expert_ffn: Option<Spanned<u64>>,
    shared_experts: Option<Spanned<u64>>,
    dense_layers: Option<Spanned<u64>>,
    capacity_factor: Option<Spanned<f64>>,
    expert_groups: Option<Spanned<u64>>,
    groups_per_token: Option<Spanned<u64>>,
}

fn moe_error(message: String, span: loam_ir::span::Span, label: &str, help: &str) -> Diagnostic {
    Diagnostic::error(codes::check::MOE_FIELDS, message, span, label).with_help(help)
}

fn check_moe_fields(model: &ModelSpec, block: &Block, moe: &MoeFields, diags: &mut Diagnostics) {
    let (experts, top_k) = (moe.experts.as_ref(), moe.top_k.as_ref());
    match model.arch {
        Arch::Dense => {
            let spans = [
                ("experts", experts.map(|f| f.span)),
                ("top_k", top_k.map(|f| f.span)),
                ("expert_ffn", moe.expert_ffn.as_ref().map(|f| f.span)),
                (
                    "shared_experts",
                    moe.shared_experts.as_ref().map(|f| f.span),
                ),
                ("dense_layers", moe.dense_layers.as_ref().map(|f| f.span)),
                (
                    "capacity_factor",
                    moe.capacity_factor.as_ref().map(|f| f.span),
                ),
                ("expert_groups", moe.expert_groups.as_ref().map(|f| f.span)),
                (
                    "groups_per_token",
                    moe.groups_per_token.as_ref().map(|f| f.span),
                ),
            ];
            for (name, span) in spans {
                if let Some(span) = span {
                    diags.push(moe_error(
                        format!("`{name}` is only for `arch = moe`"),
                        span,
                        "this model is dense",
                        "set `arch = moe` or remove the field",
                    ));
                }
            }
        }
        Arch::Moe => {
            for (name, field, example) in [("experts", experts, "8"), ("top_k", top_k, "2")] {
                // A field written with a bad value (`experts = 0`) already has its own error.
                let written = block.attributes().any(|a| a.name.name == name);
                if field.is_none() && !written {
                    diags.push(moe_error(
                        format!("missing field `{name}` for `arch = moe`"),
                        block.name.span,
                        &format!("a mixture of experts needs `{name}`"),
                        &format!("add `{name} = {example}` to the model block"),
                    ));
                }
            }
            if let (Some(e), Some(k)) = (experts, top_k)
                && k.value > e.value
            {
                diags.push(
                    moe_error(
                        format!("`top_k` ({}) is more than `experts` ({})", k.value, e.value),
                        k.span,
                        "a token cannot run more experts than there are",
                        "make top_k at most the number of experts",
                    )
                    .with_related(e.span, "experts set here"),
                );
            }
            check_expert_groups(block, moe, diags);
            if let Some(d) = &moe.dense_layers
                && d.value >= model.layers
            {
                diags.push(moe_error(
                    format!(
                        "`dense_layers` ({}) leaves none of the {} layers a mixture of experts",
                        d.value, model.layers
                    ),
                    d.span,
                    "the first `dense_layers` blocks are dense",
                    "make dense_layers less than layers, or write `arch = dense`",
                ));
            }
        }
    }
}

/// Group-limited routing: both fields or neither, groups that divide the experts, and no more
/// groups per token than there are groups.
fn check_expert_groups(block: &Block, moe: &MoeFields, diags: &mut Diagnostics) {
    let (groups, per_token) = (moe.expert_groups.as_ref(), moe.groups_per_token.as_ref());
    let written = |name: &str| block.attributes().any(|a| a.name.name == name);
    match (groups, per_token) {
        (Some(g), None) if !written("groups_per_token") => diags.push(moe_error(
            "`expert_groups` without `groups_per_token`".to_string(),
            g.span,
            "the experts form groups, but how many a token picks from is missing",
            "add `groups_per_token` (DeepSeek-V3: `expert_groups = 8`, `groups_per_token = 4`)",
        )),
        (None, Some(m)) if !written("expert_groups") => diags.push(moe_error(
            "`groups_per_token` without `expert_groups`".to_string(),
            m.span,
            "a token picks from groups the model does not define",
            "add `expert_groups`, the number of groups the experts form",
        )),
        (Some(g), Some(m)) => {
            if let Some(e) = &moe.experts
                && !e.value.is_multiple_of(g.value)
            {
                diags.push(
                    moe_error(
                        format!(
                            "`expert_groups` ({}) does not divide `experts` ({})",
                            g.value, e.value
                        ),
                        g.span,
                        "each group holds an equal share of the experts",
                        "choose a group count that divides the experts",
                    )
                    .with_related(e.span, "experts set here"),
                );
            }
            if m.value > g.value {
                diags.push(
                    moe_error(
                        format!(
                            "`groups_per_token` ({}) is more than `expert_groups` ({})",
                            m.value, g.value
                        ),
                        m.span,
                        "a token cannot pick from more groups than there are",
                        "make groups_per_token at most expert_groups",
                    )
                    .with_related(g.span, "groups set here"),
                );
            }
        }
        _ => {}
    }
}

/// Head width, latent attention and sliding windows: fields that only make sense together.
fn check_attention_fields(
    model: &ModelSpec,
    mla: Option<loam_ir::span::Span>,
    kv_heads: &Option<Spanned<u64>>,
    head_dim: &Option<Spanned<u64>>,
    sliding_window: &Option<Spanned<u64>>,
    global_every: &Option<Spanned<u64>>,
    diags: &mut Diagnostics,
) {
    let disagree = |message: String, span, label: &str, help: &str| {
        Diagnostic::error(
            codes::check::MODEL_DIMENSIONS_DISAGREE,
            message,
            span,
            label,
        )
        .with_help(help)
    };
    if let Some(mla_span) = mla {
        if let Some(d) = head_dim {
            diags.push(
                disagree(
                    "`head_dim` does not apply to latent attention".to_string(),
                    d.span,
                    "latent attention sets its head widths in `mla`",
                    "remove `head_dim`; set `qk_nope_head_dim`, `qk_rope_head_dim` and `v_head_dim`",
                )
                .with_related(mla_span, "latent attention set here"),
            );
        }
        if let Some(k) = kv_heads
            && k.value != model.heads
        {
            diags.push(
                disagree(
                    format!(
                        "`kv_heads` ({}) does not apply to latent attention",
                        k.value
                    ),
                    k.span,
                    "every head reads its own keys and values from the shared latent",
                    "remove `kv_heads`",
                )
                .with_related(mla_span, "latent attention set here"),
            );
        }
    }
    if let (Some(g), None) = (global_every, sliding_window) {
        diags.push(disagree(
            "`global_every` needs `sliding_window`".to_string(),
            g.span,
            "no block slides, so every block is global already",
            "add `sliding_window = 4096` (the window in tokens), or remove `global_every`",
        ));
    }
}

/// Reads the `mla { … }` block.
fn check_mla(block: &Block, spec: &BlockSpec, diags: &mut Diagnostics) -> Option<MlaSpec> {
    let mut f = read_block(block, spec, diags);
    let q_lora_rank = f.integer("q_lora_rank", 0, MAX_DIM, false);
    let mut dim = |name: &str, example: &str| {
        let value = f.integer(name, 1, MAX_DIM, false);
        f.require(name, value, example)
    };
    let kv_lora_rank = dim("kv_lora_rank", "512");
    let qk_nope_head_dim = dim("qk_nope_head_dim", "128");
    let qk_rope_head_dim = dim("qk_rope_head_dim", "64");
    let v_head_dim = dim("v_head_dim", "128");
    drop(f);
    Some(MlaSpec {
        q_lora_rank: q_lora_rank.map_or(0, |q| q.value),
        kv_lora_rank: kv_lora_rank?.value,
        qk_nope_head_dim: qk_nope_head_dim?.value,
        qk_rope_head_dim: qk_rope_head_dim?.value,
        v_head_dim: v_head_dim?.value,
        span: block.span,
    })
}

fn billions(n: f64) -> String {
    format!("{:.1}B", n / 1e9)
}

/// Parameters implied by the model's dimensions (all experts of an MoE counted), the figure a
/// stated `params` is checked against.
pub fn parameter_count(model: &ModelSpec) -> f64 {
    crate::workload::param_count(&super::workload::model_dims(model)).total
}
