//! What every target needs from a plan, checked once: names, the tenant's places, the groups with
//! their rank offsets, the trainer's arguments and the plan JSON.
//!
//! A plan that cannot be emitted (infeasible, incomplete, a checkpoint outside the tenant's root,
//! a name no backend can carry) is reported here with every problem at once.

use crate::Options;
use crate::escape::{is_label_key, is_label_value, is_plain_word, json_ascii};
use crate::refuse::{self, Workload};
use loam_ir::checkpoint::{CheckpointPath, RootProblem};
use loam_ir::cluster::Tenancy;
use loam_ir::cluster::vendor::RankTable;
use loam_ir::diagnostics::Diagnostic;
use loam_ir::diagnostics::codes;
use loam_ir::names::{self, is_dns_label, is_env_name, slug};
use loam_ir::plan::{GroupIr, LayoutIr, NodeShape, Plan, PlanDocument, ScheduleIr};
use loam_ir::types::{Hetero, Recompute};
use serde::Serialize;

/// An emit error: emit diagnostics point at no source text (the plan is generated data).
pub use crate::refuse::error;

/// One device group of the plan and what the launchers derive from it; the group's own facts
/// (device, site, nodes, labels, partition …) are read from the Plan IR's [`GroupIr`].
#[derive(Debug, Clone, Serialize)]
pub struct Group<'a> {
    /// Index in the plan.
    pub index: usize,
    /// Short DNS label, e.g. `g0-h100-sxm`.
    pub name: String,
    /// Node rank of this group's first node.
    pub node_rank_offset: u64,
    /// Global rank of this group's first device.
    pub rank_offset: u64,
    /// The group as planned.
    pub ir: &'a GroupIr,
    /// The trainer command and this group's layout arguments, one word each (each target adds
    /// `--plan=<where the plan JSON is>`): its own tensor, data and micro-batch degrees in a
    /// plan over two groups; their product (with the group's pipeline stages and context) is the
    /// group's device count.
    pub trainer_args: Vec<String>,
    /// This group's environment beyond the rendezvous: the collective library's settings from
    /// the catalogue, sorted by name (values are checked to be plain words or escaped per
    /// target).
    pub env: Vec<(String, String)>,
    /// The collective library (`nccl`, `rccl`, `hccl`).
    pub collective: String,
    /// The rank table the library reads, from the group's vendor (Ascend's `hccl.json`);
    /// `None` when its ranks meet at the rendezvous alone. The library's name does not say:
    /// Ascend and Gaudi both call theirs HCCL.
    pub rank_table: Option<RankTable>,
    /// The Slurm generic resource the group's devices are (`gpu`, `npu`, `dcu`), from its vendor.
    pub slurm_gres: String,
    /// The Kubernetes resource a pod requests ([`crate::vendors::device_resource`]).
    pub device_resource: String,
}

/// Everything common to the targets for one plan.
#[derive(Debug, Clone, Serialize)]
pub struct JobContext<'a> {
    /// The job's name as written in the spec (escape it!).
    pub job: String,
    /// The spec file.
    pub file: String,
    /// DNS-1123 name of the job's objects and folder ([`names::job_label`]).
    pub name: String,
    /// Tenant name as written.
    pub tenant: String,
    /// The tenant's places.
    pub tenancy: Tenancy,
    /// Priority keyword.
    pub priority: String,
    /// Whether the job tolerates preemption.
    pub interruptible: bool,
    /// Device groups.
    pub groups: Vec<Group<'a>>,
    /// Total nodes.
    pub nnodes: u64,
    /// Total devices (processes).
    pub world_size: u64,
    /// Checkpoint folder (absolute, under the tenant's root).
    pub checkpoint_path: String,
    /// The checkpoint folder relative to the tenant's root.
    pub checkpoint_subpath: String,
    /// Minutes between checkpoints.
    pub checkpoint_interval_min: f64,
    /// Seconds to write one checkpoint.
    pub checkpoint_write_s: f64,
    /// Predicted training hours.
    pub train_time_h: f64,
    /// The plan (as a one-plan document), pretty JSON in printable ASCII.
    pub plan_json: String,
    /// Restarts allowed after failures: the plan's restart budget (`estimate.goodput`). An
    /// `i32` by type: JobSet's `maxRestarts` and Volcano's `maxRetry` are int32 fields and the
    /// launcher compares it in bash arithmetic, where a larger number wraps.
    pub max_restarts: i32,
    /// Seconds the trainer has between a checkpoint request and SIGTERM (`LOAM_GRACE_S` on every
    /// backend): [`checkpoint_grace_s`].
    pub trainer_grace_s: u64,
    /// Seconds between the stop signal and the kill: the trainer's grace and
    /// [`HARD_LIMIT_MARGIN_S`] (Kubernetes' `terminationGracePeriodSeconds`).
    pub grace_s: u64,
    /// The cheap-hours window of an interruptible plan, when it has one.
    pub schedule: Option<&'a ScheduleIr>,
}

