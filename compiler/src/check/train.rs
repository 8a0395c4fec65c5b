//! The `train` block: tokens, batch, precision, optimizer, the framework and the formats of the
//! training states (`framework`, `gradients`, `master_weights`, `moments`), how an MoE model's
//! tokens reach their experts (`expert_dispatch`), and which weights train (`freeze`,
//! `lora { … }`).

use super::reader::read_block;
use super::{LORA, LoraSpec, MAX_DIM, TRAIN, TrainSpec, single_block};
use crate::suggest::closest;
use crate::syntax::ast::Block;
use crate::workload::{ExpertDispatch, Framework, Part, StateOverrides};
use loam_ir::diagnostics::codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::span::Spanned;
use loam_ir::types::{Arch, Optimizer, Precision, StateFormat};

/// The ops LoRA adapters can target: those made of weight matrices a fine-tune adapts.
pub(super) const LORA_TARGETS: &[&str] = &["attention", "mlp"];

/// Reads a `train` block; `arch` is the model's architecture when its block checked, which says
/// which parts the model has (a dense model has no router to freeze).
pub(super) fn check_train(
    block: &Block,
    arch: Option<Arch>,
    diags: &mut Diagnostics,
) -> Option<TrainSpec> {
    let mut f = read_block(block, &TRAIN, diags);
    let tokens = f.count("tokens", super::ranges::TOKENS);
    let tokens = f.require("tokens", tokens, "2T");
    let global_batch = f.integer("global_batch", 1, MAX_DIM, false);
    let global_batch = f.require("global_batch", global_batch, "1024");
    let precision = f.keyword(
        "precision",
        Precision::from_keyword,
        &Precision::keywords(),
        false,
    );
    let precision = f.require("precision", precision, "bf16");
    let optimizer = f
        .keyword(
            "optimizer",
            Optimizer::from_keyword,
            &Optimizer::keywords(),
            false,
        )
        .map_or(Optimizer::Adamw, |o| o.value);
    let framework = f
        .keyword(
            "framework",
            Framework::from_keyword,
            &Framework::KEYWORDS,
            false,
        )
        .map(|v| v.value);
    let expert_dispatch = f.keyword(
        "expert_dispatch",
        ExpertDispatch::from_keyword,
        &ExpertDispatch::keywords(),
        false,
    );
    if let (Some(dispatch), Some(Arch::Dense)) = (&expert_dispatch, arch) {
        f.diags.push(
            Diagnostic::error(
                codes::check::MOE_FIELDS,
                "`expert_dispatch` is only for `arch = moe`",
                dispatch.span,
                "this model is dense: it has no experts to send tokens to",
            )
            .with_help("remove `expert_dispatch`, or set `arch = moe` in the model block"),
        );
    }
    let expert_dispatch = expert_dispatch.map(|d| d.value);
    let mut format = |name: &str| {
        f.keyword(
            name,
            StateFormat::from_keyword,
            &StateFormat::keywords(),
            false,
        )
        .map(|v| v.value)
    };
    let states = StateOverrides {
        framework,
        gradients: format("gradients"),
        master_weights: format("master_weights"),
        moments: format("moments"),
    };
    let freeze = f.names("freeze");
    let parts: Vec<&str> = Part::ALL.iter().map(|p| p.as_str()).collect();
    unknown_names(
        &freeze,
        &parts,
        "part",
        "not a part of the model with weights",
        f.diags,
    );
    drop(f);
    let lora = single_block(block, "lora", diags).and_then(|b| check_lora(b, diags));
    if let (Some(lora), Some(first)) = (&lora, freeze.first()) {
        diags.push(
            Diagnostic::error(
                codes::check::FROZEN_WEIGHTS,
                "`freeze` and `lora` together",
                first.span,
                "LoRA already freezes every base weight",
            )
            .with_related(lora.span, "LoRA adapters set here")
            .with_help(
                "remove `freeze` for a LoRA fine-tune, or the `lora` block for a frozen-base one",
            ),
        );
    }
    let has_part = |part: &Part| !(*part == Part::Router && arch == Some(Arch::Dense));
    if lora.is_none()
        && Part::ALL
            .iter()
            .filter(|p| has_part(p))
            .all(|p| freeze.iter().any(|n| n.value == p.as_str()))
        && let Some(first) = freeze.first()
    {
        diags.push(
            Diagnostic::error(
                codes::check::FROZEN_WEIGHTS,
                "`freeze` leaves nothing to train",
                first.span,
                "every part of the model is frozen",
            )
            .with_help("remove a part from `freeze`, or add a `lora { rank = 16 }` block"),
        );
    }
    Some(TrainSpec {
        tokens: tokens?.value,
        global_batch: global_batch?.value,
        precision: precision?,
        optimizer,
        lora,
        freeze,
        states,
        expert_dispatch,
        span: block.span,
    })
}

fn check_lora(block: &Block, diags: &mut Diagnostics) -> Option<LoraSpec> {
    let mut f = read_block(block, &LORA, diags);
    let rank = f.integer("rank", 1, 65_536, false);
    let rank = f.require("rank", rank, "16");
    let mut targets = f.names("targets");
    unknown_names(
        &targets,
        LORA_TARGETS,
        "LoRA target",
        "not an op made of weight matrices",
        f.diags,
    );
    if f.get("targets").is_none() {
        // Every linear layer, as QLoRA (Dettmers et al. 2023) recommends.
        targets = LORA_TARGETS
            .iter()
            .map(|t| Spanned::new((*t).to_string(), block.name.span))
            .collect();
    }
    Some(LoraSpec {
        rank: rank?.value,
        targets,
        span: block.span,
    })
}

/// Reports each of `names` that is not one of `known` (L1009), with a suggestion.
fn unknown_names(
    names: &[Spanned<String>],
    known: &[&str],
    what: &str,
    label: &str,
    diags: &mut Diagnostics,
) {
    for name in names {
        if known.contains(&name.value.as_str()) {
            continue;
        }
        let help = match closest(&name.value, known.iter().copied()) {
            Some(near) => format!("did you mean `{near}`?"),
            None => format!("{what}s are {}", super::reader::list_names(known)),
        };
        diags.push(
            Diagnostic::error(
                codes::check::UNKNOWN_KEYWORD,
                format!("unknown {what} `{}`", name.value),
                name.span,
                label,
            )
            .with_help(help),
        );
    }
}
