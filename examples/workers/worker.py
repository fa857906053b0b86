#!/usr/bin/env python3
"""A jobgate external worker (docs/workers.md), standard library only.

Leases tasks of one pull member, renders each (here: a PNG of the size the task asks, one flat colour
taken from its job id, standing in for a model; --render-seconds makes the model that slow), stores the
output, and completes the task; it heartbeats while it renders and stops a task whose lease is lost or
whose job was cancelled, then leases the next.

    python3 examples/workers/worker.py --gateway http://127.0.0.1:8080 --member gpubox \
        --key "$JOBGATE_WORKER_KEY" --worker-id box-1
"""
import argparse
import json
import struct
import sys
import threading
import time
import urllib.error
import urllib.request
import zlib


def call(args, method, path, body=None, headers=None, raw=None):
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(args.gateway + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + args.key)
    if raw is None:
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"{}")


def png(width, height, rgb):
    """A flat-colour PNG: signature, IHDR, one IDAT of unfiltered rows, IEND."""
    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    row = b"\x00" + bytes(rgb) * width
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * height, 6)) + chunk(b"IEND", b""))


def work(args, lease):
    task, token, request = lease["task_id"], lease["lease_token"], lease["request"]
    stop = threading.Event()

    def heartbeat():  # every third of the lease, until the render ends or the lease is gone
        while not stop.wait(args.heartbeat_seconds):
            status, reply = call(args, "POST", f"/v1/workers/tasks/{task}/heartbeat", {"lease_token": token})
            if status != 200:
                print(f"task {task}: {reply.get('code')} - stopping", file=sys.stderr, flush=True)
                stop.set()
    threading.Thread(target=heartbeat, daemon=True).start()
    started = time.monotonic()
    colour = bytes.fromhex(lease["job_id"].replace("-", "")[:6])
    output = png(int(request["width"]), int(request["height"]), colour)  # the "model"
    if stop.wait(args.render_seconds):  # its time, if slow; ended early when a heartbeat is refused
        print(f"task {task} (job {lease['job_id']}): stopped", flush=True)
        return
    status, reply = call(args, "PUT", f"/v1/workers/tasks/{task}/output", raw=output,
                         headers={"Content-Type": "image/png", "Lease-Token": token})
    if status == 200:
        status, reply = call(args, "POST", f"/v1/workers/tasks/{task}/complete", {
            "lease_token": token, "media_type": "image/png",
            "billed_units": round(time.monotonic() - started, 3), "billed_unit": "gpu_seconds"})
    stop.set()
    print(f"task {task} (job {lease['job_id']}, attempt {lease['attempt']}): {status} {reply.get('code', reply.get('status'))}",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway", default="http://127.0.0.1:8080")
    parser.add_argument("--member", required=True, help="the pull member (provider) whose tasks to lease")
    parser.add_argument("--key", required=True, help="the member's worker key")
    parser.add_argument("--worker-id", default="python-worker")
    parser.add_argument("--heartbeat-seconds", type=float, default=20)
    parser.add_argument("--idle-seconds", type=float, default=1, help="pause when no task waits")
    parser.add_argument("--render-seconds", type=float, default=0, help="how long each render takes (a slow model)")
    parser.add_argument("--once", action="store_true", help="stop when no task waits")
    args = parser.parse_args()
    while True:
        status, reply = call(args, "POST", f"/v1/workers/{args.member}/leases", {"worker_id": args.worker_id, "max": 1})
        if status != 200:
            sys.exit(f"lease refused: {status} {reply}")
        if not reply["leases"]:
            if args.once:
                return
            time.sleep(args.idle_seconds)
        for lease in reply["leases"]:
            work(args, lease)


if __name__ == "__main__":
    main()