impl<'a> JobContext<'a> {
    /// Checks `plan` and derives the common context, or reports every problem.
    pub fn new(
        doc: &PlanDocument,
        plan: &'a Plan,
        options: &Options,
    ) -> Result<Self, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let job = &plan.job;
        if !plan.feasible {
            errors.push(refuse::infeasible(Workload::Job, job, &plan.reasons));
            return Err(errors);
        }
        let (Some(layout), Some(estimate), Some(checkpoint)) =
            (&plan.layout, &plan.estimate, &plan.checkpoint)
        else {
            errors.push(incomplete(
                job,
                "it has no layout, estimate or checkpoint plan",
            ));
            return Err(errors);
        };
        if plan.groups.is_empty() {
            errors.push(incomplete(job, "it has no device groups"));
        }
        // The checker applies the same rule to the spec (L1019).
        let name = names::job_label(job).unwrap_or_else(|problem| {
            errors.push(error(
                codes::emit::UNUSABLE_NAME,
                format!(
                    "job name `{}` cannot name the job's objects and folder: {problem}",
                    job.escape_debug()
                ),
                "name the job with letters, digits and `-` (`loam check` reports this as L1019)",
            ));
            String::new()
        });
        let tenancy = options.tenancy(&plan.pool, &plan.tenant);
        for (what, value) in [("namespace", &tenancy.namespace), ("queue", &tenancy.queue)] {
            if !is_dns_label(value) {
                errors.push(unusable(job, &format!("tenant {what}"), value));
            }
        }
        if !is_plain_word(&tenancy.slurm_account) {
            errors.push(unusable(job, "Slurm account", &tenancy.slurm_account));
        }
        if let Some(qos) = &tenancy.slurm_qos
            && !is_plain_word(qos)
        {
            errors.push(unusable(job, "Slurm QoS", qos));
        }
        // The same rule as `loam check` (L1018, L2115).
        let checkpoint_subpath = match CheckpointPath::parse(&tenancy.checkpoint_root) {
            Err(problem) => {
                errors.push(error(
                    codes::emit::CHECKPOINT_OUTSIDE_ROOT,
                    format!(
                        "checkpoint root `{}` of tenant `{}` (job `{job}`) is not a clean absolute path: {problem}",
                        tenancy.checkpoint_root.escape_debug(),
                        plan.tenant
                    ),
                    "give the tenant a checkpoint root like `/ckpt/nlp` in the catalogue",
                ));
                String::new()
            }
            Ok(root) => match CheckpointPath::parse(&checkpoint.path)
                .map_err(|_| RootProblem::Outside)
                .and_then(|path| path.relative_to(&root).map(str::to_string))
            {
                Ok(sub) => sub,
                Err(problem) => {
                    let (path, tenant) = (checkpoint.path.escape_debug(), &plan.tenant);
                    let message = match problem {
                        RootProblem::TheRoot => format!(
                            "checkpoint path `{path}` of job `{job}` is tenant `{tenant}`'s root itself, not a folder below it"
                        ),
                        RootProblem::Outside => format!(
                            "checkpoint path `{path}` of job `{job}` is outside tenant `{tenant}`'s root `{root}`"
                        ),
                    };
                    errors.push(error(
                        codes::emit::CHECKPOINT_OUTSIDE_ROOT,
                        message,
                        "write checkpoints below the tenant's checkpoint root, without `..` or `.` segments",
                    ));
                    String::new()
                }
            },
        };
        let mut groups = Vec::new();
        let (mut nnodes, mut world_size) = (0u64, 0u64);
        for (index, g) in plan.groups.iter().enumerate() {
            // The rule the planner places every group by (`NodeShape::place`).
            if !NodeShape::of(g).holds(g.devices) {
                errors.push(incomplete(
                    job,
                    &format!(
                        "group {index} has {} devices on {} nodes of {} devices",
                        g.devices, g.nodes, g.devices_per_node
                    ),
                ));
            }
            if !is_label_key(&g.k8s_resource) {
                errors.push(unusable(job, "device resource", &g.k8s_resource));
            }
            for (k, v) in &g.node_labels {
                if !is_label_key(k) || !is_label_value(v) {
                    errors.push(unusable(job, "node label", &format!("{k}={v}")));
                }
            }
            for (what, value) in [
                ("Slurm partition", &g.slurm_partition),
                ("topology block", &g.block),
                ("slice profile", &g.slice),
            ] {
                if let Some(v) = value
                    && !is_plain_word(v)
                {
                    errors.push(unusable(job, what, v));
                }
            }
            let device_label = slug(&g.device, 9);
            let Some(vendor) = options.vendors.of_group(g) else {
                errors.push(crate::vendors::unknown_vendor(
                    &format!("job `{job}`"),
                    index,
                    g,
                ));
                continue;
            };
            let node = g.node.clone().unwrap_or_default();
            for (k, v) in &node.env {
                if !is_env_name(k) || v.chars().any(char::is_control) {
                    errors.push(unusable(job, "collective setting", &format!("{k}={v}")));
                }
            }
            groups.push(Group {
                index,
                name: format!("g{index}-{device_label}")
                    .trim_end_matches('-')
                    .to_string(),
                node_rank_offset: nnodes,
                rank_offset: world_size,
                ir: g,
                trainer_args: group_trainer_args(plan, g, index, layout, options),
                env: node
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
                collective: if node.collective.is_empty() {
                    vendor.collective.clone()
                } else {
                    node.collective.clone()
                },
                rank_table: vendor.rank_table,
                slurm_gres: vendor.slurm_gres.clone(),
                device_resource: crate::vendors::device_resource(g, vendor),
            });
            nnodes = nnodes.saturating_add(g.nodes);
            world_size = world_size.saturating_add(g.devices);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let one = PlanDocument {
            format_version: doc.format_version.clone(),
            catalogue_digest: doc.catalogue_digest.clone(),
            plans: vec![plan.clone()],
            services: Vec::new(),
        };
        let plan_json = serde_json::to_string_pretty(&one).map_err(|e| {
            vec![error(
                codes::emit::INTERNAL_ERROR,
                format!("cannot serialise the plan of job `{job}`: {e}"),
                "report this as a bug in loam",
            )]
        })?;
        // The plan's restart budget covers its expected interruptions (`estimate.goodput`);
        // plans written before format 1.6 get one restart per started day, at least 3.
        let max_restarts = match &estimate.goodput {
            Some(goodput) => match i32::try_from(goodput.restart_budget.max(3)) {
                Ok(budget) => budget,
                // `loam plan` refuses such a plan (L3009); only a hand-edited one gets here.
                Err(_) => {
                    return Err(vec![incomplete(
                        job,
                        &format!(
                            "its restart budget {} does not fit a manifest's restart count (at most {})",
                            goodput.restart_budget,
                            i32::MAX
                        ),
                    )]);
                }
            },
            // At most 1000 restarts, so the conversion is exact.
            None => {
                ((estimate.train_time_h.max(0.0) / 24.0)
                    .ceil()
                    .clamp(3.0, 1000.0)) as i32
            }
        };
        let trainer_grace_s = checkpoint_grace_s(estimate.step_time_s, checkpoint.write_s);
        Ok(JobContext {
            job: job.clone(),
            file: plan.file.clone(),
            name,
            tenant: plan.tenant.clone(),
            tenancy,
            priority: plan.priority.to_string(),
            interruptible: plan.interruptible,
            groups,
            nnodes,
            world_size,
            checkpoint_path: checkpoint.path.clone(),
            checkpoint_subpath,
            checkpoint_interval_min: checkpoint.interval_min,
            checkpoint_write_s: checkpoint.write_s,
            train_time_h: estimate.train_time_h,
            plan_json: json_ascii(&plan_json),
            max_restarts,
            trainer_grace_s,
            grace_s: trainer_grace_s + HARD_LIMIT_MARGIN_S,
            schedule: plan.schedule.as_ref(),
        })
    }
}

