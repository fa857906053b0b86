#!/usr/bin/env python3
"""Send one job to jobgate over AMQP 1.0 with Qpid Proton and print the reply.

Needs Qpid Proton's Python binding (Debian: apt-get install python3-qpid-proton; or pip install
python-qpid-proton). The job request is the JSON body of POST /v1/jobs; the tenant is the login's.

  send_job.py [--url amqp://127.0.0.1:61616] [--user globex-legacy] [--password dev-globex-jms]
              [--key order-4711] [--correlation-id req-1] [--job job.json]

Prints the reply as one JSON line: {"correlation_id", "status", "job_id", "replayed", "body"}.
Exits 0 when the gateway answered 202 (or 200 for a resend), 1 on any other answer, 2 without one.
"""
import argparse
import json
import sys
import uuid

from proton import Message
from proton.utils import BlockingConnection

EXAMPLE_JOB = {
    "preset_id": "invoice-clean",
    "aspect_class": "portrait",
    "inputs": {"supplier_name": "Legacy GmbH", "invoice_id": "L-1", "currency": "EUR", "line_items": []},
}


def main():
    parser = argparse.ArgumentParser(description="Send one job to jobgate's JMS intake over AMQP 1.0.")
    parser.add_argument("--url", default="amqp://127.0.0.1:61616")
    parser.add_argument("--user", default="globex-legacy")
    parser.add_argument("--password", default="dev-globex-jms")
    parser.add_argument("--key", default=None, help="idempotency key (required by jobgate; a resend gets the same job)")
    parser.add_argument("--correlation-id", default=None)
    parser.add_argument("--job", default=None, help="a file with the job request's JSON (default: an example invoice)")
    parser.add_argument("--timeout", type=float, default=30)
    args = parser.parse_args()

    body = EXAMPLE_JOB
    if args.job:
        with open(args.job, encoding="utf-8") as f:
            body = json.load(f)
    key = args.key or "order-" + uuid.uuid4().hex[:12]
    correlation_id = args.correlation_id or "req-" + uuid.uuid4().hex[:12]

    # PLAIN over a plain TCP connection: the broker's acceptor has no TLS on the default start.
    connection = BlockingConnection(args.url, timeout=args.timeout, user=args.user, password=args.password,
                                    allowed_mechs="PLAIN", allow_insecure_mechs=True)
    try:
        replies = connection.create_receiver(None, dynamic=True)  # a temporary queue of our own
        reply_to = replies.link.remote_source.address
        sender = connection.create_sender("jobs.intake")
        # A string body arrives as a JMS TextMessage; application properties as JMS properties.
        sender.send(Message(body=json.dumps(body), reply_to=reply_to, correlation_id=correlation_id,
                            content_type="application/json", properties={"JobgateIdempotencyKey": key}))
        try:
            reply = replies.receive(timeout=args.timeout)
        except Exception as e:  # proton.Timeout
            print(json.dumps({"error": "no reply within %s s: %s" % (args.timeout, e)}))
            return 2
        replies.accept()
        properties = reply.properties or {}
        status = properties.get("JobgateHttpStatus")
        print(json.dumps({
            "correlation_id": reply.correlation_id,
            "status": status,
            "job_id": properties.get("JobgateJobId"),
            "replayed": properties.get("JobgateIdempotentReplayed"),
            "body": json.loads(reply.body) if isinstance(reply.body, str) else reply.body,
        }))
        return 0 if status in (200, 202) else 1
    finally:
        connection.close()


if __name__ == "__main__":
    sys.exit(main())
