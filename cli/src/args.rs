//! The command line, declared with clap; doc comments are the help text.

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use loam_backends::Target;
use std::path::PathBuf;

/// loam: a compiler for AI-job specs.
///
/// It checks job specs (`*.loam`) against a hardware catalogue, plans where and how each job runs
/// on a heterogeneous accelerator pool, and writes the manifests that run it.
#[derive(Debug, Parser)]
#[command(name = "loam", version, propagate_version = true)]
pub struct Cli {
    /// When to colour output.
    #[arg(long, value_enum, default_value_t = Color::Auto, global = true)]
    pub color: Color,

    /// The catalogue folder (`devices/`, `pools/`); default: `./specs` if present, else the
    /// catalogue built into loam.
    #[arg(long, global = true, value_name = "DIR")]
    pub catalogue: Option<PathBuf>,

    /// The command to run.
    #[command(subcommand)]
    pub command: Command,
}

/// When to colour output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Color {
    /// Colour when writing to a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// Output format of diagnostics and reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Human-readable text.
    Text,
    /// One JSON document.
    Json,
}

/// loam's commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Parse and type-check job specs (files, or folders searched for `*.loam`).
    #[command(visible_alias = "validate")]
    Check(CheckArgs),
    /// Rewrite job specs in the canonical layout.
    Fmt(FmtArgs),
    /// Print the explanation of a diagnostic code, e.g. `loam explain L1002`.
    Explain(ExplainArgs),
    /// Print shell completions.
    Completions(CompletionsArgs),
    /// Show what the catalogue holds: `list` the devices, or `show` a device, site or pool.
    Catalogue(CatalogueArgs),
    /// Plan each job: where, split how, how long, at what cost, and why.
    Plan(PlanArgs),
    /// Run every job together on its pools over weeks: starts, waits, preemptions, deadlines.
    Schedule(crate::commands::schedule::ScheduleArgs),
    /// Compare predicted with measured throughput of published training runs (a CSV).
    Calibrate(CalibrateArgs),
    /// Read measured figures from training logs and serving-benchmark results.
    Runs(RunsArgs),
    /// Write the manifests that run each job: Kubernetes, Slurm or bare metal.
    Emit(EmitArgs),
    /// Plan the specs at two git revisions and show what changes, like `terraform plan`.
    Diff(DiffArgs),
    /// Write one self-contained HTML page of the plans (or, with `--base`, of the plan diff).
    Report(ReportArgs),
    /// Print the JSON Schema of the plan (`loam plan --format json`).
    Schema,
    /// Serve the Language Server Protocol on standard input and output, for editors
    /// (docs/editors.md).
    Lsp,
}

/// Arguments of `loam check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Files or folders to check; folders are searched for `*.loam` recursively. Default: `.`.
    pub paths: Vec<PathBuf>,
    /// Output format of diagnostics.
    #[arg(long, value_enum, default_value_t = CheckFormat::Text)]
    pub format: CheckFormat,
}

/// Output format of `loam check`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CheckFormat {
    /// Human-readable text.
    Text,
    /// One JSON document.
    Json,
    /// GitHub Actions workflow annotations (`::error file=…,line=…::message`).
    Github,
}

/// Arguments of `loam fmt`.
#[derive(Debug, Args)]
pub struct FmtArgs {
    /// Files or folders to format; `-` reads standard input and writes standard output.
    /// Default: `.`.
    pub paths: Vec<PathBuf>,
    /// Write nothing; exit 1 and list the files that are not formatted.
    #[arg(long)]
    pub check: bool,
    /// Write nothing; print a unified diff of what would change (exit 1 when something would).
    #[arg(long)]
    pub diff: bool,
    /// Read standard input and write the formatted text to standard output.
    #[arg(long)]
    pub stdin: bool,
}

/// Arguments of `loam explain`.
#[derive(Debug, Args)]
pub struct ExplainArgs {
    /// A diagnostic code such as `L1002`.
    pub code: String,
}

/// Arguments of `loam completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Output format of `loam plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PlanFormat {
    /// Aligned text for people.
    Table,
    /// The Plan JSON contract (keys sorted).
    Json,
    /// Markdown, for pull-request comments.
    Markdown,
    /// One self-contained HTML page with figures, as `loam report` writes it.
    Html,
}

/// Arguments of `loam plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// Files or folders to plan; folders are searched for `*.loam` recursively. Default: `.`.
    pub paths: Vec<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = PlanFormat::Table)]
    pub format: PlanFormat,
    /// Keep plans in this folder and reuse them while a job's spec and catalogue inputs are
    /// unchanged (docs/gitops.md, "Cache"); default: `$LOAM_CACHE_DIR`, no cache when unset.
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
    /// Show every warning in full; without it, more than three warnings are folded into a
    /// count per code after the plans (errors are always shown in full).
    #[arg(long)]
    pub verbose: bool,
}

