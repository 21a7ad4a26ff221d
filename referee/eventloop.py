"""The event loop the referee runs on: uvloop where it is installed, else asyncio's own.

Every decision costs the referee a gRPC read and write, and grpc.aio wakes the event
loop for each; uvloop (libuv) does that wake-up and the rest of the loop's work for less
CPU than asyncio's pure-Python loop (see benchmarks/protocol.py). ``STICHELN_EVENT_LOOP
=asyncio`` chooses asyncio's loop.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def name() -> str:
    """ "uvloop" or "asyncio": which loop :func:`new_event_loop` makes."""
    if os.environ.get("STICHELN_EVENT_LOOP", "") == "asyncio":
        return "asyncio"
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A new event loop of the chosen kind."""
    if name() == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on a loop from :func:`new_event_loop`."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)
