//! Slurm: one batch script per job. One device group is a plain job; several are a heterogeneous
//! job, one component per group. The target Slurm release decides which options appear. A run
//! longer than its partitions' MaxTime runs in time chunks: each allocation ends with a
//! checkpoint and the script requeues itself (`chunks`); every task runs the trainer contract's
//! wrapper through `task::TASK`.

mod chunks;
pub mod service;
mod task;

pub use chunks::STOP_MARGIN_S;
pub use task::TASK;

use crate::change::{self, Effect, Reason};
use crate::contract::WRAPPER;
use crate::env::{render_one, template_error};
use crate::escape::is_plain_word;
use crate::job::{Group, JobContext, error};
use crate::service::ServiceContext;
use crate::window::{self, Window};
use crate::{Backend, Manifest, Options, env};
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diagnostics::codes;
use minijinja::Value;
use serde::Serialize;
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// The Slurm backend: one batch script per job and per service role.
pub struct Slurm;

impl Backend for Slurm {
    fn name(&self) -> &'static str {
        "slurm"
    }

    fn summary(&self) -> &'static str {
        "One batch script per job; heterogeneous jobs for several device groups"
    }

    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "slurm/job.sbatch.j2",
                include_str!("../templates/slurm/job.sbatch.j2"),
            ),
            (
                "slurm/service.sbatch.j2",
                include_str!("../templates/slurm/service.sbatch.j2"),
            ),
        ]
    }

    fn render_job(
        &self,
        job: &JobContext<'_>,
        options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
        render(job, options)
    }

    fn render_service(
        &self,
        service: &ServiceContext<'_>,
        _options: &Options,
    ) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
        service::render(service)
    }

    fn probe_log(&self) -> &'static str {
        "the batch job's output, `loam-<job>-probe-<jobid>.out` in the folder `sbatch` ran in"
    }

    /// A submitted batch script is fixed: any change to what it runs (comments aside) means
    /// cancel and resubmit.
    fn classify(&self, file: &str, shared: bool, old: &str, new: &str) -> Vec<Reason> {
        let reason = if shared {
            change::shared_script(file, old, new)
        } else {
            change::script(
                file,
                old,
                new,
                Effect::Replace,
                "a submitted batch script is fixed: cancel and resubmit",
            )
        };
        reason.into_iter().collect()
    }
}

/// The least training an allocation must have before the window closes for it to start: five
/// minutes, so a checkpoint's worth of work is not traded for a restart.
const WINDOW_MIN_RUN_S: u64 = 300;

/// How long a requeued job waits before it can start again: Slurm's default credential lifetime
/// (`AuthInfo=cred_expire`), and a minute of scheduling.
const REQUEUE_WAIT_S: u64 = 180;

/// How often the script tries a Slurm command that may fail for a moment (reading its own state,
/// requeueing itself), and the pause between tries: counted, so that a slurmctld restart or an
/// RPC timeout of a few seconds (`MessageTimeout`, 10 s by default in slurm.conf(5)) is outlived
/// and a cancelled job still ends within half a minute.
pub(crate) const SLURM_TRIES: u64 = 3;
/// Seconds between two tries (see [`SLURM_TRIES`]).
pub(crate) const SLURM_RETRY_S: u64 = 5;

/// A Slurm release, `major.minor` (`22.05`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlurmVersion {
    /// Year of the release.
    pub major: u32,
    /// Month of the release.
    pub minor: u32,
}

impl SlurmVersion {
    /// What the tests run (Debian 12): 22.05.
    pub const DEFAULT: SlurmVersion = SlurmVersion {
        major: 22,
        minor: 5,
    };
    /// The oldest release loam writes for: heterogeneous jobs appeared in 17.11.
    pub const OLDEST: SlurmVersion = SlurmVersion {
        major: 17,
        minor: 11,
    };
    /// `hetjob` and `--het-group` replaced `packjob` and `--pack-group` in 20.02.
    const HETJOB: SlurmVersion = SlurmVersion {
        major: 20,
        minor: 2,
    };
}

impl fmt::Display for SlurmVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{:02}", self.major, self.minor)
    }
}

impl FromStr for SlurmVersion {
    type Err = String;

    /// Reads `22.05`, `22.05.8` or `23.11`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut parts = s.split('.');
        let number = |p: Option<&str>| p.and_then(|p| p.parse::<u32>().ok());
        match (number(parts.next()), number(parts.next())) {
            (Some(major), Some(minor)) if (1..=12).contains(&minor) => {
                Ok(SlurmVersion { major, minor })
            }
            _ => Err(format!(
                "invalid Slurm version `{s}`, expected `major.minor` such as `22.05`"
            )),
        }
    }
}

