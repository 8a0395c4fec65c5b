#!/usr/bin/env python3
"""A stand-in trainer for loam's probe job (`loam emit --probe JOB`, docs/calibration.md, "The
probe job"), for the tests that run a probe on real Slurm and over real ssh and read its log
back with `loam runs ingest`.

usage: probe_trainer.py STEP_SECONDS [TRAINER ARGS...]

It reads the probe's arguments loam passes after the layout (`--train-steps=N`,
`--log-interval=K`, `--probe`, `--global-batch=B`, `--data-parallel=D`, ...), refuses to run
without `--probe` and `--train-steps` (exit 3: a whole job must not reach this stand-in), runs
N steps of STEP_SECONDS each, and every K steps prints one line in the format of Megatron-LM's
`training_log` (megatron/training/training.py: ` [date] iteration N/ M | consumed samples: ... |
elapsed time per iteration (ms): ... | ... global batch size: ... |`), with the interval's
measured time per iteration. Like Megatron-LM (`print_rank_last`), only the last node prints.
When the file named by $LOAM_CHECKPOINT_REQUEST exists it exits 0 at the next step (a probe
writes no checkpoint). It writes nothing else anywhere.
"""
import datetime
import os
import sys
import time


def argument(args: list, name: str):
    """The value of `--name=value` in args, or None."""
    prefix = f"--{name}="
    for a in args:
        if a.startswith(prefix):
            return a[len(prefix):]
    return None


def main() -> int:
    step_s = float(sys.argv[1])
    args = sys.argv[2:]
    steps = argument(args, "train-steps")
    if "--probe" not in args or steps is None:
        print("probe_trainer: not a probe (no --probe or --train-steps)", file=sys.stderr)
        return 3
    steps = int(steps)
    interval = int(argument(args, "log-interval") or "1")
    batch = int(argument(args, "global-batch") or "1")
    last = int(os.environ.get("NODE_RANK", "0")) == int(os.environ.get("NNODES", "1")) - 1
    request = os.environ.get("LOAM_CHECKPOINT_REQUEST", "")
    started = time.monotonic()
    for step in range(1, steps + 1):
        if request and os.path.exists(request):
            return 0
        time.sleep(step_s)
        if step % interval == 0 and last:
            now = time.monotonic()
            per_iteration_ms = (now - started) * 1000.0 / interval
            started = now
            stamp = datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S.%f")
            print(f" [{stamp}] iteration {step:8d}/{steps:8d} | consumed samples: "
                  f"{step * batch:12d} | elapsed time per iteration (ms): {per_iteration_ms:.1f} | "
                  f"learning rate: 1.500000E-05 | global batch size: {batch:5d} | "
                  f"lm loss: 8.123456E+00 | loss scale: 1.0 | grad norm: 2.345 | "
                  f"number of skipped iterations:   0 | number of nan iterations:   0 |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
