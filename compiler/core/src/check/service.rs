//! The `service "name" { … }` block: a model served to traffic under latency targets. Its
//! `model`, `resources` and `goal` blocks are the job's; `serve`, `traffic` and `targets` are its
//! own. Needs no catalogue; [`crate::catalogue::check_service`] checks it against one.

use super::job::{GoalSpec, ModelSpec, ResourcesSpec};
use super::reader::{BlockSpec, LabelRule, read_block};
use super::parallel::{expert_problem, pipeline_problem, tensor_problem};
use super::{MAX_DIM, MLA, MODEL, check_goal, check_job_name, check_resources, single_block};
use super::required_block;
use crate::layout_rules as rules;
use crate::types::Arch;
use crate::diagnostics::codes;
use crate::diagnostics::{Diagnostic, Diagnostics};
use crate::span::{FileId, Span, Spanned};
use crate::syntax::ast::{Block, Value};
use crate::types::{Disaggregation, Engine, KvCache, Percentile, Priority, ServePrecision};
use crate::units::Dimension;
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
const TRAFFIC: BlockSpec = BlockSpec {
    name: "traffic",
    fields: &[
        "input_len",
        "output_len",
        "dataset",
        "rate",
        "concurrency",
        "profile",
    ],
    blocks: &["input", "output"],
    label: LabelRule::None,
};
const LENGTH: BlockSpec = BlockSpec {
    name: "input",
    fields: &["mean", "p50", "p99"],
    blocks: &[],
    label: LabelRule::None,
};
const TARGETS: BlockSpec = BlockSpec {
    name: "targets",
    fields: &["ttft", "tpot", "itl", "e2e", "percentile"],
    blocks: &[],
    label: LabelRule::None,
};

/// The largest request rate loam accepts, in requests per second: far beyond any one service.
const MAX_RATE: f64 = 1e6;

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
    /// The engine, when written (else [`Engine::default_for`] the device's vendor).
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

/// A distribution of request lengths in tokens; a fixed length has all three equal.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LengthSpec {
    /// Mean tokens.
    pub mean: f64,
    /// Median tokens.
    pub p50: f64,
    /// 99th-percentile tokens.
    pub p99: f64,
    /// Where it is written.
    #[serde(skip)]
    pub span: Span,
}

/// How much traffic arrives.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum LoadSpec {
    /// Requests per second at the busiest hour (Poisson arrivals).
    Rate(Spanned<f64>),
    /// Requests in flight at once (a closed loop of clients).
    Concurrency(Spanned<u64>),
}

/// The `traffic` block.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrafficSpec {
    /// Prompt tokens per request.
    pub input: LengthSpec,
    /// Generated tokens per request.
    pub output: LengthSpec,
    /// The named dataset shape the lengths came from, if any.
    pub dataset: Option<Spanned<String>>,
    /// The load at the busiest hour.
    pub load: LoadSpec,
    /// The load of each hour of the day (0–23, local time) as a share of the busiest, if given.
    pub profile: Option<Spanned<Vec<f64>>>,
    /// The `traffic` block.
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

/// A named shape of request lengths: mean, median and 99th percentile of input and output
/// tokens, from the published benchmark's dataset statistics.
pub struct DatasetShape {
    /// The name written in specs.
    pub name: &'static str,
    /// Input tokens: mean, p50, p99.
    pub input: [f64; 3],
    /// Output tokens: mean, p50, p99.
    pub output: [f64; 3],
    /// Where the numbers come from.
    pub source: &'static str,
}

