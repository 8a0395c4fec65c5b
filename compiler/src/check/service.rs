//! The `service "name" { … }` block: a model served to traffic under latency targets. Its
//! `model`, `resources` and `goal` blocks are the job's; `serve`, `traffic` and `targets` are its
//! own. Needs no catalogue; [`crate::check::catalogue::check_service`] checks it against one.

mod traffic;

pub use traffic::{DATASETS, DatasetShape, LengthSpec, LoadSpec, TrafficSpec, dataset_shape};

use super::job::{GoalSpec, ModelSpec, ResourcesSpec};
use super::parallel::{expert_problem, pipeline_problem, tensor_problem_under};
use super::reader::{BlockSpec, LabelRule, read_block};
use super::{MAX_DIM, MLA, MODEL, check_goal, check_job_name, check_resources};
use super::{required_block, single_block};
use crate::syntax::ast::Block;
use crate::units::Dimension;
use crate::workload::layout::rules;
use loam_ir::diagnostics::codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::span::{FileId, Span, Spanned};
use loam_ir::types::{Arch, Disaggregation, Engine, KvCache, Percentile, Priority, ServePrecision};
use serde::Serialize;

pub(super) const SERVICE: BlockSpec = BlockSpec {
    name: "service",
    fields: &["tenant", "priority"],
    blocks: &["model", "serve", "traffic", "targets", "resources", "goal"],
    label: LabelRule::Required,
};
const SERVE: BlockSpec = BlockSpec {
    name: "serve",
    fields: &[
        "weights",
        "precision",
        "kv_cache",
        "engine",
        "disaggregate",
        "tensor",
        "pipeline",
        "expert",
        "max_batch",
    ],
    blocks: &[],
    label: LabelRule::None,
};
const TARGETS: BlockSpec = BlockSpec {
    name: "targets",
    fields: &["ttft", "tpot", "itl", "e2e", "percentile"],
    blocks: &[],
    label: LabelRule::None,
};

/// One checked `service` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Service {
    /// The service name (the block label).
    pub name: Spanned<String>,
    /// The file it came from.
    #[serde(skip)]
    pub file: FileId,
    /// The tenant (team) that owns it.
    pub tenant: Spanned<String>,
    /// Scheduling priority.
    pub priority: Priority,
    /// The model served; `seq_len` is the longest context a request may use.
    pub model: ModelSpec,
    /// Where that context, the model's `seq_len`, is written (the `model` block when it is not).
    #[serde(skip)]
    pub context_at: Span,
    /// How it is served: precision, engine, pinned degrees.
    pub serve: ServeSpec,
    /// The requests it must serve.
    pub traffic: TrafficSpec,
    /// The latency it must keep.
    pub targets: TargetsSpec,
    /// Where it may run.
    pub resources: ResourcesSpec,
    /// What to optimise; `budget` is a monthly cap.
    pub goal: GoalSpec,
    /// The whole `service` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `serve` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServeSpec {
    /// Where the engine loads the weights from: a Hugging Face repository id
    /// (`meta-llama/Llama-3.1-70B-Instruct`) or an absolute path on the nodes.
    pub weights: Spanned<String>,
    /// Weight precision.
    pub precision: Spanned<ServePrecision>,
    /// KV-cache precision, when written (else [`ServePrecision::default_kv_cache`]).
    pub kv_cache: Option<Spanned<KvCache>>,
    /// The engine, when written (else the `default_engine` of the device's vendor).
    pub engine: Option<Spanned<Engine>>,
    /// Aggregated, disaggregated or the planner's choice.
    pub disaggregate: Spanned<Disaggregation>,
    /// Pinned tensor-parallel degree per replica.
    pub tensor: Option<Spanned<u64>>,
    /// Pinned pipeline-parallel degree per replica.
    pub pipeline: Option<Spanned<u64>>,
    /// Pinned expert-parallel degree per replica (MoE only).
    pub expert: Option<Spanned<u64>>,
    /// Pinned most sequences a replica batches at once (the engine's `max_num_seqs`).
    pub max_batch: Option<Spanned<u64>>,
    /// The `serve` block.
    #[serde(skip)]
    pub span: Span,
}

/// The `targets` block: latency a share of requests must stay within.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetsSpec {
    /// Time to first token, seconds.
    pub ttft: Option<Spanned<f64>>,
    /// Time per output token after the first (inter-token latency), seconds.
    pub tpot: Option<Spanned<f64>>,
    /// End-to-end request latency, seconds.
    pub e2e: Option<Spanned<f64>>,
    /// The percentile every target holds at.
    pub percentile: Percentile,
    /// The `targets` block.
    #[serde(skip)]
    pub span: Span,
}

