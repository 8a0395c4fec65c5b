"""Writes lightning-tensorboard.tfevents with tensorboardX's SummaryWriter (`simple_value` scalars).

The events are the ones PyTorch Lightning's TensorBoardLogger writes for a run with the
ThroughputMonitor callback: `log_metrics` calls `add_scalar(key, value, step)` for each key of
the monitor's logging call (`lightning/pytorch/loggers/tensorboard.py`,
`lightning/pytorch/callbacks/throughput_monitor.py`). The figures are the ones of
lightning-metrics.csv (synthetic); the framing and protobuf are the writer's own.

    python3 -m venv venv && venv/bin/pip install tensorboardX
    venv/bin/python lightning-tensorboard.py OUT_DIR
"""

import glob
import os
import shutil
import sys

from tensorboardX import SummaryWriter

out = sys.argv[1]
logdir = os.path.join(out, "logs")
writer = SummaryWriter(logdir)
T0 = 1_764_000_000.0

# step: (train/device/samples_per_sec, train/samples_per_sec), as in lightning-metrics.csv
rates = {
    99: (3.92, 31.36),
    149: (4.4, 35.2),
    199: (4.52, 36.16),
    249: (4.5, 36.0),
    299: (4.1, 32.8),
    349: (4.55, 36.4),
    399: (4.51, 36.08),
}
writer.add_scalar("hp_metric", -1, 0, walltime=T0)
for step in range(49, 400, 50):
    wall = T0 + step
    writer.add_scalar("train_loss", 8.0 - step / 200, step, walltime=wall)
    writer.add_scalar("epoch", 0, step, walltime=wall)
    writer.add_scalar("train/batches", step + 1, step, walltime=wall)
    writer.add_scalar("train/samples", 4 * (step + 1), step, walltime=wall)
    if step in rates:
        device, job = rates[step]
        writer.add_scalar("train/device/batches_per_sec", device / 4, step, walltime=wall)
        writer.add_scalar("train/device/samples_per_sec", device, step, walltime=wall)
        writer.add_scalar("train/batches_per_sec", job / 4, step, walltime=wall)
        writer.add_scalar("train/samples_per_sec", job, step, walltime=wall)
    if step == 199:
        writer.add_scalar("val_loss", 7.1, step, walltime=wall)
        writer.add_scalar("validate/samples", 80, step, walltime=wall)
writer.close()
(path,) = glob.glob(os.path.join(logdir, "events.out.tfevents.*"))
name = "lightning-tensorboard.tfevents"
shutil.copy(path, os.path.join(out, name))