/// The dataset shapes `traffic { dataset = … }` may name.
pub const DATASETS: &[DatasetShape] = &[
    DatasetShape {
        name: "sharegpt",
        input: [226.0, 120.0, 1_600.0],
        output: [195.0, 130.0, 900.0],
        source: "ShareGPT V3 as vLLM's benchmark_serving.py samples it (Llama tokenizer): \
                 Kwon et al. 2023 (vLLM, SOSP) Table 1 and Fig. 11",
    },
    DatasetShape {
        name: "chat",
        input: [1_000.0, 700.0, 6_000.0],
        output: [300.0, 220.0, 1_200.0],
        source: "multi-turn chat with history, LMSYS-Chat-1M (Zheng et al. 2023) conversation \
                 statistics",
    },
    DatasetShape {
        name: "rag",
        input: [8_000.0, 6_000.0, 30_000.0],
        output: [400.0, 300.0, 1_500.0],
        source: "retrieval-augmented prompts: LongBench (Bai et al. 2023) single- and \
                 multi-document QA lengths",
    },
    DatasetShape {
        name: "summarization",
        input: [4_000.0, 3_500.0, 12_000.0],
        output: [250.0, 220.0, 600.0],
        source: "arXiv summarisation (Cohan et al. 2018) as used in serving benchmarks",
    },
];

/// The dataset shape named `name`.
pub fn dataset_shape(name: &str) -> Option<&'static DatasetShape> {
    DATASETS.iter().find(|d| d.name == name)
}

pub(super) fn check_service(block: &Block, diags: &mut Diagnostics) -> Option<Service> {
    let mut fields = read_block(block, &SERVICE, diags);
    let tenant = fields.string("tenant");
    let tenant = fields.require("tenant", tenant, "\"team-name\"");
    let priority = fields
        .keyword(
            "priority",
            Priority::from_keyword,
            &Priority::keywords(),
            false,
        )
        .map_or(Priority::Normal, |p| p.value);
    let name = block
        .label
        .as_ref()
        .map(|l| Spanned::new(l.value.clone(), l.span));
    drop(fields);

    let model = required_block(block, "model", diags)
        .and_then(|b| super::model::check_model(b, &MODEL, &MLA, diags));
    let serve = required_block(block, "serve", diags).and_then(|b| check_serve(b, diags));
    let traffic = required_block(block, "traffic", diags).and_then(|b| check_traffic(b, diags));
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
            .with_help("remove `deadline`; a service's limits are its `targets` and a monthly `budget`"),
        );
    }
    if let Some(name) = &name {
        check_job_name(name, None, diags);
    }
    if let (Some(model), Some(traffic)) = (&model, &traffic) {
        check_longest_request(model, traffic, diags);
    }
    if let (Some(model), Some(serve)) = (&model, &serve) {
        check_degrees(serve, model, resources.as_ref(), diags);
    }
    Some(Service {
        name: name?,
        file: block.span.file,
        tenant: tenant?,
        priority,
        model: model?,
        serve: serve?,
        traffic: traffic?,
        targets: targets?,
        resources: resources?,
        goal,
        span: block.span,
    })
}

/// The longest request (p99 input plus p99 output tokens) must fit in the model's context.
fn check_longest_request(model: &ModelSpec, traffic: &TrafficSpec, diags: &mut Diagnostics) {
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
        .with_related(model.span, "the model's context length is set in this block")
        .with_help("raise `seq_len` to the context the model supports, or shorten the requests"),
    );
}

