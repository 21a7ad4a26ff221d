"""The referee's event loop and the collector settings that come with it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from referee.runtime import eventloop


def test_loop_kind_follows_the_environment(monkeypatch):
    monkeypatch.setenv("STICHELN_EVENT_LOOP", "asyncio")
    assert eventloop.name() == "asyncio"
    loop = eventloop.new_event_loop()
    try:
        assert type(loop).__module__.startswith("asyncio")
    finally:
        loop.close()


def test_new_loop_settles_the_collector():
    # In a fresh interpreter, so that this test's own process keeps its settings.
    code = textwrap.dedent(
        """
        import gc
        from referee.runtime import eventloop
        before = gc.get_threshold()
        async def main():
            return gc.get_threshold(), gc.get_freeze_count()
        threshold, frozen = eventloop.run(main())
        print(before[0], threshold[0], threshold[1:] == before[1:], frozen)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout.split()
    before, young, older_kept, frozen = int(out[0]), int(out[1]), out[2], int(out[3])
    assert before < eventloop.GC_YOUNG_THRESHOLD <= young
    assert older_kept == "True"
    # The modules and objects of the start-up are frozen, not collected again.
    assert frozen > 10_000


def test_cycles_are_still_collected_automatically():
    code = textwrap.dedent(
        """
        import gc, weakref
        from referee.runtime import eventloop
        class Node:
            pass
        async def main():
            refs = []
            for _ in range(100_000):
                a, b = Node(), Node()
                a.other, b.other = b, a
                refs.append(weakref.ref(a))
            return sum(r() is not None for r in refs)
        print(eventloop.run(main()))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    # No explicit gc.collect(): the collector ran by itself and freed most of the cycles.
    assert int(out) < 100_000 // 2