/// One heterogeneous-job component (or the only one).
#[derive(Serialize)]
struct Component {
    /// `#SBATCH` options of this component, one per line.
    options: Vec<String>,
    /// `srun` options of this component (`--cpus-per-task`, pyxis' `--container-image`),
    /// shell-quoted.
    srun: Vec<String>,
    /// Whether its tasks run in a container (pyxis mounts the checkpoint folder).
    container: bool,
    /// Environment of its tasks: `NAME=value` words (values are numbers).
    env: Vec<String>,
    /// The collective library's settings from the catalogue: `NAME=value`, shell-quoted.
    collective_env: Vec<String>,
    /// The trainer command and this group's own layout arguments, one word each.
    trainer_args: Vec<String>,
}

#[derive(Serialize)]
struct ScriptContext<'a> {
    job: &'a JobContext<'a>,
    version: String,
    common: Vec<String>,
    components: Vec<Component>,
    separator: &'static str,
    het_flag: &'static str,
    time_limit: String,
    /// The partitions' MaxTime in minutes, when the run is cut into time chunks.
    max_time_min: Option<u64>,
    /// Allocations the predicted training time needs.
    chunks: u64,
    /// Seconds before the time limit that the script gets SIGUSR1.
    signal_s: u64,
    /// Requeues the script allows itself.
    max_requeues: u64,
    /// The trainer contract's wrapper (a constant).
    wrapper: &'static str,
    /// What each task runs around the wrapper (a constant).
    task: &'static str,
    /// Whether any component runs in a container (pyxis mounts the checkpoint folder).
    containers: bool,
    /// The cheap-hours window the allocations keep, when the plan has one.
    window: Option<Window>,
    /// Seconds of training an allocation must have left in the window to start, besides the
    /// signal's lead.
    window_min_run_s: u64,
    /// Seconds a requeued job waits before its next allocation starts (Slurm's credential
    /// lifetime, 120 s by default), added when the script decides whether to wait for the next
    /// opening.
    requeue_wait_s: u64,
    /// Tries of a Slurm command that may fail for a moment.
    slurm_tries: u64,
    /// Seconds between those tries.
    slurm_retry_s: u64,
}

/// The `#SBATCH` options of group `g`, or the problems that keep it from being one.
fn component_options(job: &JobContext<'_>, g: &Group<'_>) -> Result<Vec<String>, Box<Diagnostic>> {
    let Some(partition) = &g.ir.slurm_partition else {
        return Err(Box::new(error(
            codes::emit::NO_SLURM_PARTITION,
            format!(
                "group {} of job `{}` (node group `{}`) has no Slurm partition",
                g.index, job.job, g.ir.node_group
            ),
            "give the node group a `slurm_partition` in the catalogue",
        )));
    };
    let node = g.ir.node.clone().unwrap_or_default();
    if let Some(bad) = node.slurm_features.iter().find(|f| !is_plain_word(f)) {
        return Err(Box::new(error(
            codes::emit::UNUSABLE_NAME,
            format!(
                "Slurm feature `{}` of node group `{}` (job `{}`) cannot be a constraint",
                bad.escape_debug(),
                g.ir.node_group,
                job.job
            ),
            "use letters, digits, `-`, `_` and `.` in Slurm features",
        )));
    }
    let gres = g.slurm_gres.as_str();
    let mut opts = vec![
        format!("--partition={partition}"),
        format!("--nodes={}", g.ir.nodes),
        "--ntasks-per-node=1".to_string(),
    ];
    match &g.ir.slice {
        // A slice shares its device with other jobs: one MIG/vNPU instance as a typed GRES
        // (`gpu:1g.10gb:1`, the type Slurm's NVML autodetection gives MIG devices), no
        // `--exclusive`.
        Some(slice) => opts.push(format!("--gres={gres}:{slice}:1")),
        // The catalogue's GRES name, for every vendor: `gpu` for NVIDIA and AMD, `npu` for
        // Ascend, and for Gaudi whatever the site's gres.conf names its HPUs (the Intel vendor
        // file's `slurm_gres`). Not `--gpus-per-node`, which asks for the `gpu` GRES whatever the
        // catalogue says.
        None => {
            opts.push(format!("--gres={gres}:{}", g.ir.devices_per_node));
            opts.push("--exclusive".to_string());
        }
    }
    // Only the features the catalogue declares: a constraint on a feature no node has makes
    // the job unschedulable.
    if !node.slurm_features.is_empty() {
        opts.push(format!("--constraint={}", node.slurm_features.join("&")));
    }
    if g.ir.block.is_some() {
        opts.push("--switches=1".to_string());
    }
    // The plan's CPUs for the node's one task: without it a task gets one CPU, and the trainer's
    // data loaders share it (the newcomer's review, section 5, on the service scripts).
    if node.cpus > 0 {
        opts.push(format!("--cpus-per-task={}", node.cpus));
    }
    Ok(opts)
}

