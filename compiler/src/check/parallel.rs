//! The `parallel` block: pinned degrees, and whether they fit the model, the batch and each other.

use super::reader::{BlockSpec, read_block};
use super::{MAX_DIM, ModelSpec, ParallelSpec, ResourcesSpec, TrainSpec};
use crate::syntax::ast::Block;
use crate::workload::StageSplit;
use crate::workload::layout::rules;
use loam_ir::diagnostics::codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::span::{Span, Spanned};
use loam_ir::types::{Arch, Recompute, SplitRule};

pub(super) fn read_parallel(
    block: &Block,
    spec: &BlockSpec,
    diags: &mut Diagnostics,
) -> ParallelSpec {
    let mut f = read_block(block, spec, diags);
    let mut degree = |name: &str| f.integer(name, 1, MAX_DIM, true);
    let tensor = degree("tensor");
    let pipeline = degree("pipeline");
    let data = degree("data");
    let context = degree("context");
    let expert = degree("expert");
    let virtual_stages = degree("virtual_stages");
    let micro_batch = degree("micro_batch");
    // `pinned` is what `stages = [...]` means, not a rule to name.
    let pipeline_split = f.keyword(
        "pipeline_split",
        |text| SplitRule::from_keyword(text).filter(|r| *r != SplitRule::Pinned),
        &[
            SplitRule::Balanced.as_str(),
            SplitRule::EmbeddingAndLoss.as_str(),
        ],
        true,
    );
    let stages = f.integers("stages", 1, MAX_DIM);
    let zero = f.integer("zero", 0, 3, true);
    let recompute = f.keyword(
        "recompute",
        Recompute::from_keyword,
        &Recompute::keywords(),
        true,
    );
    let recompute_layers = f.integer("recompute_layers", 1, MAX_DIM, true);
    let sequence_parallel = f.boolean("sequence_parallel");
    let tensor_overlap = f.boolean("tensor_overlap");
    ParallelSpec {
        tensor,
        pipeline,
        data,
        context,
        expert,
        virtual_stages,
        pipeline_split,
        stages,
        micro_batch,
        zero,
        recompute,
        recompute_layers,
        sequence_parallel,
        tensor_overlap,
        span: Some(block.span),
    }
}

fn inconsistent(message: String, span: Span, label: &str, help: &str) -> Diagnostic {
    Diagnostic::error(codes::check::INCONSISTENT_LAYOUT, message, span, label).with_help(help)
}

/// Checks pinned degrees against the model, the batch, and each other.
pub(super) fn check_consistency(
    parallel: &ParallelSpec,
    model: &ModelSpec,
    train: &TrainSpec,
    resources: Option<&ResourcesSpec>,
    diags: &mut Diagnostics,
) {
    let mut found = Vec::new();
    if let Some(t) = &parallel.tensor {
        found.extend(tensor_problem(t, model));
    }
    check_split(parallel, model, &mut found);
    if let Some(v) = &parallel.virtual_stages
        && v.value > 1
        && parallel.pipeline.as_ref().is_some_and(|p| p.value == 1)
    {
        found.push(inconsistent(
            "virtual stages need pipeline parallelism".to_string(),
            v.span,
            "the interleaved schedule splits pipeline stages",
            "set `pipeline` above 1 or `virtual_stages = 1`",
        ));
    }
    if let Some(o) = &parallel.tensor_overlap
        && o.value
    {
        let off = parallel.sequence_parallel.as_ref().filter(|s| !s.value);
        let single = parallel.tensor.as_ref().filter(|t| t.value == 1);
        if let Some(reason) = off
            .map(|s| (s.span, "sequence parallelism is switched off here"))
            .or(single.map(|t| (t.span, "tensor parallelism is pinned to 1 here")))
        {
            found.push(
                inconsistent(
                    "tensor overlap needs tensor and sequence parallelism".to_string(),
                    o.span,
                    "the overlap splits the sequence-parallel all-gathers and reduce-scatters",
                    "remove `tensor_overlap`, or let the tensor group run sequence parallelism",
                )
                .with_related(reason.0, reason.1),
            );
        }
    }
    if let Some(c) = &parallel.context
        && rules::context(model.seq_len, c.value).is_err()
    {
        found.push(inconsistent(
            format!(
                "context parallelism {} does not split the sequence length {} into {} equal chunks",
                c.value,
                model.seq_len,
                2 * c.value
            ),
            c.span,
            "each rank holds two equal chunks of the sequence, one early and one late",
            "choose a context degree whose double divides seq_len",
        ));
    }
    if let Some(e) = &parallel.expert {
        if let Some(problem) = expert_problem(e, model) {
            found.push(problem);
        } else if model.arch == Arch::Moe
            // Folded onto the tensor × context × data grid: known once all three are pinned.
            && let (Some(t), Some(c), Some(d)) =
                (&parallel.tensor, &parallel.context, &parallel.data)
        {
            let grid = t.value * c.value * d.value;
            if rules::expert(grid, model.experts.unwrap_or(1), e.value).is_err() {
                found.push(
                    inconsistent(
                        format!(
                            "expert parallelism {} does not divide tensor × context × data = {grid}",
                            e.value
                        ),
                        e.span,
                        "expert-parallel groups are folded onto the tensor, context and data ranks",
                        "choose an expert degree that divides tensor × context × data",
                    )
                    .with_related(d.span, "data parallelism pinned here"),
                );
            }
        }
    }
    check_batch(parallel, train, &mut found);
    check_device_total(parallel, resources, &mut found);
    found.extend(recompute_layers_problem(parallel, model));
    diags.extend(found);
}

