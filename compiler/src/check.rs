//! Checking a syntax tree into typed jobs: known blocks and fields, value kinds and dimensions,
//! keywords, required fields, model and layout consistency. Needs no catalogue; the checks against
//! the catalogue live in [`catalogue`].
//!
//! Checking never stops at the first problem: every job and block is read to the end and all
//! diagnostics are returned, sorted by position.

pub mod catalogue;
mod job;
mod model;
mod parallel;
mod ranges;
mod reader;
mod service;
mod train;
mod workload;

pub use job::{
    CheckpointSpec, DataSpec, GoalSpec, Job, LoraSpec, MlaSpec, ModelSpec, ParallelSpec,
    ResourcesSpec, TrainSpec,
};
use loam_ir::checkpoint::CheckpointPath;
use loam_ir::diagnostics::codes;
pub use model::parameter_count;
pub(crate) use parallel::pinned_split;
pub use service::{
    DATASETS, DatasetShape, LengthSpec, LoadSpec, ServeSpec, Service, TargetsSpec, TrafficSpec,
    dataset_shape,
};
pub use workload::{
    expert_dispatch_on, job_model_dims, model_dims, train_setup, train_setup_on, trainable,
};

use crate::suggest::closest;
use crate::syntax::ast::{Block, File};
use crate::units::Dimension;
use loam_ir::diagnostics::{Diagnostic, Diagnostics};
use loam_ir::names::{self, JobNameProblem};
use loam_ir::span::{Span, Spanned};
use loam_ir::types::{Optimize, Priority};
use reader::{BlockSpec, LabelRule, duplicate, read_block};
use std::collections::BTreeMap;

const JOB: BlockSpec = BlockSpec {
    name: "job",
    fields: &["tenant", "priority", "submit"],
    blocks: &[
        "model",
        "train",
        "parallel",
        "data",
        "resources",
        "goal",
        "checkpoint",
    ],
    label: LabelRule::Required,
};
const MODEL: BlockSpec = BlockSpec {
    name: "model",
    fields: &[
        "arch",
        "mlp",
        "layers",
        "hidden",
        "ffn",
        "heads",
        "kv_heads",
        "vocab",
        "seq_len",
        "params",
        "experts",
        "top_k",
        "tie_embeddings",
        "sensitive",
        "head_dim",
        "sliding_window",
        "global_every",
        "expert_ffn",
        "shared_experts",
        "dense_layers",
        "capacity_factor",
        "expert_groups",
        "groups_per_token",
    ],
    blocks: &["mla"],
    label: LabelRule::None,
};
const MLA: BlockSpec = BlockSpec {
    name: "mla",
    fields: &[
        "q_lora_rank",
        "kv_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
    ],
    blocks: &[],
    label: LabelRule::None,
};
const TRAIN: BlockSpec = BlockSpec {
    name: "train",
    fields: &[
        "tokens",
        "global_batch",
        "precision",
        "optimizer",
        "freeze",
        "framework",
        "expert_dispatch",
        "gradients",
        "master_weights",
        "moments",
    ],
    blocks: &["lora"],
    label: LabelRule::None,
};
const LORA: BlockSpec = BlockSpec {
    name: "lora",
    fields: &["rank", "targets"],
    blocks: &[],
    label: LabelRule::None,
};
const PARALLEL: BlockSpec = BlockSpec {
    name: "parallel",
    fields: &[
        "tensor",
        "pipeline",
        "data",
        "context",
        "expert",
        "virtual_stages",
        "pipeline_split",
        "stages",
        "micro_batch",
        "zero",
        "recompute",
        "recompute_layers",
        "sequence_parallel",
        "tensor_overlap",
    ],
    blocks: &[],
    label: LabelRule::None,
};
const DATA: BlockSpec = BlockSpec {
    name: "data",
    fields: &["site", "size"],
    blocks: &[],
    label: LabelRule::Required,
};
const RESOURCES: BlockSpec = BlockSpec {
    name: "resources",
    fields: &[
        "pool",
        "devices",
        "sites",
        "max_devices",
        "interruptible",
        "features",
        "software",
        "max_latency",
    ],
    blocks: &[],
    label: LabelRule::None,
};
const GOAL: BlockSpec = BlockSpec {
    name: "goal",
    fields: &["optimize", "deadline", "budget"],
    blocks: &[],
    label: LabelRule::None,
};
const CHECKPOINT: BlockSpec = BlockSpec {
    name: "checkpoint",
    fields: &["path", "interval"],
    blocks: &[],
    label: LabelRule::None,
};