/// Seconds between the wrapper's `SIGTERM` to the trainer and the backend's hard kill: the
/// wrapper exits and its launcher notices. Counted, as Kubernetes' default
/// `terminationGracePeriodSeconds` (30 s) is for the same step.
pub const HARD_LIMIT_MARGIN_S: u64 = 30;

/// Seconds a trainer gets from a checkpoint request to SIGTERM, on every backend. The contract
/// asks for a checkpoint "at the next step boundary": the request may arrive just after a step
/// began, so the trainer needs up to one step (`step_time_s`, the plan's), then the checkpoint
/// write, twice (a periodic write may be in flight when the request comes), and a minute for
/// the request to be seen and the save to start (counted: the Slurm task polls every 2 s, a
/// trainer checks between steps). Before, the step was missing, so a 406 s step got 68 s.
pub fn checkpoint_grace_s(step_time_s: f64, write_s: f64) -> u64 {
    // Both are finite and non-negative in a plan `loam plan` writes; a hand-edited NaN counts 0.
    let seconds = |x: f64| if x.is_finite() { x.max(0.0) } else { 0.0 };
    // At most a year of seconds, so the conversion is exact.
    (seconds(step_time_s) + 2.0 * seconds(write_s))
        .ceil()
        .min(3.2e7) as u64
        + 60
}

