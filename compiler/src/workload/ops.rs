//! The operator graph of a decoder-only transformer: the ops a pipeline can cut between, each
//! with its FLOPs, parameters, activation memory and precision sensitivity.
//!
//! The graph is a chain (embedding → attention₀ → MLP₀ → … → final norm → LM head → loss) held
//! in a petgraph [`DiGraph`] whose edges carry the elements per token that cross them, so a cut
//! between two ops knows what it sends. Norms and the attention softmax inside a block are fused
//! into the attention and MLP ops and keep fp32 statistics on every device, so they are not ops
//! of their own; the final norm, the LM head and the loss (softmax cross-entropy) are.

use super::ModelDims;
use super::arch::{block_kind, block_kinds};
use super::params::{block_forward_flops, block_params, forward_flops, param_count};
use loam_ir::types::Arch;
use petgraph::graph::{DiGraph, NodeIndex};
use serde::Serialize;

/// What an op computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpKind {
    /// Token embedding lookup.
    Embedding,
    /// Pre-norm, QKV projection, attention core (softmax inside), output projection, residual.
    Attention,
    /// Pre-norm, MLP (or router and experts for MoE), residual.
    Mlp,
    /// The final norm before the head.
    FinalNorm,
    /// The output projection to vocabulary logits.
    LmHead,
    /// Softmax cross-entropy over the logits.
    Loss,
}

impl OpKind {
    /// The name a spec uses in `model { sensitive = [...] }` and plans print.
    pub fn as_str(self) -> &'static str {
        match self {
            OpKind::Embedding => "embedding",
            OpKind::Attention => "attention",
            OpKind::Mlp => "mlp",
            OpKind::FinalNorm => "final_norm",
            OpKind::LmHead => "lm_head",
            OpKind::Loss => "loss",
        }
    }
}

/// One operator of the chain, with per-token figures at tensor degree 1.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Op {
    /// What it computes.
    pub kind: OpKind,
    /// The transformer block it belongs to (`None` outside the blocks).
    pub block: Option<u32>,
    /// Parameters it holds (all experts).
    pub params: f64,
    /// Forward model FLOPs per token (backward is twice that).
    pub forward_flops_per_token: f64,
    /// Whether it must run on a device that computes it at high precision.
    pub sensitive: bool,
}

/// The model as a chain of ops.
#[derive(Debug, Clone)]
pub struct OpGraph {
    /// The graph; edges carry the elements per token one op hands the next.
    pub graph: DiGraph<Op, f64>,
    /// The nodes in execution order.
    pub chain: Vec<NodeIndex>,
}

impl OpGraph {
    /// The ops in execution order.
    pub fn ops(&self) -> impl Iterator<Item = &Op> {
        self.chain.iter().filter_map(|&n| self.graph.node_weight(n))
    }

    /// Number of ops.
    pub fn len(&self) -> usize {
        self.chain.len()
    }

    /// Whether the chain is empty (never for a checked model).
    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }
}

/// Which ops are precision-sensitive: the final norm, the LM head and the loss always; a spec
/// adds more by name (`attention`, `mlp`, `router` (the MoE MLP), `embedding`; `norm` and
/// `softmax` name the final norm and the loss, which are sensitive anyway).
pub fn is_sensitive(kind: OpKind, arch: Arch, extra: &[String]) -> bool {
    let named = |name: &str| extra.iter().any(|e| e == name);
    match kind {
        OpKind::FinalNorm | OpKind::LmHead | OpKind::Loss => true,
        OpKind::Embedding => named("embedding"),
        OpKind::Attention => named("attention"),
        OpKind::Mlp => named("mlp") || (arch == Arch::Moe && named("router")),
    }
}

/// Builds the op chain of `model`; `extra_sensitive` are the names of `model.sensitive`. Each
/// block's ops carry that block's parameters and FLOPs (dense first blocks, sliding-window
/// blocks), so the ops sum to the whole-model counts.
pub fn op_graph(model: &ModelDims, extra_sensitive: &[String]) -> OpGraph {
    let h = f64::from(model.hidden);
    let vocab = f64::from(model.vocab);
    let forward = forward_flops(model);
    let embed = model.embedding_params();
    let op = |kind, block, params, flops| Op {
        kind,
        block,
        params,
        forward_flops_per_token: flops,
        sensitive: is_sensitive(kind, model.arch, extra_sensitive),
    };
    let mut ops = vec![op(OpKind::Embedding, None, embed, 0.0)];
    for b in 0..model.layers {
        let kind = block_kind(model, b);
        let parts = block_params(model, kind);
        let flops = block_forward_flops(model, kind);
        ops.push(op(
            OpKind::Attention,
            Some(b),
            parts.attention_op(),
            flops.attention(),
        ));
        ops.push(op(OpKind::Mlp, Some(b), parts.mlp_op(), flops.mlp));
    }
    let final_norm = param_count(model).total - embed_total(model) - block_total(model);
    ops.push(op(OpKind::FinalNorm, None, final_norm, 0.0));
    let head_params = if model.tied_embeddings { 0.0 } else { embed };
    ops.push(op(OpKind::LmHead, None, head_params, forward.head));
    ops.push(op(OpKind::Loss, None, 0.0, 0.0));

    let mut graph = DiGraph::new();
    let mut chain: Vec<NodeIndex> = Vec::with_capacity(ops.len());
    for o in ops {
        let node = graph.add_node(o);
        if let Some(&prev) = chain.last() {
            // The head hands the loss vocabulary logits; every other op the hidden state.
            let elements = match graph.node_weight(prev).map(|p: &Op| p.kind) {
                Some(OpKind::LmHead) => vocab,
                _ => h,
            };
            graph.add_edge(prev, node, elements);
        }
        chain.push(node);
    }
    OpGraph { graph, chain }
}

/// The embedding parameters (doubled when untied).
fn embed_total(model: &ModelDims) -> f64 {
    let one = model.embedding_params();
    if model.tied_embeddings {
        one
    } else {
        2.0 * one
    }
}

/// The parameters of every block.
fn block_total(model: &ModelDims) -> f64 {
    block_kinds(model)
        .iter()
        .map(|&(n, kind)| f64::from(n) * block_params(model, kind).total())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use loam_ir::types::Mlp;
    use petgraph::algo::toposort;

    fn llama8b() -> ModelDims {
        ModelDims::dense(32, 4096, 14336, 32, 8, 128_256, 8192, Mlp::Swiglu)
    }

    #[test]
    fn the_chain_is_the_topological_order_and_holds_every_parameter() {
        let model = llama8b();
        let g = op_graph(&model, &[]);
        assert_eq!(g.len(), 2 * 32 + 4);
        assert_eq!(toposort(&g.graph, None).ok(), Some(g.chain.clone()));
        let params: f64 = g.ops().map(|o| o.params).sum();
        let total = param_count(&model).total;
        assert!((params / total - 1.0).abs() < 1e-12, "{params} vs {total}");
    }

    #[test]
    fn default_and_named_sensitivity() {
        let model = llama8b();
        let plain = op_graph(&model, &[]);
        let sensitive: Vec<OpKind> = plain
            .ops()
            .filter(|o| o.sensitive)
            .map(|o| o.kind)
            .collect();
        assert_eq!(sensitive, [OpKind::FinalNorm, OpKind::LmHead, OpKind::Loss]);
        let marked = op_graph(&model, &["attention".to_string()]);
        assert_eq!(marked.ops().filter(|o| o.sensitive).count(), 32 + 3);
    }
}