/// Every block of a job, for telling where a misplaced field belongs.
const JOB_BLOCKS: [&BlockSpec; 10] = [
    &JOB,
    &MODEL,
    &MLA,
    &TRAIN,
    &LORA,
    &PARALLEL,
    &DATA,
    &RESOURCES,
    &GOAL,
    &CHECKPOINT,
];

/// The job blocks that have a field named `name`, in the order a spec writes them: where a
/// field written in the wrong block belongs (`deadline` in `train` belongs in `goal`). Empty
/// when `block` is not a job's block (a service's blocks are other blocks of the same names).
fn blocks_with_field(name: &str, block: &BlockSpec) -> Vec<&'static str> {
    let in_a_job = JOB_BLOCKS
        .iter()
        .any(|spec| spec.name == block.name && spec.fields == block.fields);
    if !in_a_job {
        return Vec::new();
    }
    JOB_BLOCKS
        .iter()
        .filter(|spec| spec.fields.contains(&name))
        .map(|spec| spec.name)
        .collect()
}

/// Operations a spec may name in `model { sensitive = [...] }`.
pub const OPERATIONS: &[&str] = &[
    "embedding",
    "attention",
    "mlp",
    "router",
    "norm",
    "softmax",
    "lm_head",
    "loss",
];

/// The largest parallel degree or model dimension loam accepts; far beyond any real job, small
/// enough that products of degrees never overflow.
pub(crate) const MAX_DIM: u64 = 1 << 24;

/// The bounds of a model's expert capacity factor: at least its balanced share, at most 64 ×
/// it (the spec's `capacity_factor`, and the runs store's column of it).
pub(crate) const CAPACITY_FACTOR: (f64, f64) = (1.0, 64.0);

/// The most transformer blocks a model may have: about 800 times the deepest published model
/// (126 blocks, Llama 3.1 405B), and small enough that the checker's memory pre-check, which
/// splits the blocks for every pipeline degree it tries, stays well under a second (0.32 s for
/// a model of 100,000 layers that fits nowhere; a fuzzed spec of 8,028,256 layers took it
/// 14.4 s). (counted)
pub(crate) const MAX_LAYERS: u64 = 100_000;

/// The result of checking one file: the jobs that are complete enough to plan, and everything
/// found wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// Jobs with every required part present (a job with errors may still be here).
    pub jobs: Vec<Job>,
    /// Services with every required part present, likewise.
    pub services: Vec<Service>,
    /// All problems, sorted by position.
    pub diagnostics: Vec<Diagnostic>,
}

/// Checks one parsed file.
pub fn check_file(file: &File) -> Checked {
    let mut diags = Diagnostics::new();
    let mut jobs = Vec::new();
    let mut services = Vec::new();
    let mut seen: BTreeMap<String, (Span, &str)> = BTreeMap::new();
    for block in &file.blocks {
        if block.name.name != "job" && block.name.name != "service" {
            let help = match closest(&block.name.name, ["job", "service"]) {
                Some(near) => format!("did you mean `{near}`?"),
                None => "a file holds `job \"name\" { … }` and `service \"name\" { … }` blocks"
                    .to_string(),
            };
            diags.push(
                Diagnostic::error(
                    codes::check::UNKNOWN_BLOCK,
                    format!("unknown block `{}` at the top level", block.name.name),
                    block.name.span,
                    "only `job` and `service` blocks may stand here",
                )
                .with_help(help),
            );
            continue;
        }
        if let Some(label) = &block.label {
            let kind = block.name.name.as_str();
            if let Some((first, first_kind)) = seen.get(&label.value) {
                diags.push(duplicate_name(
                    &label.value,
                    kind,
                    label.span,
                    *first,
                    first_kind,
                ));
            } else {
                seen.insert(label.value.clone(), (label.span, kind));
            }
        }
        if block.name.name == "service" {
            services.extend(service::check_service(block, &mut diags));
        } else if let Some(job) = check_job(block, &mut diags) {
            jobs.push(job);
        }
    }
    if file.blocks.is_empty() {
        diags.push(
            Diagnostic::error(
                codes::check::NO_JOB,
                "expected a `job` or `service` block, found none",
                Span {
                    end: file.span.start,
                    ..file.span
                },
                "this file defines no job and no service",
            )
            .with_help(
                "add a `job \"name\" { … }` or `service \"name\" { … }` block, or remove the file",
            ),
        );
    }
    Checked {
        jobs,
        services,
        diagnostics: diags.into_sorted(),
    }
}

