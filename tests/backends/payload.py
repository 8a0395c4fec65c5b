#!/usr/bin/env python3
"""A stand-in trainer for the backend tests: records what the launcher gave it and, in `tcp`
mode, checks the rendezvous by having every node reach rank 0 over TCP.

usage: payload.py OUTDIR env|tcp|hang [TRAINER ARGS...]
Writes OUTDIR/node<NODE_RANK>.json: the rendezvous environment, the arguments and the pid.
tcp: rank 0 listens on MASTER_ADDR:MASTER_PORT and waits for every other node to send its
rank; each other node connects (retrying) and sends it. Exits 0 only if all ranks arrive and
WORLD_SIZE = NNODES x NPROC_PER_NODE.
hang: rank 0 waits forever; every other node fails (exit 3) after 2 s (for the tests that the
launcher stops the others when one host fails).
"""
import json
import os
import socket
import sys
import time

KEYS = ["MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE", "NNODES", "NODE_RANK", "NPROC_PER_NODE",
        "RANK_OFFSET", "LOAM_GROUP", "LOAM_JOB", "LOAM_PLAN", "LOAM_CHECKPOINT_DIR"]


def main() -> int:
    out, mode, args = sys.argv[1], sys.argv[2], sys.argv[3:]
    env = {k: os.environ.get(k) for k in KEYS}
    rank = int(env["NODE_RANK"])
    nnodes = int(env["NNODES"])
    record = {"env": env, "args": args, "pid": os.getpid()}
    with open(os.path.join(out, f"node{rank}.json"), "w", encoding="utf-8") as fh:
        json.dump(record, fh, ensure_ascii=False)
    if int(env["WORLD_SIZE"]) != nnodes * int(env["NPROC_PER_NODE"]):
        print(f"bad WORLD_SIZE {env['WORLD_SIZE']} for {nnodes} nodes", flush=True)
        return 1
    if mode == "env":
        return 0
    addr, port = env["MASTER_ADDR"], int(env["MASTER_PORT"])
    if rank == 0:
        with socket.socket() as srv:
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind((addr, port))
            srv.listen()
            if mode != "hang":
                srv.settimeout(60)
            seen = set()
            while len(seen) < nnodes - 1 or mode == "hang":
                conn, _ = srv.accept()
                with conn:
                    seen.add(int(conn.recv(64).decode()))
        ok = seen == set(range(1, nnodes))
        print(f"rank 0 of {nnodes}: reached by ranks {sorted(seen)}", flush=True)
        return 0 if ok else 1
    if mode == "hang":
        time.sleep(2)
        print(f"rank {rank} of {nnodes}: failing on purpose", flush=True)
        return 3
    deadline = time.time() + 60
    while True:
        try:
            with socket.create_connection((addr, port), timeout=5) as conn:
                conn.sendall(str(rank).encode())
            print(f"rank {rank} of {nnodes}: reached rank 0 at {addr}:{port}", flush=True)
            return 0
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
