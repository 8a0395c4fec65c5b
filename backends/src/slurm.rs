//! Slurm: one batch script per job. One device group is a plain job; several are a heterogeneous
//! job, one component per group. The target Slurm release decides which options appear.

use crate::escape::is_plain_word;
use crate::job::{JobContext, error};
use crate::kubernetes::{render_one, template_error};
use crate::{Manifest, Options, env};
use loam_compiler::diagnostics::Diagnostic;
use loam_compiler::diagnostics::codes;
use minijinja::Value;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

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
    /// `--gpus-per-node` appeared in 19.05.
    const GPUS_PER_NODE: SlurmVersion = SlurmVersion {
        major: 19,
        minor: 5,
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
    /// Environment of its tasks: `NAME=value` words (values are numbers).
    env: Vec<String>,
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
}

/// The time limit: the predicted training time plus 10 %, the time to write two checkpoints and
/// 10 minutes, as `D-HH:MM:00`; at most 365 days.
pub fn time_limit(train_time_h: f64, checkpoint_write_s: f64) -> String {
    let minutes = (train_time_h.max(0.0) * 60.0 * 1.1).ceil()
        + (2.0 * checkpoint_write_s.max(0.0) / 60.0).ceil()
        + 10.0;
    let minutes = minutes.min(365.0 * 24.0 * 60.0) as u64;
    format!(
        "{}-{:02}:{:02}:00",
        minutes / (24 * 60),
        minutes / 60 % 24,
        minutes % 60
    )
}

/// The generic resource name of a device-plugin resource: Ascend NPUs are `npu`, Hygon DCUs
/// `dcu`, everything else `gpu`.
pub fn gres_name(k8s_resource: &str) -> &'static str {
    let r = k8s_resource.to_ascii_lowercase();
    if r.contains("ascend") || r.contains("npu") {
        "npu"
    } else if r.contains("dcu") {
        "dcu"
    } else {
        "gpu"
    }
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
    let mut components = Vec::new();
    for g in &job.groups {
        let Some(partition) = &g.ir.slurm_partition else {
            errors.push(error(
                codes::emit::NO_SLURM_PARTITION,
                format!(
                    "group {} of job `{}` (node group `{}`) has no Slurm partition",
                    g.index, job.job, g.ir.node_group
                ),
                "give the node group a `slurm_partition` in the catalogue",
            ));
            continue;
        };
        if !is_plain_word(&g.ir.node_group) {
            errors.push(error(
                codes::emit::UNUSABLE_NAME,
                format!(
                    "node group `{}` of job `{}` cannot be a Slurm constraint",
                    g.ir.node_group.escape_debug(),
                    job.job
                ),
                "use letters, digits, `-`, `_` and `.` in node group names",
            ));
            continue;
        }
        let gres = gres_name(&g.ir.k8s_resource);
        let devices = if gres == "gpu" && version >= SlurmVersion::GPUS_PER_NODE {
            format!("--gpus-per-node={}", g.ir.devices_per_node)
        } else {
            format!("--gres={gres}:{}", g.ir.devices_per_node)
        };
        let mut opts = vec![
            format!("--partition={partition}"),
            format!("--nodes={}", g.ir.nodes),
            "--ntasks-per-node=1".to_string(),
            devices,
            format!("--constraint={}", g.ir.node_group),
            "--exclusive".to_string(),
        ];
        if g.ir.block.is_some() {
            opts.push("--switches=1".to_string());
        }
        components.push(Component {
            options: opts,
            env: vec![
                format!("NPROC_PER_NODE={}", g.ir.devices_per_node),
                format!("NODE_RANK_OFFSET={}", g.node_rank_offset),
                format!("RANK_OFFSET={}", g.rank_offset),
                format!("LOAM_GROUP={}", g.index),
            ],
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let time = time_limit(job.train_time_h, job.checkpoint_write_s);
    let mut common = vec![
        format!("--account={}", job.tenancy.slurm_account),
        format!("--time={time}"),
    ];
    if let Some(qos) = &job.tenancy.slurm_qos {
        common.push(format!("--qos={qos}"));
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
    };
    let env = env::environment().map_err(|e| vec![template_error(&job.job, &e)])?;
    let contents = render_one(
        &env,
        job,
        "slurm/job.sbatch.j2",
        Value::from_serialize(&ctx),
    )?;
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

    #[test]
    fn time_limits_have_margin() {
        assert_eq!(time_limit(1.0, 30.0), "0-01:17:00");
        assert_eq!(time_limit(600.0, 41.0), "27-12:12:00");
        assert_eq!(time_limit(1e9, 0.0), "365-00:00:00");
    }
}
