//! Pipeline stages in the Plan IR: which blocks and ops each stage runs, named from the operator
//! graph, for homogeneous plans (balanced block ranges) and heterogeneous ones (the partition).

use crate::check::Job;
use crate::check::job_model_dims;
use crate::cost::ops::op_precision;
use crate::hardware::ClusterFigures;
use crate::workload::{Layout, ModelDims, OpGraph, OpKind, TrainSetup, chunk_blocks, op_graph};
use loam_ir::plan::StageIr;
use loam_ir::types::Recompute;
use loam_ir::types::SplitRule;

/// Contiguous, balanced layer ranges of `stages` stages covering `[0, layers)`.
pub fn stage_ranges(layers: u64, stages: u64) -> Vec<[u64; 2]> {
    let stages = stages.clamp(1, layers.max(1));
    let (each, extra) = (layers / stages, layers % stages);
    let mut start = 0;
    (0..stages)
        .map(|i| {
            let end = start + each + u64::from(i < extra);
            let range = [start, end];
            start = end;
            range
        })
        .collect()
}

/// The op graph of a job, with the spec's extra sensitive ops.
pub(crate) fn job_graph(job: &Job) -> OpGraph {
    let extra: Vec<String> = job
        .model
        .sensitive
        .iter()
        .map(|s| s.value.clone())
        .collect();
    op_graph(&job_model_dims(job), &extra)
}

/// The stage that runs ops `[first, end)` of the chain on group `group`.
pub(crate) fn stage_ir(
    job: &Job,
    graph: &OpGraph,
    index: usize,
    group: usize,
    [first, end]: [usize; 2],
    recompute: Option<Recompute>,
) -> StageIr {
    let ops: Vec<&crate::workload::Op> = graph.ops().skip(first).take(end - first).collect();
    let blocks_before = graph
        .ops()
        .take(first)
        .filter(|o| o.kind == OpKind::Attention)
        .count() as u64;
    let blocks = ops.iter().filter(|o| o.kind == OpKind::Attention).count() as u64;
    let mut names = Vec::new();
    for kind in [
        OpKind::Embedding,
        OpKind::FinalNorm,
        OpKind::LmHead,
        OpKind::Loss,
    ] {
        if kind == OpKind::FinalNorm && blocks > 0 {
            names.push(format!("block×{blocks}"));
        }
        if ops.iter().any(|o| o.kind == kind) {
            names.push(kind.as_str().to_string());
        }
    }
    if blocks > 0 && !names.iter().any(|n| n.starts_with("block")) {
        names.push(format!("block×{blocks}"));
    }
    let precision = job.train.precision.value;
    let mut sensitive = Vec::new();
    for op in ops.iter().filter(|o| o.sensitive) {
        let name = op.kind.as_str();
        let at = op_precision(precision, true);
        let entry = format!("{name}@{at}");
        if !sensitive.contains(&entry) {
            sensitive.push(entry);
        }
    }
    StageIr {
        index: index as u64,
        group: group as u64,
        layers: [blocks_before, blocks_before + blocks],
        rank: None,
        ops: names,
        sensitive_ops: sensitive,
        recompute,
        micro_batch_s: None,
        tensor_comm_s: None,
        forward_s: None,
    }
}

/// The blocks of every chunk of `layout`'s pipeline in model order: the spec's pinned list, else
/// the split of its rule.
fn layout_chunks(job: &Job, layout: &Layout) -> Vec<u64> {
    let layers = u32::try_from(job.model.layers).unwrap_or(u32::MAX);
    if layout.split.rule == SplitRule::Pinned
        && let Some(stages) = &job.parallel.stages
    {
        return stages.value.clone();
    }
    let rule = if layout.split.is_resolved() {
        layout.split.rule
    } else {
        SplitRule::Balanced
    };
    chunk_blocks(layers, layout.pipeline, layout.virtual_stages, rule)
        .into_iter()
        .map(u64::from)
        .collect()
}

/// What the cost model times a group's stages with: the model, the run as the group's search
/// costed it, and the group's cluster.
#[derive(Clone, Copy)]
pub(crate) struct StageTiming<'a> {
    pub(crate) model: &'a ModelDims,
    pub(crate) setup: &'a TrainSetup,
    pub(crate) cluster: &'a ClusterFigures,
}

/// The stages of a plan on one group: the model chunks of `layout`'s split in model order (one
/// per pipeline rank, or with `rank` set when interleaved), the embedding on the first and the
/// final norm, head and loss on the last, each with its seconds per micro-batch from the cost
/// model's own sum ([`crate::cost::stage_seconds`]).
pub(crate) fn homogeneous_stages(
    job: &Job,
    layout: &Layout,
    timing: StageTiming<'_>,
) -> Vec<StageIr> {
    let mut stages = untimed_stages(job, layout);
    for stage in &mut stages {
        let blocks = stage.layers[1].saturating_sub(stage.layers[0]);
        let holds = |kind: OpKind| stage.ops.iter().any(|o| o == kind.as_str());
        let (embedding, head) = (holds(OpKind::Embedding), holds(OpKind::LmHead));
        let round = loam_ir::display::significant;
        if let Ok(t) = crate::cost::stage_seconds(
            timing.model,
            timing.setup,
            layout,
            timing.cluster,
            blocks,
            embedding,
            head,
        ) {
            stage.micro_batch_s = Some(round(t.seconds));
            stage.tensor_comm_s = Some(round(t.tensor_comm));
            stage.forward_s = Some(round(t.forward));
        }
    }
    stages
}

/// [`homogeneous_stages`] without their times.
fn untimed_stages(job: &Job, layout: &Layout) -> Vec<StageIr> {
    let graph = job_graph(job);
    let n = graph.len();
    let chunks = layout_chunks(job, layout);
    let last = chunks.len().saturating_sub(1);
    let p = u64::from(layout.pipeline.max(1));
    let interleaved = layout.virtual_stages > 1 && layout.pipeline > 1;
    let mut start = 0u64;
    chunks
        .into_iter()
        .enumerate()
        .map(|(i, blocks)| {
            let (a, b) = (start, start + blocks);
            start = b;
            let first = if i == 0 { 0 } else { 1 + 2 * a as usize };
            let end = if i == last { n } else { 1 + 2 * b as usize };
            let mut stage = stage_ir(job, &graph, i, 0, [first, end], None);
            if interleaved {
                stage.rank = Some(i as u64 % p);
            }
            stage
        })
        .collect()
}