pub(super) fn check_service(block: &Block, diags: &mut Diagnostics) -> Option<Service> {
    let super::Header {
        name,
        tenant,
        priority,
        ..
    } = super::read_header(block, &SERVICE, diags);

    let model = required_block(block, "model", diags)
        .and_then(|b| super::model::check_model(b, &MODEL, &MLA, diags));
    let serve = required_block(block, "serve", diags).and_then(|b| check_serve(b, diags));
    let traffic =
        required_block(block, "traffic", diags).and_then(|b| traffic::check_traffic(b, diags));
    let targets = required_block(block, "targets", diags).and_then(|b| check_targets(b, diags));
    let resources =
        required_block(block, "resources", diags).and_then(|b| check_resources(b, diags));
    let goal = check_goal(single_block(block, "goal", diags), diags);
    if let Some(deadline) = &goal.deadline {
        diags.push(
            Diagnostic::error(
                codes::check::SERVICE_FIELDS,
                "a service has no deadline",
                deadline.span,
                "a service runs until it is taken down",
            )
            .with_help(
                "remove `deadline`; a service's limits are its `targets` and a monthly `budget`",
            ),
        );
    }
    if let Some(name) = &name {
        check_job_name(name, None, diags);
    }
    if let (Some(model), Some(traffic)) = (&model, &traffic) {
        check_longest_request(block, model, traffic, diags);
    }
    if let (Some(model), Some(serve)) = (&model, &serve) {
        check_degrees(serve, model, resources.as_ref(), diags);
    }
    let model = model?;
    Some(Service {
        name: name?,
        file: block.span.file,
        tenant: tenant?,
        priority,
        context_at: seq_len_at(block).unwrap_or(model.span),
        model,
        serve: serve?,
        traffic: traffic?,
        targets: targets?,
        resources: resources?,
        goal,
        span: block.span,
    })
}

/// The longest request (p99 input plus p99 output tokens) must fit in the model's context.
fn check_longest_request(
    service: &Block,
    model: &ModelSpec,
    traffic: &TrafficSpec,
    diags: &mut Diagnostics,
) {
    let longest = traffic.input.p99 + traffic.output.p99;
    if longest <= model.seq_len as f64 {
        return;
    }
    let span = if traffic.input.span == traffic.output.span {
        traffic.input.span
    } else {
        traffic.input.span.join(traffic.output.span)
    };
    diags.push(
        Diagnostic::error(
            codes::check::SERVICE_FIELDS,
            format!(
                "the longest requests need {longest:.0} tokens of context, more than the model's `seq_len` of {}",
                model.seq_len
            ),
            span,
            format!(
                "p99 input {:.0} plus p99 output {:.0} tokens",
                traffic.input.p99, traffic.output.p99
            ),
        )
        .with_related(seq_len_at(service).unwrap_or(model.span), "the model's context length")
        .with_help("raise `seq_len` to the context the model supports, or shorten the requests"),
    );
}

/// Where the service's `model { seq_len = … }` value is written.
fn seq_len_at(service: &Block) -> Option<Span> {
    service
        .blocks()
        .find(|b| b.name.name == "model")?
        .attributes()
        .find(|a| a.name.name == "seq_len")
        .map(|a| a.value.span())
}

/// The pinned degrees of one replica against the model ([`crate::workload::layout::rules`], the rules jobs
/// follow) and `max_devices`. A replica's expert-parallel ranks are its tensor-parallel ranks.
fn check_degrees(
    serve: &ServeSpec,
    model: &ModelSpec,
    resources: Option<&ResourcesSpec>,
    diags: &mut Diagnostics,
) {
    if let Some(t) = &serve.tensor {
        diags.extend(tensor_problem_under(rules::serving_tensor, t, model));
    }
    if let Some(p) = &serve.pipeline {
        diags.extend(pipeline_problem(p, model));
    }
    if let Some(e) = &serve.expert {
        if let Some(problem) = expert_problem(e, model) {
            diags.push(problem);
        } else if model.arch == Arch::Moe
            && let Some(t) = &serve.tensor
            && rules::expert(t.value, model.experts.unwrap_or(1), e.value).is_err()
        {
            diags.push(
                Diagnostic::error(
                    codes::check::INCONSISTENT_LAYOUT,
                    format!(
                        "expert parallelism {} does not divide tensor parallelism {}",
                        e.value, t.value
                    ),
                    e.span,
                    "a replica's expert-parallel ranks are its tensor-parallel ranks",
                )
                .with_related(t.span, "tensor parallelism pinned here")
                .with_help(
                    "choose an expert degree that divides `tensor`, or leave it to the planner",
                ),
            );
        }
    }
    let devices = serve.tensor.as_ref().map_or(1, |t| t.value)
        * serve.pipeline.as_ref().map_or(1, |p| p.value);
    if let Some(max) = resources.and_then(|r| r.max_devices.as_ref())
        && devices > max.value
        && let Some(span) = [&serve.tensor, &serve.pipeline]
            .into_iter()
            .flatten()
            .map(|d| d.span)
            .reduce(Span::join)
    {
        diags.push(
            Diagnostic::error(
                codes::check::INCONSISTENT_LAYOUT,
                format!(
                    "one replica needs {devices} devices but `max_devices` is {}",
                    max.value
                ),
                span,
                "tensor × pipeline devices per replica",
            )
            .with_related(max.span, "limit set here")
            .with_help("lower `tensor` or `pipeline`, or raise `max_devices`"),
        );
    }
}