/// Arguments of `loam calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// A CSV with the columns of `tests/data/training_runs_calibration.csv`, or of
    /// `tests/data/hetero_runs_calibration.csv` (runs that mix device types), told apart by its
    /// header. Not with `--fit`.
    #[arg(required_unless_present = "fit", conflicts_with = "fit")]
    pub csv: Option<PathBuf>,
    /// Refit the cost model's fitted constants with each source family left out in turn and
    /// report the error on the family left out.
    #[arg(long)]
    pub cross_validate: bool,
    /// Fit the runs store (`<catalogue>/runs/<site>/*.csv`) per site and device and write each
    /// site's factors to `<catalogue>/calibration/<pool>-<site>.yaml`, which plans apply.
    #[arg(long, conflicts_with = "cross_validate")]
    pub fit: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

/// Arguments of `loam runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: RunsCommand,
}

/// `loam runs ingest LOG…` and `loam runs check PLAN.json`.
#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// One row per log: the steady figure of a training log (Megatron-LM or NeMo, torchtitan,
    /// DeepSpeed's throughput timer or flops profiler summary, the Hugging Face Trainer, PyTorch
    /// Lightning's `metrics.csv`, TensorBoard event file or Weights & Biases run file; warm-up,
    /// checkpoint and evaluation intervals left out), or the throughput and latencies of a vLLM
    /// or SGLang serving benchmark's JSON; with `--plan`, what ran and the plan's prediction.
    Ingest {
        /// Log files: training logs as the trainer printed them (a TensorBoard event file or a
        /// W&B run file as written), or benchmark result JSON.
        #[arg(required = true)]
        logs: Vec<PathBuf>,
        /// The job's Plan JSON (`loam plan --format json`): what ran, and its predicted step.
        #[arg(long)]
        plan: Option<PathBuf>,
        /// The job in the Plan JSON, when it plans several.
        #[arg(long)]
        job: Option<String>,
        /// Append each training run to the runs store, `<catalogue>/runs/<site>/runs.csv`
        /// (needs `--plan`; the job's spec is read from the path the plan names).
        #[arg(long, requires = "plan")]
        append: bool,
        /// The day the appended rows are dated, `YYYY-MM-DD` (default: today, UTC).
        #[arg(long, requires = "append")]
        date: Option<String>,
        /// The serving engine's version (`0.6.3`), for a benchmark result that does not state
        /// it (vLLM's `--metadata version=…` does); it replaces a stated one.
        #[arg(long, value_name = "VERSION")]
        engine_version: Option<String>,
        /// Output format: CSV rows (text) or one JSON document.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// Compare every run of the runs store with the plan its job has now: a run measured outside
    /// the plan's stated uncertainty (at least ±10 %) is flagged with the plan it contradicts;
    /// exit 1 when any is.
    Check {
        /// The Plan JSON of the jobs (`loam plan --format json`).
        plan: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
}

/// Arguments of `loam catalogue`.
#[derive(Debug, Args)]
pub struct CatalogueArgs {
    /// What to show.
    #[command(subcommand)]
    pub command: CatalogueCommand,
}

/// `loam catalogue list` or `loam catalogue show ID`.
#[derive(Debug, Subcommand)]
pub enum CatalogueCommand {
    /// A table of the devices: vendor, status (`~` marks estimates), memory, bf16 TFLOP/s and
    /// where they are.
    List {
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
    /// One device, pool or site (`site` or `pool/site`) in detail.
    Show {
        /// A device id (`H100_SXM`), a pool id (`xirang`) or a site (`guiyang`, `xirang/guiyang`).
        id: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
        format: OutputFormat,
    },
}

/// Arguments of `loam emit`.
#[derive(Debug, Args)]
pub struct EmitArgs {
    /// A spec file or folder (planned first), or a plan JSON file (`loam plan --format json`).
    pub path: PathBuf,
    /// Which system the manifests are for.
    #[arg(long, value_parser = backend_parser())]
    pub backend: Target,
    /// Kubernetes flavour: `jobset` (JobSet + Kueue, the default) or `volcano`.
    #[arg(long, value_enum)]
    pub flavor: Option<EmitFlavor>,
    /// The Slurm release the scripts must run on (`major.minor`).
    #[arg(long, default_value = "22.05", value_name = "VERSION")]
    pub slurm_version: String,
    /// The trainer's container image (Kubernetes).
    #[arg(long)]
    pub image: Option<String>,
    /// The trainer command, split on spaces; the layout arguments follow it. Default: `loam-train`.
    #[arg(long, value_name = "COMMAND")]
    pub trainer: Option<String>,
    /// The storage class of each tenant's checkpoint volume (Kubernetes; it must offer
    /// ReadWriteMany). Default: the cluster's default class.
    #[arg(long, value_name = "CLASS")]
    pub checkpoint_storage_class: Option<String>,
    /// The networks allowed to reach the rendezvous load balancer of a plan over several sites,
    /// comma-separated CIDRs (the other sites' pod and node networks). Default: open.
    #[arg(long, value_name = "CIDRS")]
    pub rendezvous_source_ranges: Option<String>,
    /// The serving engines' container image for every service (Kubernetes), replacing the
    /// image the vendor's file gives the engine (`vendors/<id>.yaml`, `serving.images`).
    #[arg(long, value_name = "IMAGE")]
    pub serving_image: Option<String>,
    /// The image of the cheap-hours window's CronJobs (Kubernetes), which needs `sh` and
    /// `kubectl`: a mirror for sites that cannot pull from docker.io. Default:
    /// docker.io/alpine/k8s:1.33.0.
    #[arg(long, value_name = "IMAGE")]
    pub window_image: Option<String>,
    /// Write only a probe of this job: a short run of its layout on its node groups (a few
    /// hundred steps, no periodic checkpoint), named `<job>-probe`, whose log
    /// `loam runs ingest` reads back (docs/calibration.md, "The probe job").
    #[arg(long, value_name = "JOB")]
    pub probe: Option<String>,
    /// Steps of the probe. Default: as many as take an hour, at least 40 and at most 200.
    #[arg(long, value_name = "STEPS", requires = "probe",
          value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub probe_steps: Option<u64>,
    /// The folder to write; replaced as a whole, only if empty or written by `loam emit` and
    /// unchanged since (its `.loam-emit` lists every file and its SHA-256).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Replace an `--out` folder written by `loam emit` even when files were added to it or
    /// edited since (a folder without loam's marker is never replaced).
    #[arg(long)]
    pub force: bool,
}

/// The backends' names, each with its summary: the registry's (`loam_backends::backend`), so a
/// new backend is a value of `--backend` and `--manifests` without a change here.
fn backend_values() -> impl Iterator<Item = PossibleValue> {
    Target::ALL
        .iter()
        .map(|t| PossibleValue::new(t.name()).help(t.backend().summary()))
}

/// `--backend`: one of the registry's backends.
fn backend_parser() -> impl TypedValueParser<Value = Target> {
    PossibleValuesParser::new(backend_values())
        .try_map(|name| Target::from_name(&name).ok_or("not a backend"))
}

/// Kubernetes flavour of `loam emit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EmitFlavor {
    /// JobSet + Kueue.
    Jobset,
    /// Volcano Job + Queue.
    Volcano,
}

/// Output format of `loam diff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffFormat {
    /// Terraform-style text: a legend, one block per changed job, a summary line.
    Text,
    /// Markdown for a pull-request comment: summary table first, details folded.
    Markdown,
    /// One JSON document (versioned, keys sorted).
    Json,
    /// GitHub Actions annotations for the diagnostics, then the text.
    Github,
    /// One self-contained HTML page with figures, as `loam report --base` writes it.
    Html,
}