/// L1006: `name`, the name of a `kind` block at `span`, is taken by a `first_kind` block at
/// `first`. Jobs and services share one namespace: both name plans, manifests and output
/// folders.
fn duplicate_name(name: &str, kind: &str, span: Span, first: Span, first_kind: &str) -> Diagnostic {
    let (related, help) = if kind == "job" && first_kind == "job" {
        (
            "first used here".to_string(),
            "give each job its own name; plans and manifests are keyed by it",
        )
    } else {
        (
            format!("first used here, by a {first_kind}"),
            "give each job and service its own name; plans, manifests and output folders are keyed by it",
        )
    };
    Diagnostic::error(
        codes::check::DUPLICATE_JOB_NAME,
        format!("duplicate {kind} name `{name}`"),
        span,
        "this name is taken",
    )
    .with_related(first, related)
    .with_help(help)
}

/// Reports job and service names used more than once across files (each file is checked on its
/// own first, and reports its own duplicates).
pub fn check_unique_job_names<'a>(
    jobs: impl IntoIterator<Item = &'a Job>,
    services: impl IntoIterator<Item = &'a Service>,
) -> Vec<Diagnostic> {
    let mut named: Vec<(&Spanned<String>, &str)> = jobs
        .into_iter()
        .map(|j| (&j.name, "job"))
        .chain(services.into_iter().map(|s| (&s.name, "service")))
        .collect();
    // File then source order, whatever order the two lists came in.
    named.sort_by_key(|(name, _)| name.span);
    let mut seen: BTreeMap<&str, (Span, &str)> = BTreeMap::new();
    let mut diags = Vec::new();
    for (name, kind) in named {
        match seen.get(name.value.as_str()) {
            Some((first, first_kind)) if first.file != name.span.file => {
                diags.push(duplicate_name(
                    &name.value,
                    kind,
                    name.span,
                    *first,
                    first_kind,
                ));
            }
            Some(_) => {}
            None => {
                seen.insert(&name.value, (name.span, kind));
            }
        }
    }
    diags
}

/// The single nested block of kind `name`, reporting duplicates.
fn single_block<'a>(parent: &'a Block, name: &str, diags: &mut Diagnostics) -> Option<&'a Block> {
    let mut found: Option<&Block> = None;
    for block in parent.blocks().filter(|b| b.name.name == name) {
        match found {
            Some(first) => diags.push(duplicate(&block.name, "block", first.name.span)),
            None => found = Some(block),
        }
    }
    found
}

fn missing_block(parent: &Block, name: &str, diags: &mut Diagnostics) {
    diags.push(
        Diagnostic::error(
            codes::check::MISSING_BLOCK,
            format!("missing block `{name}` in `{}`", parent.name.name),
            parent.label.as_ref().map_or(parent.name.span, |l| l.span),
            format!("this {} has no `{name}` block", parent.name.name),
        )
        .with_help(format!(
            "add a `{name} {{ … }}` block; see docs/language.md"
        )),
    );
}

/// What a `job` and a `service` block both start with: its name (the label), `tenant` and
/// `priority`.
struct Header {
    name: Option<Spanned<String>>,
    tenant: Option<Spanned<String>>,
    priority: Priority,
    /// `submit` (jobs only): minutes since 1970-01-01 00:00 UTC.
    submit: Option<Spanned<i64>>,
}

/// Reads the header fields of a `job` or `service` block (`spec` lists the block's own fields).
fn read_header(block: &Block, spec: &BlockSpec, diags: &mut Diagnostics) -> Header {
    let mut fields = read_block(block, spec, diags);
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
    let submit = if spec.fields.contains(&"submit") {
        read_submit(&mut fields)
    } else {
        None
    };
    let name = block
        .label
        .as_ref()
        .map(|l| Spanned::new(l.value.clone(), l.span));
    Header {
        name,
        tenant,
        priority,
        submit,
    }
}

