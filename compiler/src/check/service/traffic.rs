//! The `traffic` block of a service: request lengths (fixed, a distribution, or a named
//! dataset's), the load at the busiest hour (a rate or a concurrency) and the hourly profile.

use crate::check::reader::{BlockSpec, LabelRule, read_block};
use crate::check::{MAX_DIM, single_block};
use crate::syntax::ast::{Block, Value};
use crate::units::Dimension;
use loam_ir::diagnostics::codes;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::span::{Span, Spanned};
use serde::Serialize;

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
/// The largest request rate loam accepts, in requests per second: far beyond any one service.
const MAX_RATE: f64 = 1e6;

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

pub(super) fn check_traffic(block: &Block, diags: &mut Diagnostics) -> Option<TrafficSpec> {
    let mut f = read_block(block, &TRAFFIC, diags);
    let input_len = f.integer("input_len", 1, MAX_DIM, false);
    let output_len = f.integer("output_len", 1, MAX_DIM, false);
    let dataset = f.name("dataset");
    let rate = f.number("rate", 0.0, MAX_RATE);
    let concurrency = f.integer("concurrency", 1, MAX_DIM, false);
    let profile = f
        .get("profile")
        .and_then(|a| read_profile(&a.value, f.diags));
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
                    None => format!(
                        "`dataset` is one of {}",
                        crate::check::reader::list_names(&names)
                    ),
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
        shape
            .zip(dataset.as_ref())
            .map(|(s, d)| (lengths(s), d.span))
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