/// `recompute_layers` names blocks replayed whole, so recomputation is full (pinned or implied),
/// and a chunk never holds more blocks than the model has.
fn recompute_layers_problem(parallel: &ParallelSpec, model: &ModelSpec) -> Option<Diagnostic> {
    let layers = parallel.recompute_layers.as_ref()?;
    if let Some(mode) = &parallel.recompute
        && mode.value != Recompute::Full
    {
        return Some(
            inconsistent(
                format!(
                    "`recompute_layers` replays blocks whole, but recomputation is `{}`",
                    mode.value
                ),
                layers.span,
                "blocks of each chunk recomputed whole (Megatron's `--recompute-num-layers`)",
                "set `recompute = full`, or remove `recompute_layers`",
            )
            .with_related(mode.span, "recomputation pinned here"),
        );
    }
    (layers.value > model.layers).then(|| {
        inconsistent(
            format!(
                "`recompute_layers = {}` is more than the model's {} blocks",
                layers.value, model.layers
            ),
            layers.span,
            "blocks of each chunk recomputed whole",
            "choose at most the blocks of one pipeline chunk",
        )
    })
}

/// A pinned tensor degree that does not split the attention heads evenly
/// ([`rules::tensor`]); jobs and services share it.
pub(super) fn tensor_problem(t: &Spanned<u64>, model: &ModelSpec) -> Option<Diagnostic> {
    tensor_problem_under(rules::tensor, t, model)
}

/// A pinned tensor degree that `rule` refuses: [`rules::tensor`] for jobs,
/// [`rules::serving_tensor`] for services (engines replicate key/value heads over extra ranks).
pub(super) fn tensor_problem_under(
    rule: fn(u64, u64, u64) -> Result<(), rules::Indivisible>,
    t: &Spanned<u64>,
    model: &ModelSpec,
) -> Option<Diagnostic> {
    let broken = rule(model.heads, model.kv_heads, t.value).err()?;
    let message = match broken.what {
        "heads % tensor" => format!(
            "tensor parallelism {} does not divide the {} attention heads",
            t.value, broken.value
        ),
        "tensor % kv_heads" => format!(
            "tensor parallelism {} is not a multiple of the {} key/value heads",
            t.value, broken.by
        ),
        _ => format!(
            "tensor parallelism {} does not divide the {} key/value heads",
            t.value, broken.value
        ),
    };
    Some(inconsistent(
        message,
        t.span,
        "heads are split evenly across tensor-parallel ranks",
        "choose a tensor degree that divides the head count",
    ))
}

/// A pinned expert degree on a dense model, or one that does not divide the experts; jobs and
/// services share it (how the experts fold onto the other degrees differs).
pub(super) fn expert_problem(e: &Spanned<u64>, model: &ModelSpec) -> Option<Diagnostic> {
    match (model.arch, model.experts) {
        (Arch::Dense, _) if e.value > 1 => Some(inconsistent(
            "expert parallelism needs a mixture-of-experts model".to_string(),
            e.span,
            "this model is dense",
            "set `expert = 1` or `arch = moe`",
        )),
        (Arch::Moe, Some(experts)) if experts % e.value != 0 => Some(inconsistent(
            format!(
                "expert parallelism {} does not divide the {experts} experts",
                e.value
            ),
            e.span,
            "experts are spread evenly over expert-parallel ranks",
            "choose an expert degree that divides the expert count",
        )),
        _ => None,
    }
}

