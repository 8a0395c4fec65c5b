#!/usr/bin/env python3
"""A stand-in trainer that keeps loam's trainer contract (docs/backends.md, "The trainer
contract"), for the tests that interrupt and resume runs on real Slurm and over real ssh.

usage: ckpt_trainer.py STEPS STEP_SECONDS [TRAINER ARGS...]

Each node keeps its own checkpoint, $LOAM_CHECKPOINT_DIR/node<NODE_RANK>.ckpt, holding the
number of steps done. On start it resumes from that file; it runs one step every STEP_SECONDS,
writes the checkpoint every step, and when the file named by $LOAM_CHECKPOINT_REQUEST exists it
checkpoints and exits 0. After STEPS steps it writes the final checkpoint and exits 0 (a resumed
run that finds the final checkpoint exits 0 at once). Every start and stop is appended to
$LOAM_CHECKPOINT_DIR/node<NODE_RANK>.log as one line: `start <step>`, `request <step>`,
`done <step>`.
"""
import os
import sys
import time


def main() -> int:
    steps, step_s = int(sys.argv[1]), float(sys.argv[2])
    folder = os.environ["LOAM_CHECKPOINT_DIR"]
    rank = os.environ.get("NODE_RANK", "0")
    request = os.environ.get("LOAM_CHECKPOINT_REQUEST", "")
    os.makedirs(folder, exist_ok=True)
    ckpt = os.path.join(folder, f"node{rank}.ckpt")
    log = os.path.join(folder, f"node{rank}.log")

    def note(what: str, step: int) -> None:
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(f"{what} {step}\n")

    def save(step: int) -> None:
        tmp = ckpt + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(str(step))
        os.replace(tmp, ckpt)

    step = 0
    if os.path.exists(ckpt):
        with open(ckpt, encoding="utf-8") as fh:
            step = int(fh.read().strip() or 0)
    note("start", step)
    while step < steps:
        if request and os.path.exists(request):
            save(step)
            note("request", step)
            return 0
        time.sleep(step_s)
        step += 1
        save(step)
    note("done", step)
    return 0


if __name__ == "__main__":
    sys.exit(main())
