//! The `parallel` block: pinned degrees, and whether they fit the model, the batch and each other.

use super::reader::{BlockSpec, read_block};
use super::{MAX_DIM, ModelSpec, ParallelSpec, ResourcesSpec, TrainSpec};
use crate::diagnostics::codes;
use crate::diagnostics::{Diagnostic, Diagnostics};
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
        && !model.heads.is_multiple_of(t.value)
    {
        found.push(inconsistent(
            format!(
                "tensor parallelism {} does not divide the {} attention heads",
                t.value, model.heads
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
        && !model.seq_len.is_multiple_of(c.value)
    {
        found.push(inconsistent(
            format!(
                "context parallelism {} does not divide the sequence length {}",
                c.value, model.seq_len
            ),
            c.span,
            "each rank holds an equal slice of the sequence",
            "choose a context degree that divides seq_len",
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
    if !train.global_batch.is_multiple_of(data * micro) {
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