/// The pinned degrees of one replica against the model ([`crate::layout_rules`], the rules jobs
/// follow) and `max_devices`. A replica's expert-parallel ranks are its tensor-parallel ranks.
fn check_degrees(
    serve: &ServeSpec,
    model: &ModelSpec,
    resources: Option<&ResourcesSpec>,
    diags: &mut Diagnostics,
) {
    if let Some(t) = &serve.tensor {
        diags.extend(tensor_problem(t, model));
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
                .with_help("choose an expert degree that divides `tensor`, or leave it to the planner"),
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
    let kv_cache = f.keyword("kv_cache", KvCache::from_keyword, &KvCache::keywords(), false);
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

fn check_traffic(block: &Block, diags: &mut Diagnostics) -> Option<TrafficSpec> {
    let mut f = read_block(block, &TRAFFIC, diags);
    let input_len = f.integer("input_len", 1, MAX_DIM, false);
    let output_len = f.integer("output_len", 1, MAX_DIM, false);
    let dataset = f.name("dataset");
    let rate = f.number("rate", 0.0, MAX_RATE);
    let concurrency = f.integer("concurrency", 1, MAX_DIM, false);
    let profile = f.get("profile").and_then(|a| read_profile(&a.value, f.diags));
    let rate_at = f.get("rate").map(|a| a.value.span());
    let concurrency_at = f.get("concurrency").map(|a| a.value.span());
    drop(f);
    let shape = match &dataset {
        Some(name) => match dataset_shape(&name.value) {
            Some(shape) => Some(shape),
            None => {
                let names: Vec<&str> = DATASETS.iter().map(|d| d.name).collect();
                let help = match crate::suggest::closest(&name.value, names.iter().copied()) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => format!("`dataset` is one of {}", super::reader::list_names(&names)),
                };
                diags.push(
                    Diagnostic::error(
                        codes::check::UNKNOWN_KEYWORD,
                        format!("unknown dataset `{}`", name.value),
                        name.span,
                        "not a known dataset shape",
                    )
                    .with_help(help),
                );
                return None;
            }
        },
        None => None,
    };
    let at = |lengths: fn(&DatasetShape) -> [f64; 3]| {
        shape.zip(dataset.as_ref()).map(|(s, d)| (lengths(s), d.span))
    };
    let input = length(block, "input", input_len, at(|s| s.input), diags);
    let output = length(block, "output", output_len, at(|s| s.output), diags);
    let load = match (rate_at, concurrency_at) {
        (Some(rate_at), Some(concurrency_at)) => {
            diags.push(
                Diagnostic::error(
                    codes::check::SERVICE_FIELDS,
                    "both `rate` and `concurrency`",
                    concurrency_at,
                    "the load is given twice",
                )
                .with_related(rate_at, "`rate` given here")
                .with_help("give the busiest hour's `rate` in requests per second, or the `concurrency` of a closed loop of clients, not both"),
            );
            None
        }
        (None, None) => {
            diags.push(
                Diagnostic::error(
                    codes::check::MISSING_FIELD,
                    "missing field `rate` in `traffic`",
                    block.name.span,
                    "no load given",
                )
                .with_help("add `rate = 20` (requests per second at the busiest hour) or `concurrency = 64`"),
            );
            None
        }
        // A value written but refused has been reported where it is.
        _ => rate
            .map(LoadSpec::Rate)
            .or(concurrency.map(LoadSpec::Concurrency)),
    };
    Some(TrafficSpec {
        input: input?,
        output: output?,
        dataset,
        load: load?,
        profile,
        span: block.span,
    })
}

/// A request-length distribution: `<name>_len = N` (fixed), an `<name> { mean p50 p99 }` block,
/// or the named dataset's.
fn length(
    traffic: &Block,
    name: &str,
    fixed: Option<Spanned<u64>>,
    dataset: Option<([f64; 3], Span)>,
    diags: &mut Diagnostics,
) -> Option<LengthSpec> {
    let block = single_block(traffic, name, diags);
    match (fixed, block) {
        (Some(fixed), Some(block)) => {
            diags.push(
                Diagnostic::error(
                    codes::check::SERVICE_FIELDS,
                    format!("both `{name}_len` and an `{name}` block"),
                    block.name.span,
                    "the length is given twice",
                )
                .with_related(fixed.span, "fixed length given here")
                .with_help(format!(
                    "keep `{name}_len` for a fixed length or the `{name} {{ mean p50 p99 }}` block for a distribution"
                )),
            );
            None
        }
        (Some(fixed), None) => {
            let v = fixed.value as f64;
            Some(LengthSpec {
                mean: v,
                p50: v,
                p99: v,
                span: fixed.span,
            })
        }
        (None, Some(block)) => {
            let spec = BlockSpec {
                name: if name == "input" { "input" } else { "output" },
                ..LENGTH
            };
            let mut f = read_block(block, &spec, diags);
            let mean = f.number("mean", 1.0, MAX_DIM as f64);
            let mean = f.require("mean", mean, "1500");
            let p99 = f.number("p99", 1.0, MAX_DIM as f64);
            let p99 = f.require("p99", p99, "6000");
            let p50 = f.number("p50", 1.0, MAX_DIM as f64);
            drop(f);
            let (mean, p99) = (mean?.value, p99?);
            let p50 = p50.map_or(mean, |p| p.value);
            if p99.value < mean || p99.value < p50 {
                diags.push(
                    Diagnostic::error(
                        codes::check::SERVICE_FIELDS,
                        format!("`p99` of {} is below the mean or the median", p99.value),
                        p99.span,
                        "a 99th percentile is at least the median",
                    )
                    .with_help("write the lengths in tokens: `mean`, optional `p50`, and `p99` ≥ both"),
                );
                return None;
            }
            Some(LengthSpec {
                mean,
                p50,
                p99: p99.value,
                span: block.span,
            })
        }
        (None, None) => match dataset {
            Some(([mean, p50, p99], span)) => Some(LengthSpec {
                mean,
                p50,
                p99,
                span,
            }),
            None => {
                diags.push(
                    Diagnostic::error(
                        codes::check::MISSING_FIELD,
                        format!("missing field `{name}_len` in `traffic`"),
                        traffic.name.span,
                        format!("no {name} length given"),
                    )
                    .with_help(format!(
                        "add `{name}_len = 1000`, an `{name} {{ mean = … p99 = … }}` block, or `dataset = sharegpt`"
                    )),
                );
                None
            }
        },
    }
}

/// `profile = [24 shares of the busiest hour]`.
fn read_profile(value: &Value, diags: &mut Diagnostics) -> Option<Spanned<Vec<f64>>> {
    let bad = |diags: &mut Diagnostics, span: Span, why: &str| {
        diags.push(
            Diagnostic::error(
                codes::check::SERVICE_FIELDS,
                format!("invalid traffic profile: {why}"),
                span,
                why.to_string(),
            )
            .with_help("write 24 numbers between 0 and 1, one per hour from midnight local time, with the busiest hour at 1"),
        );
    };
    let Value::List(list) = value else {
        bad(diags, value.span(), "expected a list of 24 numbers");
        return None;
    };
    let mut shares = Vec::with_capacity(list.items.len());
    for item in &list.items {
        let Value::Number(n) = item else {
            bad(diags, item.span(), "expected a number");
            return None;
        };
        match crate::units::parse_quantity(&n.text) {
            Ok(q) if q.dimension == Dimension::Count && (0.0..=1.0).contains(&q.value) => {
                shares.push(q.value);
            }
            _ => {
                bad(diags, n.span, "each hour's share is a number from 0 to 1");
                return None;
            }
        }
    }
    if shares.len() != 24 {
        bad(
            diags,
            list.span,
            &format!("expected 24 hours, found {}", shares.len()),
        );
        return None;
    }
    if !shares.iter().any(|s| *s >= 1.0) {
        bad(
            diags,
            list.span,
            "no hour is the busiest (1): the shares are of the busiest hour's load",
        );
        return None;
    }
    Some(Spanned::new(shares, list.span))
}

fn check_targets(block: &Block, diags: &mut Diagnostics) -> Option<TargetsSpec> {
    let mut f = read_block(block, &TARGETS, diags);
    let ttft = f.quantity("ttft", &Dimension::Duration);
    let tpot = f.quantity("tpot", &Dimension::Duration);
    let itl = f.quantity("itl", &Dimension::Duration);
    let e2e = f.quantity("e2e", &Dimension::Duration);
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
            .with_help("raise `e2e` above `ttft` plus the output tokens' time, or drop one of them"),
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
