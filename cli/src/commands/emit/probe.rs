//! `loam emit --probe JOB`: where the probe's log (`loam_backends::probe`) is found, and the
//! command that reads it back.

use loam_backends::Target;

/// Two lines for standard error: where the probe's log will be, and the command that reads it
/// back against the job's plan.
pub fn read_back(job: &str, steps: u64, target: Target) -> String {
    let log = target.backend().probe_log();
    format!(
        "probe: {steps} steps of job `{job}`; its log is {log} (Megatron-LM prints on the last rank)\n\
         probe: read it back with `loam runs ingest LOG --plan PLAN.json --job {job}` (`--append` keeps it in the runs store)\n"
    )
}