/// `submit = "2026-03-01"` or `"2026-03-01T08:00Z"`: when the job is submitted to the
/// schedule (UTC); a malformed or impossible date is L1007 at the value.
fn read_submit(fields: &mut reader::Fields<'_>) -> Option<Spanned<i64>> {
    let text = fields.string("submit")?;
    match crate::schedule::date::parse_date_time(&text.value) {
        Ok(minutes) => Some(Spanned::new(minutes, text.span)),
        Err(problem) => {
            fields.diags.push(
                Diagnostic::error(
                    codes::check::WRONG_KIND,
                    format!("`submit` must be a UTC date or date-time: {problem}"),
                    text.span,
                    "not a date",
                )
                .with_help("write e.g. submit = \"2026-03-01\" or \"2026-03-01T08:00Z\" (UTC)"),
            );
            None
        }
    }
}

fn check_job(block: &Block, diags: &mut Diagnostics) -> Option<Job> {
    let Header {
        name,
        tenant,
        priority,
        submit,
    } = read_header(block, &JOB, diags);

    let model = required_block(block, "model", diags)
        .and_then(|b| model::check_model(b, &MODEL, &MLA, diags));
    let arch = model.as_ref().map(|m| m.arch);
    let train =
        required_block(block, "train", diags).and_then(|b| train::check_train(b, arch, diags));
    let resources =
        required_block(block, "resources", diags).and_then(|b| check_resources(b, diags));
    let parallel = single_block(block, "parallel", diags)
        .map(|b| parallel::read_parallel(b, &PARALLEL, diags))
        .unwrap_or_default();
    let goal = check_goal(single_block(block, "goal", diags), diags);
    let checkpoint = check_checkpoint(single_block(block, "checkpoint", diags), diags);
    if let Some(name) = &name {
        check_job_name(name, Some(&checkpoint), diags);
    }
    let data = check_data(block, diags);

    if let (Some(model), Some(train)) = (&model, &train) {
        parallel::check_consistency(&parallel, model, train, resources.as_ref(), diags);
    }
    Some(Job {
        name: name?,
        file: block.span.file,
        tenant: tenant?,
        priority,
        submit,
        model: model?,
        train: train?,
        parallel,
        data,
        resources: resources?,
        goal,
        checkpoint,
        span: block.span,
    })
}

/// L1019: the job's name must make a name on every backend ([`names::job_label`], the function
/// the backends use) and, when the spec gives no checkpoint path, name the checkpoint folder
/// `<root>/<job name>` the planner derives ([`CheckpointPath::job_folder`]).
///
/// A service (`checkpoint` is `None`) has no checkpoint folder, only the backends' names.
fn check_job_name(
    name: &Spanned<String>,
    checkpoint: Option<&CheckpointSpec>,
    diags: &mut Diagnostics,
) {
    // A long name is shown cut: the message repeats it, and a 100k-character name would fill
    // the terminal (the label under the name shows where it is).
    let shown = loam_ir::display::bounded(&name.value, 80)
        .escape_debug()
        .to_string();
    let (kind, example) = match checkpoint {
        Some(_) => ("job", "job \"llama3-8b-sft\""),
        None => ("service", "service \"chat-70b\""),
    };
    let help = format!("name the {kind} with letters, digits and `-`, e.g. `{example}`");
    let (message, label, help) = match names::job_label(&name.value) {
        Err(JobNameProblem::Empty) => (
            format!("expected a {kind} name, found an empty string"),
            "no Kubernetes, Slurm or folder name can be made from this",
            help,
        ),
        Err(JobNameProblem::NoLetterOrDigit) => (
            format!("expected a {kind} name with an ASCII letter or digit, found `{shown}`"),
            "no Kubernetes, Slurm or folder name can be made from this",
            help,
        ),
        Err(problem @ JobNameProblem::Hidden(_)) => (
            format!("{kind} name `{shown}` cannot be shown or written safely: {problem}"),
            "tables, logs and scripts would print this character raw",
            help,
        ),
        Ok(_) => match (CheckpointPath::folder_name_problem(&name.value), checkpoint) {
            (Some(problem), Some(checkpoint)) if checkpoint.path.is_none() => (
                format!("job name `{shown}` cannot be a folder name: {problem}"),
                "without a checkpoint `path`, checkpoints go to `<root>/<job name>`",
                "rename the job, or set `path` in its `checkpoint` block to a folder below the tenant's root".to_string(),
            ),
            _ => return,
        },
    };
    diags.push(
        Diagnostic::error(codes::check::INVALID_JOB_NAME, message, name.span, label)
            .with_help(help),
    );
}

