"""gRPC settings the referee process needs, applied before any module imports grpc.

gRPC reads them from the environment once, when it is first imported, so
``referee/__init__.py`` calls :func:`configure` before anything else. A setting the user
has already made in the environment is kept.

- ``GRPC_ENABLE_FORK_SUPPORT=false``: the referee starts bot processes while gRPC threads
  run. gRPC's fork handlers are not safe then (a child can crash between fork and exec),
  and the referee never needs gRPC in a forked child.
- ``GRPC_EXPERIMENTS`` gets ``-event_engine_listener``: connections the server accepts
  are then served by gRPC's completion-queue poller thread, as the aio server's own
  reads and writes are. With the EventEngine listener (grpcio's default since 1.6x) each
  accepted connection's reads run on EventEngine worker threads that hand every event on
  to that poller thread, one thread hop more per message; ``benchmarks/protocol.py``
  measured about a third less server CPU per round trip without it (docs/performance.md).
  Naming ``event_engine_listener`` in ``GRPC_EXPERIMENTS`` yourself (with or without the
  minus) keeps your choice.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

#: The experiment turned off for the referee's server (see the module docstring).
LISTENER_EXPERIMENT = "event_engine_listener"


def experiments(current: str) -> str:
    """``GRPC_EXPERIMENTS`` with ``-event_engine_listener`` added unless already named."""
    names = [n.strip() for n in current.split(",") if n.strip()]
    if not any(n.lstrip("-") == LISTENER_EXPERIMENT for n in names):
        names.append(f"-{LISTENER_EXPERIMENT}")
    return ",".join(names)


def configure(environ: MutableMapping[str, str] = os.environ) -> None:
    """Put the referee's gRPC settings into ``environ`` (the process environment). They
    are the referee's own: a bot's environment is an allowlist
    (:func:`referee.jail.sandbox.bot_environment`) that never holds them."""
    environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
    environ["GRPC_EXPERIMENTS"] = experiments(environ.get("GRPC_EXPERIMENTS", ""))