/// The trainer command and the layout arguments of group `g` (number `index`) of `plan`: the
/// group's own layout in a `data` plan, the plan's layout with the group's tensor degree and its
/// share of the pipeline stages in a `pipeline` plan, the plan's layout otherwise.
fn group_trainer_args(
    plan: &Plan,
    g: &GroupIr,
    index: usize,
    layout: &LayoutIr,
    options: &Options,
) -> Vec<String> {
    let own = g.layout.unwrap_or(*layout);
    let tensor = g.tensor.unwrap_or(own.tensor);
    let mut args = options.trainer.clone();
    args.extend([
        format!("--tensor-parallel={tensor}"),
        format!("--pipeline-parallel={}", own.pipeline),
        format!("--data-parallel={}", own.data),
        format!("--context-parallel={}", own.context),
        format!("--expert-parallel={}", own.expert),
        format!("--virtual-stages={}", own.virtual_stages),
        format!("--micro-batch={}", own.micro_batch),
        format!("--global-batch={}", plan.workload.global_batch),
        format!("--seq-len={}", plan.workload.seq_len),
        format!("--zero={}", own.zero),
        format!("--recompute={}", own.recompute),
        // Whether this group runs sequence parallelism, as its memory and time were planned:
        // Megatron-LM's `--sequence-parallel` switch (a store_true flag made from
        // `ModelParallelConfig.sequence_parallel`, NVIDIA/Megatron-LM
        // `megatron/core/model_parallel_config.py` through `megatron/training/argument_utils.py`),
        // written `true` or `false` so that a switched-off plan says so.
        format!("--sequence-parallel={}", own.sequence_parallel_at(tensor)),
        format!("--precision={}", plan.workload.precision),
    ]);
    if own.tensor_overlap && own.sequence_parallel_at(tensor) {
        // The plan's time hides this group's tensor-parallel collectives under its GEMMs: a
        // Megatron launcher passes `--tp-comm-overlap` (Transformer Engine's userbuffers,
        // NVIDIA/Megatron-LM `megatron/training/arguments.py`), a torchtitan one
        // `--compile.enable_async_tensor_parallel` with `--compile.enable` (pytorch/torchtitan
        // `torchtitan/config/configs.py`). Written only where it runs, so a plan without it
        // keeps its arguments.
        args.push("--tensor-overlap=true".to_string());
    }
    if own.expert_overlap && own.expert > 1 {
        // The plan's time runs this group's expert all-to-alls beside another micro-batch's
        // compute on its interleaved pipeline: a Megatron launcher passes
        // `--overlap-moe-expert-parallel-comm` (NVIDIA/Megatron-LM
        // `megatron/core/model_parallel_config.py`; its `TransformerConfig` accepts it only with
        // virtual stages and without full recomputation, as the plan states it). Written only
        // where it runs, so a plan without it keeps its arguments.
        args.push("--expert-overlap=true".to_string());
    }
    if let Some(dispatch) = plan.workload.expert_dispatch
        && own.expert > 1
    {
        // The plan's time sends each token once to every node holding one of its experts: a
        // Megatron launcher passes `--moe-token-dispatcher-type flex
        // --moe-flex-dispatcher-backend deepep` (or `hybridep`; NVIDIA/Megatron-LM
        // `megatron/core/transformer/transformer_config.py`, `moe_token_dispatcher_type`,
        // `moe_flex_dispatcher_backend`), a NeMo AutoModel one `dispatcher: deepep`. Written
        // only where the experts are split, so a plan of the all-to-all keeps its arguments.
        args.push(format!("--expert-dispatch={dispatch}"));
    }
    if let (Recompute::Full, Some(blocks)) = (own.recompute, own.recompute_layers) {
        // Partial recomputation: the first blocks of each model chunk are replayed whole, the
        // rest keep their activations, as the plan's memory and time assume. A Megatron launcher
        // passes `--recompute-granularity full --recompute-method block
        // --recompute-num-layers <blocks>` (NVIDIA/Megatron-LM `megatron/training/arguments.py`;
        // the block method is per model chunk, `megatron/core/transformer/transformer_block.py`).
        args.push(format!("--recompute-layers={blocks}"));
    }
    if let Some(batch) = g.sequences_per_step {
        // The group's share of every step's sequences in a `data` plan.
        args.push(format!("--group-batch={batch}"));
    }
    if plan.groups.len() > 1 && plan.hetero == Some(Hetero::Pipeline) {
        // The pipeline stages this group runs, first and last, from the plan's stages.
        let mine: Vec<u64> = plan
            .stages
            .iter()
            .filter(|s| s.group == index as u64)
            .map(|s| s.index)
            .collect();
        if let (Some(first), Some(last)) = (mine.iter().min(), mine.iter().max()) {
            args.push(format!("--pipeline-stages={first}-{last}"));
        }
    }
    if let Some(checkpoint) = &plan.checkpoint {
        args.push(format!("--checkpoint-dir={}", checkpoint.path));
        args.push(format!(
            "--checkpoint-interval-min={}",
            checkpoint.interval_min
        ));
    }
    let stages = if g.stages.is_empty() {
        &plan.stages
    } else {
        &g.stages
    };
    if let Some(split) = pipeline_layout(stages) {
        args.push(format!("--pipeline-layout={split}"));
    }
    if let Some(steps) = options.probe_steps {
        // A probe (`crate::probe`): stop after these steps, log often enough for the log
        // readers' steady median, and write no checkpoint but on a request.
        args.extend([
            format!("--train-steps={steps}"),
            format!("--log-interval={}", crate::probe::log_interval(steps)),
            "--probe".to_string(),
        ]);
    }
    args
}

