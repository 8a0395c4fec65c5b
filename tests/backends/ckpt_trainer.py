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

Before the first step it checks the launch environment every backend promises (docs/backends.md,
"What the trainer receives") the way torchrun would read it: torchrun takes its defaults only
from `PET_<dest>` (pytorch `torch/distributed/argparse_util.py`, class `env`), so
`PET_NNODES`, `PET_NODE_RANK`, `PET_MASTER_ADDR`, `PET_MASTER_PORT` and `PET_NPROC_PER_NODE`
must equal `NNODES`, `NODE_RANK`, `MASTER_ADDR`, `MASTER_PORT` and `NPROC_PER_NODE`, and this
node's ranks, `RANK_OFFSET` to `RANK_OFFSET + NPROC_PER_NODE - 1`, must lie inside `WORLD_SIZE`.
A missing or inconsistent value exits 3 (`contract: ...` on stderr) before any step. The values
are written to $LOAM_CHECKPOINT_DIR/node<NODE_RANK>.env, one `NAME=value` a line, so a test can
check that the ranks of all nodes are distinct.
"""
import os
import sys
import time


CONTRACT = ("NODE_RANK", "NNODES", "NPROC_PER_NODE", "RANK_OFFSET", "WORLD_SIZE",
            "MASTER_ADDR", "MASTER_PORT")
TORCHRUN = {"PET_NNODES": "NNODES", "PET_NODE_RANK": "NODE_RANK",
            "PET_MASTER_ADDR": "MASTER_ADDR", "PET_MASTER_PORT": "MASTER_PORT",
            "PET_NPROC_PER_NODE": "NPROC_PER_NODE"}


def contract_problems(env: dict) -> list:
    """What is missing or inconsistent in the launch environment `env`."""
    missing = [k for k in CONTRACT + tuple(TORCHRUN) if not env.get(k)]
    if missing:
        return [f"unset: {' '.join(missing)}"]
    problems = [f"{pet}={env[pet]} but {plain}={env[plain]}"
                for pet, plain in TORCHRUN.items() if env[pet] != env[plain]]
    try:
        node, nnodes, nproc, first, world = (int(env[k]) for k in CONTRACT[:5])
    except ValueError:
        return problems + ["a rank or size is not a number"]
    if not 0 <= node < nnodes:
        problems.append(f"NODE_RANK={node} outside 0..{nnodes - 1}")
    if first < 0 or first + nproc > world:
        problems.append(f"ranks {first}..{first + nproc - 1} outside WORLD_SIZE={world}")
    return problems


def main() -> int:
    steps, step_s = int(sys.argv[1]), float(sys.argv[2])
    folder = os.environ["LOAM_CHECKPOINT_DIR"]
    rank = os.environ.get("NODE_RANK", "0")
    request = os.environ.get("LOAM_CHECKPOINT_REQUEST", "")
    os.makedirs(folder, exist_ok=True)
    ckpt = os.path.join(folder, f"node{rank}.ckpt")
    log = os.path.join(folder, f"node{rank}.log")
    with open(os.path.join(folder, f"node{rank}.env"), "w", encoding="utf-8") as fh:
        for name in CONTRACT + tuple(TORCHRUN) + ("SLURM_CPUS_PER_TASK",):
            fh.write(f"{name}={os.environ.get(name, '')}\n")
    problems = contract_problems(os.environ)
    if problems:
        print(f"contract: node {rank}: {'; '.join(problems)}", file=sys.stderr)
        return 3

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