fn required_block<'a>(parent: &'a Block, name: &str, diags: &mut Diagnostics) -> Option<&'a Block> {
    let found = single_block(parent, name, diags);
    if found.is_none() {
        missing_block(parent, name, diags);
    }
    found
}

fn check_resources(block: &Block, diags: &mut Diagnostics) -> Option<ResourcesSpec> {
    let mut f = read_block(block, &RESOURCES, diags);
    let pool = f.name("pool");
    let pool = f.require("pool", pool, "xirang");
    let devices = f.some_names("devices");
    let sites = f.some_names("sites");
    let max_devices = f.integer("max_devices", 1, MAX_DIM, false);
    let interruptible = f.boolean("interruptible").is_some_and(|b| b.value);
    let features = f.names("features");
    let software = f.strings("software");
    let max_latency = f.quantity("max_latency", &Dimension::Duration, ranges::MAX_LATENCY);
    Some(ResourcesSpec {
        pool: pool?,
        devices,
        sites,
        max_devices,
        interruptible,
        features,
        software,
        max_latency,
        span: block.span,
    })
}

fn check_goal(block: Option<&Block>, diags: &mut Diagnostics) -> GoalSpec {
    let Some(block) = block else {
        return GoalSpec {
            optimize: Optimize::Balanced,
            deadline: None,
            budget: None,
            span: None,
        };
    };
    let mut f = read_block(block, &GOAL, diags);
    let optimize = f
        .keyword(
            "optimize",
            Optimize::from_keyword,
            &Optimize::keywords(),
            false,
        )
        .map_or(Optimize::Balanced, |o| o.value);
    let deadline = f.quantity("deadline", &Dimension::Duration, ranges::DEADLINE);
    let budget = f.money("budget");
    GoalSpec {
        optimize,
        deadline,
        budget,
        span: Some(block.span),
    }
}

fn check_checkpoint(block: Option<&Block>, diags: &mut Diagnostics) -> CheckpointSpec {
    let Some(block) = block else {
        return CheckpointSpec::default();
    };
    let mut f = read_block(block, &CHECKPOINT, diags);
    let path = f.string("path");
    let interval = match f.get("interval") {
        Some(a) if reader::is_auto(&a.value) => None,
        _ => f.quantity(
            "interval",
            &Dimension::Duration,
            ranges::CHECKPOINT_INTERVAL,
        ),
    };
    if let Some(path) = &path
        && let Err(problem) = CheckpointPath::parse(&path.value)
    {
        f.diags.push(
                Diagnostic::error(codes::check::INVALID_CHECKPOINT_PATH, format!("invalid checkpoint path: {problem}"), path.span, problem.to_string())
                    .with_help("write an absolute path below your tenant's checkpoint root, e.g. \"/ckpt/nlp/run-1\""),
            );
    }
    CheckpointSpec {
        path,
        interval,
        span: Some(block.span),
    }
}

fn check_data(job: &Block, diags: &mut Diagnostics) -> Vec<DataSpec> {
    let mut data: Vec<DataSpec> = Vec::new();
    for block in job.blocks().filter(|b| b.name.name == "data") {
        let mut f = read_block(block, &DATA, diags);
        let site = f.name("site");
        let site = f.require("site", site, "guiyang");
        let size = f.quantity("size", &Dimension::Bytes, ranges::DATA_SIZE);
        let size = f.require("size", size, "48TB");
        drop(f);
        let Some(label) = &block.label else { continue };
        if let Some(first) = data.iter().find(|d| d.name.value == label.value) {
            let name = crate::syntax::ast::Ident {
                name: label.value.clone(),
                span: label.span,
            };
            diags.push(duplicate(&name, "data set", first.name.span));
            continue;
        }
        if let (Some(site), Some(size)) = (site, size) {
            data.push(DataSpec {
                name: Spanned::new(label.value.clone(), label.span),
                site,
                size,
                span: block.span,
            });
        }
    }
    data
}
