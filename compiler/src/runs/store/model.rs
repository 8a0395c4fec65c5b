//! The store's model and stack columns (after `source`): what the cost model reads of a run
//! beyond its dimensions and layout — the experts' shape, the routing's group limit, the
//! dispatch the stack ran, the attention's shape, the optimizer, tensor-parallel overlap — so a
//! stored run is costed as its plan was. Written from what the plan costed ([`set`]), checked
//! like a spec's `model` block ([`check`]), read back by the calibration (`calibrate::row`).

use super::serving::ServingRow;
use super::{ProblemKind, StoreProblem, StoreRow};
use crate::check::{CAPACITY_FACTOR, MAX_DIM};
use crate::workload::{ExpertDispatch, ModelDims};
use loam_ir::types::{Arch, Mlp, Optimizer};

/// What a plan costed of a run's stack beyond its layout's degrees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stack {
    /// How MoE tokens reached their experts (Plan JSON `workload.expert_dispatch`).
    pub dispatch: ExpertDispatch,
    /// The job's optimizer.
    pub optimizer: Optimizer,
    /// Whether the tensor-parallel collectives ran under the GEMMs (`layout.tensor_overlap`).
    pub tensor_overlap: bool,
}

/// Fills `row`'s model and stack columns from the `model` and `stack` a plan costed: blank
/// where they have the default (dense blocks, plain attention, untied embeddings, AdamW,
/// blocking tensor collectives), so a dense model of plain attention has them all blank.
pub fn set(row: &mut StoreRow, model: &ModelDims, stack: Stack) {
    let dispatch = stack.dispatch;
    let moe = model.arch == Arch::Moe && model.experts > 1;
    let nonzero = |v: u32| (v > 0).then_some(v);
    row.expert_ffn = moe.then_some(model.expert_ffn).flatten();
    row.shared_experts = moe.then(|| nonzero(model.shared_experts)).flatten();
    row.dense_layers = moe.then(|| nonzero(model.dense_layers)).flatten();
    row.capacity_factor = moe.then_some(model.capacity_factor).flatten();
    let groups = moe.then_some(model.expert_groups).flatten();
    row.expert_groups = groups.map(|g| g.groups);
    row.groups_per_token = groups.map(|g| g.per_token);
    row.expert_dispatch = (moe && !dispatch.is_all_to_all()).then(|| dispatch.as_str().to_string());
    row.head_dim = model.head_dim;
    row.sliding_window = model.sliding_window;
    row.global_every = model.sliding_window.and(model.global_every);
    let mla = model.mla.as_ref();
    row.q_lora_rank = mla.map(|m| m.q_lora_rank);
    row.kv_lora_rank = mla.map(|m| m.kv_lora_rank);
    row.qk_nope_head_dim = mla.map(|m| m.qk_nope_head_dim);
    row.qk_rope_head_dim = mla.map(|m| m.qk_rope_head_dim);
    row.v_head_dim = mla.map(|m| m.v_head_dim);
    row.tie_embeddings = model.tied_embeddings.then_some(true);
    row.optimizer = (stack.optimizer != Optimizer::Adamw).then(|| stack.optimizer.to_string());
    row.tensor_overlap = stack.tensor_overlap.then_some(true);
}