/// A pinned pipeline degree that leaves a stage without a block ([`rules::pipeline_split`]
/// with the balanced rule and no interleaving, as a service's pipeline runs).
pub(super) fn pipeline_problem(p: &Spanned<u64>, model: &ModelSpec) -> Option<Diagnostic> {
    let parallel = ParallelSpec {
        pipeline: Some(p.clone()),
        ..ParallelSpec::default()
    };
    let mut found = Vec::new();
    check_split(&parallel, model, &mut found);
    found.pop()
}

/// The rule and the pinned blocks the pipeline split follows: `Pinned` with the list when the
/// spec pins `stages`, else the spec's rule (`Balanced` on auto: the planner also tries the
/// embedding-and-loss split, which needs more layers, so the balanced rule is the one a pinned
/// degree must pass).
fn split_rule(parallel: &ParallelSpec) -> (SplitRule, Option<&[u64]>) {
    match (&parallel.stages, &parallel.pipeline_split) {
        (Some(stages), _) => (SplitRule::Pinned, Some(stages.value.as_slice())),
        (None, Some(rule)) => (rule.value, None),
        (None, None) => (SplitRule::Balanced, None),
    }
}

/// The pinned split a planner keeps: the spec's rule, and with `stages = [...]` the summary of
/// its blocks (`None` unless it passes [`rules::pipeline_split`] with the pinned degrees).
pub(crate) fn pinned_split(
    parallel: &ParallelSpec,
    layers: u64,
) -> (Option<SplitRule>, Option<StageSplit>) {
    let rule = parallel.pipeline_split.as_ref().map(|r| r.value);
    let (Some(stages), Some(p)) = (&parallel.stages, &parallel.pipeline) else {
        return (rule, None);
    };
    let v = parallel.virtual_stages.as_ref().map_or(1, |v| v.value);
    if rules::pipeline_split(layers, p.value, v, SplitRule::Pinned, Some(&stages.value)).is_err() {
        return (rule, None);
    }
    let chunks: Vec<u32> = stages
        .value
        .iter()
        .map(|&b| u32::try_from(b).unwrap_or(u32::MAX))
        .collect();
    let pipeline = u32::try_from(p.value).unwrap_or(u32::MAX);
    (
        Some(SplitRule::Pinned),
        Some(StageSplit::of_chunks(SplitRule::Pinned, &chunks, pipeline)),
    )
}

/// The pipeline's chunks can split the layers (one rule with the planner,
/// [`rules::pipeline_split`]); a pinned split needs the pipeline degree pinned and no rule.
fn check_split(parallel: &ParallelSpec, model: &ModelSpec, found: &mut Vec<Diagnostic>) {
    if let (Some(stages), Some(rule)) = (&parallel.stages, &parallel.pipeline_split) {
        found.push(
            inconsistent(
                "`stages` and `pipeline_split` both say how the blocks are split".to_string(),
                stages.span,
                "these blocks per chunk pin the split",
                "remove `pipeline_split`, or `stages` to let the rule split the blocks",
            )
            .with_related(rule.span, "the rule set here"),
        );
    }
    let Some(p) = &parallel.pipeline else {
        if let Some(stages) = &parallel.stages {
            found.push(inconsistent(
                "`stages` needs a pinned pipeline degree".to_string(),
                stages.span,
                "one entry per model chunk: pipeline × virtual_stages of them",
                "pin `pipeline` (and `virtual_stages` if interleaved)",
            ));
        }
        return;
    };
    let v = parallel.virtual_stages.as_ref().map_or(1, |v| v.value);
    let (rule, pinned) = split_rule(parallel);
    let chunks = p.value.saturating_mul(v);
    let Err(problem) = rules::pipeline_split(model.layers, p.value, v, rule, pinned) else {
        return;
    };
    let stages_span = parallel.stages.as_ref().map_or(p.span, |s| s.span);
    let pinned_help = format!(
        "list one block count per chunk, {chunks} in all (pipeline {} × virtual_stages {v}), adding up to the {} layers",
        p.value, model.layers
    );
    found.push(match problem {
        rules::SplitProblem::TooManyChunks {
            rule: SplitRule::EmbeddingAndLoss,
            ..
        } => inconsistent(
            format!(
                "{} pipeline stages × {v} virtual stages need at least {} layers when the embedding and the loss count as layers, found {}",
                p.value,
                if v > 1 { chunks.saturating_sub(2) } else { (2 * chunks).saturating_sub(2) },
                model.layers
            ),
            p.span,
            if v > 1 {
                "every chunk holds a layer's worth: a block, the embedding or the loss"
            } else {
                "every stage holds two layers' worth, so the first and last still hold a block"
            },
            "use fewer pipeline or virtual stages, or `pipeline_split = balanced`",
        ),
        rules::SplitProblem::TooManyChunks { .. } => inconsistent(
            format!(
                "{} pipeline stages × {v} virtual stages exceed the {} layers",
                p.value, model.layers
            ),
            p.span,
            "every stage needs at least one layer",
            "use fewer pipeline or virtual stages",
        ),
        rules::SplitProblem::PinnedLength { found: n, expected } => inconsistent(
            format!("expected {expected} entries in `stages`, found {n}"),
            stages_span,
            "one entry per model chunk",
            &pinned_help,
        )
        .with_related(p.span, "pipeline degree pinned here"),
        rules::SplitProblem::PinnedSum { found: n, expected } => inconsistent(
            format!("the blocks in `stages` add up to {n}, expected the {expected} layers"),
            stages_span,
            "every block belongs to exactly one chunk",
            &pinned_help,
        ),
        rules::SplitProblem::EmptyChunk { index } => inconsistent(
            format!("chunk {index} of `stages` holds no block"),
            stages_span,
            "every chunk holds at least one block",
            &pinned_help,
        ),
    });
}

