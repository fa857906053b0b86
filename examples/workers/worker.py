#!/usr/bin/env python3
"""A jobgate external worker (docs/workers.md), standard library only.

Leases tasks of one pull member with a long poll (the gateway holds the call until a task comes),
renders each (here: a PNG of the size the task asks, one flat colour taken from its job id, standing in
for a model; --render-seconds makes the model that slow), writes the output to the lease's time-limited
URL (straight to the S3 API), and completes the task; it heartbeats while it renders and stops a task
whose lease is lost or whose job was cancelled, then leases the next.

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
        with urllib.request.urlopen(request, timeout=args.wait_seconds + 30) as reply:
            return reply.status, json.loads(reply.read() or b"{}")
    except urllib.error.HTTPError as refused:
        return refused.code, json.loads(refused.read() or b"{}")


def put(url, data, media_type):
    """A PUT to a time-limited URL: it carries its own signature, so no key goes with it."""
    request = urllib.request.Request(url, data=data, method="PUT", headers={"Content-Type": media_type})
    try:
        with urllib.request.urlopen(request, timeout=60) as reply:
            return reply.status, {}
    except urllib.error.HTTPError as refused:
        return refused.code, {"code": "output_not_stored"}


def png(width, height, rgb):
    """A flat-colour PNG: signature, IHDR, one IDAT of unfiltered rows, IEND."""
    def chunk(kind, payload):
        return struct.pack(">I", len(payload)) + kind + payload + struct.pack(">I", zlib.crc32(kind + payload))
    row = b"\x00" + bytes(rgb) * width
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(row * height, 6)) + chunk(b"IEND", b""))


def work(args, lease):
    task, token, request = lease["task_id"], lease["lease_token"], lease["request"]
    url = [lease["output_url"]]  # renewed by each heartbeat, with the lease
    stop = threading.Event()

    def heartbeat():  # every third of the lease, until the render ends or the lease is gone
        while not stop.wait(args.heartbeat_seconds):
            status, reply = call(args, "POST", f"/v1/workers/tasks/{task}/heartbeat", {"lease_token": token})
            if status == 200:
                url[0] = reply["output_url"]
            else:
                print(f"task {task}: {reply.get('code')} - stopping", file=sys.stderr, flush=True)
                stop.set()
    threading.Thread(target=heartbeat, daemon=True).start()
    started = time.monotonic()
    colour = bytes.fromhex(lease["job_id"].replace("-", "")[:6])
    output = png(int(request["width"]), int(request["height"]), colour)  # the "model"
    if stop.wait(args.render_seconds):  # its time, if slow; ended early when a heartbeat is refused
        print(f"task {task} (job {lease['job_id']}): stopped", flush=True)
        return
    status, reply = put(url[0], output, "image/png")
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
    parser.add_argument("--wait-seconds", type=int, default=20, help="how long each lease call may wait for a task (1-30)")
    parser.add_argument("--render-seconds", type=float, default=0, help="how long each render takes (a slow model)")
    parser.add_argument("--once", action="store_true", help="stop when no task waits")
    args = parser.parse_args()
    ask = {"worker_id": args.worker_id, "max": 1}
    if not args.once:
        ask["wait_seconds"] = args.wait_seconds
    while True:
        status, reply = call(args, "POST", f"/v1/workers/{args.member}/leases", ask)
        if status != 200:
            sys.exit(f"lease refused: {status} {reply}")
        if not reply["leases"] and args.once:
            return  # none waiting; otherwise an empty answer just means: ask again
        for lease in reply["leases"]:
            work(args, lease)


if __name__ == "__main__":
    main()