fn check_serve(block: &Block, diags: &mut Diagnostics) -> Option<ServeSpec> {
    let mut f = read_block(block, &SERVE, diags);
    let weights = f.string("weights");
    let weights = f.require("weights", weights, "\"meta-llama/Llama-3.1-70B-Instruct\"");
    let precision = f.keyword(
        "precision",
        ServePrecision::from_keyword,
        &ServePrecision::keywords(),
        false,
    );
    let precision = f.require("precision", precision, "fp8");
    let kv_cache = f.keyword(
        "kv_cache",
        KvCache::from_keyword,
        &KvCache::keywords(),
        false,
    );
    let engine = f.keyword("engine", Engine::from_keyword, &Engine::keywords(), true);
    let disaggregate = f
        .keyword(
            "disaggregate",
            Disaggregation::from_keyword,
            &Disaggregation::keywords(),
            false,
        )
        .unwrap_or_else(|| Spanned::new(Disaggregation::Auto, block.span));
    let tensor = f.integer("tensor", 1, MAX_DIM, true);
    let pipeline = f.integer("pipeline", 1, MAX_DIM, true);
    let expert = f.integer("expert", 1, MAX_DIM, true);
    let max_batch = f.integer("max_batch", 1, MAX_DIM, true);
    Some(ServeSpec {
        weights: weights?,
        precision: precision?,
        kv_cache,
        engine,
        disaggregate,
        tensor,
        pipeline,
        expert,
        max_batch,
        span: block.span,
    })
}

fn check_targets(block: &Block, diags: &mut Diagnostics) -> Option<TargetsSpec> {
    let mut f = read_block(block, &TARGETS, diags);
    let target = super::ranges::LATENCY_TARGET;
    let ttft = f.quantity("ttft", &Dimension::Duration, target);
    let tpot = f.quantity("tpot", &Dimension::Duration, target);
    let itl = f.quantity("itl", &Dimension::Duration, target);
    let e2e = f.quantity("e2e", &Dimension::Duration, target);
    let percentile = f
        .keyword(
            "percentile",
            Percentile::from_keyword,
            &Percentile::keywords(),
            false,
        )
        .map_or(Percentile::P99, |p| p.value);
    let any_written = ["ttft", "tpot", "itl", "e2e"]
        .iter()
        .any(|n| f.get(n).is_some());
    drop(f);
    let tpot = match (tpot, itl) {
        (Some(tpot), Some(itl)) => {
            diags.push(
                Diagnostic::error(
                    codes::check::SERVICE_FIELDS,
                    "both `tpot` and `itl`",
                    itl.span,
                    "`itl` is another name for `tpot`",
                )
                .with_related(tpot.span, "`tpot` given here")
                .with_help("keep one: time per output token and inter-token latency are the same target here"),
            );
            Some(tpot)
        }
        (tpot, itl) => tpot.or(itl),
    };
    if !any_written {
        diags.push(
            Diagnostic::error(
                codes::check::MISSING_FIELD,
                "a `targets` block without a target",
                block.name.span,
                "no latency target given",
            )
            .with_help("add `ttft = 2s`, `tpot = 50ms` or `e2e = 30s`"),
        );
        return None;
    }
    if let (Some(ttft), Some(e2e)) = (&ttft, &e2e)
        && e2e.value < ttft.value
    {
        diags.push(
            Diagnostic::error(
                codes::check::SERVICE_FIELDS,
                format!(
                    "the `e2e` target of {} is below the `ttft` target of {}",
                    latency(e2e.value),
                    latency(ttft.value)
                ),
                e2e.span,
                "a request ends after its first token",
            )
            .with_related(ttft.span, "time to first token set here")
            .with_help(
                "raise `e2e` above `ttft` plus the output tokens' time, or drop one of them",
            ),
        );
    }
    Some(TargetsSpec {
        ttft,
        tpot,
        e2e,
        percentile,
        span: block.span,
    })
}

/// A latency target as a spec writes it: `50ms` below a second, else `2s` or `1.5s`.
fn latency(seconds: f64) -> String {
    if seconds < 1.0 {
        format!("{}ms", (seconds * 1e3 * 1e3).round() / 1e3)
    } else {
        format!("{}s", (seconds * 1e3).round() / 1e3)
    }
}
