"""Ask a referee's gRPC health service whether it serves: ``python -m referee.runtime.healthcheck ADDRESS``.

The container images use it as their ``HEALTHCHECK``: it calls ``grpc.health.v1.Health/Check``
on ``ADDRESS`` (``host:port``) and exits 0 only when the answer is ``SERVING``. Anything
else (another status, no answer within the timeout, a refused connection, an unknown
service name) exits 1 with one line on stderr saying what was seen. The check names the
whole server (service ``""``) unless ``--service`` names one, e.g. ``sticheln.v1.Referee``,
which a referee that has finished its tournament reports as ``NOT_SERVING``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def check(address: str, service: str = "", timeout: float = 3.0) -> tuple[bool, str]:
    """Call Health/Check once; returns (serving, what was seen, as one line)."""
    try:
        with grpc.insecure_channel(address) as channel:
            reply = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=service), timeout=timeout
            )
    except grpc.RpcError as exc:
        code = exc.code()
        name = code.name if code is not None else "UNKNOWN"
        return False, f"{address}: health check failed: {name}: {exc.details()}"
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    what = f"service {service!r}" if service else "the server"
    return reply.status == health_pb2.HealthCheckResponse.SERVING, f"{address}: {what} is {status}"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: exit status 0 when SERVING, 1 otherwise, 2 on a usage error."""
    parser = argparse.ArgumentParser(
        prog="python -m referee.runtime.healthcheck",
        description="Exit 0 when the gRPC health service at ADDRESS answers SERVING.",
    )
    parser.add_argument("address", help="host:port of the referee's gRPC port")
    parser.add_argument(
        "--service", default="", help='the service to ask about (default "": the whole server)'
    )
    parser.add_argument(
        "--timeout", type=float, default=3.0, help="seconds to wait for the answer (default 3)"
    )
    args = parser.parse_args(argv)
    if not args.timeout > 0:
        parser.error(f"--timeout: {args.timeout} is not allowed; allowed: more than 0")
    serving, line = check(args.address, args.service, args.timeout)
    print(line, file=sys.stdout if serving else sys.stderr)
    return 0 if serving else 1


if __name__ == "__main__":
    sys.exit(main())
