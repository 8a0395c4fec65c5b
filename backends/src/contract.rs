//! The trainer contract every backend keeps: how a trainer is asked to checkpoint before it is
//! stopped, and how the launcher tells an interrupted run from a finished one. One wrapper
//! script, run around the trainer on every node by every backend.
//!
//! - On start the trainer resumes from the newest *complete* checkpoint in
//!   `LOAM_CHECKPOINT_DIR`, if any (a trainer that finds its final checkpoint exits 0 at once).
//!   It publishes each checkpoint atomically: written under a temporary name and renamed into
//!   place (or marked complete by a last small file) once every rank has written its part, since
//!   the wrapper's SIGTERM after the grace, a node failure or the hard kill may stop it in the
//!   middle of a write.
//! - When the file named by `LOAM_CHECKPOINT_REQUEST` exists, the trainer writes a checkpoint at
//!   the next step boundary and exits 0. The wrapper creates that file when it receives SIGTERM
//!   (preemption, eviction, `scancel`, a closing ssh session) or SIGUSR1 (Slurm's warning before
//!   the time limit), waits up to `LOAM_GRACE_S` seconds for the trainer to exit, then sends it
//!   SIGTERM. The trainer is never sent a signal it may not trap.
//! - The wrapper exits with the trainer's status, except after a request: then it exits
//!   [`EXIT_INTERRUPTED`], so every launcher retries the run (a Kubernetes pod that exited 0
//!   would count as a finished index, a Slurm job as done).

/// The wrapper's status when the run was interrupted and should resume: `EX_TEMPFAIL` from
/// `sysexits.h` ("try again later").
pub const EXIT_INTERRUPTED: u8 = 75;

/// The wrapper, as one `sh -c` script: its arguments are the trainer command. A constant, so no
/// spec string is ever part of it. POSIX sh (Kubernetes images may have no bash).
///
/// The trap is installed before the trainer starts: a SIGTERM in between would otherwise be lost
/// (a PID 1 with no handler ignores it, pid_namespaces(7)) and the trainer killed at the hard
/// limit without a request. A request that comes before the trainer's pid is known starts the
/// grace timer as soon as it is.
pub const WRAPPER: &str = r#"req=${LOAM_CHECKPOINT_REQUEST:?}; grace=${LOAM_GRACE_S:-120}; asked=0; child=
mkdir -p "$(dirname "$req")" && rm -f "$req"
timer() { ( sleep "$grace"; kill -TERM "$child" 2>/dev/null ) & }
ask() { asked=1; : >"$req"; echo "loam: asked the trainer to checkpoint; stopping it in ${grace}s" >&2; if [ -n "$child" ]; then timer; fi; }
trap ask TERM USR1
"$@" & child=$!
if [ "$asked" = 1 ]; then timer; fi
while :; do rc=0; wait "$child" || rc=$?; kill -0 "$child" 2>/dev/null || break; done
if [ "$asked" = 1 ]; then rm -f "$req"; exit 75; fi
exit "$rc""#;

/// The environment variable names of the contract, with their meaning, for docs and tests.
pub const VARIABLES: &[(&str, &str)] = &[
    (
        "LOAM_CHECKPOINT_DIR",
        "the checkpoint folder: resume from its newest checkpoint",
    ),
    (
        "LOAM_CHECKPOINT_REQUEST",
        "a file: when it exists, checkpoint at the next step and exit 0",
    ),
    ("LOAM_GRACE_S", "seconds between the request and SIGTERM"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The wrapper runs under a real `sh`: a TERM becomes a request the trainer sees, and the
    /// wrapper reports an interrupted run.
    #[test]
    fn a_term_becomes_a_checkpoint_request_and_an_interrupted_status() {
        let dir = std::env::temp_dir().join(format!("loam-contract-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let req = dir.join("request");
        let seen = dir.join("seen");
        // A trainer that polls the request file, then records that it saw it and exits 0.
        let trainer = format!(
            "while [ ! -e '{}' ]; do sleep 0.1; done; : > '{}'; exit 0",
            req.display(),
            seen.display()
        );
        let mut child = Command::new("sh")
            .args(["-c", WRAPPER, "loam-run", "sh", "-c", &trainer])
            .env("LOAM_CHECKPOINT_REQUEST", &req)
            .env("LOAM_GRACE_S", "30")
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(500));
        Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(i32::from(EXIT_INTERRUPTED)));
        assert!(seen.exists(), "the trainer never saw the request");
        assert!(!req.exists(), "the request outlived the run");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Deploy review finding 30: the wrapper catches TERM from its first moment with a child,
    /// so the trap comes before the trainer starts; and a trainer whose very first act is a
    /// TERM to the wrapper (as a preemption right at start would be) still gets its request.
    #[test]
    fn the_trap_is_installed_before_the_trainer_starts() {
        let trap = WRAPPER.find("trap ask TERM USR1").unwrap();
        let start = WRAPPER.find("\"$@\" & child=$!").unwrap();
        assert!(trap < start, "{WRAPPER}");
        let dir = std::env::temp_dir().join(format!("loam-contract-early-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let req = dir.join("request");
        let trainer = format!(
            "kill -TERM $PPID; while [ ! -e '{}' ]; do sleep 0.05; done; exit 0",
            req.display()
        );
        let status = Command::new("sh")
            .args(["-c", WRAPPER, "loam-run", "sh", "-c", &trainer])
            .env("LOAM_CHECKPOINT_REQUEST", &req)
            .env("LOAM_GRACE_S", "30")
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(i32::from(EXIT_INTERRUPTED)));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_finished_trainer_keeps_its_status() {
        let dir = std::env::temp_dir().join(format!("loam-contract-done-{}", std::process::id()));
        let status = Command::new("sh")
            .args(["-c", WRAPPER, "loam-run", "sh", "-c", "exit 3"])
            .env("LOAM_CHECKPOINT_REQUEST", dir.join("request"))
            .status()
            .unwrap();
        assert_eq!(status.code(), Some(3));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
