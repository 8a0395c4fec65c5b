//! How a mixture of experts' tokens reach their experts: the model's group-limited routing
//! (`expert_groups`, `groups_per_token`) and the stack's dispatch (one copy per selected expert,
//! or one copy per destination node forwarded inside it), and how many copies of a token cross
//! between scale-up domains under each.

use serde::Serialize;

/// Group-limited routing: the experts of a layer form `groups` equal groups, and a token picks
/// its experts from only `per_token` of them. DeepSeek-V3 routes each token to at most 4 of 8
/// groups (`n_group = 8`, `topk_group = 4` in its `config.json`; "each token will be sent to at
/// most M nodes", DeepSeek-V3 report §2.1.2); Megatron-Core takes the same as
/// `moe_router_num_groups` and `moe_router_group_topk` (NVIDIA/Megatron-LM
/// `megatron/core/transformer/transformer_config.py`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ExpertGroups {
    /// Groups the layer's experts form (they divide the experts).
    pub groups: u32,
    /// Groups each token picks its experts from (at most `groups`).
    pub per_token: u32,
}

/// How the stack sends tokens to their experts' ranks (a closed keyword of the language and the
/// Plan JSON): [`ExpertDispatch::AllToAll`], one copy per selected expert, is Megatron-Core's
/// `alltoall` token dispatcher (the recipes' choice with expert parallelism);
/// [`ExpertDispatch::Deduplicated`], one copy per destination scale-up domain forwarded over the
/// domain's own links to every selected expert there, is DeepEP's normal kernels ("forwarding
/// from NVLink to RDMA", deepseek-ai/DeepEP `README.md`), Megatron-Core's `flex` dispatcher with
/// its DeepEP or HybridEP backend, and DeepSeek-V3's own (report §3.2.2: a token is sent over
/// InfiniBand once to each target node and forwarded there over NVLink).
pub use loam_ir::types::ExpertDispatch;

/// Which schedule runs one micro-batch's expert all-to-alls beside another micro-batch's
/// compute, so that only what exceeds that compute is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpertOverlap {
    /// Megatron-Core's EP all-to-all overlap (`--overlap-moe-expert-parallel-comm`), which runs a
    /// forward of one micro-batch against a backward of another in the steady state of an
    /// interleaved pipeline. Its `TransformerConfig` refuses it on a pipeline without virtual
    /// stages, with full recomputation (or a number of recomputed layers) and without expert
    /// parallelism (NVIDIA/Megatron-LM `megatron/core/transformer/transformer_config.py`), so
    /// it runs only where [`expert_overlap_runs`] says. What every plan gets.
    #[default]
    MegatronCore,
    /// DeepSeek-V3's DualPipe (arXiv:2412.19437 §3.2.1), which pairs a forward and a backward
    /// chunk on every pipeline rank by design: any pipeline. Only a calibration run whose source
    /// documents it is costed so.
    DualPipe,
}

/// Whether a layout of `pipeline` ranks, `virtual_stages` chunks per rank, `expert` degree and
/// recomputation `recompute` (`recompute_layers` set: only the first blocks of each chunk are
/// replayed, Megatron-Core's `--recompute-num-layers`) hides its expert all-to-alls under the
/// compute of another micro-batch, with `overlap` the schedule and `framework` the spec's
/// named framework. Megatron-Core's overlap needs its own schedule: a spec that names FSDP or
/// DeepSpeed runs neither. Without a pipeline there is no other micro-batch in flight that
/// loam costs (Megatron-Core can interleave consecutive micro-batches of gradient accumulation
/// at PP=1, which loam does not plan).
pub fn expert_overlap_runs(
    overlap: ExpertOverlap,
    framework: Option<super::Framework>,
    pipeline: u32,
    virtual_stages: u32,
    expert: u32,
    full_recompute: bool,
) -> bool {
    if pipeline <= 1 || expert <= 1 {
        return false;
    }
    match overlap {
        ExpertOverlap::DualPipe => true,
        ExpertOverlap::MegatronCore => {
            matches!(framework, None | Some(super::Framework::MegatronCore))
                && virtual_stages > 1
                && !full_recompute
        }
    }
}

/// Most draws [`miss_probability`] multiplies out: `top_k` and `per_token` are bounded by the
/// checker (4,096), and each factor is one multiplication.
const MAX_DRAWS: u32 = 4096;

