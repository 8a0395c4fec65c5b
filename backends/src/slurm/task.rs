//! What each Slurm task runs around the trainer contract's wrapper: it names the node-local
//! checkpoint request, watches the batch script's stop request on the shared checkpoint file
//! system and passes it to the wrapper alone, and turns an interrupted run into a clean exit so
//! `srun --kill-on-bad-exit` does not kill the other nodes while they checkpoint.
//!
//! Why not forward the batch script's signal with `srun`: Slurm delivers a step's signal to
//! every process of the step (the proctrack plugin signals the whole process tree or cgroup), so
//! the trainer itself would get SIGUSR1, which kills a process that does not trap it.

/// The task script, run as `sh -c TASK loam-task <trainer...>` on every node. A constant, so no
/// spec string is part of it; POSIX sh, because it also runs inside container images.
///
/// Reads `SLURM_PROCID` (its node rank: task ids run on across the components of a
/// heterogeneous step), its component's `NODE_RANK_OFFSET`, `GROUP_RANK_OFFSET` and
/// `NPROC_PER_NODE`, the job's `NNODES`, `MASTER_ADDR` and `MASTER_PORT`, `LOAM_RUN_DIR` (where
/// the batch script creates `stop` and the tasks leave `interrupted.<rank>`) and `LOAM_WRAPPER`
/// (the contract's wrapper). It exports the node's own `NODE_RANK`, `RANK_OFFSET` (the global
/// rank of its first device: the component's first rank plus one node's devices per node before
/// it in the component) and torchrun's `PET_*` defaults, which torchrun reads only from
/// `PET_<dest>` (pytorch `torch/distributed/argparse_util.py`, class `env`).
/// It survives SIGTERM and SIGUSR1 itself (Slurm signals every process of a step on preemption
/// or `scancel --full`), from before the wrapper starts; the wrapper, whose shell resets caught
/// signals to their defaults and installs its own trap, gets them too and asks the trainer to
/// checkpoint.
pub const TASK: &str = r#"NODE_RANK=$SLURM_PROCID; export NODE_RANK
RANK_OFFSET=$((GROUP_RANK_OFFSET + (NODE_RANK - NODE_RANK_OFFSET) * NPROC_PER_NODE)); export RANK_OFFSET
PET_NNODES=$NNODES PET_NODE_RANK=$NODE_RANK PET_MASTER_ADDR=$MASTER_ADDR PET_MASTER_PORT=$MASTER_PORT PET_NPROC_PER_NODE=$NPROC_PER_NODE
export PET_NNODES PET_NODE_RANK PET_MASTER_ADDR PET_MASTER_PORT PET_NPROC_PER_NODE
LOAM_CHECKPOINT_REQUEST=${TMPDIR:-/tmp}/loam-$SLURM_JOB_ID-$NODE_RANK/checkpoint-request; export LOAM_CHECKPOINT_REQUEST
trap : TERM USR1
sh -c "$LOAM_WRAPPER" loam-run "$@" & run=$!
( while kill -0 "$run" 2>/dev/null; do if [ -e "$LOAM_RUN_DIR/stop" ]; then kill -USR1 "$run"; exit 0; fi; sleep 2; done ) & watch=$!
while :; do rc=0; wait "$run" || rc=$?; kill -0 "$run" 2>/dev/null || break; done
kill "$watch" 2>/dev/null
if [ "$rc" = 75 ]; then : >"$LOAM_RUN_DIR/interrupted.$NODE_RANK"; exit 0; fi
exit "$rc""#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::WRAPPER;
    use std::process::Command;
    use std::time::{Duration, Instant};

    /// A stop request in the run folder reaches the trainer as the contract's request file; the
    /// task exits 0 and leaves its interrupted marker.
    #[test]
    fn a_stop_request_becomes_a_checkpoint_request_and_a_marker() {
        let dir = std::env::temp_dir().join(format!("loam-slurm-task-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let seen = dir.join("seen");
        // A trainer that waits for the request, records that it saw it and exits 0.
        let trainer = format!(
            "while [ ! -e \"$LOAM_CHECKPOINT_REQUEST\" ]; do sleep 0.1; done; : > '{}'",
            seen.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", TASK, "loam-task", "sh", "-c", &trainer])
            .env("SLURM_PROCID", "3")
            .env("SLURM_JOB_ID", format!("t{}", std::process::id()))
            .env("TMPDIR", &dir)
            .env("LOAM_RUN_DIR", &dir)
            .env("LOAM_WRAPPER", WRAPPER)
            .env("LOAM_GRACE_S", "30")
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        std::fs::write(dir.join("stop"), "").unwrap();
        let started = Instant::now();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0));
        assert!(started.elapsed() < Duration::from_secs(10));
        assert!(seen.exists(), "the trainer never saw the request");
        assert!(dir.join("interrupted.3").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Each task derives its node's own first rank and torchrun's defaults: by hand, task 5 of a
    /// job whose second component starts at node 4 and rank 32, with 8 devices per node, is the
    /// component's second node, so its ranks start at 32 + 1 × 8 = 40.
    #[test]
    fn each_task_gets_its_own_first_rank_and_torchruns_defaults() {
        let dir = std::env::temp_dir().join(format!("loam-slurm-ranks-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let report = "echo $NODE_RANK $RANK_OFFSET $PET_NNODES $PET_NODE_RANK $PET_MASTER_ADDR \
                      $PET_MASTER_PORT $PET_NPROC_PER_NODE";
        let out = Command::new("sh")
            .args(["-c", TASK, "loam-task", "sh", "-c", report])
            .env("SLURM_PROCID", "5")
            .env("SLURM_JOB_ID", "1")
            .env("NODE_RANK_OFFSET", "4")
            .env("GROUP_RANK_OFFSET", "32")
            .env("NPROC_PER_NODE", "8")
            .env("NNODES", "6")
            .env("MASTER_ADDR", "node-a")
            .env("MASTER_PORT", "29500")
            .env("TMPDIR", &dir)
            .env("LOAM_RUN_DIR", &dir)
            .env("LOAM_WRAPPER", WRAPPER)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "5 40 6 5 node-a 29500 8"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A finished or failing trainer keeps its status and leaves no marker.
    #[test]
    fn a_finished_trainer_keeps_its_status() {
        let dir = std::env::temp_dir().join(format!("loam-slurm-done-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (code, expected) in [("0", 0), ("3", 3)] {
            let status = Command::new("sh")
                .args(["-c", TASK, "loam-task", "sh", "-c", &format!("exit {code}")])
                .env("SLURM_PROCID", "0")
                .env("SLURM_JOB_ID", "1")
                .env("TMPDIR", &dir)
                .env("LOAM_RUN_DIR", &dir)
                .env("LOAM_WRAPPER", WRAPPER)
                .status()
                .unwrap();
            assert_eq!(status.code(), Some(expected));
        }
        assert!(!dir.join("interrupted.0").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