/// L4011 when the plan's groups are at more than one site: a heterogeneous job runs on one
/// cluster.
fn one_site(job: &JobContext<'_>) -> Option<Diagnostic> {
    let sites: BTreeSet<&str> = job.groups.iter().map(|g| g.ir.site.as_str()).collect();
    if sites.len() < 2 {
        return None;
    }
    let names: Vec<String> = sites
        .iter()
        .map(|s| format!("`{}`", s.escape_debug()))
        .collect();
    let (last, rest) = names.split_last()?;
    Some(error(
        codes::emit::SLURM_JOB_SPANS_SITES,
        format!(
            "job `{}` spans sites {} and {last}: a Slurm heterogeneous job runs on one cluster",
            job.job,
            rest.join(", ")
        ),
        "give the job one site (`resources { sites = [...] }`), or emit it for Kubernetes or bare metal, which start every group together",
    ))
}

/// Renders the batch script of one job.
pub fn render(job: &JobContext<'_>, options: &Options) -> Result<Vec<Manifest>, Vec<Diagnostic>> {
    let version = options.slurm_version;
    let mut errors = Vec::new();
    if version < SlurmVersion::OLDEST {
        errors.push(error(
            codes::emit::UNSUPPORTED_SLURM_VERSION,
            format!(
                "Slurm {version} is too old, loam writes scripts for {} and newer",
                SlurmVersion::OLDEST
            ),
            "pass `--slurm-version` with the release your cluster runs (17.11 or newer)",
        ));
    }
    errors.extend(one_site(job));
    let mut components = Vec::new();
    let mut containers = false;
    for g in &job.groups {
        let opts = match component_options(job, g) {
            Ok(opts) => opts,
            Err(e) => {
                errors.push(*e);
                continue;
            }
        };
        let node = g.ir.node.clone().unwrap_or_default();
        let mut srun = Vec::new();
        // srun does not inherit sbatch's `--cpus-per-task` since Slurm 22.05 (srun(1)).
        if node.cpus > 0 {
            srun.push(format!("--cpus-per-task={}", node.cpus));
        }
        if node.slurm_containers {
            containers = true;
            srun.push(format!("--container-image={}", options.image));
        }
        components.push(Component {
            options: opts,
            srun,
            container: node.slurm_containers,
            env: vec![
                format!("NPROC_PER_NODE={}", g.ir.devices_per_node),
                format!("NODE_RANK_OFFSET={}", g.node_rank_offset),
                // The component's first rank: each task adds its own nodes before it (`TASK`).
                format!("GROUP_RANK_OFFSET={}", g.rank_offset),
                format!("LOAM_GROUP={}", g.index),
            ],
            collective_env: g.env.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            trainer_args: g.trainer_args.clone(),
        });
    }
    if containers && job.checkpoint_path.contains([',', ':']) {
        // pyxis reads `--container-mounts` as `SRC:DST[,SRC:DST]`.
        errors.push(error(
            codes::emit::UNUSABLE_NAME,
            format!(
                "checkpoint path `{}` of job `{}` cannot be mounted into a pyxis container",
                job.checkpoint_path.escape_debug(),
                job.job
            ),
            "write checkpoints to a path without `,` and `:`",
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let window = window::window(job);
    let chunks = chunks::chunks(job, window.as_ref());
    let time = chunks::format_limit(chunks.limit_min);
    let mut common = vec![
        format!("--account={}", job.tenancy.slurm_account),
        format!("--time={time}"),
    ];
    if let Some(qos) = &job.tenancy.slurm_qos {
        common.push(format!("--qos={qos}"));
    }
    // The first allocation waits for the window's next opening; every component, since each
    // has its own begin time.
    if let Some(w) = &window {
        common.push(format!("--begin={}", w.begin));
    }
    let old = version < SlurmVersion::HETJOB;
    let ctx = ScriptContext {
        job,
        version: version.to_string(),
        common,
        components,
        separator: if old { "packjob" } else { "hetjob" },
        het_flag: if old { "--pack-group" } else { "--het-group" },
        time_limit: time,
        max_time_min: chunks.max_time_min,
        chunks: chunks.count,
        signal_s: chunks.signal_s,
        max_requeues: chunks.max_requeues,
        wrapper: WRAPPER,
        task: TASK,
        containers,
        window,
        window_min_run_s: WINDOW_MIN_RUN_S,
        requeue_wait_s: REQUEUE_WAIT_S,
        slurm_tries: SLURM_TRIES,
        slurm_retry_s: SLURM_RETRY_S,
    };
    let env = env::environment().map_err(|e| vec![template_error(&job.job, &e)])?;
    let contents = render_one(env, job, "slurm/job.sbatch.j2", Value::from_serialize(&ctx))?;
    Ok(vec![Manifest {
        path: "job.sbatch".to_string(),
        contents,
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_and_order() {
        assert_eq!("22.05".parse(), Ok(SlurmVersion::DEFAULT));
        assert_eq!("22.05.8".parse(), Ok(SlurmVersion::DEFAULT));
        assert!("23.11".parse::<SlurmVersion>().unwrap() > SlurmVersion::DEFAULT);
        assert!("22".parse::<SlurmVersion>().is_err());
        assert!("22.13".parse::<SlurmVersion>().is_err());
        assert_eq!(SlurmVersion::DEFAULT.to_string(), "22.05");
    }
}
