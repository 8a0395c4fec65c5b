"""Writes lightning-wandb.wandb: a Weights & Biases offline run file of the metrics PyTorch
Lightning's WandbLogger logs for a run with the ThroughputMonitor callback.

`WandbLogger.log_metrics` calls `run.log(dict(metrics, **{"trainer/global_step": step}))`
(`lightning/pytorch/loggers/wandb.py`); the figures are the ones of lightning-metrics.csv
(synthetic). The run is logged by wandb itself in offline mode (`WANDB_MODE=offline`, wandb
0.31), then only its history records are kept (the others hold the machine's paths, host and
system metrics) and framed again exactly as `DataStore._write_data` in
`wandb/sdk/internal/datastore.py` frames them: the 7-byte header `:W&B`, magic 0xBEE1, version
0; LevelDB log records in 32 KiB blocks, each `<IHB` (CRC-32 of the type byte and the data,
length, type FULL/FIRST/MIDDLE/LAST) before its data.

    python3 -m venv venv && venv/bin/pip install wandb
    venv/bin/python lightning-wandb.py OUT_DIR
"""

import glob
import os
import struct
import sys
import zlib

os.environ["WANDB_MODE"] = "offline"
os.environ["WANDB_SILENT"] = "true"
import wandb  # noqa: E402
from wandb.proto import wandb_internal_pb2 as pb  # noqa: E402

BLOCK, HEADER = 32768, 7
out = sys.argv[1]
run = wandb.init(project="loam-fixture", dir=out)
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
for step in range(49, 400, 50):
    run.log({"train_loss": 8.0 - step / 200, "epoch": 0, "trainer/global_step": step})
    if step in rates:
        device, job = rates[step]
        run.log(
            {
                "train/device/batches_per_sec": device / 4,
                "train/device/samples_per_sec": device,
                "train/batches_per_sec": job / 4,
                "train/samples_per_sec": job,
                "train/samples": 4 * (step + 1),
                "trainer/global_step": step,
            }
        )
run.finish()
(source,) = glob.glob(os.path.join(out, "wandb", "offline-run-*", "run-*.wandb"))


def records(data):
    """The records' data of a run file, as `DataStore.scan_data` reads them."""
    index, whole = HEADER, b""
    while index + HEADER <= len(data):
        if BLOCK - index % BLOCK < HEADER:
            index += BLOCK - index % BLOCK
            continue
        crc, length, kind = struct.unpack("<IHB", data[index : index + HEADER])
        chunk = data[index + HEADER : index + HEADER + length]
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == crc
        index += HEADER + length
        whole = chunk if kind in (1, 2) else whole + chunk
        if kind in (1, 4):
            yield whole


class Writer:
    """`DataStore._write_header`, `_write_record` and `_write_data`."""

    def __init__(self):
        self.out = bytearray(struct.pack("<4sHB", b":W&B", 0xBEE1, 0))

    def record(self, s, kind):
        self.out += struct.pack("<IHB", zlib.crc32(s, zlib.crc32(bytes([kind]))), len(s), kind)
        self.out += s

    def write(self, s):
        left = BLOCK - len(self.out) % BLOCK
        if left < HEADER:
            self.out += b"\x00" * left
            left = BLOCK
        if len(s) + HEADER <= left:
            self.record(s, 1)
            return
        room = left - HEADER
        self.record(s[:room], 2)
        s = s[room:]
        while len(s) > BLOCK - HEADER:
            self.record(s[: BLOCK - HEADER], 3)
            s = s[BLOCK - HEADER :]
        self.record(s, 4)


writer = Writer()
with open(source, "rb") as f:
    for data in records(f.read()):
        record = pb.Record()
        record.ParseFromString(data)
        if record.WhichOneof("record_type") == "history":
            writer.write(data)
with open(os.path.join(out, "lightning-wandb.wandb"), "wb") as f:
    f.write(writer.out)