/// Whose manifests `loam diff` compares: a backend's, or none (`none`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffManifests(pub Option<Target>);

/// `--manifests`: one of the registry's backends, or `none`.
fn manifests_parser() -> impl TypedValueParser<Value = DiffManifests> {
    let none = PossibleValue::new("none").help("No manifest diff");
    PossibleValuesParser::new(backend_values().chain([none]))
        .map(|name| DiffManifests(Target::from_name(&name)))
}

/// Arguments of `loam diff`.
#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Files or folders of specs to compare (`*.loam`, searched recursively). Default: the whole
    /// repository.
    pub paths: Vec<PathBuf>,
    /// The revision compared against: a branch, tag, commit or `HEAD~1`.
    #[arg(long, default_value = "HEAD", value_name = "REV")]
    pub base: String,
    /// The revision to compare; default: the work tree.
    #[arg(long, value_name = "REV", conflicts_with = "worktree")]
    pub head: Option<String>,
    /// Compare the work tree (the default).
    #[arg(long)]
    pub worktree: bool,
    /// Exit 0 when nothing changes, 2 when something does, 1 on errors (as
    /// `terraform plan -detailed-exitcode`).
    #[arg(long)]
    pub detailed_exitcode: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = DiffFormat::Text)]
    pub format: DiffFormat,
    /// Whose manifests to diff for changed jobs.
    #[arg(long, value_parser = manifests_parser(), default_value = loam_diff::DEFAULT_BACKEND.name())]
    pub manifests: DiffManifests,
    /// Keep plans in this folder and reuse them while a job's spec and catalogue inputs are
    /// unchanged (docs/gitops.md, "Cache"); default: `$LOAM_CACHE_DIR`, no cache when unset.
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
}

/// Arguments of `loam report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Files or folders of specs; folders are searched for `*.loam` recursively. Default: `.`
    /// (with `--base`: the whole repository).
    pub paths: Vec<PathBuf>,
    /// Write the page to this file (its folder must exist); default: standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Show the plan diff against this revision (a branch, tag, commit or `HEAD~1`), as
    /// `loam diff --base REV` computes it, instead of the plans.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// With `--base`: the revision to compare; default: the work tree.
    #[arg(
        long,
        value_name = "REV",
        requires = "base",
        conflicts_with = "worktree"
    )]
    pub head: Option<String>,
    /// With `--base`: compare the work tree (the default).
    #[arg(long, requires = "base")]
    pub worktree: bool,
    /// Keep plans in this folder and reuse them while a job's spec and catalogue inputs are
    /// unchanged (docs/gitops.md, "Cache"); default: `$LOAM_CACHE_DIR`, no cache when unset.
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,
}
