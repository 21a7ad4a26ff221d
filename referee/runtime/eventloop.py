"""The event loop the referee runs on: uvloop where it is installed, else asyncio's own.

Every decision costs the referee a gRPC read and write, and grpc.aio wakes the event
loop for each; uvloop (libuv) does that wake-up and the rest of the loop's work for less
CPU than asyncio's pure-Python loop (see benchmarks/protocol.py). ``STICHELN_EVENT_LOOP
=asyncio`` chooses asyncio's loop.

A new loop also settles the garbage collector for a long-running server
(:func:`settle_gc`): the objects made while starting up (modules, classes, the generated
protobuf descriptors, gRPC's objects) are moved out of the collector's sight, and young
objects are collected less often. A decision allocates a few dozen short-lived objects
(messages, views, futures) that reference counting frees at once; with the default
thresholds the cyclic collector still ran every few decisions and, in its older
generations, walked every object of the process.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: Allocations (net of frees) of container objects between two young-generation
#: collections; CPython's default is 700.
GC_YOUNG_THRESHOLD = 20_000


def settle_gc() -> None:
    """Freeze the objects alive now (they stay, but no collection walks them again) and
    collect the young generation less often. Cycles are still collected."""
    gc.collect()
    gc.freeze()
    young, older, oldest = gc.get_threshold()
    gc.set_threshold(max(GC_YOUNG_THRESHOLD, young), older, oldest)


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
    """A new event loop of the chosen kind (and the collector settled: :func:`settle_gc`)."""
    settle_gc()
    if name() == "uvloop":
        import uvloop

        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)`` on a loop from :func:`new_event_loop`."""
    with asyncio.Runner(loop_factory=new_event_loop) as runner:
        return runner.run(main)
