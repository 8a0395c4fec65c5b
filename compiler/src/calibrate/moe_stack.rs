//! How a calibration row's stack sent its mixture-of-experts tokens: the dispatch and the routing
//! its source documents, read from the row's `source` and `notes`, with the sentence the
//! calibration table prints. A row that states them in columns (the runs store's
//! `expert_dispatch`, `expert_groups`, `groups_per_token`) is costed as they say; a row whose
//! source does not say is costed with Megatron-Core's all-to-all and the model's unrestricted
//! routing, as far as the file tells.

use super::row::Row;
use crate::workload::{ExpertDispatch, ExpertGroups, ExpertOverlap, ModelDims};
use loam_ir::types::Arch;

/// The DeepSeek-V3 report, which describes its own dispatch and routing.
const DEEPSEEK_V3_REPORT: &str = "DeepSeek-V3 Technical Report";

/// NeMo AutoModel's performance summary, whose MoE rows list "TE + DeepEP" as their kernels.
const AUTOMODEL: &str = "NVIDIA-NeMo/Automodel";

/// What a row's stack did with its MoE tokens.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct MoeStack {
    /// How tokens reached their experts' ranks.
    pub(super) dispatch: ExpertDispatch,
    /// The routing's group limit, when the stack routed within groups.
    pub(super) groups: Option<ExpertGroups>,
    /// The schedule that hid one micro-batch's all-to-alls under another's compute.
    pub(super) overlap: ExpertOverlap,
    /// What was taken, and from where, in a sentence.
    pub(super) text: String,
}

/// The dispatch and routing `row`'s source documents for its MoE `model`; `None` for a dense
/// model or a source that says nothing about either.
pub(super) fn moe_stack(row: &Row, model: &ModelDims) -> Option<MoeStack> {
    if model.arch != Arch::Moe {
        return None;
    }
    // A run of the runs store states both in columns of its own (what its plan costed).
    let dispatch = row.stated_dispatch().ok().flatten();
    let groups = row.stated_groups().ok().flatten();
    if dispatch.is_some() || groups.is_some() {
        let dispatch = dispatch.unwrap_or_default();
        let routing = groups.map_or(String::new(), |g| {
            format!(
                ", routing within {} of {} expert groups",
                g.per_token, g.groups
            )
        });
        return Some(MoeStack {
            dispatch,
            groups,
            overlap: ExpertOverlap::default(),
            text: format!("the run's own columns: {dispatch} dispatch{routing}"),
        });
    }
    if row.source.contains(DEEPSEEK_V3_REPORT) {
        // §2.1.2: "we ensure that each token will be sent to at most M nodes"; §4.2: "each
        // token will be sent to at most 4 nodes" (the 8 nodes of EP64, `n_group = 8`,
        // `topk_group = 4` in its config.json); §3.2.2: a token goes over InfiniBand once to
        // each target node and is forwarded there over NVLink.
        return Some(MoeStack {
            dispatch: ExpertDispatch::Deduplicated,
            groups: Some(ExpertGroups {
                groups: 8,
                per_token: 4,
            }),
            // §3.2.1: DualPipe pairs a forward and a backward chunk on every pipeline rank and
            // runs the all-to-alls of one under the other's computation.
            overlap: ExpertOverlap::DualPipe,
            text: "DeepSeek-V3 report: node-limited routing (at most 4 of 8 nodes, §2.1.2, §4.2), \
                   each token sent once per node and forwarded over NVLink (§3.2.2), DualPipe \
                   hiding the all-to-alls under the computation (§3.2.1)"
                .to_string(),
        });
    }
    if row.source.contains(AUTOMODEL) {
        let notes = row.notes.as_deref().unwrap_or("").to_ascii_lowercase();
        // The table's notes: "Fake balanced gate is enabled to simulate ideal expert routing".
        // Its `FakeBalancedGate` gives token `t` the experts `t·k … t·k + k − 1` (mod the
        // experts; NVIDIA-NeMo/Automodel `nemo_automodel/components/moe/layers.py`): `k`
        // consecutive experts, one group of `experts / k`.
        let k = model.top_k.max(1);
        let groups = (notes.contains("fake balanced gate") && model.experts.is_multiple_of(k))
            .then(|| ExpertGroups {
                groups: model.experts / k,
                per_token: 1,
            });
        let routing = match groups {
            Some(g) => format!(
                ", its fake balanced gate giving each token {k} consecutive experts (one of {} \
                 groups)",
                g.groups
            ),
            None => String::new(),
        };
        return Some(MoeStack {
            dispatch: ExpertDispatch::Deduplicated,
            groups,
            overlap: ExpertOverlap::default(),
            text: format!("NeMo AutoModel's table: TE + DeepEP (deduplicated dispatch){routing}"),
        });
    }
    None
}
