//! The `parallel` block: pinned degrees, and whether they fit the model, the batch and each other.

use super::reader::{BlockSpec, read_block};
use super::{MAX_DIM, ModelSpec, ParallelSpec, ResourcesSpec, TrainSpec};
use crate::diagnostics::codes;
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::layout_rules as rules;
use crate::span::{Span, Spanned};
use crate::syntax::ast::Block;
use crate::types::{Arch, Recompute};

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
    let zero = f.integer("zero", 0, 3, true);
    let recompute = f.keyword(
        "recompute",
        Recompute::from_keyword,
        &Recompute::keywords(),
        true,
    );
    let sequence_parallel = f.boolean("sequence_parallel");
    ParallelSpec {
        tensor,
        pipeline,
        data,
        context,
        expert,
        virtual_stages,
        micro_batch,
        zero,
        recompute,
        sequence_parallel,
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
    if let Some(t) = &parallel.tensor
        && let Err(broken) = rules::tensor(model.heads, model.kv_heads, t.value)
    {
        let heads = if broken.what == "heads % tensor" {
            "attention heads"
        } else {
            "key/value heads"
        };
        found.push(inconsistent(
            format!(
                "tensor parallelism {} does not divide the {} {heads}",
                t.value, broken.value
            ),
            t.span,
            "heads are split evenly across tensor-parallel ranks",
            "choose a tensor degree that divides the head count",
        ));
    }
    if let Some(p) = &parallel.pipeline {
        let v = parallel.virtual_stages.as_ref().map_or(1, |v| v.value);
        if p.value * v > model.layers {
            found.push(inconsistent(
                format!(
                    "{} pipeline stages × {v} virtual stages exceed the {} layers",
                    p.value, model.layers
                ),
                p.span,
                "every stage needs at least one layer",
                "use fewer pipeline or virtual stages",
            ));
        } else if let Err(broken) = rules::pipeline(model.layers, p.value) {
            found.push(inconsistent(
                format!(
                    "the {} layers do not split evenly over {} pipeline stages ({} % {} = {})",
                    model.layers,
                    p.value,
                    model.layers,
                    p.value,
                    broken.remainder()
                ),
                p.span,
                "every pipeline stage holds the same number of layers",
                "choose a pipeline degree that divides the layer count, or leave it to the planner",
            ));
        } else if let Some(vs) = &parallel.virtual_stages
            && let Err(broken) = rules::virtual_stages(model.layers, p.value, vs.value)
        {
            found.push(inconsistent(
                format!(
                    "the {} layers do not split evenly over {} pipeline × {} virtual stages",
                    model.layers, p.value, vs.value
                ),
                vs.span,
                &format!("{} % {} = {}", broken.value, broken.by, broken.remainder()),
                "choose virtual stages that divide the layers of each pipeline stage",
            ));
        }
    }
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
        match (model.arch, model.experts) {
            (Arch::Dense, _) if e.value > 1 => found.push(inconsistent(
                "expert parallelism needs a mixture-of-experts model".to_string(),
                e.span,
                "this model is dense",
                "set `expert = 1` or `arch = moe`",
            )),
            (Arch::Moe, Some(experts)) if experts % e.value != 0 => found.push(inconsistent(
                format!(
                    "expert parallelism {} does not divide the {experts} experts",
                    e.value
                ),
                e.span,
                "experts are spread evenly over expert-parallel ranks",
                "choose an expert degree that divides the expert count",
            )),
            (Arch::Moe, _) => {
                // Folded onto the tensor × context × data grid: known once all three are pinned.
                if let (Some(t), Some(c), Some(d)) =
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
            _ => {}
        }
    }
    check_batch(parallel, train, &mut found);
    check_device_total(parallel, resources, &mut found);
    diags.extend(found);
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
