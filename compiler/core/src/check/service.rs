//! The `service "name" { … }` block: a model served to traffic under latency targets. Its
//! `model`, `resources` and `goal` blocks are the job's; `serve`, `traffic` and `targets` are its
//! own. Needs no catalogue; [`crate::catalogue::check_service`] checks it against one.

use super::job::{GoalSpec, ModelSpec, ResourcesSpec};
use super::reader::{BlockSpec, LabelRule, read_block};
use super::{CheckpointSpec, required_block};
use super::{MAX_DIM, MLA, MODEL, check_goal, check_job_name, check_resources, single_block};
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
            .with_help(
                "remove `deadline`; a service's limits are its `targets` and a monthly `budget`",
            ),
        );
    }
    if let Some(name) = &name {
        check_job_name(name, &CheckpointSpec::default(), diags);
    }
    if let (Some(model), Some(traffic)) = (&model, &traffic) {
        let longest = traffic.input.p99 + traffic.output.p99;
        if longest > model.seq_len as f64 {
            diags.push(
                Diagnostic::error(
                    codes::check::SERVICE_FIELDS,
                    format!(
                        "the longest requests need {longest:.0} tokens of context, more than the model's `seq_len` of {}",
                        model.seq_len
                    ),
                    traffic.span,
                    "p99 input plus p99 output tokens",
                )
                .with_related(model.span, "the model's context length")
                .with_help("raise `seq_len` to the context the model supports, or shorten the requests"),
            );
        }
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

fn check_traffic(block: &Block, diags: &mut Diagnostics) -> Option<TrafficSpec> {
    let mut f = read_block(block, &TRAFFIC, diags);
    let input_len = f.integer("input_len", 1, MAX_DIM, false);
    let output_len = f.integer("output_len", 1, MAX_DIM, false);
    let dataset = f.name("dataset");
    let rate = f.number("rate", 0.0, MAX_RATE);
    let concurrency = f.integer("concurrency", 1, MAX_DIM, false);
    let profile = f
        .get("profile")
        .and_then(|a| read_profile(&a.value, f.diags));
    let rate_written = f.get("rate").is_some();
    let concurrency_written = f.get("concurrency").is_some();
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
    let input = length(block, "input", input_len, shape.map(|s| s.input), diags);
    let output = length(block, "output", output_len, shape.map(|s| s.output), diags);
    let load = match (rate, concurrency) {
        (Some(rate), None) if rate.value > 0.0 => Some(LoadSpec::Rate(rate)),
        (None, Some(concurrency)) => Some(LoadSpec::Concurrency(concurrency)),
        (Some(rate), Some(_)) => {
            diags.push(
                Diagnostic::error(
                    codes::check::SERVICE_FIELDS,
                    "both `rate` and `concurrency`",
                    rate.span,
                    "the load is given twice",
                )
                .with_help("give the busiest hour's `rate` in requests per second, or the `concurrency` of a closed loop of clients, not both"),
            );
            None
        }
        (Some(rate), None) => {
            diags.push(
                Diagnostic::error(
                    codes::check::OUT_OF_RANGE,
                    "value out of range: must be greater than zero",
                    rate.span,
                    "must be greater than zero",
                )
                .with_help("write the busiest hour's requests per second, e.g. `rate = 20`"),
            );
            None
        }
        (None, None) => {
            if !rate_written && !concurrency_written {
                diags.push(
                    Diagnostic::error(
                        codes::check::MISSING_FIELD,
                        "missing field `rate` in `traffic`",
                        block.name.span,
                        "no load given",
                    )
                    .with_help("add `rate = 20` (requests per second at the busiest hour) or `concurrency = 64`"),
                );
            }
            None
        }
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
    dataset: Option<[f64; 3]>,
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
                    .with_help(
                        "write the lengths in tokens: `mean`, optional `p50`, and `p99` ≥ both",
                    ),
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
            Some([mean, p50, p99]) => Some(LengthSpec {
                mean,
                p50,
                p99,
                span: traffic.span,
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
    Some(TargetsSpec {
        ttft,
        tpot,
        e2e,
        percentile,
        span: block.span,
    })
}
