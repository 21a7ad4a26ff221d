"""A referee worker process: ``python -m referee.tournament.worker`` (started by a tournament).

It talks to the tournament over its stdin and stdout (length-prefixed pickles, see
:mod:`referee.tournament.workers`); anything else that would reach stdout goes to stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path

# First, so that the modules below find structlog imported without rich.
from referee.runtime import lean  # noqa: F401

# isort: split
from referee.jail.process import kill_all_bots
from referee.runtime import eventloop, logs
from referee.runtime.parent import die_with
from referee.tournament.workers import serve_worker


def main(argv: list[str] | None = None) -> int:
    """Serve matches for the tournament that started this process."""
    parser = argparse.ArgumentParser(prog="python -m referee.tournament.worker")
    parser.add_argument("--log-dir", type=Path, required=True)
    parser.add_argument("--startup-s", type=float, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--log-level", default="info")
    parser.add_argument("--pooled", action="store_true")
    parser.add_argument("--single-use", action="store_true")
    parser.add_argument("--sandbox", default="bubblewrap", choices=("bubblewrap", "none"))
    # The tournament process's id: gone before prctl, this process's parent differs.
    parser.add_argument("--parent-pid", type=int, required=True)
    args = parser.parse_args(argv)
    if not die_with(args.parent_pid):  # die with the tournament process, even by SIGKILL
        return 1
    # The tournament process decides what a Ctrl-C does (the worker runs in a session of
    # its own, so none should reach it).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # The pipe to the tournament is a private copy of stdout; fd 1 itself becomes stderr.
    outbox = os.fdopen(os.dup(1), "wb", buffering=1 << 16)
    os.dup2(2, 1)
    inbox = os.fdopen(0, "rb", buffering=0)
    logs.configure(args.log_level)

    async def run() -> None:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        await serve_worker(
            args.host,
            args.log_dir,
            args.startup_s,
            args.pooled,
            inbox,
            outbox,
            args.sandbox,
            args.single_use,
        )

    try:
        eventloop.run(run())
    except asyncio.CancelledError:
        return 0
    finally:
        kill_all_bots()
    return 0


if __name__ == "__main__":
    sys.exit(main())