/// The checks of the model and stack columns: counts within a spec's bounds, a dispatch the
/// language knows, the mixture-of-experts columns on an MoE row only, group-limited routing
/// whose groups divide the experts, and latent attention with all five widths or none.
pub(super) fn check(
    row: &StoreRow,
    out: &mut Vec<StoreProblem>,
    problem: &impl Fn(&'static str, String, ProblemKind) -> StoreProblem,
) {
    let counts = [
        ("expert_ffn", row.expert_ffn, 1),
        ("shared_experts", row.shared_experts, 0),
        ("dense_layers", row.dense_layers, 0),
        ("expert_groups", row.expert_groups, 1),
        ("groups_per_token", row.groups_per_token, 1),
        ("head_dim", row.head_dim, 1),
        ("sliding_window", row.sliding_window, 1),
        ("global_every", row.global_every, 1),
        ("q_lora_rank", row.q_lora_rank, 0),
        ("kv_lora_rank", row.kv_lora_rank, 1),
        ("qk_nope_head_dim", row.qk_nope_head_dim, 1),
        ("qk_rope_head_dim", row.qk_rope_head_dim, 1),
        ("v_head_dim", row.v_head_dim, 1),
    ];
    // A spec's bound on a model dimension.
    let max = u32::try_from(MAX_DIM).unwrap_or(u32::MAX);
    for (column, value, low) in counts {
        if let Some(v) = value
            && !(low..=max).contains(&v)
        {
            out.push(problem(
                column,
                format!("expected a count from {low} to {max}, found `{v}`"),
                ProblemKind::OutOfRange,
            ));
        }
    }
    if let Some(c) = row.capacity_factor
        && !(CAPACITY_FACTOR.0..=CAPACITY_FACTOR.1).contains(&c)
    {
        out.push(problem(
            "capacity_factor",
            format!(
                "expected a factor from {} to {}, found `{c}`",
                CAPACITY_FACTOR.0, CAPACITY_FACTOR.1
            ),
            ProblemKind::OutOfRange,
        ));
    }
    let dispatch = row.expert_dispatch.as_deref().filter(|d| !d.is_empty());
    if let Some(d) = dispatch
        && ExpertDispatch::from_keyword(d).is_none()
    {
        out.push(problem(
            "expert_dispatch",
            format!("expected one of {:?}", ExpertDispatch::keywords()),
            ProblemKind::Malformed,
        ));
    }
    if let Some(o) = row.optimizer.as_deref().filter(|o| !o.is_empty())
        && Optimizer::from_keyword(o).is_none()
    {
        out.push(problem(
            "optimizer",
            format!("expected one of {:?}", Optimizer::keywords()),
            ProblemKind::Malformed,
        ));
    }
    check_experts(row, dispatch.is_some(), out, problem);
    check_attention(row, out, problem);
}

/// The mixture-of-experts columns: on an MoE row only, the dense blocks fewer than the
/// blocks, and the routing's groups dividing the experts.
fn check_experts(
    row: &StoreRow,
    has_dispatch: bool,
    out: &mut Vec<StoreProblem>,
    problem: &impl Fn(&'static str, String, ProblemKind) -> StoreProblem,
) {
    let experts = row.experts.filter(|e| *e > 1);
    let moe_only = [
        ("expert_ffn", row.expert_ffn.is_some()),
        ("shared_experts", row.shared_experts.is_some()),
        ("dense_layers", row.dense_layers.is_some()),
        ("capacity_factor", row.capacity_factor.is_some()),
        ("expert_groups", row.expert_groups.is_some()),
        ("groups_per_token", row.groups_per_token.is_some()),
        ("expert_dispatch", has_dispatch),
    ];
    let Some(experts) = experts else {
        if let Some((column, _)) = moe_only.iter().find(|(_, set)| *set) {
            out.push(problem(
                column,
                "a mixture-of-experts column on a row without experts (`experts` blank or 1)"
                    .into(),
                ProblemKind::Malformed,
            ));
        }
        return;
    };
    if let Some(dense) = row.dense_layers
        && dense >= row.layers
    {
        out.push(problem(
            "dense_layers",
            format!(
                "{dense} dense blocks leave none of the {} blocks to the experts",
                row.layers
            ),
            ProblemKind::OutOfRange,
        ));
    }
    match (row.expert_groups, row.groups_per_token) {
        (None, None) => {}
        (Some(groups), Some(per_token)) => {
            if groups == 0 || !experts.is_multiple_of(groups) || per_token > groups {
                out.push(problem(
                    "expert_groups",
                    format!(
                        "{groups} groups with {per_token} per token do not route {experts} \
                         experts: the groups divide the experts, and a token picks at most \
                         all of them"
                    ),
                    ProblemKind::Malformed,
                ));
            }
        }
        (Some(_), None) | (None, Some(_)) => out.push(problem(
            if row.expert_groups.is_some() {
                "groups_per_token"
            } else {
                "expert_groups"
            },
            "`expert_groups` and `groups_per_token` come together".into(),
            ProblemKind::Malformed,
        )),
    }
}

/// The attention columns: a global block cadence needs a window, and latent attention all of
/// its widths.
fn check_attention(
    row: &StoreRow,
    out: &mut Vec<StoreProblem>,
    problem: &impl Fn(&'static str, String, ProblemKind) -> StoreProblem,
) {
    if row.global_every.is_some() && row.sliding_window.is_none() {
        out.push(problem(
            "global_every",
            "`global_every` needs `sliding_window`".into(),
            ProblemKind::Malformed,
        ));
    }
    let mla = [
        ("q_lora_rank", row.q_lora_rank),
        ("kv_lora_rank", row.kv_lora_rank),
        ("qk_nope_head_dim", row.qk_nope_head_dim),
        ("qk_rope_head_dim", row.qk_rope_head_dim),
        ("v_head_dim", row.v_head_dim),
    ];
    let given = mla.iter().filter(|(_, v)| v.is_some()).count();
    if given > 0
        && given < mla.len()
        && let Some((column, _)) = mla.iter().find(|(_, v)| v.is_none())
    {
        out.push(problem(
            column,
            "latent attention states all five of `q_lora_rank`, `kv_lora_rank`, \
             `qk_nope_head_dim`, `qk_rope_head_dim` and `v_head_dim`, or none"
                .into(),
            ProblemKind::Malformed,
        ));
    }
}

/// Fills a serving row's model columns from the served `model`: blank where it has the default,
/// and the MLP only where it is not `named_mlp`, the one the serving fit reads from the weights'
/// name (`calibrate::mlp_of_weights`), so a dense model of plain attention whose name tells its
/// MLP leaves them all blank and fits a file of an earlier header.
pub fn set_serving(row: &mut ServingRow, model: &ModelDims, named_mlp: Mlp) {
    let mut columns = StoreRow::default();
    set(
        &mut columns,
        model,
        Stack {
            dispatch: ExpertDispatch::default(),
            optimizer: Optimizer::Adamw,
            tensor_overlap: false,
        },
    );
    let moe = model.arch == Arch::Moe && model.experts > 1;
    row.mlp = (model.mlp != named_mlp).then(|| model.mlp.as_str().to_string());
    row.experts = moe.then_some(model.experts);
    row.top_k = moe.then_some(model.top_k);
    row.expert_ffn = columns.expert_ffn;
    row.shared_experts = columns.shared_experts;
    row.dense_layers = columns.dense_layers;
    row.capacity_factor = columns.capacity_factor;
    row.head_dim = columns.head_dim;
    row.sliding_window = columns.sliding_window;
    row.global_every = columns.global_every;
    row.q_lora_rank = columns.q_lora_rank;
    row.kv_lora_rank = columns.kv_lora_rank;
    row.qk_nope_head_dim = columns.qk_nope_head_dim;
    row.qk_rope_head_dim = columns.qk_rope_head_dim;
    row.v_head_dim = columns.v_head_dim;
    row.tie_embeddings = columns.tie_embeddings;
}

/// The checks of a serving row's model columns: an MLP keyword, experts and their count per
/// token together (at most the experts), and the rest by the training row's rules ([`check`]).
pub(super) fn check_serving(
    row: &ServingRow,
    out: &mut Vec<StoreProblem>,
    problem: &impl Fn(&'static str, String, ProblemKind) -> StoreProblem,
) {
    if let Some(m) = row.mlp.as_deref().filter(|m| !m.is_empty())
        && Mlp::from_keyword(m).is_none()
    {
        out.push(problem(
            "mlp",
            format!("expected one of {:?}", Mlp::keywords()),
            ProblemKind::Malformed,
        ));
    }
    match (row.experts, row.top_k) {
        (None, None) => {}
        (Some(experts), Some(top_k)) if experts > 1 && (1..=experts).contains(&top_k) => {}
        _ => out.push(problem(
            "top_k",
            "`experts` (more than 1) and `top_k` (at most the experts) come together".into(),
            ProblemKind::Malformed,
        )),
    }
    let columns = StoreRow {
        layers: row.layers,
        experts: row.experts,
        top_k: row.top_k,
        expert_ffn: row.expert_ffn,
        shared_experts: row.shared_experts,
        dense_layers: row.dense_layers,
        capacity_factor: row.capacity_factor,
        head_dim: row.head_dim,
        sliding_window: row.sliding_window,
        global_every: row.global_every,
        q_lora_rank: row.q_lora_rank,
        kv_lora_rank: row.kv_lora_rank,
        qk_nope_head_dim: row.qk_nope_head_dim,
        qk_rope_head_dim: row.qk_rope_head_dim,
        v_head_dim: row.v_head_dim,
        tie_embeddings: row.tie_embeddings,
        ..StoreRow::default()
    };
    check(&columns, out, problem);
}