fn check_batch(parallel: &ParallelSpec, train: &TrainSpec, found: &mut Vec<Diagnostic>) {
    let data = parallel.data.as_ref().map_or(1, |d| d.value);
    let micro = parallel.micro_batch.as_ref().map_or(1, |m| m.value);
    let Some(span) = parallel
        .data
        .as_ref()
        .or(parallel.micro_batch.as_ref())
        .map(|s| s.span)
    else {
        return;
    };
    if rules::micro_batch(train.global_batch, data, micro).is_err() {
        found.push(
            inconsistent(
                format!(
                    "global batch {} is not a multiple of data parallelism {data} × micro-batch {micro}",
                    train.global_batch
                ),
                span,
                "each data-parallel rank runs whole micro-batches",
                "choose degrees whose product divides the global batch",
            )
            .with_related(train.span, "global batch set in this block"),
        );
        return;
    }
    // The interleaved schedule needs whole rounds of micro-batches: known only when the
    // pipeline, the virtual stages, the data degree and the micro-batch are all pinned.
    if let (Some(p), Some(v), Some(_), Some(_)) = (
        &parallel.pipeline,
        &parallel.virtual_stages,
        &parallel.data,
        &parallel.micro_batch,
    ) {
        let micro_batches = train.global_batch / (data * micro).max(1);
        if rules::interleave(micro_batches, p.value, v.value).is_err() {
            found.push(inconsistent(
                format!(
                    "the interleaved schedule needs the {micro_batches} micro-batches of a step to be a multiple of the {} pipeline stages",
                    p.value
                ),
                v.span,
                "virtual stages run the micro-batches in rounds of one per stage",
                "change the micro-batch or data degree, or set `virtual_stages = 1`",
            ));
        }
    }
}

fn check_device_total(
    parallel: &ParallelSpec,
    resources: Option<&ResourcesSpec>,
    found: &mut Vec<Diagnostic>,
) {
    let degrees: [&Option<Spanned<u64>>; 4] = [
        &parallel.tensor,
        &parallel.pipeline,
        &parallel.data,
        &parallel.context,
    ];
    let Some(max) = resources.and_then(|r| r.max_devices.as_ref()) else {
        return;
    };
    if degrees.iter().any(|d| d.is_none()) {
        return;
    }
    let total: u64 = degrees
        .iter()
        .filter_map(|d| d.as_ref())
        .map(|d| d.value)
        .product();
    if total > max.value {
        let span = parallel.span.unwrap_or(max.span);
        found.push(
            inconsistent(
                format!(
                    "the pinned layout needs {total} devices but `max_devices` is {}",
                    max.value
                ),
                span,
                "tensor × pipeline × data × context devices",
                "lower a degree or raise max_devices",
            )
            .with_related(max.span, "limit set here"),
        );
    }
}
