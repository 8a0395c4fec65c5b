//! The `model` block: dimensions, and whether they agree with each other.

use super::reader::{BlockSpec, read_block};
use super::{MAX_DIM, ModelSpec, OPERATIONS};
use crate::diagnostics::codes;
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::suggest::closest;
use crate::syntax::ast::Block;
use crate::types::{Arch, Mlp};

/// A stated `params` may differ from the count derived from the dimensions by this fraction:
/// published sizes are rounded ("70B" for 70.6B, "8B" for 8.03B).
const PARAMS_TOLERANCE: f64 = 0.15;

pub(super) fn check_model(
    block: &Block,
    spec: &BlockSpec,
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
    let layers = dim(&mut f, "layers", "80");
    let hidden = dim(&mut f, "hidden", "8192");
    let ffn = dim(&mut f, "ffn", "28672");
    let heads = dim(&mut f, "heads", "64");
    let vocab = dim(&mut f, "vocab", "128256");
    let seq_len = dim(&mut f, "seq_len", "8192");
    let kv_heads = f.integer("kv_heads", 1, MAX_DIM, false);
    let params = f.count("params");
    let experts = f.integer("experts", 1, 4096, false);
    let top_k = f.integer("top_k", 1, 4096, false);
    let tie_embeddings = f.boolean("tie_embeddings").is_some_and(|b| b.value);
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
    let (layers, hidden, ffn, heads, vocab, seq_len) =
        (layers?, hidden?, ffn?, heads?, vocab?, seq_len?);
    let kv = kv_heads.clone();
    let model = ModelSpec {
        arch,
        mlp,
        layers: layers.value,
        hidden: hidden.value,
        ffn: ffn.value,
        heads: heads.value,
        kv_heads: kv_heads.map_or(heads.value, |k| k.value),
        vocab: vocab.value,
        seq_len: seq_len.value,
        params: params.clone(),
        experts: experts.as_ref().map(|e| e.value),
        top_k: top_k.as_ref().map(|k| k.value),
        tie_embeddings,
        sensitive,
        span: block.span,
    };

    if !model.hidden.is_multiple_of(model.heads) {
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
    if let Some(kv) = kv
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
    check_moe_fields(&model, block, experts.as_ref(), top_k.as_ref(), diags);
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

fn check_moe_fields(
    model: &ModelSpec,
    block: &Block,
    experts: Option<&crate::span::Spanned<u64>>,
    top_k: Option<&crate::span::Spanned<u64>>,
    diags: &mut Diagnostics,
) {
    match model.arch {
        Arch::Dense => {
            for (name, field) in [("experts", experts), ("top_k", top_k)] {
                if let Some(field) = field {
                    diags.push(
                        Diagnostic::error(
                            codes::check::MOE_FIELDS,
                            format!("`{name}` is only for `arch = moe`"),
                            field.span,
                            "this model is dense",
                        )
                        .with_help("set `arch = moe` or remove the field"),
                    );
                }
            }
        }
        Arch::Moe => {
            for (name, field, example) in [("experts", experts, "8"), ("top_k", top_k, "2")] {
                if field.is_none() {
                    diags.push(
                        Diagnostic::error(
                            codes::check::MOE_FIELDS,
                            format!("missing field `{name}` for `arch = moe`"),
                            block.name.span,
                            format!("a mixture of experts needs `{name}`"),
                        )
                        .with_help(format!("add `{name} = {example}` to the model block")),
                    );
                }
            }
            if let (Some(e), Some(k)) = (experts, top_k)
                && k.value > e.value
            {
                diags.push(
                    Diagnostic::error(
                        codes::check::MOE_FIELDS,
                        format!("`top_k` ({}) is more than `experts` ({})", k.value, e.value),
                        k.span,
                        "a token cannot run more experts than there are",
                    )
                    .with_related(e.span, "experts set here")
                    .with_help("make top_k at most the number of experts"),
                );
            }
        }
    }
}

fn billions(n: f64) -> String {
    format!("{:.1}B", n / 1e9)
}

/// Parameters implied by the model's dimensions (all experts of an MoE counted), the figure a
/// stated `params` is checked against.
pub fn parameter_count(model: &ModelSpec) -> f64 {
    crate::workload::param_count(&super::workload::model_dims(model)).total
}