/// The probability that `draws` picks without replacement from `total` items, `own` of which
/// belong to one node, take none of that node's: `C(total − own, draws) / C(total, draws)`,
/// multiplied out term by term.
fn miss_probability(total: f64, own: f64, draws: u32) -> f64 {
    let mut p = 1.0;
    for i in 0..draws.min(MAX_DRAWS) {
        let i = f64::from(i);
        if total - i <= 0.0 {
            return 0.0;
        }
        p *= ((total - own - i) / (total - i)).max(0.0);
    }
    p
}

/// Copies of one token that leave its own scale-up domain when its `top_k` experts, among
/// `experts` spread evenly over `domains` domains, are reached by `dispatch` under `groups`.
/// Routing is taken balanced (every expert equally likely, as the published benchmarks force
/// it), so by symmetry each domain is reached with the same probability and a domain other than
/// the token's own is `(domains − 1) / domains` of those reached.
///
/// - All-to-all: every selected expert gets its own copy, `top_k · (domains − 1) / domains` of
///   them remote, whatever the routing groups (a group limit changes which domains are reached,
///   not how many copies are sent).
/// - Deduplicated: one copy per domain reached, `D · (domains − 1) / domains`, where `D` is the
///   expected number of distinct domains a token's experts sit in: `domains · (1 − C(experts −
///   experts/domains, top_k) / C(experts, top_k))` without a group limit; with at least as many
///   groups as domains (each group inside one domain when `groups` is a multiple of `domains`),
///   the domains of `per_token` groups drawn from `groups` (each chosen group holds at least one
///   of the token's experts when `top_k ≥ per_token`, as DeepSeek-V3's top-2-per-group scoring
///   makes it); with groups wider than a domain, the domains of `top_k` experts drawn from the
///   chosen groups' experts.
pub fn remote_copies_per_token(
    dispatch: ExpertDispatch,
    top_k: u32,
    experts: u32,
    groups: Option<ExpertGroups>,
    domains: f64,
) -> f64 {
    let k = f64::from(top_k.max(1));
    if domains <= 1.0 {
        return 0.0;
    }
    let remote_share = (domains - 1.0) / domains;
    if dispatch == ExpertDispatch::AllToAll {
        return k * remote_share;
    }
    let e = f64::from(experts.max(1));
    let reached = match groups {
        Some(g) if f64::from(g.groups) >= domains && g.groups > 0 => {
            let groups = f64::from(g.groups);
            let picked = g.per_token.min(g.groups).min(top_k.max(1));
            domains * (1.0 - miss_probability(groups, groups / domains, picked))
        }
        Some(g) if g.groups > 0 => {
            // Each group spans `domains / groups` domains; a token's experts lie in the
            // `per_token` groups it picked.
            let spanned = (domains / f64::from(g.groups)) * f64::from(g.per_token.min(g.groups));
            let candidates = e / f64::from(g.groups) * f64::from(g.per_token.min(g.groups));
            spanned * (1.0 - miss_probability(candidates, candidates / spanned, top_k.max(1)))
        }
        _ => domains * (1.0 - miss_probability(e, e / domains, top_k.max(1))),
    };
    reached.min(k).min(domains) * remote_share
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Megatron-Core's `TransformerConfig.__post_init__` accepts its EP overlap with expert
    /// parallelism, on a pipeline only with virtual stages, never with full recomputation; loam
    /// costs it on a pipeline only (no other micro-batch is in flight without one), under no
    /// framework that lacks the schedule; DualPipe pairs chunks on any pipeline.
    #[test]
    fn the_expert_overlap_runs_where_megatron_core_accepts_it_on_a_pipeline() {
        use super::super::Framework;
        let megatron = ExpertOverlap::MegatronCore;
        let runs =
            |framework, p, v, e, full| expert_overlap_runs(megatron, framework, p, v, e, full);
        assert!(runs(None, 4, 2, 8, false));
        assert!(runs(Some(Framework::MegatronCore), 4, 2, 8, false));
        assert!(
            !runs(None, 4, 1, 8, false),
            "a pipeline without virtual stages"
        );
        assert!(!runs(None, 4, 2, 8, true), "full recomputation");
        assert!(!runs(None, 4, 2, 1, false), "no expert parallelism");
        assert!(!runs(None, 1, 1, 8, false), "no pipeline");
        assert!(!runs(Some(Framework::Fsdp), 4, 2, 8, false));
        assert!(!runs(Some(Framework::DeepSpeed), 4, 2, 8, false));
        let dualpipe = |p, v, e| expert_overlap_runs(ExpertOverlap::DualPipe, None, p, v, e, false);
        assert!(dualpipe(16, 1, 64));
        assert!(!dualpipe(1, 1, 64) && !dualpipe(16, 1, 1));
    }

    /// DeepSeek-V3 with 64 expert ranks on 8 nodes of 8 (its report's EP64 over 8 nodes), 256
    /// experts, top-8, 8 groups of which a token picks 4: each group is one node's 32 experts,
    /// so a token reaches `8 · (1 − C(7,4)/C(8,4)) = 8 · (1 − 35/70) = 4` of
    /// the 8 nodes, 3.5 of them remote — half the 7 remote copies an all-to-all sends.
    #[test]
    fn deepseek_v3_routing_sends_half_the_copies_across_nodes() {
        let groups = Some(ExpertGroups {
            groups: 8,
            per_token: 4,
        });
        let dedup = remote_copies_per_token(ExpertDispatch::Deduplicated, 8, 256, groups, 8.0);
        let all = remote_copies_per_token(ExpertDispatch::AllToAll, 8, 256, groups, 8.0);
        assert!((dedup - 3.5).abs() < 1e-12, "{dedup}");
        assert!((all - 7.0).abs() < 1e-12, "{all}");
    }

    /// Without a group limit the same model's 8 experts fall on `8 · (1 − Π_{i<8} (224 − i) /
    /// (256 − i))` nodes: the product is 0.3382 (224/256 · 223/255 · … · 217/249), so 5.29 nodes,
    /// 4.63 remote.
    #[test]
    fn without_groups_a_token_reaches_the_nodes_its_experts_sit_on() {
        let dedup = remote_copies_per_token(ExpertDispatch::Deduplicated, 8, 256, None, 8.0);
        let product: f64 = (0..8)
            .map(|i| (224.0 - i as f64) / (256.0 - i as f64))
            .product();
        assert!((product - 0.3382).abs() < 1e-4, "{product}");
        assert!((dedup - 8.0 * (1.0 - product) * 7.0 / 8.0).abs() < 1e-12);
        assert!(dedup > 4.6 && dedup < 4.7, "{dedup}");
    }

    /// Qwen3-30B-A3B's 128 experts over 16 ranks on 2 nodes, top-8: a token almost surely has
    /// experts on both nodes (all 8 on one: `2 · C(64,8)/C(128,8) ≈ 0.0066`), so about one copy
    /// crosses where an all-to-all sends four.
    #[test]
    fn two_nodes_take_about_one_copy_each_way() {
        let dedup = remote_copies_per_token(ExpertDispatch::Deduplicated, 8, 128, None, 2.0);
        assert!(dedup > 0.99 && dedup < 1.0, "{dedup}");
        let all = remote_copies_per_token(ExpertDispatch::AllToAll, 8, 128, None, 2.0);
        assert!((all - 4.0).abs() < 1e-12);
    }

    /// Inside one domain nothing crosses, whichever dispatch; a token never reaches more domains
    /// than it has experts.
    #[test]
    fn one_domain_sends_nothing_across_and_top_one_reaches_one_domain() {
        for dispatch in [ExpertDispatch::AllToAll, ExpertDispatch::Deduplicated] {
            assert_eq!(remote_copies_per_token(dispatch, 8, 64, None, 1.0), 0.0);
        }
        let one = remote_copies_per_token(ExpertDispatch::Deduplicated, 1, 64, None, 8.0);
        assert!((one - 7.0 / 8.0).abs() < 1e-12, "{one}");
    }

    /// Groups wider than a node: 4 groups over 8 nodes (2 nodes a group), 2 picked: a token's 8
    /// experts lie among the 128 experts of 4 nodes, `4 · (1 − C(96,8)/C(128,8))` of them
    /// reached, at most the 4.
    #[test]
    fn groups_wider_than_a_node_bound_the_nodes_reached() {
        let groups = Some(ExpertGroups {
            groups: 4,
            per_token: 2,
        });
        let dedup = remote_copies_per_token(ExpertDispatch::Deduplicated, 8, 256, groups, 8.0);
        let product: f64 = (0..8)
            .map(|i| (96.0 - i as f64) / (128.0 - i as f64))
            .product();
        let expected = 4.0 * (1.0 - product) * 7.0 / 8.0;
        assert!((dedup - expected).abs() < 1e-12, "{dedup} {expected}");
        assert!(dedup < 3.5);
    }
}