fn incomplete(job: &str, why: &str) -> Diagnostic {
    refuse::incomplete(Workload::Job, job, why)
}

fn unusable(job: &str, what: &str, value: &str) -> Diagnostic {
    refuse::unusable(Workload::Job, job, what, value)
}

/// The blocks of every pipeline chunk in Megatron-Core's `--pipeline-model-parallel-layout`
/// notation when they are not all equal: chunks in model order separated by `|`, `E` the
/// embedding (first chunk), `t` one transformer block, `L` the head and loss (last chunk), as in
/// `Et|tt|…|tL`. `None` for a single stage or an even split, which `--pipeline-parallel` and
/// `--virtual-stages` already say.
fn pipeline_layout(stages: &[loam_ir::plan::StageIr]) -> Option<String> {
    let sizes: Vec<u64> = stages
        .iter()
        .map(|s| s.layers[1].saturating_sub(s.layers[0]))
        .collect();
    if sizes.len() < 2 || sizes.iter().all(|b| Some(b) == sizes.first()) {
        return None;
    }
    let last = sizes.len() - 1;
    let chunks: Vec<String> = sizes
        .iter()
        .enumerate()
        .map(|(i, &blocks)| {
            let mut chunk = String::new();
            if i == 0 {
                chunk.push('E');
            }
            chunk.push_str(&"t".repeat(usize::try_from(blocks).unwrap_or(0)));
            if i == last {
                chunk.push('L');
            }
            chunk
        })
        .collect();
    Some(chunks.join("|"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The deploy review's examples (finding 11), by hand: Llama 3 405B steps 406 s and writes a
    /// checkpoint in 19 s (its old Kubernetes grace, 68 = 2 × 19 + 30), so it needs
    /// 406 + 38 + 60 = 504 s, not 68; Qwen3 235B, 79 s and 2 s: 79 + 4 + 60 = 143; a step
    /// shorter than a second still rounds up with the writes: 0.4 + 2 × 2.3 = 5.0 → 5 + 60.
    #[test]
    fn the_grace_covers_a_step_two_writes_and_a_minute() {
        assert_eq!(checkpoint_grace_s(406.0, 19.0), 504);
        assert_eq!(checkpoint_grace_s(79.0, 2.0), 143);
        assert_eq!(checkpoint_grace_s(0.4, 2.3), 65);
        // A hand-edited plan with no step time or a negative write gets the minute alone.
        assert_eq!(checkpoint_grace_s(f64::NAN, -5.0), 60);
    }
}
